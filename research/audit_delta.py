"""Randomly opened regions, thesis §4.6.1 Figs 4.3–4.6 (issue 16 item 4, part).

``occustream audit --delta-study`` (Python API: :func:`delta_study`). For each δ the
attacker knows the location of about δ of the people: locations are opened in a random
order (seeded) until the opened ones hold ≥ δ of the population expected by the prior
of the attacked day (training-day means per time of day; the thesis opens "regions
randomly" so that the attacker knows δ of the locations of people). Then, for the
people in closed regions:

* ``prior`` (Fig. 4.3): people localised by the conditioned prior alone, per class
  (every person, no advantage filter — it *is* the baseline);
* ``laplace-known`` at each ε and ``true`` (ε = ∞) (Fig. 4.4): posterior eq. 4.4 with
  the known Laplace density, counted only where it beats the prior's class and the
  guess is right (:func:`research.attacker.localized_by_class`);
* ``dp-bound`` at each ε (Fig. 4.5): the worst-case ε-DP bound (§4.4.2);
* ``laplace-kde`` at each ε for the largest δ (Fig. 4.6 bottom): f(y|z) learned by
  Gaussian KDE (bandwidth scale 0.1) from a separate training release.

Each cell is person-ticks per confidence class over the attacked day, averaged over
``runs`` noise draws. Everything reads true counts: a research tool, nothing released.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mechanisms.errors import InvalidParameterError
from research import evaluate as ev
from research.attacker import (
    CONFIDENCE_LABELS,
    LaplaceLikelihood,
    closed_total,
    condition_prior,
    dp_worst_case_bound,
    fit_conditional_kde,
    localized_by_class,
    noisy_posterior,
    priors,
    true_count_posterior,
)

DELTAS = (0.0, 0.5, 0.9)
EPSILONS = (0.1, 1.0, 5.0)
_TRAIN = 20_000  # rng stream index of the KDE training releases


def random_open_mask(prior_share: np.ndarray, delta: float, rng: np.random.Generator
                     ) -> np.ndarray:
    """Open locations in random order until they hold ≥ ``delta`` of ``prior_share``.

    Args:
        prior_share: expected share of the population per location (sums to 1).
        delta: target share in [0, 1).
        rng: generator for the order (a public choice of the experiment, not DP noise).
    """
    if not 0.0 <= delta < 1.0:
        raise InvalidParameterError(f"delta must be in [0, 1), not {delta!r}")
    mask = np.zeros(prior_share.size, dtype=bool)
    if delta == 0.0:
        return mask
    order = rng.permutation(prior_share.size)
    cum = np.cumsum(prior_share[order])
    k = int(np.searchsorted(cum, delta, side="left")) + 1
    mask[order[:k]] = True
    return mask


def delta_study(
    data: ev.EvalData,
    *,
    deltas: Sequence[float] = DELTAS,
    epsilons: Sequence[float] = EPSILONS,
    runs: int = 5,
    seed: int = 0,
    bandwidth_scale: float = 0.1,
) -> list[dict[str, Any]]:
    """Rows (delta, method, epsilon, opened, people per class, total) for Figs 4.3–4.6."""
    if runs < 1:
        raise InvalidParameterError(f"runs must be >= 1, not {runs!r}")
    train, evm = ~data.eval_mask, data.eval_mask
    prior = priors(data.true[train], data.slot[train], data.slots_per_day)[data.slot[evm]]
    true_eval = data.true[evm]
    share = data.true[train].sum(axis=0).astype(float)
    share = share / max(share.sum(), 1.0)
    rows: list[dict[str, Any]] = []
    zero = np.zeros_like(prior)

    def add(delta: float, method: str, eps: float, mask: np.ndarray, per: np.ndarray) -> None:
        tot = per.sum(axis=0) if per.ndim == 2 else per
        rows.append({"delta": delta, "method": method, "epsilon": eps,
                     "opened": int(mask.sum()), "per_tick": per,
                     **{f"p {c}": float(v) for c, v in zip(CONFIDENCE_LABELS, tot, strict=True)},
                     "p > 0.5": float(tot[3:].sum())})

    kde: dict[float, Any] = {}
    for k, delta in enumerate(deltas):
        mask = random_open_mask(share, float(delta), np.random.default_rng([seed, 1, k]))
        pc = condition_prior(prior, mask)
        m_closed = closed_total(true_eval, mask)
        add(delta, "prior", math.nan, mask, localized_by_class(pc, true_eval, zero, mask))
        add(delta, "true", math.inf, mask,
            localized_by_class(true_count_posterior(true_eval, mask), true_eval, pc, mask))
        for eps in epsilons:
            posts = [noisy_posterior(ev.release(data, "laplace", eps,
                                                rng=np.random.default_rng([seed, 2, r]))[evm],
                                     pc, m_closed, LaplaceLikelihood(eps)) for r in range(runs)]
            add(delta, "laplace-known", eps, mask, np.mean(
                [localized_by_class(q, true_eval, pc, mask) for q in posts], axis=0))
            bound = np.where(~mask, dp_worst_case_bound(pc, eps), 0.0)
            add(delta, "dp-bound", eps, mask, localized_by_class(bound, true_eval, pc, mask))
            if delta == max(deltas):
                if eps not in kde:
                    tr = ev.release(data, "laplace", eps,
                                    rng=np.random.default_rng([seed, _TRAIN]))
                    kde[eps] = fit_conditional_kde(data.true[train], tr[train],
                                                   bandwidth_scale=bandwidth_scale)
                posts = [noisy_posterior(ev.release(data, "laplace", eps,
                                                    rng=np.random.default_rng([seed, 2, r]))[evm],
                                         pc, m_closed, kde[eps]) for r in range(runs)]
                add(delta, "laplace-kde", eps, mask, np.mean(
                    [localized_by_class(q, true_eval, pc, mask) for q in posts], axis=0))
    return rows


def table(rows: Sequence[dict[str, Any]]) -> tuple[list[str], list[list[object]]]:
    """Headers and rows of the summary (person-ticks per class over the day)."""
    headers = ["delta", "method", "epsilon", "opened", *[f"p {c}" for c in CONFIDENCE_LABELS],
               "p > 0.5"]
    return headers, [[r[h] for h in headers] for r in rows]


def plot(rows: Sequence[dict[str, Any]], hours: np.ndarray, path: Any) -> Any:
    """Figs 4.3–4.6 style grid: rows = method/ε, columns = δ; stacked confidence classes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from research.report import stacked_classes

    deltas = sorted({r["delta"] for r in rows})
    keys = list(dict.fromkeys((r["method"], r["epsilon"]) for r in rows))
    fig, axes = plt.subplots(len(keys), len(deltas), figsize=(4 * len(deltas), 2.2 * len(keys)),
                             squeeze=False, sharex=True)
    for i, (method, eps) in enumerate(keys):
        for j, d in enumerate(deltas):
            ax = axes[i, j]
            hit = [r for r in rows if r["delta"] == d and (r["method"], r["epsilon"]) == (method,
                                                                                          eps)]
            if hit:
                label = method if math.isnan(eps) else f"{method} ε={eps:g}"
                stacked_classes(ax, hours, hit[0]["per_tick"], f"δ={d:g}: {label}")
            else:
                ax.axis("off")
    fig.suptitle("Randomly opened regions (cf. thesis Figs 4.3–4.6): people localised per "
                 "confidence class; posteriors counted only where they beat the prior")
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
