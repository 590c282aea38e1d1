"""MIDE experiments on occupancy data (thesis ch. 5–6): the data, one run, the tables' rows.

The library behind ``occustream mide-eval`` (:mod:`research.mide_eval`, the command
line, tables and plots) and :mod:`research.mide_thesis` (the §5.5.2 ordering and the
Fig A.2 / A.3 sweeps).
"""

from __future__ import annotations

import logging
import math
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
from occupancy.buildings import load_site
from simulator import simulate

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
