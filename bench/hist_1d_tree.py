"""Fit the two-feature selection rule of :mod:`mechanisms.histograms.select` (held-out files).

``python -m bench.hist_1d_tree`` reads the per-cell medians that ``python -m
bench.hist_1d_rule`` wrote for the TRAIN data sets (bench/results/hist_1d/
train_cells.json: BIDS, BIDS-FJ, BIDS-FM, MDSALARY, MDSALARY-FA, LC-REQ-ALL,
LC-DTIR-ALL; scales 1e3, 3e3, … 1e7, ε ∈ {0.1, 1}, 4 trials; none of them is reported),
computes the rule's two features on the noise-free training data — the signal level
``log10(ε·scale/n)`` and the truncated-mass fraction ``u = Σ min(x_i, c)/(n·c)``,
``c = max(1, round(κ/ε))``
(:func:`mechanisms.histograms.select.truncated_fraction`) — and, per workload kind,
searches every depth-≤ 2 decision tree on them (thresholds at midpoints of the observed
values, every leaf with at least :data:`MIN_LEAF` cells) for the smallest sum of
log(error after the projection / best published error) over the cells. Prints the
boxes for ``select.RULE`` and writes bench/results/hist_1d/tree.json.
``python -m bench.hist_1d_tree --cv`` writes the leave-one-file-out estimate of every
κ instead (bench/results/hist_1d/tree_cv.json; about 5 minutes).
``python -m bench.hist_1d_tree --recheck prefix 20 0.12`` re-measures the training cells
with u ≤ 0.12 with 20 trials and scores the deployed rule's leaves on them at 4 and at
20 trials (bench/results/hist_1d/recheck.prefix.json).
"""

from __future__ import annotations

import itertools
import json
import math
import sys
from pathlib import Path

from bench.hist_1d_grid import REPORT, TRAIN, load, seq
from mechanisms.histograms import evaluation as ev
from mechanisms.histograms.select import box_holds, truncated_fraction

OUT = Path(__file__).parent / "results" / "hist_1d"
KIND = {"identity": "identity", "prefix": "prefix", "random": "range"}
#: the published algorithms, whose best error per cell is the reference
PUBLISHED = ("Identity", "HB", "DAWA", "AHP", "DPC", "HDMM", "Privelet")
#: algorithms the rule may choose: the published ones, DAWA10 (DAWA with 10 % of ε on
#: its partition, :data:`mechanisms.histograms.sortaki.LEAN_DAWA_PARTITION_SHARE`) and
#: both with the partition over aligned dyadic bins (``-aligned``) or with HDMM's
#: measurement of the buckets (``-HDMM``)
CHOICES = (
    *PUBLISHED, "DAWA10", "DAWA-aligned", "DAWA10-aligned", "DAWA-HDMM", "DAWA10-HDMM"
)
#: truncation levels tried (the rule's κ is the one with the best training fit)
KAPPAS = (0.5, 1.0, 2.0, 4.0)
#: smallest number of training cells in a leaf (against over-fitting 126 cells per kind)
MIN_LEAF = 10


def _features(cells: dict[str, float], kappa: float) -> dict[tuple, tuple[float, float]]:
    """(data, scale, ε) → (log10 snr, u at cap max(1, round(κ/ε))), trial-0 sample."""
    out = {}
    keys = {tuple(k.split("|")[:3]) for k in cells}
    shapes = {d: load(d) for d in {k[0] for k in keys}}
    for d, s, e in sorted(keys):
        shape = shapes[d]
        n = len(shape)
        x = ev.resample(shape, int(s), rng=seq(0, (*REPORT, *TRAIN).index(d), int(s), 0))
        eps = float(e)
        cap = float(max(1, round(kappa / eps)))
        out[(d, s, e)] = (math.log10(eps * int(s) / n), truncated_fraction(x, cap))
    return out


def _best_leaf(rows: list[tuple[tuple[float, float], dict[str, float]]]) -> tuple[str, float]:
    cost = {a: sum(r[1][a] for r in rows) for a in CHOICES}
    a = min(CHOICES, key=lambda c: (round(cost[c], 9), CHOICES.index(c)))
    return a, cost[a]


def _splits(rows: list) -> list[tuple[int, float]]:
    out = []
    for f in (0, 1):
        vals = sorted({r[0][f] for r in rows})
        out += [(f, (a + b) / 2) for a, b in itertools.pairwise(vals)]
    return out


def _fit_depth1(rows: list) -> tuple[float, list]:
    """Best leaf or best single split of ``rows``: (cost, [(box, alg)])."""
    alg, cost = _best_leaf(rows)
    best = (cost, [((), alg)])
    for f, t in _splits(rows):
        left = [r for r in rows if r[0][f] <= t]
        right = [r for r in rows if r[0][f] > t]
        if len(left) < MIN_LEAF or len(right) < MIN_LEAF:
            continue
        (a1, c1), (a2, c2) = _best_leaf(left), _best_leaf(right)
        if c1 + c2 < best[0] - 1e-9:
            best = (c1 + c2, [(((f, "<=", t),), a1), (((f, ">", t),), a2)])
    return best


def fit(cells: dict[str, float], kappa: float) -> dict[str, dict]:
    """Per kind: the best depth-≤ 2 tree as boxes, its training geo-mean and the leaves'.

    The choices are scored by their error *after* the default's projection (cells
    ``name+P``: :func:`mechanisms.histograms.select.auto_release` projects whatever it
    picks), against the best candidate *as published* (no projection) — the ratio the
    benchmark reports.
    """
    feats = _features(cells, kappa)
    out = {}
    for wname, kind in KIND.items():
        rows = []
        for (d, s, e), fv in feats.items():
            key = f"{d}|{s}|{e}|{wname}|"
            best = min(cells[key + a] for a in PUBLISHED)
            errs = {a: cells[key + a + "+P"] for a in CHOICES}
            rows.append((fv, {a: math.log(v / best) for a, v in errs.items()}))
        cost, boxes = _fit_depth1(rows)
        for f, t in _splits(rows):
            left = [r for r in rows if r[0][f] <= t]
            right = [r for r in rows if r[0][f] > t]
            if len(left) < MIN_LEAF or len(right) < MIN_LEAF:
                continue
            cl, bl = _fit_depth1(left)
            cr, br = _fit_depth1(right)
            if cl + cr < cost - 1e-9:
                cost = cl + cr
                boxes = [(((f, "<=", t), *b), a) for b, a in bl] + [
                    (((f, ">", t), *b), a) for b, a in br
                ]
        out[kind] = {
            "boxes": boxes,
            "train_geo_mean": round(math.exp(cost / len(rows)), 4),
            "always": {
                a: round(math.exp(sum(r[1][a] for r in rows) / len(rows)), 4) for a in CHOICES
            },
        }
    return out


def cross_validate(cells: dict[str, float], kappa: float) -> dict[str, dict]:
    """Leave-one-file-out: per kind, fit on 6 TRAIN files, score the 7th's cells.

    Returns per kind the held-out geo-mean of (projected error of the tree's choice /
    best published error), the number of held-out cells over 1.2× and the worst — what
    the rule can be expected to do on files it was not fitted on.
    """
    feats = _features(cells, kappa)
    out = {}
    for wname, kind in KIND.items():
        logs = []
        for hold in TRAIN:
            train = {k: v for k, v in cells.items() if not k.startswith(hold + "|")}
            boxes = fit(train, kappa)[kind]["boxes"]
            for (d, s, e), fv in feats.items():
                if d != hold:
                    continue
                key = f"{d}|{s}|{e}|{wname}|"
                best = min(cells[key + a] for a in PUBLISHED)
                alg = next(a for b, a in boxes if box_holds(b, fv))
                logs.append(math.log(cells[key + alg + "+P"] / best))
        out[kind] = {
            "held_out_geo_mean": round(math.exp(sum(logs) / len(logs)), 4),
            "cells_over_1.2": sum(v > math.log(1.2) for v in logs),
            "worst": round(math.exp(max(logs)), 3),
            "cells": len(logs),
        }
    return out


def recheck(cells: dict[str, float], wname: str, trials: int, umax: float) -> dict[str, dict]:
    """The deployed rule's leaves on the training cells with ``u ≤ umax``, re-measured.

    The training cells are 4-trial medians, and a data-dependent release's error varies
    by a factor of 3–4 between trials; this runs those cells again with ``trials`` trials
    (the first 4 are the training grid's, seed for seed) and returns, per leaf of
    :data:`~mechanisms.histograms.select.RULE` and per trial count, each choice's
    geo-mean ratio (projected error / best published), cells over 1.2× and worst.
    """
    from bench.hist_1d_grid import medians, run_trials
    from mechanisms.histograms.select import RULE

    kind = KIND[wname]
    feats = {k: v for k, v in _features(cells, 1.0).items() if v[1] <= umax}
    errors: dict[tuple, list[float]] = {}
    for d, s, e in sorted(feats):
        errs, _ = run_trials((d,), CHOICES, (int(s),), (float(e),), trials, project=True)
        errors.update(errs)
    out: dict[str, dict] = {}
    for first in (4, trials):
        med = medians(errors, first)
        for (d, s, e), fv in feats.items():
            leaf = next(a for b, a in RULE[kind] if box_holds(b, fv))
            key = (d, int(s), float(e), wname)
            best = min(med[(*key, a)] for a in PUBLISHED)
            rows = out.setdefault(f"leaf {leaf}", {}).setdefault(f"{first} trials", {})
            for a in CHOICES:
                rows.setdefault(a, []).append(med[(*key, a + "+P")] / best)
    for leaf in out.values():
        for first, rows in leaf.items():
            leaf[first] = {
                a: {"geo_mean": round(math.exp(sum(map(math.log, v)) / len(v)), 3),
                    "over_1.2": sum(x > 1.2 for x in v), "worst": round(max(v), 2),
                    "cells": len(v)}
                for a, v in rows.items()
            }
    return out


def main() -> None:
    """Fit, print and write the rule (``--cv``: the leave-one-file-out estimate instead;
    ``--recheck WORKLOAD TRIALS UMAX``: :func:`recheck`, written to
    bench/results/hist_1d/recheck.WORKLOAD.json)."""
    cells = json.loads((OUT / "train_cells.json").read_text())
    if "--recheck" in sys.argv:
        i = sys.argv.index("--recheck")
        wname, trials, umax = sys.argv[i + 1], int(sys.argv[i + 2]), float(sys.argv[i + 3])
        res = recheck(cells, wname, trials, umax)
        (OUT / f"recheck.{wname}.json").write_text(json.dumps(res, indent=1) + "\n")
        for leaf, by in res.items():
            for first, rows in by.items():
                print(leaf, first, {a: r["geo_mean"] for a, r in rows.items()})
        return
    if "--cv" in sys.argv:
        cv = {str(k): cross_validate(cells, k) for k in KAPPAS}
        for k, res in cv.items():
            print(f"κ = {k}: held-out", res)
        (OUT / "tree_cv.json").write_text(json.dumps(cv, indent=1) + "\n")
        return
    results = {}
    for kappa in KAPPAS:
        res = fit(cells, kappa)
        results[str(kappa)] = res
        total = sum(math.log(r["train_geo_mean"]) for r in res.values())
        print(f"κ = {kappa}: mean log geo-mean {total / len(res):.4f}")
        for kind, r in res.items():
            print(" ", kind, r["train_geo_mean"], r["always"])
            for box, a in r["boxes"]:
                print("     ", box, a)
    (OUT / "tree.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
