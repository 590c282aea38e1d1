"""DAWA's private partition over the aligned dyadic rectangles of a 2-D grid (the project's).

DAWA (Li, Hay & Miklau, PVLDB 2014, §3) partitions a 1-D domain into buckets of
near-uniform counts: every candidate interval gets its L1 deviation from uniformity plus
Laplace noise, and a deterministic dynamic programme picks the partition of least noisy
cost. DPBench runs it on 2-D data along a Hilbert curve (:mod:`~mechanisms.histograms.dawa2d`),
where a bucket is a run of the curve: a line of occupied cells along one axis — ADULT-2D's
records lie on the row and the column of zero capital gain / loss — is cut into many
runs, and each run is a bucket the measurement pays for.

Here the candidates are the grid's **aligned dyadic rectangles**
``[i·2^a, (i+1)·2^a) × [j·2^b, (j+1)·2^b)`` — every height and width a power of two,
squares and strips alike (≈ 4n of them on an n-cell square grid) — and the partitions
are the **guillotine** ones they build: a rectangle is a bucket, or it is halved across
its rows or across its columns and each half partitioned in turn. The dynamic programme
is the 1-D one's on this family,

    ``best(R) = min(cost(R), best(R_top) + best(R_bottom), best(R_left) + best(R_right))``,

solved level by level (one vectorised step per (a, b)). Each rectangle's cost is DAWA's:
``max(dev(R) + Lap(Δ_R/ε_p) + 1/ε_f, 1/ε_f)`` with ``dev`` the L1 deviation of its
cells from their mean, ``Δ_R = 2·(1 − 1/|R|)`` (one record moved by one cell changes
dev by at most that; singletons have dev ≡ 0 and no noise), ``1/ε_f`` the expected
absolute error of the bucket's later measurement, the clamp post-processing
(:func:`~mechanisms.histograms.partitioners.dawa_partition`).

Privacy: DAWA's argument, as for the 1-D candidate families (all intervals, the size-2^k
ones, the aligned ones): the candidate set is fixed and public, every candidate's cost
is noised alike, and the dynamic programme reads nothing but the noisy costs; only the
partition is released. ε_p-DP.

On the six DPBench 2-D tuning files (rectangles; docs/histograms-2d.md, "DAWA-2D-boxes")
DAWA with this partition (and GreedyH's measurement) is 0.69 / 0.79 of the best published
algorithm's error at ε = 0.1 / 1, against 0.77 / 0.85 for the aligned runs of the curve.

**Border layouts** (``borders=True``, DAWA-2D-borders; the project's). Records often lie
on a border of the grid — an attribute's first or last value: zero-inflated attributes
(ADULT-2D's capital gain and loss: no gain, no loss) or capped ones. Halving at the
midpoints takes log₂ n siblings to cut such a line off, each an extra bucket whose noisy
cost (clamped at ``1/ε_f`` from below, so ≈ ``1/ε_f + Δ/(2ε_p)`` when empty) the dynamic
programme weighs against hiding the line's cells in a larger bucket; a kd-tree cuts it off
with one split. So four more layouts are candidates: for each corner of the grid, the
corner cell, the rest of its row, the rest of its column and the interior, each partitioned
by the same dynamic programme on its own (the pieces padded with public zeros to powers
of two; padding counts in no deviation, :func:`block_deviation`). The partition of least
noisy cost among the five layouts wins. Privacy: the layouts add candidates — the aligned
dyadic rectangles of each piece, a fixed public family, each noised by DAWA's rule — and
the choice reads nothing but noisy costs: DAWA's argument, as above. The layouts draw from
a child stream of ``rng``, so the plain partition's draws are those it makes alone.
On the tuning files, DAWA-2D-borders' error is 0.663 / 0.760 of the best published
algorithm's (DAWA-2D-boxes: 0.670 / 0.775); on line data it is about half
DAWA-2D-boxes' (``test_border_lines_cost_less_with_the_border_layouts``).
"""

from __future__ import annotations

import numpy as np

from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.histograms._noise import child_stream, laplace_noise, resolve_rng

__all__ = ["CORNERS", "block_deviation", "box_partition"]


def _log2_side(size: int, what: str) -> int:
    if size < 1 or size & (size - 1):
        raise InvalidParameterError(f"{what} must be a power of 2, not {size}")
    return size.bit_length() - 1


def block_deviation(
    x: np.ndarray, a: int, b: int, real: np.ndarray | None = None
) -> np.ndarray:
    """L1 deviation from the mean of every aligned ``2^a × 2^b`` block of ``x``.

    Returns an array of shape ``(H / 2^a, W / 2^b)``: entry (i, j) is
    ``Σ |x_c − mean|`` over the block's cells. ``real``: a 0/1 mask of the cells that
    exist (None: all); padding cells then count neither in the mean nor in the sum, so
    a bucket that runs into public padding is not charged for it (a block of padding
    only has deviation 0). Over r real cells one record moved by one cell still changes
    the deviation by at most ``2·(1 − 1/r) ≤ 2·(1 − 1/|block|)``.
    """
    x = np.asarray(x, np.float64)
    h, w = x.shape
    blocks = x.reshape(h >> a, 1 << a, w >> b, 1 << b)
    if real is None:
        mean = blocks.mean(axis=(1, 3), keepdims=True)
        return np.abs(blocks - mean).sum(axis=(1, 3))
    m = np.asarray(real, np.float64).reshape(blocks.shape)
    n = m.sum(axis=(1, 3), keepdims=True)
    mean = (blocks * m).sum(axis=(1, 3), keepdims=True) / np.maximum(n, 1.0)
    return (m * np.abs(blocks - mean)).sum(axis=(1, 3))


def _guillotine(
    x: np.ndarray,
    eps_p: float,
    pen: float,
    rng: np.random.Generator | None,
    real: np.ndarray | None = None,
) -> tuple[float, dict[tuple[int, int], np.ndarray]]:
    """NOISE DRAWING — the least noisy cost of a guillotine partition of ``x`` and its choices.

    ``x``'s sides are powers of two. Returns the root's cost and, per (a, b), the choice
    of every ``2^a × 2^b`` block: 0 bucket, 1 halve rows, 2 halve columns.
    """
    la = _log2_side(x.shape[0], "the number of rows")
    lb = _log2_side(x.shape[1], "the number of columns")
    best: dict[tuple[int, int], np.ndarray] = {}
    choice: dict[tuple[int, int], np.ndarray] = {}
    for a in range(la + 1):
        for b in range(lb + 1):
            shape = (x.shape[0] >> a, x.shape[1] >> b)
            size = 1 << (a + b)
            if size == 1:
                cost = np.full(shape, pen)
            else:
                sens = 2.0 * (1.0 - 1.0 / size)
                noise = laplace_noise(1.0, shape, rng=rng) * (sens / eps_p)
                cost = np.maximum(block_deviation(x, a, b, real) + noise + pen, pen)
            pick = np.zeros(shape, np.int8)
            if a > 0:
                half = best[(a - 1, b)]
                split = half[0::2] + half[1::2]
                better = split < cost
                cost, pick = np.where(better, split, cost), np.where(better, 1, pick)
            if b > 0:
                half = best[(a, b - 1)]
                split = half[:, 0::2] + half[:, 1::2]
                better = split < cost
                cost, pick = np.where(better, split, cost), np.where(better, 2, pick)
            best[(a, b)], choice[(a, b)] = cost, pick.astype(np.int8)
    return float(best[(la, lb)][0, 0]), choice


def _walk(choice: dict[tuple[int, int], np.ndarray], shape: tuple[int, int]) -> np.ndarray:
    """Bucket labels of the chosen guillotine partition, depth-first (top, then left first)."""
    la, lb = _log2_side(shape[0], "rows"), _log2_side(shape[1], "columns")
    labels = np.empty(shape, np.int64)
    stack = [(la, lb, 0, 0)]
    k = 0
    while stack:
        a, b, i, j = stack.pop()
        how = choice[(a, b)][i, j]
        if how == 0:
            labels[i << a : (i + 1) << a, j << b : (j + 1) << b] = k
            k += 1
        elif how == 1:  # push the bottom half first: the top one is labelled first
            stack += [(a - 1, b, 2 * i + 1, j), (a - 1, b, 2 * i, j)]
        else:
            stack += [(a, b - 1, i, 2 * j + 1), (a, b - 1, i, 2 * j)]
    return labels


def _padded(part: np.ndarray) -> np.ndarray:
    """``part`` padded with zeros at its end to power-of-two sides."""
    shape = tuple(1 << int(np.ceil(np.log2(n))) for n in part.shape)
    out = np.zeros(shape)
    out[: part.shape[0], : part.shape[1]] = part
    return out


def _peeled(
    x: np.ndarray, eps_p: float, pen: float, rng: np.random.Generator | None
) -> tuple[float, np.ndarray]:
    """NOISE DRAWING — the border layout of a grid's top-left corner, its cost and labels.

    The pieces: cell (0, 0), the rest of row 0, the rest of column 0 and the interior,
    each partitioned on its own (padded at its end to power-of-two sides; the padding
    counts in no deviation, :func:`block_deviation`, and buckets of padding only are
    dropped). Returns the layout's least noisy cost and its labels (depth-first order:
    corner, row, column, interior).
    """
    h, w = x.shape
    pieces = [  # (rows, columns) of each piece of the layout
        ((0, 1), (1, w)),
        ((1, h), (0, 1)),
        ((1, h), (1, w)),
    ]
    total = pen  # the corner: a singleton, cost 1/ε_f without noise
    labels = np.zeros(x.shape, np.int64)
    offset = 1
    for (r0, r1), (c0, c1) in pieces:
        part = x[r0:r1, c0:c1]
        padded = _padded(part)
        cost, choice = _guillotine(padded, eps_p, pen, rng, _padded(np.ones(part.shape)))
        total += cost
        labels[r0:r1, c0:c1] = _walk(choice, padded.shape)[: r1 - r0, : c1 - c0] + offset
        offset = int(labels[r0:r1, c0:c1].max()) + 1
    _, labels = np.unique(labels, return_inverse=True)  # renumber: padding-only buckets go
    return total, labels.reshape(x.shape)


#: the layouts :func:`box_partition` chooses from with ``borders`` (flips of the grid
#: that bring the named corner to the top left)
CORNERS = {"top-left": (), "top-right": (1,), "bottom-left": (0,), "bottom-right": (0, 1)}


def box_partition(
    x: np.ndarray,
    eps_p: float,
    eps_f: float,
    *,
    borders: bool = False,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """NOISE DRAWING — DAWA's partition of a 2-D grid into aligned dyadic rectangles.

    Args:
        x: the REAL 2-D histogram; both sides powers of two (pad with public zeros).
        eps_p: partition budget spent here (the caller charges it).
        eps_f: budget of the later measurement (sets the per-bucket penalty ``1/ε_f``).
        borders: also consider the four border layouts (:data:`CORNERS`, both sides ≥ 4):
            a corner cell, the rest of its row, the rest of its column and the interior,
            each partitioned on its own; the layout of least noisy cost wins.
        rng: noise source (None → project CSPRNG).

    Returns:
        Bucket labels, an int64 array of ``x``'s shape with values ``0 … k−1``, numbered
        in the order a depth-first walk of the guillotine tree meets them (top before
        bottom, left before right) — buckets close in that order are close in the plane,
        which the measurement's hierarchy over bucket ids uses.
    """
    eps_p = check_positive("eps_p", eps_p)
    eps_f = check_positive("eps_f", eps_f)
    x = np.asarray(x, np.float64)
    if x.ndim != 2:
        raise InvalidParameterError(f"x must be a 2-D array, not {x.ndim}-D")
    pen = 1.0 / eps_f
    gen = resolve_rng(rng)
    cost, choice = _guillotine(x, eps_p, pen, gen)  # checks the sides before drawing
    labels = _walk(choice, x.shape)
    if borders and min(x.shape) >= 4:
        rng = child_stream(gen)  # the layouts' own stream: the plain partition draws as alone
        for axes in CORNERS.values():  # np.flip over no axis is the grid itself
            c, lab = _peeled(np.flip(x, axes), eps_p, pen, rng)
            if c < cost:
                cost, labels = c, np.flip(lab, axes)
    return labels
