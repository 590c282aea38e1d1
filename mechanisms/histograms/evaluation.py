"""DPBench-style evaluation (Hay et al. 2016; SORTaki §VI), pure numpy.

* Data generator: :func:`resample` draws ``scale`` records from a shape (the
  normalised histogram) — same domain size and shape, any scale (DPBench's generator);
  :func:`coarsen` changes the domain size by merging adjacent cells.
* Workloads (range queries ``[lo, hi)``): identity, prefix, random small ranges
  (sizes 1..10) and random large ranges (sizes 100..1000 step 100), after SORTaki §VI;
  2-D random rectangles for the kd-tree.
* Error: DPBench's scaled average per-query L2 error ``‖Wx − Wx̂‖₂ / (q·s)``,
  ``s = ‖x‖₁`` (SORTaki Def. VI.1).
* Trials: :func:`seeded_rngs` gives independent, reproducible generators per trial.

The random workload and data generators take an ``rng`` (they are not privacy noise).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mechanisms.errors import InvalidParameterError, check_positive

__all__ = [
    "Workload",
    "resample",
    "coarsen",
    "identity_workload",
    "prefix_workload",
    "random_range_workload",
    "make_workload",
    "answer",
    "scaled_error",
    "random_boxes",
    "answer_boxes",
    "scaled_error_boxes",
    "seeded_rngs",
    "WORKLOADS",
]

WORKLOADS = ("identity", "prefix", "small", "large")
SMALL_SIZES = tuple(range(1, 11))
LARGE_SIZES = tuple(range(100, 1001, 100))


@dataclass(frozen=True, eq=False)
class Workload:
    """Range queries ``[lo[i], hi[i])`` over a 1-D domain of size ``n``."""

    name: str
    n: int
    lo: np.ndarray
    hi: np.ndarray

    @property
    def size(self) -> int:
        """Number of queries q."""
        return int(len(self.lo))


def resample(shape: np.ndarray, scale: int, *, rng: np.random.Generator) -> np.ndarray:
    """DPBench data generator: ``scale`` records drawn i.i.d. from the normalised shape."""
    p = np.asarray(shape, np.float64).ravel()
    if np.any(p < 0) or p.sum() <= 0:
        raise InvalidParameterError("shape must be non-negative with a positive total")
    if int(scale) < 1:
        raise InvalidParameterError(f"scale must be >= 1, not {scale!r}")
    counts = rng.multinomial(int(scale), p / p.sum())
    return counts.astype(np.float64).reshape(np.shape(shape))


def coarsen(x: np.ndarray, n: int) -> np.ndarray:
    """Domain size ``n`` by summing groups of adjacent cells (``len(x)`` divisible by n)."""
    x = np.asarray(x, np.float64).ravel()
    if n < 1 or len(x) % n:
        raise InvalidParameterError(f"n must divide the domain size {len(x)}, not {n!r}")
    return x.reshape(n, -1).sum(axis=1)


def identity_workload(n: int) -> Workload:
    """All counts of single values (categorical attributes)."""
    i = np.arange(n, dtype=np.int64)
    return Workload("identity", n, i, i + 1)


def prefix_workload(n: int) -> Workload:
    """All ranges starting at the first value (DPBench's prefix workload)."""
    return Workload("prefix", n, np.zeros(n, np.int64), np.arange(1, n + 1, dtype=np.int64))


def random_range_workload(n: int, sizes: tuple[int, ...], n_queries: int, name: str, *,
                          rng: np.random.Generator) -> Workload:
    """``n_queries`` ranges with length drawn from ``sizes`` (capped at n), uniform position."""
    size = np.minimum(rng.choice(np.asarray(sizes, np.int64), n_queries), n)
    lo = (rng.random(n_queries) * (n - size + 1)).astype(np.int64)
    return Workload(name, n, lo, lo + size)


def make_workload(name: str, n: int, *, n_queries: int = 2000,
                  rng: np.random.Generator | None = None) -> Workload:
    """Workload by name: identity, prefix, small (1..10), large (100..1000 step 100)."""
    if name == "identity":
        return identity_workload(n)
    if name == "prefix":
        return prefix_workload(n)
    if name in {"small", "large"}:
        if rng is None:
            raise InvalidParameterError("rng is required for random range workloads")
        sizes = SMALL_SIZES if name == "small" else LARGE_SIZES
        return random_range_workload(n, sizes, n_queries, name, rng=rng)
    raise InvalidParameterError(f"workload must be one of {', '.join(WORKLOADS)}, not {name!r}")


def answer(x: np.ndarray, w: Workload) -> np.ndarray:
    """``W x``: every range sum, O(n + q) with a prefix sum."""
    c = np.concatenate(([0.0], np.cumsum(np.asarray(x, np.float64).ravel())))
    return c[w.hi] - c[w.lo]


def scaled_error(x: np.ndarray, estimate: np.ndarray, w: Workload) -> float:
    """DPBench scaled average per-query L2 error ``‖Wx − Wx̂‖₂ / (q · ‖x‖₁)``."""
    scale = float(np.asarray(x, np.float64).sum())
    check_positive("scale of x", scale)
    diff = answer(x, w) - answer(estimate, w)
    return float(np.linalg.norm(diff) / (w.size * scale))


def random_boxes(shape: tuple[int, ...], n_queries: int, *, max_extent: int | None = None,
                 rng: np.random.Generator) -> np.ndarray:
    """Random hyper-rectangles, array (q, ndim, 2) of [lo, hi) per dimension."""
    out = np.empty((n_queries, len(shape), 2), np.int64)
    for d, size in enumerate(shape):
        cap = size if max_extent is None else min(size, max_extent)
        ext = rng.integers(1, cap + 1, n_queries)
        lo = (rng.random(n_queries) * (size - ext + 1)).astype(np.int64)
        out[:, d, 0], out[:, d, 1] = lo, lo + ext
    return out


def answer_boxes(cube: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Range counts of 2-D boxes with a summed-area table (any ndim ≤ 2 supported)."""
    c = np.asarray(cube, np.float64)
    if c.ndim != 2:
        raise InvalidParameterError(f"cube must be 2-D, not {c.ndim}-D")
    s = np.zeros((c.shape[0] + 1, c.shape[1] + 1))
    s[1:, 1:] = c.cumsum(0).cumsum(1)
    r0, r1, c0, c1 = boxes[:, 0, 0], boxes[:, 0, 1], boxes[:, 1, 0], boxes[:, 1, 1]
    return s[r1, c1] - s[r0, c1] - s[r1, c0] + s[r0, c0]


def scaled_error_boxes(cube: np.ndarray, estimate: np.ndarray, boxes: np.ndarray) -> float:
    """Scaled average per-query L2 error over 2-D boxes."""
    scale = float(np.asarray(cube, np.float64).sum())
    check_positive("scale of cube", scale)
    diff = answer_boxes(cube, boxes) - answer_boxes(estimate, boxes)
    return float(np.linalg.norm(diff) / (len(boxes) * scale))


def seeded_rngs(seed: int, n: int) -> list[np.random.Generator]:
    """``n`` independent generators derived from ``seed`` (reproducible trials)."""
    return [np.random.Generator(np.random.PCG64(s)) for s in
            np.random.SeedSequence(seed).spawn(n)]
