"""Hand-built cases for the reference occupancy function (boundary semantics)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from occupancy.oracle import occupancy_oracle

APS = {"ap1": "A", "ap2": "B"}
LOCS = ("A", "B")
T0 = 1_767_571_200.0  # 2026-01-05 00:00:00 UTC, a multiple of 300
M1, M2 = "aa:bb:cc:dd:ee:01", "aa:bb:cc:dd:ee:02"


def ev(dev, ap, ts):
    return {"device": dev, "ap": ap, "ts": ts}


def run(events, **kw):
    kw.setdefault("lateness_s", 0.0)
    # quorum 1: the clock is the largest event time seen (these cases are about presence;
    # the quorum clock itself: tests/occupancy/test_clock.py)
    kw.setdefault("quorum", 1)
    return occupancy_oracle(events, APS, LOCS, **kw)


def test_present_from_observation_inclusive_until_validity_exclusive():
    # Observed exactly at a tick: counted at that tick; validity 600 = 2 ticks.
    t = run([ev(M1, "ap1", T0), ev(M2, "ap2", T0 + 2000)], ticks=[T0, T0 + 300, T0 + 600])
    assert t.counts[:, 0].tolist() == [1, 1, 0]  # T0+600 - T0 = validity: not present


def test_observation_between_ticks():
    t = run([ev(M1, "ap1", T0 + 1)], ticks=[T0, T0 + 300, T0 + 600, T0 + 900])
    assert t.counts[:, 0].tolist() == [0, 1, 1, 0]


def test_latest_location_wins_and_move_is_exclusive():
    t = run([ev(M1, "ap1", T0), ev(M1, "ap2", T0 + 300)], ticks=[T0, T0 + 300])
    assert t.counts.tolist() == [[1, 0], [0, 1]]


def test_tie_goes_to_later_arrival():
    t = run([ev(M1, "ap1", T0), ev(M1, "ap2", T0)], ticks=[T0])
    assert t.counts.tolist() == [[0, 1]]


def test_out_of_order_within_lateness_uses_event_time():
    events = [ev(M1, "ap2", T0 + 100), ev(M1, "ap1", T0 + 50)]
    t = run(events, lateness_s=60, ticks=[T0 + 300])
    assert t.counts.tolist() == [[0, 1]]  # the ap2 observation is the latest by ts


def test_too_late_and_invalid_records_do_not_count():
    events = [  # quorum 2: two records start the clock at T0 + 500
        ev(M1, "ap1", T0 + 500),
        ev(M1, "ap1", T0 + 500),
        ev(M2, "ap2", T0 + 100),  # 400 s behind the clock, lateness 60: too late
        "{not json",
        json.dumps(ev("zz:zz", "ap1", T0 + 500)),
        ev(M2, "nope", T0 + 500),
        ev(M2, "ap2", T0 + 500 + 10 * 86400),  # far future
    ]
    t = run(events, lateness_s=60, ticks=[T0 + 600], quorum=2)
    assert t.counts.tolist() == [[1, 0]]


def test_distinct_devices_counted_once_and_zeros_reported():
    events = [ev(M1, "ap1", T0 + 10), ev(M1, "ap1", T0 + 20), ev(M2, "ap1", T0 + 30)]
    t = run(events, ticks=[T0 + 300])
    assert t.counts.tolist() == [[2, 0]]


def test_default_ticks_are_the_final_ones():
    events = [ev(M1, "ap1", T0 + 10), ev(M2, "ap1", T0 + 1000)]
    t = run(events, lateness_s=60)
    # first tick >= T0+10 is T0+300; watermark = T0+940 > T0+900: last final tick T0+900
    assert t.ticks.tolist() == [T0 + 300, T0 + 600, T0 + 900]


def test_brute_force_agreement_random():
    rng = np.random.default_rng(3)
    devs = [f"aa:bb:cc:dd:ee:{i:02x}" for i in range(12)]
    events = []
    ts = T0
    for _ in range(400):
        ts += float(rng.integers(0, 40))
        events.append(ev(devs[rng.integers(12)], ["ap1", "ap2"][rng.integers(2)], ts))
    ticks = np.arange(T0, ts, 300.0)
    t = run(events, ticks=ticks, validity_s=450)
    for i, tk in enumerate(ticks):
        for j, loc in enumerate(LOCS):
            n = 0
            for d in devs:
                mine = [
                    (e["ts"], k)
                    for k, e in enumerate(events)
                    if e["device"] == d and e["ts"] <= tk
                ]
                if not mine:
                    continue
                last = events[max(mine)[1]]
                n += APS[last["ap"]] == loc and tk - last["ts"] < 450
            assert t.counts[i, j] == n


def test_bad_parameters():
    with pytest.raises(ValueError, match="tick_s"):
        run([], tick_s=0)
