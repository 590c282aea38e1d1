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
from mechanisms.histograms.select import RULE, box_holds, feature_vector


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


def test_recheck_scores_places_cells_by_leaf_and_replays_the_features_noise(monkeypatch) -> None:
    """Per leaf, each choice's geo-mean over the cells whose noise-free features fall in it;
    under the features' noise, a leaf's choice replaced is scored over every cell, each
    draw taking the choice of the leaf it lands in (hand-computed on two cells)."""
    clean = {("X", "1000", "0.1"): (0.0, 0.05), ("Y", "1000", "0.1"): (0.0, 0.5)}
    noisy = {  # X: half the draws cross û = 0.108 into the second range leaf
        ("X", "1000", "0.1"): np.array([(0.0, 0.05)] * 16 + [(0.0, 0.5)] * 16),
        ("Y", "1000", "0.1"): np.array([(0.0, 0.5)] * 32),
    }

    def fake(cells, kappa, draws=0):  # type: ignore[no-untyped-def]
        return noisy if draws else {k: np.array([v]) for k, v in clean.items()}

    monkeypatch.setattr(tree, "_features", fake)
    # X and Y lie in the range rule's first two leaves (low signal, û ≤ / > 0.108)
    (box1, first), (box2, second) = RULE["range"][:2]
    assert first != second
    assert box_holds(box1, clean[("X", "1000", "0.1")])
    assert not box_holds(box1, clean[("Y", "1000", "0.1")])
    assert box_holds(box2, clean[("Y", "1000", "0.1")])
    errors: dict[tuple, list[float]] = {}
    for d, mine in (("X", (2.0, 1.0)), ("Y", (1.5, 3.0))):
        for a in tree.PUBLISHED:
            errors[(d, 1000, 0.1, "random", a)] = [1.0] * 8
        errors[(d, 1000, 0.1, "random", first + "+P")] = [mine[0]] * 8
        errors[(d, 1000, 0.1, "random", second + "+P")] = [mine[1]] * 8
    res = tree.recheck_scores(errors, "random", 8, (first, second))
    leaf = res[f"leaf {first}"]["8 trials"]
    assert leaf[first]["geo_mean"] == 2.0 and leaf[second]["geo_mean"] == 1.0
    leaf = res[f"leaf {second}"]["8 trials"]
    assert leaf[first]["geo_mean"] == 1.5 and leaf[second]["geo_mean"] == 3.0
    swap = res["features' noise, one leaf's choice replaced"]["8 trials"]
    # the deployed rule: X half 2.0 / half 1.0, Y 3.0
    want = math.exp((math.log(2.0) / 2 + math.log(3.0)) / 2)
    assert swap[f"leaf {first}"][first]["geo_mean"] == pytest.approx(want, abs=1e-3)
    assert swap[f"leaf {second}"][second]["geo_mean"] == pytest.approx(want, abs=1e-3)
    # the first leaf's choice replaced: X is 1.0 on every draw
    assert swap[f"leaf {first}"][second]["geo_mean"] == pytest.approx(math.sqrt(3), abs=1e-3)
    # the second leaf's choice replaced: X is 2.0 on every draw, Y 1.5
    assert swap[f"leaf {second}"][first]["geo_mean"] == pytest.approx(math.sqrt(3), abs=1e-3)
    assert swap[f"leaf {second}"][first]["over_1.2"] == 2
    assert set(swap) == {f"leaf {first}", f"leaf {second}"}  # leaves no cell lies in: left out
