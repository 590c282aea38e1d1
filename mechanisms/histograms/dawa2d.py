"""DAWA in two dimensions, the way DPBench runs it: on a Hilbert-curve linearisation.

DAWA (Li, Hay & Miklau, PVLDB 2014) is a 1-D algorithm: a private partition of the
domain into buckets of near-uniform counts (§3), then GreedyH measurements of the bucket
sums chosen for the workload (§4–5). DPBench (Hay et al., SIGMOD 2016, §5) runs it on
2-D data by ordering the cells along a Hilbert curve — cells close on the curve are close
in the plane — and reducing each 2-D query to a row of the workload over that order;
its reference implementation (dpcomp_core's ``dawa2D_engine``) pads to a power-of-two
square, applies the curve, runs the 1-D DAWA with the workload matrix so transformed,
and maps the estimate back. This module does the same with the project's DAWA pieces:
:func:`~mechanisms.histograms.partitioners.dawa_partition` (ε_p = ``share``·ε) and
:func:`~mechanisms.histograms.greedyh.greedyh_tree` on the Gram matrix of the workload
reduced to the buckets (ε − ε_p); each bucket's estimate is spread uniformly over its
cells (DAWA's finaliser).

A bucket's estimate is spread over its cells inside the input (the padding is public
and exactly 0, so mass spread onto it would be lost). The reduced workload has one
column per bucket, ``W̄[q, b] = |box_q ∩ B_b| / |B_b|`` (|B_b| its real cells),
so its Gram is k × k. Where the partition keeps more than :data:`GRAM_MAX` buckets (dense
data at high ε: the partition is then close to the single cells), the Gram does not fit
in memory; the buckets are then measured with the uniform binary hierarchy over the curve
(HB's H₂, Hay et al. VLDB 2010) instead of GreedyH's weights — a deviation from DAWA,
recorded in the release's ``parts`` name.

The partition step has four candidate families (``partition=``): DPBench's intervals
of size 2^k anywhere on the curve (``DAWA-2D``), the aligned ones (``DAWA-2D-aligned``,
fewer candidates, less selection bias), the grid's aligned dyadic rectangles
(``DAWA-2D-boxes``, :mod:`~mechanisms.histograms.partitioners2d`: no curve, so a line of
occupied cells along an axis is one strip instead of many runs), and those rectangles
with the four border layouts besides (``DAWA-2D-borders``: a line on a border of the
grid is cut off in one piece). The last three are the project's variants, never the
published peer.
"""

from __future__ import annotations

import numpy as np

from mechanisms.accounting import Accountant
from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.histograms import _tree
from mechanisms.histograms._noise import laplace_noise, resolve_rng
from mechanisms.histograms.greedyh import greedyh_tree
from mechanisms.histograms.hdmm import hdmm_release
from mechanisms.histograms.partitioners import dawa_partition
from mechanisms.histograms.partitioners2d import box_partition
from mechanisms.histograms.sortaki import DAWA_PARTITION_SHARE
from mechanisms.histograms.spend import SpatialRelease, charge, ledger

__all__ = [
    "GRAM_MAX", "PARTITIONS", "ALGORITHMS", "hilbert_order", "reduced_box_workload",
    "dawa2d_release",
]

#: the ``partition`` choices of :func:`dawa2d_release` and the algorithm each one names
PARTITIONS = {
    "curve": "DAWA-2D",
    "aligned": "DAWA-2D-aligned",
    "boxes": "DAWA-2D-boxes",
    "borders": "DAWA-2D-borders",
}
#: the named algorithms: (``partition``, ``measurement``) — DPBench's DAWA-2D and the
#: project's variants (the rectangles partition is measured with HDMM: docs/histograms-2d.md)
ALGORITHMS = {
    "DAWA-2D": ("curve", "greedyh"),
    "DAWA-2D-aligned": ("aligned", "greedyh"),
    "DAWA-2D-boxes": ("boxes", "hdmm"),
    "DAWA-2D-borders": ("borders", "hdmm"),
}

#: most buckets whose k × k Gram GreedyH is run on (16,384² doubles = 2 GB; dense data
#: at scale 1e6, ε = 1 partitions into 8–16 thousand buckets, where the uniform hierarchy
#: is 2.5–3× worse than GreedyH — bench/results/hist_2d_rule.json, BJ-CABS-S)
GRAM_MAX = 16384


def hilbert_order(side: int) -> np.ndarray:
    """Flat indices ``row·side + col`` of a ``side × side`` grid in Hilbert-curve order.

    The classic iterative d → (x, y) conversion, vectorised over all positions: at each
    scale s the two bits of the position choose a quadrant, and the lower quadrants are
    reflected / transposed so the curve stays continuous. ``side`` must be a power of 2.
    """
    side = int(side)
    if side < 1 or side & (side - 1):
        raise InvalidParameterError(f"side must be a power of 2, not {side!r}")
    t = np.arange(side * side, dtype=np.int64)
    x = np.zeros_like(t)
    y = np.zeros_like(t)
    s = 1
    while s < side:
        rx = (t // 2) & 1
        ry = (t ^ rx) & 1
        flip = (ry == 0) & (rx == 1)
        x = np.where(flip, s - 1 - x, x)
        y = np.where(flip, s - 1 - y, y)
        swap = ry == 0
        x, y = np.where(swap, y, x), np.where(swap, x, y)
        x = x + s * rx
        y = y + s * ry
        t = t // 4
        s *= 2
    return x * side + y


def reduced_box_workload(labels: np.ndarray, sizes: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """``W̄[q, b] = |box_q ∩ B_b| / |B_b|`` for 2-D bucket ``labels`` (no data read)."""
    k = len(sizes)
    out = np.empty((len(boxes), k))
    for q, ((r0, r1), (c0, c1)) in enumerate(boxes):
        out[q] = np.bincount(labels[r0:r1, c0:c1].ravel(), minlength=k)
    return out / sizes


def dawa2d_release(
    x: np.ndarray,
    epsilon: float,
    boxes: np.ndarray | None = None,
    *,
    share: float = DAWA_PARTITION_SHARE,
    partition: str = "curve",
    measurement: str = "greedyh",
    accountant: Accountant | None = None,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
) -> SpatialRelease:
    """NOISE DRAWING — DAWA on the 2-D histogram ``x`` (ε-DP): partition, then measurement.

    Args:
        x: the true 2-D histogram (padded with public zeros to a power-of-two square).
        epsilon: total budget; ``share``·ε on the partition, the rest on the buckets.
        boxes: the rectangle workload, array (q, 2, 2) of [lo, hi) (None: every cell).
        share: the partition's share of ε (DAWA's 0.25).
        partition: the buckets' candidates — ``"curve"``: DAWA's intervals of size 2^k
            anywhere on the curve (DPBench's DAWA-2D); ``"aligned"``: the aligned dyadic
            intervals of the curve (:func:`~mechanisms.histograms.partitioners.aligned_candidates`;
            the project's DAWA-2D-aligned); ``"boxes"``: the grid's aligned dyadic
            rectangles in guillotine partitions
            (:func:`~mechanisms.histograms.partitioners2d.box_partition`; the project's
            DAWA-2D-boxes, buckets numbered along the guillotine tree, not the curve);
            ``"borders"``: the same with its four border layouts (DAWA-2D-borders).
        measurement: how a rectangle workload's buckets are measured — ``"greedyh"``
            (DAWA §4–5) or ``"hdmm"`` (HDMM's best weighted hierarchy or p-Identity
            strategy for the rectangles reduced to the buckets, McKenna et al. 2018 §5–6,
            :func:`~mechanisms.histograms.hdmm.hdmm_release`; continuous Laplace, so with
            ``discrete`` GreedyH is used). Cell counts are measured directly either way.
        accountant: charged for each part before its draw (None: a fresh one capped at ε).
        rng: noise source (None: the project's CSPRNG).
        discrete: exact discrete Laplace for the bucket measurements.

    Privacy: the partition is ε_p-DP (Li et al. 2014 §3), the measurement of the bucket
    sums (disjoint, or a hierarchy whose sensitivity the tree's weights account for)
    ε_f-DP; the ordering, the reduced workload and the tree are public or functions of
    the private partition; sequential composition gives ε.
    """
    x = np.asarray(x, np.float64)
    if x.ndim != 2:
        raise InvalidParameterError(f"x must be a 2-D array, not {x.ndim}-D")
    epsilon = check_positive("epsilon", epsilon)
    if not 0.0 < share < 1.0:
        raise InvalidParameterError(f"share must be in (0, 1), not {share!r}")
    if partition not in PARTITIONS:
        raise InvalidParameterError(
            f"partition must be one of {sorted(PARTITIONS)}, not {partition!r}"
        )
    if measurement not in {"greedyh", "hdmm"}:
        raise InvalidParameterError(f"measurement must be greedyh or hdmm, not {measurement!r}")
    name = PARTITIONS[partition]
    acct = ledger(accountant, epsilon, f"histogram-{name}")
    gen = resolve_rng(rng)
    side = 1 << max(0, int(np.ceil(np.log2(max(x.shape)))))
    padded = np.zeros((side, side))
    padded[: x.shape[0], : x.shape[1]] = x
    eps_p = share * epsilon
    eps_f = epsilon - eps_p
    charge(acct, eps_p, mechanism="dawa2d:partition", n_values=1, discrete=False)
    if partition in {"boxes", "borders"}:
        labels = box_partition(padded, eps_p, eps_f, borders=partition == "borders", rng=gen)
    else:
        order = hilbert_order(side)
        starts = dawa_partition(
            padded.ravel()[order], eps_p, eps_f, aligned=partition == "aligned", rng=gen
        )
        labels = np.empty(side * side, np.int64)
        labels[order] = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, side * side)))
        labels = labels.reshape(side, side)
    k = int(labels.max()) + 1
    # spread each bucket over its real cells only: padding is public and exactly 0
    real = np.zeros((side, side))
    real[: x.shape[0], : x.shape[1]] = 1.0
    sizes = np.bincount(labels.ravel(), weights=real.ravel(), minlength=k)
    sizes = np.where(sizes > 0, sizes, np.inf)  # all-padding bucket: estimate 0
    sums_true = np.bincount(labels.ravel(), weights=padded.ravel(), minlength=k)
    if boxes is None:  # the identity workload: GreedyH weights every bucket 1 (1-D DAWA)
        part = "buckets"
        charge(acct, eps_f, mechanism=f"dawa2d:{part}", n_values=k, discrete=discrete)
        sums = sums_true + laplace_noise(np.full(k, 1.0 / eps_f), k, rng=gen, discrete=discrete)
    else:
        if k > GRAM_MAX:
            part = "hierarchy"
        else:
            part = "hdmm" if measurement == "hdmm" and not discrete else "greedyh"
        charge(acct, eps_f, mechanism=f"dawa2d:{part}", n_values=k, discrete=discrete)
        sums = _measure_buckets(part, sums_true, labels, sizes, boxes, eps_f, gen, discrete)
    est = (sums / sizes)[labels][: x.shape[0], : x.shape[1]]
    return SpatialRelease(
        est, name, epsilon, (), {"partition": eps_p, part: eps_f}, None
    )


def _measure_buckets(
    part: str,
    sums_true: np.ndarray,
    labels: np.ndarray,
    sizes: np.ndarray,
    boxes: np.ndarray,
    eps_f: float,
    gen: np.random.Generator,
    discrete: bool,
) -> np.ndarray:
    """NOISE DRAWING (the caller charged ε_f): the bucket sums for a rectangle workload.

    ``part``: "hierarchy" (H₂ over the bucket ids: every level, equal weights), "greedyh"
    or "hdmm" on the rectangles reduced to the buckets (:func:`reduced_box_workload`).
    Every strategy has L1 column norm ≤ 1 (the tree's weights, HDMM's normalisation), so
    each is ε_f-DP; least squares afterwards is post-processing.
    """
    k = len(sums_true)
    if part == "hierarchy":
        tree = _tree.uniform_tree(k)
    else:
        w = reduced_box_workload(labels, sizes, np.asarray(boxes))
        gram = w.T @ w
        if part == "hdmm":
            return hdmm_release(sums_true, eps_f, gram=gram, rng=gen)
        tree = greedyh_tree(gram)
    y = _tree.measure(sums_true, tree, eps_f, rng=gen, discrete=discrete)
    return _tree.least_squares(tree, y, eps_f)
