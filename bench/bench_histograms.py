"""DP histogram benchmark (issue 7): error tables, partitioner runtime, 2-D kd-tree.

1. Error tables (SORTaki Tables IV–IX style) for ε ∈ {1, 0.5, 0.1} on the 1-D DPBench
   files at domain 4096 (native scale), on a simulated occupancy cube (dbh, one day,
   location × 5-min slot, flattened location-major) and on a large "random" domain
   (RANDOM-64K: i.i.d. heavy-tailed shape, 65,536 values, resampled to 10⁶ records —
   ~15 per value, the density of SORTaki's Amazon set), small- and large-range
   workloads, every Table II configuration. Figures: median scaled error over the
   trials, and the ratio to Identity (the baseline, same process, same data).
2. Runtime vs domain size (1K … 500K) of the restricted DPP (bins of size 2^k, UEE)
   and of DAWA's partition (noisy L1 costs, dyadic), median over repeats, with the
   time divided by n·log²n and the fitted log-log slope.
3. 2-D: two-step kd-tree vs cell-based on the 256×256 files, random rectangles.

The tables and plots are also written to bench/results/histograms/ (Markdown + PNG).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from bench._timing import median_seconds
from mechanisms.histograms import TABLE_II
from mechanisms.histograms import evaluation as ev
from mechanisms.histograms.bin_error import FORMULAS
from mechanisms.histograms.partitioners import dawa_partition, dp_partition
from research.histogram import (
    DPBENCH_1D,
    DPBENCH_2D,
    ISSUE_1D,
    dpbench_dir,
    load_array,
    write_report,
)
from simulator import simulate

OUT = Path(__file__).parent / "results" / "histograms"
EPSILONS = (1.0, 0.5, 0.1)
SORTED = ("sGAHP", "stGAHP", "sDAHP", "sDWF", "sDPC", "sDAWA")
UNSORTED = ("GAHP", "DPC", "DAWA")
SPECIAL = ("OCCUPANCY-dbh", "RANDOM-64K")


def _datasets(quick: bool) -> dict[str, np.ndarray]:
    data_dir = dpbench_dir()
    out: dict[str, np.ndarray] = {}
    if data_dir is not None:
        for name in ISSUE_1D:
            out[name] = load_array(data_dir / DPBENCH_1D[name]).ravel()
    else:  # no DPBench folder: generated shapes at DPBench-like scale
        rng = np.random.default_rng(0)
        for kind in ("step", "zipf", "random"):
            out[f"GEN-{kind}"] = ev.resample(
                ev.synthetic_shape(kind, 4096, rng=rng), 100_000, rng=rng
            )
    out["OCCUPANCY-dbh"] = _occupancy_cube()
    rng = np.random.default_rng(64)
    out["RANDOM-64K"] = ev.resample(
        ev.synthetic_shape("random", 65536, rng=rng), 1_000_000, rng=rng
    )
    return out


def _occupancy_cube() -> np.ndarray:

    sim = simulate("dbh", days=1, seed=7)
    return sim.occupancy(tick_s=300).counts.T.astype(float).ravel()  # location-major


def _tables(quick: bool) -> tuple[dict, list[ev.ResultRow]]:
    data = _datasets(quick)
    rows = ev.evaluate_1d(
        data,
        TABLE_II,
        EPSILONS,
        ("small", "large"),
        trials=1 if quick else 3,
        seed=2026,
        n_queries=1000 if quick else 2000,
    )
    med = {(r.dataset, r.algorithm, r.epsilon, r.workload): r.error_median for r in rows}
    tables: dict = {}
    for w in ("small", "large"):
        t: dict = {}
        for d in data:
            for e in EPSILONS:
                base = med[(d, "Identity", e, w)]
                t[f"{d} eps={e:g}"] = {
                    a: {
                        "error": float(f"{med[(d, a, e, w)]:.3g}"),
                        "vs_identity": round(med[(d, a, e, w)] / base, 3),
                    }
                    for a in TABLE_II
                }
        tables[w] = t
    findings = {
        "all": _findings(rows, list(data)),
        "dpbench_4096": _findings(rows, [d for d in data if d not in SPECIAL]),
        "random_64k": _findings(rows, ["RANDOM-64K"]),
    }
    return {
        "error_tables": tables,
        "findings": findings,
        "scales": {d: int(x.sum()) for d, x in data.items()},
        "domains": {d: len(x) for d, x in data.items()},
    }, rows


def _findings(rows: list[ev.ResultRow], datasets: list[str]) -> dict:
    """Do SORTaki's findings hold? Counted over (data set, ε) cells."""
    med = {(r.dataset, r.algorithm, r.epsilon, r.workload): r.error_median for r in rows}
    out = {}
    for w in ("small", "large"):
        sort_wins = dawa_best = cells = sort_beats_identity = 0
        for d in datasets:
            for e in EPSILONS:
                cells += 1
                best_s = min(med[(d, a, e, w)] for a in SORTED)
                best_u = min(med[(d, a, e, w)] for a in UNSORTED)
                sort_wins += best_s < best_u
                sort_beats_identity += best_s < med[(d, "Identity", e, w)]
                best = min(TABLE_II, key=lambda a, d=d, e=e: med[(d, a, e, w)])
                dawa_best += best == "DAWA"
        out[w] = {
            "cells": cells,
            "sorted_beats_unsorted": sort_wins,
            "sorted_beats_identity": sort_beats_identity,
            "dawa_best_overall": dawa_best,
        }
    return out




def _runtime(quick: bool) -> dict:
    sizes = [1024, 4096, 16384, 65536] if quick else [1024, 4096, 16384, 65536, 262144, 500000]
    repeats = 1 if quick else 3
    rng = np.random.default_rng(1)
    res: dict = {
        "n": sizes,
        "restricted_dpp_s": [],
        "dawa_partition_s": [],
        "restricted_dpp_per_nlog2n_us": [],
        "dawa_per_nlog2n_us": [],
    }
    for n in sizes:
        x = ev.resample(rng.pareto(1.5, n) + 0.1, 50 * n, rng=rng)
        noisy = x + rng.laplace(0, 1 / 0.9, n)
        y = np.sort(noisy)[::-1]
        t_dpp = median_seconds(
            lambda y=y: dp_partition(y, FORMULAS["uee"], 0.9, 0.1, restricted=True), repeats
        )
        t_dawa = median_seconds(
            lambda x=x: dawa_partition(x, 0.25, 0.75, dyadic=True, rng=rng), repeats
        )
        nl = n * math.log2(n) ** 2
        res["restricted_dpp_s"].append(round(t_dpp, 4))
        res["dawa_partition_s"].append(round(t_dawa, 4))
        res["restricted_dpp_per_nlog2n_us"].append(round(1e6 * t_dpp / nl, 4))
        res["dawa_per_nlog2n_us"].append(round(1e6 * t_dawa / nl, 4))
    ln = np.log(sizes)
    res["restricted_dpp_loglog_slope"] = round(
        float(np.polyfit(ln, np.log(res["restricted_dpp_s"]), 1)[0]), 3
    )
    res["dawa_loglog_slope"] = round(
        float(np.polyfit(ln, np.log(res["dawa_partition_s"]), 1)[0]), 3
    )
    # reference slopes of n·log²n over the same sizes (what an O(n log² n) curve shows)
    res["n_log2n_loglog_slope"] = round(
        float(np.polyfit(ln, np.log([n * math.log2(n) ** 2 for n in sizes]), 1)[0]), 3
    )
    return res


def _two_d(quick: bool) -> tuple[dict, list[ev.ResultRow]]:
    data_dir = dpbench_dir()
    if data_dir is not None:
        names = list(DPBENCH_2D)[:3] if quick else list(DPBENCH_2D)
        cubes = {n: load_array(data_dir / DPBENCH_2D[n]) for n in names}
    else:
        cubes = {
            "GEN-2D": ev.resample(
                np.outer(np.arange(1, 257.0) ** -1.0, np.ones(256)),
                100_000,
                rng=np.random.default_rng(0),
            )
        }
    rows = ev.evaluate_2d(
        cubes, EPSILONS, trials=1 if quick else 3, seed=2026, n_queries=500 if quick else 2000
    )
    out = {}
    for r in rows:
        if r.algorithm == "kdtree":
            cell = next(
                c
                for c in rows
                if c.dataset == r.dataset and c.epsilon == r.epsilon and c.algorithm == "cell"
            )
            out[f"{r.dataset} eps={r.epsilon:g}"] = {
                "cell": float(f"{cell.error_median:.3g}"),
                "kdtree": float(f"{r.error_median:.3g}"),
                "kdtree_vs_cell": round(r.error_median / cell.error_median, 3),
                "kdtree_partitions": int(r.n_bins),
            }
    return out, rows


def run(quick: bool = False) -> dict:
    """Run the histogram benchmark (quick: 1 trial, domains up to 64K, 3 2-D files)."""
    t0 = time.perf_counter()
    figures, rows = _tables(quick)
    figures["tables_s"] = round(time.perf_counter() - t0, 1)
    figures["runtime_vs_domain"] = _runtime(quick)
    two_d, rows2 = _two_d(quick)
    figures["two_d_rectangles"] = two_d
    path = write_report(rows, OUT, "DP histograms: error tables (bench_histograms)")
    write_report(rows2, OUT / "two_d", "kd-tree vs cell-based (bench_histograms)")
    figures["report"] = str(path.relative_to(Path(__file__).parent.parent))
    figures["quick"] = quick
    return figures
