"""Partitioners (SORTaki §IV-A, §V-B): split a (possibly sorted) order into contiguous bins.

* :func:`greedy_partition` — GP, SORTaki Alg. 5, any bin-error formula, O(n).
* :func:`dp_partition` — DPP, SORTaki Alg. 6, any bin-error formula. Alg. 6 fills an
  interval table S[s, e]; since the error of a partitioning is the *sum* of its bins'
  errors, the optimum over all splits of ``[0, e)`` satisfies the prefix recursion
  ``best[e] = min_s best[s] + EF([s, e))`` — the same optimum in O(n²) time and O(n)
  memory (the prefix-sum formulas make EF O(1)).
* ``dp_partition(..., restricted=True)`` — the restricted DPP "inspired by [DAWA]":
  only bins of size 2^k, i.e. n·log n candidate bins. With the O(1) formulas the DP is
  O(n log n); with DAWA's L1 costs (:func:`dawa_partition`) each candidate costs
  O(log² n) more with our merge-sort tree, which the benchmark measures.
* :func:`dawa_partition` — DAWA's partitioner (Li et al. 2014, §3): noisy L1 costs of
  candidate intervals on the REAL data, then the same deterministic DP. Spends ε_p.
* :func:`dpcube_partition` — DPCube's kd-style splitter (Xiao et al. 2012, SORTaki
  §IV-A): split a node at the median of its noisy mass while its noisy variance
  exceeds ξ (tuned ξ = 2/ε_in², SORTaki §VII). No budget (works on noisy data).

All partitioners work on a value sequence ``y`` in a given order and return start
positions; :meth:`Partition.from_boundaries` maps them to the original domain.
"""

from __future__ import annotations

import math

import numpy as np

from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.histograms._noise import laplace_noise
from mechanisms.histograms.bin_error import BinErrorFormula, PrefixStats

__all__ = [
    "greedy_partition",
    "dp_partition",
    "dyadic_candidates",
    "aligned_candidates",
    "all_candidates",
    "optimal_from_candidates",
    "interval_l1_deviation",
    "dawa_partition",
    "dpcube_partition",
]


def greedy_partition(
    y: np.ndarray, formula: BinErrorFormula, eps_in: float, eps_f: float
) -> np.ndarray:
    """GP, SORTaki Alg. 5: merge the next value into the current bin while it lowers error.

    Args:
        y: values in partition order (noisy for UEE formulas, real for EE).
        formula: a bin error formula from :mod:`~mechanisms.histograms.bin_error`.
        eps_in: initializer budget ε_in = γ_in·ε.
        eps_f: finalizer budget ε_f = γ_f·ε.

    Returns:
        Start positions of the bins.
    """
    st = PrefixStats(y)
    n = st.n
    starts = [0]
    s = 0
    for i in range(1, n):
        # er1: v ∪ V[i]; er2: v and V[i] apart (Alg. 5 lines 3-4)
        idx = np.array([s, s, i], np.int64)
        end = np.array([i + 1, i, i + 1], np.int64)
        er = formula(st, idx, end, eps_in, eps_f)
        if not er[0] < er[1] + er[2]:
            starts.append(i)
            s = i
    return np.asarray(starts, dtype=np.int64)


def _trace(back: np.ndarray, n: int) -> np.ndarray:
    starts = []
    e = n
    while e > 0:
        s = int(back[e])
        starts.append(s)
        e = s
    return np.asarray(starts[::-1], dtype=np.int64)


def dp_partition(
    y: np.ndarray,
    formula: BinErrorFormula,
    eps_in: float,
    eps_f: float,
    *,
    restricted: bool = False,
) -> np.ndarray:
    """DPP, SORTaki Alg. 6 (optimal partition for the formula); optionally restricted.

    Args:
        y: values in partition order.
        formula: bin error formula (EE/UEE/...).
        eps_in: ε_in.
        eps_f: ε_f.
        restricted: only bins of size 2^k (O(n log n) candidates) — for large domains.

    Returns:
        Start positions of the optimal bins.
    """
    st = PrefixStats(y)
    n = st.n
    if restricted:
        s, e = dyadic_candidates(n)
        return optimal_from_candidates(n, s, e, formula(st, s, e, eps_in, eps_f))
    best = np.zeros(n + 1)
    back = np.zeros(n + 1, dtype=np.int64)
    for end in range(1, n + 1):
        s = np.arange(end, dtype=np.int64)
        cost = best[:end] + formula(st, s, np.full(end, end, np.int64), eps_in, eps_f)
        j = int(np.argmin(cost))
        best[end] = cost[j]
        back[end] = j
    return _trace(back, n)


def dyadic_candidates(n: int) -> tuple[np.ndarray, np.ndarray]:
    """All intervals ``[s, s + 2^k)`` inside ``[0, n)``, grouped by end (for the DP)."""
    ss, ee = [], []
    k = 0
    while (1 << k) <= n:
        size = 1 << k
        e = np.arange(size, n + 1, dtype=np.int64)
        ss.append(e - size)
        ee.append(e)
        k += 1
    s = np.concatenate(ss)
    e = np.concatenate(ee)
    o = np.lexsort((s, e))
    return s[o], e[o]


def aligned_candidates(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The aligned dyadic intervals ``[j·2^k, (j+1)·2^k)`` inside ``[0, n)``, grouped by end.

    About 2n of them, against ≈ n·log₂ n for :func:`dyadic_candidates` (whose starts are
    free); every partition of ``[0, n)`` into them is a cut of the binary tree over the
    domain.
    """
    ss, ee = [], []
    size = 1
    while size <= n:
        starts = np.arange(n // size, dtype=np.int64) * size
        ss.append(starts)
        ee.append(starts + size)
        size *= 2
    s = np.concatenate(ss)
    e = np.concatenate(ee)
    o = np.lexsort((s, e))
    return s[o], e[o]


def all_candidates(n: int) -> tuple[np.ndarray, np.ndarray]:
    """All n(n+1)/2 intervals ``[s, e)``, grouped by end."""
    e = np.repeat(np.arange(1, n + 1, dtype=np.int64), np.arange(1, n + 1))
    s = np.concatenate([np.arange(k, dtype=np.int64) for k in range(1, n + 1)])
    return s, e


def optimal_from_candidates(n: int, s: np.ndarray, e: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """Minimum-total-cost partition of ``[0, n)`` into candidate intervals (sorted by end).

    Every singleton ``[i, i+1)`` must be a candidate (so a partition always exists).
    Deterministic post-processing of the (possibly noisy) costs.
    """
    bounds = np.searchsorted(e, np.arange(n + 2), side="left")
    best = np.zeros(n + 1)
    back = np.zeros(n + 1, dtype=np.int64)
    s_l = s.tolist()
    c_l = np.asarray(cost, dtype=np.float64).tolist()
    best_l = [0.0] * (n + 1)
    for end in range(1, n + 1):
        lo, hi = int(bounds[end]), int(bounds[end + 1])
        if hi - lo <= 32:
            bv, bs = math.inf, -1
            for j in range(lo, hi):
                v = best_l[s_l[j]] + c_l[j]
                if v < bv:
                    bv, bs = v, s_l[j]
        else:
            sj = s[lo:hi]
            tot = best[sj] + cost[lo:hi]
            j = int(np.argmin(tot))
            bv, bs = float(tot[j]), int(sj[j])
        if bs < 0:
            raise InvalidParameterError(f"no candidate interval ends at {end}")
        best_l[end] = bv
        best[end] = bv
        back[end] = bs
    return _trace(back, n)


def _block_tables(x: np.ndarray) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray, int]:
    """Merge-sort tree: per level, keys (block·n + rank) sorted, and cumsums of values."""
    n = len(x)
    order = np.argsort(x, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    idx = np.arange(n, dtype=np.int64)
    levels = []
    j = 0
    while (1 << j) <= n:
        key = (idx >> j) * n + rank
        o = np.argsort(key, kind="stable")
        levels.append((key[o], np.concatenate(([0.0], np.cumsum(x[o])))))
        j += 1
    return levels, np.sort(x), n


def _prefix_above(tables: tuple, p: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Σ max(x_i − m, 0) over i < p, for arrays ``p`` and thresholds ``m``."""
    levels, xs, n = tables
    c_m = np.searchsorted(xs, m, side="right")  # elements with x <= m have rank < c_m
    out = np.zeros(len(p))
    for j, (keys, csum) in enumerate(levels):
        has = ((p >> j) & 1).astype(bool)
        if not has.any():
            continue
        pj, mj, cj = p[has], m[has], c_m[has]
        b = (pj >> j) - 1
        size = 1 << j
        lo = b * size
        pos = np.searchsorted(keys, b * n + cj, side="left")
        cnt_above = (lo + size) - pos
        sum_above = csum[lo + size] - csum[pos]
        out[has] += sum_above - cnt_above * mj
    return out


def interval_l1_deviation(x: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """DAWA's bin cost ``dev(B) = Σ_{i∈B} |x_i − mean_B|`` for intervals ``[s, e)``.

    Uses ``Σ|x_i − m| = 2·Σ max(x_i − m, 0)`` when m is the mean, and a merge-sort
    tree: O(log n) block look-ups of O(log n) each per interval.
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    c1 = np.concatenate(([0.0], np.cumsum(x)))
    mean = (c1[e] - c1[s]) / (e - s)
    tables = _block_tables(x)
    above = _prefix_above(tables, e, mean) - _prefix_above(tables, s, mean)
    return np.maximum(2.0 * above, 0.0)


def dawa_partition(
    x: np.ndarray,
    eps_p: float,
    eps_f: float,
    *,
    dyadic: bool = True,
    aligned: bool = False,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """NOISE DRAWING — DAWA's private partitioner (Li et al. 2014, §3, "L1 partition").

    Each candidate interval B gets the noisy cost
    ``max(dev(x, B) + Lap(Δ_B/ε_p) + 1/ε_f, 1/ε_f)``: ``dev`` (below) changes by at most
    ``Δ_B = 2·(1 − 1/|B|)`` when one record moves one cell by one (the changed term moves
    by ≤ 1 − 1/|B|, the others by 1/|B| each), so singletons (dev ≡ 0) need no noise;
    ``1/ε_f`` is the expected absolute error of the bin's later Laplace measurement; the
    clamp at ``1/ε_f`` (post-processing) stops the DP from chasing negative noise.
    The deterministic DP then picks the cheapest partition. Privacy: ε_p-DP by the
    argument of Li et al. 2014 §3 (the noisy costs are the only access to the data).
    Candidates: intervals of size 2^k (``dyadic``, DAWA's option, O(n log n) of them)
    or all intervals (O(n²), small domains only), or (``aligned``) only the aligned
    dyadic intervals of :func:`aligned_candidates` (≈ 2n) — not DAWA's option but the
    project's: the DP picks the partition of least *noisy* cost, so the more candidates
    there are, the more it picks intervals whose noise happened to be very negative
    (a bucket that hides real structure, scored as cheap as an empty one). Fewer
    candidates, less of that selection bias: on the six 2-D tuning files (Hilbert order,
    65,536 cells) DAWA-2D's rectangle error, geo-mean over 18 cells per ε, goes from 1.05 /
    1.03 to 0.77 / 0.85 of the best published algorithm's (docs/histograms-2d.md). The
    privacy argument does not depend on which intervals are candidates (Li et al. use it
    for all intervals and for the size-2^k family alike): the set is fixed and public,
    every candidate's cost is noised alike, and the DP reads nothing else.

    Args:
        x: the REAL histogram in partition order (sorted order for sDAWA).
        eps_p: partition budget spent here.
        eps_f: budget of the later measurement (sets the per-bin penalty).
        dyadic: restrict to bins of size 2^k.
        aligned: restrict further to the aligned dyadic bins (overrides ``dyadic``).
        rng: noise source (None → project CSPRNG).

    Returns:
        Start positions of the bins.
    """
    eps_p = check_positive("eps_p", eps_p)
    eps_f = check_positive("eps_f", eps_f)
    x = np.asarray(x, dtype=np.float64).ravel()
    n = len(x)
    if aligned:
        s, e = aligned_candidates(n)
    else:
        s, e = dyadic_candidates(n) if dyadic else all_candidates(n)
    dev = interval_l1_deviation(x, s, e)
    size = (e - s).astype(np.float64)
    multi = size > 1
    noisy_cost = dev + 1.0 / eps_f
    sens = 2.0 * (1.0 - 1.0 / size[multi])
    noisy_cost[multi] += laplace_noise(1.0, int(multi.sum()), rng=rng) * sens / eps_p
    noisy_cost = np.maximum(noisy_cost, 1.0 / eps_f)
    return optimal_from_candidates(n, s, e, noisy_cost)


def dpcube_partition(y: np.ndarray, xi: float) -> np.ndarray:
    """DPCube's 1-D kd-style splitter on noisy data (Xiao, Gardner, Xiong 2012).

    A node ``[s, e)`` is split at the median of its (clipped) noisy mass while its
    noisy variance ``Σ(ỹ − mean)²/|v|`` exceeds ``xi``. Post-processing only.

    Args:
        y: the initializer's noisy values, in partition order.
        xi: variance threshold ξ (SORTaki §VII tunes ξ = 2/ε_in²).

    Returns:
        Start positions of the leaves, in order.
    """
    xi = check_positive("xi", xi)
    st = PrefixStats(y)
    mass = np.concatenate(([0.0], np.cumsum(np.maximum(np.asarray(y, np.float64).ravel(), 0))))
    starts = []
    stack = [(0, st.n)]
    while stack:
        s, e = stack.pop()
        size = e - s
        if size < 2:
            starts.append(s)
            continue
        var = float(st.sse(np.array([s]), np.array([e]))[0]) / size
        if var <= xi:
            starts.append(s)
            continue
        half = mass[s] + (mass[e] - mass[s]) / 2.0
        m = int(np.searchsorted(mass[s + 1 : e + 1], half, side="left")) + s + 1
        m = min(max(m, s + 1), e - 1)
        stack.append((m, e))
        stack.append((s, m))
    return np.asarray(sorted(starts), dtype=np.int64)
