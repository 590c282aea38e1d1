"""Intervals from public parameters (no services)."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from mechanisms.errors import InvalidParameterError
from readmodel.uncertainty import NO_GUARANTEE, interval, laplace_halfwidth, noise_scale


@pytest.mark.parametrize("level", [0.5, 0.9, 0.99])
@pytest.mark.parametrize("scale", [0.5, 2.0, 10.0])
def test_laplace_halfwidth_has_the_stated_coverage(scale: float, level: float) -> None:
    t = laplace_halfwidth(scale, level)
    coverage = stats.laplace(scale=scale).cdf(t) - stats.laplace(scale=scale).cdf(-t)
    assert coverage == pytest.approx(level, abs=1e-12)


def test_mechanism_scales_from_public_meta() -> None:
    assert noise_scale("laplace", {"epsilon": 0.5}) == (2.0, "Laplace noise")
    assert noise_scale("laplace", {"epsilon": 0.5, "sensitivity": 2})[0] == 4.0
    # PeGaSus: perturber at ε_p = share · ε
    assert noise_scale("pegasus", {"epsilon": 1.0, "perturb_share": 0.8})[0] == pytest.approx(1.25)
    assert noise_scale("pegasus", {"epsilon": 1.0, "epsilon_p": 0.5})[0] == pytest.approx(2.0)
    # hierarchical: ε split over the levels
    assert noise_scale("hpegasus", {"epsilon": 1.0, "levels": 2})[0] == pytest.approx(2.5)
    assert noise_scale("hpegasus", {"epsilon": 1.0})[0] == pytest.approx(3.75)
    # TTL: no noise model, no interval
    for meta in ({"mechanism": "ttl", "epsilon": 0}, {"guarantee": "no formal guarantee"}):
        assert noise_scale("ttl", meta) == (None, NO_GUARANTEE)
    assert noise_scale("laplace", {})[0] is None  # ε not published: no interval


def test_interval_is_centred_on_the_release() -> None:
    iv = interval("laplace", {"epsilon": 0.25}, 40.0)
    half = 4 * math.log(10)
    assert (iv.low, iv.high, iv.level) == (pytest.approx(40 - half), pytest.approx(40 + half),
                                           0.9)
    none = interval("ttl", {"mechanism": "ttl"}, 12.0).as_dict()
    assert none["low"] is None and none["note"] == NO_GUARANTEE
    with pytest.raises(InvalidParameterError):
        interval("laplace", {"epsilon": 1}, 1.0, level=1.5)
