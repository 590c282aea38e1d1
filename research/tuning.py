"""Tuning: the ε (or TTL) a utility target needs (thesis §4.6.2, Table 4.2).

The command line is :mod:`research.tune`.

Given a mechanism, a utility function (heatmap colour agreement by default, or any
analysis task of :mod:`research.tasks`) and a target, find the smallest privacy
parameter whose mean utility over repeated runs meets the target — day (07:00–19:00)
and night separately — and report the spread σ_u (the standard deviation of the
per-tick utility over time, in percentage points, averaged over runs: the thesis'
"average variance in utility over time and space").

Search (:func:`search`): utility grows with ε (less noise) and with the TTL (fewer
re-salted duplicates), so the smallest parameter meeting the target is found by
bisection on a log scale between ``lo`` and ``hi``. Runs use common random numbers
(run ``r`` always draws from seed ``r``), which makes the mean utility a smooth,
essentially monotone function of the parameter, so bisection converges to the
crossing (the thesis reports utilities within ±0.2 % of the target). TTL is
deterministic (one run).

TTL rows carry the label :data:`TTL_GUARANTEE`: TTL-salt has **no formal privacy
guarantee**.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.pseudonym import TTL_GUARANTEE
from mechanisms.registry import without_guarantee

log = logging.getLogger(__name__)

PERIODS = ("day", "night")

#: TTL values tried (s): TTL utility is deterministic and each evaluation re-counts the
#: whole event stream, so the TTL is searched on this grid (bisection over its indices).
TTL_GRID_S: tuple[float, ...] = (1.0, 10.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 86400.0)


@dataclass(frozen=True)
class SearchResult:
    """Outcome of :func:`search`."""

    param: float  # smallest parameter meeting the target (nan if none in [lo, hi])
    utility: float  # mean utility at ``param``
    runs: tuple[float, ...]  # per-run utilities at ``param``
    reached: bool
    evaluations: int


def search(
    utility: Callable[[float], Sequence[float] | np.ndarray],
    target: float,
    lo: float,
    hi: float,
    *,
    rel_tol: float = 0.01,
    max_evals: int = 40,
) -> SearchResult:
    """Smallest parameter in [lo, hi] whose mean utility is >= ``target`` (log bisection).

    Args:
        utility: parameter → per-run utilities (assumed to grow with the parameter).
        target: utility to reach (same units as ``utility``).
        lo: smallest parameter tried (> 0).
        hi: largest parameter tried.
        rel_tol: stop when hi/lo − 1 <= rel_tol.
        max_evals: cap on utility evaluations.

    Returns:
        A :class:`SearchResult`; ``reached`` is False (param = nan) when even ``hi``
        misses the target, and param = lo when ``lo`` already meets it.
    """
    lo, hi = check_positive("lo", lo), check_positive("hi", hi)
    if not lo < hi:
        raise InvalidParameterError(f"lo must be < hi, not {lo!r} >= {hi!r}")
    cache: dict[float, np.ndarray] = {}

    def u(x: float) -> np.ndarray:
        if x not in cache:
            cache[x] = np.asarray(utility(x), dtype=float).ravel()
            log.debug("utility(%g) = %.4f", x, cache[x].mean())
        return cache[x]

    if u(hi).mean() < target:
        return SearchResult(math.nan, float(u(hi).mean()), tuple(u(hi)), False, len(cache))
    if u(lo).mean() >= target:
        return SearchResult(lo, float(u(lo).mean()), tuple(u(lo)), True, len(cache))
    while hi / lo - 1 > rel_tol and len(cache) < max_evals:
        mid = math.sqrt(lo * hi)
        if u(mid).mean() >= target:
            hi = mid
        else:
            lo = mid
    return SearchResult(hi, float(u(hi).mean()), tuple(u(hi)), True, len(cache))


def grid_search(
    utility: Callable[[float], Sequence[float] | np.ndarray],
    target: float,
    grid: Sequence[float],
) -> SearchResult:
    """Smallest value of an increasing ``grid`` whose mean utility is >= ``target``.

    Bisection over the grid indices (utility assumed to grow along the grid).
    """
    grid = sorted(float(g) for g in grid)
    if not grid:
        raise InvalidParameterError("grid must not be empty")
    cache: dict[float, np.ndarray] = {}

    def u(i: int) -> np.ndarray:
        x = grid[i]
        if x not in cache:
            cache[x] = np.asarray(utility(x), dtype=float).ravel()
        return cache[x]

    hi = len(grid) - 1
    if u(hi).mean() < target:
        return SearchResult(math.nan, float(u(hi).mean()), tuple(u(hi)), False, len(cache))
    lo = 0
    while lo < hi:
        mid = (lo + hi) // 2
        if u(mid).mean() >= target:
            hi = mid
        else:
            lo = mid + 1
    return SearchResult(grid[hi], float(u(hi).mean()), tuple(u(hi)), True, len(cache))


@dataclass(frozen=True)
class TuneRow:
    """One line of the Table 4.2 equivalent."""

    mechanism: str
    period: str
    target: float
    param_name: str  # "epsilon" or "ttl_s"
    param: float
    utility: float
    sigma_u: float  # percentage points
    reached: bool
    guarantee: str


def table_4_2(
    mechanisms: Sequence[str],
    targets: Sequence[float],
    evaluator: Callable[[str, float, str], tuple[np.ndarray, float]],
    *,
    ranges: dict[str, tuple[float, float]] | None = None,
    progress: Callable[[str], None] | None = None,
    periods: Sequence[str] = PERIODS,
) -> list[TuneRow]:
    """Tune every (mechanism, period, target).

    Args:
        mechanisms: mechanism names (``"ttl"`` is tuned on ``ttl_s`` over
            :data:`TTL_GRID_S` unless ``ranges`` has it; the others on ε).
        targets: utility targets in [0, 1].
        evaluator: (mechanism, param, period) → (per-run utilities, σ_u in %-points).
        ranges: per-mechanism (lo, hi) search bounds.
        progress: called with a short description before each search.
        periods: periods the evaluator understands (day and night by default).

    Returns:
        Rows in (mechanism, period, target) order.
    """
    ranges = ranges or {}
    rows = []
    for mech in mechanisms:
        is_ttl = without_guarantee(mech)
        lo, hi = ranges.get(mech, (1.0, 86400.0) if is_ttl else (1e-3, 50.0))
        for period in periods:
            sig: dict[float, float] = {}

            def util(
                x: float, mech: str = mech, period: str = period, sig: dict[float, float] = sig
            ) -> np.ndarray:
                runs, sigma = evaluator(mech, x, period)
                sig[x] = sigma
                return runs

            for target in targets:
                if progress:
                    progress(f"{mech} {period} {target:.0%}")
                if is_ttl and mech not in ranges:
                    res = grid_search(util, target, TTL_GRID_S)
                else:
                    res = search(util, target, lo, hi)
                rows.append(
                    TuneRow(
                        mechanism=mech,
                        period=period,
                        target=target,
                        param_name="ttl_s" if is_ttl else "epsilon",
                        param=res.param,
                        utility=res.utility,
                        sigma_u=sig.get(res.param, math.nan) if res.reached else math.nan,
                        reached=res.reached,
                        guarantee=(
                            TTL_GUARANTEE if is_ttl else f"ε-DP (event-level), ε={res.param:.3g}"
                        ),
                    )
                )
    return rows


def rows_table(rows: Sequence[TuneRow]) -> tuple[list[str], list[list[object]]]:
    """Headers and rows for a report table."""
    headers = [
        "mechanism",
        "period",
        "target",
        "parameter",
        "value",
        "utility",
        "σ_u (%)",
        "guarantee",
    ]
    body = [
        [
            r.mechanism,
            r.period,
            f"{r.target:.0%}",
            r.param_name,
            r.param if r.reached else "not reached",
            r.utility,
            r.sigma_u,
            r.guarantee,
        ]
        for r in rows
    ]
    return headers, body
