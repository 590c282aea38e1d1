"""The quorum event clock (occupancy/clock.py; issue 14 B, C) on the clock alone, on the
presence + occupancy stages (with the idle markers the runtime sends) and on the oracle:
multi-day replays with nights, idle partitions and hostile timestamps."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest

from occupancy.buildings import load_site
from occupancy.clock import ADMIT, DEFAULT_QUORUM, HOLD, TOO_LATE, PartitionClock, global_clock
from occupancy.oracle import occupancy_oracle, valid_observations
from streams.pipeline.identity import pseudonymizer
from streams.pipeline.occupancy import OccupancyState
from streams.pipeline.presence import PartitionState, StageConfig, sign_marker

SECRET = b"clock-test-secret-0123456789abcd"
T0 = 1_767_571_200.0  # 2026-01-05 00:00 UTC
N = 4
Q = DEFAULT_QUORUM


@pytest.fixture(scope="module")
def site():
    return load_site("dbh")


@pytest.fixture(scope="module")
def two_days():
    from simulator import simulate

    return simulate("dbh", days=2, seed=3)


def part_of_key(key: bytes | None) -> int:
    return zlib.crc32(key or b"") % N


def part_of_obs(o) -> int:
    return zlib.crc32(o.device.encode()) % N


def cfg(site):
    return StageConfig(ap_location=dict(site.ap_location),
                       location_index=dict(site.location_index), tick_s=300.0,
                       validity_s=600.0, lateness_s=60.0, max_future_s=3600.0,
                       ttl_s=1800.0, secret=SECRET, track_ttl=False, clock_quorum=Q)


def ev(site, mac, ts, ap=None):
    return json.dumps({"device": mac, "ap": ap or site.aps[0].id, "ts": ts}).encode()


def replay(site, records, *, chunk=2000):
    """The stages on ``(key, value)`` records in arrival order, partitioned like Kafka.

    Records are fed in arrival-order chunks; after each chunk the occupancy stage sends
    every partition it waits for a signed marker with the global clock (what
    ``OccupancyRuntime.idle_check`` does after ``idle_s``). Returns (final ticks, DLQ
    reasons, states).
    """
    c = cfg(site)
    pseudo = pseudonymizer(SECRET)
    states = [PartitionState(p) for p in range(N)]
    occ = OccupancyState()
    logs: list[list[bytes]] = [[] for _ in range(N)]
    partial_log: list[bytes] = []
    final, dlq = [], []

    def run(p, values):
        start = len(logs[p])
        logs[p] += values
        res = states[p].process(list(enumerate(logs[p]))[start:], c, pseudo)
        dlq.extend(json.loads(d)["reason"] for d in res.dlq)
        partial_log.extend(x.to_json(N, site.id) for x in res.partials)

    def occupancy():
        n = len(partial_log)
        final.extend(occ.process([(i, partial_log[i]) for i in range(occ.offset + 1, n)],
                                 300.0))

    for i in range(0, len(records), chunk):
        by_p: dict[int, list[bytes]] = {}
        for key, value in records[i:i + chunk]:
            by_p.setdefault(part_of_key(key), []).append(value)
        for p in range(N):
            run(p, by_p.get(p, []))
        occupancy()
        g = global_clock([st.max_ts for st in states], N)
        if g is not None:
            for p in occ.blocking():
                if (states[p].max_ts or 0.0) < g:
                    run(p, [sign_marker(g, SECRET, p)])
            occupancy()
    return final, dlq, states


def oracle_at(site, values, ticks):
    return occupancy_oracle(values, site.ap_location, site.location_ids, ticks=ticks,
                            quorum=Q, partition_of=part_of_obs, partitions=N)


# ---- the clock alone -----------------------------------------------------------------
def test_fewer_than_quorum_records_never_move_the_clock():
    clock = PartitionClock(60.0, 3600.0, 4)
    for k in range(8):
        assert clock.offer(T0 + k, k)[0] in (ADMIT, HOLD)
    c = clock.value
    assert c is not None and c < T0 + 8
    # 3 (< quorum) records far ahead, then honest ones: the clock stays, they are held
    for k in range(3):
        assert clock.offer(T0 + 86400 + k, ("bad", k))[0] == HOLD
    assert clock.value <= T0 + 7  # never past the honest records' largest time
    expired = []
    for k in range(8):
        d, rel, exp = clock.offer(T0 + 10 + k, k)
        assert d == ADMIT and not rel
        expired += exp
    assert [e[2] for e in expired] == [("bad", 0), ("bad", 1), ("bad", 2)]
    assert clock.value <= T0 + 17 and not clock.held


def test_quorum_of_future_records_moves_the_clock_and_admits_them():
    """A quiet partition's morning: quorum records 8 h after last night's clock."""
    clock = PartitionClock(60.0, 3600.0, 4)
    for k in range(8):
        clock.offer(T0 + k, k)
    morning = T0 + 8 * 3600
    admitted = []
    for k in range(6):
        d, rel, exp = clock.offer(morning + k, k)
        assert not exp
        admitted += [h[2] for h in rel] + ([k] if d == ADMIT else [])
    assert sorted(admitted) == list(range(6))  # the first 3 were held, then released
    assert clock.value >= morning


def test_marker_floor_releases_held_records_and_too_late_is_against_the_clock():
    clock = PartitionClock(60.0, 3600.0, 4)
    for k in range(4):
        clock.offer(T0 + k, k)
    assert clock.offer(T0 + 7200, "x")[0] == HOLD
    assert [h[2] for h in clock.raise_floor(T0 + 3700)] == ["x"]
    assert clock.offer(T0 + 3700 - 61, "late")[0] == TOO_LATE


def test_clock_state_round_trips():
    clock = PartitionClock(60.0, 3600.0, 3)
    for k in range(5):
        clock.offer(T0 + k, [k])
    clock.offer(T0 + 86400, [9])
    again = PartitionClock(60.0, 3600.0, 3, **json.loads(json.dumps(clock.to_json())))
    assert again.to_json() == clock.to_json() and again.value == clock.value


def test_global_clock_is_a_majority_statistic():
    assert global_clock([10.0, 11.0, 12.0, 1e9], 4) == 12.0  # one partition far ahead
    assert global_clock([10.0, 1e9, 1e9, None], 4) == 1e9  # half the partitions agree
    assert global_clock([10.0, None, None, None], 4) is None
    assert global_clock([5.0], 1) == 5.0
    assert global_clock([10.0, 20.0], 2, wall=0.0, max_future_s=15.0) == 15.0
    with pytest.raises(ValueError, match="partitions"):
        global_clock([], 0)


# ---- stages and oracle on multi-day replays ------------------------------------------
def test_two_days_with_nights_lose_nothing_and_equal_the_oracle(site, two_days):
    records = [(k, v) for k, v, _ in two_days.records()]
    final, dlq, _ = replay(site, records)
    ticks = [f.tick for f in final]
    assert np.all(np.diff(ticks) == 300.0) and len(ticks) > 2 * 270
    values = [v for _, v in records]
    oracle = oracle_at(site, values, ticks)
    got = np.array([f.counts for f in final])
    assert np.array_equal(got, oracle.counts)
    # nothing lost: every valid record counts (the old per-partition clocks dropped
    # 12,223 of these 119,783 as far_future after the night)
    assert dlq == []
    obs, _ = valid_observations(values, site.ap_location, quorum=Q, partition_of=part_of_obs,
                                partitions=N)
    held_at_end = two_days.n_valid - len(obs)
    assert 0 <= held_at_end < N * Q
    late = max(o.ts for o in obs[-held_at_end:]) if held_at_end else 0.0
    assert held_at_end == 0 or late > ticks[-1]  # only records after the last final tick
    # and a 1-partition oracle (what the other tests call) agrees with it
    one = occupancy_oracle(values, site.ap_location, site.location_ids, ticks=ticks)
    assert np.array_equal(one.counts, oracle.counts)


def test_hostile_timestamps_do_not_push_the_clock(site, two_days):
    """Q − 1 valid events 3,500 s ahead (at once), 25 chained 3,500 s apart, a +2 days first event
    in an idle partition, and an authentic marker a day ahead: no fake tick, no real
    event lost, and the stream still equals the oracle on every tick."""
    records = [(k, v) for k, v, _ in two_days.records()]
    cut = len(records) // 3
    ts_cut = json.loads(records[cut][1])["ts"]
    key_p = {p: next(k for k, _ in records if part_of_key(k) == p) for p in range(N)}
    mac = {p: key_p[p].decode() for p in range(N)}
    bad = [(key_p[0], ev(site, mac[0], ts_cut + 3500)) for _ in range(Q - 1)]
    bad += [(key_p[1], ev(site, mac[1], ts_cut + 3500 * (k + 1))) for k in range(25)]
    hostile = records[:cut] + bad + records[cut:]
    # a first event +2 days ahead, before anything else, in a partition
    first = [(key_p[2], ev(site, mac[2], json.loads(records[0][1])["ts"] + 2 * 86400))]
    hostile = first + hostile
    final, dlq, states = replay(site, hostile)
    ticks = [f.tick for f in final]
    assert np.all(np.diff(ticks) == 300.0) and len(ticks) > 2 * 270
    clean_final, _, _ = replay(site, records)
    assert ticks == [f.tick for f in clean_final]  # no fake tick, none missing
    values = [v for _, v in hostile]
    oracle = oracle_at(site, values, ticks)
    assert np.array_equal(np.array([f.counts for f in final]), oracle.counts)
    # where they went: the chained ones and the +2 days one are far_future (DLQ),
    # the Q − 1 at +3,500 s are admitted at their (future) time and count there
    assert dlq.count("far_future") == 24 + 1 and set(dlq) == {"far_future"}
    assert "too_late" not in dlq  # no real event lost
    # an authentic marker one day ahead moves one partition, never the global clock
    pushed = [st.max_ts + 86400 if p == 0 else st.max_ts for p, st in enumerate(states)]
    assert global_clock(pushed, N) <= max(pushed[1:])  # an honest partition's clock


def test_stage_admits_a_held_record_when_a_marker_brings_the_clock(site):
    """A quiet partition's morning record is held, then counted once the global clock
    arrives in a marker (not dead-lettered, not lost)."""
    c = cfg(site)
    c.clock_quorum = 4
    pseudo = pseudonymizer(SECRET)
    st = PartitionState(0)
    recs = [ev(site, f"aa:bb:cc:dd:ee:{k:02x}", T0 + k) for k in range(4)]
    recs.append(ev(site, "aa:bb:cc:dd:ee:99", T0 + 8 * 3600))  # the morning, 8 h later
    res = st.process(list(enumerate(recs)), c, pseudo)
    assert not res.dlq and st.clock["held"] and pseudo("aa:bb:cc:dd:ee:99") not in st.devices
    res = st.process([(5, sign_marker(T0 + 8 * 3600 - 60, SECRET, 0))], c, pseudo)
    assert not res.dlq and not st.clock["held"]
    assert pseudo("aa:bb:cc:dd:ee:99") in st.devices
    assert "aa:bb:cc:dd:ee:99" not in json.dumps(st.clock)  # held state: no raw MAC
