"""Multidimensional partitioning (Xiao, Xiong & Yuan; kdtree.txt §4).

* :func:`cell_based_release` — Alg. 1: one Laplace count per cell; cells are disjoint,
  so by parallel composition (Thm 3.2 there) the release is ε-DP (Thm 4.1).
* :func:`usefulness_accuracy` / :func:`usefulness_holds` — Thm 4.2 and Cor. 4.1: the
  cell-based release answers every linear distributive query over ≤ β cells within
  ``a = β·b·ln(β/δ)`` (``b = GS/ε``) with probability ≥ 1 − δ (Lemma 4.1).
* :func:`kd_tree_partition` — Alg. 3 on a noisy cube: split at the median of the
  widest dimension while ``H(D_t) = Σ|count − mean| > ξ₁`` or ``Count(D_t) > ξ₀``
  (Def. 4.1; docs/MECHANISMS.md).
* :func:`kd_tree_release` — Alg. 2: ε/2 for a cell histogram (synthetic data D_c), the
  kd-tree built on D_c (post-processing), ε/2 for one noisy count per partition
  (disjoint → parallel composition); Thm 4.3: ε-DP. Uniformity assumption inside
  partitions.
* :func:`range_count`, :func:`range_sum`, :func:`range_average` — §4.4 OLAP queries over
  a released cube with range predicates ``lo ≤ A_j < hi``.

Naming: the paper's privacy budget α is ``epsilon`` here; its accuracy ε is ``accuracy``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mechanisms.errors import InvalidParameterError, check_positive, check_probability
from mechanisms.histograms._noise import laplace_noise, noisy_values

__all__ = [
    "Box",
    "KdRelease",
    "cell_based_release",
    "usefulness_accuracy",
    "usefulness_holds",
    "heterogeneity",
    "kd_tree_partition",
    "kd_tree_release",
    "range_count",
    "range_sum",
    "range_average",
]

#: a hyper-rectangle: ((lo_0, hi_0), (lo_1, hi_1), ...) with exclusive hi
Box = tuple[tuple[int, int], ...]


@dataclass(frozen=True, eq=False)
class KdRelease:
    """A kd-tree release: the estimated cube, its partitions and the budget split."""

    estimate: np.ndarray
    boxes: tuple[Box, ...]
    epsilon: float
    eps_cells: float
    eps_partitions: float


def cell_based_release(
    x: np.ndarray,
    epsilon: float,
    *,
    sensitivity: float = 1.0,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
) -> np.ndarray:
    """NOISE DRAWING — Alg. 1: every cell + Lap(GS/ε) (ε-DP, Thm 4.1).

    ``discrete=True``: exact discrete Laplace (integer counts leaving the system).
    """
    return noisy_values(
        np.asarray(x, np.float64), epsilon, sensitivity=sensitivity, rng=rng, discrete=discrete
    )


def usefulness_accuracy(
    n_cells: int, epsilon: float, delta: float, *, sensitivity: float = 1.0
) -> float:
    """Thm 4.2: accuracy ``a = β·(GS/ε)·ln(β/δ)`` reached with probability ≥ 1 − δ.

    Args:
        n_cells: β, the number of cells of the cube (a query covers x ≤ β of them).
        epsilon: the privacy budget of the cell-based release (α in the paper).
        delta: failure probability δ.
        sensitivity: global sensitivity GS of a cell count.
    """
    if int(n_cells) < 1:
        raise InvalidParameterError(f"n_cells must be >= 1, not {n_cells!r}")
    epsilon = check_positive("epsilon", epsilon)
    delta = check_probability("delta", delta)
    beta = float(n_cells)
    return beta * (sensitivity / epsilon) * math.log(beta / delta)


def usefulness_holds(
    n_cells: int, epsilon: float, delta: float, accuracy: float, *, sensitivity: float = 1.0
) -> bool:
    """Thm 4.2's condition ``GS ≤ α·a/(β·ln(β/δ))`` for accuracy ``a``."""
    beta = float(n_cells)
    return sensitivity <= epsilon * accuracy / (beta * math.log(beta / delta))


def heterogeneity(counts: np.ndarray) -> float:
    """H(D₀) = Σ_cells |count − mean| (Def. 4.1)."""
    c = np.asarray(counts, np.float64)
    return float(np.abs(c - c.mean()).sum())


def _split_index(marginal: np.ndarray) -> int:
    """Median split of a 1-D marginal: the first index where the mass reaches half."""
    m = np.maximum(marginal, 0.0)
    total = m.sum()
    if total <= 0:
        k = len(m) // 2
    else:
        k = int(np.searchsorted(np.cumsum(m), total / 2.0, side="left")) + 1
    return min(max(k, 1), len(m) - 1)


def kd_tree_partition(
    noisy: np.ndarray,
    xi0: float = math.inf,
    xi1: float | None = None,
    *,
    epsilon_cells: float | None = None,
    max_leaves: int = 1 << 20,
) -> list[Box]:
    """Alg. 3: kd-tree partitions of a (noisy) cube. Post-processing only.

    Args:
        noisy: the synthetic cube D_c (noisy cell counts).
        xi0: split while the partition's count exceeds ξ₀ (∞: never on count).
        xi1: split while H exceeds ξ₁. None → ``2·β_t/ε_cells`` (our default: twice the
            expected H of pure Laplace noise over the β_t cells of the partition).
        epsilon_cells: budget of the cell histogram (needed when ``xi1`` is None).
        max_leaves: safety cap on the number of partitions.

    Returns:
        The leaf boxes.
    """
    d = np.asarray(noisy, np.float64)
    if xi1 is None:
        if epsilon_cells is None:
            raise InvalidParameterError("epsilon_cells is required when xi1 is None")
        per_cell = 2.0 / check_positive("epsilon_cells", epsilon_cells)
    else:
        per_cell = None
    leaves: list[Box] = []
    stack: list[Box] = [tuple((0, s) for s in d.shape)]
    while stack:
        box = stack.pop()
        sub = d[tuple(slice(lo, hi) for lo, hi in box)]
        extents = [hi - lo for lo, hi in box]
        if max(extents) < 2 or len(leaves) + len(stack) >= max_leaves:
            leaves.append(box)
            continue
        thr1 = per_cell * sub.size if per_cell is not None else float(xi1)  # type: ignore[arg-type]
        if not (heterogeneity(sub) > thr1 or float(sub.sum()) > xi0):
            leaves.append(box)
            continue
        axis = int(np.argmax(extents))  # the dimension with the largest range (footnote 5)
        other = tuple(i for i in range(d.ndim) if i != axis)
        k = _split_index(sub.sum(axis=other) if other else sub)
        lo, hi = box[axis]
        left = box[:axis] + ((lo, lo + k),) + box[axis + 1 :]
        right = box[:axis] + ((lo + k, hi),) + box[axis + 1 :]
        stack.append(right)
        stack.append(left)
    return leaves


def _box_slices(box: Box) -> tuple[slice, ...]:
    return tuple(slice(lo, hi) for lo, hi in box)


#: default ξ₀·ε: tuned on the DPBench 256×256 files (bench_histograms), where ξ₀ = 100/ε
#: was within ~±2× of the best of {20, 100, 1000, ∞}/ε on every file and ε ∈ {0.1, 1}
XI0_TIMES_EPSILON = 100.0


def kd_tree_release(
    x: np.ndarray,
    epsilon: float,
    *,
    xi0: float | None = None,
    xi1: float | None = None,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
) -> KdRelease:
    """NOISE DRAWING — Alg. 2 (two-step kd-tree), ε-DP (Thm 4.3).

    Args:
        x: the true cube (any number of dimensions).
        epsilon: total budget; ε/2 for the cells, ε/2 for the partitions.
        xi0: count threshold ξ₀ (None → ``XI0_TIMES_EPSILON/ε``; ∞ → split on H only).
        xi1: heterogeneity threshold ξ₁ (None → noise-scaled default, see
            :func:`kd_tree_partition`).
        rng: noise source.
        discrete: exact discrete Laplace for both measurements (integer counts).
    """
    epsilon = check_positive("epsilon", epsilon)
    x = np.asarray(x, np.float64)
    half = epsilon / 2.0
    if xi0 is None:
        xi0 = XI0_TIMES_EPSILON / epsilon
    d_c = cell_based_release(x, half, rng=rng, discrete=discrete)  # step 2
    boxes = kd_tree_partition(d_c, xi0, xi1, epsilon_cells=half)  # step 3 (post-processing)
    counts = np.array([x[_box_slices(b)].sum() for b in boxes])
    noisy_counts = counts + laplace_noise(
        1.0 / half, counts.shape, rng=rng, discrete=discrete
    )  # step 5
    est = np.empty_like(x)
    for b, c in zip(boxes, noisy_counts, strict=True):
        sl = _box_slices(b)
        est[sl] = c / est[sl].size
    return KdRelease(est, tuple(boxes), epsilon, half, epsilon - half)


def _check_box(cube: np.ndarray, box: Box) -> tuple[slice, ...]:
    if len(box) != cube.ndim:
        raise InvalidParameterError(f"box must have {cube.ndim} ranges, not {len(box)}")
    for (lo, hi), size in zip(box, cube.shape, strict=True):
        if not (0 <= lo < hi <= size):
            raise InvalidParameterError(
                f"range must satisfy 0 <= lo < hi <= {size}, not {(lo, hi)!r}"
            )
    return _box_slices(box)


def range_count(cube: np.ndarray, box: Box) -> float:
    """count(φ) over a released cube: Σ c_i over the cells in the box (§4.4)."""
    c = np.asarray(cube, np.float64)
    return float(c[_check_box(c, box)].sum())


def range_sum(cube: np.ndarray, box: Box, axis: int, values: np.ndarray | None = None) -> float:
    """sum(A) over the box: Σ a_i·c_i, ``a_i`` the attribute value of the cell along ``axis``.

    ``values`` maps indices along ``axis`` to attribute values (default: the index).
    """
    c = np.asarray(cube, np.float64)
    sl = _check_box(c, box)
    a = np.arange(c.shape[axis], dtype=np.float64) if values is None else np.asarray(values, float)
    shape = [1] * c.ndim
    shape[axis] = -1
    return float((c * a.reshape(shape))[sl].sum())


def range_average(cube: np.ndarray, box: Box, axis: int, values: np.ndarray | None = None) -> float:
    """avg(A) = Σ a_i c_i / Σ c_i over the box (no formal guarantee, §4.4); NaN if Σ c ≤ 0."""
    total = range_count(cube, box)
    if total <= 0:
        return float("nan")
    return range_sum(cube, box, axis, values) / total
