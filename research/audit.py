"""``occustream audit`` — what an attacker learns from each mechanism (thesis ch. 4, issue 8).

Method (thesis §4.5, app. B; the math is in :mod:`research.attacker`):

1. Simulate ``days`` days at 10-minute ticks (144 time points a day). Priors
   ``p_l^t`` per (location, time of day) from the true counts of the first N−1 days.
2. On day N, per attacker (external: no open regions; student: classrooms, public
   areas, lounges, corridors; administrator: camera-covered locations plus offices,
   labs, meeting rooms, lounges, corridors, public areas and restrooms
   (:data:`research.attacker.ADMIN_KINDS`: the thesis' proportions, 37 vs 39 of 64
   regions, the administrator seeing more of the population) — from the building
   model's location kinds and ``camera`` flags), the posterior of every
   victim in a closed region:

   * ``true``: from the true counts (eq. 4.3) — the most an attacker can learn;
   * ``laplace-known``: Laplace release with the known noise density (eq. 4.4);
   * ``laplace``, ``pegasus``, ``ttl``: eq. 4.4 with ``f(y|z)`` learned by Gaussian KDE
     (scaled bandwidth 0.1) from (true, released) pairs of the training days of a
     separate training run;
   * ``dp-bound``: the worst-case ε-DP bound at the Laplace ε (§4.4.2).

3. People localised correctly per confidence class, excluding those the prior
   already localises as well, averaged over ``runs`` noise draws (TTL is
   deterministic: one run). Plots like Figs 4.7–4.9: time on x, stacked classes.

Parameters are set "at equal utility": by default each mechanism is tuned to the
same heatmap colour utility (``--target``, ``--period``) with
:mod:`research.tune`; ``--epsilon-laplace`` etc. fix them instead.

TTL-salt has no formal guarantee; every table row for it says so.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.registry import without_guarantee
from research import audit_delta
from research import evaluate as ev
from research import tuning as tune_mod
from research.attacker import (
    ADMIN_KINDS,
    ATTACKERS,
    CONFIDENCE_LABELS,
    LaplaceLikelihood,
    Likelihood,
    closed_total,
    condition_prior,
    dp_worst_case_bound,
    fit_conditional_kde,
    localized_by_class,
    noisy_posterior,
    open_regions,
    priors,
    true_count_posterior,
)
from research.report import Report, new_figure, stacked_classes, write_table

AUDITED: tuple[str, ...] = ("true", "laplace-known", "laplace", "pegasus", "ttl", "dp-bound")
#: audited rows computed from a formula, with no released stream of their own
ANALYTIC = frozenset({"dp-bound"})
_TRAIN_STREAM = 10_000  # rng stream index of the KDE training run


@dataclass(frozen=True)
class AuditResult:
    """Attacker success of one (attacker, mechanism) on the evaluated day."""

    attacker: str
    mechanism: str
    param: float  # ε or TTL s (nan for "true")
    per_class: np.ndarray  # (T, 6) people per confidence class, mean over runs
    hours: np.ndarray  # (T,)
    runs: int
    guarantee: str
    seconds: float  # posterior evaluation time (all runs)

    @property
    def total(self) -> np.ndarray:
        """Person-ticks per class over the day, shape (6,)."""
        return self.per_class.sum(axis=0)


def _guarantee(mech: str, param: float) -> str:
    if without_guarantee(mech):
        return tune_mod.TTL_GUARANTEE
    if mech == "true":
        return "none (true counts)"
    return f"ε-DP (event-level), ε={param:.3g}"


def equal_utility_params(
    data: ev.EvalData, target: float, period: str, *, runs: int = 3, progress: bool = True
) -> dict[str, float]:
    """ε for Laplace and PeGaSus and the TTL reaching the same colour utility."""
    rows = ev.tune_table(
        data, ["laplace", "pegasus", "ttl"], [target], runs=runs, progress=progress
    )
    out = {}
    for r in rows:
        if r.period == period:
            if not r.reached:
                raise InvalidParameterError(
                    f"{r.mechanism} cannot reach utility {target:.0%} ({period}); lower --target"
                )
            out[r.mechanism] = r.param
    return out


def equal_utility_params_by_period(
    data: ev.EvalData, target: float, *, runs: int = 3, progress: bool = True
) -> dict[str, dict[str, float]]:
    """:func:`equal_utility_params` for day and night from one tuning run (thesis Table 4.2)."""
    rows = ev.tune_table(
        data, ["laplace", "pegasus", "ttl"], [target], runs=runs, progress=progress
    )
    out: dict[str, dict[str, float]] = {p: {} for p in tune_mod.PERIODS}
    for r in rows:
        if r.period in out:
            if not r.reached:
                raise InvalidParameterError(
                    f"{r.mechanism} cannot reach utility {target:.0%} ({r.period}); "
                    "lower --target"
                )
            out[r.period][r.mechanism] = r.param
    return out


def audit_day_night(
    data: ev.EvalData,
    day_params: dict[str, float],
    night_params: dict[str, float],
    **kwargs: object,
) -> list[AuditResult]:
    """The attack with day parameters on 07:00–19:00 ticks and night parameters otherwise.

    Thesis §4.6.2 tunes each mechanism separately for day and night (Table 4.2) and
    attacks each period with its own release. Here :func:`audit` runs once per parameter
    set and each result keeps the ticks of its own period. A posterior at one tick uses
    only that tick's release (eq. 4.4), so for Laplace and TTL this equals releasing with
    per-period parameters; PeGaSus groups run across the period boundary in each run and
    its KDE is trained on all training ticks at that ε (an approximation, stated).
    """
    d = audit(data, day_params, **kwargs)  # type: ignore[arg-type]
    n = audit(data, night_params, **kwargs)  # type: ignore[arg-type]
    day = data.day_mask[data.eval_mask][:, None]
    out = []
    for rd, rn in zip(d, n, strict=True):
        guarantee = rd.guarantee if rd.guarantee == rn.guarantee else (
            f"day: {rd.guarantee}; night: {rn.guarantee}")
        out.append(AuditResult(rd.attacker, rd.mechanism, rd.param,
                               np.where(day, rd.per_class, rn.per_class), rd.hours,
                               rd.runs, guarantee, rd.seconds + rn.seconds))
    return out


def audit(
    data: ev.EvalData,
    params: dict[str, float],
    *,
    attackers: Sequence[str] = ATTACKERS,
    mechanisms: Sequence[str] = AUDITED,
    runs: int = 10,
    seed: int = 0,
    guess: str = "argmax",
    bandwidth_scale: float = 0.1,
    progress: bool = True,
) -> list[AuditResult]:
    """Run the attack of the module docstring on the last day of ``data``.

    Args:
        data: evaluation data (its last day is attacked; earlier days train).
        params: ``{"laplace": ε, "pegasus": ε, "ttl": ttl_s}``.
        attackers: subset of :data:`research.attacker.ATTACKERS`.
        mechanisms: subset of :data:`AUDITED`.
        runs: noise draws averaged per DP mechanism.
        seed: base seed of the noise draws.
        guess: ``"argmax"`` (the attacker's guess must be right) or ``"all"``.
        bandwidth_scale: KDE bandwidth scaling (thesis 0.1).
        progress: show a progress bar on stderr.

    Returns:
        One :class:`AuditResult` per (attacker, mechanism).
    """
    _check_audited(mechanisms)
    need = {
        "laplace-known": "laplace",
        "laplace": "laplace",
        "dp-bound": "laplace",
        "pegasus": "pegasus",
        "ttl": "ttl",
    }
    for m in mechanisms:
        if m in need and need[m] not in params:
            raise InvalidParameterError(f"audit of {m!r} needs params[{need[m]!r}]")
    if runs < 1:
        raise InvalidParameterError(f"runs must be >= 1, not {runs!r}")
    train, evm = ~data.eval_mask, data.eval_mask
    prior_slot = priors(data.true[train], data.slot[train], data.slots_per_day)
    prior = prior_slot[data.slot[evm]]
    true_eval = data.true[evm]
    hours = data.hour[evm]
    kinds = [loc.kind for loc in data.site.locations]
    camera = [loc.camera for loc in data.site.locations]

    # Released streams (eval day) and likelihoods, shared by all attackers.
    streams: dict[str, list[np.ndarray]] = {}
    likelihoods: dict[str, Likelihood] = {}
    jobs = [m for m in mechanisms if m in need and m not in ANALYTIC]
    bar = tqdm(
        total=len(jobs) + len(attackers) * len(mechanisms),
        desc="audit",
        file=sys.stderr,
        disable=not progress,
    )
    for m in jobs:
        base = need[m]
        p = params[base]
        bar.set_postfix_str(f"release {m}")
        n = 1 if without_guarantee(base) else runs
        if base not in streams:
            streams[base] = [
                ev.release(data, base, p, rng=np.random.default_rng([seed, r]))[evm]
                for r in range(n)
            ]
        if m == "laplace-known":
            likelihoods[m] = LaplaceLikelihood(p)
        else:
            tr = ev.release(data, base, p, rng=np.random.default_rng([seed, _TRAIN_STREAM]))
            likelihoods[m] = fit_conditional_kde(
                data.true[train], tr[train], bandwidth_scale=bandwidth_scale
            )
        bar.update(1)

    results = []
    for att in attackers:
        open_mask = open_regions(att, kinds, camera, administrator_kinds=ADMIN_KINDS)
        pc = condition_prior(prior, open_mask)
        m_closed = closed_total(true_eval, open_mask)
        for mech in mechanisms:
            bar.set_postfix_str(f"{att} {mech}")
            t0 = time.perf_counter()
            if mech == "true":
                posts = [true_count_posterior(true_eval, open_mask)]
            elif mech == "dp-bound":
                posts = [np.where(~open_mask, dp_worst_case_bound(pc, params["laplace"]), 0.0)]
            else:
                posts = [
                    noisy_posterior(y, pc, m_closed, likelihoods[mech]) for y in streams[need[mech]]
                ]
            secs = time.perf_counter() - t0
            per_class = np.mean(
                [localized_by_class(q, true_eval, pc, open_mask, guess=guess) for q in posts],
                axis=0,
            )
            param = params.get(need.get(mech, ""), math.nan)
            results.append(
                AuditResult(
                    att,
                    mech,
                    param,
                    per_class,
                    hours,
                    len(posts),
                    _guarantee(need.get(mech, "true"), param),
                    secs,
                )
            )
            bar.update(1)
    bar.close()
    return results


def summary_rows(results: Sequence[AuditResult]) -> tuple[list[str], list[list[object]]]:
    """Attacker-success summary table.

    Per (attacker, mechanism): person-ticks per confidence class over the attacked day,
    the peak number of people localised with p > 0.5 at one time point, and the
    person-ticks with p > 0.25 by day (07:00–19:00) and night.
    """
    headers = [
        "attacker",
        "mechanism",
        "parameter",
        *[f"p {c}" for c in CONFIDENCE_LABELS],
        "p > 0.5 (max per tick)",
        "p > 0.25 day",
        "p > 0.25 night",
        "guarantee",
    ]
    rows = []
    for r in results:
        hi = r.per_class[:, 3:].sum(axis=1)
        mid = r.per_class[:, 2:].sum(axis=1)
        day = (r.hours >= ev.DAY_HOURS[0]) & (r.hours < ev.DAY_HOURS[1])
        rows.append(
            [
                r.attacker,
                r.mechanism,
                r.param,
                *[float(x) for x in r.total],
                float(hi.max()) if hi.size else 0.0,
                float(mid[day].sum()),
                float(mid[~day].sum()),
                r.guarantee,
            ]
        )
    return headers, rows


def write_report(
    results: Sequence[AuditResult],
    params: dict[str, float],
    data: ev.EvalData,
    out: Path,
    fmt: str = "html",
    *,
    note: str = "",
) -> Path:
    """Summary table, one stacked-class figure per attacker, and the report file."""
    report = Report(f"occustream audit — {data.site.id}")
    report.paragraph(
        f"Attacked day: the last of {data.n_days} simulated days ({data.true.shape[1]} "
        f"locations, {data.slots_per_day} time points a day); priors from the first "
        f"{data.n_days - data.eval_days} days. Parameters: "
        + ", ".join(f"{k}={v:.4g}" for k, v in params.items())
        + (f" ({note})" if note else "")
        + f". TTL: {tune_mod.TTL_GUARANTEE}. People in open regions are known to the "
        "attacker and not counted; a person counts when the attacker's guess is right and "
        "its confidence class beats the prior's."
    )
    headers, rows = summary_rows(results)
    report.heading("Attacker success per mechanism")
    report.table(
        headers,
        rows,
        caption="person-ticks localised per confidence class over the "
        "attacked day (mean over runs)",
    )
    attackers = list(dict.fromkeys(r.attacker for r in results))
    mechs = list(dict.fromkeys(r.mechanism for r in results))
    for att in attackers:
        rs = {r.mechanism: r for r in results if r.attacker == att}
        ymax = max(float(r.per_class.sum(axis=1).max(initial=0)) for r in rs.values()) or 1.0
        fig, axes = new_figure(10, 1.9 * len(mechs), nrows=len(mechs), sharex=True, squeeze=False)
        for ax, m in zip(axes[:, 0], mechs, strict=True):
            r = rs[m]
            label = f"{m} ({r.guarantee})"
            stacked_classes(ax, r.hours, r.per_class, label)
            ax.set_ylim(0, ymax * 1.05)
        for ax in axes[:-1, 0]:
            ax.set_xlabel("")
        axes[0, 0].legend(fontsize=6, ncols=6, loc="upper left", title="confidence")
        report.heading(f"{att} attacker", level=3)
        report.figure(
            fig, f"People localised per confidence class — {att} attacker", f"audit-{att}"
        )
    path = report.write(out, fmt, stem="audit")
    for kind, blk in report.blocks:
        if kind == "f":
            (Path(out) / f"{blk[2]}.png").write_bytes(blk[0])
    return path


def build_parser() -> argparse.ArgumentParser:
    """CLI of ``occustream audit``."""
    p = argparse.ArgumentParser(
        prog="occustream audit",
        description="Attack simulated occupancy releases: posteriors from true counts (eq. 4.3) "
        "and from Laplace, PeGaSus and TTL outputs (eq. 4.4, known or KDE-learned noise), the "
        "worst-case DP bound, for the external, student and administrator attackers "
        "(thesis ch. 4). Writes a report with the tables and plots.",
    )
    ev.add_data_arguments(p, tick_s=600.0)
    p.add_argument("--runs", type=int, default=10, help="noise draws averaged (default 10)")
    p.add_argument(
        "--attackers",
        default=",".join(ATTACKERS),
        help="comma list of external, student, administrator (default all)",
    )
    p.add_argument(
        "--mechanisms",
        default=",".join(AUDITED),
        help=f"comma list from {', '.join(AUDITED)} (default all)",
    )
    p.add_argument("--epsilon-laplace", type=float, help="Laplace ε (default: tuned)")
    p.add_argument("--epsilon-pegasus", type=float, help="PeGaSus ε (default: tuned)")
    p.add_argument("--ttl-s", type=float, help="TTL in seconds (default: tuned)")
    p.add_argument(
        "--target",
        type=float,
        default=0.75,
        help="colour utility every mechanism is tuned to (default 0.75)",
    )
    p.add_argument(
        "--period",
        choices=tune_mod.PERIODS,
        default="day",
        help="period the utility is tuned on (default day)",
    )
    p.add_argument(
        "--guess",
        choices=("argmax", "all"),
        default="argmax",
        help="count only correct guesses (argmax, default) or everyone (all)",
    )
    p.add_argument("--bandwidth-scale", type=float, default=0.1, help="KDE bandwidth scale")
    p.add_argument(
        "--day-night",
        action="store_true",
        help="tune each mechanism separately for day (07-19) and night and attack each "
        "period with its own parameters (thesis Table 4.2 / §4.6.2); ignores --period",
    )
    p.add_argument(
        "--delta-study",
        action="store_true",
        help="instead: randomly opened regions holding δ ∈ {0, 0.5, 0.9} of the people, "
        "Laplace at ε ∈ {0.1, 1, 5} with known / KDE noise and the DP bound (thesis §4.6.1, "
        "Figs 4.3–4.6)",
    )
    p.add_argument("--report", type=Path, default=Path("out/audit"), help="output folder")
    p.add_argument("--format", choices=("html", "md"), default="html", help="report format")
    return p


def _check_audited(mechanisms: Sequence[str]) -> None:
    bad = [m for m in mechanisms if m not in AUDITED]
    if bad:
        raise InvalidParameterError(f"mechanisms must be among {list(AUDITED)}, not {bad}")


def _cell(c: object) -> str:
    """A summary-table value as the CLI prints it (floats to one decimal)."""
    return f"{c:.1f}" if isinstance(c, float) else str(c)


def main(argv: list[str]) -> int:
    """Entry point of ``occustream audit``."""
    args = build_parser().parse_args(argv)
    attackers = [a.strip() for a in args.attackers.split(",") if a.strip()]
    bad = [a for a in attackers if a not in ATTACKERS]
    if bad or not attackers:
        raise InvalidParameterError(f"attackers must be among {list(ATTACKERS)}, not {bad}")
    mechs = [m.strip() for m in args.mechanisms.split(",") if m.strip()]
    if not 0 < args.target <= 1:
        raise InvalidParameterError(f"target must be in (0, 1], not {args.target!r}")
    check_positive("runs", args.runs)
    _check_audited(mechs)  # bad values fail before the (long) simulation
    given = {"laplace": args.epsilon_laplace, "pegasus": args.epsilon_pegasus, "ttl": args.ttl_s}
    for k, v in given.items():
        if v is not None:
            check_positive(k, v)
    data = ev.data_from_args(args)
    if args.delta_study:
        rows = audit_delta.delta_study(data, runs=args.runs,
                                       bandwidth_scale=args.bandwidth_scale)
        args.report.mkdir(parents=True, exist_ok=True)
        fig = audit_delta.plot(rows, data.hour[data.eval_mask],
                               args.report / "fig_4_3_to_4_6_delta.png")
        headers, table = audit_delta.table(rows)
        write_table(headers, table, f"figure: {fig}", cell=_cell)
        return 0
    if args.day_night:
        by = equal_utility_params_by_period(data, args.target)
        per = {p: {k: float(v if v is not None else by[p][k]) for k, v in given.items()}
               for p in tune_mod.PERIODS}
        results = audit_day_night(data, per["day"], per["night"], attackers=attackers,
                                  mechanisms=mechs, runs=args.runs, guess=args.guess,
                                  bandwidth_scale=args.bandwidth_scale)
        params = {f"{k} ({p})": v for p in tune_mod.PERIODS for k, v in per[p].items()}
        path = write_report(results, params, data, args.report, args.format,
                            note=f"tuned to {args.target:.0%} colour utility per period")
        headers, rows = summary_rows(results)
        write_table(headers, rows,
                    "parameters: " + ", ".join(f"{k}={v:.4g}" for k, v in params.items()),
                    f"report: {path}", cell=_cell)
        return 0
    note = "given"
    if any(v is None for v in given.values()):
        tuned = equal_utility_params(data, args.target, args.period)
        given = {k: (tuned[k] if v is None else v) for k, v in given.items()}
        note = f"tuned to {args.target:.0%} colour utility ({args.period})"
    params = {k: float(v) for k, v in given.items() if v is not None}
    results = audit(
        data,
        params,
        attackers=attackers,
        mechanisms=mechs,
        runs=args.runs,
        guess=args.guess,
        bandwidth_scale=args.bandwidth_scale,
    )
    path = write_report(results, params, data, args.report, args.format, note=note)
    headers, rows = summary_rows(results)
    write_table(headers, rows, f"report: {path}", cell=_cell)
    return 0
