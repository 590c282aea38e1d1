"""Finalizers (SORTaki §IV-A, §V): turn bins into the released histogram.

Noise-drawing functions (they spend budget) are named ``measure_*``; the ``*_finalize``
and inference functions are deterministic post-processing and take no rng.

* AHP finalizer (Zhang et al. 2014, SORTaki §IV-B): every value of bin v gets
  ``avg~_{v,ε_f}`` = (bin sum + Lap(1/ε_f)) / |v|.
* WAF, SORTaki Alg. 4 / eq. (3): ``α₁·mean(f~_{i,ε_in}) + α₂·avg~_{v,ε_f}`` with
  ``α₁ = ε_in²/(ε_in² + |v|ε_f²)``, ``α₂ = 1 − α₁`` — unbiased, minimum variance.
* A level-uniform simplification of DAWA's measurement (Li et al. 2014, §4), kept for
  comparison only — DAWA now measures with GreedyH (:mod:`.greedyh`): a binary tree over the DAWA
  bins; the budget is split over tree levels with weights ``w_l ∝ c_l^{1/3}``, where
  ``c_l`` counts how often level-l nodes appear in the canonical decompositions of the
  workload's range queries (this minimises Σ_l c_l·2/(w_l ε)² under Σ w_l = 1, the
  level-uniform restriction of DAWA's GreedyH); nodes of one level are disjoint
  (parallel composition), levels compose sequentially. Estimates are the exact
  generalised-least-squares fit on the tree (Hay et al. 2010 two-pass algorithm with
  per-level variances). With no workload (or the identity workload) all budget goes to
  the leaves, i.e. one Laplace count per bin.

Privacy: bins are disjoint, so one record changes one bin sum by 1: ``measure_bin_sums``
is ε_f-DP; ``measure_tree`` is Σ_l w_l·ε = ε-DP.
"""

from __future__ import annotations

import numpy as np

from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.histograms._noise import laplace_noise
from mechanisms.histograms.bins import Partition

__all__ = [
    "measure_bin_sums",
    "ahp_finalize",
    "waf_weights",
    "waf_finalize",
    "tree_level_usage",
    "greedy_level_weights",
    "measure_tree",
    "tree_least_squares",
]


def measure_bin_sums(
    x: np.ndarray,
    partition: Partition,
    eps_f: float,
    *,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
) -> np.ndarray:
    """NOISE DRAWING: every bin's sum + Lap(1/ε_f) (parallel composition over bins)."""
    eps_f = check_positive("eps_f", eps_f)
    sums = partition.bin_sums(x)
    return sums + laplace_noise(1.0 / eps_f, sums.shape, rng=rng, discrete=discrete)


def ahp_finalize(partition: Partition, noisy_sums: np.ndarray) -> np.ndarray:
    """AHP finalizer: the noisy bin average for every value of the bin (no rng)."""
    return partition.spread(np.asarray(noisy_sums, np.float64) / partition.sizes())


def waf_weights(sizes: np.ndarray, eps_in: float, eps_f: float) -> np.ndarray:
    """α₁ of SORTaki eq. (3) per bin: ε_in² / (ε_in² + |v|·ε_f²)."""
    sizes = np.asarray(sizes, dtype=np.float64)
    return eps_in**2 / (eps_in**2 + sizes * eps_f**2)


def waf_finalize(
    partition: Partition,
    noisy_init: np.ndarray,
    noisy_sums: np.ndarray,
    eps_in: float,
    eps_f: float,
) -> np.ndarray:
    """WAF, SORTaki Alg. 4: minimum-variance unbiased mix of both noisy estimates (no rng)."""
    if eps_in <= 0:
        return ahp_finalize(partition, noisy_sums)
    sizes = partition.sizes()
    a1 = waf_weights(sizes, eps_in, eps_f)
    init_avg = partition.bin_means(noisy_init)
    f_avg = np.asarray(noisy_sums, np.float64) / sizes
    return partition.spread(a1 * init_avg + (1.0 - a1) * f_avg)


def _height(k: int) -> int:
    return max(int(np.ceil(np.log2(k))), 0) if k > 1 else 0


def tree_level_usage(n_bins: int, lo_bin: np.ndarray, hi_bin: np.ndarray) -> np.ndarray:
    """``c_l``: how many level-l nodes the canonical decompositions of ``[lo, hi)`` use.

    Level 0 are the leaves (bins); the tree has ``2^h ≥ n_bins`` leaves.
    """
    h = _height(n_bins)
    usage = np.zeros(h + 1)
    i = np.asarray(lo_bin, np.int64).copy()
    j = np.asarray(hi_bin, np.int64).copy()
    for level in range(h + 1):
        live = i < j
        if not live.any():
            break
        if level == h:
            usage[level] += np.count_nonzero(live)
            break
        left = live & (i % 2 == 1)
        usage[level] += np.count_nonzero(left)
        i = np.where(left, i + 1, i)
        right = (i < j) & (j % 2 == 1)
        usage[level] += np.count_nonzero(right)
        j = np.where(right, j - 1, j)
        i //= 2
        j //= 2
    return usage


def greedy_level_weights(usage: np.ndarray) -> np.ndarray:
    """Budget share per level minimising Σ c_l / w_l² (w ∝ c^{1/3}); leaves if no usage."""
    usage = np.asarray(usage, np.float64)
    if usage.sum() <= 0:
        w = np.zeros_like(usage)
        w[0] = 1.0
        return w
    w = np.cbrt(usage)
    return w / w.sum()


def measure_tree(
    bin_sums: np.ndarray,
    weights: np.ndarray,
    epsilon: float,
    *,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
) -> list[np.ndarray]:
    """NOISE DRAWING: noisy node sums per level, level l with budget ``w_l·ε``.

    Returns:
        One array per level (leaves first); levels with ``w_l = 0`` are empty arrays.
    """
    epsilon = check_positive("epsilon", epsilon)
    k = len(bin_sums)
    h = _height(k)
    if len(weights) != h + 1:
        raise InvalidParameterError(f"weights must have {h + 1} levels, not {len(weights)}")
    leaves = np.zeros(1 << h)
    leaves[:k] = bin_sums
    out = []
    level = leaves
    for w in weights:
        if w > 0:
            out.append(
                level + laplace_noise(1.0 / (w * epsilon), level.shape, rng=rng, discrete=discrete)
            )
        else:
            out.append(np.zeros(0))
        level = level.reshape(-1, 2).sum(axis=1) if len(level) > 1 else level
    return out


def tree_least_squares(
    noisy_levels: list[np.ndarray], weights: np.ndarray, epsilon: float, n_bins: int
) -> np.ndarray:
    """GLS leaf estimates from noisy tree levels (Hay et al. 2010, per-level variances).

    Bottom-up: combine each node's own measurement with the sum of its children's
    estimates by inverse variance. Top-down: distribute the root-consistent difference
    to children in proportion to their variances. Exact GLS for a tree with independent
    noise. Post-processing only.
    """
    h = len(noisy_levels) - 1
    z: list[np.ndarray] = []
    var: list[np.ndarray] = []
    for level, (y, w) in enumerate(zip(noisy_levels, weights, strict=True)):
        size = (1 << h) >> level
        v_meas = 2.0 / (w * epsilon) ** 2 if w > 0 else np.inf
        if level == 0:
            zl = y if w > 0 else np.zeros(size)
            vl = np.full(size, v_meas)
        else:
            zc = z[-1].reshape(-1, 2).sum(axis=1)
            vc = var[-1].reshape(-1, 2).sum(axis=1)
            if w > 0:
                with np.errstate(invalid="ignore", divide="ignore"):
                    inv = 1.0 / vc + 1.0 / v_meas
                    zl = np.where(np.isinf(vc), y, (zc / vc + y / v_meas) / inv)
                    vl = np.where(np.isinf(vc), v_meas, 1.0 / inv)
            else:
                zl, vl = zc, vc
        z.append(zl)
        var.append(vl)
    est = z[h]
    for level in range(h, 0, -1):
        zc = z[level - 1].reshape(-1, 2)
        vc = var[level - 1].reshape(-1, 2)
        diff = est - zc.sum(axis=1)
        tot = vc.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(np.isfinite(tot)[:, None] & (tot[:, None] > 0), vc / tot[:, None], 0.5)
        est = (zc + share * diff[:, None]).ravel()
    return est[:n_bins]
