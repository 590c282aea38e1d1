"""The sparse high-pass filter and Identity-HP (mechanisms/histograms/highpass.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechanisms.accounting import Accountant, Budget
from mechanisms.errors import InvalidParameterError
from mechanisms.histograms.highpass import highpass, highpass_threshold, spikes_and_shrink
from mechanisms.histograms.select import release_1d
from mechanisms.histograms.shrink import sure_shrink


def test_threshold_is_scale_times_log_n() -> None:
    assert highpass_threshold(4096, 2.0) == pytest.approx(2.0 * math.log(4096))
    with pytest.raises(InvalidParameterError):
        highpass_threshold(10, 0.0)


def test_cells_above_the_threshold_pass_unchanged_the_rest_are_zero() -> None:
    theta = highpass_threshold(5, 1.0)  # ln 5 ≈ 1.61
    y = np.array([0.5, -1.6, 1.7, -40.0, 1.60])
    np.testing.assert_array_equal(highpass(y, 1.0), [0.0, 0.0, 1.7, 0.0, 0.0])
    assert theta == pytest.approx(1.6094, abs=1e-4)


# Statistical: an empty histogram of n = 4096 cells with Laplace noise of scale 1, REPS
# draws. A cell passes with probability 1/(2n), so the passes over all draws are
# Binomial(REPS·n, 1/(2n)) ≈ Poisson(REPS/2) = Poisson(100): mean 100, sd 10. Bounds
# 60 … 140 (4 sd): false-alarm rate < 1e-4. Power: at half the threshold a cell passes
# with probability 1/(2√n), 3,200 passes expected — far outside.
REPS = 200


def _passes(factor: float) -> int:
    rng = np.random.default_rng(5)
    n = 4096
    theta = factor * highpass_threshold(n, 1.0)
    return int(sum(np.count_nonzero(rng.laplace(0.0, 1.0, n) > theta)
                   for _ in range(REPS)))


def test_half_an_empty_cell_passes_per_release() -> None:
    assert 60 <= _passes(1.0) <= 140
    assert _passes(0.5) > 140  # the test would see a threshold too low


def test_spikes_are_kept_and_the_rest_is_shrunk() -> None:
    rng = np.random.default_rng(6)
    y = rng.laplace(0.0, 1.0, 256)
    y[[3, 100, 200]] = [50.0, 60.0, 70.0]
    out = spikes_and_shrink(y, 1.0)
    kept = y > highpass_threshold(256, 1.0)
    np.testing.assert_array_equal(out[kept], y[kept])
    rest = sure_shrink(np.where(kept, 0.0, y), math.sqrt(2.0))
    np.testing.assert_allclose(out[~kept], rest[~kept])


def test_sparse_spikes_keep_little_of_identitys_error() -> None:
    """40 spikes of 2,000 records among 4,096 cells, Laplace scale 10: the spikes keep
    their noise (40·2b² = 8,000 of squared error) and the empty cells lose almost all of
    theirs (4,056·2b² ≈ 811,000 raw), so the ratio is ≈ 0.01–0.02; bound 0.1 (the raw
    error is known to 3.5 % per draw, 10 draws). Power: with the filter's threshold at
    0 (``scale`` → tiny) nothing is removed beyond what SureShrink does on spikes, and
    the bound fails."""
    rng = np.random.default_rng(7)
    x = np.zeros(4096)
    x[rng.choice(4096, 40, replace=False)] = 2000.0
    b = 10.0

    def ratio(told: float) -> float:
        r = []
        for _ in range(10):
            y = x + rng.laplace(0.0, b, x.size)
            r.append(np.sum((spikes_and_shrink(y, told) - x) ** 2) / np.sum((y - x) ** 2))
        return float(np.mean(r))

    assert ratio(b) < 0.1
    assert ratio(b / 1000) >= 0.1


def test_identity_hp_is_identity_then_the_filter_charged_once() -> None:
    x = np.random.default_rng(8).integers(0, 50, 300).astype(float)
    acct = Accountant(Budget(0.5), name="t")
    est = release_1d("Identity-HP", x, 0.5, accountant=acct, rng=np.random.default_rng(9))
    raw = release_1d("Identity", x, 0.5, rng=np.random.default_rng(9))
    np.testing.assert_allclose(est, spikes_and_shrink(raw, 1.0 / 0.5))
    assert acct.spent().epsilon == pytest.approx(0.5)
    assert len(acct.records) == 1
