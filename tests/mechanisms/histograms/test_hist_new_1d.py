"""HB, Privelet, GreedyH, MWEM, HDMM (issue 17, step 2): exactness, accounting, noise scale."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from mechanisms.accounting import Accountant, Budget
from mechanisms.errors import BudgetExhaustedError
from mechanisms.histograms import _tree
from mechanisms.histograms.hb import hb_branching, hb_release, hb_tree, hb_variance
from mechanisms.histograms.hdmm import DenseGram, RangeGram, _objective, hdmm_release, opt0
from mechanisms.histograms.mwem import mwem_release
from mechanisms.histograms.privelet import haar, inverse_haar, privelet_release
from mechanisms.histograms.select import release_1d

# KS tests of standardised noise against Laplace(0, 1): α = 1e-3 per test; with
# N ≥ 20 000 draws the KS critical distance is ≈ 0.014 while a 30 % scale error moves the
# CDF by ≈ 0.07, so power is ≈ 1 — each test also checks that ±30 % is rejected.
ALPHA = 1e-3
N_DRAWS = 20_000


def _ks(z: np.ndarray) -> float:
    return float(stats.kstest(z, stats.laplace.cdf).pvalue)


def _assert_laplace(z: np.ndarray) -> None:
    assert _ks(z) > ALPHA
    assert _ks(z * 1.3) < ALPHA
    assert _ks(z / 1.3) < ALPHA


def _ranges(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    r = np.random.default_rng(seed)
    a, b = r.integers(0, n, m), r.integers(0, n, m)
    return np.minimum(a, b), np.maximum(a, b) + 1


# --- HB ------------------------------------------------------------------------------


def test_hb_branching_minimises_the_variance_proxy() -> None:
    for n in (16, 100, 4096):
        b = hb_branching(n)
        assert all(hb_variance(n, b) <= hb_variance(n, c) for c in range(2, n + 1))
    assert hb_branching(4096) > 2  # Qardaji et al.: b ≈ 16 beats binary trees


def test_hb_tree_sensitivity_is_its_height_and_release_is_exact_at_huge_eps() -> None:
    t = hb_tree(100)
    depth = max(t.depth)
    assert _tree.sensitivity(t) == depth
    x = np.random.default_rng(0).poisson(30, 100).astype(float)
    est = hb_release(x, 1e9, rng=np.random.default_rng(1))
    assert np.allclose(est, x, atol=1e-5)


def test_hb_noise_scale() -> None:
    t = hb_tree(64)
    x = np.arange(64, dtype=float)
    on = np.flatnonzero(t.weight > 0)
    sums = np.array([x[t.lo[v] : t.hi[v]].sum() for v in on])
    rng = np.random.default_rng(5)
    reps = N_DRAWS // len(on) + 1
    draws = np.array([_tree.measure(x, t, 0.5, rng=rng)[on] for _ in range(reps)])
    _assert_laplace(((draws - sums) * 0.5 / _tree.sensitivity(t)).ravel())


def test_tree_least_squares_is_consistent_and_unbiased_in_expectation() -> None:
    t = hb_tree(30)
    x = np.random.default_rng(2).poisson(10, 30).astype(float)
    y = _tree.measure(x, t, 1.0, rng=np.random.default_rng(3))
    est = _tree.least_squares(t, y, 1.0)
    # post-processing is linear: y − x-part is noise, so LS(y) − LS(y(x=0)) = x exactly
    y0 = y.copy()
    on = t.weight > 0
    y0[on] -= np.array([x[t.lo[v] : t.hi[v]].sum() for v in np.flatnonzero(on)])
    assert np.allclose(est - _tree.least_squares(t, y0, 1.0), x)


# --- Privelet ------------------------------------------------------------------------


def test_haar_round_trip() -> None:
    x = np.random.default_rng(0).normal(size=64)
    assert np.allclose(inverse_haar(*haar(x)), x)


def test_privelet_coefficient_noise_scales() -> None:
    n, eps = 32, 0.8
    rho = 1 + 5
    rng = np.random.default_rng(9)
    reps = N_DRAWS // n + 1
    zs = []
    for _ in range(reps):
        c0, levels = haar(privelet_release(np.zeros(n), eps, rng=rng))
        zs.append([c0 * eps * n / rho])
        for c in levels:
            zs.append(c * eps * (n // len(c)) / rho)
    _assert_laplace(np.concatenate([np.atleast_1d(z) for z in zs]))


def test_privelet_pads_non_powers_of_two() -> None:
    x = np.arange(10, dtype=float)
    assert np.allclose(privelet_release(x, 1e9, rng=np.random.default_rng(0)), x, atol=1e-5)


# --- GreedyH / HDMM / MWEM -----------------------------------------------------------


def test_hdmm_gradient_matches_finite_differences() -> None:
    n, p = 12, 3
    lo, hi = _ranges(n, 20, 4)
    f = _objective(RangeGram(n, lo, hi), p)
    th = np.random.default_rng(1).random(p * n)
    val, grad = f(th)
    w = np.zeros((len(lo), n))
    for i, (a, b) in enumerate(zip(lo, hi, strict=True)):
        w[i, a:b] = 1.0
    a_mat = np.vstack([np.eye(n), th.reshape(p, n)]) / (1 + th.reshape(p, n).sum(0))
    assert val == pytest.approx(np.trace(w.T @ w @ np.linalg.inv(a_mat.T @ a_mat)))
    assert _objective(DenseGram(w.T @ w), p)(th)[0] == pytest.approx(val)
    num = np.array([
        (f(th + h)[0] - f(th - h)[0]) / 2e-6 for h in np.eye(p * n) * 1e-6
    ])
    assert np.allclose(num, grad, rtol=1e-4, atol=1e-4)


def test_hdmm_beats_identity_on_prefix_and_is_exact_at_huge_eps() -> None:
    n = 64
    g = RangeGram(n, np.zeros(n, np.int64), np.arange(1, n + 1))
    th = opt0(g, 4)
    ident = _objective(g, 1)(np.zeros(n))[0]
    assert _objective(g, 4)(th.ravel())[0] < 0.5 * ident
    x = np.random.default_rng(0).poisson(9, n).astype(float)
    est = hdmm_release(x, 1e9, (np.zeros(n, np.int64), np.arange(1, n + 1)), p=4)
    assert np.allclose(est, x, atol=1e-4)


def test_mwem_spends_exactly_epsilon_and_refuses_an_overdraft() -> None:
    x = np.random.default_rng(0).poisson(20, 50).astype(float)
    acct = Accountant(Budget(1.0))
    est = mwem_release(x, 1.0, accountant=acct, rng=np.random.default_rng(0), rounds=5)
    assert acct.spent().epsilon == pytest.approx(1.0)
    assert est.sum() == pytest.approx(x.sum(), rel=0.1)
    small = Accountant(Budget(0.5))
    with pytest.raises(BudgetExhaustedError):
        mwem_release(x, 1.0, accountant=small, rng=np.random.default_rng(0))


@pytest.mark.parametrize("name", ["HB", "Privelet", "GreedyH", "MWEM", "HDMM", "DAWA", "AHP"])
def test_every_algorithm_charges_epsilon_before_noise(name: str) -> None:
    x = np.random.default_rng(0).poisson(20, 64).astype(float)
    wl = _ranges(64, 30, 1)
    acct = Accountant(Budget(0.7))
    est = release_1d(name, x, 0.7, workload=wl, accountant=acct, rng=np.random.default_rng(2))
    assert est.shape == x.shape
    assert acct.spent().epsilon == pytest.approx(0.7)

    exhausted = Accountant(Budget(0.1))
    exhausted.spend(0.1, mechanism="earlier")
    gen = np.random.default_rng(3)
    state = gen.bit_generator.state
    with pytest.raises(BudgetExhaustedError):
        release_1d(name, x, 0.7, workload=wl, accountant=exhausted, rng=gen)
    assert gen.bit_generator.state == state  # refused before any draw
