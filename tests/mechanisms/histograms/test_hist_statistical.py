"""Statistical tests: the finalizers are unbiased with the variance of SORTaki eq. (2)-(3).

Design (z-tests on the Monte-Carlo mean and variance of one bin's released average):

* ALPHA = 1e-6 false-alarm rate per two-sided check → critical |z| = 4.89.
* N_TRIALS = 4000. Mean check: the standard error is σ/√N; a 30 %-off scale of the
  estimate (bias 0.3·μ with μ = 10, σ ≤ 1.2) sits at ≥ 0.3·10/(1.2/√4000) ≈ 158 SE:
  power ≈ 1. Variance check: the sample variance has SE ≈ σ²·√((κ − 1)/N) with the
  kurtosis κ ≤ 6 of a Laplace-based average, i.e. ≤ 0.036·σ²; the critical deviation is
  4.89·0.036σ² ≈ 0.17σ², while a 30 %-off noise scale moves the variance by
  ≥ 0.51σ² (1.3² − 1) → ≥ 9.5 SE past zero, power > 1 − 1e-6.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechanisms.histograms import Partition
from mechanisms.histograms import finalizers as fin
from mechanisms.histograms.sortaki import basic_initializer

ALPHA = 1e-6
Z_CRIT = 4.891638  # two-sided N(0,1) quantile for ALPHA
N_TRIALS = 4000
KURTOSIS_BOUND = 6.0  # Laplace; averages of Laplace noise have smaller kurtosis

X = np.array([10.0, 12.0, 8.0, 10.0, 3.0, 3.0])  # bins {0,1,2,3} (mean 10), {4,5}
PARTITION = Partition.from_boundaries(np.arange(6), np.array([0, 4]))
EPS_IN, EPS_F = 0.6, 0.4


def _draws(kind: str, noise_factor: float = 1.0) -> np.ndarray:
    rng = np.random.default_rng(20261122)
    out = np.empty(N_TRIALS)
    for t in range(N_TRIALS):
        init = basic_initializer(X, EPS_IN / noise_factor, rng=rng)
        sums = fin.measure_bin_sums(X, PARTITION, EPS_F / noise_factor, rng=rng)
        if kind == "waf":
            out[t] = fin.waf_finalize(PARTITION, init, sums, EPS_IN, EPS_F)[0]
        else:
            out[t] = fin.ahp_finalize(PARTITION, sums)[0]
    return out


def _theory_var(kind: str, size: int = 4) -> float:
    if kind == "waf":  # eq. (2) at the optimum (3): 2 / (|v|·(ε_in² + |v|ε_f²))
        return 2.0 / (size * (EPS_IN**2 + size * EPS_F**2))
    return 2.0 / (size * EPS_F) ** 2


def _mean_z(draws: np.ndarray, mu: float, var: float) -> float:
    return (draws.mean() - mu) / math.sqrt(var / len(draws))


def _var_z(draws: np.ndarray, var: float) -> float:
    se = var * math.sqrt((KURTOSIS_BOUND - 1) / len(draws))
    return (draws.var(ddof=1) - var) / se


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["waf", "ahp"])
def test_finalizer_unbiased_with_predicted_variance(kind: str) -> None:
    draws = _draws(kind)
    var = _theory_var(kind)
    assert abs(_mean_z(draws, 10.0, var)) < Z_CRIT
    assert abs(_var_z(draws, var)) < Z_CRIT
    # power: a 30 %-off scale of the estimate and a 30 %-off noise scale are rejected
    assert abs(_mean_z(1.3 * draws, 10.0, var)) > Z_CRIT
    assert abs(_var_z(_draws(kind, noise_factor=1.3), var)) > Z_CRIT


@pytest.mark.slow
def test_waf_beats_ahp_variance() -> None:
    assert _draws("waf").var() < _draws("ahp").var()
