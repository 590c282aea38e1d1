"""The only place in ``mechanisms.histograms`` that draws privacy noise.

Every function here SPENDS privacy budget (it is called with the ε it spends);
everything else in the package is deterministic post-processing of its outputs.

Randomness: callers pass ``rng: np.random.Generator | None``; ``None`` means the
project's CSPRNG-seeded generator (:func:`mechanisms.noise.resolve_rng`).

Samplers (docs/MECHANISMS.md "Noise and accounting"): with ``discrete=True`` the noise is
the exact discrete Laplace of :func:`mechanisms.noise.discrete_laplace` — the sampler
for releases that leave the system: measurements of *integer* counts (cells, bin
sums, tree nodes) plus discrete Laplace(Δ/ε) are ε-DP with no floating-point
precision attack (Mironov 2012), and everything computed from them afterwards (WAF,
AHP averages, least squares) is post-processing. ``discrete=False`` (continuous
``Generator.laplace``) is for experiments and benchmarks, and for DAWA's interval
costs, which are real-valued and never released (only the argmin partition is).
"""

from __future__ import annotations

import numpy as np

from mechanisms.errors import check_positive
from mechanisms.noise import discrete_laplace, resolve_rng

__all__ = ["resolve_rng", "child_stream", "laplace_noise", "noisy_values"]


def laplace_noise(
    scale: float | np.ndarray,
    size: int | tuple[int, ...],
    *,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
) -> np.ndarray:
    """NOISE DRAWING: i.i.d. Laplace(0, ``scale``) samples of shape ``size``.

    ``discrete=True`` draws the exact discrete Laplace (integer-valued) instead.
    """
    gen = resolve_rng(rng)
    if np.isscalar(scale):
        check_positive("scale", float(scale))
    if discrete:
        return np.asarray(discrete_laplace(scale, size, rng=gen), dtype=np.float64)
    return gen.laplace(0.0, scale, size=size)


def noisy_values(
    values: np.ndarray,
    epsilon: float,
    *,
    sensitivity: float = 1.0,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
) -> np.ndarray:
    """NOISE DRAWING: Laplace mechanism (SORTaki Def. II.4), ``values + Lap(Δ/ε)``.

    Spends ``epsilon`` on the vector ``values`` whose L1 sensitivity is ``sensitivity``
    (1 for a histogram of disjoint cells when one record changes one cell by one).
    """
    epsilon = check_positive("epsilon", epsilon)
    sensitivity = check_positive("sensitivity", sensitivity)
    v = np.asarray(values, dtype=np.float64)
    return v + laplace_noise(sensitivity / epsilon, v.shape, rng=rng, discrete=discrete)


def child_stream(gen: np.random.Generator) -> np.random.Generator:
    """An independent child stream of ``gen`` (``gen.spawn``), e.g. for selection features.

    The chosen algorithm then draws from ``gen`` exactly as it would alone, so a
    benchmark can compare it with the same algorithm on common random numbers. A
    generator without a seed sequence (the CSPRNG) is used directly.
    """
    try:
        return gen.spawn(1)[0]
    except (TypeError, ValueError, AttributeError):
        return gen
