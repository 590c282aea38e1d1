"""Data-independent 2-D range-query strategies: HB-2D, Privelet-2D and MWEM-2D.

The peers DPBench (Hay et al. SIGMOD 2016, §5) runs on its 2-D files besides the grids
(:mod:`~mechanisms.histograms.grids`), the quadtree and the kd-tree:

* :func:`hb2d_release` — HB in two dimensions (Qardaji, Yang & Li, VLDB 2013, §5.1,
  "Understanding hierarchical methods"): a tree in which every node has b × b children
  over the domain padded to a square of side ``b^h``; the branching b ∈ [2, side]
  minimises §5.1's variance proxy ``b·(side − 1)·h²`` with ``h = ⌈log_b side⌉``; every
  level below the (unmeasured) root is counted with ``Lap(h/ε)``, i.e. ``ε/h`` per level;
  the estimate is the weighted least squares fit of the tree (Hay et al. VLDB 2010;
  :func:`~mechanisms.histograms.quadtree.tree_least_squares`). Privacy: the nodes of a
  level are disjoint (parallel composition), the h levels compose sequentially; the
  layout depends on the shape only. ε-DP.
* :func:`privelet2d_release` — Privelet (Xiao, Wang & Gehrke, ICDE 2010, §5, the
  multi-dimensional wavelet for ordinal attributes): the standard (tensor) Haar
  decomposition ``C = H X Hᵀ`` of the zero-padded 2^k × 2^k cube, the 1-D weights of
  :mod:`~mechanisms.histograms.privelet` multiplied, ``W(i, j) = W(i)·W(j)``. One record
  in cell (a, b) changes ``C[i, j]`` by ``H[i, a]·H[j, b]``, so the generalised
  sensitivity is ``(Σ_i W(i)|H[i, a]|)(Σ_j W(j)|H[j, b]|) = (1 + k)²`` (Lemma 3 of the
  paper per dimension); noise ``Lap((1 + k)²/(ε·W(i, j)))`` on every coefficient is
  ε-DP (their Theorem 1). The inverse transform is post-processing.
* :func:`mwem2d_release` — MWEM (Hardt, Ligett & McSherry, NIPS 2012, Alg. 1) for a
  workload of rectangles, the 2-D twin of :func:`~mechanisms.histograms.mwem.mwem_release`
  (same rounds, scale share, exponential mechanism by Gumbel-max, §3.2 passes, average
  of the iterates). Workload-aware: it needs the rectangles.

Every draw is charged to the accountant first (:func:`~mechanisms.histograms.spend.charge`).
"""

from __future__ import annotations

import math

import numpy as np

from mechanisms.accounting import Accountant
from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.histograms._noise import laplace_noise, resolve_rng
from mechanisms.histograms.mwem import MW_PASSES, MWEM_ROUNDS, MWEM_TOTAL_SHARE
from mechanisms.histograms.privelet import haar
from mechanisms.histograms.quadtree import pyramid, tree_least_squares
from mechanisms.histograms.spend import SpatialRelease, charge, ledger, noisy_total

__all__ = [
    "hb2d_variance",
    "hb2d_branching",
    "hb2d_release",
    "haar_matrix",
    "privelet2d_release",
    "mwem2d_release",
]


def _check_2d(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    if x.ndim != 2:
        raise InvalidParameterError(f"x must be a 2-D array, not {x.ndim}-D")
    return x


def hb2d_variance(side: int, b: int) -> float:
    """Qardaji et al. §5.1's variance proxy ``b·(side − 1)·h²``, ``h = ⌈log_b side⌉``."""
    h = max(math.ceil(math.log(side, b) - 1e-12), 1)
    return b * (side - 1) * h * h


def hb2d_branching(side: int) -> int:
    """The per-axis branching b ∈ [2, side] minimising :func:`hb2d_variance` (ties: smallest)."""
    if int(side) < 2:
        raise InvalidParameterError(f"side must be >= 2, not {side!r}")
    return min(range(2, int(side) + 1), key=lambda b: (hb2d_variance(int(side), b), b))


def _pad(x: np.ndarray, side: int) -> tuple[np.ndarray, np.ndarray]:
    """The cube zero-padded to side × side, and the mask of its padding (public, 0)."""
    padded = np.zeros((side, side))
    padded[: x.shape[0], : x.shape[1]] = x
    known = np.ones((side, side))
    known[: x.shape[0], : x.shape[1]] = 0.0
    return padded, known


def hb2d_release(
    x: np.ndarray,
    epsilon: float,
    *,
    branching: int | None = None,
    accountant: Accountant | None = None,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
) -> SpatialRelease:
    """NOISE DRAWING — HB-2D (Qardaji et al. VLDB 2013 §5.1), ε-DP.

    Args:
        x: the true 2-D histogram.
        epsilon: total budget (ε/h per level below the root).
        branching: b per axis (None: :func:`hb2d_branching` of the longer side).
        accountant: charged per level before its draw (None: a fresh one capped at ε).
        rng: noise source (None: the project's CSPRNG).
        discrete: exact discrete Laplace.
    """
    x = _check_2d(x)
    epsilon = check_positive("epsilon", epsilon)
    acct = ledger(accountant, epsilon, "histogram-hb2d")
    side0 = max(x.shape)
    b = hb2d_branching(max(side0, 2)) if branching is None else int(branching)
    if b < 2:
        raise InvalidParameterError(f"branching must be >= 2, not {branching!r}")
    h = max(1, math.ceil(math.log(max(side0, 2), b) - 1e-12))
    side = b**h
    padded, known = _pad(x, side)
    truth = pyramid(padded, h, b)[:h]  # levels 0 (cells) … h−1; the root is not measured
    pad = pyramid(known, h, b)[:h]
    eps = epsilon / h
    y, var = [], []
    for i, t in enumerate(truth):
        is_pad = pad[i] >= float(b**i) ** 2  # node entirely padding
        charge(
            acct, eps, mechanism=f"hb2d:level{i}", n_values=int((~is_pad).sum()), discrete=discrete
        )
        noise = laplace_noise(1.0 / eps, t.shape, rng=rng, discrete=discrete)
        y.append(np.where(is_pad, 0.0, t + noise))
        var.append(np.where(is_pad, 0.0, 2.0 / (eps * eps)))
    est = tree_least_squares(y, var, b)[: x.shape[0], : x.shape[1]]
    parts = {f"level{i}": eps for i in range(h)}
    return SpatialRelease(est, "HB-2D", epsilon, (), parts, None)


def haar_matrix(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The 1-D Haar transform as an n × n matrix H and the Privelet weights W.

    H is :func:`~mechanisms.histograms.privelet.haar` as a matrix (n a power of two;
    rows: c₀, then the levels root first); W is ``n`` for c₀ and the number of cells
    under the node otherwise.
    """
    if n < 1 or n & (n - 1):
        raise InvalidParameterError(f"n must be a power of two, not {n!r}")
    rows, weights = [], []
    for k in range(n):
        e = np.zeros(n)
        e[k] = 1.0
        c0, levels = haar(e)
        rows.append(np.concatenate(([c0], *levels)) if levels else np.array([c0]))
    h_mat = np.array(rows).T  # column k = coefficients of the unit vector e_k
    weights.append(float(n))
    size = n
    while size > 1:
        weights.extend([float(size)] * (n // size))
        size //= 2
    return h_mat, np.array(weights)


def privelet2d_release(
    x: np.ndarray,
    epsilon: float,
    *,
    accountant: Accountant | None = None,
    rng: np.random.Generator | None = None,
) -> SpatialRelease:
    """NOISE DRAWING — Privelet in 2-D (Xiao et al. ICDE 2010 §5), ε-DP.

    Continuous Laplace only (the coefficients are not integers).
    """
    x = _check_2d(x)
    epsilon = check_positive("epsilon", epsilon)
    acct = ledger(accountant, epsilon, "histogram-privelet2d")
    k = max(0, math.ceil(math.log2(max(max(x.shape), 1))))
    n = 1 << k
    padded, _ = _pad(x, n)
    h_mat, w = haar_matrix(n)
    coef = h_mat @ padded @ h_mat.T
    rho = (1.0 + k) ** 2
    charge(acct, epsilon, mechanism="privelet2d:coefficients", n_values=coef.size, discrete=False)
    coef = coef + laplace_noise(rho / (epsilon * np.outer(w, w)), coef.shape, rng=rng)
    inv = np.linalg.inv(h_mat)
    est = (inv @ coef @ inv.T)[: x.shape[0], : x.shape[1]]
    return SpatialRelease(est, "Privelet-2D", epsilon, (), {"coefficients": epsilon}, None)


def _box_answers(a: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    s = np.zeros((a.shape[0] + 1, a.shape[1] + 1))
    s[1:, 1:] = a.cumsum(0).cumsum(1)
    r0, r1, c0, c1 = boxes[:, 0, 0], boxes[:, 0, 1], boxes[:, 1, 0], boxes[:, 1, 1]
    return s[r1, c1] - s[r0, c1] - s[r1, c0] + s[r0, c0]


def mwem2d_release(
    x: np.ndarray,
    epsilon: float,
    boxes: np.ndarray,
    *,
    rounds: int = MWEM_ROUNDS,
    scale: float | None = None,
    accountant: Accountant | None = None,
    rng: np.random.Generator | None = None,
) -> SpatialRelease:
    """NOISE DRAWING — MWEM (Hardt et al. 2012, Alg. 1) on a workload of rectangles, ε-DP.

    Args:
        x: the true 2-D histogram.
        epsilon: total budget (``MWEM_TOTAL_SHARE·ε`` on N̂ unless ``scale`` is given).
        boxes: the workload, array (q, 2, 2) of [lo, hi) per axis.
        rounds: T.
        scale: a public or already-paid DP estimate of N.
        accountant: charged before each draw (None: a fresh one capped at ε).
        rng: noise source.
    """
    x = _check_2d(x)
    epsilon = check_positive("epsilon", epsilon)
    if int(rounds) < 1:
        raise InvalidParameterError(f"rounds must be >= 1, not {rounds!r}")
    boxes = np.asarray(boxes, np.int64)
    gen = resolve_rng(rng)
    acct = ledger(accountant, epsilon, "histogram-mwem2d")
    eps = epsilon
    parts: dict[str, float] = {}
    if scale is None:
        eps_n = MWEM_TOTAL_SHARE * epsilon
        scale = noisy_total(x, eps_n, accountant=acct, rng=gen, mechanism="mwem2d:scale")
        eps -= eps_n
        parts["scale"] = eps_n
    total = max(float(scale), 1.0)
    eps_t = eps / int(rounds)
    true = _box_answers(x, boxes)
    a = np.full(x.shape, total / x.size)
    acc = np.zeros(x.shape)
    hist: list[tuple[int, float]] = []
    for _ in range(int(rounds)):
        charge(acct, eps_t, mechanism="mwem2d:round", n_values=1, discrete=False)
        score = np.abs(_box_answers(a, boxes) - true)  # sensitivity 1
        q = int(np.argmax(eps_t * score / 4.0 + gen.gumbel(size=len(score))))
        hist.append((q, float(true[q] + laplace_noise(2.0 / eps_t, 1, rng=gen)[0])))
        for _ in range(MW_PASSES):
            for qi, m in hist:
                (r0, r1), (c0, c1) = boxes[qi]
                err = m - float(a[r0:r1, c0:c1].sum())
                a[r0:r1, c0:c1] *= math.exp(err / (2.0 * total))
                a *= total / a.sum()
        acc += a
    parts["rounds"] = eps
    return SpatialRelease(acc / int(rounds), "MWEM", epsilon, (), parts, total)
