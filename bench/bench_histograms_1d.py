"""1-D DP histograms (issue 17): the default (selected) algorithm vs the best per cell.

Grid (:mod:`bench.hist_1d_grid`): the 7 reported DPBench 1-D files (ADULT, HEPTH, INCOME,
MEDCOST, NETTRACE, PATENT, SEARCHLOGS; 4096 bins — the selection rule was fitted on the
other 7 files), scales 1e4/1e5/1e6, ε ∈ {0.1, 1}, workloads identity / prefix / 2000
random ranges, 25 trials (medians; the issue's 5-trial table is reported too, from the
first 5 trials of the same run — the same seeds), seeds in :mod:`bench.hist_1d_grid`. Peers as the
papers describe them: HB, Privelet, DAWA (GreedyH measurement), AHP (published merge
rule), DPCube (``DPC``), MWEM, Identity. ``auto`` is the default release: 1 % of ε on a DP
scale estimate, then the rule of :mod:`mechanisms.histograms.select` with 99 %, then
its estimate projected onto non-negative histograms in the workload's norm
(:mod:`mechanisms.histograms.projection`, post-processing); the peers are run as
published, without it.

Figures per workload and ε: geo-mean over (data set, scale) of error(auto) / min over the
peers, the worst such cell, how often each peer is the best, and the same geo-mean for
"always DAWA" (the best single peer), "always HDMM" (not a peer) and the previous
session's one-feature rule (``OLD_RULE``, applied to the true scale on the same cells)
for reference, and "always DAWA10" (DAWA with 10 % of ε on its partition — a candidate
of the default, not a peer); every cell's median is in the JSON. Noise: common random numbers (see
:mod:`bench.hist_1d_grid`).
Timings: one HDMM release (OPT₀ strategy search + measurement) and one DAWA release at
4096 bins (HDMM on prefix and on the random ranges, strategy search included, cache
cleared; DAWA on the ranges, median of 3), and the restricted DPP configurations
(sDAHP, sDWF) at 500,000 bins. ``--quick``: NETTRACE and INCOME, scales 1e4 and 1e6,
1 trial; HDMM timed at 1024 bins.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from bench.hist_1d_grid import REPORT, load, medians, run_trials, seq, workloads
from bench.tails import plot_tails, tail_significance
from mechanisms.histograms import hdmm, parse_config, run_config
from mechanisms.histograms.select import release_1d

PEERS = ("HB", "Privelet", "DAWA", "AHP", "DPC", "MWEM", "Identity")
DEFAULT = "auto"
#: run next to the peers (not peers of the issue's list): HDMM, and DAWA10 (DAWA with 10 %
#: of ε on its partition, one of the default's candidates)
EXTRA = ("HDMM", "DAWA10")
#: the previous session's one-feature rule (upper bound on log10(ε·s/n), algorithm),
#: evaluated here on the measured cells with the true scale, for the before/after
OLD_RULE = {
    "identity": ((-0.112, "DAWA"), (0.888, "AHP"), (math.inf, "DPC")),
    "prefix": ((-0.112, "DAWA"), (math.inf, "HB")),
    "random": ((0.888, "DAWA"), (math.inf, "HB")),
}


def _old_rule(wname: str, eps: float, scale: int, n: int = 4096) -> str:
    lvl = math.log10(eps * scale / n)
    return next(a for b, a in OLD_RULE[wname] if lvl <= b)


def _timings(quick: bool) -> dict[str, float]:
    shape = load("NETTRACE")
    x = np.round(shape / shape.sum() * 1e5)
    w = workloads(len(x))[2]
    out = {}
    n_h = 1024 if quick else 4096
    xh = x.reshape(n_h, -1).sum(axis=1)
    for wi, wname in ((1, "prefix"), (2, "random")):
        wh = workloads(n_h)[wi]
        hdmm._CACHE.clear()
        t0 = time.perf_counter()
        release_1d("HDMM", xh, 1.0, workload=(wh.lo, wh.hi), rng=seq(5))
        out[f"hdmm_{n_h}_bins_{wname}_s"] = round(time.perf_counter() - t0, 2)
    secs = []
    for r in range(3):
        t0 = time.perf_counter()
        release_1d("DAWA", x, 1.0, workload=(w.lo, w.hi), rng=seq(6, r))
        secs.append(time.perf_counter() - t0)
    out["dawa_4096_bins_s_median"] = round(float(np.median(secs)), 3)
    out["dawa_4096_bins_s_first_incl_gram"] = round(secs[0], 3)
    # restricted DPP (SORTaki Alg. 6 over bins of size 2^k) at 500k bins: NETTRACE's
    # shape repeated to 500,000 cells, scale 1e7; sDAHP and sDWF partition with it
    n_big = 500_000
    big = np.resize(shape, n_big)
    xb = np.round(big / big.sum() * 1e7)
    for cfg in ("sDAHP", "sDWF"):
        t0 = time.perf_counter()
        run_config(parse_config(cfg), xb, 1.0, dpp="restricted", rng=seq(7))
        out[f"restricted_dpp_{cfg}_{n_big}_bins_s"] = round(time.perf_counter() - t0, 2)
    return out


#: trials per cell (medians); the first :data:`ISSUE_TRIALS` of them are the issue's
#: 5-trial grid, seed for seed (:func:`bench.hist_1d_grid.run_trials`)
TRIALS = 25
#: the issue's grid: its table is reported too, from the first 5 trials of the same run
ISSUE_TRIALS = 5


def _grid(quick: bool) -> tuple[tuple[str, ...], tuple[int, ...], int]:
    datasets = ("NETTRACE", "INCOME") if quick else REPORT
    scales = (10**4, 10**6) if quick else (10**4, 10**5, 10**6)
    return datasets, scales, 1 if quick else TRIALS


def _report(
    errors: dict[tuple, list[float]],
    secs: dict[str, float],
    datasets: tuple[str, ...],
    scales: tuple[int, ...],
    trials: int,
) -> dict:
    """:func:`summarise` over all the trials, plus the issue's 5-trial table from the
    first five (``table_5_trials``, ``cells_over_1.2_5_trials``)."""
    out = summarise(medians(errors), secs, datasets, scales, trials)
    if trials > ISSUE_TRIALS:
        five = summarise(medians(errors, ISSUE_TRIALS), secs, datasets, scales, ISSUE_TRIALS)
        out["table_5_trials"] = five["table"]
        out["worst_cell_overall_5_trials"] = five["worst_cell_overall"]
    for tag, table in (("", out["table"]), ("_5_trials", out.get("table_5_trials", {}))):
        if table:
            out[f"cells_over_1.2{tag}"] = sum(v["cells_over_1.2"] for v in table.values())
    if trials > 1:
        out["tail_significance"] = tail_significance(errors, PEERS, DEFAULT)
    return out


def plot_trials(errors: dict[tuple, list[float]], path: Path) -> None:
    """Each cell's auto / best-peer ratio over the first 5 trials (x) and over all (y).

    Points far from the diagonal are cells whose 5-trial verdict the long run reverses;
    the dotted lines mark the issue's 1.2× bound.
    """
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator

    from research.report import figure_png, new_figure

    fig, ax = new_figure(6.0, 5.0)
    for wname, colour in (("identity", "tab:blue"), ("prefix", "tab:orange"),
                          ("random", "tab:green")):
        pts = []
        for first in (ISSUE_TRIALS, None):
            med = medians({k: v for k, v in errors.items() if k[3] == wname}, first)
            cells = sorted({k[:4] for k in med})
            pts.append([med[c + (DEFAULT,)] / min(med[c + (p,)] for p in PEERS) for c in cells])
        ax.scatter(pts[0], pts[1], s=14, color=colour, label=wname)
    lims = (0.3, 3.0)
    ax.plot(lims, lims, color="grey", lw=0.8)
    ax.axvline(1.2, ls=":", color="grey")
    ax.axhline(1.2, ls=":", color="grey")
    ax.set(xscale="log", yscale="log", xlim=lims, ylim=lims,
           xlabel=f"auto / best peer, {ISSUE_TRIALS} trials",
           ylabel=f"auto / best peer, {TRIALS} trials")
    ticks = [0.3, 0.5, 0.7, 1.0, 1.2, 1.5, 2.0, 3.0]
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(FixedLocator(ticks))
        axis.set_major_formatter(FixedFormatter([f"{t:g}" for t in ticks]))
        axis.set_minor_locator(NullLocator())
    ax.set_title("1-D default vs the best published algorithm, per cell", fontsize=9)
    ax.legend(fontsize=8)
    path.write_bytes(figure_png(fig))


def run(quick: bool = False) -> dict:
    """The selected algorithm vs the best peer per cell, and the timings."""
    datasets, scales, trials = _grid(quick)
    errors, secs = run_trials(datasets, (*PEERS, *EXTRA, DEFAULT), scales, (0.1, 1.0), trials)
    out = _report(errors, secs, datasets, scales, trials)
    if not quick:
        res = Path(__file__).parent / "results"
        plot_trials(errors, res / "histograms_1d_trials.png")
        plot_tails(out["tail_significance"], res / "histograms_1d_tails.png",
                   f"1-D default vs the best published algorithm ({trials} trials)")
    out.update(_timings(quick))
    return out


def summarise(
    errors: dict[tuple, float],
    secs: dict[str, float],
    datasets: tuple[str, ...],
    scales: tuple[int, ...],
    trials: int,
) -> dict:
    """The figures of :func:`run` from the cells' medians."""
    table = {}
    wins: dict[str, int] = dict.fromkeys(PEERS, 0)
    worst_overall = 0.0
    for wname in ("identity", "prefix", "random"):
        for eps in (0.1, 1.0):
            ratios = []
            dawa = []
            hdmm_r = []
            lean = []
            old = []
            worst = (0.0, "")
            for d in datasets:
                for s in scales:
                    peer = {a: errors[(d, s, eps, wname, a)] for a in PEERS}
                    best = min(peer, key=peer.__getitem__)
                    wins[best] += 1
                    r = errors[(d, s, eps, wname, DEFAULT)] / peer[best]
                    ratios.append(r)
                    dawa.append(peer["DAWA"] / peer[best])
                    hdmm_r.append(errors[(d, s, eps, wname, "HDMM")] / peer[best])
                    lean.append(errors[(d, s, eps, wname, "DAWA10")] / peer[best])
                    old.append(peer[_old_rule(wname, eps, s)] / peer[best])
                    if r > worst[0]:
                        worst = (r, f"{d} scale {s:g} (best {best})")
            gm = float(np.exp(np.mean(np.log(ratios))))
            worst_overall = max(worst_overall, worst[0])
            table[f"{wname} eps={eps:g}"] = {
                "geo_mean_auto_vs_best": round(gm, 3),
                "worst_cell": round(worst[0], 3),
                "worst_where": worst[1],
                "cells_over_1.2": int(sum(r > 1.2 for r in ratios)),
                "geo_mean_dawa_always_vs_best": round(float(np.exp(np.mean(np.log(dawa)))), 3),
                "geo_mean_hdmm_always_vs_best": round(float(np.exp(np.mean(np.log(hdmm_r)))), 3),
                "geo_mean_dawa10_always_vs_best": round(float(np.exp(np.mean(np.log(lean)))), 3),
                "geo_mean_old_rule_vs_best": round(float(np.exp(np.mean(np.log(old)))), 3),
                "worst_cell_old_rule": round(max(old), 3),
            }
    out = {
        "table": table,
        "worst_cell_overall": round(worst_overall, 3),
        "best_peer_counts": wins,
        "seconds_per_algorithm": {a: round(v, 1) for a, v in secs.items()},
        "grid": {"datasets": list(datasets), "scales": list(scales), "trials": trials},
        "cells": {"|".join(map(str, k)): v for k, v in errors.items()},
    }
    return out


def fold_part(path: Path, doc: dict) -> None:
    """Write a part's run to ``path``; when the part file exists, the run's algorithms
    replace theirs in it (trials and seconds) and the others are kept — how one
    algorithm (``--algs auto`` after a rule change) is re-run without the peers."""
    import json

    if path.exists():
        old = json.loads(path.read_text())
        algs = {k.rsplit("|", 1)[1] for k in doc["trials"]}
        trials = {k: v for k, v in old["trials"].items() if k.rsplit("|", 1)[1] not in algs}
        trials.update(doc["trials"])
        doc = {"trials": trials, "secs": {**old["secs"], **doc["secs"]},
               "wall_s": old["wall_s"]}
    path.write_text(json.dumps(doc) + "\n")


def main(argv: list[str]) -> None:
    """``--part D1,D2 [--algs A,B]``: run those cells into the part file
    bench/results/hist_1d/report_part.D1,D2.json (parallel runs on a loaded machine;
    with ``--algs``, :func:`fold_part` replaces only those algorithms); ``--merge``: the
    figures of ``python -m bench histograms_1d`` from
    every part (same grid, same seeds: a cell's seeds do not depend on the subset) plus
    the timings, written to bench/results/histograms_1d.json."""
    import json
    import platform

    res = Path(__file__).parent / "results"
    datasets, scales, trials = _grid(False)
    algs = (*PEERS, *EXTRA, DEFAULT)
    if argv[0] == "--part":
        names = tuple(argv[1].split(","))
        if len(argv) > 3 and argv[2] == "--algs":
            algs = tuple(argv[3].split(","))
        t0 = time.perf_counter()
        errors, secs = run_trials(names, algs, scales, (0.1, 1.0), trials, progress=True)
        doc = {"trials": {"|".join(map(str, k)): v for k, v in errors.items()}, "secs": secs,
               "wall_s": time.perf_counter() - t0}
        fold_part(res / "hist_1d" / f"report_part.{argv[1]}.json", doc)
        return
    errors: dict[tuple, list[float]] = {}
    secs = dict.fromkeys(algs, 0.0)
    wall = 0.0
    for f in sorted((res / "hist_1d").glob("report_part.*.json")):
        doc = json.loads(f.read_text())
        for k, v in doc["trials"].items():
            d, s, e, w, a = k.split("|")
            errors[(d, int(s), float(e), w, a)] = v
        for a, v in doc["secs"].items():
            secs[a] += v
        wall += doc["wall_s"]
    out = _report(errors, secs, datasets, scales, trials)
    plot_trials(errors, res / "histograms_1d_trials.png")
    plot_tails(out["tail_significance"], res / "histograms_1d_tails.png",
               f"1-D default vs the best published algorithm ({trials} trials)")
    t0 = time.perf_counter()
    out.update(_timings(False))
    out = {"machine": platform.machine(), "cpus": __import__("os").cpu_count(),
           "wall_s": round(wall + time.perf_counter() - t0, 2),
           "run": "python -m bench.bench_histograms_1d --part ... (parallel) then --merge",
           **out}
    (res / "histograms_1d.json").write_text(json.dumps(out, indent=2, default=str) + "\n")
    for k, v in out.items():
        if k != "cells":
            print(f"{k}: {v}")


if __name__ == "__main__":
    import sys

    from bench import log_progress

    log_progress()
    main(sys.argv[1:])
