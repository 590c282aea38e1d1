"""Selection rule (public facts + DP scale only) and SORTaki's error measure (issue 17)."""

from __future__ import annotations

import numpy as np
import pytest

from mechanisms.accounting import Accountant, Budget
from mechanisms.histograms import evaluation as ev
from mechanisms.histograms import select as sel
from mechanisms.histograms._noise import child_stream
from research.histogram import build_parser

# The rule's public-input and data-invariance tests live in test_hist_1d_rule_hdmm.py
# (two DP features since the rule grew a second one).


def test_auto_release_spends_exactly_epsilon() -> None:
    acct = Accountant(Budget(1.0))
    x = np.random.default_rng(0).poisson(30, 128).astype(float)
    est, facts = sel.auto_release(x, 1.0, accountant=acct, rng=np.random.default_rng(1))
    assert acct.spent().epsilon == pytest.approx(1.0)
    assert facts["eps_scale"] + facts["eps_trunc"] == pytest.approx(sel.SCALE_SHARE)
    assert est.shape == x.shape


def test_workload_kind() -> None:
    assert sel.workload_kind(8, None) == "identity"
    assert sel.workload_kind(8, (np.arange(8), np.arange(1, 9))) == "identity"
    assert sel.workload_kind(8, (np.zeros(8, int), np.arange(1, 9))) == "prefix"
    assert sel.workload_kind(8, (np.array([1, 2]), np.array([5, 8]))) == "range"


def test_squared_error_and_allrange_closed_form() -> None:
    rng = np.random.default_rng(0)
    n = 40
    x = rng.poisson(10, n).astype(float)
    est = x + rng.normal(0, 3, n)
    w = ev.allrange_workload(n)
    assert w.size == n * (n + 1) // 2
    diff = ev.answer(x, w) - ev.answer(est, w)
    brute = float(diff @ diff) / (w.size * x.sum())
    assert ev.scaled_error(x, est, w, "sortaki") == pytest.approx(brute, rel=1e-9)
    assert ev.scaled_error(x, est, w) == pytest.approx(
        np.linalg.norm(diff) / (w.size * x.sum()), rel=1e-9
    )
    r = ev.make_workload("random", n, rng=rng)
    d = ev.answer(x, r) - ev.answer(est, r)
    assert ev.squared_scaled_error(x, est, r) == pytest.approx(d @ d / (r.size * x.sum()))
    with pytest.raises(ValueError):
        ev.scaled_error(x, est, w, "l1")


def test_sortaki_measure_reproduces_identity_expectation() -> None:
    """Identity's squared error per range is 2·|range|/ε²: its SORTaki value is known.

    Small ranges (sizes 1..10, mean 5.5) at scale 1e5, ε = 1: 2·5.5/1e5 = 1.1e-4 (SORTaki
    Table IX: 1.10). Mean of 50 trials; the relative s.d. of one trial's mean over 2000
    queries is ≈ 5 %, of 50 trials ≈ 0.7 %, so a 5 % tolerance is > 6 s.d. (false alarm
    < 1e-9) while a 30 %-off expectation fails.
    """
    n = 1024
    x = np.full(n, 1e5 / n)
    w = ev.make_workload("small", n, rng=np.random.default_rng(0))
    rng = np.random.default_rng(1)
    vals = [ev.scaled_error(x, x + rng.laplace(0, 1.0, n), w, "sortaki") for _ in range(50)]
    expected = 2 * np.mean(w.hi - w.lo) / 1e5
    assert np.mean(vals) == pytest.approx(expected, rel=0.05)
    assert np.mean(vals) != pytest.approx(1.3 * expected, rel=0.05)


def test_evaluate_1d_runs_new_algorithms_with_the_sortaki_measure() -> None:
    shape = np.random.default_rng(0).gamma(0.5, 10, 64)
    rows = ev.evaluate_1d(
        {"G": shape}, ["HB", "Privelet", "auto", "Identity"], [1.0], ["allrange", "random"],
        trials=2, scale=10_000, measure="sortaki",
    )
    assert {r.algorithm for r in rows} == {"HB", "Privelet", "auto", "Identity"}
    assert all(r.error > 0 for r in rows)


def test_cli_lists_every_algorithm_and_the_measure() -> None:
    sub = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    help_text = "".join(sub["evaluate"].format_help().split())
    for name in ("HB", "Privelet", "GreedyH", "MWEM", "HDMM", "auto", "DAWA", "AHP"):
        assert name in help_text
    assert "--measure" in help_text
    release_help = "".join(sub["release"].format_help().split())
    for name in ("HB", "Privelet", "GreedyH", "MWEM", "HDMM", "auto"):
        assert name in release_help
    args = build_parser().parse_args(["release", "x.npy"])
    assert args.algorithm == "auto"


def test_default_release_selects_and_records_the_choice(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from research.histogram import main

    x = np.random.default_rng(0).poisson(50, (4, 64)).astype(float)
    src = tmp_path / "cube.npy"
    np.save(src, x)
    out = tmp_path / "rel.json"
    argv = ["release", str(src), "-e", "0.5", "--seed", "1", "--day", "2026-11-24", "-o"]
    assert main([*argv, str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["algorithm"].startswith("auto-")
    assert doc["algorithm"].split("-", 1)[1] in {a for rows in sel.RULE.values() for _, a in rows}
    assert np.shape(doc["released"]) == x.shape
    assert doc["ledger"]["epsilon"] == pytest.approx(0.5)


def test_auto_release_is_projected_and_no_worse_than_the_chosen_algorithm() -> None:
    """The default projects onto non-negative histograms in the workload's norm: cells
    ≥ 0, and the workload error ≤ that of the chosen algorithm run alone on the same
    draws (identity: per cell). Fails without the projection: on a sparse histogram the
    unprojected releases have negative cells."""
    x = np.zeros(256)
    x[[3, 70, 71, 200]] = [5.0, 40.0, 38.0, 9.0]
    n = len(x)
    cells = (np.arange(n), np.arange(1, n + 1))
    prefix = (np.zeros(n, np.int64), np.arange(1, n + 1))
    for wl in (None, prefix):
        est, facts = sel.auto_release(x, 0.5, workload=wl, rng=np.random.default_rng(2))
        gen = np.random.default_rng(2)
        _ = child_stream(gen)  # the features' stream, as auto_release spawns it
        eps_alg = 0.5 - facts["eps_scale"] - facts["eps_trunc"]
        raw = sel.release_1d(facts["algorithm"], x, eps_alg, workload=wl, rng=gen)
        assert np.any(raw < 0)
        assert np.all(est >= 0)
        w = ev.Workload("w", n, *(wl if wl is not None else cells))
        assert ev.scaled_error(x, est, w) <= ev.scaled_error(x, raw, w)
        if wl is None:
            assert np.all(np.abs(est - x) <= np.abs(raw - x) + 1e-9)
