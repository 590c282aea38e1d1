"""Statistical noise-scale tests of the 2-D releases (issue 17): each measurement's noise
has the variance its ε share implies.

Test: residuals r_i (independent, mean 0, variance σ_i² under H0) are standardised,
``s_i = r_i/σ_i``; ``z = (mean(s²) − 1)/sqrt((κ − 1)/n)``. For a Laplace variable or any
weighted sum of independent Laplace variables the kurtosis κ ≤ 6, so ``Var(s²) ≤ 5`` and
the z-test with |z| > Z_CRIT = 3.29 has a false-alarm rate ≤ 1e-3 (two-sided normal
quantile; n ≥ 1000 so the CLT applies to the mean of s²). Power: a 30 %-off noise scale
multiplies E[s²] by 1.69 or 0.49, i.e. |E z| ≥ 0.51·sqrt(n/5) ≥ 10 for n ≥ 2000, so it is
rejected with probability ≈ 1; each test also checks that the 30 %-off residuals are
rejected.
"""

from __future__ import annotations

import math

import numpy as np

from mechanisms.accounting import Accountant, Budget
from mechanisms.histograms import grids, kdtree, quadtree
from mechanisms.histograms.spend import noisy_total

#: two-sided normal quantile for false-alarm rate 1e-3
Z_CRIT = 3.29
#: upper bound on the kurtosis of (sums of) Laplace noise
KURTOSIS_MAX = 6.0


def _z(standardised: np.ndarray) -> float:
    s2 = np.asarray(standardised, np.float64) ** 2
    return float((s2.mean() - 1.0) / math.sqrt((KURTOSIS_MAX - 1.0) / s2.size))


def _check(residuals: np.ndarray, sigma: np.ndarray | float) -> None:
    s = np.asarray(residuals, np.float64) / sigma
    assert s.size >= 1000
    assert abs(_z(s)) < Z_CRIT, _z(s)
    for off in (1.3, 0.7):  # power: a 30 %-off noise scale is rejected
        assert abs(_z(s * off)) > Z_CRIT


def _dense(shape: tuple[int, int], lam: float, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).poisson(lam, shape).astype(float)


def test_ug_cell_noise_scale() -> None:
    eps = 0.7
    x = _dense((128, 128), 5.0, 0)
    n = float(x.sum())
    rel = grids.ug_release(x, eps, scale=n, rng=np.random.default_rng(1))
    r = [rel.estimate[a:b, c:d].sum() - x[a:b, c:d].sum() for (a, b), (c, d) in rel.boxes]
    assert len(r) == grids.ug_size(n, eps) ** 2
    _check(np.array(r), math.sqrt(2.0) / eps)


def test_ag_first_level_combined_noise_scale() -> None:
    eps, alpha = 1.0, grids.AG_ALPHA
    x = _dense((120, 120), 18.0, 2)
    n = float(x.sum())
    m1 = grids.ag_first_size(n, eps)
    e0 = grids.grid_edges(120, m1)
    rel = grids.ag_release(x, eps, scale=n, rng=np.random.default_rng(3))
    k = np.zeros((len(e0) - 1, len(e0) - 1), int)  # sub-cells per first-level cell
    for (p, _), (u, _) in rel.boxes:
        k[np.searchsorted(e0, p, "right") - 1, np.searchsorted(e0, u, "right") - 1] += 1
    res, sig = [], []
    for i in range(len(e0) - 1):
        for j in range(len(e0) - 1):
            a, b, c, d = e0[i], e0[i + 1], e0[j], e0[j + 1]
            var_v = 2.0 / (alpha * eps) ** 2
            var_u = k[i, j] * 2.0 / ((1 - alpha) * eps) ** 2
            res.append(rel.estimate[a:b, c:d].sum() - x[a:b, c:d].sum())
            sig.append(math.sqrt(1.0 / (1.0 / var_v + 1.0 / var_u)))
    assert len(res) >= 1000
    _check(np.array(res), np.array(sig))


def test_quadtree_root_noise_scale() -> None:
    eps = 0.4
    x = _dense((8, 8), 3.0, 4)
    rng = np.random.default_rng(5)
    r = [quadtree.quadtree_release(x, eps, height=0, rng=rng).estimate.sum() for _ in range(2000)]
    _check(np.array(r) - x.sum(), math.sqrt(2.0) / eps)


def test_kd_partition_count_noise_scale() -> None:
    eps, share = 1.0, 0.3
    x = _dense((64, 64), 30.0, 6)
    rel = kdtree.kd_tree_release(
        x, eps, xi0=100.0, xi1=math.inf, cell_share=share, rng=np.random.default_rng(7)
    )
    assert rel.eps_partitions == (1 - share) * eps
    r = [rel.estimate[a:b, c:d].sum() - x[a:b, c:d].sum() for (a, b), (c, d) in rel.boxes]
    assert len(r) >= 1000
    _check(np.array(r), math.sqrt(2.0) / rel.eps_partitions)


def test_hierarchical_kd_leaf_noise_scale() -> None:
    eps, h = 1.0, 8
    x = _dense((64, 64), 30.0, 8)
    rng = np.random.default_rng(9)
    r = []
    for _ in range(8):
        rel = kdtree.hierarchical_kd_release(x, eps, height=h, rng=rng)
        assert len(rel.boxes) == 2**h
        r += [rel.estimate[a:b, c:d].sum() - x[a:b, c:d].sum() for (a, b), (c, d) in rel.boxes]
    _check(np.array(r), math.sqrt(2.0) * (h + 1) / eps)


def test_scale_estimate_noise_scale() -> None:
    eps = 0.05
    x = _dense((16, 16), 50.0, 10)
    rng = np.random.default_rng(11)
    acct = Accountant(Budget(2000 * eps + 1e-6), name="t")
    r = [noisy_total(x, eps, accountant=acct, rng=rng) - x.sum() for _ in range(2000)]
    _check(np.array(r), math.sqrt(2.0) / eps)
