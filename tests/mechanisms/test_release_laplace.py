"""Laplace release (mechanisms.laplace) and empirical privacy checks on neighbouring
inputs for Laplace and for PeGaSus' perturber + grouper."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from mechanisms import laplace as lp
from mechanisms import pegasus as pg
from mechanisms.errors import InvalidParameterError
from mechanisms.noise import laplace_mae, laplace_variance

# Empirical privacy check design. For every output event E with at least MIN_COUNT hits
# under both inputs we test H0: ln(P[E|D]/P[E|D']) ≤ ε (both directions) with the
# Poisson approximation se(ln ratio) ≈ √(1/n_D + 1/n_D'). False-alarm rate of the whole
# check: ALPHA, Bonferroni-split over the m events and 2 directions. Power: N_RUNS =
# 400 000 per input gives se ≤ √(2/MIN_COUNT) ≈ 0.045 per event, so an excess of 0.5 in
# the log ratio (a mechanism that is really 2ε-DP at ε = 0.5) is detected at z > 11;
# the tests below check that such mechanisms are flagged.
ALPHA = 1e-3
MIN_COUNT = 1_000
N_RUNS = 400_000


def privacy_violations(codes_a: np.ndarray, codes_b: np.ndarray, epsilon: float) -> int:
    """Number of events whose estimated log probability ratio exceeds ε significantly."""
    size = int(max(codes_a.max(), codes_b.max())) + 1
    ca = np.bincount(codes_a, minlength=size).astype(float)
    cb = np.bincount(codes_b, minlength=size).astype(float)
    ok = (ca >= MIN_COUNT) & (cb >= MIN_COUNT)
    m = int(ok.sum())
    assert m >= 5, "too few well-populated events to check"
    z = stats.norm.ppf(1 - ALPHA / (2 * m))
    lr = np.log(ca[ok] / cb[ok]) + math.log(codes_b.size / codes_a.size)
    se = np.sqrt(1 / ca[ok] + 1 / cb[ok])
    return int(np.sum(np.abs(lr) > epsilon + z * se))


def _laplace_codes(count: int, epsilon: float, seed: int) -> np.ndarray:
    rel = lp.laplace_release(np.full(N_RUNS, count), epsilon, rng=np.random.default_rng(seed))
    return (np.clip(rel, -40, 60) + 40).astype(np.int64)


@pytest.mark.slow
def test_laplace_release_ratio_within_e_epsilon_on_neighbours() -> None:
    eps = 0.5
    assert privacy_violations(_laplace_codes(5, eps, 1), _laplace_codes(6, eps, 2), eps) == 0
    # power: a release at 2ε, checked against the claim ε, is flagged
    assert privacy_violations(_laplace_codes(5, 2 * eps, 3), _laplace_codes(6, 2 * eps, 4),
                              eps) > 0


def _pegasus_codes(stream: tuple[int, int, int], cfg: pg.PegasusConfig, seed: int) -> np.ndarray:
    """Output event of perturber + grouper over 3 ticks, one run per 'location'.

    Event = (grouping decision after tick 1, after tick 2, c̃_1 clipped to [−3, 13]).
    c̃_1 is recovered from the released stream (post-processing of the outputs).
    """
    rng = np.random.default_rng(seed)
    state = pg.initialize(N_RUNS, cfg)
    rel = []
    decisions = []
    for t, c in enumerate(stream):
        state, r = pg.update(state, np.full(N_RUNS, c), cfg, rng=rng)
        rel.append(r)
        if t > 0:
            decisions.append(np.where(state.group_len > 1, 0, np.where(state.group_open, 1, 2)))
    joined1 = decisions[0] == 0
    c1 = np.where(joined1, 2 * rel[1] - rel[0], rel[1])
    c1 = np.clip(np.rint(c1), -3, 13).astype(np.int64) + 3
    return (decisions[0] * 3 + decisions[1]) * 17 + c1


@pytest.mark.slow
def test_pegasus_perturber_and_grouper_ratio_within_e_epsilon_on_neighbours() -> None:
    cfg = pg.PegasusConfig(1.0, smoother="average")
    a = _pegasus_codes((5, 5, 5), cfg, 11)
    b = _pegasus_codes((5, 6, 5), cfg, 12)
    assert privacy_violations(a, b, cfg.spent_epsilon) == 0
    # power: the same outputs are flagged against a claim below the perturber's ε_p = 0.8
    assert privacy_violations(a, b, 0.3) > 0


def test_laplace_release_is_integer_vectorised_and_reproducible() -> None:
    c = np.arange(1000) % 17
    r1 = lp.laplace_release(c, 1.0, rng=np.random.default_rng(4))
    r2 = lp.laplace_release(c, 1.0, rng=np.random.default_rng(4))
    assert r1.dtype == np.int64 and r1.shape == c.shape
    np.testing.assert_array_equal(r1, r2)


@pytest.mark.slow
def test_laplace_release_mae_is_the_exact_discrete_mae() -> None:
    n = 200_000
    z_alpha = stats.norm.ppf(1 - 1e-4 / 2)  # α = 1e-4
    for eps in (0.2, 1.0):
        err = np.abs(lp.laplace_release(np.full(n, 10), eps, rng=np.random.default_rng(7)) - 10)
        mae = laplace_mae(eps)
        sd = math.sqrt(laplace_variance(eps) - mae**2)
        assert abs(err.mean() - mae) < z_alpha * sd / math.sqrt(n)


def test_state_machine_form() -> None:
    cfg = lp.LaplaceConfig(0.5)
    st = lp.initialize(4, cfg)
    st, rel = lp.update(st, [1, 2, 3, 4], cfg, rng=np.random.default_rng(0))
    assert st.ticks == 1 and rel.shape == (4,)
    assert cfg.interval(0.9) > 0 and cfg.mae == pytest.approx(laplace_mae(0.5))
    with pytest.raises(InvalidParameterError):
        lp.update(st, [1, 2], cfg)


@pytest.mark.parametrize("bad", [[-1, 2], [1.5], [[1, 2]], ["a"], [True, False]])
def test_bad_counts_raise(bad: list) -> None:
    with pytest.raises(InvalidParameterError):
        lp.laplace_release(bad, 1.0, rng=np.random.default_rng(0))


@pytest.mark.parametrize("eps", [0, -1, float("nan"), "x"])
def test_bad_epsilon_raises(eps: object) -> None:
    with pytest.raises(InvalidParameterError):
        lp.laplace_release([1, 2], eps, rng=np.random.default_rng(0))  # type: ignore[arg-type]
