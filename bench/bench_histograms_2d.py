"""2-D DP histograms on DPBench (issue 17): the default (selected) release vs the best of
{AG, UG, QuadTree, HB-2D, Privelet-2D, MWEM, kd-tree, cells (Identity)} per cell.

Grid (Hay et al. SIGMOD 2016, DPBench): BJ-CABS-E, GOWALLA, STROKE, ADULT-2D at 256×256;
scales 1e4 / 1e5 / 1e6 (the DPBench generator: ``scale`` records drawn from the
normalised file); ε ∈ {0.1, 1}; 2000 random rectangles (uniform extents and positions,
:func:`~mechanisms.histograms.evaluation.random_boxes`; also MWEM's query set); error
``‖Wx − Wx̂‖₂/(q·scale)``; 5 trials, the median per cell. Seeds: master ``SEED``; data of
trial t from SeedSequence([SEED, dataset, scale, t]) (every algorithm sees the same
data), queries from [SEED, dataset, 7], noise from [SEED, dataset, scale, ε, t] — the
same stream for every algorithm (common random numbers, as the 1-D grid: the default
draws its features from a child stream, so the algorithm it picks sees the stream that
algorithm sees alone, and a comparison of two algorithms on a cell is not blurred by
independent draws; the kd-tree's heavy-tailed error made 5-trial medians of independent
draws differ up to 3× for the same algorithm). Every algorithm runs in this process on
the same inputs; the default is :func:`~mechanisms.histograms.select2d.release_2d` (1 %
of ε on N̂, 1 % on the top-16 mass when ψ ≥ 0.1, then the chosen one; identity cells
clamped at 0). The rule was fitted on the other six DPBench
2-D files with another seed (``bench/hist_2d_rule.py``); these four files only report it.

Before/after: the earlier rules run on the same inputs — ``default:scale`` (the
public-only rule, N̂ only) and ``default:occupancy`` (DP non-empty cell count).

Also the identity workload (every cell count, 3 trials; MWEM's queries are the cells).
Figures per ε: geo-mean over the cells of (default / best candidate), the worst cell,
each candidate's geo-mean ratio to the best, kd-tree vs cells (wins), and the same for
the earlier rules. ``--quick``: 2 trials, 2 data sets. A Markdown table goes to
bench/results/histograms_2d.md.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from bench.tails import plot_tails, tail_significance
from mechanisms.histograms import evaluation as ev
from mechanisms.histograms.select2d import release_2d, run_2d
from research.histogram import DPBENCH_2D, dpbench_dir, load_array

OUT = Path(__file__).parent / "results"
SEED = 17
DATASETS = ("BJ-CABS-E", "GOWALLA", "STROKE", "ADULT-2D")
SCALES = (10_000, 100_000, 1_000_000)
EPSILONS = (0.1, 1.0)
CANDIDATES = (
    "AG",
    "UG",
    "QuadTree",
    "HB-2D",
    "Privelet-2D",
    "MWEM",
    "DAWA-2D",
    "AHP-2D",
    "kd-tree",
    "cells",
)
#: the project's own variants, measured and reported but never the reference: the best
#: is taken over the published CANDIDATES only
OWN = ("DAWA-2D-aligned", "DAWA-2D-boxes", "DAWA-2D-borders")
N_QUERIES = 2000
#: the tail check: every cell (rectangles and identity) whose default/best ratio exceeds
#: TAIL_FROM over the short run (5 / 3 trials) is measured again with TAIL_TRIALS trials
#: (the first ones the same); 1.0 since session 34 (every cell the default loses, not only
#: those near the 1.2× bound: STROKE 1e6 ε 1 rectangles is 1.03 over 5 trials and 1.16 over
#: 25), 1.1 and rectangles only before
TAIL_FROM = 1.0
TAIL_TRIALS = 25
#: the earlier rules, run for the before/after comparison: the public-only rule
#: (``features="scale"``) and the occupancy rule
BEFORE = ("default:concentration", "default:scale", "default:occupancy")


def _gen(*key: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(list(key))))


def load_cubes(names: tuple[str, ...] | list[str]) -> dict[str, np.ndarray]:
    """The DPBench 2-D files by name (generated shapes when the folder is absent)."""
    data_dir = dpbench_dir()
    if data_dir is None:
        rng = np.random.default_rng(SEED)
        return {f"GEN-2D-{i}": rng.gamma(0.3, 1.0, (256, 256)) for i in range(2)}
    return {n: load_array(data_dir / DPBENCH_2D[n]) for n in names}


def measure(
    cubes: dict[str, np.ndarray],
    algorithms: tuple[str, ...] | list[str],
    *,
    scales: tuple[int, ...] = SCALES,
    epsilons: tuple[float, ...] = EPSILONS,
    trials: int = 5,
    seed: int = SEED,
    n_queries: int = N_QUERIES,
    workload: str = "rectangles",
    only: set[tuple[str, int, float]] | None = None,
) -> dict[tuple[str, int, float], dict[str, list[float]]]:
    """Errors per (data set, scale, ε) cell and algorithm ("default" = the selection).

    ``workload``: "rectangles" (``n_queries`` random boxes) or "identity" (every cell:
    ``‖x − x̂‖₂/(n·scale)``). ``only``: just these cells (seeds as in the full grid —
    trial ``t`` of a cell has the same data and noise whatever ``trials`` is).
    """
    out: dict[tuple[str, int, float], dict[str, list[float]]] = {}
    for d_i, (name, shape) in enumerate(cubes.items()):
        boxes = ev.random_boxes(shape.shape, n_queries, rng=_gen(seed, d_i, 7))
        mw_boxes = None if workload == "identity" else boxes  # MWEM's queries (None: cells)
        for s_i, scale in enumerate(scales):
            if only is not None and not any(c[:2] == (name, scale) for c in only):
                continue
            data = [ev.resample(shape, scale, rng=_gen(seed, d_i, s_i, t)) for t in range(trials)]
            for e_i, eps in enumerate(epsilons):
                if only is not None and (name, scale, eps) not in only:
                    continue
                cell = out.setdefault((name, scale, eps), {})
                for alg in algorithms:
                    errs = []
                    for t, x in enumerate(data):
                        rng = _gen(seed, d_i, s_i, e_i, t)  # common random numbers
                        if alg == "default":
                            est = release_2d(
                                x, eps, workload=workload, boxes=mw_boxes, rng=rng
                            ).estimate
                        elif alg.startswith("default:"):  # the earlier rules, for before/after
                            feat = alg.split(":", 1)[1]
                            est = release_2d(
                                x, eps, features=feat, boxes=mw_boxes, rng=rng
                            ).estimate
                        else:
                            est = run_2d(alg, x, eps, boxes=mw_boxes, rng=rng).estimate
                        if workload == "identity":
                            errs.append(ev.scaled_error_cells(x, est))
                        else:
                            errs.append(ev.scaled_error_boxes(x, est, boxes))
                    cell[alg] = errs
    return out


def geomean(v: list[float]) -> float:
    """Geometric mean (NaN when empty)."""
    return float(np.exp(np.mean(np.log(v)))) if v else math.nan


def summarise(
    errors: dict[tuple[str, int, float], dict[str, list[float]]],
    candidates: tuple[str, ...] = CANDIDATES,
) -> dict:
    """Per ε: geo-mean of default/best, worst cell, candidates' ratios, kd vs cells."""
    figures: dict = {}
    for eps in sorted({k[2] for k in errors}):
        cells = {k: v for k, v in errors.items() if k[2] == eps}
        ratios, worst = [], ("", 0.0)
        cand_ratio: dict[str, list[float]] = {a: [] for a in candidates}
        own_ratio: dict[str, list[float]] = {}
        kd_wins = 0
        before: dict[str, list[float]] = {}
        worst_before: dict[str, tuple[str, float]] = {}
        for (name, scale, _), errs in cells.items():
            med = {a: float(np.median(e)) for a, e in errs.items()}
            best = min(med[a] for a in candidates)
            for a in candidates:
                cand_ratio[a].append(med[a] / best)
            for a in med:
                if a not in candidates and not a.startswith("default"):
                    own_ratio.setdefault(a, []).append(med[a] / best)
            if "default" in med:
                r = med["default"] / best
                ratios.append(r)
                if r > worst[1]:
                    worst = (f"{name} scale {scale}", r)
            for alg, r in ((a, m / best) for a, m in med.items() if a.startswith("default:")):
                before.setdefault(alg, []).append(r)
                if r > worst_before.get(alg, ("", 0.0))[1]:
                    worst_before[alg] = (f"{name} scale {scale}", r)
            kd_wins += int(med["kd-tree"] < med["cells"])
        figures[f"eps_{eps:g}"] = {
            "default_vs_best_geomean": round(geomean(ratios), 3),
            "worst_cell": worst[0],
            "worst_ratio": round(worst[1], 3),
            "cells_over_1.2": int(sum(r > 1.2 for r in ratios)),
            "candidates_vs_best_geomean": {a: round(geomean(v), 3) for a, v in cand_ratio.items()},
            "kdtree_beats_cells": f"{kd_wins}/{len(cells)}",
        }
        if own_ratio:
            figures[f"eps_{eps:g}"]["own_vs_best_geomean"] = {
                a: round(geomean(v), 3) for a, v in own_ratio.items()
            }
        for alg, v in before.items():
            figures[f"eps_{eps:g}"][f"{alg}_vs_best_geomean"] = round(geomean(v), 3)
            w = worst_before[alg]
            figures[f"eps_{eps:g}"][f"{alg}_worst"] = f"{w[0]} {w[1]:.3f}"
    return figures


def _ratio(errs: dict[str, list[float]]) -> tuple[float, str]:
    """Median default / median of the best candidate, and that candidate."""
    med = {a: float(np.median(e)) for a, e in errs.items()}
    best = min(CANDIDATES, key=med.__getitem__)
    return med["default"] / med[best], best


#: the tail-check plot per workload
TAIL_PLOT = {
    "rectangles": "histograms_2d_tails.png", "identity": "histograms_2d_identity_tails.png",
}


def tail_check(cubes: dict[str, np.ndarray], errors: dict, workload: str = "rectangles") -> dict:
    """The cells over :data:`TAIL_FROM` measured again with :data:`TAIL_TRIALS` trials.

    A data-dependent release's error varies a lot between trials (a noisy partition
    cut in the wrong place costs a factor of two or more), so a 5-trial median ratio of
    two such releases moves by tens of per cent between seeds; the long run says
    which of the tail cells are real losses. ``errors``: the short run's (its trial
    count read off the cells), of ``workload``.
    """
    cells = {k for k, v in errors.items() if _ratio(v)[0] > TAIL_FROM}
    if not cells:
        return {"from": TAIL_FROM, "cells": {}, "cells_over_1.2": 0}
    short = len(next(iter(errors[next(iter(cells))].values())))
    again = measure(
        cubes, ("default", *CANDIDATES), trials=TAIL_TRIALS, only=cells, workload=workload
    )
    rows = {}
    for k in sorted(cells):
        r5, b5 = _ratio(errors[k])
        r, b = _ratio(again[k])
        rows[f"{k[0]} scale {k[1]} eps {k[2]:g}"] = {
            f"ratio_{short}_trials": round(r5, 3), f"best_{short}_trials": b5,
            f"ratio_{TAIL_TRIALS}_trials": round(r, 3), f"best_{TAIL_TRIALS}_trials": b,
        }
    over = sum(v[f"ratio_{TAIL_TRIALS}_trials"] > 1.2 for v in rows.values())
    flat = {(*k, a): e for k, v in again.items() for a, e in v.items()}
    sig = tail_significance(flat, CANDIDATES, "default")
    plot_tails(sig, OUT / TAIL_PLOT[workload],
               f"2-D {workload}, default vs the best published ({TAIL_TRIALS} trials)")
    return {"from": TAIL_FROM, "trials": TAIL_TRIALS, "cells": rows, "cells_over_1.2": over,
            "significance": sig}


def rerun_tail_check(path: Path) -> dict:
    """``python -m bench.bench_histograms_2d --tail-check``: the tail checks of the stored
    report (rectangles and identity; their cells from bench/results/histograms_2d.json)
    measured again, written back."""
    import json

    doc = json.loads(path.read_text())
    cubes = load_cubes(DATASETS)
    for workload, where, short in (("rectangles", doc, 5), ("identity", doc["identity"], 3)):
        if "tail_check" not in where:  # a report from before the identity tail check
            continue
        keys = [k.rsplit(" ", 4) for k in where["tail_check"]["cells"]]
        cells = {(name, int(scale), float(eps)) for name, _, scale, _, eps in keys}
        errors = measure(
            cubes, ("default", *CANDIDATES), trials=short, only=cells, workload=workload
        )
        where["tail_check"] = tail_check(cubes, errors, workload)
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    return {"rectangles": doc["tail_check"], "identity": doc["identity"].get("tail_check")}


def markdown(errors: dict, figures: dict, algorithms: tuple[str, ...]) -> str:
    """Per-cell medians (×1e-4 … as printed) and the summary."""
    lines = [
        "# 2-D histograms on DPBench (bench_histograms_2d)",
        "",
        "Median scaled error over trials; ratio = default / best candidate.",
        "",
        "| data | scale | ε | " + " | ".join(algorithms) + " | ratio |",
        "|---|---|---|" + "---|" * (len(algorithms) + 1),
    ]
    for (name, scale, eps), errs in errors.items():
        med = {a: float(np.median(e)) for a, e in errs.items()}
        best = min(med[a] for a in CANDIDATES)
        row = " | ".join(f"{med[a]:.3g}" for a in algorithms)
        lines.append(f"| {name} | {scale:g} | {eps:g} | {row} | {med['default'] / best:.2f} |")
    lines += ["", "```", repr(figures), "```", ""]
    return "\n".join(lines)


def run(quick: bool = False) -> dict:
    """The 2-D benchmark (quick: 2 trials, BJ-CABS-E and ADULT-2D)."""
    t0 = time.perf_counter()
    names = ("BJ-CABS-E", "ADULT-2D") if quick else DATASETS
    algorithms = (*CANDIDATES, *OWN, "default", *BEFORE)
    cubes = load_cubes(names)
    errors = measure(cubes, algorithms, trials=2 if quick else 5)
    figures = summarise(errors)
    if not quick:
        figures["tail_check"] = tail_check(cubes, errors)
    ident_algs = (*CANDIDATES, *OWN, "default")
    ident = measure(cubes, ident_algs, trials=2 if quick else 3, workload="identity")
    figures["identity"] = summarise(ident)
    if not quick:
        figures["identity"]["tail_check"] = tail_check(cubes, ident, "identity")
    figures["seconds"] = round(time.perf_counter() - t0, 1)
    figures["quick"] = quick
    figures["seed"] = SEED
    OUT.mkdir(exist_ok=True)
    md = "histograms_2d_quick.md" if quick else "histograms_2d.md"  # keep the full table
    text = markdown(errors, figures, algorithms)
    text += "\n## identity workload\n\n" + markdown(
        ident, figures["identity"], ident_algs
    )
    (OUT / md).write_text(text)
    return figures


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--tail-check"]:
        print(rerun_tail_check(OUT / "histograms_2d.json"))
