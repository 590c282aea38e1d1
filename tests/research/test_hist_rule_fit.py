"""Issue 17, 1-D selection rule: the tree fitter and the report's per-cell tail test.

``bench.hist_1d_tree`` searches every depth-≤ 2 tree with cumulative sums; these tests
hold it to a brute-force enumeration, and hold ``bench.tails.
tail_significance`` (bench/tails.py; a paired bootstrap per cell) to its stated false-alarm rate and
power on synthetic trials whose true ratio is known.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from bench import hist_1d_tree as tree
from bench.tails import TAIL_ALPHA, tail_significance
from mechanisms.histograms.select import box_holds, feature_vector


def _leaf_or_split(f: np.ndarray, c: np.ndarray, idx: list[int], min_leaf: int) -> float:
    best = c[idx].sum(axis=0).min()
    for j in range(f.shape[1]):
        vals = sorted({f[i, j] for i in idx})
        for a, b in itertools.pairwise(vals):
            t = (a + b) / 2
            left = [i for i in idx if f[i, j] <= t]
            right = [i for i in idx if f[i, j] > t]
            if len(left) >= min_leaf and len(right) >= min_leaf:
                best = min(best, c[left].sum(axis=0).min() + c[right].sum(axis=0).min())
    return float(best)


def _brute(f: np.ndarray, c: np.ndarray, min_leaf: int) -> float:
    idx = list(range(len(f)))
    best = _leaf_or_split(f, c, idx, min_leaf)
    for j in range(f.shape[1]):
        vals = sorted(set(f[:, j]))
        for a, b in itertools.pairwise(vals):
            t = (a + b) / 2
            left = [i for i in idx if f[i, j] <= t]
            right = [i for i in idx if f[i, j] > t]
            if len(left) >= min_leaf and len(right) >= min_leaf:
                best = min(best, _leaf_or_split(f, c, left, min_leaf)
                           + _leaf_or_split(f, c, right, min_leaf))
    return best


@pytest.mark.parametrize("seed", range(6))
def test_vectorised_fit_finds_the_least_cost_tree(seed: int) -> None:
    """Least cost = brute force over every depth-≤ 2 tree; the boxes realise that cost,
    partition the rows, and every leaf holds at least min_leaf rows."""
    rng = np.random.default_rng(seed)
    rows, choices, min_leaf = 40, 4, 4
    f = np.column_stack([rng.integers(0, 9, rows), rng.normal(size=rows).round(1)]).astype(float)
    c = rng.normal(size=(rows, choices))
    c[:, 1] += 0.8 * (f[:, 0] > 4)  # some structure for the splits to find
    cost, boxes = tree._fit_rows(f, c, min_leaf)
    assert cost == pytest.approx(_brute(f, c, min_leaf), abs=1e-9)
    leaf_of = [[k for k, (b, _) in enumerate(boxes) if box_holds(b, tuple(r))] for r in f]
    assert all(len(k) == 1 for k in leaf_of)
    assert sum(c[i, boxes[k[0]][1]] for i, k in enumerate(leaf_of)) == pytest.approx(cost)
    sizes = np.bincount([k[0] for k in leaf_of], minlength=len(boxes))
    assert sizes.min() >= min_leaf


def test_ties_go_to_the_earlier_choice() -> None:
    assert tree._first_best(np.array([0.3, 0.1 + 1e-12, 0.1, 0.5])) == 1
    assert tree._first_best(np.array([0.3, 0.2, 0.1])) == 2


def test_feature_vector_is_what_the_rule_reads() -> None:
    lvl, u = feature_vector(4096, 0.5, 8192.0, 1.7)
    assert lvl == pytest.approx(0.0) and u == 1.0
    assert feature_vector(4096, 0.5, -30.0, -0.2) == (math.log10(0.5 / 4096), 0.0)


# --- the report's tail test --------------------------------------------------------------

CELLS = 300
TRIALS = 25


def _trials(true_ratio: float, seed: int) -> dict[tuple, list[float]]:
    """Per cell, 25 paired trials: two peers and the default, log-normal errors with the
    spread of a data-dependent release (sd 0.45 in log: a factor 3–4 between trials) and
    a shared per-trial component (common random numbers)."""
    rng = np.random.default_rng(seed)
    out = {}
    for i in range(CELLS):
        shared = rng.normal(0, 0.3, TRIALS)
        cell = ("D", i, 0.1, "prefix")
        out[(*cell, "A")] = np.exp(shared + rng.normal(0, 0.35, TRIALS)).tolist()
        out[(*cell, "B")] = np.exp(0.7 + shared + rng.normal(0, 0.35, TRIALS)).tolist()
        out[(*cell, "auto")] = (
            true_ratio * np.exp(shared + rng.normal(0, 0.35, TRIALS))
        ).tolist()
    return out


@pytest.mark.slow
def test_tail_test_false_alarm_rate_and_power() -> None:
    """False alarms: cells whose true ratio is exactly 1.2 are flagged at most at α = 5 %
    per cell (one-sided); over 300 cells the count is ≤ 27 (binomial 300 × 0.05 has
    mean 15, P(> 27) ≈ 0.0016; the percentile bootstrap runs slightly liberal at 25
    trials, so the bound leaves room). Power: cells whose true ratio is 2 are flagged in
    ≥ 95 % (sd of a 25-trial log-median ratio ≈ 0.14, so 2× sits ≈ 3.6 sd above 1.2).
    """
    null = tail_significance(_trials(1.2, 1), ("A", "B"), "auto")
    assert null["alpha"] == TAIL_ALPHA
    assert null["cells_significantly_over"] <= 27
    alt = tail_significance(_trials(2.0, 2), ("A", "B"), "auto")
    assert alt["cells_over"] >= 0.95 * CELLS
    assert alt["cells_significantly_over"] >= 0.95 * CELLS
    for v in alt["cells"].values():
        assert v["lower_95"] <= v["ratio"] <= v["upper_95"]


def test_tail_cost_charges_only_the_excess_over_the_bound() -> None:
    c = np.log(np.array([[0.8, 1.2, 1.5], [1.0, 2.4, 1.19]]))
    assert np.array_equal(tree.tail_cost(c, 0.0), c)
    out = tree.tail_cost(c, 3.0)
    excess = np.log(np.array([[1.0, 1.0, 1.25], [1.0, 2.0, 1.0]]))
    assert np.allclose(out, c + 3.0 * excess)
    # a choice that is slightly better on average but far off in one cell loses its leaf
    two = np.log(np.array([[0.7, 1.0], [0.7, 1.0], [2.0, 1.1]]))
    assert two.sum(axis=0).argmin() == 0
    assert tree.tail_cost(two, 2.0).sum(axis=0).argmin() == 1
