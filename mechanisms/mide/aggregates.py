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

Filters (thesis §6.1, the optional filter f and D^f_λ). Every record-level builder —
:func:`record_count_query`, :func:`sum_query`, :func:`avg_query` — takes ``where``: a
:class:`Filter` (an AND of :class:`Comparison` terms such as ``kind = 'laptop'`` or
``dwell > 600`` over the record ``fields``) or a per-record boolean mask. The filter is
applied first, then clipping, then the aggregation. **Sensitivity is unchanged**: a
filter is a fixed, data-independent predicate on each record, so adding or removing one
individual's records changes at most those records' filtered terms — never more than the
unfiltered aggregate can change. A mask must therefore be computed record by record by
a fixed rule (never from aggregates of the data, e.g. "dwell above the median", which
would let one record change other records' membership). For ``avg``, ``n_min`` (the
public lower bound on records per predicate) refers to the records *after* the filter.

Clipping is part of the mechanism (it bounds the contributions) and is applied to the
true data before noise; nothing here draws noise.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from mechanisms.errors import InvalidParameterError, check_positive

__all__ = [
    "COMPARISONS",
    "Comparison",
    "Filter",
    "ThresholdQuery",
    "avg_query",
    "count_query",
    "filter_mask",
    "record_count_query",
    "sum_query",
]

#: Comparison operators of a filter term → the (elementwise) operator evaluating it.
COMPARISONS = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
               ">": operator.gt, ">=": operator.ge}
_TEXT_OPS = ("=", "!=")


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


@dataclass(frozen=True)
class Comparison:
    """One filter term ``field op value``: a number (durations in seconds) or a text.

    Text values can only be compared with ``=`` / ``!=`` (exact, case-sensitive match).
    """

    field: str
    op: str
    value: float | str

    def __post_init__(self) -> None:
        if not isinstance(self.field, str) or not self.field:
            raise InvalidParameterError(
                f"filter field must be a non-empty name, not {self.field!r}")
        if self.op not in COMPARISONS:
            raise InvalidParameterError(
                f"filter operator must be one of {list(COMPARISONS)}, not {self.op!r}")
        if isinstance(self.value, str):
            if self.op not in _TEXT_OPS:
                raise InvalidParameterError(
                    f"filter operator on text {self.value!r} must be = or !=, not {self.op!r}")
        elif isinstance(self.value, (bool, np.bool_)) or not isinstance(
                self.value, (int, float, np.integer, np.floating)) or not np.isfinite(
                self.value):
            raise InvalidParameterError(
                f"filter value must be a finite number or a text, not {self.value!r}")


@dataclass(frozen=True)
class Filter:
    """A conjunction of :class:`Comparison` terms, evaluated per record (thesis §6.1)."""

    terms: tuple[Comparison, ...]

    def __post_init__(self) -> None:
        if not self.terms or not all(isinstance(t, Comparison) for t in self.terms):
            raise InvalidParameterError(
                f"filter terms must be a non-empty tuple of Comparison, not {self.terms!r}")

    @property
    def fields(self) -> tuple[str, ...]:
        """Record fields the filter reads, in order of first use."""
        return tuple(dict.fromkeys(t.field for t in self.terms))


def _term_mask(term: Comparison, column: np.ndarray, available: list[str]) -> np.ndarray:
    is_text = column.dtype.kind in "US" or (
        column.dtype.kind == "O" and any(isinstance(v, str) for v in column.ravel()))
    if isinstance(term.value, str) and not is_text:
        raise InvalidParameterError(
            f"filter field {term.field!r} is numeric, compare it with a number, not "
            f"{term.value!r} (fields: {available})")
    if not isinstance(term.value, str) and is_text:
        raise InvalidParameterError(
            f"filter field {term.field!r} holds text, compare it with a quoted text such as "
            f"'laptop', not {term.value!r} (fields: {available})")
    return np.asarray(COMPARISONS[term.op](column, term.value), dtype=bool)


def filter_mask(
    where: Filter | np.ndarray | None, n_records: int,
    fields: Mapping[str, np.ndarray] | None = None,
) -> np.ndarray:
    """Boolean mask of the records that pass ``where`` (all records for None).

    Args:
        where: a :class:`Filter` over ``fields``, a per-record boolean mask, or None.
        n_records: number of records.
        fields: record field name → one entry per record (needed for a :class:`Filter`).

    Raises:
        InvalidParameterError: a field the filter names is missing, has the wrong length
            or type for its comparison, or the mask is not boolean of length n_records.
    """
    if where is None:
        return np.ones(n_records, dtype=bool)
    if isinstance(where, Filter):
        cols = dict(fields or {})
        available = sorted(cols)
        terms = []
        for term in where.terms:
            if term.field not in cols:
                raise InvalidParameterError(
                    f"filter field must be one of the record fields {available}, not "
                    f"{term.field!r}")
            col = np.asarray(cols[term.field]).ravel()
            if col.size != n_records:
                raise InvalidParameterError(
                    f"filter field {term.field!r} must have one entry per record "
                    f"({n_records}), not {col.size}")
            terms.append(_term_mask(term, col, available))
        return np.logical_and.reduce(terms)
    m = np.asarray(where)
    if m.dtype != bool or m.shape != (n_records,):
        raise InvalidParameterError(
            f"where must be a Filter or a boolean mask of shape ({n_records},), not "
            f"{m.dtype} of shape {m.shape}")
    return m


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


def _thresholds(thresholds: np.ndarray | float, n: int) -> np.ndarray:
    """One threshold per predicate (a scalar is repeated), as a writable float array."""
    return np.broadcast_to(np.asarray(thresholds, dtype=float), (n,)).copy()


def count_query(
    counts: np.ndarray, thresholds: np.ndarray | float, *, max_contributions: int = 1
) -> ThresholdQuery:
    """``count(λ) > c``: Δ = max_contributions (1 for occupancy: one location per tick)."""
    g = np.asarray(counts, dtype=float).ravel()
    c = _thresholds(thresholds, g.size)
    return ThresholdQuery(g, c, float(_check_contrib(max_contributions)), "count")


def _predicate_index(predicate: np.ndarray, n_predicates: int, n_records: int
                     ) -> tuple[int, np.ndarray]:
    """Validated (n, predicate index per record)."""
    n = int(check_positive("n_predicates", n_predicates))
    p = np.asarray(predicate).ravel()
    if p.shape != (n_records,) or (p.size and (p.min() < 0 or p.max() >= n)):
        raise InvalidParameterError(f"predicate must give an index in [0, {n}) for every value")
    return n, p.astype(int)


def _records(
    values: np.ndarray, predicate: np.ndarray, n_predicates: int, lower: float, upper: float,
    max_contributions: int, where: Filter | np.ndarray | None,
    fields: Mapping[str, np.ndarray] | None,
) -> tuple[float, float, int, int, np.ndarray, np.ndarray]:
    """Validated (lower, upper, max_contributions, n, clipped filtered values, index)."""
    lo, hi = _check_bounds(lower, upper)
    k = _check_contrib(max_contributions)
    x = np.asarray(values, dtype=float).ravel()
    n, p = _predicate_index(predicate, n_predicates, x.size)
    keep = filter_mask(where, x.size, fields)  # filter first, then clip
    return lo, hi, k, n, np.clip(x[keep], lo, hi), p[keep]


def record_count_query(
    predicate: np.ndarray, n_predicates: int, thresholds: np.ndarray | float, *,
    where: Filter | np.ndarray | None = None, fields: Mapping[str, np.ndarray] | None = None,
    max_contributions: int = 1,
) -> ThresholdQuery:
    """``count(λ WHERE f) > c`` over records with predicate index ``predicate``.

    Δ = max_contributions, as for :func:`count_query`: the filter is a fixed per-record
    predicate, so adding/removing one record changes at most one filtered term by 1.

    Args:
        predicate: predicate index of each record.
        n_predicates: number of predicates.
        thresholds: threshold per predicate (or scalar).
        where: optional :class:`Filter` over ``fields`` or per-record boolean mask.
        fields: record field name → one entry per record (for a :class:`Filter`).
        max_contributions: records per individual at most.
    """
    k = _check_contrib(max_contributions)
    p_raw = np.asarray(predicate).ravel()
    n, p = _predicate_index(p_raw, n_predicates, p_raw.size)
    g = np.bincount(p[filter_mask(where, p.size, fields)], minlength=n).astype(float)
    c = _thresholds(thresholds, g.size)
    return ThresholdQuery(g, c, float(k), "count")


def _per_predicate_sum(values: np.ndarray, predicate: np.ndarray, n_predicates: int
                       ) -> np.ndarray:
    return np.bincount(predicate, weights=values, minlength=n_predicates)


def sum_query(
    values: np.ndarray, predicate: np.ndarray, n_predicates: int,
    thresholds: np.ndarray | float, *, lower: float, upper: float,
    max_contributions: int = 1, where: Filter | np.ndarray | None = None,
    fields: Mapping[str, np.ndarray] | None = None,
) -> ThresholdQuery:
    """``sum(x, λ WHERE f) > c`` over records ``values`` with predicate index ``predicate``.

    Δ = max_contributions · max(|lower|, |upper|) with or without a filter: the filter is
    a fixed per-record predicate, so adding/removing one record changes at most one
    filtered, clipped term.

    Args:
        values: one value per record.
        predicate: predicate index of each record.
        n_predicates: number of predicates.
        thresholds: threshold per predicate (or scalar).
        lower: clip bound (contribution bound) below.
        upper: clip bound above.
        max_contributions: records per individual at most.
        where: optional :class:`Filter` over ``fields`` or per-record boolean mask,
            applied to the raw records before clipping.
        fields: record field name → one entry per record (for a :class:`Filter`).
    """
    lo, hi, k, n, x, p = _records(values, predicate, n_predicates, lower, upper,
                                  max_contributions, where, fields)
    g = _per_predicate_sum(x, p, n)
    c = _thresholds(thresholds, g.size)
    return ThresholdQuery(g, c, k * max(abs(lo), abs(hi)), "sum")


def avg_query(
    values: np.ndarray, predicate: np.ndarray, n_predicates: int,
    thresholds: np.ndarray | float, *, lower: float, upper: float,
    max_contributions: int = 1, where: Filter | np.ndarray | None = None,
    fields: Mapping[str, np.ndarray] | None = None,
) -> ThresholdQuery:
    """``avg(x, λ WHERE f) > c`` rewritten as Σ(clip(x) − c_λ) > 0 (see module docstring).

    Arguments as :func:`sum_query`. The filter keeps Δ unchanged (one record added or
    removed changes at most one filtered excess term, by ≤ max(upper − c, c − lower)).

    Returns:
        A query with values = excess sums, thresholds = 0 and the matching Δ. An empty
        predicate has excess sum 0 and is (correctly) not over its threshold.
    """
    lo, hi, k, n, x, p = _records(values, predicate, n_predicates, lower, upper,
                                  max_contributions, where, fields)
    c = _thresholds(thresholds, n)
    excess = _per_predicate_sum(x - c[p], p, n)
    delta = k * float(np.max(np.maximum(hi - c, c - lo)))
    return ThresholdQuery(excess, np.zeros(n), delta, "avg")
