"""Issue 17, 1-D: HDMM's hierarchical strategy family, the selection rule's DP features."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from scipy import stats

from mechanisms.accounting import Accountant, Budget
from mechanisms.errors import BudgetExhaustedError
from mechanisms.histograms import hdmm
from mechanisms.histograms import select as sel
from mechanisms.histograms.hb import hb_branching

# --- HDMM: the weighted hierarchy ------------------------------------------------------


def _explicit(h: hdmm.Hierarchy) -> np.ndarray:
    """The strategy matrix A (rows: blocks of every level with w_l > 0), padded domain."""
    rows = []
    for wl, s in zip(h.w, h.sizes, strict=True):
        if wl > 0:
            for j in range(h.big_n // s):
                r = np.zeros(h.big_n)
                r[j * s : (j + 1) * s] = wl
                rows.append(r)
    return np.array(rows)


def _ranges(n: int, q: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    r = np.random.default_rng(seed)
    a, b = r.integers(0, n, q), r.integers(0, n, q)
    return np.minimum(a, b), np.maximum(a, b) + 1


@pytest.mark.parametrize(("n", "b"), [(27, 3), (10, 2), (20, 4)])
def test_hierarchy_error_and_reconstruction_match_brute_force(n: int, b: int) -> None:
    """Closed form tr(WᵀW(AᵀA)⁻¹) and the O(n h) least squares = the explicit matrices."""
    lo, hi = _ranges(n, 25, n)
    w_mat = np.zeros((len(lo), n))
    for i, (a, c) in enumerate(zip(lo, hi, strict=True)):
        w_mat[i, a:c] = 1.0
    gram = w_mat.T @ w_mat
    h_levels = hdmm._height(n, b)
    weights = np.random.default_rng(1).random(h_levels + 1) + 0.1
    weights /= weights.sum()
    hier = hdmm.Hierarchy(n, b, weights)
    a_mat = _explicit(hier)
    assert np.abs(a_mat).sum(axis=0).max() == pytest.approx(1.0)  # ‖A‖₁ = Σ w = 1
    ata_inv = np.linalg.inv(a_mat.T @ a_mat)
    big = hier.big_n
    g_pad = np.zeros((big, big))
    g_pad[:n, :n] = gram
    exact = float(np.trace(g_pad @ ata_inv))
    for op in (hdmm.RangeGram(n, lo, hi), hdmm.DenseGram(gram)):
        tau = hdmm._level_traces(op, b, h_levels)
        t = np.diff(np.concatenate(([0.0], tau)))
        val = hdmm._hier_objective(t, hier.sizes.astype(float))(weights)[0]
        assert val == pytest.approx(exact, rel=1e-9)
    # reconstruction = (AᵀA)⁻¹Aᵀy for an arbitrary y
    y_flat = np.random.default_rng(2).normal(size=a_mat.shape[0])
    parts, k = [], 0
    for wl, s in zip(hier.w, hier.sizes, strict=True):
        m = big // s if wl > 0 else 0
        parts.append(y_flat[k : k + m])
        k += m
    assert np.allclose(hier.reconstruct(parts), (ata_inv @ a_mat.T @ y_flat)[:n])


def test_hierarchy_objective_gradient_matches_finite_differences() -> None:
    n, b = 64, 4
    lo, hi = _ranges(n, 40, 3)
    tau = hdmm._level_traces(hdmm.RangeGram(n, lo, hi), b, 3)
    t = np.diff(np.concatenate(([0.0], tau)))
    f = hdmm._hier_objective(t, (b ** (3 - np.arange(4))).astype(float))
    w = np.array([0.1, 0.3, 0.2, 0.4])
    num = np.array([(f(w + e)[0] - f(w - e)[0]) / 2e-7 for e in np.eye(4) * 1e-7])
    assert np.allclose(num, f(w)[1], rtol=1e-5)


def test_optimised_hierarchy_beats_hb_weights_and_identity_on_prefix() -> None:
    n = 256
    op = hdmm.RangeGram(n, np.zeros(n, np.int64), np.arange(1, n + 1))
    hier, val = hdmm.opt_hierarchy(op)
    b = hb_branching(n)
    h = hdmm._height(n, b)
    tau = hdmm._level_traces(op, b, h)
    t = np.diff(np.concatenate(([0.0], tau)))
    hb_w = np.full(h + 1, 1.0 / h)
    hb_w[0] = 0.0
    hb_val = hdmm._hier_objective(t, (b ** (h - np.arange(h + 1))).astype(float))(hb_w)[0]
    assert val <= hb_val * (1 + 1e-9)
    assert val < 0.5 * op.diag.sum()  # identity: tr(WᵀW)


def test_hdmm_hierarchy_error_has_the_predicted_variance() -> None:
    """Monte Carlo total squared error ≈ (2/ε²)·objective (relative SE ≈ 3 %: 6 SE band)."""
    n, eps, reps = 64, 1.0, 1000
    lo, hi = _ranges(n, 30, 5)
    op = hdmm.RangeGram(n, lo, hi)
    _, val = hdmm.opt_hierarchy(op)
    x = np.random.default_rng(0).poisson(20, n).astype(float)
    rng = np.random.default_rng(6)
    c_true = np.concatenate(([0.0], np.cumsum(x)))
    errs = np.empty(reps)
    for i in range(reps):
        est = hdmm.hdmm_release(x, eps, (lo, hi), strategy="hierarchical", rng=rng)
        c = np.concatenate(([0.0], np.cumsum(est)))
        errs[i] = np.sum(((c[hi] - c[lo]) - (c_true[hi] - c_true[lo])) ** 2)
    se = errs.std(ddof=1) / np.sqrt(reps)
    expected = 2.0 / eps**2 * val
    assert abs(errs.mean() - expected) < 6 * se
    assert abs(errs.mean() - 1.3 * expected) > 6 * se  # a 30 %-off variance is rejected


def test_hdmm_hierarchy_is_exact_at_huge_epsilon_and_charges_first() -> None:
    n = 100
    x = np.random.default_rng(0).poisson(9, n).astype(float)
    wl = _ranges(n, 50, 2)
    assert np.allclose(hdmm.hdmm_release(x, 1e9, wl, strategy="hierarchical"), x, atol=1e-4)
    spent = Accountant(Budget(0.1))
    spent.spend(0.1, mechanism="earlier")
    gen = np.random.default_rng(3)
    state = gen.bit_generator.state
    with pytest.raises(BudgetExhaustedError):
        hdmm.hdmm_release(x, 0.5, wl, accountant=spent, rng=gen)
    assert gen.bit_generator.state == state


# --- the selection rule -----------------------------------------------------------------


def test_select_algorithm_takes_only_public_inputs_and_covers_every_box() -> None:
    params = list(inspect.signature(sel.select_algorithm).parameters)
    assert params == ["n", "kind", "epsilon", "scale_estimate", "trunc_estimate"]
    for kind, boxes in sel.RULE.items():
        assert boxes[-1][0] == () or len(boxes) > 1
        for box, alg in boxes:
            # a point inside the box (just beyond each bound) selects the box's algorithm
            # unless an earlier box holds it
            lsnr, u = 0.0, 0.5
            for f, op, t in box:
                v = t - 1e-6 if op == "<=" else t + 1e-6
                if f == 0:
                    lsnr = v
                else:
                    u = v
            got = sel.select_algorithm(4096, kind, 1.0, 10**lsnr * 4096, u)
            earlier = [
                a for b2, a in boxes[: boxes.index((box, alg))]
                if all(((lsnr, u)[f] <= t) if op == "<=" else ((lsnr, u)[f] > t) for f, op, t in b2)
            ]
            assert got == (earlier[0] if earlier else alg)


def test_auto_release_sees_the_data_only_through_the_charged_estimates(monkeypatch) -> None:
    """Two different data sets, the DP features forced equal: identical choice and facts."""
    n = 256
    x1 = np.zeros(n)
    x1[:4] = 2500.0
    x2 = np.full(n, 10000.0 / n)
    seen = []

    def fixed(x, eps_each, cap, *, rng=None, discrete=False):  # type: ignore[no-untyped-def]
        seen.append((len(x), eps_each, cap))
        return 10000.0, 0.3  # what the noisy features happened to say

    chosen = []
    real = sel.select_algorithm

    def spy(*args: object) -> str:
        chosen.append(args)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(sel, "noisy_features", fixed)
    monkeypatch.setattr(sel, "select_algorithm", spy)
    wl = (np.zeros(n, np.int64), np.arange(1, n + 1))
    _, f1 = sel.auto_release(x1, 0.5, workload=wl, rng=np.random.default_rng(4))
    _, f2 = sel.auto_release(x2, 0.5, workload=wl, rng=np.random.default_rng(4))
    assert seen[0] == seen[1]
    assert f1 == f2
    # the rule saw exactly the public facts and the charged estimates, nothing else
    assert chosen[0] == chosen[1] == (n, "prefix", 0.5 * (1 - sel.SCALE_SHARE), 10000.0, 0.3)


def test_auto_release_charges_both_features_and_the_algorithm() -> None:
    acct = Accountant(Budget(1.0))
    x = np.random.default_rng(0).poisson(30, 128).astype(float)
    _, facts = sel.auto_release(x, 1.0, accountant=acct, rng=np.random.default_rng(1))
    recs = acct.records
    assert [r.mechanism for r in recs[:2]] == ["histogram:auto:scale", "histogram:auto:trunc"]
    assert recs[0].epsilon == pytest.approx(sel.SCALE_SHARE / 2)
    assert recs[1].epsilon == pytest.approx(sel.SCALE_SHARE / 2)
    assert acct.spent().epsilon == pytest.approx(1.0)
    assert facts["eps_scale"] + facts["eps_trunc"] == pytest.approx(sel.SCALE_SHARE)
    # refused before any draw when the budget cannot cover the features
    short = Accountant(Budget(0.004))
    gen = np.random.default_rng(3)
    state = gen.bit_generator.state
    with pytest.raises(BudgetExhaustedError):
        sel.auto_release(x, 1.0, accountant=short, rng=gen)
    assert gen.bit_generator.state == state


#: false-alarm rate of each KS test below; with 4000 draws the KS critical distance is
#: ≈ 1.95/√4000 = 0.031, while Laplace scales 30 % apart differ by D ≈ 0.08 (power ≈ 1)
ALPHA = 1e-3
DRAWS = 4000


def test_truncated_mass_feature_has_the_stated_laplace_noise() -> None:
    x = np.random.default_rng(0).poisson(3, 200).astype(float)
    eps_each, cap = 0.05, 4.0
    true = sel.truncated_fraction(x, cap)
    assert true == pytest.approx(np.minimum(x, cap).sum() / (200 * cap))
    rng = np.random.default_rng(11)
    draws = np.array([sel.noisy_features(x, eps_each, cap, rng=rng)[1] for _ in range(DRAWS)])
    scale = 1.0 / eps_each / (200 * cap)
    assert stats.kstest(draws - true, "laplace", args=(0, scale)).pvalue > ALPHA
    assert stats.kstest(draws - true, "laplace", args=(0, 1.3 * scale)).pvalue < ALPHA
    assert stats.kstest(draws - true, "laplace", args=(0, scale / 1.3)).pvalue < ALPHA


def test_truncated_sum_has_sensitivity_one() -> None:
    rng = np.random.default_rng(4)
    for _ in range(200):
        x = rng.poisson(2, 50).astype(float)
        cap = float(rng.integers(1, 5))
        y = x.copy()
        y[rng.integers(50)] += 1
        diff = (sel.truncated_fraction(y, cap) - sel.truncated_fraction(x, cap)) * 50 * cap
        assert -1e-9 <= diff <= 1 + 1e-9
