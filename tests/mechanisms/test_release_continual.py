"""Binary-tree continual counter (mechanisms.continual)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from mechanisms import continual as cc
from mechanisms.gaussian import discrete_gaussian_variance

# The prefix error at tick t is a sum of popcount(t) independent N_ℤ(0, σ²) block noises.
# Over N series the sample variance v̂ satisfies (N−1)v̂/v ~ χ²(N−1) approximately; the
# two-sided test at ALPHA per tick (Bonferroni over the 12 ticks checked) rejects a
# variance 30 % off with power > 0.999 at N = 20,000 (the χ² relative SE is √(2/N) ≈ 1 %).
ALPHA = 1e-4
N = 20_000
SIGMA = 3.0


def test_prefix_errors_have_popcount_variance_and_zero_mean() -> None:
    rng = np.random.default_rng(5)
    st = cc.initialize(N, 64, SIGMA)
    x_rng = np.random.default_rng(6)
    total = np.zeros(N)
    v = discrete_gaussian_variance(SIGMA)
    level = ALPHA / 12
    for t in range(1, 13):
        x = x_rng.integers(0, 4, N)
        total += x
        st, est = cc.update(st, x, rng=rng)
        err = est - total
        k = bin(t).count("1")
        stat = (N - 1) * err.var(ddof=1) / (k * v)
        assert stats.chi2.ppf(level / 2, N - 1) < stat < stats.chi2.ppf(1 - level / 2, N - 1)
        # a variance 30 % off would be rejected: its statistic sits ~ 0.3·N/√(2N) SEs away
        assert not (stats.chi2.ppf(level / 2, N - 1) < stat / 1.3 < stats.chi2.ppf(
            1 - level / 2, N - 1))
        assert abs(err.mean()) < 5 * np.sqrt(k * v / N)


def test_tree_sensitivity_one_shot_vs_presence() -> None:
    one = np.zeros(288)
    one[100] = 1
    assert cc.tree_l2sq(one) == cc.levels_for(512)  # one per level of the padded tree
    present = np.ones(288)
    assert cc.tree_l2sq(present) > 500 * 288  # occupancy: the tree is far worse than flat
    st = cc.initialize(3, 288, 2.0)
    assert st.rho_one_shot == pytest.approx(9 / 8)
    st, _ = cc.update(st, np.ones(3, int), rng=np.random.default_rng(0))
    with pytest.raises(Exception, match="x must have shape"):
        cc.update(st, np.ones(2, int))
