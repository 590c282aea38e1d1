"""``occustream mide-eval`` — MIDE experiments on simulated campus data (thesis §5.5, §6.5).

Queries (thesis §5.5.1, "UCI data"): the predicates are (building, hourly window) for the
15 windows 7:00–22:00 of one day; the aggregate is the building's peak occupancy in the
window (max over its ticks: event-level sensitivity 1, a device is in one location per
tick); the thresholds are 1.0 / 0.8 / 0.6 × the building's capacity (levels H / M / L);
one weekday (Q1, Tuesday) and one weekend day (Q2, Saturday).

Experiments, each averaged over ``--runs`` runs (thesis: 100):

* main table at β = 0.05, α = 1 (Figs 5.6–5.7): FNR, FPR, ex-post ε*, min-entropy γ per
  algorithm (naive LM, TSLM, PPWLM, DPPWLM) and query;
* β sweep {0.01 … 0.1} at α = 1 and α sweep {1, 10, …, 200} at β = 0.05 on the weekday
  "L" query (Fig. 5.8; naive LM loses β-FNR as α grows);
* the §5.5.2 claims per query (``ordering``), Fig. A.2 sweeps over ε₁ and m (``a2``) and
  Fig. A.3's CDF of per-predicate ex-post ε (``a3``, INTERNAL ONLY: ``INTERNAL_*`` files,
  never in ``tables.md``) — :mod:`research.mide_thesis`, which also explains why the
  thesis' DPPWLM (ε₁ = 10⁻⁵) has less γ than PPWLM here and why ε* = ε_m;
* ch. 6 (Figs 6.3–6.4): per day, ``count > q70 AND/OR avg_dwell > q70`` with naive and
  optimal β split (eq. 6.21), β = 0.005, u_j = 0.05·range, ε_max = 4.

Evaluation reads true counts (that is what it measures); nothing here is published.
The ex-post ε and γ reported are internal ledger quantities, shown to the researcher.

Data: by default two one-day simulations of ``--site`` (``simulator.simulate(site,
days=1, start=date, seed=…)``, true counts from ``Simulation.occupancy`` — the oracle)
on ``--dates`` (a Tuesday and a Saturday); their planned stays give the dwell times of
ch. 6. ``--counts FILE.npy`` takes hourly peak counts, shape (24, P) for one day or
(2, 24, P) for [weekday, weekend], with ``--capacities FILE.npy`` (P,) or one row per
day (every run saves its data as ``data_counts.npy`` / ``data_capacities.npy``) — then the ch. 6
dwell times are synthetic (Gamma, seeded). ``--synthetic`` draws counts around
capacities instead.
Outputs: CSV + Markdown tables and PNG plots in ``--out``; the main table on stdout.
γ is exact on MIDE outputs; should the exact search ever stop at its node budget, the
cell shows the certified lower bound marked "≥" and the table gets a footnote (CSV:
``gamma_upper``, ``gamma_inexact``).

Every argument and input file is checked before any simulation or run, and ``--out`` is
created and write-checked then too: a bad value ends with one line naming it (exit 2).
"""

from __future__ import annotations

import argparse
import csv
import logging
import math
import sys
import tempfile
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from mechanisms.errors import ConfigError, InvalidParameterError
from mechanisms.mide.mechanisms import single_step_epsilon
from occupancy.buildings import load_site
from research import mide_thesis
from research.mide_experiments import (
    ALGORITHMS,
    ALPHAS,
    BETAS,
    DEFAULTS,
    LEVELS,
    MAIN_ALPHA,
    MAIN_BETA,
    complex_experiment,
    file_days,
    main_table,
    simulated_days,
    sweep,
    synthetic_days,
)

log = logging.getLogger(__name__)

#: parts of a run (``--skip``); a2 / a3 / ordering: :mod:`research.mide_thesis`
PARTS = ("main", "beta", "alpha", "complex", "ordering", "a2", "a3", "plots")
#: footnote of a table with a γ cell marked "≥" (see :func:`markdown`)
GAMMA_NOTE = (
    "≥: in at least one run of this cell the exact min-entropy search stopped at its node "
    "budget (mechanisms.mide.entropy.MAX_NODES); γ is then a certified lower bound "
    "(CSV: gamma = mean of lower bounds, gamma_upper = mean of upper bounds, "
    "gamma_inexact = fraction of such runs)"
)


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "n/a" if math.isnan(v) else f"{v:.4g}"
    return str(v)


def _gamma_bound_only(row: dict[str, Any]) -> bool:
    """True when some run of the cell reported γ as a certified lower bound only."""
    return float(row.get("gamma_inexact", 0.0)) > 0  # also a CSV row's string; nan → False


def markdown(rows: list[dict[str, Any]], cols: Sequence[str]) -> str:
    """A Markdown table of ``cols``.

    A γ cell averaged over a run whose min-entropy search stopped early (a certified
    lower bound, not the exact γ) is shown as "≥value", and :data:`GAMMA_NOTE` follows
    the table.
    """

    def cell(r: dict[str, Any], c: str) -> str:
        mark = "≥" if c == "gamma" and _gamma_bound_only(r) else ""
        return mark + _fmt(r[c])

    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(r, c) for c in cols) + " |" for r in rows]
    if "gamma" in cols and any(_gamma_bound_only(r) for r in rows):
        lines += ["", GAMMA_NOTE]
    return "\n".join(lines)


#: (CSV key, axis label) of the panels of the α / β sweep figures
SWEEP_PANELS = (("fnr", "FNR"), ("fpr", "FPR"), ("gamma", "min-entropy γ"),
                ("eps_post", "ex-post ε*"))


def _pyplot() -> Any:
    """:mod:`matplotlib.pyplot` on the non-interactive Agg backend (imported on first use)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, title: str, path: Path) -> Path:
    """Title, lay out, write and close ``fig``; return ``path``."""
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    _pyplot().close(fig)
    return path


def _main_bars(main: list[dict[str, Any]], metrics: Sequence[tuple[str, str]]) -> Any:
    """Grouped bars per query and algorithm of the main table, one panel per metric."""
    queries = list(dict.fromkeys(r["query"] for r in main))
    fig, axes = _pyplot().subplots(1, len(metrics), figsize=(6 * len(metrics), 4))
    width = 0.8 / len(ALGORITHMS)
    for ax, (key, label) in zip(np.atleast_1d(axes), metrics, strict=True):
        x = np.arange(len(queries))
        for i, alg in enumerate(ALGORITHMS):
            vals = [
                next(r[key] for r in main if r["query"] == q and r["algorithm"] == alg)
                for q in queries
            ]
            ax.bar(x + (i - (len(ALGORITHMS) - 1) / 2) * width, vals, width, label=alg)
        ax.set_xticks(x, queries)
        ax.set_ylabel(label)
        if key == "fnr":
            ax.axhline(0.05, color="k", ls="--", lw=1, label="β")
    np.atleast_1d(axes)[0].legend()
    return fig


def _sweep_figure(rows: list[dict[str, Any]], what: str) -> Any:
    """The :data:`SWEEP_PANELS` of an α or β sweep (``what``), one line per algorithm."""
    fig, axes = _pyplot().subplots(1, 4, figsize=(20, 4))
    for ax, (key, label) in zip(axes, SWEEP_PANELS, strict=True):
        for alg in ALGORITHMS:
            pts = [(r[what], r[key]) for r in rows if r["algorithm"] == alg]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=alg)
        if key == "fnr":
            if what == "alpha":
                ax.axhline(0.05, color="k", ls="--", lw=1, label="β")
            else:
                ax.plot(BETAS, BETAS, "k--", lw=1, label="β")
        ax.set_xlabel(what)
        ax.set_ylabel(label)
    axes[0].legend()
    return fig


def _complex_figure(cx: list[dict[str, Any]]) -> Any:
    """ε, FNR and FPR per day of the ch. 6 experiment, AND and OR, naive vs optimal split."""
    fig, axes = _pyplot().subplots(2, 3, figsize=(16, 7))
    days = list(dict.fromkeys(r["day"] for r in cx))
    for row, op in enumerate(("AND", "OR")):
        for col, (key, label) in enumerate([("eps", "ε"), ("fnr", "FNR"), ("fpr", "FPR")]):
            ax = axes[row, col]
            for split in ("naive", "optimal"):
                vals = [
                    next(r[key] for r in cx
                         if r["day"] == d and r["op"] == op and r["split"] == split)
                    for d in days
                ]
                ax.plot(range(len(days)), vals, marker="o", label=split)
            if key == "fnr":
                ax.axhline(0.005, color="k", ls="--", lw=1, label="β")
            ax.set_title(f"{op}: {label}")
            ax.set_xlabel("query (day)")
    axes[0, 0].legend()
    return fig


def plots(
    out: Path,
    main: list[dict[str, Any]],
    sb: list[dict[str, Any]],
    sa: list[dict[str, Any]],
    cx: list[dict[str, Any]],
) -> list[Path]:
    """PNG figures like thesis Figs 5.6, 5.7, 5.8 and 6.3–6.4.

    Args:
        out: the output directory.
        main: rows of the main table (Figs 5.6 privacy and 5.7 accuracy).
        sb: rows of the β sweep (``fig_beta.png``).
        sa: rows of the α sweep (Fig. 5.8).
        cx: rows of the ch. 6 experiment (Figs 6.3–6.4).

    Returns:
        The paths written (a figure whose rows are empty is left out).
    """
    paths = []
    if main:
        paths.append(_save(
            _main_bars(main, [("eps_post", "ex-post ε*"), ("gamma", "min-entropy γ (nats)")]),
            "Privacy loss, β = 0.05, α = 1 (cf. thesis Fig. 5.6)", out / "fig_5_6_privacy.png"))
        paths.append(_save(
            _main_bars(main, [("fnr", "FNR"), ("fpr", "FPR")]),
            "Accuracy, β = 0.05, α = 1 (cf. thesis Fig. 5.7)", out / "fig_5_7_accuracy.png"))
    for rows, what, name in ((sa, "alpha", "fig_5_8_alpha.png"), (sb, "beta", "fig_beta.png")):
        if rows:
            paths.append(_save(
                _sweep_figure(rows, what),
                f"Weekday query, threshold L, varying {what} (cf. thesis Fig. 5.8)", out / name))
    if cx:
        paths.append(_save(
            _complex_figure(cx),
            "count > q70 AND/OR avg_dwell > q70, β = 0.005 (cf. thesis Figs 6.3–6.4)",
            out / "fig_6_complex.png"))
    return paths


# --------------------------------------------------------------------------- CLI
def _floats(text: str) -> list[float]:
    try:
        vals = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated numbers, not {text!r}"
        ) from None
    if not vals:
        raise argparse.ArgumentTypeError("expected at least one number")
    return vals


def max_alpha(beta: float = MAIN_BETA) -> float:
    """Largest α for which PPWLM/DPPWLM have a plan: ε_m = ln(m/(2β))/α > ε₁ (Alg. 2 l. 3)."""
    return math.log(DEFAULTS["steps"] / (2.0 * beta)) / DEFAULTS["epsilon_1"]


def check_sweeps(betas: Sequence[float], alphas: Sequence[float]) -> None:
    """Refuse, before any work, a β or α for which some cell has no sensible plan.

    Every β must lie in (0, 0.5) and every α be finite and > 0. The cells run are
    (β, α = 1) for the β sweep and (β = 0.05, α) for the α sweep (and the main table);
    PPWLM/DPPWLM need their final step ε_m = ln(m/(2β))/α above their first step
    ε₁ = DEFAULTS["epsilon_1"], i.e. α < :func:`max_alpha` — a larger α is refused
    (a researcher asked for those cells; silently dropping them would shorten the curve).
    A small α that needs ε > ε_max is not an error: that cell is reported as denied.

    Raises:
        InvalidParameterError: naming the first bad value and the allowed range.
    """
    steps, eps_1 = int(DEFAULTS["steps"]), DEFAULTS["epsilon_1"]
    for b in betas:
        if not 0 < b < 0.5:
            raise InvalidParameterError(f"--betas must each lie in (0, 0.5), not {b!r}")
        # β < 0.5 gives ε_m = ln(m/(2β))/α > ln 4 at α = 1, always above ε₁: nothing to check
    for a in alphas:
        if not (math.isfinite(a) and a > 0):
            raise InvalidParameterError(f"--alphas must each be finite and > 0, not {a!r}")
        if not single_step_epsilon(MAIN_BETA / steps, a) > eps_1:
            raise InvalidParameterError(
                f"--alphas must each be < {max_alpha():.6g} (above it PPWLM/DPPWLM's final "
                f"step ε_m = ln(m/(2β))/α at β = {MAIN_BETA}, m = {steps} falls below their "
                f"first step ε₁ = {eps_1:g}), not {a!r}"
            )


def prepare_out(out: Path) -> None:
    """Create ``out`` and check it is writable, before any long work.

    Raises:
        ConfigError: naming the path and the operating system's reason.
    """
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(
            f"--out must be a writable directory, not {str(out)!r} ({reason})"
        ) from None


def _add_data_arguments(p: argparse.ArgumentParser) -> None:
    """The data-source options (simulation, ``--counts`` files or ``--synthetic``)."""
    src = p.add_argument_group("data (default: simulate the campus)")
    src.add_argument("--site", default="campus", help="building model to simulate")
    src.add_argument(
        "--dates",
        default="2026-01-13,2026-01-17",
        help="simulated days (ISO dates): a weekday and a weekend day",
    )
    src.add_argument(
        "--capacity",
        choices=("history", "design"),
        default="history",
        help="threshold base: peak of the same weekday a week earlier, or the "
        "sum of room capacities (almost never exceeded in the simulation)",
    )
    src.add_argument(
        "--complex-days",
        type=int,
        default=7,
        help="days (queries) of the simulated ch. 6 experiment, >= 1: the --dates, then the "
        "days after the first date up to this many in all (a value <= the number of "
        "--dates uses just the --dates; to leave ch. 6 out use --skip complex). With "
        "--counts/--synthetic the days come from the data",
    )
    src.add_argument(
        "--counts", type=Path, help="hourly peak counts .npy (real, finite, >= 0), (24, P) or "
        "(2, 24, P) for [weekday, weekend]"
    )
    src.add_argument(
        "--capacities", type=Path, help="capacities .npy, > 0, (P,) or one row per day (D, P); "
        "with --counts"
    )
    src.add_argument(
        "--synthetic",
        action="store_true",
        help="counts drawn around capacities instead of the simulator",
    )


def _add_run_arguments(p: argparse.ArgumentParser) -> None:
    """Runs, seed, sweep values, parts to skip, output directory."""
    p.add_argument("--runs", type=int, default=100,
                   help="runs per cell, >= 1 (thesis: 100; the whole default run takes ~2 min)")
    p.add_argument("--seed", type=int, default=1, help="seed of data and noise, >= 0")
    p.add_argument(
        "--betas", type=_floats, default=list(BETAS),
        help=f"β sweep values (at α = {MAIN_ALPHA:g}), each in (0, 0.5)",
    )
    p.add_argument(
        "--alphas", type=_floats, default=list(ALPHAS),
        help=f"α sweep values (at β = {MAIN_BETA}), each finite, > 0 and < {max_alpha():.6g} "
        "(above it PPWLM/DPPWLM's last step ε_m would fall below their first step "
        f"ε₁ = {DEFAULTS['epsilon_1']:g}; such a value is refused up front, not skipped). "
        "An α needing more than ε_max = 4 is reported as denied",
    )
    p.add_argument(
        "--skip", default="", help="comma list of parts to skip: " + ",".join(PARTS)
        + " (ordering: the §5.5.2 claims per query; a2: Fig. A.2 sweeps over ε₁ and m; "
        "a3: Fig. A.3 CDF of per-predicate ex-post ε — INTERNAL ONLY output)"
    )
    p.add_argument(
        "--out", type=Path, default=Path("mide-eval-out"),
        help="output directory (created; must be writable — checked before any work)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def build_parser() -> argparse.ArgumentParser:
    """The ``occustream mide-eval`` argument parser."""
    p = argparse.ArgumentParser(
        prog="occustream mide-eval",
        description="MIDE threshold-query experiments (thesis ch. 5-6) on simulated campus "
        "data: FNR, FPR, ex-post ε, min-entropy per algorithm; tables and plots.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    _add_data_arguments(p)
    _add_run_arguments(p)
    return p


def _parse_skip(text: str) -> set[str]:
    """The ``--skip`` parts, each checked against :data:`PARTS`.

    Raises:
        InvalidParameterError: naming the unknown parts.
    """
    skip = {s.strip() for s in text.split(",") if s.strip()}
    unknown = skip - set(PARTS)
    if unknown:
        raise InvalidParameterError(
            f"--skip must name {','.join(PARTS)}, not {sorted(unknown)}"
        )
    return skip


def _parse_dates(text: str) -> list[str]:
    """The ``--dates``: ISO dates, one weekday and/or one weekend day.

    Raises:
        InvalidParameterError: a date that does not parse, none, more than two, or two
            of the same kind.
    """
    dates = [d.strip() for d in text.split(",") if d.strip()]
    try:
        kinds = [datetime.fromisoformat(d).weekday() >= 5 for d in dates]
    except ValueError:
        raise InvalidParameterError(f"--dates must be ISO dates, not {text!r}") from None
    if not dates or len(dates) > 2 or len(set(kinds)) != len(kinds):
        raise InvalidParameterError(
            f"--dates must name one weekday and/or one weekend day, not {text!r}"
        )
    return dates


def _check_args(args: argparse.Namespace) -> tuple[set[str], list[str]]:
    """Every check of the arguments that needs no long work (files are checked later).

    Returns:
        ``(parts to skip, dates to simulate — empty with --counts or --synthetic)``.

    Raises:
        InvalidParameterError: naming the first bad value.
    """
    if args.runs < 1:
        raise InvalidParameterError(f"--runs must be >= 1, not {args.runs!r}")
    if args.seed < 0:
        raise InvalidParameterError(f"--seed must be >= 0, not {args.seed!r}")
    if args.complex_days < 1:
        raise InvalidParameterError(
            f"--complex-days must be >= 1 (use --skip complex to leave ch. 6 out), "
            f"not {args.complex_days!r}"
        )
    skip = _parse_skip(args.skip)
    check_sweeps(args.betas, args.alphas)
    if args.capacities is not None and args.counts is None:
        raise InvalidParameterError(
            f"--capacities goes with --counts, not alone ({str(args.capacities)!r})"
        )
    dates: list[str] = []
    if args.counts is None and not args.synthetic:
        dates = _parse_dates(args.dates)
        load_site(args.site)  # an unknown --site fails here, before --out is created
    return skip, dates


def _simulate_days(args: argparse.Namespace, dates: list[str], skip: set[str]
                   ) -> tuple[list[Any], list[Any]]:
    """Simulated days: the ``--dates`` (weekday first), plus the ch. 6 days after them.

    Returns:
        ``(days of the main table and sweeps, days of the ch. 6 experiment)``.
    """
    main_days = simulated_days(args.site, dates, args.seed, not args.no_progress, args.capacity)
    main_days.sort(key=lambda d: d.name != "weekday")
    all_days = list(main_days)
    if args.complex_days > len(dates) and "complex" not in skip:
        # ch. 6 runs one query per day: add the following days (thresholds there are
        # quantiles of the day itself, so no history day is needed)
        first = datetime.fromisoformat(dates[0])
        extra = [(first + timedelta(days=i)).date().isoformat()
                 for i in range(1, args.complex_days + len(dates))]
        extra = [d for d in extra if d not in dates][: args.complex_days - len(dates)]
        all_days += simulated_days(args.site, extra, args.seed + 1000,
                                   not args.no_progress, "design")
    return main_days, all_days


def _n_runs(args: argparse.Namespace, skip: set[str], main_days: list[Any],
            all_days: list[Any]) -> int:
    """Runs of the progress-barred parts (main, beta, alpha, complex) not skipped."""
    total = 0
    if "main" not in skip:
        total += len(main_days) * len(LEVELS) * len(ALGORITHMS) * args.runs
    if "beta" not in skip:
        total += len(args.betas) * len(ALGORITHMS) * args.runs
    if "alpha" not in skip:
        total += len(args.alphas) * len(ALGORITHMS) * args.runs
    if "complex" not in skip:
        total += len(all_days) * 4 * args.runs
    return total


def _run_experiments(args: argparse.Namespace, skip: set[str], main_days: list[Any],
                     all_days: list[Any]) -> dict[str, list[dict[str, Any]]]:
    """The main table, the β and α sweeps and ch. 6, under one progress bar.

    Returns:
        Rows by table name (``main``, ``sweep_beta``, ``sweep_alpha``, ``complex``);
        a skipped part has no rows.
    """
    weekday = main_days[0]
    total = _n_runs(args, skip, main_days, all_days)
    rows: dict[str, list[dict[str, Any]]] = {}
    with tqdm(
        total=total, desc="mide-eval", unit="run", file=sys.stderr, disable=args.no_progress
    ) as bar:
        rows["main"] = (main_table(main_days, args.runs, args.seed, bar)
                        if "main" not in skip else [])
        for part, what, values in (("beta", "beta", args.betas),
                                   ("alpha", "alpha", args.alphas)):
            rows[f"sweep_{part}"] = (sweep(weekday, "L", what, values, args.runs, args.seed, bar)
                                     if part not in skip else [])
        rows["complex"] = (complex_experiment(all_days, args.runs, args.seed, bar)
                           if "complex" not in skip else [])
    return rows


def _run_thesis_parts(args: argparse.Namespace, skip: set[str], main_days: list[Any],
                      main_rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The :mod:`research.mide_thesis` parts: §5.5.2 ordering, Fig. A.2 sweeps, Fig. A.3.

    Returns:
        Rows by table name (``ordering_5_5_2``, ``fig_a2_start_epsilon``,
        ``fig_a2_steps``, ``a3``); a skipped part has no rows.
    """
    weekday, runs, seed = main_days[0], args.runs, args.seed
    a2 = "a2" not in skip
    return {
        "ordering_5_5_2": (mide_thesis.ordering(main_days, main_rows, runs, seed)
                           if main_rows and "ordering" not in skip else []),
        "fig_a2_start_epsilon": mide_thesis.sweep_start(weekday, runs, seed) if a2 else [],
        "fig_a2_steps": mide_thesis.sweep_steps(weekday, runs, seed) if a2 else [],
        "a3": mide_thesis.expost_cdf(weekday, runs, seed) if "a3" not in skip else [],
    }


#: columns of the main table (``main.csv`` has more)
COLS_MAIN = ["query", "algorithm", "predicates", "positives", "fnr", "fpr", "eps_post",
             "gamma", "eps", "denied"]
#: the tables of ``tables.md`` (each also a CSV) and the columns shown, in order
TABLES: dict[str, list[str]] = {
    "main": COLS_MAIN,
    "sweep_beta": ["beta", "algorithm", "fnr", "fpr", "eps_post", "gamma", "denied"],
    "sweep_alpha": ["alpha", "algorithm", "fnr", "fpr", "eps_post", "gamma", "denied"],
    "complex": ["day", "op", "split", "eps", "fnr", "fpr", "denied"],
    "ordering_5_5_2": ["query", "near", "eps_last_below_m", "alpha_there",
                       "dppwlm_gamma_highest", "dppwlm_p_eps_post_below_tslm",
                       "dppwlm-r_gamma_highest", "dppwlm-r_p_eps_post_below_tslm"],
    "fig_a2_start_epsilon": ["epsilon_1", "algorithm", "eps_post", "gamma", "tslm_eps_post",
                             "tslm_gamma", "fnr", "denied"],
    "fig_a2_steps": ["steps", "algorithm", "eps_post", "gamma", "tslm_eps_post", "tslm_gamma",
                     "fnr", "denied"],
}


def _write_tables(out: Path, results: dict[str, list[dict[str, Any]]], runs: int,
                  seed: int) -> None:
    """A CSV per non-empty table of :data:`TABLES` and all of them in ``tables.md``.

    Fig. A.3's rows are INTERNAL ONLY: their CSV is written apart (with a banner on
    stderr) and never goes into ``tables.md``, which a researcher may pass on.
    """
    md = [f"# MIDE evaluation ({runs} runs per cell, seed {seed})", ""]
    for name, cols in TABLES.items():
        rows = results[name]
        if rows:
            _write_csv(out / f"{name}.csv", rows)
            md += [f"## {name}", "", markdown(rows, cols), ""]
    (out / "tables.md").write_text("\n".join(md) + "\n")
    if results["a3"]:
        _write_csv(out / "INTERNAL_fig_a3_expost_cdf.csv", results["a3"])
        print(f"{mide_thesis.INTERNAL_BANNER}\nwrote {out / 'INTERNAL_fig_a3_expost_cdf.csv'}",
              file=sys.stderr)


def _print_summary(results: dict[str, list[dict[str, Any]]]) -> None:
    """The §5.5.2 claims and the main table on stdout."""
    order = results["ordering_5_5_2"]
    if order:
        print("Thesis §5.5.2 claims per query (near: predicates within α' of the threshold, "
              "α' the width at ε', the largest ε < ε_m DPPWLM can stop at; one near "
              "predicate makes ε* = ε_m > TSLM's in almost every run)")
        print(markdown(order, list(order[0])))
    if results["main"]:
        print(
            "MIDE at β = 0.05, α = 1 (eps_post = ex-post DP ε*, gamma = min-entropy γ in "
            "nats, eps = worst-case ε; averaged over runs; n/a: no positives or denied)"
        )
        print(markdown(results["main"], COLS_MAIN))


def _write_plots(out: Path, results: dict[str, list[dict[str, Any]]]) -> None:
    """This module's figures and :func:`research.mide_thesis.plots`, where there are rows."""
    r = results
    if r["main"] or r["sweep_alpha"] or r["sweep_beta"] or r["complex"]:
        for p in plots(out, r["main"], r["sweep_beta"], r["sweep_alpha"], r["complex"]):
            print(f"wrote {p}")
    if r["fig_a2_start_epsilon"] or r["fig_a2_steps"] or r["a3"]:
        for p in mide_thesis.plots(out, r["fig_a2_start_epsilon"], r["fig_a2_steps"], r["a3"]):
            print(f"wrote {p}")


def main(argv: list[str] | None = None) -> int:
    """Run the experiments; return 0 on success.

    Every argument and input file is checked, and ``--out`` created, before any
    simulation or run; then the data are loaded (and saved in ``--out`` for re-use with
    ``--counts``), the parts not skipped are run, and the tables and figures written.
    """
    args = build_parser().parse_args(argv)
    # every check before any long work (loading is cheap; simulating and runs are not)
    skip, dates = _check_args(args)
    file_data = file_days(args.counts, args.capacities) if args.counts is not None else None
    prepare_out(args.out)
    if file_data is not None:
        main_days, all_days = file_data
    elif args.synthetic:
        main_days, all_days = synthetic_days(24, 7, args.seed)
    else:
        main_days, all_days = _simulate_days(args, dates, skip)
    # the data the experiments ran on, re-usable with --counts/--capacities
    np.save(args.out / "data_counts.npy", np.stack([d.counts for d in main_days]))
    np.save(args.out / "data_capacities.npy", np.stack([d.capacity for d in main_days]))
    results = _run_experiments(args, skip, main_days, all_days)
    results.update(_run_thesis_parts(args, skip, main_days, results["main"]))
    _write_tables(args.out, results, args.runs, args.seed)
    _print_summary(results)
    if "plots" not in skip:
        _write_plots(args.out, results)
    print(f"wrote {args.out / 'tables.md'}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
