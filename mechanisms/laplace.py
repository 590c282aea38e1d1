"""Laplace release of a tick's occupancy counts, vectorised over locations.

Mechanism (Dwork, McSherry, Nissim & Smith 2006; discrete form: Ghosh, Roughgarden &
Sundararajan 2009): ``released = counts + Z`` with Z iid discrete Laplace of scale
Δ/ε (:func:`mechanisms.noise.discrete_laplace`, exact, integer).

Privacy argument: a device is counted in at most one location per tick (the presence
model), so adding or removing one (device, tick) event changes one count by 1
(Δ = 1, L1 sensitivity of the whole vector). The discrete Laplace mechanism with
P[Z = z] ∝ e^(−ε|z|/Δ) is ε-DP; the locations are disjoint so the vector is ε-DP by
parallel composition. Each tick reads only that tick's counts, so the stream is
ε-DP at the **event level (device, tick)**; a device present for k ticks of a day has
spent k·ε (see :mod:`mechanisms.accounting`).

Output: raw noisy integers (may be negative). Clipping at 0 or rounding for display
is post-processing (:func:`research.queries.clip_nonnegative`) and costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.noise import discrete_laplace, laplace_interval, laplace_mae

__all__ = [
    "LaplaceConfig",
    "LaplaceState",
    "as_counts",
    "initialize",
    "laplace_release",
    "update",
]


def as_counts(counts: np.ndarray | list[int], name: str = "counts") -> np.ndarray:
    """Validate a 1-D vector of non-negative integer counts; return it as int64."""
    arr = np.asarray(counts)
    if arr.ndim != 1:
        raise InvalidParameterError(f"{name} must be a 1-D array, not shape {arr.shape!r}")
    if (
        arr.size
        and not np.issubdtype(arr.dtype, np.integer)
        and (not np.issubdtype(arr.dtype, np.number) or np.any(arr != np.round(arr)))
    ):
        raise InvalidParameterError(f"{name} must hold integers, not {arr.dtype} values")
    out = arr.astype(np.int64)
    if out.size and out.min() < 0:
        raise InvalidParameterError(f"{name} must be non-negative, not min {int(out.min())}")
    return out


def laplace_release(
    counts: np.ndarray | list[int],
    epsilon: float,
    *,
    sensitivity: int = 1,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Release one tick's counts with discrete Laplace noise of scale Δ/ε (spends ε).

    Args:
        counts: true counts, shape (n_locations,), non-negative integers.
        epsilon: privacy budget of this release (event-level, per tick).
        sensitivity: Δ, how much one (device, tick) event changes the vector in L1.
        rng: generator, e.g. ``keyed_rng(secret, "laplace", tick, "all")``; None →
            the project's CSPRNG-seeded generator.

    Returns:
        int64 array, shape (n_locations,).
    """
    c = as_counts(counts)
    eps = check_positive("epsilon", epsilon)
    sens = check_positive("sensitivity", sensitivity)
    return c + discrete_laplace(sens / eps, c.size, rng=rng)


@dataclass(frozen=True)
class LaplaceConfig:
    """Parameters of the streaming Laplace release.

    Attributes:
        epsilon: ε spent per tick (event-level).
    """

    epsilon: float

    def __post_init__(self) -> None:
        check_positive("epsilon", self.epsilon)

    @property
    def mae(self) -> float:
        """Expected absolute error per released count (exact for the discrete sampler)."""
        return laplace_mae(self.epsilon)

    def interval(self, confidence: float = 0.95) -> float:
        """Public error-bar half-width at ``confidence`` (no budget)."""
        return laplace_interval(self.epsilon, confidence)


@dataclass(frozen=True)
class LaplaceState:
    """Streaming Laplace state: only the number of locations and ticks processed.

    The Laplace release is memoryless; the state exists so that every mechanism has
    the same ``initialize`` / ``update`` shape (docs/STYLE.md, habit 3).
    """

    n_locations: int
    ticks: int = 0


def initialize(n_locations: int, config: LaplaceConfig) -> LaplaceState:
    """Initial state for ``n_locations`` locations."""
    if int(n_locations) < 0:
        raise InvalidParameterError(f"n_locations must be ≥ 0, not {n_locations!r}")
    del config
    return LaplaceState(n_locations=int(n_locations))


def update(
    state: LaplaceState,
    counts: np.ndarray | list[int],
    config: LaplaceConfig,
    *,
    rng: np.random.Generator | None = None,
) -> tuple[LaplaceState, np.ndarray]:
    """Release one tick (spends ``config.epsilon``): ``(new_state, released)``."""
    c = as_counts(counts)
    if c.size != state.n_locations:
        raise InvalidParameterError(
            f"counts must have {state.n_locations} entries, not {c.size}"
        )
    released = laplace_release(c, config.epsilon, rng=rng)
    return LaplaceState(n_locations=state.n_locations, ticks=state.ticks + 1), released
