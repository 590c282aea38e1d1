"""The only place in ``mechanisms.histograms`` that draws privacy noise.

Every function here SPENDS privacy budget (it is called with the ε it spends);
everything else in the package is deterministic post-processing of its outputs.

Randomness: callers pass ``rng: np.random.Generator | None``; ``None`` means the
project's CSPRNG-seeded generator from :mod:`mechanisms.noise` (engineer B's module);
until that module exists, a generator seeded from :func:`secrets.randbits` (OS CSPRNG).

Floating-point caveat (ALGORITHMS.md "Noise and accounting"): ``Generator.laplace``
is a floating-point sampler, open to precision attacks (Mironov 2012). The releases
of this package are analysis outputs; the release CLI rounds published values, which
does not by itself remove that caveat (documented in the release metadata).
"""

from __future__ import annotations

import secrets

import numpy as np

from mechanisms.errors import check_positive

__all__ = ["resolve_rng", "laplace_noise", "noisy_values"]


def resolve_rng(rng: np.random.Generator | None) -> np.random.Generator:
    """Return ``rng`` or, when ``None``, the project's CSPRNG-seeded generator."""
    if rng is not None:
        return rng
    try:  # engineer B's module; fall back until it lands
        from mechanisms.noise import default_rng as project_default_rng
    except ImportError:
        return np.random.Generator(np.random.PCG64(secrets.randbits(128)))
    return project_default_rng()


def laplace_noise(
    scale: float | np.ndarray,
    size: int | tuple[int, ...],
    *,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """NOISE DRAWING: i.i.d. Laplace(0, ``scale``) samples of shape ``size``."""
    gen = resolve_rng(rng)
    if np.isscalar(scale):
        check_positive("scale", float(scale))
    return gen.laplace(0.0, scale, size=size)


def noisy_values(
    values: np.ndarray, epsilon: float, *, sensitivity: float = 1.0,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """NOISE DRAWING: Laplace mechanism (SORTaki Def. II.4), ``values + Lap(Δ/ε)``.

    Spends ``epsilon`` on the vector ``values`` whose L1 sensitivity is ``sensitivity``
    (1 for a histogram of disjoint cells when one record changes one cell by one).
    """
    epsilon = check_positive("epsilon", epsilon)
    sensitivity = check_positive("sensitivity", sensitivity)
    v = np.asarray(values, dtype=np.float64)
    return v + laplace_noise(sensitivity / epsilon, v.shape, rng=rng)
