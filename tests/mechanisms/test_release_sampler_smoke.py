"""Fast (non-slow) smoke versions of the sampler scale checks (issue 14, item 8).

The slow tier (tests/mechanisms/test_release_noise.py, test_release_laplace.py) checks
the whole distribution with 20 000–200 000 draws; this tier checks the *scale* of every
sampler with N draws through the mean absolute noise, in milliseconds.

Design (STYLE.md 12): statistic m = mean |Z| over N draws, compared with the exact
E|Z| of the claimed scale (``laplace_mae``); reject when |m − E|Z|| > z_{1−α/2}·sd/√N
(normal approximation, N ≥ 2000). False-alarm rate per check: ALPHA. Power against a
scale 30 % off (both directions) is *computed* from the alternative's own mean and sd
and asserted ≥ POWER before the check runs, then the wrong-scale sampler is shown to be
rejected.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from mechanisms import laplace as lp
from mechanisms import noise

ALPHA = 1e-4
POWER = 0.99
N = 4_000
EPSILONS = (0.1, 0.5, 2.0)  # scales 10, 2, 0.5


def _moments(eps: float, discrete: bool) -> tuple[float, float]:
    mae = noise.laplace_mae(eps, discrete=discrete)
    return mae, math.sqrt(noise.laplace_variance(eps, discrete=discrete) - mae**2)


def _rejects(sample: np.ndarray, eps: float, discrete: bool) -> bool:
    mae, sd = _moments(eps, discrete)
    z = stats.norm.ppf(1 - ALPHA / 2)
    return bool(abs(np.abs(sample).mean() - mae) > z * sd / math.sqrt(len(sample)))


def _power(eps: float, factor: float, discrete: bool) -> float:
    """P[reject] when the real scale is ``factor`` × the claimed one (normal approx.)."""
    mae, sd = _moments(eps, discrete)
    mae1, sd1 = _moments(eps / factor, discrete)
    c = stats.norm.ppf(1 - ALPHA / 2) * sd / math.sqrt(N)
    se1 = sd1 / math.sqrt(N)
    return float(stats.norm.sf((mae + c - mae1) / se1) + stats.norm.cdf((mae - c - mae1) / se1))


SAMPLERS = {
    "discrete_laplace": (lambda eps, rng: noise.discrete_laplace(1 / eps, N, rng=rng), True),
    "laplace": (lambda eps, rng: noise.laplace(1 / eps, N, rng=rng), False),
    "laplace_release": (lambda eps, rng: lp.laplace_release(np.full(N, 7), eps, rng=rng) - 7,
                        True),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
@pytest.mark.parametrize("eps", EPSILONS)
def test_sampler_scale_smoke(name: str, eps: float) -> None:
    draw, discrete = SAMPLERS[name]
    for factor in (0.7, 1.3):
        assert _power(eps, factor, discrete) >= POWER
    rng = np.random.default_rng(int(eps * 1000) + len(name))
    assert not _rejects(draw(eps, rng), eps, discrete)
    for factor in (0.7, 1.3):  # the same sampler at a 30 %-off scale is caught
        assert _rejects(draw(eps / factor, rng), eps, discrete)
