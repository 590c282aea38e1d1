"""Uncertainty intervals for released values, from PUBLIC mechanism parameters only.

Post-processing: the interval depends on the released value and on the public
parameters a mechanism writes to ``occ:{mech}:meta`` (ε, its split, sensitivity),
never on a true count, so showing it costs no privacy budget.

* ``laplace``: the released value is ``c + η`` with ``η ~ Lap(Δ/ε)``;
  ``P(|η| ≤ t) = 1 − exp(−t ε / Δ)``, so the two-sided interval at level ``q`` is
  ``value ± (Δ/ε) · ln(1/(1 − q))`` (``ln 10 · Δ/ε`` at 90 %). The discrete Laplace
  (two-sided geometric) sampler has the same tail to within rounding.
* ``pegasus``: the perturber adds ``Lap(1/ε_p)`` with ``ε_p = 0.8 ε`` by default
  (docs/MECHANISMS.md "PeGaSus", step 1); the interval shown is that of the perturbed
  count. Smoothing averages noise away but may add grouping bias, which no public
  parameter bounds, so the page says "perturber noise only".
* ``hpegasus``: as PeGaSus with each of the ``levels`` tree levels at ``ε/levels``
  (PeGaSus paper Algorithm 4; 3 levels — building, floor, room — unless published).
* ``ttl``: TTL-salt pseudonyms (thesis §4.2.2) have no formal guarantee and no noise
  model: no interval, the text "no formal guarantee".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from mechanisms.errors import check_positive, check_probability
from mechanisms.noise import laplace_interval
from mechanisms.registry import noise_scale_from_meta

#: Default level of the intervals shown in tooltips and served by the API.
DEFAULT_LEVEL = 0.9
#: Tree levels assumed for ``hpegasus`` when its meta does not say (building → floor → room).
HPEGASUS_DEFAULT_LEVELS = 3.0

NO_GUARANTEE = "no formal guarantee"


@dataclass(frozen=True)
class Interval:
    """An uncertainty interval (or the reason there is none)."""

    low: float | None
    high: float | None
    level: float
    note: str

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"low": self.low, "high": self.high, "level": self.level, "note": self.note}


def laplace_halfwidth(scale: float, level: float = DEFAULT_LEVEL) -> float:
    """Half-width ``t`` with ``P(|Lap(scale)| ≤ t) = level``: ``scale · ln(1/(1 − level))``."""
    return laplace_interval(
        1.0, level, sensitivity=check_positive("scale", scale), discrete=False
    )


def noise_scale(mech: str, meta: dict[str, Any]) -> tuple[float | None, str]:
    """Laplace scale of a mechanism's per-tick noise from its public parameters.

    Args:
        mech: mechanism name (``laplace``, ``pegasus``, ``hpegasus``, ``ttl``, …).
        meta: the mechanism's public parameters (``occ:{mech}:meta``).

    Returns:
        (scale or None, note). ``None`` when no formal noise model applies.
    """
    return noise_scale_from_meta({"mechanism": mech, **meta},
                                 default_levels=HPEGASUS_DEFAULT_LEVELS)


def noise_sd(mech: str, meta: dict[str, Any]) -> float:
    """Standard deviation of a released value's own noise from public parameters (0: none).

    Laplace scale b: √2·b; the device-day discrete Gaussian: σ (its variance is ≤ σ²,
    CKS 2020 Prop. 19). Post-processing (smoothing, least squares) only shrinks it, so
    this is an upper bound — used as the floor of the heatmap baseline's σ.
    """
    scale, _ = noise_scale(mech, meta)
    if scale is None:
        return 0.0
    return float(scale) if _gaussian(meta) else math.sqrt(2.0) * float(scale)


def _gaussian(meta: dict[str, Any]) -> bool:
    """Whether the release's noise is the device-day discrete Gaussian (σ = its scale)."""
    return str(meta.get("noise", "")).lower() == "discrete gaussian"


def interval(
    mech: str, meta: dict[str, Any], value: float, level: float = DEFAULT_LEVEL
) -> Interval:
    """Two-sided interval around a released value at ``level`` (see module docstring)."""
    check_probability("level", level)
    scale, note = noise_scale(mech, meta)
    if scale is None:
        return Interval(None, None, level, note)
    if _gaussian(meta):
        # device-day: normal quantile × σ of the room's own noise before least squares
        # (which only shrinks the variance; the discrete Gaussian's variance is ≤ σ²,
        # CKS 2020 Prop. 19); non-negativity can shift values near 0
        from scipy.stats import norm

        half = float(norm.ppf((1 + level) / 2)) * scale
    else:
        half = laplace_halfwidth(scale, level)
    return Interval(value - half, value + half, level, note)
