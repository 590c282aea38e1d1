"""Subset-sum reductions for γ(Θ) (mechanisms/mide/hardness.py) against brute force.

Deterministic: every instance is decided both ways — SUBSET-SUM by enumerating
subsets, γ by enumerating every vertex — and the reduction must agree on all of them.
A wrong construction (a container that is not preferred, a gap that is not certified,
an ε₀ that does not fit the slack) makes YES and NO overlap and the test fail.
"""

import itertools
import logging

import numpy as np
import pytest

from mechanisms.errors import InvalidParameterError
from mechanisms.mide.entropy import (
    min_entropy_bruteforce,
    min_entropy_solution,
    posterior_bounds,
)
from mechanisms.mide.hardness import (
    MAX_WEIGHT,
    epsilon_subset_sum_instance,
    nested_subset_sum_instance,
)

N_NESTED = 150
N_EPSILON = 150


def _has_subset(a, target, size=None):
    sizes = range(len(a) + 1) if size is None else [size]
    return any(sum(c) == target for r in sizes for c in itertools.combinations(a, r))


def test_nested_boxes_decide_subset_sum():
    rng = np.random.default_rng(7)
    seen = {True: 0, False: 0}
    for _ in range(N_NESTED):
        n = int(rng.integers(2, 10))
        a = rng.integers(1, 30, n).tolist()
        tau = int(rng.integers(1, sum(a)))
        inst = nested_subset_sum_instance(a, tau)
        lo, hi = inst.lower, inst.upper
        # nested: sorted by width, lower bounds fall while upper bounds rise
        order = np.argsort(hi - lo)
        assert np.all(np.diff(lo[order]) <= 0) and np.all(np.diff(hi[order]) >= 0)
        assert inst.gap > 1e-7  # far above rounding error
        gamma = min_entropy_bruteforce(lo, hi)
        yes = _has_subset(a, tau)
        seen[yes] += 1
        if yes:
            assert gamma == pytest.approx(inst.threshold, abs=1e-12)
        else:
            assert gamma - inst.threshold >= inst.gap * (1 - 1e-6)
        sol = min_entropy_solution(lo, hi)
        assert sol.exact and sol.value == pytest.approx(gamma, abs=1e-12)
    assert min(seen.values()) >= 20  # both kinds of instance were exercised


@pytest.mark.parametrize("max_weight", [15, 1000])
def test_uniform_prior_epsilons_decide_k_subset_sum_to_first_order(max_weight):
    # default η = min(1e-6, 0.001 / max(a)²): large weights need a smaller step
    rng = np.random.default_rng(11 + max_weight)
    seen = {True: 0, False: 0}
    worst_yes, best_no = 0.0, np.inf
    for _ in range(N_EPSILON):
        n = int(rng.integers(5, 12))
        size = int(rng.integers(2, (n + 1) // 2))
        a = rng.integers(1, max_weight, n).tolist()
        if max_weight > 100:  # make YES-instances common: a random K-subset's sum, ± 1
            tau = int(sum(rng.choice(a, size, replace=False)) + rng.integers(-1, 2))
        else:
            tau = int(rng.integers(size, min(14 * size, sum(a))))
        inst = epsilon_subset_sum_instance(a, size, tau)
        lo, hi = posterior_bounds(inst.epsilons)
        gamma = min_entropy_bruteforce(lo, hi)
        # (γ − B₁) in units of the first-order NO-gap c₁·η: ≈ 0 for YES, ≥ 1 for NO
        score = (gamma - inst.first_order_value) / (inst.eta * inst.first_order_gap)
        yes = _has_subset(a, tau, size)
        seen[yes] += 1
        if yes:
            worst_yes = max(worst_yes, abs(score))
        else:
            best_no = min(best_no, score)
    assert min(seen.values()) >= 20
    assert worst_yes < 0.05  # second order in η (observed ≈ 1e-3)
    assert best_no > 0.9  # the first-order gap (observed ≈ 0.9996)


def test_search_stops_with_a_certified_interval_on_a_hard_instance(caplog):
    rng = np.random.default_rng(3)
    a = rng.integers(1, 1000, 60).tolist()
    inst = epsilon_subset_sum_instance(a, 15, int(sum(sorted(a)[20:35])))
    lo, hi = posterior_bounds(inst.epsilons)
    with caplog.at_level(logging.WARNING):
        sol = min_entropy_solution(lo, hi, method="search")
    if sol.exact:  # pragma: no cover - the budget was enough on this machine's floats
        assert sol.upper == sol.value
    else:
        assert "LP lower bound" in caplog.text
        assert sol.value <= sol.upper
        assert sol.upper == pytest.approx(-(sol.p * np.log(sol.p)).sum(), abs=1e-12)
        assert sol.p.sum() == pytest.approx(1.0, abs=1e-12)


def test_bad_arguments_are_one_line_errors():
    with pytest.raises(InvalidParameterError, match="weights must be integers"):
        nested_subset_sum_instance([1, 0, 3], 2)
    with pytest.raises(InvalidParameterError, match="weights must be integers"):
        nested_subset_sum_instance([1, MAX_WEIGHT + 1], 2)
    with pytest.raises(InvalidParameterError, match="target must be"):
        nested_subset_sum_instance([1, 2], 3)
    with pytest.raises(InvalidParameterError, match="size must be"):
        epsilon_subset_sum_instance([1, 2, 3, 4], 2, 3)
    with pytest.raises(InvalidParameterError, match="eta must be"):
        epsilon_subset_sum_instance([1, 2, 3, 4, 5], 2, 3, eta=0.1)
    with pytest.raises(InvalidParameterError, match="eta must be"):  # 1e-6 · 1000² > 0.01
        epsilon_subset_sum_instance([1, 2, 3, 4, 1000], 2, 3, eta=1e-6)
