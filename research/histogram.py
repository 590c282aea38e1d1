"""``occustream histogram release | evaluate`` — DP histogram release and evaluation.

``release``: a day's occupancy cube (location × 5-minute slot) from a file — ``.npy``,
``.csv`` (rows = locations, columns = slots) or the simulator's JSONL events (turned
into counts by :func:`occupancy.oracle.occupancy_oracle`, THE definition of occupancy) —
is released with a SORTaki Table II configuration, the kd-tree or the cell-based
algorithm and budget ε. The output (a JSON file, and with ``--redis-url`` the key
``hist:{day}:{algorithm}``) holds only the noisy histogram and public parameters; the
spend goes to the ledger (``ledger:releases`` stream, ``ledger:spent:{day}``).

Unit of privacy: one device in one slot (event level, count sensitivity 1). A device
present all day appears in every slot, so the per-device-day loss under sequential
composition is ``ε × slots``; the ledger record states both.

``evaluate``: DPBench-style comparison (SORTaki §VI) on the DPBench files (read from
``--data-dir``, ``$OCCUSTREAM_DPBENCH`` or ``<repo>/../shared/data/dpbench``; never
copied) or on any 1-D ``.npy``/``.csv`` or occupancy cube file: tables like SORTaki
Tables III–IX (error × error scale, best per column in bold) and PNG plots.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import logging
import math
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import redis

from mechanisms.accounting import Accountant, Budget, LedgerRecord
from mechanisms.errors import (
    ConfigError,
    InvalidParameterError,
    ServiceError,
    check_positive,
    check_probability,
)
from mechanisms.histograms import TABLE_II, parse_config, run_config
from mechanisms.histograms import evaluation as ev
from mechanisms.histograms.kdtree import (
    cell_based_release,
    kd_tree_release,
    usefulness_accuracy,
)
from mechanisms.histograms.select import NEW_1D, auto_release, release_1d
from mechanisms.histograms.select2d import ALGORITHMS_2D, release_2d
from occupancy import redis_layout as rl
from occupancy.buildings import load_site
from occupancy.oracle import occupancy_oracle
from readmodel.writer import queue_histogram, queue_ledger
from research.report import Report, new_figure
from simulator.cli import HelpFormatter  # shows the defaults the help text omits

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[1]
MULTI_D = ("kdtree", "cell")
#: 2-D algorithms of issue 17 (mechanisms.histograms.select2d); "auto-2d" = the selection
SPATIAL = (
    "auto-2d",
    "AG",
    "UG",
    "QuadTree",
    "HB-2D",
    "Privelet-2D",
    "DAWA-2D",
    "DAWA-2D-aligned",
    "DAWA-2D-boxes",
    "DAWA-2D-borders",
    "AHP-2D",
    "kd-hierarchical",
)
ALGORITHMS = TABLE_II + NEW_1D + MULTI_D + SPATIAL
#: what ``histogram evaluate --two-d`` runs: Xiao et al.'s two, the default selection and
#: every 2-D algorithm of select2d (its "kd-tree" / "cells" are "kdtree" / "cell" here)
EVALUATE_2D = ev.KD_VS_CELL + tuple(
    a for a in ("auto-2d", *ALGORITHMS_2D) if a not in {"kd-tree", "cells"}
)
RELEASE_WORKLOADS = ("range", "prefix", "identity")
SLOT_S = 300.0

#: DPBench data set names → files (README of the DPBench data folder)
DPBENCH_1D = {
    "NETTRACE": "1D/NETTRACE.n4096.npy",
    "ADULT": "1D/ADULTFRANK.n4096.npy",
    "HEPTH": "1D/HEPTH.n4096.npy",
    "MEDCOST": "1D/MEDCOST.n4096.npy",
    "SEARCHLOGS": "1D/SEARCHLOGS.n4096.npy",
    "INCOME": "1D/INCOME.n4096.npy",
    "PATENT": "1D/PATENT.n4096.npy",
    "BIDS": "1D/bids.npy",
    "BIDS-FJ": "1D/bids_j.npy",
    "BIDS-FM": "1D/bids_m.npy",
    "MDSALARY": "1D/GrossCompenMDSalary1.npy",
    "MDSALARY-FA": "1D/GrossCompenMDSalary2_filtered.npy",
    "LC-REQ-ALL": "1D/RejectStats_0_4096_no_outliers.npy",
    "LC-DTIR-ALL": "1D/RejectStats_4_4096_no_outliers.npy",
    "LC-REQ-F1": "1D/RejectStats_0_4096_no_outliers_filter_7_1.npy",
    "LC-REQ-F2": "1D/RejectStats_0_4096_no_outliers_filter_7_2.npy",
    "LC-DTIR-F1": "1D/RejectStats_4_4096_no_outliers_filter_7_1.npy",
    "LC-DTIR-F2": "1D/RejectStats_4_4096_no_outliers_filter_7_2.npy",
}
DPBENCH_2D = {
    "SF-CABS-E": "2D/cabspottingE_256_256.npy",
    "SF-CABS-S": "2D/cabspottingS_256_256.npy",
    "GOWALLA": "2D/checkin_256_256.npy",
    "BJ-CABS-E": "2D/BeijingTaxiE_256_256.npy",
    "BJ-CABS-S": "2D/BeijingTaxiS_256_256.npy",
    "ADULT-2D": "2D/Adult_2D_256_256.npy",
    "MDSALARY-2D": "2D/MDSalary2D_256_256.npy",
    "LC-2D": "2D/Loan_2D_256_256.npy",
    "STROKE": "2D/Stroke_2D_256_256.npy",
    "TWITTER": "2D/twitter_256_256.npy",
}
#: the 1-D files of issue 7's error tables
ISSUE_1D = ("NETTRACE", "ADULT", "HEPTH", "MEDCOST", "SEARCHLOGS", "INCOME", "BIDS", "MDSALARY")


# --- data -----------------------------------------------------------------------------


def dpbench_dir(explicit: str | Path | None = None) -> Path | None:
    """The DPBench folder: ``explicit``, ``$OCCUSTREAM_DPBENCH``, or ``<repo>/../shared/...``.

    Returns None when no candidate exists (callers then use generated shapes or fail).
    """
    if explicit and not Path(explicit).is_dir():
        raise ConfigError(f"--data-dir {explicit} is not a folder")
    for cand in (
        explicit,
        os.environ.get("OCCUSTREAM_DPBENCH"),
        REPO.parent / "shared" / "data" / "dpbench",
    ):
        if cand and Path(cand).is_dir():
            return Path(cand)
    return None


def _read_csv(path: Path) -> np.ndarray:
    with path.open(newline="") as f:
        rows = [r for r in csv.reader(f) if r and not r[0].startswith("#")]
    try:
        arr = np.array([[float(c) for c in r] for r in rows], dtype=np.float64)
    except ValueError:  # a header row or a label column
        try:
            arr = np.array([[float(c) for c in r[1:]] for r in rows[1:]], dtype=np.float64)
        except ValueError:
            raise InvalidParameterError(
                f"{path}: CSV must hold numbers (optionally with one "
                "header row and one label column)"
            ) from None
    return arr[0] if arr.shape[0] == 1 else arr


def load_array(path: str | Path) -> np.ndarray:
    """A histogram or cube from ``.npy`` or ``.csv``; non-negative finite numbers."""
    p = Path(path)
    if not p.is_file():
        raise InvalidParameterError(f"input file {str(p)!r} does not exist")
    if p.suffix == ".npy":
        arr = np.asarray(np.load(p, allow_pickle=False), dtype=np.float64)
    elif p.suffix == ".csv":
        arr = _read_csv(p)
    else:
        raise InvalidParameterError(f"input must be .npy, .csv or .jsonl, not {p.suffix!r}")
    if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise InvalidParameterError(f"{p}: counts must be non-empty, finite and >= 0")
    return arr


def load_occupancy_jsonl(
    path: str | Path, site: str, day: str | None, *, tick_s: float = SLOT_S
) -> tuple[np.ndarray, tuple[str, ...], str]:
    """Occupancy cube (locations × slots of one UTC day) from simulator JSONL events.

    Counts come from :func:`occupancy.oracle.occupancy_oracle` on the site's APs.

    Returns:
        (cube, location ids, day).
    """
    s = load_site(site)
    p = Path(path)
    if not p.is_file():
        raise InvalidParameterError(f"input file {str(p)!r} does not exist")
    with p.open() as f:
        events = [line for line in f if line.strip()]
    table = occupancy_oracle(events, s.ap_location, s.location_ids, tick_s=tick_s)
    if len(table.ticks) == 0:
        raise InvalidParameterError(f"{p}: no valid events for site {site!r}")
    if day is None:
        day = dt.datetime.fromtimestamp(float(table.ticks[0]), dt.UTC).strftime("%Y-%m-%d")
    start = dt.datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=dt.UTC).timestamp()
    n_slots = int(round(86400 / tick_s))
    cube = np.zeros((len(s.location_ids), n_slots))
    k = np.round((table.ticks - start) / tick_s).astype(np.int64)
    keep = (k >= 0) & (k < n_slots)
    cube[:, k[keep]] = table.counts[keep].T
    return cube, tuple(s.location_ids), day


def load_dataset(spec: str, data_dir: Path | None) -> tuple[str, np.ndarray]:
    """``spec`` is a DPBench name (1-D or 2-D) or a path to a ``.npy``/``.csv`` file."""
    key = spec.upper()
    for table in (DPBENCH_1D, DPBENCH_2D):
        if key in table:
            if data_dir is None:
                raise ConfigError(
                    f"data set {spec} needs the DPBench folder: pass --data-dir "
                    "or set OCCUSTREAM_DPBENCH"
                )
            return key, load_array(data_dir / table[key])
    return Path(spec).stem, load_array(spec)


# --- release --------------------------------------------------------------------------


def _charge_day(url: str | None, day: str, algorithm: str, epsilon: float,
                sensitivity: float, n_slots: int, n_values: int, sampler: str,
                cap: float | None) -> LedgerRecord:
    """Charge one histogram release to the day's accountant — before any noise is drawn.

    The day's earlier spending (the read model's ``ledger:spent:{day}``) is charged first,
    so with ``cap`` a release that would exceed it is refused with
    :class:`~mechanisms.errors.BudgetExhaustedError` (requested and remaining). The
    returned :class:`~mechanisms.accounting.LedgerRecord` is the accountant's. The
    histogram covers every slot of the day once, so each (device, slot) event is
    protected at ε; a device present in all ``n_slots`` slots at ``n_slots·ε/Δ``
    (sequential composition).
    """
    spent = 0.0
    if url:
        spent = sum(float(v) for v in _redis(url).hgetall(rl.ledger_spent(day)).values())
    total = cap if cap is not None else spent + epsilon
    acct = Accountant(Budget(max(total, spent)), name="histogram").scope(day)
    if spent:
        acct.spend(spent, mechanism="earlier releases of the day")
    device_day = epsilon * n_slots / sensitivity
    return acct.spend(
        epsilon, mechanism=f"histogram:{algorithm}", n_locations=n_values,
        sensitivity=sensitivity, sampler=sampler,
        guarantee=f"pure ε-DP per (device, slot); ≤ {device_day:g}-DP per device-day")


def _ledger_doc(rec: LedgerRecord, algorithm: str, day: str, n_slots: int,
                shares: dict[str, float]) -> dict[str, Any]:
    """The charged record as published, with the chosen algorithm and its budget parts.

    Public content only (no counts); the parts are configuration (shares of ε), not data.
    """
    rec = replace(rec, mechanism=f"histogram:{algorithm}",
                  parts=tuple(round(rec.epsilon * g, 12) for g in shares.values()),
                  note="parts: " + ", ".join(f"{k}={v:g}" for k, v in shares.items()))
    device_day = rec.epsilon * n_slots / rec.sensitivity
    return {**rec.to_dict(), "ts": time.time(), "day": day, "device_day_epsilon": device_day}


def _redis(url: str) -> Any:
    return redis.Redis.from_url(url)


def _release(args: argparse.Namespace) -> int:
    eps = check_positive("--epsilon", args.epsilon)
    sens = check_positive("--sensitivity", args.sensitivity)
    locations: tuple[str, ...] | None = None
    day = args.day
    if Path(args.input).suffix == ".jsonl":
        cube, locations, day = load_occupancy_jsonl(args.input, args.site, day)
    else:
        cube = load_array(args.input)
        day = day or dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    integer = bool(np.array_equal(cube, np.round(cube)))
    discrete = integer and not args.continuous
    n_slots = cube.shape[-1] if cube.ndim == 2 else 1
    sampler = "discrete-laplace (exact)" if discrete else "continuous laplace (float)"
    charged = _charge_day(args.redis_url, day, args.algorithm, eps, sens, n_slots,
                          int(cube.size), sampler, args.daily_cap)
    rng = None if args.seed is None else np.random.default_rng(args.seed)
    if args.seed is not None:
        log.warning("--seed makes the noise reproducible: for tests only, never publish it")
    eff = eps / sens  # noise scales Δ/ε: run with ε/Δ at sensitivity 1
    algo = args.algorithm
    if algo in MULTI_D:
        if algo == "cell":
            est = cell_based_release(cube, eff, rng=rng, discrete=discrete)
            n_bins, shares = int(cube.size), {"cells": 1.0}
        else:
            kd = kd_tree_release(cube, eff, xi0=args.xi0, rng=rng, discrete=discrete)
            est, n_bins, shares = kd.estimate, len(kd.boxes), {"cells": 0.5, "partitions": 0.5}
    elif algo in SPATIAL:
        if cube.ndim != 2:
            raise InvalidParameterError(f"--algorithm {algo} needs a 2-D cube, not {cube.ndim}-D")
        sp = release_2d(
            cube, eff, algorithm="auto" if algo == "auto-2d" else algo, rng=rng, discrete=discrete
        )
        est, n_bins = sp.estimate, len(sp.boxes) or int(cube.size)
        shares = {k: v / eff for k, v in sp.parts.items()}
    elif algo in NEW_1D:
        est, n_bins, shares = _release_1d(args, cube, eff, rng, discrete)
        if algo == "auto":
            algo = f"auto-{shares.pop('algorithm')}"
    else:
        cfg = parse_config(algo)
        rel = run_config(cfg, cube, eff, gamma_in=args.gamma_in, rng=rng, discrete=discrete)
        est, n_bins = rel.estimate, rel.n_bins
        shares = {k: rel.params[k] for k in ("gamma_in", "gamma_p", "gamma_f")}
    ledger = _ledger_doc(charged, algo, day, n_slots, shares)
    out = {
        "algorithm": algo,
        "day": day,
        "epsilon": eps,
        "sensitivity": sens,
        "shape": list(cube.shape),
        "locations": list(locations) if locations else None,
        "slot_s": SLOT_S if cube.ndim == 2 else None,
        "n_bins": n_bins,
        "noise": sampler,
        "released": np.round(est, args.decimals).tolist(),
        "ledger": ledger,
    }
    if algo == "cell":  # kdtree.txt Thm 4.2: every range count within a w.p. ≥ 95 %
        out["usefulness_accuracy_95"] = usefulness_accuracy(int(cube.size), eff, 0.05)
    text = json.dumps(out)
    out_path = Path(args.out or f"hist-{day}-{algo}.json")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(text + "\n")
    if args.redis_url:
        _to_redis(args.redis_url, day, algo, text, ledger)
    log.info(
        "released %s (ε=%g, %d bins) for %s → %s%s",
        algo, eps, n_bins, day, out_path,
        f" and Redis {args.redis_url}" if args.redis_url else "",
    )
    return 0


def _release_workload(kind: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The public workload a 1-D release is tuned for (``--workload``)."""
    if kind == "identity":
        w = ev.identity_workload(n)
    elif kind == "prefix":
        w = ev.prefix_workload(n)
    elif n <= 1024:
        w = ev.allrange_workload(n)
    else:  # 2000 random ranges, fixed public seed
        w = ev.uniform_range_workload(n, 2000, rng=np.random.default_rng(0))
    return w.lo, w.hi


def _release_1d(
    args: argparse.Namespace, cube: np.ndarray, eff: float, rng: Any, discrete: bool
) -> tuple[np.ndarray, int, dict[str, Any]]:
    """HB / Privelet / GreedyH / MWEM / HDMM, or ``auto`` (selection), on the flat cube."""
    flat = cube.ravel()
    wl = _release_workload(args.workload, len(flat))
    if args.algorithm == "auto":
        est, facts = auto_release(flat, eff, workload=wl, rng=rng, discrete=discrete)
        feat = facts["eps_scale"] + facts["eps_trunc"]
        shares = {"scale": facts["eps_scale"] / eff, "trunc": facts["eps_trunc"] / eff,
                  "release": 1 - feat / eff}
        return est.reshape(cube.shape), len(flat), {**shares, "algorithm": facts["algorithm"]}
    est = release_1d(args.algorithm, flat, eff, workload=wl, rng=rng, discrete=discrete)
    return est.reshape(cube.shape), len(flat), {"release": 1.0}


def _to_redis(url: str, day: str, algo: str, text: str, ledger: dict[str, Any]) -> None:
    """Write the release and its ledger record through the read model's one writer."""
    try:
        pipe = _redis(url).pipeline()
        queue_histogram(pipe, day, algo, text)
        queue_ledger(pipe, ledger, day)
        pipe.execute()
    except redis.RedisError as exc:
        raise ServiceError(f"cannot write to Redis at {url}: {exc}") from exc


# --- evaluate -------------------------------------------------------------------------


def _error_table(
    rows: list[ev.ResultRow],
    workload: str,
    datasets: list[str],
    algorithms: list[str],
    epsilons: list[float],
) -> tuple[list[str], list[list[Any]]]:
    """SORTaki-style table: rows algorithms, columns (data set, ε).

    Values are shown × 10^k with one error scale per data set (in the column header),
    like the "error scale" line under SORTaki's tables; the best of a column is bold.
    """
    cell = {(r.dataset, r.algorithm, r.epsilon): r.error for r in rows if r.workload == workload}
    scale = {}
    for d in datasets:
        vals = [v for (dd, _, _), v in cell.items() if dd == d and v > 0]
        scale[d] = -int(math.floor(math.log10(float(np.median(vals))))) if vals else 0
    cols = [(d, e) for d in datasets for e in epsilons]
    best = {c: min(cell.get((c[0], a, c[1]), math.inf) for a in algorithms) for c in cols}
    body = []
    for a in algorithms:
        line: list[Any] = [a]
        for c in cols:
            v = cell.get((c[0], a, c[1]))
            if v is None:
                line.append("—")
                continue
            s = f"{v * 10 ** scale[c[0]]:.2f}"
            line.append(f"**{s}**" if v == best[c] else s)
        body.append(line)
    headers = ["algorithm"] + [f"{d} ε={e:g} (×1e-{scale[d]})" for d, e in cols]
    return headers, body


def _plot(
    rows: list[ev.ResultRow], workload: str, datasets: list[str], algorithms: list[str]
) -> Any:
    from matplotlib import colormaps


    ncol = min(4, len(datasets))
    nrow = math.ceil(len(datasets) / ncol)
    extra = 1.4 if len(algorithms) > 6 else 0.0  # room for the legend beside the panels
    fig, axes = new_figure(3.2 * ncol + extra, 2.6 * nrow, nrows=nrow, ncols=ncol, squeeze=False)
    for i, d in enumerate(datasets):
        ax = axes[i // ncol][i % ncol]
        for j, a in enumerate(algorithms):
            pts = sorted(
                (r.epsilon, r.error)
                for r in rows
                if r.dataset == d and r.algorithm == a and r.workload == workload
            )
            if pts:  # dashed = with sorting; tab20 keeps 11+ algorithms distinguishable
                ax.plot(
                    *zip(*pts, strict=True),
                    marker="os^Dv"[j % 5],
                    label=a,
                    lw=1,
                    ms=4,
                    color=colormaps["tab20"](j % 20),
                    ls="--" if a.startswith("s") else "-",
                )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(d, fontsize=9)
        ax.set_xlabel("ε", fontsize=8)
    for j in range(len(datasets), nrow * ncol):
        axes[j // ncol][j % ncol].set_visible(False)
    axes[0][0].set_ylabel("scaled error", fontsize=8)
    if len(algorithms) <= 6:
        axes[0][0].legend(fontsize=6, ncol=2)
    else:  # many lines: the legend beside the panels, not over them
        handles, labels = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, fontsize=6, loc="outside right center", frameon=False)
    return fig


def write_report(rows: list[ev.ResultRow], out_dir: Path, title: str, fmt_: str = "md") -> Path:
    """Tables (one per workload) + plots + results.json into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps([r.__dict__ for r in rows], indent=1) + "\n")
    datasets = list(dict.fromkeys(r.dataset for r in rows))
    algorithms = list(dict.fromkeys(r.algorithm for r in rows))
    epsilons = sorted({r.epsilon for r in rows}, reverse=True)
    rep = Report(title)
    rep.paragraph(
        "DPBench scaled average per-query L2 error ‖Wx − Wx̂‖₂ / (q·scale), mean "
        "over seeded trials; bold = best in the column."
    )
    for w in dict.fromkeys(r.workload for r in rows):
        headers, body = _error_table(rows, w, datasets, algorithms, epsilons)
        rep.heading(f"Workload: {w}")
        rep.table(headers, body, caption="cell × the column's error scale = scaled error")
        rep.figure(
            _plot(rows, w, datasets, algorithms), f"Error vs ε, {w} workload", name=f"error-{w}"
        )
    return rep.write(out_dir, fmt_, stem="histogram-evaluation")


def _gammas(text: str | None) -> list[float | None]:
    """``--gamma-in`` values: None (per-configuration default) or a comma list in (0, 1)."""
    if not text:
        return [None]
    out: list[float | None] = []
    for t in text.split(","):
        try:
            g = float(t)
        except ValueError:
            raise InvalidParameterError(
                f"--gamma-in must be numbers in (0, 1), not {t!r}"
            ) from None
        out.append(check_probability("--gamma-in", g))
    return out


def _run_2d_for(workload: str):
    """The runner :func:`~mechanisms.histograms.evaluation.evaluate_2d` calls.

    ``auto-2d`` = the default release for ``workload`` (:func:`release_2d`, clamped for
    cells), any other name :func:`run_2d` with its paper defaults and the whole ε — as
    bench/bench_histograms_2d.py runs them.
    """

    def run(name: str, x: np.ndarray, eps: float, boxes, rng) -> tuple[np.ndarray, int]:
        algorithm = "auto" if name == "auto-2d" else name
        rel = release_2d(x, eps, algorithm=algorithm, workload=workload, boxes=boxes, rng=rng)
        return rel.estimate, len(rel.boxes) or int(x.size)

    return run


def _names_2d(
    flag: str, text: str | None, default: tuple[str, ...], allowed: tuple[str, ...]
) -> list[str]:
    """A ``--two-d`` comma list (None: ``default``), every name among ``allowed``."""
    names = text.split(",") if text else list(default)
    bad = [n for n in names if n not in allowed]
    if bad:
        raise InvalidParameterError(
            f"--two-d --{flag} must be among {','.join(allowed)}, not {','.join(bad)}"
        )
    return names


def _evaluate(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    data_dir = dpbench_dir(args.data_dir)
    epsilons = [check_positive("epsilon", float(e)) for e in args.epsilons.split(",")]
    if args.two_d:
        names = args.data or list(DPBENCH_2D)[:3]
        if args.measure != "dpbench":
            raise InvalidParameterError("--two-d measures with --measure dpbench only")
        algorithms = _names_2d("algorithms", args.algorithms, ev.KD_VS_CELL, EVALUATE_2D)
        workloads = _names_2d("workloads", args.workloads, ("rectangles",), ev.WORKLOADS_2D_EVAL)
        cubes = dict(load_dataset(s, data_dir) for s in names)
        if any(c.ndim != 2 for c in cubes.values()):
            raise InvalidParameterError("--two-d needs 2-D data sets")
        total = len(cubes) * len(epsilons) * len(algorithms) * len(workloads) * args.trials
        rows = []
        with tqdm(total=total, desc="2-D evaluation", disable=None) as bar:
            for w in workloads:
                rows += ev.evaluate_2d(
                    cubes,
                    epsilons,
                    trials=args.trials,
                    seed=args.seed,
                    scale=args.scale,
                    n_queries=args.queries,
                    xi0=args.xi0,
                    progress=bar.update,
                    algorithms=algorithms,
                    runner=_run_2d_for(w),
                    workload=w,
                )
    else:
        algorithms = args.algorithms.split(",") if args.algorithms else list(TABLE_II)
        workloads = (args.workloads or "small,large").split(",")
        for a in algorithms:
            if a not in NEW_1D:
                parse_config(a)
        names = args.data or [n for n in ISSUE_1D]
        datasets = {}
        for s in names:
            name, x = load_dataset(s, data_dir)
            x = x.ravel()
            if args.domain:
                x = ev.coarsen(x, args.domain)
            datasets[name] = x
        gammas = _gammas(args.gamma_in)
        total = len(datasets) * len(algorithms) * len(epsilons) * args.trials * len(gammas)
        rows = []
        with tqdm(total=total, desc="histogram evaluation", disable=None) as bar:
            for g in gammas:  # several γ_in: one row per (algorithm, γ_in), as Tables III/V/VIII
                part = ev.evaluate_1d(
                    datasets,
                    algorithms,
                    epsilons,
                    workloads,
                    trials=args.trials,
                    seed=args.seed,
                    scale=args.scale,
                    gamma_in=g,
                    n_queries=args.queries,
                    progress=bar.update,
                    measure=args.measure,
                    dpp=args.dpp,
                    dawa_dyadic=not args.dawa_all_intervals,
                )
                if len(gammas) > 1:
                    part = [replace(r, algorithm=f"{r.algorithm} γ={g:g}") for r in part]
                rows += part
    path = write_report(rows, Path(args.out), "DP histogram evaluation", args.format)
    log.info("wrote %s and %s", path, Path(args.out) / "results.json")
    if args.format == "md":  # the report table is the command's output
        print(path.read_text())
    return 0


# --- CLI ------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The ``occustream histogram`` argument parser."""
    p = argparse.ArgumentParser(
        prog="occustream histogram",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser(
        "release",
        help="release a day's occupancy cube as a DP histogram",
        formatter_class=HelpFormatter,
    )
    r.add_argument("input", help=".npy / .csv cube (locations × slots) or simulator .jsonl")
    r.add_argument(
        "--algorithm",
        "-a",
        default="auto",
        choices=ALGORITHMS,
        help="SORTaki Table II configuration, HB, Privelet, GreedyH, MWEM, HDMM, DAWA10, "
        "DAWA-aligned, DAWA10-aligned, DAWA-HDMM, DAWA10-HDMM, DAWA15-HDMM, "
        "kdtree, cell, a 2-D algorithm (AG, UG, QuadTree, HB-2D, Privelet-2D, DAWA-2D, "
        "DAWA-2D-aligned, DAWA-2D-boxes, DAWA-2D-borders, AHP-2D, kd-hierarchical, "
        "auto-2d = DAWA-2D-borders for "
        "rectangles, DAWA-2D-aligned for cells), or auto: chosen "
        "from public facts and two DP estimates (scale, spread), then projected onto "
        "non-negative counts in the workload's norm (never worse for cell, prefix or "
        "all-range queries) (default)",
    )
    r.add_argument(
        "--workload",
        default="range",
        choices=RELEASE_WORKLOADS,
        help="queries the release should answer best (auto, DAWA, GreedyH, MWEM, HDMM)",
    )
    r.add_argument("--epsilon", "-e", type=float, default=1.0, help="privacy budget ε")
    r.add_argument(
        "--gamma-in",
        type=float,
        default=None,
        help="initializer share γ_in (default: per configuration, 0.7/0.9)",
    )
    r.add_argument(
        "--sensitivity",
        type=float,
        default=1.0,
        help="L1 change of the cube from one unit of privacy (default 1: one device in one slot)",
    )
    r.add_argument("--site", default="dbh", help="building/site model for .jsonl input")
    r.add_argument("--day", default=None, help="UTC day YYYY-MM-DD (default: from the data)")
    r.add_argument(
        "--xi0",
        type=float,
        default=None,
        help="kd-tree count threshold ξ₀ (default 40/ε; inf: uniformity only)",
    )
    r.add_argument(
        "--continuous",
        action="store_true",
        help="continuous Laplace noise (default: exact discrete Laplace for integer counts)",
    )
    r.add_argument("--decimals", type=int, default=2, help="rounding of released values")
    r.add_argument("--out", "-o", default=None, help="output JSON (default hist-DAY-ALG.json)")
    r.add_argument(
        "--redis-url",
        default=os.environ.get("REDIS_URL"),
        help="also write hist:{day}:{algorithm} and the ledger to Redis",
    )
    r.add_argument(
        "--daily-cap",
        type=float,
        default=None,
        help="refuse the release if the day's ε spent (ledger:spent:{day} in Redis) plus "
        "--epsilon would exceed this cap",
    )
    r.add_argument("--seed", type=int, default=None, help="seed the noise (tests only)")

    e = sub.add_parser(
        "evaluate", help="DPBench-style comparison of the algorithms", formatter_class=HelpFormatter
    )
    e.add_argument(
        "--data",
        "-d",
        nargs="*",
        default=None,
        help=f"DPBench names ({', '.join(DPBENCH_1D)}; with --two-d: "
        f"{', '.join(DPBENCH_2D)}) or .npy/.csv paths "
        f"(default: {', '.join(ISSUE_1D)})",
    )
    e.add_argument(
        "--data-dir",
        default=None,
        help="DPBench folder (default $OCCUSTREAM_DPBENCH or ../shared/data/dpbench)",
    )
    e.add_argument(
        "--algorithms",
        "-a",
        default=None,
        help=f"comma-separated, of {','.join(TABLE_II + NEW_1D)} "
        f"(default all of Table II: {','.join(TABLE_II)}); with --two-d of "
        f"{','.join(EVALUATE_2D)} (default {','.join(ev.KD_VS_CELL)}; auto-2d = the "
        "default release)",
    )
    e.add_argument("--epsilons", default="1,0.5,0.1", help="comma-separated ε values")
    e.add_argument(
        "--workloads",
        "-w",
        default=None,
        help="comma-separated: identity, prefix, small, large, random, allrange (default "
        "small,large); with --two-d: rectangles, identity (default rectangles)",
    )
    e.add_argument(
        "--measure",
        default="dpbench",
        choices=ev.MEASURES,
        help="dpbench: ‖Wx−Wx̂‖₂/(q·scale); sortaki: squared, ‖Wx−Wx̂‖₂²/(q·scale) "
        "(SORTaki's tables; use with -w allrange)",
    )
    e.add_argument("--trials", "-t", type=int, default=5, help="seeded trials per cell")
    e.add_argument("--seed", type=int, default=0, help="master seed")
    e.add_argument(
        "--scale",
        type=int,
        default=None,
        help="resample every data set to this many records (DPBench generator)",
    )
    e.add_argument("--domain", type=int, default=None, help="coarsen 1-D data to this size")
    e.add_argument(
        "--gamma-in",
        default=None,
        help="initializer share γ_in, or a comma list (0.3,0.5,0.7,0.9) for a γ_in table "
        "(default: per configuration)",
    )
    e.add_argument(
        "--dpp",
        default="auto",
        choices=("auto", "full", "restricted"),
        help="DP partitioner: full O(n²) Alg. 6, restricted 2^k bins, or auto (full ≤ 4096)",
    )
    e.add_argument(
        "--dawa-all-intervals",
        action="store_true",
        help="DAWA partition over all intervals (O(n²) candidates) instead of 2^k sizes",
    )
    e.add_argument("--queries", type=int, default=2000, help="queries per random workload")
    e.add_argument(
        "--two-d",
        action="store_true",
        help="2-D data sets and algorithms (default: kd-tree vs cell-based, Xiao et al.)",
    )
    e.add_argument(
        "--xi0",
        type=float,
        default=None,
        help="kd-tree count threshold ξ₀ (default 40/ε; inf: uniformity only)",
    )
    e.add_argument("--format", default="md", choices=("md", "html"), help="report format")
    e.add_argument("--out", "-o", default="histogram-eval", help="output folder")
    return p


def main(argv: list[str]) -> int:
    """Entry point of ``occustream histogram``."""
    args = build_parser().parse_args(argv)
    if getattr(args, "trials", 1) < 1:
        raise InvalidParameterError(f"--trials must be >= 1, not {args.trials!r}")
    return _release(args) if args.cmd == "release" else _evaluate(args)
