"""Exact discrete Gaussian sampler (mechanisms.gaussian)."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

from mechanisms import gaussian
from mechanisms.errors import InvalidParameterError
from mechanisms.noise import keyed_rng

# Statistical design (STYLE.md 12). False-alarm rate per chi-square test: ALPHA. The
# goodness-of-fit test bins |Z| into 0..top−1 and ≥ top (every expected count ≥ 5 at
# the sample size) and compares with the exact pmf N_ℤ(0, σ²). Power against a σ 30 %
# off (0.7σ and 1.3σ) is *computed* from the noncentral chi-square with noncentrality
# n·Σ(p₁−p₀)²/p₀ and asserted ≥ POWER before the test is run; it is also checked
# empirically: samples drawn at 0.7σ and 1.3σ must be rejected.
ALPHA = 1e-4
POWER = 0.99
N_FAST = 20_000
N_SLOW = 400_000
SIGMAS = (0.7, 3.7, 12.0)
KEY = b"device-day-test-secret-0123456789"


def _bins(sigma: float, n: int) -> tuple[int, np.ndarray]:
    """Top bin and the probabilities of |Z| = 0..top−1 and |Z| ≥ top under N_ℤ(0, σ²)."""
    top = 1
    while True:
        p = gaussian.discrete_gaussian_pmf(np.arange(top + 1), sigma)
        if n * p[top] * 2 < 5:
            break
        top += 1
    pmf = gaussian.discrete_gaussian_pmf(np.arange(top), sigma) * np.where(
        np.arange(top) == 0, 1, 2
    )
    return top, np.append(pmf, max(1 - pmf.sum(), 1e-300))


def _pvalue(z: np.ndarray, sigma: float) -> float:
    top, probs = _bins(sigma, z.size)
    obs = np.bincount(np.minimum(np.abs(z), top), minlength=top + 1).astype(float)
    return float(stats.chisquare(obs, probs * z.size).pvalue)


def _design_power(sigma: float, n: int) -> float:
    top, p0 = _bins(sigma, n)
    crit = stats.chi2.ppf(1 - ALPHA, df=top)
    powers = []
    for factor in (0.7, 1.3):
        p1 = gaussian.discrete_gaussian_pmf(np.arange(top), sigma * factor) * np.where(
            np.arange(top) == 0, 1, 2
        )
        p1 = np.append(p1, 1 - p1.sum())
        nc = n * float(np.sum((p1 - p0) ** 2 / p0))
        powers.append(1 - stats.ncx2.cdf(crit, top, nc))
    return min(powers)


def _check_law(sigma: float, n: int, seed: int) -> None:
    assert _design_power(sigma, n) >= POWER
    rng = np.random.default_rng(seed)
    z = gaussian.discrete_gaussian(sigma, n, rng=rng)
    assert z.dtype == np.int64
    assert _pvalue(z, sigma) > ALPHA
    for factor in (0.7, 1.3):  # a sampler 30 % off in σ must be rejected
        wrong = gaussian.discrete_gaussian(sigma * factor, n, rng=rng)
        assert _pvalue(wrong, sigma) < ALPHA


@pytest.mark.parametrize("sigma", SIGMAS)
def test_discrete_gaussian_matches_its_law_and_rejects_30_percent_off(sigma: float) -> None:
    _check_law(sigma, N_FAST, seed=2020)


@pytest.mark.slow
@pytest.mark.parametrize("sigma", (*SIGMAS, 40.0))
def test_discrete_gaussian_law_large_sample(sigma: float) -> None:
    _check_law(sigma, N_SLOW, seed=7)


def test_keyed_generator_replays_the_same_noise() -> None:
    a = gaussian.discrete_gaussian(9.5, 1392, rng=keyed_rng(KEY, "device-day", 17, "all"))
    b = gaussian.discrete_gaussian(9.5, 1392, rng=keyed_rng(KEY, "device-day", 17, "all"))
    c = gaussian.discrete_gaussian(9.5, 1392, rng=keyed_rng(KEY, "device-day", 18, "all"))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_vector_sigma_broadcasts_per_location() -> None:
    sig = np.array([0.5, 50.0] * 2000)
    z = gaussian.discrete_gaussian(sig, rng=np.random.default_rng(3))
    assert z.shape == sig.shape
    # small-σ coordinates are ±2 at most with overwhelming probability; the large spread
    assert np.abs(z[::2]).max() <= 4
    assert np.abs(z[1::2]).std() > 20


def test_threshold_words_are_exact() -> None:
    """The tabulated first word is ⌊exp(−γ)·2⁶⁴⌋ (checked at 60 digits with mpmath)."""
    s2 = gaussian.stored_sigma2(3.7)
    _, rate, table, one = gaussian._table(s2)
    mpmath.mp.dps = 60
    for y in (0, 1, 2, 5, 17, 60):
        g = gaussian._gamma(y, s2, rate)
        ref = int(mpmath.floor(mpmath.exp(-mpmath.mpf(g.numerator) / g.denominator) * 2**64))
        assert not one[y]
        assert int(table[y]) == ref


def test_stored_sigma2_rounds_up_and_rho() -> None:
    for s in (0.3, 1.0, 7.77, 123.4):
        s2 = gaussian.stored_sigma2(s)
        assert s2 >= Fraction(s) ** 2
        assert s2 - Fraction(s) ** 2 < Fraction(1, gaussian.SIGMA2_DENOMINATOR)
    assert gaussian.zcdp_rho(10.0, 2.0) == pytest.approx(4 / 200)
    assert gaussian.discrete_gaussian_variance(5.0) <= 25.0 + 1e-9
    assert gaussian.discrete_gaussian_mae(30.0) == pytest.approx(30 * math.sqrt(2 / math.pi), 1e-3)
    assert gaussian.gaussian_interval(10.0, 0.95) in (19.0, 20.0)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), 1e6])
def test_invalid_sigma(bad: float) -> None:
    with pytest.raises(InvalidParameterError, match="sigma must be"):
        gaussian.discrete_gaussian(bad, 3, rng=np.random.default_rng(0))
