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
  never in ``tables.md``) — :mod:`streams.tools.mide_thesis`, which also explains why the
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
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from mechanisms.errors import ConfigError, InvalidParameterError
from mechanisms.mide import decide, posterior_bounds
from mechanisms.mide.aggregates import avg_query, count_query
from mechanisms.mide.complex import And, Leaf, Or, answer, truth
from mechanisms.mide.entropy import min_entropy_solution
from mechanisms.mide.mechanisms import single_step_epsilon
from streams.tools import mide_thesis

log = logging.getLogger(__name__)

#: "dppwlm-r" is DPPWLM with the public value range [0, 3·capacity] for its estimate.
ALGORITHMS = ("naive", "tslm", "ppwlm", "dppwlm", "dppwlm-r")
RANGE_FACTOR = 3.0
LEVELS = {"H": 1.0, "M": 0.8, "L": 0.6}
HOURS = tuple(range(7, 22))  # windows [7:00, 8:00) … [21:00, 22:00)
BETAS = tuple(round(0.01 * i, 2) for i in range(1, 11))
ALPHAS = (1, *range(10, 201, 10))
DEFAULTS = {"epsilon_max": 4.0, "epsilon_1": 1e-5, "steps": 4, "fine_steps": 3}
WEEKDAY, WEEKEND = 1, 5  # Tuesday, Saturday of a Monday-start simulation
MAIN_BETA, MAIN_ALPHA = 0.05, 1.0  # the main table; also the fixed β / α of the sweeps
#: parts of a run (``--skip``); a2 / a3 / ordering: :mod:`streams.tools.mide_thesis`
PARTS = ("main", "beta", "alpha", "complex", "ordering", "a2", "a3", "plots")
#: footnote of a table with a γ cell marked "≥" (see :func:`markdown`)
GAMMA_NOTE = (
    "≥: in at least one run of this cell the exact min-entropy search stopped at its node "
    "budget (mechanisms.mide.entropy.MAX_NODES); γ is then a certified lower bound "
    "(CSV: gamma = mean of lower bounds, gamma_upper = mean of upper bounds, "
    "gamma_inexact = fraction of such runs)"
)


@dataclass(frozen=True)
class DayData:
    """One day's predicates: hourly peak counts (H, B) and per-building capacities (B,)."""

    name: str
    counts: np.ndarray
    capacity: np.ndarray
    dwell: tuple[np.ndarray, np.ndarray] | None = None  # (values_s, predicate index)
    date: str = ""

    @property
    def label(self) -> str:
        """The date when known, else the name."""
        return self.date or self.name

    def query(self, level: str) -> tuple[np.ndarray, np.ndarray]:
        """Flattened (values, thresholds) over (hour, building) predicates."""
        hours = np.array(HOURS)
        g = self.counts[hours].astype(float).ravel()
        return g, LEVELS[level] * self.capacities()

    def capacities(self) -> np.ndarray:
        """Capacity per (hour, building) predicate, flattened like :meth:`query`."""
        return np.tile(self.capacity.astype(float), len(HOURS))


# --------------------------------------------------------------------------- data
def _hourly_peak(
    counts: np.ndarray, ticks: np.ndarray, groups: np.ndarray, n_groups: int, day0: float, day: int
) -> np.ndarray:
    """Peak per (hour of ``day``, group) of the per-tick group sums."""
    per_tick = np.zeros((counts.shape[0], n_groups))
    np.add.at(per_tick.T, groups, counts.T)
    hour = np.floor((ticks - day0) / 3600.0).astype(int) - 24 * day
    out = np.zeros((24, n_groups))
    ok = (hour >= 0) & (hour < 24)
    for h in range(24):
        sel = ok & (hour == h)
        if sel.any():
            out[h] = per_tick[sel].max(axis=0)
    return out


def simulated_days(
    site_name: str,
    dates: Sequence[str],
    seed: int,
    progress: bool = True,
    capacity_source: str = "history",
) -> list[DayData]:
    """One simulated day per date (Tuesday → "weekday", Saturday → "weekend", …).

    ``capacity_source="design"`` thresholds on the sum of the building's room capacities
    (thesis UCI queries); ``"history"`` on the building's peak hourly occupancy on the
    same weekday one week earlier (another simulated day; like the thesis' NYTaxi
    queries, which use the historical maximum).
    """
    if capacity_source not in ("design", "history"):
        raise InvalidParameterError(
            f"capacity_source must be 'design' or 'history', not {capacity_source!r}"
        )
    try:
        from simulator import simulate
        from streams.buildings import load_site
    except ImportError as exc:  # pragma: no cover - the simulator ships with the project
        raise ConfigError(
            f"the simulator is not available ({exc}); use --counts or --synthetic"
        ) from None
    site = load_site(site_name)
    loc_index = {loc: i for i, loc in enumerate(site.location_ids)}
    groups = np.zeros(len(site.location_ids), dtype=int)
    capacity = np.zeros(len(site.buildings))
    for b, building in enumerate(site.buildings):
        for loc in building.locations:
            groups[loc_index[loc.id]] = b
            capacity[b] += loc.capacity
    design = capacity_source == "design"

    def peaks(date: str, day_seed: int) -> tuple[np.ndarray, Any, float]:
        log.info("simulating %s on %s (seed %d)", site_name, date, day_seed)
        sim = simulate(site, days=1.0, seed=day_seed, start=date, progress=progress)
        table = sim.occupancy(tick_s=300)
        day0 = math.floor(float(table.ticks[0]) / 86400.0) * 86400.0
        return (
            _hourly_peak(table.counts, table.ticks, groups, len(site.buildings), day0, 0),
            sim,
            day0,
        )

    out = []
    for k, date in enumerate(dates):
        counts, sim, day0 = peaks(date, seed + k)
        cap = capacity
        if not design:
            earlier = (datetime.fromisoformat(date) - timedelta(days=7)).date().isoformat()
            hist, _, _ = peaks(earlier, seed + 100 + k)
            cap = np.maximum(hist[list(HOURS)].max(axis=0), 1.0)
        pres = sim.presence()
        b_of = groups[np.array([loc_index[str(x)] for x in pres["location"]], dtype=int)]
        start = np.asarray(pres["start_ts"], float)
        end = np.asarray(pres["end_ts"], float)
        hour = np.floor((start - day0) / 3600.0).astype(int)
        sel = np.isin(hour, HOURS)
        pred = (hour[sel] - HOURS[0]) * len(site.buildings) + b_of[sel]
        weekend = datetime.fromisoformat(date).weekday() >= 5
        out.append(
            DayData("weekend" if weekend else "weekday", counts, cap,
                    (end[sel] - start[sel], pred), date)
        )
    return out


def synthetic_days(n_buildings: int, days: int, seed: int) -> tuple[list[DayData], list[DayData]]:
    """Counts drawn around the capacities (busy weekday afternoons, quiet weekends)."""
    rng = np.random.default_rng(seed)
    capacity = rng.integers(80, 1500, n_buildings).astype(float)
    out = []
    for d in range(days):
        weekend = d % 7 >= 5
        shape = np.exp(-0.5 * ((np.arange(24) - 14.0) / 3.5) ** 2) * (0.45 if weekend else 1.0)
        load = rng.uniform(0.4, 1.15, n_buildings)
        mean = capacity[None, :] * load[None, :] * shape[:, None]
        counts = rng.poisson(mean).astype(float)
        out.append(DayData(f"day{d}", counts, capacity, None))
    return [
        DayData("weekday", out[WEEKDAY % days].counts, capacity),
        DayData("weekend", out[WEEKEND % days].counts, capacity),
    ], out


def _load_numeric(path: Path, option: str) -> np.ndarray:
    """A finite real-valued array from the ``.npy`` file of CLI option ``option``."""
    try:
        arr = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        if "allow_pickle" in str(exc):
            raise InvalidParameterError(
                f"{option} must hold real numbers, not Python objects (object dtype or "
                f"pickled data) in {str(path)!r}"
            ) from None
        reason = " ".join(str(getattr(exc, "strerror", None) or exc).split())
        raise ConfigError(
            f"{option} must be a readable .npy file, not {str(path)!r} ({reason})"
        ) from None
    if not isinstance(arr, np.ndarray):  # an .npz archive
        arr.close()
        raise InvalidParameterError(
            f"{option} must be one .npy array, not the .npz archive {str(path)!r}"
        )
    if arr.dtype.kind not in "iuf":
        raise InvalidParameterError(
            f"{option} must hold real numbers, not dtype {arr.dtype} in {str(path)!r}"
        )
    arr = arr.astype(float)
    bad = np.argwhere(~np.isfinite(arr))
    if bad.size:
        i = tuple(int(k) for k in bad[0])
        raise InvalidParameterError(
            f"{option} must be finite, not {float(arr[i])!r} at index {i} in {str(path)!r}"
        )
    return arr


def file_days(
    counts_path: Path, capacities_path: Path | None
) -> tuple[list[DayData], list[DayData]]:
    """Days from ``--counts`` (24, P) or (D, 24, P), D ≤ 2, and ``--capacities`` (P,) or (D, P).

    Raises:
        ConfigError: a file is missing or unreadable, or ``--capacities`` is missing.
        InvalidParameterError: wrong dtype or shape, non-finite or negative counts,
            capacities not > 0 (the message names the value and its index).
    """
    if capacities_path is None:
        raise ConfigError("--counts needs --capacities FILE.npy (one capacity per predicate)")
    arr = _load_numeric(counts_path, "--counts")
    cap = _load_numeric(capacities_path, "--capacities")
    shape = arr.shape
    for option, a, bad, rule in (("--counts", arr, arr < 0, ">= 0"),
                                 ("--capacities", cap, cap <= 0, "> 0")):
        if np.any(bad):
            i = tuple(int(k) for k in np.argwhere(bad)[0])
            raise InvalidParameterError(
                f"{option} must be {rule}, not {float(a[i])!r} at index {i}"
            )
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3 or arr.shape[0] not in (1, 2) or arr.shape[1] != 24 or arr.shape[2] < 1:
        raise InvalidParameterError(
            f"--counts must have shape (24, P) or (2, 24, P) (hourly peaks of one day or of "
            f"[weekday, weekend]), not {shape}"
        )
    n_days, n_pred = arr.shape[0], arr.shape[2]
    if cap.shape == (n_pred,):
        cap = np.broadcast_to(cap, (n_days, n_pred))
    elif cap.shape != (n_days, n_pred):
        raise InvalidParameterError(
            f"--capacities must have shape ({n_pred},) or ({n_days}, {n_pred}) for --counts "
            f"of shape {shape}, not {cap.shape}"
        )
    names = ("weekday", "weekend")
    days = [DayData(names[i], arr[i], np.array(cap[i])) for i in range(n_days)]
    return days, days


# --------------------------------------------------------------------------- runs
def run_once(
    g: np.ndarray,
    c: np.ndarray,
    algorithm: str,
    beta: float,
    alpha: float,
    rng: np.random.Generator,
    capacity: np.ndarray | None = None,
    *,
    epsilon_1: float | None = None,
    steps: int | None = None,
    expost_sink: list[np.ndarray] | None = None,
) -> dict[str, float]:
    """One run: FNR, FPR, ex-post ε*, min-entropy γ (nan when denied).

    ``epsilon_1``/``steps`` override :data:`DEFAULTS` (Fig. A.2 sweeps); the per-predicate
    ex-post ε vector of a run that was not denied is appended to ``expost_sink``
    (INTERNAL: Fig. A.3).
    """
    params: dict[str, Any] = {}
    if algorithm in ("ppwlm", "dppwlm", "dppwlm-r"):
        params = {"epsilon_1": DEFAULTS["epsilon_1"] if epsilon_1 is None else epsilon_1,
                  "steps": DEFAULTS["steps"] if steps is None else steps}
    if algorithm.startswith("dppwlm"):
        params["fine_steps"] = DEFAULTS["fine_steps"]
    if algorithm == "dppwlm-r":  # public range: capacities are public parameters
        cap = c if capacity is None else capacity
        params["value_range"] = (0.0, RANGE_FACTOR * np.maximum(cap, 1.0))
        algorithm = "dppwlm"
    res = decide(
        g,
        c,
        algorithm=algorithm,
        beta=beta,
        alpha=alpha,
        epsilon_max=DEFAULTS["epsilon_max"],
        rng=rng,
        **params,
    )
    if res.denied:
        return {
            "denied": 1.0,
            "fnr": math.nan,
            "fpr": math.nan,
            "eps_post": math.nan,
            "gamma": math.nan,
            "gamma_upper": math.nan,
            "gamma_inexact": math.nan,
            "eps": math.nan,
        }
    if expost_sink is not None:
        expost_sink.append(np.asarray(res.ex_post, dtype=float))
    # γ exactly when the search finishes; otherwise the certified interval [value, upper]
    sol = min_entropy_solution(*posterior_bounds(res.ex_post))
    pos = g > c
    fn = float((pos & ~res.positive).sum())
    fp = float((~pos & res.positive).sum())
    return {
        "denied": 0.0,
        "fnr": fn / pos.sum() if pos.any() else math.nan,
        "fpr": fp / (~pos).sum() if (~pos).any() else math.nan,
        "eps_post": res.ex_post_dp,
        "gamma": sol.value,
        "gamma_upper": sol.upper,
        "gamma_inexact": 0.0 if sol.exact else 1.0,
        "eps": res.epsilon_spent,
    }


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    keys = rows[0].keys()
    out = {}
    for k in keys:
        vals = np.array([r[k] for r in rows], float)
        out[k] = float(np.nanmean(vals)) if np.isfinite(vals).any() else math.nan
    return out


def main_table(days: list[DayData], runs: int, seed: int, bar: Any) -> list[dict[str, Any]]:
    """Figs 5.6–5.7 at β = 0.05, α = 1."""
    rows = []
    for d in days:
        for level in LEVELS:
            g, c = d.query(level)
            for alg in ALGORITHMS:
                rng = np.random.default_rng([seed, len(rows)])
                res = []
                for _ in range(runs):
                    res.append(run_once(g, c, alg, MAIN_BETA, MAIN_ALPHA, rng, d.capacities()))
                    bar.update(1)
                rows.append(
                    {
                        "query": f"{'Q1' if d.name == 'weekday' else 'Q2'}{level}",
                        "day": d.name,
                        "level": level,
                        "algorithm": alg,
                        "predicates": g.size,
                        "positives": int((g > c).sum()),
                        **_mean(res),
                    }
                )
    return rows


def sweep(
    day: DayData, level: str, what: str, values: Sequence[float], runs: int, seed: int, bar: Any
) -> list[dict[str, Any]]:
    """β or α sweep on one query (Fig. 5.8)."""
    g, c = day.query(level)
    rows = []
    for v in values:
        beta, alpha = (v, MAIN_ALPHA) if what == "beta" else (MAIN_BETA, float(v))
        for alg in ALGORITHMS:
            rng = np.random.default_rng([seed, 7, len(rows)])
            res = []
            for _ in range(runs):
                res.append(run_once(g, c, alg, beta, alpha, rng, day.capacities()))
                bar.update(1)
            rows.append({what: v, "algorithm": alg, **_mean(res)})
    return rows


def _dwell_for(
    day: DayData, counts: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    if day.dwell is not None:
        return day.dwell
    n = np.maximum(counts.astype(int), 1)  # synthetic: one stay per counted person
    pred = np.repeat(np.arange(counts.size), n)
    mean_s = rng.uniform(900, 5400, counts.size)
    return rng.gamma(2.0, mean_s[pred] / 2.0), pred


def complex_experiment(days: list[DayData], runs: int, seed: int, bar: Any) -> list[dict[str, Any]]:
    """Ch. 6: count AND/OR avg_dwell, naive vs optimal β split, per day."""
    beta, emax, dwell_max_s = 0.005, DEFAULTS["epsilon_max"], 4 * 3600.0
    rows = []
    for d in days:
        rng = np.random.default_rng([seed, 11, len(rows)])
        hours = np.array(HOURS)
        counts = d.counts[hours].ravel()
        values, pred = _dwell_for(d, counts, rng)
        n_pred = counts.size
        n_rec = np.bincount(pred, minlength=n_pred)
        sums = np.bincount(pred, weights=np.clip(values, 0, dwell_max_s), minlength=n_pred)
        avg = np.where(n_rec > 0, sums / np.maximum(n_rec, 1), 0.0)
        c_count = float(np.quantile(counts, 0.7))  # selectivity 0.3 per condition
        c_avg = float(np.quantile(avg, 0.7))
        u_count = max(0.05 * float(counts.max() - counts.min()), 1.0)
        u_avg_s = max(0.05 * float(avg.max() - avg.min()), 1.0)
        # width of the average in excess-sum units: u·n with n the median record count
        # (β-FNR does not depend on the width; predicates with fewer records get a wider
        # uncertainty region for false positives than 2u)
        n_min = max(float(np.median(n_rec)), 1.0)
        q_count = count_query(counts, c_count)
        q_avg = avg_query(values, pred, n_pred, c_avg, lower=0.0, upper=dwell_max_s)
        leaves = (Leaf(q_count, u_count, "count"), Leaf(q_avg, u_avg_s * n_min, "avg_dwell"))
        for op, tree in (("AND", And(leaves)), ("OR", Or(leaves))):
            t = truth(tree)
            for split in ("naive", "optimal"):
                res = []
                for _ in range(runs):
                    r = answer(tree, beta=beta, epsilon_max=emax, split=split, rng=rng)
                    bar.update(1)
                    if r.denied:
                        res.append(
                            {"eps": math.nan, "fnr": math.nan, "fpr": math.nan, "denied": 1.0}
                        )
                        continue
                    fn = float((t & ~r.positive).sum())
                    fp = float((~t & r.positive).sum())
                    res.append(
                        {
                            "eps": r.epsilon_spent,
                            "fnr": fn / t.sum() if t.any() else math.nan,
                            "fpr": fp / (~t).sum() if (~t).any() else math.nan,
                            "denied": 0.0,
                        }
                    )
                rows.append({"day": d.label, "op": op, "split": split, **_mean(res)})
    return rows


# --------------------------------------------------------------------------- output
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


def plots(
    out: Path,
    main: list[dict[str, Any]],
    sb: list[dict[str, Any]],
    sa: list[dict[str, Any]],
    cx: list[dict[str, Any]],
) -> list[Path]:
    """PNG figures like thesis Figs 5.6, 5.7, 5.8 and 6.3–6.4."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    queries = list(dict.fromkeys(r["query"] for r in main))

    def save(fig: Any, title: str, name: str) -> None:
        fig.suptitle(title)
        fig.tight_layout()
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        paths.append(out / name)

    def bars(metrics: Sequence[tuple[str, str]], name: str, title: str) -> None:
        fig, axes = plt.subplots(1, len(metrics), figsize=(6 * len(metrics), 4))
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
        save(fig, title, name)

    if main:
        bars(
            [("eps_post", "ex-post ε*"), ("gamma", "min-entropy γ (nats)")],
            "fig_5_6_privacy.png",
            "Privacy loss, β = 0.05, α = 1 (cf. thesis Fig. 5.6)",
        )
        bars(
            [("fnr", "FNR"), ("fpr", "FPR")],
            "fig_5_7_accuracy.png",
            "Accuracy, β = 0.05, α = 1 (cf. thesis Fig. 5.7)",
        )
    for rows, what, name in ((sa, "alpha", "fig_5_8_alpha.png"), (sb, "beta", "fig_beta.png")):
        if not rows:
            continue
        fig, axes = plt.subplots(1, 4, figsize=(20, 4))
        for ax, (key, label) in zip(
            axes,
            [
                ("fnr", "FNR"),
                ("fpr", "FPR"),
                ("gamma", "min-entropy γ"),
                ("eps_post", "ex-post ε*"),
            ],
            strict=True,
        ):
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
        save(fig, f"Weekday query, threshold L, varying {what} (cf. thesis Fig. 5.8)", name)
    if cx:
        fig, axes = plt.subplots(2, 3, figsize=(16, 7))
        days = list(dict.fromkeys(r["day"] for r in cx))
        for row, op in enumerate(("AND", "OR")):
            for col, (key, label) in enumerate([("eps", "ε"), ("fnr", "FNR"), ("fpr", "FPR")]):
                ax = axes[row, col]
                for split in ("naive", "optimal"):
                    vals = [
                        next(
                            r[key]
                            for r in cx
                            if r["day"] == d and r["op"] == op and r["split"] == split
                        )
                        for d in days
                    ]
                    ax.plot(range(len(days)), vals, marker="o", label=split)
                if key == "fnr":
                    ax.axhline(0.005, color="k", ls="--", lw=1, label="β")
                ax.set_title(f"{op}: {label}")
                ax.set_xlabel("query (day)")
        axes[0, 0].legend()
        save(fig, "count > q70 AND/OR avg_dwell > q70, β = 0.005 (cf. thesis Figs 6.3–6.4)",
             "fig_6_complex.png")
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


def build_parser() -> argparse.ArgumentParser:
    """The ``occustream mide-eval`` argument parser."""
    p = argparse.ArgumentParser(
        prog="occustream mide-eval",
        description="MIDE threshold-query experiments (thesis ch. 5-6) on simulated campus "
        "data: FNR, FPR, ex-post ε, min-entropy per algorithm; tables and plots.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
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
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the experiments; return 0 on success."""
    args = build_parser().parse_args(argv)
    # every check before any long work (loading is cheap; simulating and runs are not)
    if args.runs < 1:
        raise InvalidParameterError(f"--runs must be >= 1, not {args.runs!r}")
    if args.seed < 0:
        raise InvalidParameterError(f"--seed must be >= 0, not {args.seed!r}")
    if args.complex_days < 1:
        raise InvalidParameterError(
            f"--complex-days must be >= 1 (use --skip complex to leave ch. 6 out), "
            f"not {args.complex_days!r}"
        )
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    unknown = skip - set(PARTS)
    if unknown:
        raise InvalidParameterError(
            f"--skip must name {','.join(PARTS)}, not {sorted(unknown)}"
        )
    check_sweeps(args.betas, args.alphas)
    if args.capacities is not None and args.counts is None:
        raise InvalidParameterError(
            f"--capacities goes with --counts, not alone ({str(args.capacities)!r})"
        )
    dates: list[str] = []
    if args.counts is None and not args.synthetic:
        dates = [d.strip() for d in args.dates.split(",") if d.strip()]
        try:
            kinds = [datetime.fromisoformat(d).weekday() >= 5 for d in dates]
        except ValueError:
            raise InvalidParameterError(f"--dates must be ISO dates, not {args.dates!r}") from None
        if not dates or len(dates) > 2 or len(set(kinds)) != len(kinds):
            raise InvalidParameterError(
                f"--dates must name one weekday and/or one weekend day, not {args.dates!r}"
            )
        from streams.buildings import load_site

        load_site(args.site)  # an unknown --site fails here, before --out is created
    file_data = file_days(args.counts, args.capacities) if args.counts is not None else None
    prepare_out(args.out)
    if file_data is not None:
        main_days, all_days = file_data
    elif args.synthetic:
        main_days, all_days = synthetic_days(24, 7, args.seed)
    else:
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
    weekday = main_days[0]
    total = 0
    if "main" not in skip:
        total += len(main_days) * len(LEVELS) * len(ALGORITHMS) * args.runs
    if "beta" not in skip:
        total += len(args.betas) * len(ALGORITHMS) * args.runs
    if "alpha" not in skip:
        total += len(args.alphas) * len(ALGORITHMS) * args.runs
    if "complex" not in skip:
        total += len(all_days) * 4 * args.runs
    from tqdm import tqdm

    # the data the experiments ran on, re-usable with --counts/--capacities
    np.save(args.out / "data_counts.npy", np.stack([d.counts for d in main_days]))
    np.save(args.out / "data_capacities.npy", np.stack([d.capacity for d in main_days]))
    with tqdm(
        total=total, desc="mide-eval", unit="run", file=sys.stderr, disable=args.no_progress
    ) as bar:
        main_rows = main_table(main_days, args.runs, args.seed, bar) if "main" not in skip else []
        sb = (
            sweep(weekday, "L", "beta", args.betas, args.runs, args.seed, bar)
            if "beta" not in skip
            else []
        )
        sa = (
            sweep(weekday, "L", "alpha", args.alphas, args.runs, args.seed, bar)
            if "alpha" not in skip
            else []
        )
        cx = (
            complex_experiment(all_days, args.runs, args.seed, bar) if "complex" not in skip else []
        )
    cols_main = [
        "query",
        "algorithm",
        "predicates",
        "positives",
        "fnr",
        "fpr",
        "eps_post",
        "gamma",
        "eps",
        "denied",
    ]
    order = (mide_thesis.ordering(main_days, main_rows, args.runs, args.seed)
             if main_rows and "ordering" not in skip else [])
    a2_start = mide_thesis.sweep_start(weekday, args.runs, args.seed) if "a2" not in skip else []
    a2_steps = mide_thesis.sweep_steps(weekday, args.runs, args.seed) if "a2" not in skip else []
    a3 = mide_thesis.expost_cdf(weekday, args.runs, args.seed) if "a3" not in skip else []
    md = [f"# MIDE evaluation ({args.runs} runs per cell, seed {args.seed})", ""]
    for name, rows, cols in (
        ("main", main_rows, cols_main),
        ("sweep_beta", sb, ["beta", "algorithm", "fnr", "fpr", "eps_post", "gamma", "denied"]),
        ("sweep_alpha", sa, ["alpha", "algorithm", "fnr", "fpr", "eps_post", "gamma", "denied"]),
        ("complex", cx, ["day", "op", "split", "eps", "fnr", "fpr", "denied"]),
        ("ordering_5_5_2", order, ["query", "near", "eps_last_below_m", "alpha_there",
                                   "dppwlm_gamma_highest", "dppwlm_p_eps_post_below_tslm",
                                   "dppwlm-r_gamma_highest",
                                   "dppwlm-r_p_eps_post_below_tslm"]),
        ("fig_a2_start_epsilon", a2_start, ["epsilon_1", "algorithm", "eps_post", "gamma",
                                            "tslm_eps_post", "tslm_gamma", "fnr", "denied"]),
        ("fig_a2_steps", a2_steps, ["steps", "algorithm", "eps_post", "gamma", "tslm_eps_post",
                                    "tslm_gamma", "fnr", "denied"]),
    ):
        if rows:
            _write_csv(args.out / f"{name}.csv", rows)
            md += [f"## {name}", "", markdown(rows, cols), ""]
    (args.out / "tables.md").write_text("\n".join(md) + "\n")
    if a3:  # INTERNAL ONLY: never into tables.md, which a researcher may pass on
        _write_csv(args.out / "INTERNAL_fig_a3_expost_cdf.csv", a3)
        print(f"{mide_thesis.INTERNAL_BANNER}\nwrote {args.out / 'INTERNAL_fig_a3_expost_cdf.csv'}",
              file=sys.stderr)
    if order:
        print("Thesis §5.5.2 claims per query (near: predicates within α' of the threshold, "
              "α' the width at ε', the largest ε < ε_m DPPWLM can stop at; one near "
              "predicate makes ε* = ε_m > TSLM's in almost every run)")
        print(markdown(order, list(order[0])))
    if main_rows:
        print(
            "MIDE at β = 0.05, α = 1 (eps_post = ex-post DP ε*, gamma = min-entropy γ in "
            "nats, eps = worst-case ε; averaged over runs; n/a: no positives or denied)"
        )
        print(markdown(main_rows, cols_main))
    if "plots" not in skip and (main_rows or sa or sb or cx):
        for p in plots(args.out, main_rows, sb, sa, cx):
            print(f"wrote {p}")
    if "plots" not in skip and (a2_start or a2_steps or a3):
        for p in mide_thesis.plots(args.out, a2_start, a2_steps, a3):
            print(f"wrote {p}")
    print(f"wrote {args.out / 'tables.md'}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
