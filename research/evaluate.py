"""``occustream evaluate`` — compare release mechanisms on simulated data (issue 3 item 6).

Python API (the CLI is a thin wrapper):

* :func:`load_data` simulates a building for ``days`` (``simulator.simulate``) and
  computes the true occupancy with :func:`occupancy.oracle.occupancy_oracle` on
  whole days of ticks → :class:`EvalData`; :func:`from_events` does the same for
  any event list.
* :func:`release` runs one mechanism over the whole stream: ``laplace``,
  ``pegasus`` (average smoother), ``pegasus-median``, ``pegasus-js``, ``pegasus-post``
  (Grouper as post-processing of a full-ε Perturber), ``pegasus-filter`` (a Bayes
  filter as Grouper and Smoother of a full-ε Perturber; ``hpegasus-filter`` adds the
  floors and buildings as sums of its rooms),
  ``hierarchical`` (building → floor → location) at a given ε, or ``ttl`` at a
  given TTL (counts of TTL-salt pseudonyms, same oracle).
* :func:`metrics` scores a released stream: per-tick MAE, MAE by hour of day,
  sliding-window-sum MAE (1 h windows), event-detection ROC (jump detection swept
  over a threshold), heatmap colour utility day/night (docs/DESIGN.md "Heatmap colour":
  μ, σ per location and time of day from the *released* stream of the training
  days, scored on the last ``eval_days``), and the four analysis tasks of
  :mod:`research.tasks`.
* :func:`evaluate` runs a grid of mechanisms × parameters × runs;
  :func:`tune_table` produces the Table 4.2 equivalent through
  :mod:`research.tune`; :func:`write_report` writes tables, PNG plots and a
  self-contained HTML (or Markdown) report.

Day is 07:00–19:00 and night 19:00–07:00 (thesis Figs 4.7–4.9). Evaluation sees true
counts: it is an offline research tool and never publishes anything.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import math
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

import simulator
from mechanisms import registry
from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.pseudonym import ttl_pseudonym
from occupancy.buildings import Site, load_site
from occupancy.heatmap import baselines, colour_class
from occupancy.oracle import occupancy_oracle
from research import queries
from research import tasks as task_lib
from research import tuning as tune_mod
from research.report import Report, new_figure

log = logging.getLogger(__name__)

#: evaluation name → (registry mechanism, PeGaSus smoother): the variants differ only in
#: public parameters; what each mechanism is comes from :mod:`mechanisms.registry`.
VARIANTS: dict[str, tuple[str, str]] = {
    "laplace": ("laplace", "average"),
    "pegasus": ("pegasus", "average"),
    "pegasus-median": ("pegasus", "median"),
    "pegasus-js": ("pegasus", "js"),
    "pegasus-post": ("pegasus-post", "average"),
    "hierarchical": ("hpegasus", "average"),
    "pegasus-filter": ("pegasus-filter", "average"),
    "hpegasus-filter": ("hpegasus-filter", "average"),
    "ttl": ("ttl", "average"),
}
MECHANISMS: tuple[str, ...] = tuple(VARIANTS)
DAY_HOURS = (7.0, 19.0)
WINDOW_TICKS = 12  # sliding-window sums over 1 h at 300 s ticks
ROC_WINDOW = 3  # jump detection: sums over 3 ticks vs the 3 before
ROC_EVENT = 10.0  # a true event: the 3-tick sum rises by more than 10
ROC_THRESHOLDS = np.linspace(-30.0, 90.0, 61)
DEFAULT_EPSILONS = (0.1, 0.5, 1.0, 2.0)
DEFAULT_TTLS_S = (60.0, 300.0, 1800.0)
#: Secret for evaluation-only TTL pseudonyms (never used for a real deployment).
_EVAL_KEY = b"occustream-evaluation-only-key-0"


def parse_mechanisms(text: str) -> list[str]:
    """Comma list → validated mechanism names."""
    mechs = [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in mechs if m not in MECHANISMS]
    if bad or not mechs:
        raise InvalidParameterError(
            f"mechanisms must be among {list(MECHANISMS)}, not {bad or text!r}"
        )
    return mechs


@dataclass(frozen=True)
class EvalData:
    """True occupancy of whole simulated days plus what the mechanisms need."""

    site: Site
    ticks: np.ndarray  # (T,) epoch s, whole days
    true: np.ndarray  # (T, L) int
    tick_s: float
    events: Callable[[], Iterable[dict[str, Any]]]  # regenerates the events (for TTL)
    truth: Any = None  # simulator ground truth (scenarios), if any
    eval_days: int = 1
    _cache: dict[Any, np.ndarray] = field(default_factory=dict, compare=False, repr=False)

    @property
    def n_days(self) -> int:
        """Number of whole days."""
        return int(round(len(self.ticks) * self.tick_s / 86400))

    @property
    def slots_per_day(self) -> int:
        """Ticks per day."""
        return int(round(86400 / self.tick_s))

    @property
    def slot(self) -> np.ndarray:
        """Time-of-day slot of each tick."""
        return ((self.ticks % 86400) // self.tick_s).astype(np.int64)

    @property
    def hour(self) -> np.ndarray:
        """Hour of day (float) of each tick."""
        return (self.ticks % 86400) / 3600.0

    @property
    def day_mask(self) -> np.ndarray:
        """Ticks in the day period (07:00–19:00)."""
        h = self.hour
        return (h >= DAY_HOURS[0]) & (h < DAY_HOURS[1])

    @property
    def eval_mask(self) -> np.ndarray:
        """Ticks of the scored (last ``eval_days``) days."""
        n_eval = self.eval_days * self.slots_per_day
        m = np.zeros(len(self.ticks), dtype=bool)
        m[-n_eval:] = True
        return m


def _whole_day_ticks(t_first: float, days: int, tick_s: float) -> np.ndarray:
    day0 = math.floor(t_first / 86400) * 86400
    n = int(round(days * 86400 / tick_s))
    return day0 + np.arange(n, dtype=np.float64) * tick_s


def from_events(
    site: Site,
    events: Callable[[], Iterable[dict[str, Any]]],
    *,
    days: int,
    tick_s: float = 300.0,
    truth: Any = None,
    eval_days: int = 1,
    start_s: float | None = None,
) -> EvalData:
    """Build :class:`EvalData` from an event factory (called once here, again for TTL)."""
    tick_s = _check_grid(days, eval_days, tick_s)
    if start_s is None:
        first = next(iter(events()), None)
        if first is None:
            raise InvalidParameterError("no events to evaluate")
        start_s = float(first["ts"])
    ticks = _whole_day_ticks(start_s, days, tick_s)
    table = occupancy_oracle(
        events(), site.ap_location, site.location_ids, tick_s=tick_s, ticks=ticks
    )
    return EvalData(site, ticks, table.counts.astype(np.int64), tick_s, events, truth, eval_days)


def _check_grid(days: int, eval_days: int, tick_s: float) -> float:
    tick_s = check_positive("tick_s", tick_s)
    if 86400 % tick_s:
        raise InvalidParameterError(f"tick_s must divide a day, not {tick_s!r}")
    if days < 2 or not 1 <= eval_days < days:
        raise InvalidParameterError(
            f"days must be >= 2 and eval_days in [1, days), not days={days!r}, "
            f"eval_days={eval_days!r}"
        )
    return tick_s


def load_data(
    building: str,
    *,
    days: int = 8,
    seed: int = 1,
    tick_s: float = 300.0,
    eval_days: int = 1,
    scenarios: Any = None,
    scale: float = 1.0,
) -> EvalData:
    """Simulate ``building`` for ``days`` and compute its true occupancy.

    ``scale`` multiplies the simulated population (1.0 ≈ the thesis' volume).
    """
    site = load_site(building)
    _check_grid(days, eval_days, tick_s)  # before the log line: one error line on bad input
    kwargs: dict[str, Any] = {"days": days, "seed": seed, "scale": scale}
    if scenarios is not None:
        kwargs["scenarios"] = scenarios
    log.info("simulating %s for %d days (seed %d)", site.id, days, seed)
    sim = simulator.simulate(site, **kwargs)
    start_s = float(sim.start_ts)
    return from_events(
        site,
        sim.events,
        days=days,
        tick_s=tick_s,
        truth=getattr(sim, "truth", None),
        eval_days=eval_days,
        start_s=start_s,
    )


# ------------------------------------------------------------------------ mechanisms


def release(
    data: EvalData, mechanism: str, param: float, *, rng: np.random.Generator | None = None
) -> np.ndarray:
    """Released stream (T, L) of one mechanism over the whole evaluation period.

    Args:
        data: the evaluation data.
        mechanism: one of :data:`MECHANISMS`.
        param: ε (per tick, event-level) or, for ``ttl``, the TTL in seconds.
        rng: generator for the noise (None → the project's CSPRNG-seeded generator).
    """
    if mechanism not in MECHANISMS:
        raise InvalidParameterError(
            f"mechanism must be one of {list(MECHANISMS)}, not {mechanism!r}"
        )
    name, smoother = VARIANTS[mechanism]
    if no_guarantee(mechanism):  # the TTL chain: param is the salt lifetime
        param = check_positive("ttl_s", param)
        key = ("ttl", param)
        if key not in data._cache:
            data._cache[key] = _ttl_counts(data, param)
        return data._cache[key]
    params = registry.ReleaseParams(
        epsilon=check_positive("epsilon", param), smoother=smoother,
        paths=tuple(tuple(p) for p in data.site.hierarchy()),
        capacities=tuple(data.site.capacities))
    mech = registry.build(name, params)
    true = data.true
    out = np.empty(true.shape, dtype=float)
    state: bytes | None = None
    for i in range(true.shape[0]):  # the same state machine the release stage runs
        step = mech.update(state, true[i], rng=rng)
        state, out[i] = step.state, step.values
    return out


def no_guarantee(mechanism: str) -> bool:
    """Whether an evaluation mechanism has no formal guarantee (its parameter is a TTL)."""
    return registry.without_guarantee(VARIANTS[mechanism][0])


def _ttl_counts(data: EvalData, ttl_s: float) -> np.ndarray:
    states: dict[str, Any] = {}

    def identity(obs: Any) -> str:
        pseud, states[obs.device] = ttl_pseudonym(
            _EVAL_KEY, obs.device, obs.ts, states.get(obs.device), ttl_s
        )
        return pseud

    table = occupancy_oracle(
        data.events(),
        data.site.ap_location,
        data.site.location_ids,
        tick_s=data.tick_s,
        ticks=data.ticks,
        identity=identity,
    )
    return table.counts.astype(float)


# ------------------------------------------------------------------------ metrics


def colour_utility_by_period(
    data: EvalData, released: np.ndarray
) -> dict[str, tuple[float, float]]:
    """Colour utility and σ_u (%-points, std over ticks) for day, night and all.

    Baselines μ, σ per (slot, location) come from the released stream of the
    training days (post-processing, as the dashboard does); cells of the last
    ``eval_days`` are scored.
    """
    train = ~data.eval_mask
    mu, sigma = baselines(released[train], data.slot[train], data.slots_per_day)
    mu = np.nan_to_num(mu)
    sigma = np.nan_to_num(sigma)
    ev = data.eval_mask
    s = data.slot[ev]
    same = colour_class(released[ev], mu[s], sigma[s]) == colour_class(
        data.true[ev], mu[s], sigma[s]
    )
    per_tick = same.mean(axis=1)
    day = data.day_mask[ev]
    out = {}
    for name, m in (("day", day), ("night", ~day), ("all", np.ones_like(day))):
        out[name] = (float(same[m].mean()), float(per_tick[m].std() * 100))
    return out


def task_setup(data: EvalData) -> dict[str, dict[str, Any]]:
    """Parameters of the four tasks for this data (rooms, thresholds, scenario truths)."""
    true = data.true
    setup: dict[str, dict[str, Any]] = {}
    busiest = int(np.argmax(true.mean(axis=0)))
    setup["exceed"] = {"loc": busiest, "threshold": float(math.ceil(0.5 * true[:, busiest].max()))}
    floors = list(dict.fromkeys(loc.floor for loc in data.site.locations))
    setup["night_region"] = {
        "region_of": np.array([floors.index(loc.floor) for loc in data.site.locations]),
        "mask": task_lib.night_mask(data.ticks),
    }
    broken = _scenario(data, "broken_ap")
    if broken is not None:
        setup["broken_sensor"] = broken
    weekly = _scenario(data, "weekly_meeting")
    if weekly is not None and data.n_days >= 7:
        setup["weekly_event"] = weekly
    return setup


def _scenario(data: EvalData, kind: str) -> dict[str, Any] | None:
    """The first ``kind`` scenario (``broken_ap``, ``weekly_meeting``) of the simulator truth.

    Returns the location index and the tick index of its start, or None. The scenario
    picks the room; the task's true answer is the answer on the true stream (the
    game's rule: points for results similar to those on the true data), which can be
    earlier than the injected time (e.g. a room already empty before its AP broke).
    """
    truth = data.truth if isinstance(data.truth, dict) else {}
    for sc in truth.get("scenarios", []):
        if sc.get("type") == kind and sc.get("location") in data.site.location_index:
            tick = int(np.searchsorted(data.ticks, float(sc["start_ts"])))
            if tick < len(data.ticks):
                return {"loc": data.site.location_index[sc["location"]], "truth_tick": tick}
    return None


def task_scores(
    data: EvalData, released: np.ndarray, setup: dict[str, dict[str, Any]]
) -> dict[str, float]:
    """Normalised accuracy of each task answered from ``released``."""
    out: dict[str, float] = {}
    true = data.true
    ex = setup["exceed"]
    out["exceed"] = task_lib.score_exceed(
        released[:, ex["loc"]], true[:, ex["loc"]], ex["threshold"]
    ).accuracy
    nr = setup["night_region"]
    out["night_region"] = task_lib.score_night_region(
        released, true, nr["region_of"], nr["mask"]
    ).accuracy
    if "broken_sensor" in setup:
        b = setup["broken_sensor"]
        out["broken_sensor"] = task_lib.score_broken_sensor(
            released[:, b["loc"]], true[:, b["loc"]]
        ).accuracy
    if "weekly_event" in setup:
        w = setup["weekly_event"]
        out["weekly_event"] = task_lib.score_weekly_event(
            released[:, w["loc"]],
            true[:, w["loc"]],
            7 * data.slots_per_day,
        ).accuracy
    return out


def roc_curve(true: np.ndarray, released: np.ndarray) -> Any:
    """Event-detection ROC (:func:`research.queries.roc_sweep`) for jumps.

    An event is a rise of the sum over the last :data:`ROC_WINDOW` ticks by more than
    :data:`ROC_EVENT` people-ticks against the window before, in the true stream;
    the released stream is swept over thresholds.
    """
    return queries.roc_sweep(released, true, "jump", ROC_EVENT, ROC_THRESHOLDS, ROC_WINDOW)


def metrics(
    data: EvalData, released: np.ndarray, setup: dict[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """All figures of one released stream (module docstring)."""
    true = data.true.astype(float)
    err = np.abs(released - true)
    hours = data.hour.astype(int)
    by_hour = np.bincount(hours, weights=err.mean(axis=1), minlength=24) / np.maximum(
        np.bincount(hours, minlength=24), 1
    )
    w_rel = queries.sliding_window_sum(released, WINDOW_TICKS)
    w_true = queries.sliding_window_sum(true, WINDOW_TICKS)
    util = colour_utility_by_period(data, released)
    out: dict[str, Any] = {
        "mae": float(err.mean()),
        "mae_by_hour": by_hour,
        "window_mae": float(np.abs(np.asarray(w_rel) - np.asarray(w_true)).mean()),
        "utility_day": util["day"][0],
        "utility_night": util["night"][0],
        "sigma_u_day": util["day"][1],
        "sigma_u_night": util["night"][1],
        "roc": roc_curve(true, released),
        "tasks": task_scores(data, released, setup or task_setup(data)),
    }
    return out


@dataclass(frozen=True)
class EvalRow:
    """Metrics of one (mechanism, parameter), averaged over runs."""

    mechanism: str
    param_name: str
    param: float
    runs: int
    mae: float
    mae_sd: float
    window_mae: float
    utility_day: float
    utility_night: float
    sigma_u_day: float
    sigma_u_night: float
    mae_by_hour: np.ndarray
    roc: np.ndarray  # (n, 2) FPR, TPR of the first run
    roc_auc: float
    tasks: dict[str, float]


def evaluate(
    data: EvalData,
    mechanisms: Sequence[str],
    epsilons: Sequence[float] = DEFAULT_EPSILONS,
    ttls_s: Sequence[float] = DEFAULT_TTLS_S,
    *,
    runs: int = 3,
    seed: int = 0,
    progress: bool = True,
) -> list[EvalRow]:
    """Metrics for every mechanism × parameter, averaged over ``runs`` noise draws."""
    if runs < 1:
        raise InvalidParameterError(f"runs must be >= 1, not {runs!r}")
    setup = task_setup(data)
    jobs = [(m, float(p)) for m in mechanisms for p in (ttls_s if no_guarantee(m) else epsilons)]
    rows = []
    bar = tqdm(jobs, desc="evaluate", file=sys.stderr, disable=not progress)
    for mech, p in bar:
        bar.set_postfix_str(f"{mech} {p:g}")
        n = 1 if no_guarantee(mech) else runs
        ms = [
            metrics(data, release(data, mech, p, rng=np.random.default_rng([seed, r])), setup)
            for r in range(n)
        ]
        rows.append(
            EvalRow(
                mechanism=mech,
                param_name="ttl_s" if no_guarantee(mech) else "epsilon",
                param=p,
                runs=n,
                mae=float(np.mean([m["mae"] for m in ms])),
                mae_sd=float(np.std([m["mae"] for m in ms])),
                window_mae=float(np.mean([m["window_mae"] for m in ms])),
                utility_day=float(np.mean([m["utility_day"] for m in ms])),
                utility_night=float(np.mean([m["utility_night"] for m in ms])),
                sigma_u_day=float(np.mean([m["sigma_u_day"] for m in ms])),
                sigma_u_night=float(np.mean([m["sigma_u_night"] for m in ms])),
                mae_by_hour=np.mean([m["mae_by_hour"] for m in ms], axis=0),
                roc=np.column_stack([ms[0]["roc"].fpr, ms[0]["roc"].tpr]),
                roc_auc=float(np.mean([m["roc"].auc() for m in ms])),
                tasks={k: float(np.mean([m["tasks"][k] for m in ms])) for k in ms[0]["tasks"]},
            )
        )
    return rows


def check_utility(utility: str) -> None:
    """Raise InvalidParameterError unless ``utility`` is ``colour`` or a task name."""
    if utility != "colour" and utility not in task_lib.TASKS:
        raise InvalidParameterError(
            f"utility must be 'colour' or one of {list(task_lib.TASKS)}, not {utility!r}"
        )


def tune_table(
    data: EvalData,
    mechanisms: Sequence[str],
    targets: Sequence[float],
    *,
    runs: int = 5,
    utility: str = "colour",
    seed: int = 0,
    progress: bool = True,
) -> list[tune_mod.TuneRow]:
    """Table 4.2: the parameter each mechanism needs for each target, day and night."""
    check_utility(utility)
    if runs < 1:
        raise InvalidParameterError(f"runs must be >= 1, not {runs!r}")
    setup = task_setup(data)
    if utility != "colour" and utility not in setup:
        raise InvalidParameterError(f"task {utility!r} needs a simulator scenario this data lacks")
    cache: dict[tuple[str, float], list[dict[str, tuple[float, float]]]] = {}

    def evaluator(mech: str, p: float, period: str) -> tuple[np.ndarray, float]:
        if (mech, p) not in cache:
            n = 1 if no_guarantee(mech) else runs
            res = []
            for r in range(n):
                rel = release(data, mech, p, rng=np.random.default_rng([seed, r]))
                if utility == "colour":
                    res.append(colour_utility_by_period(data, rel))
                else:
                    acc = task_scores(data, rel, setup)[utility]
                    res.append({k: (acc, math.nan) for k in ("day", "night", "all")})
            cache[(mech, p)] = res
        res = cache[(mech, p)]
        return np.array([r[period][0] for r in res]), float(np.mean([r[period][1] for r in res]))

    periods = tune_mod.PERIODS if utility == "colour" else ("all",)
    bar = tqdm(
        total=len(mechanisms) * len(periods) * len(targets),
        desc="tune",
        file=sys.stderr,
        disable=not progress,
    )

    def step(msg: str) -> None:
        bar.set_postfix_str(msg)
        bar.update(1)

    rows = tune_mod.table_4_2(mechanisms, targets, evaluator, progress=step, periods=periods)
    bar.close()
    return rows


# ------------------------------------------------------------------------ report


def _mech_label(row: EvalRow) -> str:
    return f"{row.mechanism} ({'TTL' if row.param_name == 'ttl_s' else 'ε'}={row.param:g})"


#: (column header, EvalRow attribute) of the results table and CSV.
_COLUMNS: tuple[tuple[str, str], ...] = (
    ("mechanism", "mechanism"),
    ("parameter", "param_name"),
    ("value", "param"),
    ("runs", "runs"),
    ("MAE", "mae"),
    ("MAE sd", "mae_sd"),
    ("1 h window MAE", "window_mae"),
    ("ROC AUC", "roc_auc"),
    ("utility day", "utility_day"),
    ("utility night", "utility_night"),
    ("σ_u day", "sigma_u_day"),
    ("σ_u night", "sigma_u_night"),
)


def eval_table(
    rows: Sequence[EvalRow], *, machine: bool = False
) -> tuple[list[str], list[list[Any]]]:
    """Headers and rows of the results table (one column per task accuracy at the end).

    ``machine=True`` gives attribute names as headers (for the CSV).
    """
    task_names = sorted({k for r in rows for k in r.tasks})
    headers = [a if machine else h for h, a in _COLUMNS]
    headers += [t if machine else f"task {t}" for t in task_names]
    body = [
        [getattr(r, a) for _, a in _COLUMNS] + [r.tasks.get(t, math.nan) for t in task_names]
        for r in rows
    ]
    return headers, body


def add_eval_section(report: Report, rows: Sequence[EvalRow], data: EvalData) -> None:
    """Tables and plots of :func:`evaluate` results."""
    report.heading("Utility of each mechanism")
    report.paragraph(
        f"Building {data.site.id}: {data.true.shape[1]} locations, {data.n_days} simulated days, "
        f"tick {data.tick_s:g} s; colour utility scored on the last {data.eval_days} day(s) "
        "against baselines from the released stream of the earlier days. ε is per tick, "
        "event-level (one device, one tick). TTL: " + tune_mod.TTL_GUARANTEE + "."
    )
    task_names = sorted({k for r in rows for k in r.tasks})
    headers, body = eval_table(rows)
    headers.append("guarantee")
    for r, line in zip(rows, body, strict=True):
        line.append(tune_mod.TTL_GUARANTEE if no_guarantee(r.mechanism) else "ε-DP (event-level)")
    report.table(headers, body)
    dp = [r for r in rows if r.param_name == "epsilon"]
    mechs = list(dict.fromkeys(r.mechanism for r in dp))
    if dp:
        fig, axes = new_figure(12, 3.6, ncols=3)
        for m in mechs:
            rs = [r for r in dp if r.mechanism == m]
            eps = [r.param for r in rs]
            axes[0].plot(eps, [r.mae for r in rs], "o-", label=m)
            axes[1].plot(eps, [r.utility_day for r in rs], "o-", label=m)
            axes[2].plot(eps, [r.utility_night for r in rs], "o-", label=m)
        for ax, t in zip(
            axes, ("per-tick MAE", "colour utility (day)", "colour utility (night)"), strict=True
        ):
            ax.set_xscale("log")
            ax.set_xlabel("ε")
            ax.set_title(t, fontsize=9)
        axes[0].set_yscale("log")
        axes[0].legend(fontsize=7)
        report.figure(fig, "MAE and colour utility vs ε", "mae-utility-vs-eps")
        fig, ax = new_figure(8, 3.5)
        for r in rows:
            if r.param_name == "ttl_s" or abs(r.param - 1.0) < 1e-9:
                ax.plot(np.arange(24), r.mae_by_hour, label=_mech_label(r))
        ax.set_xlabel("hour of day")
        ax.set_ylabel("MAE")
        ax.legend(fontsize=7)
        report.figure(fig, "Error by time of day (ε = 1 and TTL)", "error-by-hour")
        fig, ax = new_figure(5, 4.5)
        for r in rows:
            if r.roc.size and (r.param_name == "ttl_s" or abs(r.param - 1.0) < 1e-9):
                ax.plot(r.roc[:, 0], r.roc[:, 1], label=_mech_label(r))
        ax.plot([0, 1], [0, 1], ":", color="grey")
        ax.set_xlabel("false positive rate")
        ax.set_ylabel("true positive rate")
        ax.legend(fontsize=7)
        report.figure(fig, "Event detection ROC (jumps, ε = 1 and TTL)", "roc")
        if task_names:
            fig, axes = new_figure(3.2 * len(task_names), 3.2, ncols=len(task_names), squeeze=False)
            for ax, t in zip(axes[0], task_names, strict=True):
                for m in mechs:
                    rs = [r for r in dp if r.mechanism == m]
                    ax.plot(
                        [r.param for r in rs], [r.tasks.get(t, math.nan) for r in rs], "o-", label=m
                    )
                ax.set_xscale("log")
                ax.set_ylim(-0.05, 1.05)
                ax.set_xlabel("ε")
                ax.set_title(t, fontsize=9)
            axes[0][0].set_ylabel("accuracy")
            axes[0][0].legend(fontsize=7)
            report.figure(fig, "Analysis-task accuracy vs ε (thesis §3.2)", "tasks-vs-eps")


def add_tune_section(report: Report, rows: Sequence[tune_mod.TuneRow], utility: str) -> None:
    """The Table 4.2 equivalent."""
    report.heading("Parameters achieving the same utility (thesis Table 4.2)")
    report.paragraph(
        f"Utility: {'heatmap colour agreement' if utility == 'colour' else 'task ' + utility}. "
        "Smallest ε (or TTL) whose mean utility over the runs meets the target; σ_u is the "
        "standard deviation of per-tick utility over time, in percentage points. "
        f"TTL: {tune_mod.TTL_GUARANTEE}."
    )
    headers, body = tune_mod.rows_table(rows)
    report.table(headers, body)


def write_report(
    rows: Sequence[EvalRow],
    tune_rows: Sequence[tune_mod.TuneRow],
    data: EvalData,
    out: Path,
    fmt: str = "html",
    *,
    utility: str = "colour",
    stem: str = "evaluate",
) -> Path:
    """Write CSV/JSON tables, PNG plots and the report into ``out``; return its path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    report = Report(f"occustream {stem} — {data.site.id}")
    if rows:
        add_eval_section(report, rows, data)
        headers, body = eval_table(rows, machine=True)
        with (out / "evaluate.csv").open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(headers)
            w.writerows(body)
    if tune_rows:
        add_tune_section(report, tune_rows, utility)
        (out / "table_4_2.json").write_text(
            json.dumps([r.__dict__ for r in tune_rows], indent=2, default=float) + "\n"
        )
    # the names the Markdown report uses (report.Report._markdown): one file per figure
    figures = [blk for kind, blk in report.blocks if kind == "f"]
    for n, blk in enumerate(figures, 1):
        (out / f"{stem}-{n:02d}-{blk[2]}.png").write_bytes(blk[0])
    return report.write(out, fmt, stem=stem)


def write_tune_report(
    rows: Sequence[tune_mod.TuneRow],
    data: EvalData,
    out: Path,
    fmt: str = "html",
    *,
    utility: str = "colour",
) -> Path:
    """Report with the Table 4.2 equivalent only."""
    return write_report([], rows, data, out, fmt, utility=utility, stem="tune")


# ------------------------------------------------------------------------ CLI


def add_data_arguments(p: argparse.ArgumentParser, *, tick_s: float = 300.0, days: int = 8) -> None:
    """The simulated-data options shared by ``evaluate``, ``tune`` and ``audit``."""
    p.add_argument("--building", default="dbh", help="building name or JSON path (default dbh)")
    p.add_argument(
        "--days",
        type=int,
        default=days,
        help=f"simulated days; the last is scored, the earlier ones give baselines/priors "
        f"(default {days})",
    )
    p.add_argument("--seed", type=int, default=1, help="simulation seed (default 1)")
    p.add_argument("--scale", type=float, default=1.0, help="population multiplier (default 1)")
    p.add_argument(
        "--tick-s", type=float, default=tick_s, help=f"tick length in s (default {tick_s:g})"
    )


def data_from_args(args: argparse.Namespace, *, eval_days: int = 1) -> EvalData:
    """:func:`load_data` from the options of :func:`add_data_arguments`."""
    return load_data(
        args.building,
        days=args.days,
        seed=args.seed,
        tick_s=args.tick_s,
        eval_days=eval_days,
        scale=args.scale,
    )


def build_parser() -> argparse.ArgumentParser:
    """CLI of ``occustream evaluate``."""
    p = argparse.ArgumentParser(
        prog="occustream evaluate",
        description="Compare Laplace, PeGaSus (each smoother), hierarchical PeGaSus and TTL "
        "on simulated data: MAE, error by hour, window-sum error, event ROC, colour utility, "
        "analysis tasks, and the ε/TTL each needs for 75 % and 90 % utility (Table 4.2).",
    )
    add_data_arguments(p)
    p.add_argument("--eval-days", type=int, default=1, help="days scored for utility (default 1)")
    p.add_argument(
        "--mechanisms",
        default=",".join(MECHANISMS),
        help=f"comma list from {', '.join(MECHANISMS)} (default all)",
    )
    p.add_argument(
        "--epsilons",
        default=",".join(f"{e:g}" for e in DEFAULT_EPSILONS),
        help="ε values per tick (default 0.1,0.5,1,2)",
    )
    p.add_argument(
        "--ttls",
        default=",".join(f"{t:g}" for t in DEFAULT_TTLS_S),
        help="TTL values in s (default 60,300,1800)",
    )
    p.add_argument("--runs", type=int, default=3, help="noise draws per setting (default 3)")
    p.add_argument(
        "--table42",
        choices=("on", "off"),
        default="on",
        help="also tune the Table 4.2 equivalent (default on)",
    )
    p.add_argument(
        "--tune-mechanisms",
        default="laplace,pegasus,ttl",
        help="mechanisms in Table 4.2 (default laplace,pegasus,ttl)",
    )
    p.add_argument("--targets", default="0.75,0.9", help="Table 4.2 utility targets")
    p.add_argument("--tune-runs", type=int, default=3, help="runs per tuning step (default 3)")
    p.add_argument("--out", type=Path, default=Path("out/evaluate"), help="output folder")
    p.add_argument("--format", choices=("html", "md"), default="html", help="report format")
    return p


def _floats(text: str, name: str) -> list[float]:
    try:
        vals = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InvalidParameterError(
            f"{name} must be a comma list of numbers, not {text!r}"
        ) from None
    for v in vals:
        check_positive(name, v)
    return vals


def main(argv: list[str]) -> int:
    """Entry point of ``occustream evaluate``."""
    args = build_parser().parse_args(argv)
    mechs = parse_mechanisms(args.mechanisms)
    eps = _floats(args.epsilons, "epsilons")
    ttls = _floats(args.ttls, "ttls")
    targets = _floats(args.targets, "targets")
    data = data_from_args(args, eval_days=args.eval_days)
    rows = evaluate(data, mechs, eps, ttls, runs=args.runs)
    tune_rows = []
    if args.table42 == "on":
        tune_rows = tune_table(
            data, parse_mechanisms(args.tune_mechanisms), targets, runs=args.tune_runs
        )
    path = write_report(rows, tune_rows, data, args.out, args.format)
    print(f"{'mechanism':<16}{'param':>10}{'MAE':>10}{'util day':>10}{'util night':>11}")
    for r in rows:
        print(
            f"{r.mechanism:<16}{r.param:>10g}{r.mae:>10.3f}{r.utility_day:>10.3f}"
            f"{r.utility_night:>11.3f}"
        )
    if tune_rows:
        headers, body = tune_mod.rows_table(tune_rows)
        print("\t".join(headers))
        for b in body:
            print("\t".join(str(c) for c in b))
    print(f"report: {path}")
    return 0
