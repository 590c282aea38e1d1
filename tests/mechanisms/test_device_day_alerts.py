"""Device-day fire-code alerts (Gaussian threshold test): β-FNR and the α width hold.

Statistical design (one-sided binomial tests, ALPHA_TEST false-alarm rate each):
rooms exactly at their threshold (the hardest over-capacity case) are missed with
probability ≤ β; the test rejects when the miss count exceeds the binomial (n, β)
critical value. Power: a sampler whose σ is 30 % larger than the σ the shift assumes
misses with P[Z < −z·σ/1.3] = Φ(−1.645/1.3) ≈ 0.103 at β = 0.05, which the same critical
value rejects with probability ≥ POWER (checked below, and run once as a mutation).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from mechanisms.device_day import DeviceDayConfig, alert_alpha, monitorable, threshold_alerts
from mechanisms.errors import InvalidParameterError
from mechanisms.noise import keyed_rng

ALPHA_TEST = 1e-3  # false-alarm rate of each binomial test
POWER = 0.99
BETA = 0.05
N = 4000  # rooms per test (one vectorised draw)
KEY = b"device-day-alert-test-key"
SIGMA = DeviceDayConfig().alert_sigma  # 19.6: the default design's σ


def _crit(n: int, p: float) -> int:
    return int(stats.binom.isf(ALPHA_TEST, n, p))


def test_rooms_at_capacity_are_missed_at_most_beta() -> None:
    thr = np.full(N, 200.0)
    res = threshold_alerts(thr.astype(int), thr, SIGMA, BETA, rng=keyed_rng(KEY, "fnr"))
    misses = int(np.sum(~res.positive))
    crit = _crit(N, BETA)
    miss_broken = stats.norm.cdf(-stats.norm.isf(BETA) / 1.3)
    assert stats.binom.cdf(crit, N, miss_broken) <= 1 - POWER  # the design's power
    assert misses <= crit, f"{misses}/{N} at-capacity rooms missed (critical {crit})"
    # the mutation: noise 30 % larger than the shift assumes is caught
    broken = threshold_alerts(thr.astype(int), thr - 0, SIGMA * 1.3, BETA,
                              rng=keyed_rng(KEY, "fnr-broken"))
    shifted_back = broken.noisy >= thr - res.shift  # the shift of σ, noise of 1.3σ
    assert int(np.sum(~shifted_back)) > crit


def test_rooms_alpha_below_capacity_fire_at_most_beta() -> None:
    alpha = alert_alpha(SIGMA, BETA)
    assert alpha == pytest.approx(2 * stats.norm.isf(BETA) * SIGMA)
    thr = np.full(N, 300.0)
    c = np.floor(thr - alpha).astype(int)
    res = threshold_alerts(c, thr, SIGMA, BETA, rng=keyed_rng(KEY, "fpr"))
    assert res.alpha == pytest.approx(alpha)
    fires = int(np.sum(res.positive))
    assert fires <= _crit(N, BETA), f"{fires}/{N} rooms {alpha:.0f} below capacity fired"
    # and half-way (α/2 below) the alert fires about half the time: α is not vacuous
    mid = threshold_alerts(np.round(thr - alpha / 2).astype(int), thr, SIGMA, BETA,
                           rng=keyed_rng(KEY, "mid"))
    assert 0.4 * N < int(np.sum(mid.positive)) < 0.6 * N


def test_replay_draws_the_same_decisions_and_bad_beta_is_refused() -> None:
    c, thr = np.arange(50), np.full(50, 30.0)
    a = threshold_alerts(c, thr, SIGMA, BETA, rng=keyed_rng(KEY, "alerts", 3600, "all"))
    b = threshold_alerts(c, thr, SIGMA, BETA, rng=keyed_rng(KEY, "alerts", 3600, "all"))
    assert np.array_equal(a.noisy, b.noisy) and np.array_equal(a.positive, b.positive)
    with pytest.raises(InvalidParameterError, match="beta"):
        threshold_alerts(c, thr, SIGMA, 0.7)


def test_only_rooms_whose_threshold_reaches_alpha_are_watched() -> None:
    """Empty watched rooms fire at most β; the smallest watched room sits at T = α.

    The rule (T ≥ α) is what makes the β false-alarm bound cover an EMPTY room: a
    watched room is tested here at c = 0 with the binomial test above; a room just below
    α (the mutation ``T ≥ α/2``) fires far more often than β and is rejected.
    """
    alpha = alert_alpha(SIGMA, BETA)
    thr = np.array([alpha - 1, alpha, alpha + 1, 22.0, 500.0])
    assert monitorable(thr, SIGMA, BETA).tolist() == [False, True, True, False, True]
    smallest = np.full(N, np.ceil(alpha))  # the smallest watched threshold, room empty
    res = threshold_alerts(np.zeros(N, dtype=int), smallest, SIGMA, BETA,
                           rng=keyed_rng(KEY, "empty-watched"))
    assert int(np.sum(res.positive)) <= _crit(N, BETA)
    half = np.full(N, np.ceil(alpha / 2))  # what a rule of T ≥ α/2 would also watch
    wrong = threshold_alerts(np.zeros(N, dtype=int), half, SIGMA, BETA,
                             rng=keyed_rng(KEY, "empty-half"))
    assert int(np.sum(wrong.positive)) > _crit(N, BETA)
