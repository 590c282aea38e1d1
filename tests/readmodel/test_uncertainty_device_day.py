"""Error bars of the device-day heatmap: normal quantile × the published σ (not Laplace)."""

from __future__ import annotations

import pytest
from scipy.stats import norm

from mechanisms.registry import ReleaseParams, build
from occupancy.buildings import load_site
from readmodel.uncertainty import interval


def test_device_day_interval_uses_the_gaussian_quantile_of_the_room_sigma() -> None:
    site = load_site("dbh")
    mech = build("device-day", ReleaseParams(paths=tuple(tuple(p) for p in site.hierarchy())))
    meta = mech.meta()
    iv = interval("device-day", meta, 50.0, level=0.9)
    half = norm.ppf(0.95) * meta["noise_scale"]
    assert iv.high - 50.0 == pytest.approx(half) and 50.0 - iv.low == pytest.approx(half)
    # the published values are 15-minute means: σ_room / √3
    assert meta["noise_scale"] == pytest.approx(mech.sigmas[-1] / 3 ** 0.5)
