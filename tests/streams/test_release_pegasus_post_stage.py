"""The release stage runs the PeGaSus variants that beat Laplace (``pegasus-post``,
``pegasus-filter``, ``hpegasus-filter``): keyed replay-safe noise, state as bytes, ledger."""

from __future__ import annotations

import pytest

from occupancy.buildings import load_site
from streams.pipeline.release import Releaser
from streams.settings import load_settings

BASE = {"OCCUSTREAM_SECRET": "s" * 32, "OCCUSTREAM_PRIVACY_UNIT": "event",
        "OCCUSTREAM_MIDE": "false"}


@pytest.mark.parametrize("mech", ["pegasus-post", "pegasus-filter", "hpegasus-filter"])
def test_pegasus_variant_tick_is_replayed_exactly_and_charged(mech: str) -> None:
    field = "OCCUSTREAM_" + mech.replace("-", "_").upper() + "_EPSILON"
    env = {**BASE, "OCCUSTREAM_MECHANISMS": mech, field: "0.5"}
    site = load_site("dbh")
    counts = [i % 7 for i in range(len(site.location_ids))]
    outs = []
    for _ in range(2):  # a replay after a crash: same secret, tick, counts and state
        rel = Releaser(load_settings(env=env), site)
        states: dict = {}
        vals = []
        for k in range(3):
            out, states = rel.run(1_767_600_000.0 + 300 * k, counts, [], states)
            vals.append(out.releases[0].values)
            assert out.releases[0].mechanism == mech
            assert [r["mechanism"] for r in out.ledger] == [mech]
            assert out.ledger[0]["epsilon"] == 0.5
        outs.append((vals, states[mech]))
    assert outs[0] == outs[1]
    assert all(v >= 0 and v == int(v) for v in outs[0][0][-1])


def test_release_stage_sizes_the_filter_from_the_site_capacities() -> None:
    """dbh's largest room (capacity 461) at 600 people: tracked, not clipped at 511.

    ε = 1, release after 8 ticks within ±15 of 600: as in
    tests/mechanisms/test_release_pegasus_filter.py, P(false alarm) ≤ 3e-6 per tick.
    """
    env = {**BASE, "OCCUSTREAM_MECHANISMS": "pegasus-filter",
           "OCCUSTREAM_PEGASUS_FILTER_EPSILON": "1.0"}
    site = load_site("dbh")
    big = max(range(len(site.capacities)), key=lambda i: site.capacities[i])
    counts = [0] * len(site.location_ids)
    counts[big] = 600
    rel = Releaser(load_settings(env=env), site)
    states: dict = {}
    for k in range(10):
        out, states = rel.run(1_767_600_000.0 + 300 * k, counts, [], states)
    assert abs(out.releases[0].values[big] - 600) <= 15
