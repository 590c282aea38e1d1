"""PrivRelax / NoiseDown: distribution tests (docs/MECHANISMS.md, "Gradual release")."""

import numpy as np
import pytest
from scipy import stats

from mechanisms.errors import InvalidParameterError
from mechanisms.mide.privrelax import privrelax

# False-alarm rate of every statistical check below.
ALPHA = 1e-6
# Sample size. KS critical value at ALPHA is sqrt(-ln(ALPHA/2)/2)/sqrt(N) = 2.69/sqrt(N)
# = 0.0134 for N = 40_000. A Laplace scale 30 % off moves the CDF by up to 0.048
# (max_x ½|e^(-x/1.3) - e^(-x)|), 3.6x the critical value, so power is ~1. For the
# zero-probability check (Binomial(N, p0)) detecting 1.3·p0 at ALPHA with power 0.99 needs
# N ≥ (4.9 + 2.33)²/(0.09·p0) ≈ 580/p0, so the power check runs where p0 ≥ 580/N.
N = 40_000

CASES = [  # (ε₁, ε₂, sensitivity)
    (0.5, 2.0, 1.0),
    (1.0, 1.1, 1.0),  # tiny step: mostly "keep"
    (0.05, 1.0, 2.5),  # big ratio, sensitivity ≠ 1
]


def _draw(e1, e2, sens, seed):
    rng = np.random.default_rng(seed)
    eta = rng.laplace(0.0, sens / e1, N)
    return eta, privrelax(eta, e1, e2, sensitivity=sens, rng=rng)


@pytest.mark.slow
@pytest.mark.parametrize(("e1", "e2", "sens"), CASES)
def test_relaxed_noise_is_laplace_at_new_epsilon_with_power(e1, e2, sens):
    _, out = _draw(e1, e2, sens, 1)
    scale = sens / e2
    assert stats.kstest(out, stats.laplace(scale=scale).cdf).pvalue > ALPHA
    for wrong in (1.3 * scale, scale / 1.3):  # power: a scale 30 % off is rejected
        assert stats.kstest(out, stats.laplace(scale=wrong).cdf).pvalue < ALPHA


@pytest.mark.slow
@pytest.mark.parametrize(("e1", "e2", "sens"), CASES)
def test_difference_is_zero_w_p_ratio_squared_else_laplace_at_old_epsilon(e1, e2, sens):
    eta, out = _draw(e1, e2, sens, 2)
    diff = eta - out
    zero = diff == 0
    p0 = (e1 / e2) ** 2
    assert stats.binomtest(int(zero.sum()), N, p0).pvalue > ALPHA
    if p0 >= 580 / N:
        assert stats.binomtest(int(zero.sum()), N, min(1.0, 1.3 * p0)).pvalue < ALPHA
    nz = diff[~zero]
    scale = sens / e1
    assert stats.kstest(nz, stats.laplace(scale=scale).cdf).pvalue > ALPHA
    assert stats.kstest(nz, stats.laplace(scale=1.3 * scale).cdf).pvalue < ALPHA


@pytest.mark.slow
@pytest.mark.parametrize(("e1", "e2", "sens"), CASES)
def test_difference_is_independent_of_new_noise(e1, e2, sens):
    eta, out = _draw(e1, e2, sens, 3)
    diff = eta - out
    # split on |η′| (a biased / sign-blind sampler makes the difference depend on η′)
    # and on the sign of η′
    for split in (np.abs(out) > np.median(np.abs(out)), out > 0):
        a, b = diff[split], diff[~split]
        table = [[(a == 0).sum(), (a != 0).sum()], [(b == 0).sum(), (b != 0).sum()]]
        assert stats.chi2_contingency(table).pvalue > ALPHA
        assert stats.ks_2samp(a[a != 0], b[b != 0]).pvalue > ALPHA


def test_relaxed_noise_is_reproducible_and_keeps_shape():
    eta = np.random.default_rng(0).laplace(0, 2, (3, 4))
    a = privrelax(eta, 0.5, 1.0, rng=np.random.default_rng(7))
    b = privrelax(eta, 0.5, 1.0, rng=np.random.default_rng(7))
    assert a.shape == (3, 4)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(privrelax(eta, 0.5, 0.5), eta)


def test_relaxing_to_a_smaller_epsilon_is_refused():
    with pytest.raises(InvalidParameterError, match="epsilon_to"):
        privrelax(np.zeros(3), 1.0, 0.5)
    with pytest.raises(InvalidParameterError, match="sensitivity"):
        privrelax(np.zeros(3), 1.0, 2.0, sensitivity=0)
