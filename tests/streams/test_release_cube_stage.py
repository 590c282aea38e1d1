"""The release stage's daily cube: yesterday's cube once after midnight, charged before
noise, identical on a replay or after a restart, counted as spent in the day plan."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mechanisms import hierarchical
from mechanisms.histograms import cube
from mechanisms.noise import keyed_rng
from occupancy.buildings import load_site
from streams.pipeline.release import Releaser
from streams.settings import load_settings

SECRET = "daily-cube-stage-secret-0123456789"
ENV = {"OCCUSTREAM_SECRET": SECRET}
DAY = 86400
D = 20_000  # the day released
T0 = D * DAY
TICK = 1200  # 20-minute ticks keep the test cheap: 72 slots a day, 3 an hour
N = DAY // TICK


@pytest.fixture(scope="module")
def day_run():
    """A full UTC day of random room counts, then the first two ticks of the next day."""
    s = load_settings(None, {**ENV, "OCCUSTREAM_MIDE": "0",  # alerts: not the subject
                             "OCCUSTREAM_TICK_S": str(TICK)})
    site = load_site("dbh")
    rng = np.random.default_rng(21)
    ticks = [T0 + TICK * i for i in range(N + 2)]
    counts = rng.integers(0, 25, (len(ticks), len(site.location_ids)))
    states: dict = {}
    rel = Releaser(s.release_config(), site)
    outs, before = [], {}
    for i, (t, c) in enumerate(zip(ticks, counts, strict=True)):
        if i == N:
            before = dict(states)  # the checkpoint before the release tick
        out, new = rel.run(t, [int(x) for x in c], [], states)
        states.update(new)
        outs.append(out)
    return s, site, ticks, counts, outs, before, rel


def test_cube_released_once_after_midnight_from_the_day_counts(day_run) -> None:
    s, site, ticks, counts, outs, _, rel = day_run
    with_cube = [i for i, o in enumerate(outs) if o.cube is not None]
    assert with_cube == [N]  # the first tick of the next day, once
    doc = outs[N].cube
    assert doc["day"] == "2024-10-04" and doc["day_index"] == D
    assert doc["slots_observed"] == N == doc["slots"]
    assert doc["locations"] == list(site.location_ids)
    # the values: the mechanism on exactly that day's counts with the day's keyed noise
    tree = hierarchical.tree_from_paths(site.hierarchy())
    cfg = rel.cube.config
    direct = cube.release_cube(counts[:N], tree, cfg, day=D, budget=None,
                               rng=keyed_rng(SECRET.encode(), cube.MECHANISM, D, "all"))
    names = doc["nodes"]  # tree order: the location ids, then floors and buildings
    assert names[:len(site.location_ids)] == list(site.location_ids)
    got = np.array([doc["hourly"][n] for n in names]).T
    assert np.allclose(got, direct.hourly, atol=0.006)
    assert np.allclose(np.array(doc["cube"]), direct.cube, atol=0.051)
    # B = the day's ticks (one location per tick, bound (a))
    assert doc["sensitivity"] == {"l1": float(N), "l2": pytest.approx(np.sqrt(N))}
    assert len(doc["hourly"][names[0]]) == 24
    # ledger: charged at that tick, to the released day's histogram share, once
    recs = [r for o in outs for r in o.ledger if r["mechanism"].startswith("daily-cube")]
    assert len(recs) == 1 and recs[0]["release_id"] == doc["release_id"]
    assert recs[0]["scope"].endswith(f"/day:{D}/histogram")
    assert recs[0]["tick"] == T0 and recs[0]["parts"][0] == pytest.approx(cfg.rho)
    b = rel.day_budget
    assert b.spent_rho(D, "histogram") == pytest.approx(0.05 * b.rho_day)
    assert b.spent(D).epsilon <= 4.0 + 1e-9
    # the surfaces count it: projected day = heatmap + cube (alerts off here)
    assert any(n.startswith("daily-cube") for n in outs[0].privacy["releases"])


def test_replay_and_restart_release_identical_values_and_charge_nothing_new(day_run) -> None:
    s, site, ticks, counts, outs, before, rel = day_run
    first = json.dumps(outs[N].cube, sort_keys=True)
    # a restarted worker (new process) from the checkpoint before the release tick
    fresh = Releaser(s.release_config(), site)
    out, new = fresh.run(ticks[N], [int(x) for x in counts[N]], [], dict(before))
    assert json.dumps(out.cube, sort_keys=True) == first
    rid = [r["release_id"] for r in out.ledger if r["mechanism"].startswith("daily-cube")]
    assert rid == [outs[N].cube["release_id"]]  # same id: the topic tails drop it
    # the same worker replaying the tick (e.g. a rebuild): same values, no new record
    out2, _ = rel.run(ticks[N], [int(x) for x in counts[N]], [], dict(before))
    assert json.dumps(out2.cube, sort_keys=True) == first
    assert not [r for r in out2.ledger if r["mechanism"].startswith("daily-cube")]
    # the next tick after the release: the held day moved on, nothing more
    assert outs[N + 1].cube is None and not outs[N + 1].ledger


def test_day_plan_counts_the_cube_as_spent_and_it_can_be_turned_off() -> None:
    on = load_settings(None, ENV).day_plan()
    off_s = load_settings(None, {**ENV, "OCCUSTREAM_DAILY_CUBE": "false"})
    off = off_s.day_plan()
    cube_rows = [r for r in on["releases"] if r["share"] == "histogram"]
    assert len(cube_rows) == 1 and on["reserved"] == {}
    assert off["reserved"] == {"histogram": 0.05}
    assert not [r for r in off["releases"] if r["share"] == "histogram"]
    assert on["rho"] == pytest.approx(off["rho"] + cube_rows[0]["rho"])
    assert off["projected_epsilon"] < on["projected_epsilon"] <= 4.0 + 1e-9
    site = load_site("dbh")
    r = Releaser(off_s.release_config(), site)
    assert r.cube is None and "cube-day" not in r.state_names


def test_a_refused_charge_releases_nothing_and_draws_nothing(monkeypatch) -> None:
    from mechanisms.accounting import DayBudget
    from mechanisms.errors import BudgetExhaustedError
    from streams.pipeline import cube as stage_cube

    s = load_settings(None, {**ENV, "OCCUSTREAM_MIDE": "0", "OCCUSTREAM_TICK_S": str(TICK)})
    rel = Releaser(s.release_config(), load_site("dbh"))
    dc = rel.cube
    budget = DayBudget(4.0, 1e-6, shares={"heatmap": 0.85, "alerts": 0.10, "histogram": 0.05})
    budget.charge(day=D, share="histogram", mechanism="another histogram", rho=0.01, tick=0)
    drawn = []
    monkeypatch.setattr(stage_cube.cube, "release_cube", lambda *a, **k: drawn.append(1))
    acc = np.ones((N, len(dc.locations)), dtype=np.int64)
    with pytest.raises(BudgetExhaustedError):
        dc.release(D, N, acc, budget)
    assert drawn == [] and len(budget.records) == 1
