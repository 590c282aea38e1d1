"""Predicate-wise DP accounting for MIDE results (thesis §5.2.1: Def. 5.2–5.3, Thm 5.1–5.3).

The ledger itself is :class:`mechanisms.accounting.PredicateLedger` (one per set of
mutually exclusive predicates, e.g. a site's locations): per-predicate ε, composition by
Thm 5.2 (records on the same atoms add ε; unions of atoms via ``record_partition``),
ex-post DP = max over predicates (Thm 5.3). This module connects MIDE results to it and
adds the min-entropy view (Def. 5.4).

**Internal only.** The ex-post vectors are data-dependent; publishing them (or the
min-entropy computed from them) breaks the ε_max-DP guarantee. The worst-case
``MideResult.epsilon_spent`` is what budgets (``mechanisms.accounting.Accountant``) are
charged with; it is data-independent and public.
"""

from __future__ import annotations

import numpy as np

from mechanisms.accounting import PredicateEntry, PredicateLedger
from mechanisms.mide.entropy import min_entropy
from mechanisms.mide.mechanisms import MideResult

__all__ = ["PredicateLedger", "ledger_min_entropy", "record_result"]


def record_result(
    ledger: PredicateLedger, result: MideResult, *, tick: int | None = None,
    label: str | None = None,
) -> PredicateEntry | None:
    """Record a MIDE answer's ex-post per-predicate ε (Def. 5.3) in the internal ledger.

    Args:
        ledger: the predicate-wise ledger over the query's predicates (same order).
        result: the MIDE answer.
        tick: the tick (or window) of the query; records at one tick compose (Thm 5.2).
        label: mechanism label (default ``"mide:<algorithm>"``).

    Returns:
        The ledger entry, or None for a denied query (nothing was spent).
    """
    if result.denied:
        return None
    # the ledger's cap (if any) is checked on the public worst case, never on ex_post
    return ledger.record(result.ex_post, mechanism=label or f"mide:{result.algorithm}",
                         tick=tick, ex_post=True, worst_case=float(result.epsilon_spent))


def ledger_min_entropy(ledger: PredicateLedger, tick: int | None = None,
                       priors: np.ndarray | None = None) -> float:
    """INTERNAL: γ(Θ) of the composed per-predicate ε at ``tick`` (Def. 5.4)."""
    return min_entropy(ledger.epsilons(tick), priors)
