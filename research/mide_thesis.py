"""Thesis §5.5.2 / appendix A.1.5 checks for ``occustream mide-eval`` (issue 16 item 3).

* :func:`ordering` — the two claims of §5.5.2 per query: DPPWLM has the highest
  min-entropy γ (of TSLM, PPWLM, DPPWLM), and DPPWLM's ex-post ε* is below TSLM's on
  most queries. Both are checked for the thesis' DPPWLM (``dppwlm``: eq. 5.9 estimate,
  ε₁ = 10⁻⁵) and the project's ``dppwlm-r`` (the same with the public value range
  [0, 3·capacity] truncating the estimate), with the diagnostic that decides ε*:
  ``near`` = predicates within α' of their threshold (:func:`near_threshold`). ε* is the
  *maximum* over predicates, and the largest ε below ε_m DPPWLM can stop at is the
  plan's level m − 1 = 0.0514 (α' ≈ 58 people): one predicate that close to its
  threshold ends at ε_m = 3.69 > TSLM's 2.30. Every campus query has tens of them
  (Fig. 5.5 of the thesis shows the UCI / NYTaxi distances; where all predicates are
  far, e.g. ``--capacity design``, ε* = 0.0514 < 2.30 and the claim holds).
* :func:`sweep_start` / :func:`sweep_steps` — Fig. A.2: ε* and γ of PPWLM / DPPWLM /
  DPPWLM-r over ε₁ ∈ {10⁻⁵ … 10⁻¹} and m ∈ {2, 4, …, 12} (weekday query, threshold L;
  the thesis used NYTaxi Q3-L). At α = 1, β = 0.05, ε_m = ln(m/(2β)) exceeds ε_max = 4
  for m ≥ 6: those cells are *denied* here (the thesis plots ε* > 4 for them instead).
* :func:`expost_cdf` — Fig. A.3: the cumulative number of predicates whose final
  ex-post ε is ≤ x, per algorithm (weekday query, threshold M). **INTERNAL ONLY**: the
  per-predicate ex-post ε is data-dependent; releasing it breaks the ε_max-DP guarantee
  (thesis §5.3.2). Files are named ``INTERNAL_…`` and the figure says so.

Why the thesis' DPPWLM loses γ to PPWLM here (measured, campus weekday H, one run):
after step 1 at ε₁ = 10⁻⁵ the noisy aggregates carry no information (noise scale
10⁵), so eq. 5.9 predicts that almost no predicate stays undecided for every
candidate ε; Alg. 4 then picks the candidate with the highest min-entropy under that
prediction — the smallest one of the second interval (ε ≈ 0.0176, α ≈ 170 people),
consuming two plan levels (β·2/m), so the only level left is ε_m: 139 of 360 predicates
end at ε_m = 3.69 (PPWLM: 53, it keeps its 0.0514 level, α ≈ 72). γ = 2.04 vs PPWLM
2.75. With the public range the estimate is informative and DPPWLM-r has the highest
γ on every query. With ε₁ = 10⁻³ or 10⁻¹ the thesis' DPPWLM also recovers (Fig. A.2
sweep): on this data a *larger* ε₁ gives a larger γ — the opposite of the thesis'
Fig. A.2 on NYTaxi, because most campus predicates lie far (median 120–200 people)
from their thresholds and are decided at step 1 when ε₁ is not tiny.

(The thesis' Alg. 4 returns B[r_opt+1:], keeping the upper end of the chosen interval
while charging β·r_opt/m; taken literally that spends β·(m+1)/m in total. The
implementation drops that level so the FNR bound stays β — see
:func:`mechanisms.mide.mechanisms.dppwlm`.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mechanisms.mide.mechanisms import plan_epsilons, single_step_epsilon
from research import mide_experiments as me

START_EPSILONS = (1e-5, 1e-4, 1e-3, 1e-2, 1e-1)
STEPS = (2, 4, 6, 8, 10, 12)
SWEEP_ALGORITHMS = ("ppwlm", "dppwlm", "dppwlm-r")
CDF_ALGORITHMS = ("tslm", "ppwlm", "dppwlm", "dppwlm-r")
INTERNAL_BANNER = (
    "INTERNAL ONLY: per-predicate ex-post ε is data-dependent; publishing it breaks the "
    "ε_max-DP guarantee (thesis §5.3.2). Do not show it to data analysts."
)


def near_threshold(
    g: np.ndarray, c: np.ndarray, *, beta: float | None = None, alpha: float | None = None,
) -> tuple[int, float, float]:
    """(near, ε', α'): predicates within α' of c, ε' the largest ε < ε_m DPPWLM can stop at.

    In :func:`mechanisms.mide.mechanisms.dppwlm` a step that would use the last plan
    interval runs at ε_m itself (so the final width never exceeds α), hence the largest
    ε below ε_m is the plan's level m − 1 (0.0514 at ε₁ = 10⁻⁵, m = 4, β = 0.05, α = 1);
    α' = ln(1/(2β_j))/ε' with β_j = β·max(m − 2, 1)/m, the narrowest width a step at ε'
    can have. A predicate at distance d < α' stays undecided there with probability
    ≥ 1 − e^(−ε'(α' − d)) and then ends at ε_m. β, α default to the main table's.
    """
    beta = me.MAIN_BETA if beta is None else beta
    alpha = me.MAIN_ALPHA if alpha is None else alpha
    m = int(me.DEFAULTS["steps"])
    plan = plan_epsilons(me.DEFAULTS["epsilon_1"], single_step_epsilon(beta / m, alpha), m)
    e_last = float(plan[-2]) if m > 1 else float(plan[-1])
    a_last = math.log(1.0 / (2.0 * beta * max(m - 2, 1) / m)) / e_last
    return int((np.abs(g - c) < a_last).sum()), e_last, float(a_last)


def ordering(
    days: Sequence[me.DayData], main_rows: list[dict[str, Any]], runs: int, seed: int,
) -> list[dict[str, Any]]:
    """Per query: do §5.5.2's γ and ε* orderings hold, for dppwlm and dppwlm-r?"""
    eps_tslm = single_step_epsilon(me.MAIN_BETA, me.MAIN_ALPHA)
    by = {(r["query"], r["algorithm"]): r for r in main_rows}
    out = []
    for d in days:
        for level in me.LEVELS:
            q = f"{'Q1' if d.name == 'weekday' else 'Q2'}{level}"
            if (q, "tslm") not in by:
                continue
            g, c = d.query(level)
            near, e_last, a_last = near_threshold(g, c)
            row: dict[str, Any] = {"query": q, "near": near, "eps_last_below_m": e_last,
                                   "alpha_there": a_last}
            for alg in ("dppwlm", "dppwlm-r"):
                rng = np.random.default_rng([seed, 11, len(out)])
                below = []
                for _ in range(runs):
                    r = me.run_once(g, c, alg, me.MAIN_BETA, me.MAIN_ALPHA, rng, d.capacities())
                    below.append(float(r["eps_post"] < eps_tslm))
                gam = {a: by[(q, a)]["gamma"] for a in ("tslm", "ppwlm", alg)}
                row[f"{alg}_gamma_highest"] = bool(gam[alg] >= max(gam.values()))
                row[f"{alg}_p_eps_post_below_tslm"] = float(np.mean(below))
            out.append(row)
    return out


def _sweep(day: me.DayData, level: str, what: str, values: Sequence[float], runs: int,
           seed: int) -> list[dict[str, Any]]:
    g, c = day.query(level)
    rows = []
    for v in values:
        kw: dict[str, Any] = {"epsilon_1": float(v)} if what == "epsilon_1" else {"steps": int(v)}
        for alg in SWEEP_ALGORITHMS:
            rng = np.random.default_rng([seed, 13, len(rows)])
            res = [me.run_once(g, c, alg, me.MAIN_BETA, me.MAIN_ALPHA, rng, day.capacities(),
                               **kw) for _ in range(runs)]
            rows.append({what: v, "algorithm": alg, **me._mean(res)})
    tslm = me.run_once(g, c, "tslm", me.MAIN_BETA, me.MAIN_ALPHA, np.random.default_rng(seed))
    for r in rows:
        r["tslm_eps_post"], r["tslm_gamma"] = tslm["eps_post"], tslm["gamma"]
    return rows


def sweep_start(day: me.DayData, runs: int, seed: int,
                values: Sequence[float] = START_EPSILONS) -> list[dict[str, Any]]:
    """Fig. A.2 (a), (b): ε* and γ over the first step's ε₁ (weekday, threshold L)."""
    return _sweep(day, "L", "epsilon_1", values, runs, seed)


def sweep_steps(day: me.DayData, runs: int, seed: int,
                values: Sequence[int] = STEPS) -> list[dict[str, Any]]:
    """Fig. A.2 (c), (d): ε* and γ over the number of steps m (weekday, threshold L)."""
    return _sweep(day, "L", "steps", values, runs, seed)


def expost_cdf(day: me.DayData, runs: int, seed: int, level: str = "M",
               grid: np.ndarray | None = None) -> list[dict[str, Any]]:
    """Fig. A.3 (INTERNAL ONLY): mean number of predicates with ex-post ε ≤ x, per algorithm."""
    g, c = day.query(level)
    xs = np.geomspace(1e-5, 4.0, 41) if grid is None else np.asarray(grid, float)
    rows = []
    for k, alg in enumerate(CDF_ALGORITHMS):
        sink: list[np.ndarray] = []
        rng = np.random.default_rng([seed, 17, k])
        for _ in range(runs):
            me.run_once(g, c, alg, me.MAIN_BETA, me.MAIN_ALPHA, rng, day.capacities(),
                        expost_sink=sink)
        if not sink:
            continue
        eps = np.stack(sink)  # (runs, P)
        for x in xs:
            rows.append({"algorithm": alg, "epsilon": float(x),
                         "predicates_at_or_below": float((eps <= x * (1 + 1e-9)).sum(1).mean()),
                         "internal_only": True})
    return rows


def plots(out: Path, a2_start: list[dict[str, Any]], a2_steps: list[dict[str, Any]],
          a3: list[dict[str, Any]]) -> list[Path]:
    """PNG figures like thesis Figs A.2 and A.3 (the latter marked INTERNAL ONLY)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for rows, what, name, xlog in ((a2_start, "epsilon_1", "fig_a2_start_epsilon.png", True),
                                   (a2_steps, "steps", "fig_a2_steps.png", False)):
        if not rows:
            continue
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for ax, key, label in ((axes[0], "eps_post", "ex-post ε*"),
                               (axes[1], "gamma", "min-entropy γ (nats)")):
            for alg in SWEEP_ALGORITHMS:
                pts = [(r[what], r[key]) for r in rows if r["algorithm"] == alg]
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=alg)
            ax.axhline(rows[0][f"tslm_{key}"], color="k", ls="--", lw=1, label="tslm")
            ax.set_xlabel("ε₁" if what == "epsilon_1" else "steps m")
            ax.set_ylabel(label)
            if xlog:
                ax.set_xscale("log")
        axes[0].legend()
        fig.suptitle(f"Weekday query, threshold L, varying {what} (cf. thesis Fig. A.2; "
                     "missing points: denied, ε_m > ε_max)")
        fig.tight_layout()
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        paths.append(out / name)
    if a3:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for alg in CDF_ALGORITHMS:
            pts = [(r["epsilon"], r["predicates_at_or_below"]) for r in a3
                   if r["algorithm"] == alg]
            if pts:
                ax.step([p[0] for p in pts], [p[1] for p in pts], where="post", label=alg)
        ax.set_xscale("log")
        ax.set_xlabel("ex-post ε per predicate")
        ax.set_ylabel("predicates with ex-post ε ≤ x")
        ax.legend()
        ax.text(0.5, 0.5, "INTERNAL ONLY", transform=ax.transAxes, fontsize=36, color="red",
                alpha=0.25, ha="center", va="center", rotation=20)
        fig.suptitle("INTERNAL ONLY — ex-post ε per predicate (cf. thesis Fig. A.3), "
                     "weekday, threshold M\n" + INTERNAL_BANNER, fontsize=8, color="red")
        fig.tight_layout()
        name = "INTERNAL_fig_a3_expost_cdf.png"
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        paths.append(out / name)
    return paths
