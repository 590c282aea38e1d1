"""PeGaSus-post (mechanisms.pegasus_post): noise, post-processing structure, state, replay."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from mechanisms import pegasus_post as pp
from mechanisms.errors import InvalidParameterError
from mechanisms.noise import discrete_laplace, discrete_laplace_pmf, keyed_rng

KEY = b"pegasus-post-test-key-0123456789"
ALPHA = 1e-4  # false-alarm rate of every statistical check in this file


def _run(counts: np.ndarray, cfg: pp.PegasusPostConfig, seed: int) -> np.ndarray:
    state = pp.initialize(counts.shape[1], cfg)
    out = np.empty(counts.shape)
    for t in range(counts.shape[0]):
        state, out[t] = pp.update(state, counts[t], cfg, rng=keyed_rng(KEY, "pp", seed, t))
    return out


def test_release_is_post_processing_of_one_discrete_laplace_draw_per_location() -> None:
    # The release must be smooth_group() of the noisy history c + DLap(1/ε) drawn from the
    # same generator stream (the Grouper and Smoother never see the true counts).
    cfg = pp.PegasusPostConfig(0.7)
    rng = np.random.default_rng(5)
    counts = np.repeat(rng.integers(0, 30, (4, 20)), 25, axis=0)
    state = pp.initialize(20, cfg)
    hist = np.zeros((20, cfg.max_group_len), dtype=np.int32)
    glen = np.zeros(20, dtype=np.int64)
    for t in range(counts.shape[0]):
        state, rel = pp.update(state, counts[t], cfg, rng=keyed_rng(KEY, "a", t))
        noisy = counts[t] + discrete_laplace(cfg.scale, 20, rng=keyed_rng(KEY, "a", t))
        hist = np.concatenate([hist[:, 1:], noisy[:, None].astype(np.int32)], axis=1)
        glen, want = pp.smooth_group(hist, glen, cfg)
        np.testing.assert_array_equal(rel, want)
        np.testing.assert_array_equal(state.history, hist)


def test_without_grouping_the_noise_is_discrete_laplace_at_one_over_epsilon() -> None:
    # χ² goodness of fit of release − count (grouping off, no rounding/clipping) against
    # the sampled discrete Laplace pmf at scale 1/ε, α = 1e-4; power: the pmf at a 30 %
    # larger and a 30 % smaller scale must both be rejected (n = 60 000 draws).
    eps = 0.8
    cfg = pp.PegasusPostConfig(eps, grouping=False, integer=False, nonnegative=False)
    counts = np.full((300, 200), 7)
    noise = (_run(counts, cfg, 1) - counts).ravel().astype(int)
    assert cfg.spent_epsilon == eps

    def pvalue(scale: float) -> float:
        ks = np.arange(-12, 13)
        p = discrete_laplace_pmf(ks, scale)
        p = np.append(p, 1 - p.sum())  # tails |z| > 12 pooled
        obs = np.array([(noise == k).sum() for k in ks] + [(np.abs(noise) > 12).sum()])
        return float(stats.chisquare(obs, p * noise.size).pvalue)

    assert pvalue(1 / eps) > ALPHA
    assert pvalue(1.3 / eps) < ALPHA and pvalue(0.7 / eps) < ALPHA


def test_constant_stream_is_recovered_exactly_once_groups_are_long() -> None:
    # 2 days of a constant 3 at ε = 1: after the first hour the released value is
    # within ±0.5 of 3 except after false (suspected) splits; the error rate must be far
    # below Laplace's P[Z ≠ 0] ≈ 0.46 (measured 0.061 with z_estimate = 3, 0.047 with
    # z_estimate = z; the grouping-off control is at 0.46 and must fail).
    counts = np.full((576, 50), 3)
    rel = _run(counts, pp.PegasusPostConfig(1.0), 2)[12:]
    assert np.mean(rel != 3) < 0.10
    off = _run(counts, pp.PegasusPostConfig(1.0, grouping=False), 2)[12:]
    assert np.mean(off != 3) > 0.3


def test_replay_draws_the_same_release_and_state_roundtrips() -> None:
    cfg = pp.PegasusPostConfig(0.5, max_group_len=40)
    counts = np.random.default_rng(3).integers(0, 9, (60, 11))
    a = _run(counts, cfg, 4)
    b = _run(counts, cfg, 4)
    np.testing.assert_array_equal(a, b)
    state = pp.initialize(11, cfg)
    for t in range(5):
        state, _ = pp.update(state, counts[t], cfg, rng=keyed_rng(KEY, "r", t), tick=t)
    again = pp.PegasusPostState.from_bytes(state.to_bytes())
    assert again == state and again.last_tick == 4
    with pytest.raises(InvalidParameterError, match="tick must be >"):
        pp.update(state, counts[5], cfg, rng=keyed_rng(KEY, "r", 4), tick=4)
    with pytest.raises(InvalidParameterError):
        pp.PegasusPostState.from_bytes(state.to_bytes()[:-1])


@pytest.mark.parametrize(
    "kwargs",
    [{"epsilon": 0.0}, {"epsilon": 1.0, "z": -1.0}, {"epsilon": 1.0, "max_group_len": 1},
     {"epsilon": 1.0, "z": 3.0, "z_estimate": 3.5}],
)
def test_bad_parameters_are_refused(kwargs: dict) -> None:
    with pytest.raises(InvalidParameterError):
        pp.PegasusPostConfig(**kwargs)
