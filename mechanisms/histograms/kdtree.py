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

from mechanisms.accounting import Accountant
from mechanisms.errors import InvalidParameterError, check_positive, check_probability
from mechanisms.histograms._noise import noisy_values
from mechanisms.histograms.spend import charge, ledger

__all__ = [
    "Box",
    "KdRelease",
    "cell_based_release",
    "usefulness_accuracy",
    "usefulness_holds",
    "heterogeneity",
    "kd_tree_partition",
    "kd_tree_release",
    "leaf_inference",
    "hierarchical_kd_release",
    "HIERARCHICAL_HEIGHT",
    "XI0_TIMES_EPSILON",
    "XI0_TIMES_EPSILON_PAPER",
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
    accountant: Accountant | None = None,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
) -> np.ndarray:
    """NOISE DRAWING — Alg. 1: every cell + Lap(GS/ε) (ε-DP, Thm 4.1).

    Privacy: the cells are disjoint, one record changes one count by GS; Laplace
    mechanism with parallel composition. Charged to ``accountant`` (None: a fresh one
    capped at ε) before the draw. ``discrete=True``: exact discrete Laplace (integer
    counts leaving the system).
    """
    acct = ledger(accountant, epsilon, "histogram-cells")
    charge(acct, epsilon, mechanism="cells", n_values=int(np.size(x)), discrete=discrete)
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
    xi0_z: float = 0.0,
    max_leaves: int = 1 << 20,
) -> list[Box]:
    """Alg. 3: kd-tree partitions of a (noisy) cube. Post-processing only.

    Args:
        noisy: the synthetic cube D_c (noisy cell counts).
        xi0: split while the partition's count exceeds ξ₀ (∞: never on count).
        xi1: split while H exceeds ξ₁. None → ``2·β_t/ε_cells`` (our default: twice the
            expected H of pure Laplace noise over the β_t cells of the partition).
        epsilon_cells: budget of the cell histogram (needed when ``xi1`` is None or
            ``xi0_z`` > 0).
        xi0_z: noise margin of the count test: split while the noisy count exceeds
            ``ξ₀ + xi0_z·sqrt(2β_t)/ε_cells`` (``sqrt(2β_t)/ε_cells`` is the standard
            deviation of the D_c noise summed over the β_t cells). 0 = the paper's test.
            Without it an *empty* region of β_t cells is split whenever its summed noise
            exceeds ξ₀, i.e. down to ``β_t ≈ (ξ₀·ε_cells)²/2`` cells, whatever the data.
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
    if xi0_z > 0:
        if epsilon_cells is None:
            raise InvalidParameterError("epsilon_cells is required when xi0_z > 0")
        noise_sd = math.sqrt(2.0) / check_positive("epsilon_cells", epsilon_cells)
    else:
        noise_sd = 0.0
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
        thr0 = xi0 + xi0_z * noise_sd * math.sqrt(sub.size)
        if not (heterogeneity(sub) > thr1 or float(sub.sum()) > thr0):
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


#: ξ₀·ε of the default release (issue 17). Measured on the DPBench 2-D files
#: (BJ-CABS-E, GOWALLA, STROKE, ADULT-2D at 256×256, scales 1e4/1e5/1e6, ε ∈ {0.1, 1},
#: 2000 random rectangles, with leaf inference): ξ₀·ε ∈ {10, 20, 30, 40, 60, 100} gave
#: geo-mean error ratios vs cell-based 1.36 / 0.54 / 0.40 / 0.42 / 0.52 / 0.71 and wins
#: 6 / 16 / 18 / 20 / 15 / 11 of 24 cells; 40 wins most. Below ~20 the count test fires on
#: the summed D_c noise of empty regions (sd sqrt(2β)/ε_c), splitting them to tiny boxes.
XI0_TIMES_EPSILON = 40.0
#: the project's ξ₀·ε before issue 17 (the Xiao reproduction's "paper" setting)
XI0_TIMES_EPSILON_PAPER = 100.0


def _noisy_counts(
    values: np.ndarray,
    epsilon: float,
    *,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
) -> np.ndarray:
    """NOISE DRAWING: values + Lap(1/ε) (disjoint counts, sensitivity 1)."""
    return noisy_values(values, epsilon, rng=rng, discrete=discrete)


def leaf_inference(
    partition_counts: np.ndarray,
    cell_sums: np.ndarray,
    sizes: np.ndarray,
    eps_cells: float,
    eps_partitions: float,
) -> np.ndarray:
    """Minimum-variance partition totals from both measurements (post-processing).

    Alg. 2 measures every partition twice: inside D_c (the sum of its β_p noisy cells,
    variance ``2β_p/ε_c²``) and in step 5 (variance ``2/ε_p²``), with independent noise.
    The inverse-variance weighted mean has the smallest variance of all unbiased
    combinations (the same constrained inference as AG's, Qardaji et al. 2013 §IV-B);
    the paper keeps only the step-5 count. Pure post-processing: no privacy cost.
    """
    w_cells = eps_cells**2 / (2.0 * np.asarray(sizes, np.float64))
    w_part = eps_partitions**2 / 2.0
    return (w_cells * cell_sums + w_part * partition_counts) / (w_cells + w_part)


def kd_tree_release(
    x: np.ndarray,
    epsilon: float,
    *,
    xi0: float | None = None,
    xi1: float | None = None,
    cell_share: float = 0.5,
    xi0_z: float = 0.0,
    inference: bool = True,
    accountant: Accountant | None = None,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
) -> KdRelease:
    """NOISE DRAWING — Alg. 2 (two-step kd-tree), ε-DP (Thm 4.3).

    Privacy: step 2 (one Laplace count per cell, disjoint) is ``cell_share·ε``-DP; the
    tree is built from D_c only (post-processing); step 5 (one count per partition,
    disjoint) is ``(1 − cell_share)·ε``-DP; sequential composition gives ε (Thm 3.1/4.3).
    Each step is charged to the accountant before its noise is drawn.

    Args:
        x: the true cube (any number of dimensions).
        epsilon: total budget; the paper splits it ε/2, ε/2 (``cell_share = 0.5``).
        xi0: count threshold ξ₀ (None → ``XI0_TIMES_EPSILON/ε``; ∞ → split on H only).
        xi1: heterogeneity threshold ξ₁ (None → noise-scaled default, see
            :func:`kd_tree_partition`).
        cell_share: the share of ε spent on D_c (the rest on the partition counts).
        xi0_z: noise margin of the count test (see :func:`kd_tree_partition`).
        inference: combine both measurements of every partition
            (:func:`leaf_inference`, default; False = the paper's Alg. 2 exactly; both
            are compared in the Xiao reproduction report). The D_c sums are slightly
            biased (the boxes were chosen from D_c), which is why it is a switch.
        accountant: charged before each draw (None: a fresh one capped at ε).
        rng: noise source.
        discrete: exact discrete Laplace for both measurements (integer counts).
    """
    epsilon = check_positive("epsilon", epsilon)
    cell_share = check_probability("cell_share", cell_share)
    x = np.asarray(x, np.float64)
    acct = ledger(accountant, epsilon, "histogram-kdtree")
    eps_c = cell_share * epsilon
    eps_p = epsilon - eps_c
    if xi0 is None:
        xi0 = XI0_TIMES_EPSILON / epsilon
    charge(acct, eps_c, mechanism="kdtree:cells", n_values=x.size, discrete=discrete)
    d_c = _noisy_counts(x, eps_c, rng=rng, discrete=discrete)  # step 2
    # step 3: post-processing of D_c only
    boxes = kd_tree_partition(d_c, xi0, xi1, epsilon_cells=eps_c, xi0_z=xi0_z)
    counts = np.array([x[_box_slices(b)].sum() for b in boxes])
    charge(acct, eps_p, mechanism="kdtree:partitions", n_values=len(boxes), discrete=discrete)
    noisy_counts = _noisy_counts(counts, eps_p, rng=rng, discrete=discrete)  # step 5
    if inference:
        sizes = np.array([d_c[_box_slices(b)].size for b in boxes], np.float64)
        sums = np.array([d_c[_box_slices(b)].sum() for b in boxes])
        noisy_counts = leaf_inference(noisy_counts, sums, sizes, eps_c, eps_p)
    est = np.empty_like(x)
    for b, c in zip(boxes, noisy_counts, strict=True):
        sl = _box_slices(b)
        est[sl] = c / est[sl].size
    return KdRelease(est, tuple(boxes), epsilon, eps_c, eps_p)


#: the height of the hierarchical kd-tree in Xiao et al. §5 (Fig. 9: least error "around 13")
HIERARCHICAL_HEIGHT = 13


def hierarchical_kd_release(
    x: np.ndarray,
    epsilon: float,
    *,
    height: int = HIERARCHICAL_HEIGHT,
    accountant: Accountant | None = None,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
) -> KdRelease:
    """NOISE DRAWING — the hierarchical kd-tree baseline of Xiao et al. §4.3 / §5, ε-DP.

    After Inan et al. [14] in the paper.

    The tree is built top-down on the *original* data: at every node of depth d < h a
    noisy count of every value of the splitting attribute (the widest dimension, as in
    Alg. 3) is requested and the node is split at the median of that noisy marginal;
    the leaves (depth h, or single cells) get a noisy count, uniform inside. The budget
    is divided equally among the h median steps and the final counts: ``ε/(h+1)`` each
    ("the privacy budget needs to be divided among all the steps and the final step").

    Privacy: at one depth the nodes are disjoint and a marginal of disjoint values has
    sensitivity 1, so all of that depth's medians are ``ε/(h+1)``-DP together (parallel
    composition); the split points are post-processing of noisy answers; the h depths and
    the leaf counts compose sequentially to ``(h+1)·ε/(h+1) = ε``. A leaf reached at depth
    d < h is measured with the budget left on its path, ``ε − d·ε/(h+1)``. Each depth is
    charged to the accountant before its noise is drawn.

    Args:
        x: the true cube (any number of dimensions).
        epsilon: total budget.
        height: h, the number of median steps on every root-to-leaf path.
        accountant: charged before each draw (None: a fresh one capped at ε).
        rng: noise source.
        discrete: exact discrete Laplace.
    """
    epsilon = check_positive("epsilon", epsilon)
    if int(height) < 0:
        raise InvalidParameterError(f"height must be >= 0, not {height!r}")
    h = int(height)
    x = np.asarray(x, np.float64)
    acct = ledger(accountant, epsilon, "histogram-kdtree-hierarchical")
    step = epsilon / (h + 1)
    level: list[Box] = [tuple((0, s) for s in x.shape)]
    leaves: list[tuple[Box, int]] = []
    for depth in range(h):
        charge(
            acct, step, mechanism=f"kdtree-h:median{depth}", n_values=len(level), discrete=discrete
        )
        nxt: list[Box] = []
        for box in level:
            extents = [hi - lo for lo, hi in box]
            if max(extents) < 2:
                leaves.append((box, depth))
                continue
            axis = int(np.argmax(extents))
            sub = x[_box_slices(box)]
            other = tuple(i for i in range(x.ndim) if i != axis)
            marginal = sub.sum(axis=other) if other else sub
            k = _split_index(_noisy_counts(marginal, step, rng=rng, discrete=discrete))
            lo, hi = box[axis]
            nxt.append(box[:axis] + ((lo, lo + k),) + box[axis + 1 :])
            nxt.append(box[:axis] + ((lo + k, hi),) + box[axis + 1 :])
        level = nxt
    leaves.extend((b, h) for b in level)
    charge(acct, step, mechanism="kdtree-h:leaves", n_values=len(leaves), discrete=discrete)
    est = np.empty_like(x)
    for box, depth in leaves:
        sl = _box_slices(box)
        eps_leaf = epsilon - depth * step
        c = _noisy_counts(np.array([x[sl].sum()]), eps_leaf, rng=rng, discrete=discrete)[0]
        est[sl] = c / est[sl].size
    boxes = tuple(b for b, _ in leaves)
    return KdRelease(est, boxes, epsilon, epsilon - step, step)


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
