"""Noise samplers, keyed generators and public error bars (mechanisms.noise)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from mechanisms import noise
from mechanisms.errors import InvalidParameterError

# Statistical design (docs/STYLE.md 12). False-alarm rate per test: ALPHA. Sample sizes are
# chosen so that a scale 30 % off is rejected with power ≥ POWER; the chi-square test
# below *computes* its power from the noncentral chi-square and asserts it.
ALPHA = 1e-4
POWER = 0.99
N_DISCRETE = 20_000  # chi-square GOF; noncentrality at 1.3×scale is > 500 for every scale used
N_CONT = 5_000  # KS: max CDF gap of Laplace(b) vs Laplace(1.3b) is ≈ 0.065 ≫ 1.95/√5000 ≈ 0.028
SCALES = (0.5, 2.0, 10.0)


def _chi2_bins(z: np.ndarray, scale: float, top: int) -> tuple[np.ndarray, np.ndarray]:
    """Observed counts and expected probabilities of |Z| in bins 0..top-1 and ≥ top."""
    a = np.minimum(np.abs(z), top)
    obs = np.bincount(a, minlength=top + 1).astype(float)
    pmf = noise.discrete_laplace_pmf(np.arange(top), scale) * np.where(np.arange(top) == 0, 1, 2)
    probs = np.append(pmf, 1 - pmf.sum())
    return obs, probs


def _top_bin(scale: float) -> int:
    # keep every expected bin count ≥ 5 (standard chi-square validity)
    return max(2, int(scale * math.log(N_DISCRETE / 10)))


def _chi2_pvalue(z: np.ndarray, scale: float) -> float:
    obs, probs = _chi2_bins(z, scale, _top_bin(scale))
    return float(stats.chisquare(obs, probs * obs.sum()).pvalue)


@pytest.mark.slow
@pytest.mark.parametrize("scale", SCALES)
def test_discrete_laplace_matches_its_pmf_and_rejects_30_percent_off(scale: float) -> None:
    rng = np.random.default_rng(1234)
    top = _top_bin(scale)
    # design check: power of the test against the 30 %-off alternatives
    _, p0 = _chi2_bins(np.zeros(1, dtype=np.int64), scale, top)
    crit = stats.chi2.ppf(1 - ALPHA, df=top)
    for factor in (0.7, 1.3):
        # the alternative's probabilities in the same bins
        p1 = noise.discrete_laplace_pmf(np.arange(top), scale * factor) * np.where(
            np.arange(top) == 0, 1, 2
        )
        p1 = np.append(p1, 1 - p1.sum())
        nc = N_DISCRETE * float(np.sum((p1 - p0) ** 2 / p0))
        assert 1 - stats.ncx2.cdf(crit, top, nc) >= POWER
    z = noise.discrete_laplace(scale, N_DISCRETE, rng=rng)
    assert z.dtype == np.int64
    assert _chi2_pvalue(z, scale) > ALPHA
    for factor in (0.7, 1.3):
        wrong = noise.discrete_laplace(scale * factor, N_DISCRETE, rng=rng)
        assert _chi2_pvalue(wrong, scale) < ALPHA


@pytest.mark.slow
@pytest.mark.parametrize("scale", SCALES)
def test_continuous_laplace_ks_and_rejects_30_percent_off(scale: float) -> None:
    rng = np.random.default_rng(99)
    x = noise.laplace(scale, N_CONT, rng=rng)
    assert stats.kstest(x, stats.laplace(scale=scale).cdf).pvalue > ALPHA
    for factor in (0.7, 1.3):
        y = noise.laplace(scale * factor, N_CONT, rng=rng)
        assert stats.kstest(y, stats.laplace(scale=scale).cdf).pvalue < ALPHA


@pytest.mark.slow
def test_mae_and_variance_formulas_match_the_sampler() -> None:
    rng = np.random.default_rng(5)
    n = 200_000
    z_alpha = stats.norm.ppf(1 - ALPHA / 2)
    for eps in (0.1, 1.0, 3.0):
        z = noise.discrete_laplace(1 / eps, n, rng=rng)
        mae = noise.laplace_mae(eps)
        sd = math.sqrt(noise.laplace_variance(eps) - mae**2)
        assert abs(np.abs(z).mean() - mae) < z_alpha * sd / math.sqrt(n)


def test_mixed_scales_and_shapes() -> None:
    rng = np.random.default_rng(0)
    z = noise.discrete_laplace(np.array([1.0, 1e-6, 3.0, 1e-6]), rng=rng)
    assert z.shape == (4,)
    assert z[1] == 0 and z[3] == 0  # rate ≈ 1e6: P[Z ≠ 0] ≈ 2e^(−10⁶)
    assert noise.discrete_laplace(2.0, (3, 5), rng=rng).shape == (3, 5)
    assert np.ndim(noise.discrete_laplace(2.0, rng=rng)) == 0


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), 2.0**21])
def test_bad_scale_raises(bad: float) -> None:
    with pytest.raises(InvalidParameterError):
        noise.discrete_laplace(bad, 3, rng=np.random.default_rng(0))


class _WordsBitGen:
    """Stand-in bit generator returning chosen 64-bit words (to hit the tie path)."""

    def __init__(self, words: list[int]) -> None:
        self.words = list(words)

    def random_raw(self, n: int) -> np.ndarray:
        out, self.words = self.words[:n], self.words[n:]
        return np.array(out, dtype=np.uint64)


class _WordsRng:
    def __init__(self, words: list[int]) -> None:
        self.bit_generator = _WordsBitGen(words)


def test_exact_comparison_resolves_ties_with_more_bits() -> None:
    num = noise.RATE_DENOMINATOR  # rate 1: thresholds are e^(−v)
    c1 = noise._threshold_word(num, 1, 0)
    c1_next = noise._threshold_word(num, 1, 1)
    assert c1 == int(noise._threshold_table(num)[-1])
    # R's first word equals ⌊e^(−1)·2⁶⁴⌋: the second word decides R < e^(−1)
    assert noise._geometric_exact(num, 1, _WordsRng([c1, c1_next - 1]))[0] == 1
    assert noise._geometric_exact(num, 1, _WordsRng([c1, c1_next + 1]))[0] == 0
    assert noise._geometric_exact(num, 1, _WordsRng([c1 - 1]))[0] == 1
    assert noise._geometric_exact(num, 1, _WordsRng([c1 + 1]))[0] == 0


def test_threshold_table_is_exact_against_high_precision() -> None:
    num = 104_857  # rate ≈ 0.1
    table = noise._threshold_table(num)
    for v in (1, 7, 100, table.size - 1):
        assert int(table[table.size - v]) == noise._threshold_word(num, v, 0)


@settings(max_examples=50, deadline=None)
@given(
    key=st.binary(min_size=16, max_size=48),
    mech=st.text(min_size=1, max_size=12),
    tick=st.integers(min_value=0, max_value=2**40),
    loc=st.one_of(st.just("all"), st.text(min_size=1, max_size=8)),
)
def test_keyed_rng_reproduces(key: bytes, mech: str, tick: int, loc: str) -> None:
    a = noise.discrete_laplace(2.0, 16, rng=noise.keyed_rng(key, mech, tick, loc))
    b = noise.discrete_laplace(2.0, 16, rng=noise.keyed_rng(key, mech, tick, loc))
    np.testing.assert_array_equal(a, b)
    x = noise.keyed_rng(key, mech, tick, loc).random(8)
    y = noise.keyed_rng(key, mech, tick + 1, loc).random(8)
    assert not np.array_equal(x, y)


def test_keyed_rng_parts_are_unambiguous_and_key_matters() -> None:
    k = b"0123456789abcdef"
    def draw(*parts: object) -> np.ndarray:
        return noise.keyed_rng(k, *parts).random(4)
    assert not np.array_equal(draw("a", "bc"), draw("ab", "c"))
    assert not np.array_equal(draw(1), draw("1"))
    assert not np.array_equal(
        noise.keyed_rng(k, "m", 1).random(4), noise.keyed_rng(k[::-1], "m", 1).random(4)
    )
    with pytest.raises(InvalidParameterError):
        noise.keyed_rng(b"short", "m", 1)
    with pytest.raises(InvalidParameterError):
        noise.keyed_rng(k, object())


def test_default_rng_is_fresh_each_time() -> None:
    assert not np.array_equal(noise.default_rng().random(4), noise.default_rng().random(4))


@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 4.0])
@pytest.mark.parametrize("conf", [0.5, 0.9, 0.95, 0.99])
def test_interval_is_the_smallest_covering_integer(eps: float, conf: float) -> None:
    k = int(noise.laplace_interval(eps, conf))
    scale = 1 / eps
    def cover(j: int) -> float:
        zs = np.arange(-j, j + 1)
        return float(noise.discrete_laplace_pmf(zs, scale).sum())
    assert cover(k) >= conf - 1e-12
    if k > 0:
        assert cover(k - 1) < conf
    cont = noise.laplace_interval(eps, conf, discrete=False)
    assert cont == pytest.approx(math.log(1 / (1 - conf)) / eps)
