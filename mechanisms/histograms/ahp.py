"""AHP's greedy clustering as published (Zhang, Chen, Xu, Meng, Xie, SDM 2014, §4.2).

AHP (the ``AHP`` configuration of :mod:`~mechanisms.histograms.sortaki`) spends
``ε₁ = ρ·ε`` on a noisy histogram, zeroes values at or below ``η·ln(n)/ε₁``, sorts the
result and clusters the sorted values greedily; every cluster's sum is then measured
with ``ε₂ = (1 − ρ)·ε`` and spread evenly. This module is the clustering step only: it
reads the *noisy* sorted values and no data, so it is post-processing of the ε₁
measurement and takes no rng.

Merge rule (§4.2, "greedy clustering"): with the cluster error
``err(C) = SSE(C) + 2/(|C|·ε₂²)`` (squared approximation error of replacing the values by
their mean plus the variance of the mean of ``Lap(1/ε₂)`` over |C| values), the next value
``y_j`` starts a new cluster iff ``err(C ∪ {j}) ≥ err(C) + err*(j)``, where the
look-ahead ``err*(j) = min_{l ≥ j} (y_j − mean(y_j..y_l))² + 2/((l − j + 1)²·ε₂²)`` is
the best per-value error ``y_j`` could get in a cluster that starts at ``j``; the scan of
``l`` stops early as in the paper (p. 6) when the growth of the first term exceeds the
remaining possible decrease of the second. The SORTaki greedy partitioner
(:func:`~mechanisms.histograms.partitioners.greedy_partition`) compares against the
error of ``y_j`` *alone* instead, which merges far more.

Defaults ρ = 0.85 and η = 0.35 are those of the DPBench implementation (Hay et al.,
SIGMOD 2016), which the authors' code uses for ε = 0.1.
"""

from __future__ import annotations

import numpy as np

from mechanisms.errors import check_positive

__all__ = ["AHP_RATIO", "AHP_ETA", "ahp_threshold_published", "ahp_cluster"]

#: share ρ of ε for the noisy histogram (DPBench default)
AHP_RATIO = 0.85
#: threshold factor η of ``η·ln(n)/ε₁`` (DPBench default)
AHP_ETA = 0.35


def ahp_threshold_published(n: int, eps1: float, eta: float = AHP_ETA) -> float:
    """AHP's threshold ``η·ln(n)/ε₁`` (Zhang et al. 2014 §4.1)."""
    return eta * float(np.log(max(n, 2))) / check_positive("eps1", eps1)


def _err_star(y: np.ndarray, c1: np.ndarray, j: int, eps2: float) -> float:
    """``err*(j)``: the best look-ahead error of value j in a cluster starting at j.

    The scan over l stops at the paper's early-termination test; it is evaluated on
    windows of doubling length (same result as the full scan, far fewer operations).
    """
    n = len(y)
    tail = 2.0 / ((n - j + 1) ** 2 * eps2**2)
    width = 32
    while True:
        end = min(n, j + width)
        length = np.arange(1, end - j + 1, dtype=np.float64)
        mean = (c1[j + 1 : end + 1] - c1[j]) / length
        e1 = (y[j] - mean) ** 2
        e2 = 2.0 / (length**2 * eps2**2)
        if end - j > 1:
            # stop at the first l > j with e1[l] − e1[l−1] ≥ e2[l−1] − 2/((n−j+1)²ε₂²)
            stop = np.flatnonzero(e1[1:] - e1[:-1] >= e2[:-1] - tail)
            if len(stop):
                k = int(stop[0]) + 1
                return float(np.min(e1[:k] + e2[:k]))
        if end == n:
            return float(np.min(e1 + e2))
        width *= 2


def ahp_cluster(y_sorted: np.ndarray, eps2: float) -> np.ndarray:
    """AHP's greedy clustering of sorted noisy values (post-processing; no rng).

    Args:
        y_sorted: the thresholded noisy values in sorted order.
        eps2: the budget of the later cluster measurement ε₂.

    Returns:
        Start positions of the clusters.
    """
    eps2 = check_positive("eps2", eps2)
    y = np.asarray(y_sorted, dtype=np.float64).ravel()
    n = len(y)
    c1 = np.concatenate(([0.0], np.cumsum(y)))
    c2 = np.concatenate(([0.0], np.cumsum(y * y)))

    def err(i: int, j: int) -> float:  # cluster [i, j] inclusive
        length = j - i + 1
        s = c1[j + 1] - c1[i]
        sse = c2[j + 1] - c2[i] - s * s / length
        return sse + 2.0 / (length * eps2**2)

    starts = [0]
    i = 0
    for j in range(1, n):
        grow = err(i, j) - err(i, j - 1)
        # err* > 0, so a non-positive growth always merges (skips the look-ahead scan)
        if grow > 0 and grow >= _err_star(y, c1, j, eps2):
            starts.append(j)
            i = j
    return np.asarray(starts, dtype=np.int64)
