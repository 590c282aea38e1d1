"""IoT-DETECTIVE rounds and scoring (dashboards/game_rounds.py): answers against the oracle."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from dashboards import game_rounds as gr
from mechanisms import registry
from mechanisms.errors import InvalidParameterError
from simulator import Scenarios, simulate


def _oracle(site: Any, seed: int) -> tuple[np.ndarray, np.ndarray, float]:
    """The reference oracle (occupancy.oracle, not the simulator's fast path) of a round's day."""
    start = gr.FIRST_DAY.timestamp() + 86400 * (seed % 5)
    sim = simulate(site, days=1, seed=seed, start=start, scenarios=Scenarios.none())
    fast = sim.occupancy(tick_s=gr.TICK_S)
    table = sim.occupancy(tick_s=gr.TICK_S, method="oracle", ticks=fast.ticks)
    return np.asarray(table.ticks), np.asarray(table.counts), start


@pytest.mark.parametrize("seed", [3, 11, 24])
def test_round_answers_are_the_oracles(campus: Any, seed: int) -> None:
    rnd = gr.make_round(campus, mechanism="laplace", epsilon=1.0, seed=seed,
                        rng=np.random.default_rng(seed))
    ticks, counts, midnight = _oracle(campus, seed)
    assert rnd.midnight == midnight
    np.testing.assert_array_equal(rnd.ticks, ticks)
    tasks = {t.id: t for t in rnd.tasks}
    assert list(tasks) == list(gr.TASKS)
    ids = list(campus.location_ids)
    minutes = (ticks - midnight) / 60

    # broken sensor: the oracle's counts, with one room zeroed from a tick on; that tick
    # follows a non-zero count (so it is the start of the run of zeros) in the break window
    b = ids.index(tasks["broken_sensor"].params["location"])
    diff = np.flatnonzero((rnd.true != counts).any(axis=1))
    assert np.all((rnd.true != counts)[:, [j for j in range(len(ids)) if j != b]] == 0)
    i_break = int(np.flatnonzero(np.isclose(minutes, tasks["broken_sensor"].answer))[0])
    assert np.all(rnd.true[i_break:, b] == 0) and rnd.true[i_break - 1, b] > 0
    np.testing.assert_array_equal(rnd.true[:i_break, b], counts[:i_break, b])
    assert len(diff) == 0 or diff[0] >= i_break
    assert gr.BREAK_WINDOW_H[0] * 60 <= tasks["broken_sensor"].answer < gr.BREAK_WINDOW_H[1] * 60

    # threshold: ticks strictly over the threshold, counted on the (modified) truth
    t = tasks["threshold"]
    j = ids.index(t.params["location"])
    assert t.answer == sum(1 for v in rnd.true[:, j] if v > t.params["threshold"])
    assert j != b and t.params["threshold"] >= 1

    # night region: the largest mean of the floor totals over 18:00-06:00
    n = tasks["night_region"]
    night = [i for i, m in enumerate(minutes) if m >= 18 * 60 or m < 6 * 60]
    means = {}
    for c in n.params["choices"]:
        cols = [ids.index(loc.id) for loc in campus.locations if loc.floor == c["id"]]
        means[c["id"]] = float(np.mean([rnd.true[i, cols].sum() for i in night]))
    assert means[n.answer] == max(means.values())

    # routine event: the first tick at which the room holds half its day's peak
    e = ids.index(tasks["routine_event"].params["location"])
    peak = rnd.true[:, e].max()
    first = next(i for i, v in enumerate(rnd.true[:, e]) if v >= math.ceil(peak / 2))
    assert tasks["routine_event"].answer == minutes[first] and e != b


def test_public_round_holds_no_truth(campus: Any) -> None:
    rnd = gr.make_round(campus, mechanism="pegasus", epsilon=0.2, seed=5,
                        rng=np.random.default_rng(5))
    pub = rnd.public()
    text = repr(pub)
    for secret in ("ranking", "true_series", "answer=", "'truth'"):
        assert secret not in text
    for t in pub["tasks"]:
        assert set(t) == {"id", "question", "params"}
        assert set(t["params"]) <= {"location", "threshold", "answer", "max", "choices"}
        assert t["params"].get("answer") in ("count", "region", "time")
    released = np.array([pub["released"][lid] for lid in rnd.locations]).T
    assert not np.array_equal(np.round(released), rnd.true)  # noise was added


@pytest.mark.parametrize("mechanism", gr.game_mechanisms())
def test_every_release_is_charged_before_its_noise(campus: Any, mechanism: str) -> None:
    """A spy mechanism sees the ledger grow by one charge before each draw (per tick)
    or one charge before the first draw (per day)."""
    eps = gr.epsilons_for(mechanism)[-1]  # small σ: the exact sampler's table stays small
    params = registry.ReleaseParams(epsilon=eps, epsilon_day=eps,
                                    paths=tuple(tuple(p) for p in campus.hierarchy()))
    inner = registry.build(mechanism, params)
    seen: list[int] = []
    records: list[Any] = []

    class Spy:
        name = inner.name

        def cost(self, n: int) -> registry.Cost:
            return inner.cost(n)

        def update(self, state: Any, counts: Any, *, rng: Any = None, tick: Any = None) -> Any:
            seen.append(len(records))
            return inner.update(state, counts, rng=rng, tick=tick)

    ticks = gr.FIRST_DAY.timestamp() + gr.TICK_S * np.arange(1, 25)
    counts = np.full((len(ticks), len(campus.location_ids)), 3, dtype=np.int64)
    import dashboards.game_rounds as mod

    real = mod.Accountant.spend
    real_day = mod.DayBudget.charge

    def spend(self: Any, *a: Any, **kw: Any) -> Any:
        rec = real(self, *a, **kw)
        records.append(rec)
        return rec

    def charge(self: Any, *a: Any, **kw: Any) -> Any:
        rec = real_day(self, *a, **kw)
        records.append(rec)
        return rec

    mp = pytest.MonkeyPatch()
    mp.setattr(mod.Accountant, "spend", spend)
    mp.setattr(mod.DayBudget, "charge", charge)
    try:
        released, ledger = gr.release_day(Spy(), ticks, counts, name="r1", epsilon_day=eps,  # type: ignore[arg-type]
                                          rng=np.random.default_rng(1))
    finally:
        mp.undo()
    per_day = inner.cost(1).day_rho > 0
    assert seen == ([1] * len(ticks) if per_day else list(range(1, len(ticks) + 1)))
    assert len(ledger) == (1 if per_day else len(ticks)) and released.shape == counts.shape
    assert all(r.scope.startswith("game:r1") for r in ledger)


def _task(tid: str, answer: Any, **detail: Any) -> gr.Task:
    return gr.Task(tid, "?", {}, answer, detail)


def test_accuracy_per_task() -> None:
    th = _task("threshold", 20)
    assert gr.accuracy(th, 20).accuracy == 1.0
    assert gr.accuracy(th, 15).accuracy == pytest.approx(0.75)  # 5 off of 20
    assert gr.accuracy(th, 45).accuracy == 0.0
    small = _task("threshold", 2)  # slack: errors relative to THRESHOLD_SLACK_TICKS
    assert gr.accuracy(small, 5).accuracy == pytest.approx(1 - 3 / gr.THRESHOLD_SLACK_TICKS)
    ranking = [{"id": "a", "mean": 5.0}, {"id": "b", "mean": 3.0}, {"id": "c", "mean": 3.0},
               {"id": "d", "mean": 1.0}]
    night = _task("night_region", "a", ranking=ranking)
    assert [gr.accuracy(night, k).error for k in "abcd"] == [0, 1, 1, 3]  # ties share a rank
    assert [gr.accuracy(night, k).accuracy for k in "ad"] == [1.0, 0.0]
    br = _task("broken_sensor", 600.0)
    assert gr.accuracy(br, 630.0).accuracy == pytest.approx(1 - 30 / gr.BROKEN_ZERO_MIN)
    assert gr.accuracy(br, 0.0).accuracy == 0.0
    ro = _task("routine_event", 600.0)
    assert gr.accuracy(ro, 570.0).accuracy == pytest.approx(1 - 30 / gr.ROUTINE_ZERO_MIN)
    assert gr.accuracy(ro, None).accuracy == 0.0 and gr.accuracy(ro, None).error is None


def test_points_from_accuracy_time_and_rounds() -> None:
    assert gr.time_factor(0) == gr.time_factor(gr.PAR_S) == 1.0
    assert gr.time_factor(gr.TIME_LIMIT_S) == pytest.approx(gr.TIME_FLOOR)
    mid = (gr.PAR_S + gr.TIME_LIMIT_S) / 2
    assert gr.time_factor(mid) == pytest.approx((1 + gr.TIME_FLOOR) / 2)
    assert gr.time_factor(gr.TIME_LIMIT_S + 1) == 0.0  # late: no points
    assert gr.rounds_bonus(0) == 1.0 and gr.rounds_bonus(3) == pytest.approx(1.3)
    assert gr.rounds_bonus(50) == gr.rounds_bonus(gr.ROUND_BONUS_CAP)
    assert gr.points(1.0, 10, 0) == gr.POINTS_PER_TASK
    assert gr.points(0.5, 10, 2) == round(gr.POINTS_PER_TASK * 0.5 * 1.2)
    assert gr.points(1.0, mid, 0) < gr.points(1.0, 10, 0) < gr.points(1.0, 10, 1)
    assert gr.points(1.0, gr.TIME_LIMIT_S + 1, 5) == 0


def test_answers_are_validated() -> None:
    params = {"threshold": {"max": 287}, "night_region": {"choices": [{"id": "f1"}]},
              "broken_sensor": {}, "routine_event": {}}
    got = gr.parse_answers(params, {"threshold": "12", "night_region": "f1",
                                    "broken_sensor": "09:35", "routine_event": ""})
    assert got == {"threshold": 12, "night_region": "f1", "broken_sensor": 575.0,
                   "routine_event": None}
    for bad in ({"threshold": -1}, {"threshold": 1.5}, {"threshold": True},
                {"night_region": "f9"}, {"broken_sensor": "25:00"}, {"broken_sensor": "9:35"},
                {"oops": 1}):
        with pytest.raises(InvalidParameterError):
            gr.parse_answers(params, bad)
    assert gr.trailing_zero_start([1, 0, 2, 0, 0]) == 3
    assert gr.trailing_zero_start([0, 0]) == 0 and gr.trailing_zero_start([0, 1]) is None


def test_score_reveals_the_truth_and_sums_points(campus: Any) -> None:
    rnd = gr.make_round(campus, mechanism="laplace", epsilon=1.0, seed=7,
                        rng=np.random.default_rng(7))
    exact = {t.id: t.answer for t in rnd.tasks}
    res = gr.score(rnd, exact, 10.0, 0)
    assert res["points"] == 4 * gr.POINTS_PER_TASK and not res["late"]
    assert all(t["accuracy"] == 1.0 and t["error"] == 0 for t in res["tasks"])
    broken = next(t for t in res["tasks"] if t["task"] == "broken_sensor")
    assert broken["truth_hhmm"] == gr.hhmm(broken["truth"])
    assert broken["true_series"] == rnd.true_series(broken["location"])
    late = gr.score(rnd, exact, gr.TIME_LIMIT_S + 5, 0)
    assert late["points"] == 0 and late["late"]
    doc = gr.trace(rnd, "ann", res, 0, 1.0)
    assert {t["task"] for t in doc["tasks"]} == set(gr.TASKS)
    assert "true_series" not in repr(doc) and doc["epsilon"] == 1.0
