"""Issue 17: SureShrink post-processing of Identity (mechanisms/histograms/shrink.py).

The transform and the threshold are checked exactly; the estimator's two claims — it
removes most of the noise on smooth data and costs (almost) nothing on rough data —
are statistical, each with its power check: the same test must fail for a shrinker
given the wrong noise level.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechanisms.accounting import Accountant, Budget
from mechanisms.histograms.privelet import haar
from mechanisms.histograms.select import release_1d
from mechanisms.histograms.shrink import sure_shrink, sure_threshold


def _sure(z: np.ndarray, t: float) -> float:
    return float(len(z) - 2 * np.sum(z <= t) + np.sum(np.minimum(z, t) ** 2))


def test_privelet_levels_carry_white_noise_at_the_scaled_sigma() -> None:
    """The per-level σ of ``_shrink_once``: on Privelet's transform, white noise of sd σ has
    sd σ·√(m/N) on a level of m coefficients (sample sd within 10 %: ≥ 6 standard errors
    for m ≥ 256)."""
    y = np.random.default_rng(0).normal(0.0, 3.0, size=4096)
    _, levels = haar(y)
    for c in levels:
        if len(c) >= 256:
            assert np.std(c) == pytest.approx(3.0 * math.sqrt(len(c) / 4096), rel=0.10)


@pytest.mark.parametrize("n", [2, 7, 256, 1000])
def test_no_noise_means_no_shrinkage(n: int) -> None:
    """σ → 0: every threshold is 0 and the round trip returns the histogram."""
    y = np.random.default_rng(n).integers(0, 100, n).astype(float)
    np.testing.assert_allclose(sure_shrink(y, 1e-9), y, atol=1e-6)


@pytest.mark.parametrize("seed", range(5))
def test_sure_threshold_is_the_risk_minimiser_on_dense_levels(seed: int) -> None:
    """On a level with signal, the threshold minimises SURE over a fine grid of t too."""
    rng = np.random.default_rng(seed)
    d = np.concatenate([rng.normal(size=200), rng.normal(0, 6, size=56)]) * 3.0
    t = sure_threshold(d, 3.0)
    z = np.abs(d) / 3.0
    grid = np.linspace(0.0, z.max() + 1.0, 20001)
    assert _sure(z, t / 3.0) <= min(_sure(z, g) for g in grid) + 1e-9


def test_sure_threshold_is_universal_on_sparse_levels() -> None:
    """Pure noise: the hybrid rule's universal threshold σ√(2 ln m)."""
    d = np.random.default_rng(1).normal(0, 2.0, size=1024)
    assert sure_threshold(d, 2.0) == pytest.approx(2.0 * math.sqrt(2 * math.log(1024)))


@pytest.mark.parametrize("n", [1, 2, 5, 100, 4096])
def test_constant_histograms_are_fixed_points(n: int) -> None:
    """Any length; a constant has no detail to shrink, so it comes back unchanged."""
    np.testing.assert_allclose(sure_shrink(np.full(n, 7.5), 3.0), np.full(n, 7.5), atol=1e-9)


# Statistical tests. Noise: Laplace scale b = 10 on n = 4096 cells (σ = b√2), TRIALS
# independent histograms; the statistic is the mean over the trials of the squared error
# ratio (shrunk / raw). Raw squared error per trial sums 4096 Laplace² terms (relative sd
# √(E[L⁴]/E[L²]² − 1)/√4096 = √5/64 ≈ 3.5 %), so the mean of TRIALS ratios is known to
# about 1 % — the bounds below sit far (≥ 10 sd) from both the estimator's measured ratio
# and the power check's: false-alarm rate and miss rate are both below 1e-6.
TRIALS = 10
B = 10.0
SIGMA = B * math.sqrt(2.0)


def _mean_ratio(x: np.ndarray, sigma: float, seed: int) -> float:
    rng = np.random.default_rng(seed)
    ratios = []
    for _ in range(TRIALS):
        y = x + rng.laplace(0.0, B, size=len(x))
        ratios.append(np.sum((sure_shrink(y, sigma) - x) ** 2) / np.sum((y - x) ** 2))
    return float(np.mean(ratios))


def _smooth() -> np.ndarray:
    """Piecewise constant, 16 steps between 0 and 80 counts: what DAWA merges."""
    levels = np.random.default_rng(7).integers(0, 80, 16)
    return np.repeat(levels, 256).astype(float)


@pytest.mark.slow
def test_shrinkage_removes_most_noise_on_smooth_data() -> None:
    """Measured ≈ 0.03 of the raw squared error; bound 0.25. Power: told the noise is ten
    times smaller than it is, the shrinker keeps most of the noise and fails the bound."""
    x = _smooth()
    assert _mean_ratio(x, SIGMA, 11) < 0.25
    assert _mean_ratio(x, SIGMA / 10, 11) >= 0.25


@pytest.mark.slow
def test_shrinkage_costs_little_on_rough_data() -> None:
    """Independent counts 0–2000 per cell (no structure to exploit): measured ≈ 1.00 of the
    raw squared error; bound 1.05. Power: told the noise is thirty times larger, the
    shrinker smooths the data away and fails the bound."""
    x = np.random.default_rng(3).integers(0, 2000, 4096).astype(float)
    assert _mean_ratio(x, SIGMA, 12) <= 1.05
    assert _mean_ratio(x, 30 * SIGMA, 12) > 1.05


def test_identity_sure_is_identity_then_shrinkage_charged_once() -> None:
    """Same ε, one charge, and the release is the shrinkage of Identity's own release."""
    x = np.random.default_rng(4).integers(0, 50, 300).astype(float)
    acct = Accountant(Budget(0.5), name="t")
    est = release_1d("Identity-SURE", x, 0.5, accountant=acct, rng=np.random.default_rng(9))
    raw = release_1d("Identity", x, 0.5, rng=np.random.default_rng(9))
    np.testing.assert_allclose(est, sure_shrink(raw, math.sqrt(2.0) / 0.5))
    assert acct.spent().epsilon == pytest.approx(0.5)
    assert len(acct.records) == 1
