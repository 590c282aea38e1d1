"""Thesis §5.5.2 / Figs A.2–A.3 parts of ``mide-eval`` (research.mide_thesis)."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from research import mide_eval
from research import mide_experiments as me
from research import mide_thesis as mt


def _day(g_hours: np.ndarray, cap: np.ndarray) -> me.DayData:
    counts = np.zeros((24, cap.size))
    counts[list(me.HOURS)] = g_hours
    return me.DayData("weekday", counts, cap)


def test_far_predicates_give_dppwlm_an_ex_post_below_tslm_and_one_near_one_prevents_it() -> None:
    # All aggregates ≥ 300 below their thresholds: every predicate is eliminated by the
    # 0.0514 step at the latest (α ≈ 58–72), so ε* < TSLM's 2.30 in every run (the
    # probability that one of 90 predicates survives there is < 90·e^(−0.0514·230) ≈ 7e-4
    # per run). Put one aggregate exactly at its threshold: it stays undecided at 0.0514
    # with probability ≥ 1 − e^(−0.0514·58) ≈ 0.95 per run and ends at ε_m = 3.69, so
    # P[ε* < TSLM] ≤ 0.05 per run; over 20 runs the mean must stay ≤ 0.25 (binomial
    # tail P[≥ 6 of 20 | p = 0.05] ≈ 3e-4).
    cap = np.full(6, 1000.0)
    far = np.full((len(me.HOURS), 6), 200.0)
    day = _day(far, cap)
    rows = me.main_table([day], 20, 3, _NoBar())
    order = mt.ordering([day], rows, 20, 3)
    q1m = next(r for r in order if r["query"] == "Q1M")
    assert q1m["near"] == 0
    assert q1m["dppwlm_p_eps_post_below_tslm"] == 1.0
    near = far.copy()
    near[3, 2] = 0.8 * 1000.0  # exactly the M threshold
    day = _day(near, cap)
    rows = me.main_table([day], 20, 3, _NoBar())
    q1m = next(r for r in mt.ordering([day], rows, 20, 3) if r["query"] == "Q1M")
    assert q1m["near"] == 1
    assert q1m["dppwlm_p_eps_post_below_tslm"] <= 0.25


def test_near_threshold_uses_the_last_level_below_eps_m() -> None:
    n, e_last, a_last = mt.near_threshold(np.array([0.0, 57.0, 59.0]), np.zeros(3))
    plan = me.DEFAULTS
    assert e_last == pytest.approx(plan["epsilon_1"] * (np.log(40) / plan["epsilon_1"]) ** (2 / 3))
    assert a_last == pytest.approx(np.log(20) / e_last)
    assert n == 2


def test_expost_cdf_is_monotone_and_ends_at_every_predicate() -> None:
    rng = np.random.default_rng(1)
    cap = rng.integers(100, 400, 5).astype(float)
    day = _day(rng.uniform(0, 500, (len(me.HOURS), 5)), cap)
    rows = mt.expost_cdf(day, 3, 0)
    for alg in mt.CDF_ALGORITHMS:
        ys = [r["predicates_at_or_below"] for r in rows if r["algorithm"] == alg]
        assert ys == sorted(ys) and ys[-1] == len(me.HOURS) * 5
        assert all(r["internal_only"] for r in rows)
    tslm = {r["epsilon"]: r["predicates_at_or_below"] for r in rows if r["algorithm"] == "tslm"}
    assert all(v == (75 if e >= np.log(10) else 0) for e, v in tslm.items())


def test_a2_sweep_denies_plans_past_epsilon_max_and_a3_is_kept_out_of_tables(tmp_path, capsys):
    rng = np.random.default_rng(0)
    cap = rng.integers(50, 300, 6).astype(float)
    counts = rng.poisson(cap * rng.uniform(0.3, 1.2, (2, 24, 6))).astype(float)
    cp, kp = tmp_path / "c.npy", tmp_path / "k.npy"
    np.save(cp, counts)
    np.save(kp, cap)
    out = tmp_path / "out"
    rc = mide_eval.main(["--counts", str(cp), "--capacities", str(kp), "--runs", "1",
                  "--skip", "beta,alpha,complex", "--out", str(out), "--no-progress"])
    assert rc == 0
    err = capsys.readouterr().err
    assert "INTERNAL ONLY" in err
    steps = list(csv.DictReader((out / "fig_a2_steps.csv").open()))
    # ε_m = ln(m/(2β)) at α = 1: 3.69 for m = 4, 4.09 > ε_max = 4 for m = 6
    assert {r["denied"] for r in steps if r["steps"] == "4"} == {"0.0"}
    assert {r["denied"] for r in steps if r["steps"] == "6"} == {"1.0"}
    start = list(csv.DictReader((out / "fig_a2_start_epsilon.csv").open()))
    assert len(start) == len(mt.START_EPSILONS) * len(mt.SWEEP_ALGORITHMS)
    assert (out / "INTERNAL_fig_a3_expost_cdf.csv").stat().st_size > 0
    assert (out / "INTERNAL_fig_a3_expost_cdf.png").stat().st_size > 0
    tables = (out / "tables.md").read_text()
    assert "ordering_5_5_2" in tables and "predicates_at_or_below" not in tables


class _NoBar:
    def update(self, n: int) -> None:
        pass
