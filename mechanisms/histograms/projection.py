"""Workload-metric projection onto non-negative histograms (post-processing, never worse).

A released histogram ``x̂`` answers a linear workload W (the user's queries) with error
``‖W x̂ − W x‖₂`` — the error measure of DPBench (Hay et al. SIGMOD 2016) up to the
constant ``1/(q·scale)``. The true histogram lies in the closed convex set
``C = {z : z ≥ 0}`` (counts are never negative: public knowledge). The projection of
``x̂`` onto C in the workload's own (semi-)norm ``‖v‖_W = ‖W v‖₂``,

    ``P(x̂) = argmin_{z ≥ 0} ‖W (z − x̂)‖₂²``,

is non-expansive towards every point of C: the projection's variational inequality
``⟨x̂ − P, x − P⟩_W ≤ 0`` for ``x ∈ C`` gives
``‖x̂ − x‖_W² = ‖x̂ − P‖_W² + ‖P − x‖_W² − 2⟨x̂ − P, x − P⟩_W ≥ ‖P − x‖_W²``. So the
projected release's workload error is **never larger** than the release's — on every
data set, ε and noise draw, not only on average (the standard argument for projecting
onto a convex set that holds the truth; Hay, Rastogi, Miklau & Suciu, VLDB 2010, use
it for their ordering constraints; Lee, Wang & Kifer, KDD 2015, for general convex
constraints). It reads no data: privacy is the release's.

Why the workload's norm and not the measurements': non-negative least squares on a
hierarchy's *measurements* (Euclidean in the noisy node sums) helps the cells but biases
every empty leaf upwards, and prefixes add those biases up — measured 2–7× worse on
DPBench prefixes (NETTRACE, INCOME at 4096 bins); clamping the cells does the same.

Three workloads, each solved exactly in O(n) by pool-adjacent-violators
(:func:`scipy.optimize.isotonic_regression`) on the prefix sums ``P_i = Σ_{j<i} z_j``
(``z ≥ 0`` ⟺ P non-decreasing from ``P_0 = 0``):

* identity (every cell): the norm is Euclidean in the cells, P clamps each cell at 0;
* all prefixes ``[0, i)``, i = 1…n: the norm is Euclidean in ``P_1 … P_n`` with
  ``P_0 = 0`` fixed, so the projection is the isotonic regression of the prefix sums
  clipped at 0 (clipping an isotonic fit at a constant bound gives the bounded fit);
* ranges: projected in the norm of **all** ranges ``[l, h)``, 0 ≤ l < h ≤ n — the
  family DPBench's random-range workloads are sampled from. By
  ``Σ_{l<h} (P_h − P_l)² = (n + 1)·Σ_i (P_i − P̄)²`` that norm is Euclidean in the
  prefix sums ``P_0 … P_n`` up to a common shift, so the projection is the isotonic
  regression of ``(0, P̂_1, …, P̂_n)`` minus its first value. The never-worse guarantee
  is then exact for the all-range error and holds on average over a random sample of
  ranges; on the 2,000-range DPBench workloads it was never worse in any of 216 trials
  (HB, DAWA, HDMM on NETTRACE, INCOME, HEPTH, MEDCOST; docs/histograms-1d.md).
"""

from __future__ import annotations

import numpy as np
from scipy import optimize

from mechanisms.errors import InvalidParameterError

__all__ = ["project_nonnegative"]


def project_nonnegative(
    estimate: np.ndarray, workload: tuple[np.ndarray, np.ndarray] | None = None
) -> np.ndarray:
    """POST-PROCESSING: ``estimate`` projected onto ``z ≥ 0`` in the workload's norm.

    Args:
        estimate: a released 1-D histogram (any real values).
        workload: range queries ``(lo, hi)`` (exclusive ``hi``); None: identity. A
            workload of every cell is identity, one of every prefix ``[0, i)`` is prefix,
            any other is projected in the norm of all ranges (module docstring).

    Returns:
        The projection (float64, every cell ≥ 0).
    """
    xh = np.asarray(estimate, np.float64).ravel()
    n = len(xh)
    if workload is None:
        return np.maximum(xh, 0.0)
    lo, hi = (np.asarray(v, np.int64).ravel() for v in workload)
    if len(lo) != len(hi) or np.any(lo < 0) or np.any(hi > n) or np.any(lo >= hi):
        raise InvalidParameterError(f"workload must be ranges 0 <= lo < hi <= {n}")
    if np.all(hi - lo == 1) and len(np.unique(lo)) == n:
        return np.maximum(xh, 0.0)
    prefix = np.cumsum(xh)
    if np.all(lo == 0) and len(np.unique(hi)) == n:
        fit = np.concatenate(([0.0], np.maximum(optimize.isotonic_regression(prefix).x, 0.0)))
    else:
        fit = optimize.isotonic_regression(np.concatenate(([0.0], prefix))).x
    return np.maximum(np.diff(fit), 0.0)
