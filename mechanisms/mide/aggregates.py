"""Aggregate threshold queries Q(Λ, g, C) beyond counts, with explicit sensitivity.

Thesis §5.3 handles counts (sensitivity 1) and notes other aggregates need their own
sensitivity; ch. 6 uses averages (e.g. average fare). Here every aggregate becomes a
:class:`ThresholdQuery` — true values g(D_λ), thresholds c and the L1 sensitivity Δ
under add/remove of one individual's records — that the mechanisms in
:mod:`mechanisms.mide.mechanisms` answer with noise of scale Δ/ε.

* count: each individual contributes at most ``max_contributions`` records per predicate
  set (predicates are mutually exclusive) → Δ = max_contributions.
* sum of a value clipped to [lower, upper] → Δ = max_contributions · max(|lower|, |upper|).
* average > c: rewritten exactly as Σ (x − c) > 0 over the clipped records (for a
  non-empty predicate), a sum with Δ = max_contributions · max over predicates of
  max(upper − c_i, c_i − lower). No noisy division, no bias. The uncertainty width α of
  this "excess sum" is in value·records units: an average-width α_avg corresponds to
  α = α_avg·n for a predicate with n records; with a public lower bound n_min,
  α = α_avg·n_min keeps the average's uncertainty region within 2·α_avg.

Clipping is part of the mechanism (it bounds the contributions) and is applied to the
true data before noise; nothing here draws noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mechanisms.errors import InvalidParameterError, check_positive

__all__ = ["ThresholdQuery", "avg_query", "count_query", "sum_query"]


@dataclass(frozen=True)
class ThresholdQuery:
    """A ready-to-answer threshold query over mutually exclusive predicates.

    Attributes:
        values: true aggregate per predicate (sensitive; never publish).
        thresholds: threshold per predicate.
        sensitivity: L1 sensitivity Δ of ``values`` (one individual added/removed).
        kind: "count" | "sum" | "avg" (for messages and reports).
    """

    values: np.ndarray
    thresholds: np.ndarray
    sensitivity: float
    kind: str = "count"


def _check_bounds(lower: float, upper: float) -> tuple[float, float]:
    lo, hi = float(lower), float(upper)
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise InvalidParameterError(
            f"contribution bounds must be finite with lower < upper, not [{lower!r}, {upper!r}]"
        )
    return lo, hi


def _check_contrib(max_contributions: int) -> int:
    if not isinstance(max_contributions, (int, np.integer)) or max_contributions < 1:
        raise InvalidParameterError(
            f"max_contributions must be an integer >= 1, not {max_contributions!r}"
        )
    return int(max_contributions)


def count_query(
    counts: np.ndarray, thresholds: np.ndarray | float, *, max_contributions: int = 1
) -> ThresholdQuery:
    """``count(λ) > c``: Δ = max_contributions (1 for occupancy: one location per tick)."""
    g = np.asarray(counts, dtype=float).ravel()
    c = np.broadcast_to(np.asarray(thresholds, dtype=float), g.shape).copy()
    return ThresholdQuery(g, c, float(_check_contrib(max_contributions)), "count")


def _records(
    values: np.ndarray, predicate: np.ndarray, n_predicates: int, lower: float, upper: float,
    max_contributions: int,
) -> tuple[float, float, int, int, np.ndarray, np.ndarray]:
    """Validated (lower, upper, max_contributions, n, clipped values, predicate index)."""
    lo, hi = _check_bounds(lower, upper)
    k = _check_contrib(max_contributions)
    n = int(check_positive("n_predicates", n_predicates))
    x = np.clip(np.asarray(values, dtype=float).ravel(), lo, hi)
    p = np.asarray(predicate).ravel()
    if p.shape != x.shape or (p.size and (p.min() < 0 or p.max() >= n)):
        raise InvalidParameterError(f"predicate must give an index in [0, {n}) for every value")
    return lo, hi, k, n, x, p.astype(int)


def _per_predicate_sum(values: np.ndarray, predicate: np.ndarray, n_predicates: int
                       ) -> np.ndarray:
    return np.bincount(predicate, weights=values, minlength=n_predicates)


def sum_query(
    values: np.ndarray, predicate: np.ndarray, n_predicates: int,
    thresholds: np.ndarray | float, *, lower: float, upper: float,
    max_contributions: int = 1,
) -> ThresholdQuery:
    """``sum(x, λ) > c`` over records ``values`` with predicate index ``predicate``.

    Args:
        values: one value per record.
        predicate: predicate index of each record.
        n_predicates: number of predicates.
        thresholds: threshold per predicate (or scalar).
        lower: clip bound (contribution bound) below.
        upper: clip bound above.
        max_contributions: records per individual at most.
    """
    lo, hi, k, n, x, p = _records(values, predicate, n_predicates, lower, upper,
                                  max_contributions)
    g = _per_predicate_sum(x, p, n)
    c = np.broadcast_to(np.asarray(thresholds, dtype=float), g.shape).copy()
    return ThresholdQuery(g, c, k * max(abs(lo), abs(hi)), "sum")


def avg_query(
    values: np.ndarray, predicate: np.ndarray, n_predicates: int,
    thresholds: np.ndarray | float, *, lower: float, upper: float,
    max_contributions: int = 1,
) -> ThresholdQuery:
    """``avg(x, λ) > c`` rewritten as Σ(clip(x) − c_λ) > 0 (see module docstring).

    Returns:
        A query with values = excess sums, thresholds = 0 and the matching Δ. An empty
        predicate has excess sum 0 and is (correctly) not over its threshold.
    """
    lo, hi, k, n, x, p = _records(values, predicate, n_predicates, lower, upper,
                                  max_contributions)
    c = np.broadcast_to(np.asarray(thresholds, dtype=float), (n,)).copy()
    excess = _per_predicate_sum(x - c[p], p, n)
    delta = k * float(np.max(np.maximum(hi - c, c - lo)))
    return ThresholdQuery(excess, np.zeros(n), delta, "avg")
