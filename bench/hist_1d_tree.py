"""Fit the two-feature selection rule of :mod:`mechanisms.histograms.select` (held-out files).

``python -m bench.hist_1d_tree`` reads the per-cell medians that ``python -m
bench.hist_1d_rule`` wrote for the TRAIN data sets (bench/results/hist_1d/
train_cells.json: BIDS, BIDS-FJ, BIDS-FM, MDSALARY, MDSALARY-FA, LC-REQ-ALL,
LC-DTIR-ALL, LC-REQ-F1, LC-REQ-F2, LC-DTIR-F1, LC-DTIR-F2; scales 1e3, 3e3, … 1e7,
ε ∈ {0.1, 1}, 4 trials; none of them is reported),
computes the rule's two features on the noise-free training data — the signal level
``log10(ε·scale/n)`` and the truncated-mass fraction ``u = Σ min(x_i, c)/(n·c)``,
``c = max(1, round(κ/ε))``
(:func:`mechanisms.histograms.select.truncated_fraction`) — and, per workload kind,
searches every depth-≤ 2 decision tree on them (thresholds at midpoints of the observed
values, every leaf with at least :data:`MIN_LEAF` cells) for the smallest sum of
log(error after the projection / best published error) over the cells. Prints the
boxes for ``select.RULE`` and writes bench/results/hist_1d/tree.json.
``python -m bench.hist_1d_tree --cv`` writes the leave-one-file-out estimate of every
κ instead (bench/results/hist_1d/tree_cv.json; a few seconds).
``python -m bench.hist_1d_tree --draws 32`` fits with 32 draws of the DP features per cell
(tree_noisy.json), ``--cv --draws 32`` scores the noise-free and the noise-aware fit on
held-out cells with the features' noise (tree_cv_noisy.json); ``--ceiling`` is a
diagnosis on the report files (:func:`ceiling`, ceiling.json).
``python -m bench.hist_1d_tree --recheck prefix 20 0.12`` re-measures the training cells
with u ≤ 0.12 with 20 trials and scores the deployed rule's leaves on them at 4 and at
20 trials (bench/results/hist_1d/recheck.prefix.json); ``--recheck random 8 1 --level-max
1.126 --algs DAWA10-HDMM,DAWA15-HDMM,DAWA-HDMM`` the range cells of the rule's low-signal
leaves, three partition shares, 8 trials (how DAWA15-HDMM was chosen, session 34).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

from bench.hist_1d_grid import REPORT, TRAIN, load, seq
from mechanisms.histograms import evaluation as ev
from mechanisms.histograms.select import (
    SCALE_SHARE,
    TRUNC_KAPPA,
    box_holds,
    feature_vector,
    noisy_features,
    truncated_fraction,
)

OUT = Path(__file__).parent / "results" / "hist_1d"
KIND = {"identity": "identity", "prefix": "prefix", "random": "range"}
#: the published algorithms, whose best error per cell is the reference
PUBLISHED = ("Identity", "HB", "DAWA", "AHP", "DPC", "HDMM", "Privelet")
#: algorithms the rule may choose: the published ones, DAWA10 (DAWA with 10 % of ε on
#: its partition, :data:`mechanisms.histograms.sortaki.LEAN_DAWA_PARTITION_SHARE`) and
#: both with the partition over aligned dyadic bins (``-aligned``) or with HDMM's
#: measurement of the buckets (``-HDMM``)
CHOICES = (
    *PUBLISHED, "DAWA10", "DAWA-aligned", "DAWA10-aligned", "DAWA-HDMM", "DAWA10-HDMM",
    "Identity-SURE", "Identity-HP", "DAWA15-HDMM",
)
#: truncation levels tried (the rule's κ is the one with the best training fit)
KAPPAS = (0.5, 1.0, 2.0, 4.0)
#: smallest number of training cells in a leaf (against over-fitting 126 cells per kind)
MIN_LEAF = 10
#: the training files by source (one attribute of one data set and its filtered copies):
#: ``--cv --by-source`` holds out a whole group at a time
SOURCES = (
    ("BIDS", "BIDS-FJ", "BIDS-FM"), ("MDSALARY", "MDSALARY-FA"),
    ("LC-REQ-ALL", "LC-REQ-F1", "LC-REQ-F2"), ("LC-DTIR-ALL", "LC-DTIR-F1", "LC-DTIR-F2"),
)
#: the issue's bound on a cell's ratio; ``--tail λ`` fits to Σ log r + λ·max(0, log r − log
#: TAIL_BOUND) (:func:`tail_cost`) instead of Σ log r alone
TAIL_BOUND = 1.2


def tail_cost(c: np.ndarray, tail: float) -> np.ndarray:
    """The fit's per-cell cost: log ratio plus ``tail`` × its excess over log 1.2.

    ``tail = 0`` is the geo-mean fit; ``tail > 0`` also charges every training cell a
    choice leaves over the issue's 1.2× bound (a hinge: cells under the bound cost what
    they did), so a leaf prefers a choice that is never far off to one that is a little
    better on average and far off somewhere. Only the fit reads it: held-out scores are
    the plain log ratios.
    """
    return c + tail * np.maximum(c - math.log(TAIL_BOUND), 0.0) if tail else c


def _features(
    cells: dict[str, float], kappa: float, draws: int = 0
) -> dict[tuple, np.ndarray]:
    """(data, scale, ε) → the cell's feature vectors, an array (max(draws, 1), 2).

    ``draws = 0``: the noise-free features of the trial-0 sample — ``log10(ε·scale/n)``
    and u at cap ``max(1, round(κ/ε))``. ``draws > 0``: that many draws of the features
    exactly as :func:`~mechanisms.histograms.select.auto_release` buys them (half of
    :data:`~mechanisms.histograms.select.SCALE_SHARE`·ε each on ŝ and û, the cap and
    the level at the algorithm's ε), seeds (5, data set index, scale, 100ε, draw).
    """
    out = {}
    keys = {tuple(k.split("|")[:3]) for k in cells}
    shapes = {d: load(d) for d in {k[0] for k in keys}}
    for d, s, e in sorted(keys):
        shape = shapes[d]
        n = len(shape)
        di = (*REPORT, *TRAIN).index(d)
        x = ev.resample(shape, int(s), rng=seq(0, di, int(s), 0))
        eps = float(e)
        if draws == 0:
            cap = float(max(1, round(kappa / eps)))
            out[(d, s, e)] = np.array([feature_vector(n, eps, int(s), truncated_fraction(x, cap))])
            continue
        eps_s = SCALE_SHARE * eps / 2.0
        eps_alg = eps - 2.0 * eps_s
        cap = float(max(1, round(kappa / eps_alg)))
        rows = []
        for k in range(draws):
            rng = seq(5, di, int(s), round(100 * eps), k)
            s_hat, t_hat = noisy_features(x, eps_s, cap, rng=rng)
            rows.append(feature_vector(n, eps_alg, s_hat, t_hat))
        out[(d, s, e)] = np.array(rows)
    return out


def _rows(
    cells: dict[str, float],
    feats: dict[tuple, np.ndarray],
    wname: str,
    files: tuple[str, ...],
    choices: tuple[str, ...] = CHOICES,
) -> tuple[np.ndarray, np.ndarray, list[tuple]]:
    """Feature rows, their cells' log(projected error of each choice / best published)
    and the cell of every row (a cell has one row per feature draw)."""
    f_rows, c_rows, cell_of = [], [], []
    for (d, s, e), fv in sorted(feats.items()):
        if d not in files:
            continue
        key = f"{d}|{s}|{e}|{wname}|"
        best = min(cells[key + a] for a in PUBLISHED)
        cost = [math.log(cells[key + a + "+P"] / best) for a in choices]
        for row in fv:
            f_rows.append(row)
            c_rows.append(cost)
            cell_of.append((d, s, e))
    return np.array(f_rows), np.array(c_rows), cell_of


def _first_best(cost: np.ndarray) -> int:
    """The first choice within 1e-9 of the least cost (ties, e.g. HDMM and Identity on
    cell counts, which agree to 1e-15, go to the simpler, earlier choice)."""
    return int(np.flatnonzero(cost <= cost.min() + 1e-9)[0])


def _depth1(f: np.ndarray, c: np.ndarray, idx: np.ndarray, min_leaf: int) -> tuple[float, list]:
    """Best leaf or best single split of the rows ``idx``: (cost, [(box, choice index)]).

    Vectorised: per feature the rows sorted once, every split's leaf costs from cumulative
    sums. Ties go to the earlier choice of :data:`CHOICES` (the simpler algorithm).
    """
    sub = c[idx]
    tot = sub.sum(axis=0)
    a = _first_best(tot)
    best: tuple[float, list] = (float(tot[a]), [((), a)])
    m = len(idx)
    for j in range(f.shape[1]):
        order = np.argsort(f[idx, j], kind="stable")
        vals = f[idx, j][order]
        left = np.cumsum(sub[order], axis=0)[:-1]
        right = tot - left
        n_left = np.arange(1, m)
        ok = (vals[:-1] < vals[1:]) & (n_left >= min_leaf) & (m - n_left >= min_leaf)
        if not ok.any():
            continue
        cost = np.where(ok, left.min(axis=1) + right.min(axis=1), np.inf)
        i = int(np.argmin(cost))
        if cost[i] < best[0] - 1e-9:
            t = float((vals[i] + vals[i + 1]) / 2)
            best = (float(cost[i]), [
                (((j, "<=", t),), _first_best(left[i])),
                (((j, ">", t),), _first_best(right[i])),
            ])
    return best


#: most root thresholds tried per feature (quantiles of the observed values) — the
#: noise-free fit has fewer distinct values than this and is searched exhaustively
ROOT_THRESHOLDS = 200


def _fit_rows(f: np.ndarray, c: np.ndarray, min_leaf: int) -> tuple[float, list]:
    """The depth-≤ 2 tree of least summed cost over the rows: (cost, [(box, choice index)])."""
    idx = np.arange(len(f))
    cost, boxes = _depth1(f, c, idx, min_leaf)
    for j in range(f.shape[1]):
        vals = np.unique(f[:, j])
        mids = (vals[:-1] + vals[1:]) / 2
        if len(mids) > ROOT_THRESHOLDS:
            pick = np.linspace(0, len(mids) - 1, ROOT_THRESHOLDS).round().astype(int)
            mids = mids[np.unique(pick)]
        for t in mids:
            left, right = idx[f[:, j] <= t], idx[f[:, j] > t]
            if len(left) < min_leaf or len(right) < min_leaf:
                continue
            cl, bl = _depth1(f, c, left, min_leaf)
            cr, br = _depth1(f, c, right, min_leaf)
            if cl + cr < cost - 1e-9:
                cost = cl + cr
                t = float(t)
                boxes = [(((j, "<=", t), *b), a) for b, a in bl] + [
                    (((j, ">", t), *b), a) for b, a in br
                ]
    return cost, boxes


def _named(boxes: list, choices: tuple[str, ...] = CHOICES) -> list:
    return [(b, choices[a]) for b, a in boxes]


def fit(
    cells: dict[str, float],
    kappa: float,
    draws: int = 0,
    choices: tuple[str, ...] = CHOICES,
    tail: float = 0.0,
) -> dict[str, dict]:
    """Per kind: the best depth-≤ 2 tree as boxes, its training geo-mean and the leaves'.

    The choices are scored by their error *after* the default's projection (cells
    ``name+P``: :func:`mechanisms.histograms.select.auto_release` projects whatever it
    picks), against the best candidate *as published* (no projection) — the ratio the
    benchmark reports. ``draws > 0``: the noise-aware fit — every cell enters with that
    many draws of its DP features (:func:`_features`), so a threshold is charged for the
    cells its features' noise sends to the wrong side (every leaf still ≥
    :data:`MIN_LEAF` cells' worth of rows). ``tail``: the fit's cost is
    :func:`tail_cost` (the reported geo-means stay plain).
    """
    feats = _features(cells, kappa, draws)
    per = max(draws, 1)
    out = {}
    for wname, kind in KIND.items():
        f, c, cell_of = _rows(cells, feats, wname, TRAIN, choices)
        _, boxes = _fit_rows(f, tail_cost(c, tail), MIN_LEAF * per)
        logs = list(_score(f, c, cell_of, boxes).values())
        out[kind] = {
            "boxes": _named(boxes, choices),
            "train_geo_mean": round(math.exp(sum(logs) / len(logs)), 4),
            "train_cells_over_1.2": int(sum(v > math.log(TAIL_BOUND) for v in logs)),
            "always": {a: round(math.exp(c[:, i].mean()), 4) for i, a in enumerate(choices)},
        }
    return out


def _score(f: np.ndarray, c: np.ndarray, cell_of: list, boxes: list) -> dict[tuple, float]:
    """Each cell's log ratio of the tree's choice, averaged over the cell's feature draws."""
    per: dict[tuple, list[float]] = {}
    for fv, cost, cell in zip(f, c, cell_of, strict=True):
        a = next(a for b, a in boxes if box_holds(b, tuple(fv)))
        per.setdefault(cell, []).append(float(cost[a]))
    return {k: sum(v) / len(v) for k, v in per.items()}


def _summary(logs: list[float]) -> dict:
    return {
        "held_out_geo_mean": round(math.exp(float(sum(logs)) / len(logs)), 4),
        "cells_over_1.2": int(sum(v > math.log(TAIL_BOUND) for v in logs)),
        "worst": round(math.exp(float(max(logs))), 3),
        "cells": len(logs),
    }


def cross_validate(
    cells: dict[str, float],
    kappa: float,
    fit_draws: int = 0,
    eval_draws: int = 0,
    choices: tuple[str, ...] = CHOICES,
    tail: float = 0.0,
    folds: tuple[tuple[str, ...], ...] | None = None,
) -> dict[str, dict]:
    """Leave-one-file-out: per kind, fit on 6 TRAIN files, score the 7th's cells.

    Returns per kind the held-out geo-mean of (projected error of the tree's choice /
    best published error), the number of held-out cells over 1.2× and the worst — what
    the rule can be expected to do on files it was not fitted on. ``fit_draws``: the
    fit's feature draws (0: noise-free, as before session 26); ``eval_draws``: the held-out
    cells' (0: noise-free features; > 0: a cell scores its choice's log ratio averaged
    over that many draws of the DP features — what :func:`~mechanisms.histograms.select.
    auto_release` meets). ``tail``: the fits' cost is :func:`tail_cost`. ``folds``: the
    groups of files held out together (None: one file at a time; :data:`SOURCES`: one
    source at a time, so no held-out file has a sibling of its source in the fit).
    """
    f_fit = _features(cells, kappa, fit_draws)
    f_eval = f_fit if eval_draws == fit_draws else _features(cells, kappa, eval_draws)
    out = {}
    for wname, kind in KIND.items():
        logs = []
        for hold in folds or tuple((d,) for d in TRAIN):
            train = tuple(d for d in TRAIN if d not in hold)
            f, c, _ = _rows(cells, f_fit, wname, train, choices)
            _, boxes = _fit_rows(f, tail_cost(c, tail), MIN_LEAF * max(fit_draws, 1))
            fh, ch, cell_of = _rows(cells, f_eval, wname, hold, choices)
            logs += list(_score(fh, ch, cell_of, boxes).values())
        out[kind] = _summary(logs)
    return out


def deployed_under_noise(
    cells: dict[str, float],
    draws: int,
    files: tuple[str, ...] = TRAIN,
    choices: tuple[str, ...] = CHOICES,
) -> dict[str, dict]:
    """The deployed :data:`~mechanisms.histograms.select.RULE` on the cells of ``files``
    with ``draws`` draws of its DP features (in-sample for the files it was fitted on)."""
    from mechanisms.histograms.select import RULE

    feats = _features(cells, TRUNC_KAPPA, draws)
    out = {}
    for wname, kind in KIND.items():
        if any(a not in choices for _, a in RULE[kind]):
            continue  # the rule uses a choice left out of this run
        f, c, cell_of = _rows(cells, feats, wname, files, choices)
        boxes = [(b, choices.index(a)) for b, a in RULE[kind]]
        out[kind] = _summary(list(_score(f, c, cell_of, boxes).values()))
    return out


def recheck(
    cells: dict[str, float],
    wname: str,
    trials: int,
    umax: float,
    level_max: float = math.inf,
    algs: tuple[str, ...] = CHOICES,
) -> dict[str, dict]:
    """The deployed rule's leaves on the training cells with ``u ≤ umax``, re-measured.

    The training cells are 4-trial medians, and a data-dependent release's error varies
    by a factor of 3–4 between trials; this runs those cells again with ``trials`` trials
    (the first 4 are the training grid's, seed for seed; every trial's error is written to
    bench/results/hist_1d/recheck_cells.WORKLOAD.json) and returns :func:`recheck_scores`.
    ``level_max``: only cells whose signal level is at most this too; ``algs``: only
    these choices (the published algorithms always run: they are the reference).
    """
    from bench.hist_1d_grid import run_trials

    feats = {
        k: tuple(v[0]) for k, v in _features(cells, TRUNC_KAPPA).items()
        if v[0][1] <= umax and v[0][0] <= level_max
    }
    run = (*PUBLISHED, *(a for a in algs if a not in PUBLISHED))
    errors: dict[tuple, list[float]] = {}
    for d, s, e in sorted(feats):
        errs, _ = run_trials((d,), run, (int(s),), (float(e),), trials, project=True)
        errors.update(errs)
    (OUT / f"recheck_cells.{wname}.json").write_text(
        json.dumps({"|".join(map(str, k)): v for k, v in errors.items()}) + "\n"
    )
    return recheck_scores(errors, wname, trials, run)


def recheck_scores(
    errors: dict[tuple, list[float]], wname: str, trials: int, run: tuple[str, ...]
) -> dict[str, dict]:
    """:func:`recheck`'s figures from every trial's error, per trial count (4, ``trials``).

    Per leaf of :data:`~mechanisms.histograms.select.RULE` (cells placed by their
    noise-free features): each choice's geo-mean ratio (projected error / best published),
    cells over 1.2× and worst. And, under ``"features' noise"``, the rule as
    :func:`~mechanisms.histograms.select.auto_release` meets it: every cell with 32 draws
    of its DP features, and per leaf and choice the score over *all* the cells of the rule
    with that leaf's choice replaced — what swapping one leaf's algorithm would do, the
    cells the features' noise moves across a threshold included (a draw landing in a leaf
    whose choice was not run counts its cell's noise-free leaf).
    """
    from bench.hist_1d_grid import medians
    from mechanisms.histograms.select import RULE

    kind = KIND[wname]
    keys = {(d, str(s), str(e)) for d, s, e, *_ in errors}
    as_cells = {f"{d}|{s}|{e}|{wname}|-": 0.0 for d, s, e in keys}
    leaves = [a for _, a in RULE[kind]]

    def leaf_of(fv: tuple) -> int:
        return next(i for i, (b, _) in enumerate(RULE[kind]) if box_holds(b, fv))

    def stats(v: list[float]) -> dict:
        return {"geo_mean": round(math.exp(sum(map(math.log, v)) / len(v)), 3),
                "over_1.2": sum(x > 1.2 for x in v), "worst": round(max(v), 2), "cells": len(v)}

    # each cell's leaf by its noise-free features, and the leaf of each of its 32 draws
    home = {k: leaf_of(tuple(v[0])) for k, v in _features(as_cells, TRUNC_KAPPA).items()}
    drawn = {
        k: [leaf_of(tuple(fv)) for fv in v]
        for k, v in _features(as_cells, TRUNC_KAPPA, 32).items()
    }
    out: dict[str, dict] = {}
    for first in (4, trials):
        med = medians(errors, first)
        ratio = {}
        for d, s, e in sorted(keys):
            key = (d, int(s), float(e), wname)
            best = min(med[(*key, a)] for a in PUBLISHED)
            ratio[(d, s, e)] = {a: med[(*key, a + "+P")] / best for a in run}
        per_leaf: dict[str, dict[str, list[float]]] = {}
        for c, r in ratio.items():
            rows = per_leaf.setdefault(f"leaf {leaves[home[c]]}", {})
            for a in run:
                rows.setdefault(a, []).append(r[a])
        for name, rows in per_leaf.items():
            out.setdefault(name, {})[f"{first} trials"] = {a: stats(v) for a, v in rows.items()}
        swapped: dict[str, dict[str, list[float]]] = {}
        for i, leaf in enumerate(leaves):
            if i not in home.values():
                continue  # no re-measured cell lies in this leaf
            for a in run:
                v = []
                for c, r in ratio.items():
                    picks = [a if j == i else leaves[j] for j in drawn[c]]
                    picks = [p if p in r else leaves[home[c]] for p in picks]
                    if any(p not in r for p in picks):
                        break  # a choice this run did not measure: no score for (leaf, a)
                    v.append(math.exp(sum(math.log(r[p]) for p in picks) / len(picks)))
                else:
                    swapped.setdefault(f"leaf {leaf}", {})[a] = v
        out.setdefault("features' noise, one leaf's choice replaced", {})[f"{first} trials"] = {
            leaf: {a: stats(v) for a, v in rows.items()} for leaf, rows in swapped.items()
        }
    return out


#: trials per report cell in :func:`ceiling` (diagnosis only)
CEILING_TRIALS = 5


def ceiling(
    trials: int = CEILING_TRIALS, algs: tuple[str, ...] = CHOICES, into: dict | None = None
) -> dict[str, dict]:
    """DIAGNOSIS ONLY — the best rule of this family fitted *in-sample on the report cells*.

    Runs every choice on the reported files (:data:`bench.hist_1d_grid.REPORT`, scales
    1e4 / 1e5 / 1e6, ε ∈ {0.1, 1}, ``trials`` trials, projected errors as ``auto``
    releases them) and fits the depth-≤ 2 tree on those very cells with the noise-free
    features, then with 32 draws of the DP features. No rule may be chosen from it (the
    report files are held out); it bounds what any tree on these two features and these
    choices could reach there — if even this fit leaves cells over 1.2×, refitting
    cannot remove them. Written to bench/results/hist_1d/ceiling.json (its
    ``held_out_geo_mean`` fields are in-sample here; the cells' medians to
    ceiling_cells.json, from which ``--ceiling --refit`` redoes the fits). ``algs`` and
    ``into``: run only those choices and add their cells to stored ones
    (``--ceiling --add A,B``, for a new choice).
    """
    from bench.hist_1d_grid import medians, run_trials

    per_trial, _ = run_trials(REPORT, algs, (10**4, 10**5, 10**6), (0.1, 1.0), trials,
                              progress=True, project=True)
    cells = {**(into or {}), **{"|".join(map(str, k)): v for k, v in medians(per_trial).items()}}
    (OUT / "ceiling_cells.json").write_text(json.dumps(cells) + "\n")
    return ceiling_fit(cells, trials)


def ceiling_fit(cells: dict[str, float], trials: int, kappa: float = TRUNC_KAPPA) -> dict:
    """:func:`ceiling`'s fits from its cells (bench/results/hist_1d/ceiling_cells.json)."""
    choices = tuple(a for a in CHOICES if any(k.endswith(f"|{a}+P") for k in cells))
    out: dict[str, dict] = {"trials": {"trials": trials, "kappa": kappa, "choices": choices}}
    for draws in (0, 32):
        feats = _features(cells, kappa, draws)
        for wname, kind in KIND.items():
            f, c, cell_of = _rows(cells, feats, wname, REPORT, choices)
            cost, boxes = _fit_rows(f, c, max(draws, 1) * 4)
            logs = list(_score(f, c, cell_of, boxes).values())
            out.setdefault(f"in-sample tree, {draws} draws", {})[kind] = {
                **_summary(logs), "boxes": _named(boxes, choices),
            }
    oracle = {}
    for wname, kind in KIND.items():
        f, c, _ = _rows(cells, _features(cells, kappa, 0), wname, REPORT, choices)
        oracle[kind] = _summary(list(c.min(axis=1)))
    out["per-cell oracle over the choices"] = oracle
    return out


def main() -> None:
    """Fit, print and write the rule (``--cv``: the leave-one-file-out estimate instead;
    ``--draws K``: the noise-aware fit / cross-validation with K draws of the DP features
    per cell; ``--without-hdmm``: without the ``-HDMM`` choices (how the range boxes are
    fitted), results written with the suffix ``_without_hdmm``; ``--tail λ``: the fit's
    cost is :func:`tail_cost` (with ``--cv``: its held-out score beside the plain fit's,
    tree_cv_tailλ.json); ``--by-source`` with ``--cv``: hold out whole
    :data:`SOURCES` instead of single files (suffix ``_by_source``); ``--recheck WORKLOAD
    TRIALS UMAX [--level-max L] [--algs A,B]``: :func:`recheck`, written to
    bench/results/hist_1d/recheck.WORKLOAD.json).
    """
    cells = json.loads((OUT / "train_cells.json").read_text())
    draws = int(sys.argv[sys.argv.index("--draws") + 1]) if "--draws" in sys.argv else 0
    tail = float(sys.argv[sys.argv.index("--tail") + 1]) if "--tail" in sys.argv else 0.0
    choices, suffix = CHOICES, ""
    if "--without-hdmm" in sys.argv:  # the choice set the range boxes had until session 25
        choices = tuple(a for a in CHOICES if not a.endswith("-HDMM"))
        suffix = "_without_hdmm"
    if "--ceiling" in sys.argv:
        stored = OUT / "ceiling_cells.json"
        if "--refit" in sys.argv and stored.exists():  # the fits again, from the stored cells
            res = ceiling_fit(json.loads(stored.read_text()), CEILING_TRIALS)
        elif "--add" in sys.argv and stored.exists():  # a new choice's cells, then the fits
            algs = tuple(sys.argv[sys.argv.index("--add") + 1].split(","))
            res = ceiling(CEILING_TRIALS, algs, json.loads(stored.read_text()))
        else:
            res = ceiling()
        (OUT / "ceiling.json").write_text(json.dumps(res, indent=1) + "\n")
        for k, v in res.items():
            print(k, v)
        return
    if "--recheck" in sys.argv:
        i = sys.argv.index("--recheck")
        wname, trials, umax = sys.argv[i + 1], int(sys.argv[i + 2]), float(sys.argv[i + 3])
        level_max = (float(sys.argv[sys.argv.index("--level-max") + 1])
                     if "--level-max" in sys.argv else math.inf)
        algs = (tuple(sys.argv[sys.argv.index("--algs") + 1].split(","))
                if "--algs" in sys.argv else CHOICES)
        res = recheck(cells, wname, trials, umax, level_max, algs)
        (OUT / f"recheck.{wname}.json").write_text(json.dumps(res, indent=1) + "\n")
        for leaf, by in res.items():
            for first, rows in by.items():
                print(leaf, first, json.dumps(rows))
        return
    if tail:  # the tail-weighted fit's held-out score against the plain fit's
        suffix += f"_tail{tail:g}"
    folds = SOURCES if "--by-source" in sys.argv else None
    if folds:
        suffix += "_by_source"
    if "--cv" in sys.argv and (tail or folds):
        cv = {
            f"fit to Σ log r (κ = {TRUNC_KAPPA}, {draws} draws)": cross_validate(
                cells, TRUNC_KAPPA, draws, draws, choices, folds=folds
            ),
        }
        if tail:
            cv[f"fit to Σ log r + {tail:g}·excess over log 1.2"] = cross_validate(
                cells, TRUNC_KAPPA, draws, draws, choices, tail, folds
            )
        for k, res in cv.items():
            print(f"{k}:", res)
        (OUT / f"tree_cv{suffix}.json").write_text(json.dumps(cv, indent=1) + "\n")
        return
    if "--cv" in sys.argv and draws:
        # the two procedures, both scored on held-out cells with the DP features' noise
        cv = {
            **{
                f"noise-free fit, κ = {k}": cross_validate(cells, k, 0, draws, choices)
                for k in KAPPAS
            },
            f"noise-aware fit ({draws} draws), κ = {TRUNC_KAPPA}": cross_validate(
                cells, TRUNC_KAPPA, draws, draws, choices
            ),
            "deployed RULE, in-sample": deployed_under_noise(cells, draws, TRAIN, choices),
        }
        for k, res in cv.items():
            print(f"{k}:", res)
        (OUT / f"tree_cv_noisy{suffix}.json").write_text(json.dumps(cv, indent=1) + "\n")
        return
    if "--cv" in sys.argv:
        cv = {str(k): cross_validate(cells, k, choices=choices) for k in KAPPAS}
        for k, res in cv.items():
            print(f"κ = {k}: held-out", res)
        (OUT / f"tree_cv{suffix}.json").write_text(json.dumps(cv, indent=1) + "\n")
        return
    results = {}
    for kappa in KAPPAS if not draws else (TRUNC_KAPPA,):
        res = fit(cells, kappa, draws, choices, tail)
        results[str(kappa)] = res
        total = sum(math.log(r["train_geo_mean"]) for r in res.values())
        print(f"κ = {kappa}: mean log geo-mean {total / len(res):.4f}")
        for kind, r in res.items():
            print(" ", kind, r["train_geo_mean"], r["always"])
            for box, a in r["boxes"]:
                print("     ", box, a)
    name = ("tree" if not draws else "tree_noisy") + suffix + ".json"
    (OUT / name).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    from bench import log_progress

    log_progress()
    main()
