"""MIDE: accuracy-first threshold queries with a bounded false-negative rate (thesis ch. 5–6).

Stable API for the pipeline (the MIDE agent)::

    from mechanisms.mide import decide

    # algorithm: "tslm" | "ppwlm" | "dppwlm" | "naive"
    result = decide(counts, thresholds, algorithm="dppwlm",
                    beta=0.05, alpha=1.0, epsilon_max=4.0, rng=None,
                    # optional **params: sensitivity=1.0, epsilon_1=1e-5, steps=4,
                    #   fine_steps=3, priors=None,
                    #   value_range=(0, 3 * capacity)  # dppwlm: public bounds, better estimate
                    )
    result.positive        # bool per predicate: returned as over threshold
    result.denied          # True: needed ε > ε_max, nothing returned or spent
    result.epsilon_spent   # worst-case ε charged (public, data-independent)
    result.public()        # the only dict that may leave the system (alerts, logs, Redis)
    result.ex_post         # INTERNAL per-predicate ex-post ε — ledger only, NEVER publish

``counts`` and ``thresholds`` are 1-D arrays over mutually exclusive predicates (e.g. the
locations of one tick, or locations × hourly windows). Record ``result`` with
:func:`mechanisms.mide.accounting.record_result` in the internal
:class:`mechanisms.accounting.PredicateLedger` and charge ``epsilon_spent`` to the budget.
β-FNR holds per predicate for "tslm", "ppwlm" and "dppwlm"; "naive" is the baseline
without it. The unit of privacy is the one of the counts' sensitivity (event-level: one
device, one tick, for occupancy).

Also here:

* :mod:`~mechanisms.mide.privrelax` — PrivRelax / NoiseDown (gradual release).
* :mod:`~mechanisms.mide.entropy` — min-entropy γ(Θ) (Def. 5.4), exact.
* :mod:`~mechanisms.mide.hardness` — why γ(Θ) has no polynomial exact algorithm for
  every Θ unless P = NP (subset-sum reductions, with instance builders).
* :mod:`~mechanisms.mide.accounting` — records results in the predicate-wise ledger
  (:class:`mechanisms.accounting.PredicateLedger`, Def. 5.2–5.3,
  Thm 5.1–5.3); the internal home of ``ex_post``.
* :mod:`~mechanisms.mide.aggregates` — count / sum / average threshold queries with
  explicit contribution bounds and sensitivity.
* :mod:`~mechanisms.mide.complex` — AND/OR trees of threshold queries (ch. 6), naive and
  optimal β splits (eq. 6.21).
* :mod:`~mechanisms.mide.language` — a small readable query language, e.g.
  ``count(location) > 0.8*capacity AND avg_dwell(location) > 30min``, with per-sub-query
  filters: ``count(location WHERE kind = 'laptop') > 0.8*capacity``.
"""

from mechanisms.mide.entropy import min_entropy, posterior_bounds
from mechanisms.mide.mechanisms import (
    ALGORITHMS,
    MideResult,
    decide,
    dppwlm,
    naive_lm,
    ppwlm,
    tslm,
)
from mechanisms.mide.privrelax import privrelax

__all__ = [
    "ALGORITHMS",
    "MideResult",
    "decide",
    "dppwlm",
    "min_entropy",
    "naive_lm",
    "posterior_bounds",
    "ppwlm",
    "privrelax",
    "tslm",
]
