"""Uniform and adaptive grids: UG and AG (Qardaji, Yang & Li, ICDE 2013).

Source: "Differentially private grids for geospatial data".

* :func:`ug_release` — UG (§IV-A, "Guideline 1"): an m × m grid with
  ``m = sqrt(N·ε/c)``, ``c = 10``, one Laplace count per grid cell, uniform inside.
  Privacy: the grid cells are disjoint, so one record changes one count by one; the
  counts are ε_c-DP by the Laplace mechanism with parallel composition (§II). The grid
  size depends on the data only through N̂ (see below).
* :func:`ag_release` — AG (§IV-B, Alg. "Adaptive Grids"): a first-level
  ``m₁ × m₁`` grid, ``m₁ = max(10, ⌈¼·sqrt(N·ε/c)⌉)``, counted with ``α·ε`` (α = 0.5);
  each first-level cell with noisy count N′ is split into ``m₂ × m₂`` cells,
  ``m₂ = ⌈sqrt(N′·(1−α)·ε/c₂)⌉``, ``c₂ = c/2``, counted with ``(1−α)·ε``; then
  constrained inference inside every first-level cell (§IV-B: the weighted average
  ``v′ = (α²m₂²·v + (1−α)²·Σu)/(α²m₂² + (1−α)²)`` and the difference spread equally over
  the m₂² sub-cells). Privacy: each level is a set of disjoint counts (parallel
  composition), the two levels compose sequentially: αε + (1−α)ε = ε; the second
  level's layout is a function of the first level's noisy counts only (post-processing).

Scale N. Both rules need N = ‖x‖₁. The paper treats N as known; DPBench (Hay et al.
SIGMOD 2016, §4) does not allow a public scale, so by default a DP estimate
``N̂ = N + Lap(1/(ρε))`` is bought with ``ρ = SCALE_SHARE = 5 %`` of ε and the grids run
with the remaining ``(1−ρ)·ε``. A caller that already holds a DP estimate (the 2-D
selection rule) passes it as ``scale`` and nothing is spent on it here.

On a discrete domain (e.g. 256 × 256 cells) a grid of m parts per axis has boundaries at
``round(k·n/m)``; m is capped at the axis length; "uniform inside" spreads a region's
count equally over its cells.
"""

from __future__ import annotations

import math

import numpy as np

from mechanisms.accounting import Accountant
from mechanisms.errors import InvalidParameterError, check_positive, check_probability
from mechanisms.histograms._noise import laplace_noise
from mechanisms.histograms.spend import SpatialRelease, charge, ledger, split_scale

__all__ = [
    "UG_C",
    "AG_ALPHA",
    "ug_size",
    "ag_first_size",
    "ag_second_sizes",
    "grid_edges",
    "block_sums",
    "spread_uniform",
    "ag_inference",
    "ug_release",
    "ag_release",
]

#: c of Guideline 1 (§IV-A): m = sqrt(N ε / c); the paper's recommended constant
UG_C = 10.0
#: α of AG: the first level's share of ε (§IV-B, recommended 0.5)
AG_ALPHA = 0.5


def _noisy(
    values: np.ndarray,
    epsilon: float,
    *,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
) -> np.ndarray:
    """NOISE DRAWING: values + Lap(1/ε) (sensitivity 1: disjoint counts)."""
    v = np.asarray(values, np.float64)
    return v + laplace_noise(1.0 / epsilon, v.shape, rng=rng, discrete=discrete)


def ug_size(n_hat: float, epsilon: float, c: float = UG_C) -> int:
    """Guideline 1: ``m = ⌈sqrt(N·ε/c)⌉`` (≥ 1) parts per axis."""
    return max(1, math.ceil(math.sqrt(max(n_hat, 0.0) * epsilon / c)))


def ag_first_size(n_hat: float, epsilon: float, c: float = UG_C) -> int:
    """AG's first level: ``m₁ = max(10, ⌈¼·sqrt(N·ε/c)⌉)`` (ε the whole AG budget)."""
    return max(10, math.ceil(0.25 * math.sqrt(max(n_hat, 0.0) * epsilon / c)))


def ag_second_sizes(noisy_first: np.ndarray, eps2: float, c2: float) -> np.ndarray:
    """AG's second level: ``m₂ = ⌈sqrt(max(N′,0)·ε₂/c₂)⌉`` (≥ 1) per first-level cell.

    Post-processing of the first level's noisy counts only.
    """
    v = np.maximum(np.asarray(noisy_first, np.float64), 0.0)
    return np.maximum(1, np.ceil(np.sqrt(v * eps2 / c2))).astype(np.int64)


def grid_edges(n: int, m: int) -> np.ndarray:
    """Boundaries of ``min(m, n)`` near-equal parts of ``range(n)``: ``round(k·n/m)``."""
    m = max(1, min(int(m), int(n)))
    return np.round(np.linspace(0, n, m + 1)).astype(np.int64)


def block_sums(x: np.ndarray, e0: np.ndarray, e1: np.ndarray) -> np.ndarray:
    """Sums of x over the grid ``[e0[i], e0[i+1]) × [e1[j], e1[j+1])``."""
    s = np.add.reduceat(np.asarray(x, np.float64), e0[:-1], axis=0)
    return np.add.reduceat(s, e1[:-1], axis=1)


def spread_uniform(counts: np.ndarray, e0: np.ndarray, e1: np.ndarray) -> np.ndarray:
    """The cube that is uniform inside every grid region and sums to ``counts`` there."""
    r0, r1 = np.diff(e0), np.diff(e1)
    dens = np.asarray(counts, np.float64) / np.outer(r0, r1)
    return np.repeat(np.repeat(dens, r0, axis=0), r1, axis=1)


def ag_inference(v: float, u: np.ndarray, alpha: float) -> np.ndarray:
    """§IV-B constrained inference in one first-level cell (post-processing).

    ``v`` is the cell's level-1 noisy count (scale ∝ 1/α), ``u`` its k level-2 noisy
    counts (scale ∝ 1/(1−α)). The minimum-variance combination of the two estimates of
    the cell total is ``v′ = (α²k·v + (1−α)²·Σu)/(α²k + (1−α)²)``; the difference
    ``v′ − Σu`` is spread equally over the k sub-cells (the least-squares projection).
    """
    u = np.asarray(u, np.float64)
    k = u.size
    su = float(u.sum())
    a2k, b2 = alpha * alpha * k, (1.0 - alpha) ** 2
    v_new = (a2k * v + b2 * su) / (a2k + b2)
    return u + (v_new - su) / k


def _check_2d(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    if x.ndim != 2:
        raise InvalidParameterError(f"x must be a 2-D array, not {x.ndim}-D")
    return x


def ug_release(
    x: np.ndarray,
    epsilon: float,
    *,
    scale: float | None = None,
    c: float = UG_C,
    accountant: Accountant | None = None,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
) -> SpatialRelease:
    """NOISE DRAWING — UG (Qardaji et al. 2013, §IV-A), ε-DP.

    Args:
        x: the true 2-D histogram.
        epsilon: total budget (N̂ included unless ``scale`` is given).
        scale: a public or already-paid DP estimate of N (None: buy one with
            ``SCALE_SHARE·ε``).
        c: Guideline 1's constant.
        accountant: charged before each draw (None: a fresh one capped at ε).
        rng: noise source (None: the project's CSPRNG).
        discrete: exact discrete Laplace.
    """
    x = _check_2d(x)
    epsilon = check_positive("epsilon", epsilon)
    acct = ledger(accountant, epsilon, "histogram-ug")
    n_hat, eps, parts = split_scale(
        x, epsilon, scale, accountant=acct, rng=rng, discrete=discrete, mechanism="ug:scale"
    )
    m = ug_size(n_hat, eps, c)
    e0, e1 = grid_edges(x.shape[0], m), grid_edges(x.shape[1], m)
    counts = block_sums(x, e0, e1)
    charge(acct, eps, mechanism="ug:cells", n_values=counts.size, discrete=discrete)
    noisy = _noisy(counts, eps, rng=rng, discrete=discrete)
    boxes = tuple(
        ((int(a), int(b)), (int(p), int(q)))
        for a, b in zip(e0[:-1], e0[1:], strict=True)
        for p, q in zip(e1[:-1], e1[1:], strict=True)
    )
    return SpatialRelease(
        spread_uniform(noisy, e0, e1), "UG", epsilon, boxes, {**parts, "cells": eps}, n_hat
    )


def ag_release(
    x: np.ndarray,
    epsilon: float,
    *,
    scale: float | None = None,
    c: float = UG_C,
    alpha: float = AG_ALPHA,
    accountant: Accountant | None = None,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
) -> SpatialRelease:
    """NOISE DRAWING — AG (Qardaji et al. 2013, §IV-B), ε-DP.

    Args:
        x: the true 2-D histogram.
        epsilon: total budget (N̂ included unless ``scale`` is given).
        scale: a public or already-paid DP estimate of N (None: buy one).
        c: Guideline 1's constant; the second level uses ``c₂ = c/2``.
        alpha: the first level's share of the grids' budget.
        accountant: charged before each draw (None: a fresh one capped at ε).
        rng: noise source (None: the project's CSPRNG).
        discrete: exact discrete Laplace.
    """
    x = _check_2d(x)
    epsilon = check_positive("epsilon", epsilon)
    alpha = check_probability("alpha", alpha)
    acct = ledger(accountant, epsilon, "histogram-ag")
    n_hat, eps, parts = split_scale(
        x, epsilon, scale, accountant=acct, rng=rng, discrete=discrete, mechanism="ag:scale"
    )
    eps1, eps2 = alpha * eps, eps - alpha * eps
    m1 = ag_first_size(n_hat, eps, c)
    e0, e1 = grid_edges(x.shape[0], m1), grid_edges(x.shape[1], m1)
    first = block_sums(x, e0, e1)
    charge(acct, eps1, mechanism="ag:level1", n_values=first.size, discrete=discrete)
    v = _noisy(first, eps1, rng=rng, discrete=discrete)
    m2 = ag_second_sizes(v, eps2, c / 2.0)  # post-processing of the noisy level 1
    # the level-2 layout, all cells at once (disjoint regions → one parallel charge)
    layout = []
    for i in range(len(e0) - 1):
        for j in range(len(e1) - 1):
            f0 = e0[i] + grid_edges(int(e0[i + 1] - e0[i]), int(m2[i, j]))
            f1 = e1[j] + grid_edges(int(e1[j + 1] - e1[j]), int(m2[i, j]))
            layout.append((i, j, f0, f1))
    n2 = sum((len(f0) - 1) * (len(f1) - 1) for _, _, f0, f1 in layout)
    charge(acct, eps2, mechanism="ag:level2", n_values=n2, discrete=discrete)
    est = np.empty_like(x)
    boxes = []
    for i, j, f0, f1 in layout:
        sub = x[e0[i] : e0[i + 1], e1[j] : e1[j + 1]]
        g0, g1 = f0 - e0[i], f1 - e1[j]
        u = _noisy(block_sums(sub, g0, g1), eps2, rng=rng, discrete=discrete)
        u = ag_inference(float(v[i, j]), u, alpha)
        est[e0[i] : e0[i + 1], e1[j] : e1[j + 1]] = spread_uniform(u, g0, g1)
        boxes.extend(
            ((int(a), int(b)), (int(p), int(q)))
            for a, b in zip(f0[:-1], f0[1:], strict=True)
            for p, q in zip(f1[:-1], f1[1:], strict=True)
        )
    return SpatialRelease(
        est, "AG", epsilon, tuple(boxes), {**parts, "level1": eps1, "level2": eps2}, n_hat
    )
