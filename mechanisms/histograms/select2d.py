"""The default 2-D histogram release: the algorithm picked from public information.

Public information here means the public inputs plus DP estimates of data features.

In the spirit of Pythia (Kotsogiannis, Machanavajjhala, Hay & Miklau, SIGMOD 2017): the
choice among {AG, UG, QuadTree, HB-2D, Privelet-2D, MWEM, DAWA-2D, AHP-2D, kd-tree,
cells} is a function
of public features — the domain shape, the workload type, ε — and of DP estimates of
the data, each bought with a share of ε and charged to the accountant before its noise:
the scale N̂ (``AUTO_SCALE_SHARE·ε``, :func:`~mechanisms.histograms.spend.noisy_total`) and,
for the default rule, the mass of the ``TOP_K`` = 16 fullest cells (``CONC_SHARE·ε``,
:func:`noisy_top_mass`, sensitivity 1). The chosen algorithm runs with the rest and
reuses N̂ when it needs the scale (UG, AG), so the scale is paid for once. Privacy: each
estimate is DP at its share; the choice (and whether the feature is bought at all) is
post-processing of them; sequential composition gives ε.

The default rule (``features="dawa"``): for rectangles, DAWA with its partition over the
grid's aligned dyadic rectangles and its four border layouts (``DAWA-2D-borders``,
:mod:`~mechanisms.histograms.dawa2d`, :mod:`~mechanisms.histograms.partitioners2d`; the
project's variant of DPBench's 2-D DAWA) and its buckets measured with HDMM's strategy
for the caller's rectangles, with the whole ε: on the tuning files it is 0.66 / 0.76 of
the best of the ten published algorithms (:data:`DAWA_EVIDENCE`), so no feature is
bought. For the identity workload, DAWA on the
Hilbert order with its partition over the aligned dyadic intervals of the curve
(``DAWA-2D-aligned``, less prone than DPBench's candidates to hide records in empty
buckets; 0.88 / 0.90, then clamped at 0; the rectangles partition is no better there,
0.89 / 0.91).

The concentration rule (:func:`select_2d_concentration`, ``features="concentration"``,
the default until DAWA-2D was measured): for
rectangles, with ψ = N̂·ε/n_cells and γ = T̂₁₆/N̂, the kd-tree (ξ₀ = 40/ε, leaf
inference) when ψ ≥ 0.1 and γ ≥ 0.7 — the records sit on a few spikes the kd-tree
isolates in boxes of their own — else AG. Fitted on the six DPBench 2-D files the
benchmark does not report (:data:`CONC_EVIDENCE`; ``bench/hist_2d_rule.py``), measured
on the four it does (``bench/bench_histograms_2d.py``). For the identity workload the
kd-tree whatever ψ (best or within 1.3× in every measured cell, :data:`RULE_EVIDENCE`).

Two earlier rules stay selectable for the before/after comparison: ``features="scale"``
(:func:`select_2d`: N̂ only — AG when ψ < 0.5, else the kd-tree; no rule on (shape,
workload, ε, N̂) alone can be good on both BJ-CABS-E and ADULT-2D at 1e6, where AG and
the kd-tree are each ≥ 4.8× off on one of them) and ``features="occupancy"``
(:func:`select_2d_occupancy`: the DP count of non-empty cells, which does not separate
SF-CABS-E, where AG wins, from MDSALARY-2D, where the kd-tree wins).
"""

from __future__ import annotations

import numpy as np

from mechanisms.accounting import Accountant
from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.histograms import dawa2d, grids, hier2d, kdtree, quadtree, sortaki
from mechanisms.histograms._noise import child_stream, laplace_noise, resolve_rng
from mechanisms.histograms.evaluation import random_boxes
from mechanisms.histograms.projection import project_nonnegative
from mechanisms.histograms.spend import (
    SpatialRelease,
    charge,
    ledger,
    noisy_total,
    sampler_name,
)

__all__ = [
    "ALGORITHMS_2D",
    "AUTO_SCALE_SHARE",
    "WORKLOADS_2D",
    "RULE_EVIDENCE",
    "KD_DENSITY",
    "select_2d",
    "select_2d_occupancy",
    "select_2d_concentration",
    "noisy_top_mass",
    "data_features",
    "FEATURES_2D",
    "CONC_SHARE",
    "TOP_K",
    "CONC_DENSITY",
    "CONC_MIN",
    "noisy_occupancy",
    "OCCUPANCY_SHARE",
    "run_2d",
    "release_2d",
    "DAWA_EVIDENCE",
    "DEFAULT_BOXES",
    "default_boxes",
]

#: the algorithms :func:`run_2d` knows ("auto" = :func:`release_2d`'s selection)
ALGORITHMS_2D = (
    "AG",
    "UG",
    "QuadTree",
    "HB-2D",
    "Privelet-2D",
    "MWEM",
    "DAWA-2D",
    "DAWA-2D-aligned",
    "DAWA-2D-boxes",
    "DAWA-2D-borders",
    "AHP-2D",
    "kd-tree",
    "kd-hierarchical",
    "cells",
)
#: workload types the rule distinguishes
WORKLOADS_2D = ("rectangles", "identity")

#: share of ε the default (``algorithm="auto"``) spends on N̂. N̂'s noise sd is
#: √2/(0.01·ε): at the rule's ψ threshold CONC_DENSITY (N·ε ≥ 6,554 on 256 × 256) 2.2 % of
#: N, and AG / UG read N̂ only through √N in their grid sizes (1.1 %). 5 % (SCALE_SHARE,
#: what AG / UG buy alone) cost the default 1/0.95 ≈ 1.05× on every cell it picked right.
AUTO_SCALE_SHARE = 0.01
#: the rule's threshold on ψ = N̂·ε / n_cells (records per cell per unit of noise scale)
KD_DENSITY = 0.5
#: data-aware rule (``features="occupancy"``): share of ε on the occupied-cell count,
#: the ψ threshold and the occupancy threshold ω = occupied / min(N̂, n_cells)
OCCUPANCY_SHARE = 0.05
OCC_DENSITY = 0.1
OCC_MAX = 0.01

#: the default rule (``features="concentration"``): ε share of the top-k mass, k, the ψ
#: threshold above which it is bought and read, and the concentration threshold on γ
#: (CONC_SHARE: T̂ has noise sd √2/(0.01·ε); where it is bought, ψ ≥ 0.1, i.e. N·ε ≥ 6554
#: on 256 × 256, that is ≤ 2.2 % of N — against γ margins ≥ 0.09 on the tuning files)
CONC_SHARE = 0.01
TOP_K = 16
CONC_DENSITY = 0.1
CONC_MIN = 0.7

#: what the default rule rests on: bench/hist_2d_rule.py (files SF-CABS-E, SF-CABS-S,
#: BJ-CABS-S, MDSALARY-2D, LC-2D, TWITTER — none of them reported — seed 101, scales
#: 1e4/1e5/1e6, ε 0.1/1, 2000 random rectangles, median of 7 trials), true γ = T₁₆/N:
CONC_EVIDENCE = """
file         γ      at ψ ≥ 0.1 (5 cells per file): ratio to the best
SF-CABS-E    0.56   AG best in all 5 (kd-tree 1.10–4.5× worse)
SF-CABS-S    0.49   AG 1.00–1.05 (kd-tree 1.00–3.8×)
BJ-CABS-S    0.04   AG best in all 5 (kd-tree 2.3–3.9×)
MDSALARY-2D  0.79   kd-tree best in all 5 (AG 1.18–1.75×)
LC-2D        0.30   AG at ψ ≥ 1.5; QuadTree / HB-2D at ψ = 0.15 (AG 2.2×; no one-sided
                    threshold on the features tried — γ, occupancy, Pythia's TVD at 1/4/16
                    cells — separates it from the files where AG wins there)
TWITTER      0.11   AG best in all 5 (kd-tree 1.0–2.4×)
geo-mean / worst of (algorithm / best) over the 36 cells, ε = 0.1 | ε = 1:
AG always 1.09 / 2.16 | 1.12 / 2.24;  kd-tree always 1.96 / 11.5 | 1.70 / 4.13;
this rule (its own noise draws, 6 % of ε on the features) 1.05 / 2.17 | 1.06 / 2.25
"""

#: what the public-only rule (``features="scale"``) rests on: bench_histograms_2d's grid,
#: 3 trials (seed 17), geo-mean / max
#: over BJ-CABS-E, GOWALLA, STROKE, ADULT-2D of each algorithm's error / the best's:
RULE_EVIDENCE = """
scale ε    ψ      AG          kd-tree     QuadTree    UG          cells
1e4   0.1  0.015  1.00 / 1.00  4.94 / 12.9 5.53 / 6.99 2.35 / 5.13 7.70 / 9.16
1e4   1    0.15   1.02 / 1.08  2.07 / 4.65 1.89 / 3.19 3.00 / 8.06 2.57 / 4.59
1e5   0.1  0.15   1.23 / 1.87  1.54 / 3.01 2.39 / 3.66 3.74 / 14.2 3.58 / 5.49
1e5   1    1.5    2.01 / 7.87  1.45 / 2.95 2.68 / 10.9 18.1 / 228  4.25 / 17.2
1e6   0.1  1.5    2.18 / 11.1  1.65 / 4.79 2.87 / 16.1 19.4 / 339  5.50 / 23.3
1e6   1    15     1.92 / 10.1  1.12 / 1.59 2.29 / 18.0 3.81 / 33.7 3.10 / 25.9

identity workload (every cell; ‖x − x̂‖₂/(n·scale)), 2 trials, same grid:
1e4   0.1         1.25 / 2.26  1.11 / 1.22 18.5 / 73.6 1.29 / 2.40 4.87 / 19.4
1e4   1           1.96 / 5.70  1.00 / 1.00 8.38 / 9.50 5.72 / 49.4 2.20 / 2.48
1e5   0.1         1.97 / 4.35  1.00 / 1.00 8.88 / 11.2 5.78 / 64.7 2.33 / 2.94
1e5   1           3.29 / 5.58  1.01 / 1.03 7.15 / 25.7 42.3 / 1530 1.87 / 6.76
1e6   0.1         3.57 / 6.80  1.00 / 1.00 8.18 / 31.6 47.9 / 1866 2.15 / 8.25
1e6   1           1.54 / 2.47  1.10 / 1.30 7.12 / 29.2 1.96 / 8.02 1.86 / 7.66
"""


def select_2d(
    shape: tuple[int, ...], epsilon: float, scale: float, workload: str = "rectangles"
) -> str:
    """The algorithm for a 2-D release, from public features and a DP scale estimate.

    Args:
        shape: the domain shape (public).
        epsilon: the budget the algorithm will run with.
        scale: a DP estimate of N (never the true N).
        workload: "rectangles" (range counts) or "identity" (cell counts).

    Returns:
        One of :data:`ALGORITHMS_2D`.
    """
    epsilon = check_positive("epsilon", epsilon)
    if workload not in WORKLOADS_2D:
        raise InvalidParameterError(
            f"workload must be one of {', '.join(WORKLOADS_2D)}, not {workload!r}"
        )
    n_cells = int(np.prod(shape))
    if n_cells < 1:
        raise InvalidParameterError(f"shape must have cells, not {shape!r}")
    if workload == "identity":
        return "kd-tree"  # RULE_EVIDENCE: best or within 1.3× in all 24 identity cells
    psi = max(float(scale), 0.0) * epsilon / n_cells
    return "kd-tree" if psi >= KD_DENSITY else "AG"


def select_2d_occupancy(
    shape: tuple[int, ...], epsilon: float, scale: float, occupied: float
) -> str:
    """Data-aware rule (Pythia-style, one DP feature beyond the scale).

    kd-tree when ψ = N̂·ε/n_cells ≥ ``OCC_DENSITY`` and the DP occupancy
    ω = occupied/min(N̂, n_cells) < ``OCC_MAX`` (the records sit in very few cells, where
    the kd-tree's merged empty boxes win: ADULT-2D, MDSALARY-2D, SF-CABS-E at ≥ 1e5);
    otherwise AG. Fitted on the 10 DPBench 2-D files (bench_histograms_2d grid, 3 trials,
    true ω): geo-mean 1.12 of the best over all 60 cells (1.09 on the issue's 4 files),
    worst 2.16 (LC-2D / STROKE, where QuadTree wins and ω does not separate them).
    Measured through :func:`release_2d` (noisy N̂ and ω, 10 % of ε spent on them;
    ``python -m bench histograms_2d``, 5 trials, seed 17): geo-mean 1.19 (ε = 0.1) and
    1.05 (ε = 1), worst STROKE 2.19× — against 1.37 / 1.36 and 3.3× for the public rule.
    """
    epsilon = check_positive("epsilon", epsilon)
    n_cells = int(np.prod(shape))
    n_hat = max(float(scale), 1.0)
    psi = n_hat * epsilon / n_cells
    omega = max(float(occupied), 0.0) / min(n_hat, n_cells)
    return "kd-tree" if psi >= OCC_DENSITY and omega < OCC_MAX else "AG"


def data_features(x: np.ndarray) -> dict[str, float]:
    """TRUE data features (for tuning tables and tests only; never read by a release).

    scale N; ψ-free shape features: ``occupied`` non-empty cells, ``tvd`` = Pythia's
    total variation distance from uniform ``Σ|x − N/n|/(2N)`` on the cells and on 4 × 4
    and 16 × 16 blocks (``tvd4``, ``tvd16``).
    """
    x = np.asarray(x, np.float64)
    n = float(x.sum())
    out = {"scale": n, "occupied": float(np.count_nonzero(x > 0))}
    for f, key in ((1, "tvd"), (4, "tvd4"), (16, "tvd16")):
        s0, s1 = x.shape[0] // f * f, x.shape[1] // f * f
        b = x[:s0, :s1].reshape(s0 // f, f, s1 // f, f).sum(axis=(1, 3))
        out[key] = float(np.abs(b - n / b.size).sum() / (2.0 * max(n, 1.0)))
    return out


def select_2d_concentration(
    shape: tuple[int, ...],
    epsilon: float,
    scale: float,
    top_mass: float | None,
    workload: str = "rectangles",
) -> str:
    """The default rule: public features, N̂ and the DP concentration γ = T̂_k / N̂.

    ``T̂_k`` is a DP estimate of the mass of the ``TOP_K`` fullest cells
    (:func:`noisy_top_mass`); γ close to 1 means the records sit on a few spikes. For
    rectangles: the kd-tree when ψ = N̂·ε/n_cells ≥ ``CONC_DENSITY`` and γ ≥ ``CONC_MIN``
    (spiky data: the kd-tree isolates every spike in a box of its own and merges the
    empty rest into a few boxes, where AG's uniform sub-cells smear each spike over its
    sub-cell), otherwise AG. ``top_mass`` None (not bought because ψ is below
    ``CONC_DENSITY``) means AG. For cell counts (identity) the kd-tree, as in
    :func:`select_2d`. Thresholds fitted on the tuning files only
    (:data:`CONC_EVIDENCE`).
    """
    epsilon = check_positive("epsilon", epsilon)
    if workload not in WORKLOADS_2D:
        raise InvalidParameterError(
            f"workload must be one of {', '.join(WORKLOADS_2D)}, not {workload!r}"
        )
    if workload == "identity":
        return "kd-tree"
    n_cells = int(np.prod(shape))
    n_hat = max(float(scale), 1.0)
    if top_mass is None or n_hat * epsilon / n_cells < CONC_DENSITY:
        return "AG"
    return "kd-tree" if float(top_mass) / n_hat >= CONC_MIN else "AG"


def noisy_top_mass(
    x: np.ndarray,
    epsilon: float,
    k: int = 16,
    *,
    accountant: Accountant,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
) -> float:
    """NOISE DRAWING — the total count of the k fullest cells + Lap(1/ε), ε-DP.

    Sensitivity 1: the top-k sum is the maximum over k-cell subsets of their sums; one
    record more adds one to every subset sum that holds its cell and nothing to the
    others, so the maximum rises by 0 or 1 (and falls by 0 or 1 for one record less).
    Charged before the draw. Pythia (Kotsogiannis et al. SIGMOD 2017) likewise reads the
    data's shape only through features measured with a slice of the budget.
    """
    epsilon = check_positive("epsilon", epsilon)
    if int(k) < 1:
        raise InvalidParameterError(f"k must be >= 1, not {k!r}")
    charge(accountant, epsilon, mechanism="select2d:concentration", n_values=1, discrete=discrete)
    v = np.asarray(x, np.float64).ravel()
    kk = min(int(k), v.size)
    top = float(np.sort(v)[v.size - kk :].sum())  # (np.partition is slow on many ties)
    return top + float(laplace_noise(1.0 / epsilon, 1, rng=rng, discrete=discrete)[0])


def noisy_occupancy(
    x: np.ndarray,
    epsilon: float,
    *,
    accountant: Accountant,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
) -> float:
    """NOISE DRAWING — the number of non-empty cells + Lap(1/ε), ε-DP.

    One record more or less turns at most one cell from empty to non-empty or back, so
    the count has sensitivity 1. Charged before the draw.
    """
    epsilon = check_positive("epsilon", epsilon)
    charge(accountant, epsilon, mechanism="select2d:occupancy", n_values=1, discrete=discrete)
    occupied = float(np.count_nonzero(np.asarray(x) > 0))
    return occupied + float(laplace_noise(1.0 / epsilon, 1, rng=rng, discrete=discrete)[0])


def run_2d(
    name: str,
    x: np.ndarray,
    epsilon: float,
    *,
    scale: float | None = None,
    boxes: np.ndarray | None = None,
    accountant: Accountant | None = None,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
) -> SpatialRelease:
    """NOISE DRAWING — run the 2-D algorithm ``name`` with its paper defaults (ε-DP).

    ``scale`` is passed to UG / AG / MWEM (a DP estimate already paid for); the others
    ignore it. ``boxes``: the rectangle workload (MWEM's queries and DAWA-2D's workload;
    None: every cell; the others ignore it). DAWA-2D is DAWA on the Hilbert order
    (:mod:`~mechanisms.histograms.dawa2d`), AHP-2D is AHP on the flattened cells (AHP
    sorts the cells by their noisy counts, so it needs no order) — DPBench's 2-D runs of
    the two 1-D algorithms.
    Privelet-2D and MWEM draw continuous Laplace whatever ``discrete`` says.
    """
    acct = ledger(accountant, epsilon, f"histogram-{name}")
    if name == "AG":
        return grids.ag_release(
            x, epsilon, scale=scale, accountant=acct, rng=rng, discrete=discrete
        )
    if name == "UG":
        return grids.ug_release(
            x, epsilon, scale=scale, accountant=acct, rng=rng, discrete=discrete
        )
    if name == "QuadTree":
        return quadtree.quadtree_release(x, epsilon, accountant=acct, rng=rng, discrete=discrete)
    if name == "HB-2D":
        return hier2d.hb2d_release(x, epsilon, accountant=acct, rng=rng, discrete=discrete)
    if name == "Privelet-2D":
        return hier2d.privelet2d_release(x, epsilon, accountant=acct, rng=rng)
    if name == "MWEM":
        if boxes is None:  # the identity workload: every cell
            r, c = np.indices(x.shape).reshape(2, -1)
            boxes = np.stack([np.stack([r, r + 1], 1), np.stack([c, c + 1], 1)], 1)
        return hier2d.mwem2d_release(x, epsilon, boxes, scale=scale, accountant=acct, rng=rng)
    if name in dawa2d.ALGORITHMS:
        part, meas = dawa2d.ALGORITHMS[name]
        return dawa2d.dawa2d_release(
            x, epsilon, boxes, partition=part, measurement=meas, accountant=acct, rng=rng,
            discrete=discrete,
        )
    if name == "AHP-2D":
        acct.spend(epsilon, mechanism="histogram:AHP-2D", sampler=sampler_name(discrete))
        rel = sortaki.run_config(
            sortaki.parse_config("AHP"), x, epsilon, rng=rng, discrete=discrete
        )
        parts = {"initial": rel.eps_in, "bins": rel.eps_f}
        return SpatialRelease(rel.estimate, name, epsilon, (), parts, None)
    if name in {"kd-tree", "kd-hierarchical"}:
        fn = kdtree.kd_tree_release if name == "kd-tree" else kdtree.hierarchical_kd_release
        r = fn(x, epsilon, accountant=acct, rng=rng, discrete=discrete)
        parts = {"cells": r.eps_cells, "partitions": r.eps_partitions}
        if name == "kd-hierarchical":
            parts = {"medians": r.eps_cells, "leaves": r.eps_partitions}
        return SpatialRelease(r.estimate, name, epsilon, r.boxes, parts, None)
    if name == "cells":
        est = kdtree.cell_based_release(x, epsilon, accountant=acct, rng=rng, discrete=discrete)
        return SpatialRelease(est, "cells", epsilon, (), {"cells": epsilon}, None)
    raise InvalidParameterError(
        f"algorithm must be one of {', '.join(ALGORITHMS_2D)}, not {name!r}"
    )


FEATURES_2D = ("dawa", "concentration", "scale", "occupancy")

#: what the default rule (``features="dawa"``) rests on: bench/hist_2d_rule.py's tuning
#: tables (six files not reported, seed 101; rectangles 3 trials, identity 2); geo-mean /
#: worst of (algorithm / best of the ten published ones) over the 18 cells per ε
DAWA_EVIDENCE = """
rectangles                  ε = 0.1        ε = 1
DAWA-2D-borders always      0.663 / 1.58   0.760 / 1.16   (the default; HDMM measurement)
DAWA-2D-boxes always        0.670 / 1.33   0.775 / 1.19   (the session-24 default)
  … with GreedyH's          0.694 / 1.46   0.792 / 1.43
DAWA-2D-aligned always      0.771 / 1.27   0.852 / 1.70   (the session-23 default)
DAWA-2D always              1.053 / 1.96   1.025 / 1.33   (the session-22 default)
the concentration rule      1.708 / 6.16   2.066 / 6.70
identity workload (best of AG, DAWA-2D, AHP-2D, kd-tree, cells):
DAWA-2D-aligned always      0.879 / 1.02   0.895 / 1.01   (the default, before its clamp)
DAWA-2D-boxes always        0.887 / 1.05   0.909 / 1.04
DAWA-2D always              1.014 / 1.20   1.016 / 1.18
kd-tree (the old rule)      1.725 / 5.55   1.543 / 2.20
"""


#: size and seed of the public rectangle workload the default optimises for when the
#: caller names none (DPBench's: uniform random rectangles)
DEFAULT_BOXES = (2000, 20170517)


def default_boxes(shape: tuple[int, ...]) -> np.ndarray:
    """The public rectangle workload used when none is given (no data read)."""
    n, seed = DEFAULT_BOXES
    return random_boxes(tuple(shape), n, rng=np.random.default_rng(seed))


def release_2d(
    x: np.ndarray,
    epsilon: float,
    *,
    algorithm: str = "auto",
    workload: str = "rectangles",
    features: str = "dawa",
    boxes: np.ndarray | None = None,
    accountant: Accountant | None = None,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
) -> SpatialRelease:
    """NOISE DRAWING — the default 2-D histogram release (ε-DP).

    ``boxes``: the rectangle workload (array (q, 2, 2) of [lo, hi)) the release should
    answer best; None: :func:`default_boxes` (2,000 public random rectangles).

    ``algorithm="auto"``: N̂ with ``AUTO_SCALE_SHARE·ε`` (charged first), then the rule
    of ``features``, then the chosen algorithm with the ε left and N̂. Any other name runs
    that algorithm with the whole ε (UG / AG buy their own N̂ with ``SCALE_SHARE``). The
    features draw from a child stream of ``rng`` (:func:`~mechanisms.histograms._noise.
    child_stream`), so the chosen algorithm sees the stream it would see alone (a benchmark
    can compare them on common random numbers). For the identity workload the cells are
    clamped at 0 (:func:`~mechanisms.histograms.projection.project_nonnegative`: lowers
    every cell's error).

    ``features``:
        * ``"dawa"`` (default): DAWA-2D-borders (:mod:`~mechanisms.histograms.dawa2d`)
          with the whole ε and ``boxes`` as its workload — no feature is bought: 0.66 /
          0.76 of the best of the ten published algorithms on the tuning files
          (:data:`DAWA_EVIDENCE`); for the identity workload DAWA-2D-aligned (every cell:
          the buckets measured directly, then clamped at 0; 0.88 / 0.90 of the best
          before the clamp).
        * ``"concentration"``: when the rectangles' ψ = N̂·ε′/n_cells reaches
          ``CONC_DENSITY`` (ε′ = ε minus both feature shares; a function of N̂ only),
          also ``CONC_SHARE·ε`` on the top-``TOP_K`` mass (:func:`noisy_top_mass`), then
          :func:`select_2d_concentration`. Below it nothing more is bought (the rule
          reads AG there whatever the data) and the algorithm gets ``(1−ρ)·ε``.
        * ``"scale"``: the public-only rule :func:`select_2d` (N̂ only).
        * ``"occupancy"``: ``OCCUPANCY_SHARE·ε`` on the non-empty cells and
          :func:`select_2d_occupancy`.

    Privacy: N̂ and the feature are ε-DP measurements charged before their noise; the
    decision to buy the feature and the choice are functions of DP outputs
    (post-processing); the algorithm runs with the rest; the parts add up to ε
    (sequential composition, adaptive choice of the next measurement's budget).
    """
    if features not in FEATURES_2D:
        raise InvalidParameterError(
            f"features must be one of {', '.join(FEATURES_2D)}, not {features!r}"
        )
    if workload not in WORKLOADS_2D:
        raise InvalidParameterError(
            f"workload must be one of {', '.join(WORKLOADS_2D)}, not {workload!r}"
        )
    x = np.asarray(x, np.float64)
    if x.ndim != 2:
        raise InvalidParameterError(f"x must be a 2-D array, not {x.ndim}-D")
    epsilon = check_positive("epsilon", epsilon)
    acct = ledger(accountant, epsilon, "histogram-2d")
    if algorithm != "auto":
        return run_2d(
            algorithm, x, epsilon, boxes=boxes, accountant=acct, rng=rng, discrete=discrete
        )
    if features == "dawa":
        if workload == "identity":  # every cell: DAWA measures the buckets directly
            name, boxes = "DAWA-2D-aligned", None
        else:
            name = "DAWA-2D-borders"
            boxes = default_boxes(x.shape) if boxes is None else boxes
        parts, n_hat = {}, None
        rel = run_2d(name, x, epsilon, boxes=boxes, accountant=acct, rng=rng,
                     discrete=discrete)
    else:
        gen = resolve_rng(rng)
        feat_rng = child_stream(gen)  # the features' own stream: the algorithm draws from gen alone
        eps_n = AUTO_SCALE_SHARE * epsilon
        n_hat = noisy_total(
            x, eps_n, accountant=acct, rng=feat_rng, discrete=discrete,
            mechanism="select2d:scale",
        )
        rest = epsilon - eps_n
        parts = {"scale": eps_n}
        if features == "occupancy":
            eps_o = OCCUPANCY_SHARE * epsilon
            occ = noisy_occupancy(x, eps_o, accountant=acct, rng=feat_rng, discrete=discrete)
            rest -= eps_o
            parts["occupancy"] = eps_o
            name = select_2d_occupancy(x.shape, rest, n_hat, occ)
        elif features == "concentration":
            eps_c = CONC_SHARE * epsilon
            top = None
            if workload == "rectangles" and n_hat * (rest - eps_c) / x.size >= CONC_DENSITY:
                top = noisy_top_mass(
                    x, eps_c, TOP_K, accountant=acct, rng=feat_rng, discrete=discrete
                )
                rest -= eps_c
                parts["concentration"] = eps_c
            name = select_2d_concentration(x.shape, rest, n_hat, top, workload)
        else:
            name = select_2d(x.shape, rest, n_hat, workload)
        rel = run_2d(name, x, rest, scale=n_hat, accountant=acct, rng=gen, discrete=discrete)
    estimate = rel.estimate
    if workload == "identity":  # the identity norm's projection: clamp every cell at 0
        estimate = project_nonnegative(estimate.ravel()).reshape(estimate.shape)
    return SpatialRelease(
        estimate,
        f"auto:{name}",
        epsilon,
        rel.boxes,
        {**parts, **{f"{name}:{k}": v for k, v in rel.parts.items()}},
        n_hat,
    )
