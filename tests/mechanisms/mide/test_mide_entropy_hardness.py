"""Subset-sum reductions for γ(Θ) (mechanisms/mide/hardness.py) against brute force.

Deterministic: every instance is decided both ways — SUBSET-SUM by enumerating
subsets, γ by enumerating every vertex — and the reduction must agree on all of them.
A wrong construction (a container that is not preferred, a gap that is not certified,
an ε₀ that does not fit the slack) makes YES and NO overlap and the test fail.
For Theorem 2 the per-instance certificate (E_yes, G_no, threshold) must bracket the
brute-force γ − B₁ — in float (tolerance = rounding of γ) on hundreds of instances and
in exact 40-digit arithmetic on small ones — and decide every instance.
"""

import itertools
import logging
import math
from decimal import Decimal, localcontext

import numpy as np
import pytest

from mechanisms.errors import InvalidParameterError
from mechanisms.mide import hardness
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
N_CERTIFIED = 200  # per weight scale
N_EXACT = 40
#: rounding error of a float brute-force γ (≈ 2.4 nats, ≤ 11 terms: ≲ 1e-14) — three
#: orders below the smallest certified margin G_no − E_yes seen (≈ 2.6e-11).
FLOAT_TOL = 1e-13


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


def _epsilon_instances(max_weight, count, seed, n_max=11):
    """Random K-SUBSET-SUM instances, YES and NO both common, tight NO cases included."""
    rng = np.random.default_rng(seed)
    for i in range(count):
        n = int(rng.integers(5, n_max + 1))
        size = int(rng.integers(2, (n + 1) // 2))
        a = rng.integers(1, max_weight + 1, n).tolist()
        if i % 5 == 0:  # the K largest sum to τ ± 1: the tightest NO vertices
            tau = int(sum(sorted(a)[-size:]) + rng.integers(-1, 2))
        elif max_weight > 100 or i % 2:  # a random K-subset's sum, ± 1
            tau = int(sum(rng.choice(a, size, replace=False)) + rng.integers(-1, 2))
        else:
            tau = int(rng.integers(size, min(14 * size, sum(a))))
        tau = min(max(tau, 1), sum(a) - 1)
        yield a, size, tau


@pytest.mark.parametrize("max_weight", [15, 1000])
def test_certificate_brackets_gamma_and_decides_k_subset_sum(max_weight):
    seen = {True: 0, False: 0}
    ratios = []
    for a, size, tau in _epsilon_instances(max_weight, N_CERTIFIED, 101 + max_weight):
        inst = epsilon_subset_sum_instance(a, size, tau)
        assert inst.certified and inst.yes_bound < inst.no_bound
        assert inst.no_bound - inst.yes_bound > 100 * FLOAT_TOL  # far above rounding
        assert inst.yes_bound < inst.threshold - inst.first_order_value < inst.no_bound
        gamma = min_entropy_bruteforce(*posterior_bounds(inst.epsilons))
        excess = gamma - inst.first_order_value
        yes = _has_subset(a, tau, size)
        seen[yes] += 1
        assert (gamma <= inst.threshold) == yes
        if yes:
            assert excess <= inst.yes_bound + FLOAT_TOL
        else:
            assert excess >= inst.no_bound - FLOAT_TOL
        ratios.append(inst.no_bound / inst.yes_bound)
    assert min(seen.values()) >= 40
    assert min(ratios) > 100  # observed ≥ 2.9e3: the certificate is not marginal


def _exact_gamma(eps):
    """γ by enumerating every vertex (Lemma 1) in 40-digit decimal arithmetic."""
    e = [Decimal(float(x)) for x in eps]
    z1, z2 = sum(x.exp() for x in e), sum((-x).exp() for x in e)
    lo = [(-x).exp() / z1 for x in e]
    hi = [x.exp() / z2 for x in e]
    cost = [-x * x.ln() for x in lo]
    gain = [-u * u.ln() - c for u, c in zip(hi, cost, strict=True)]
    slack, base, best = 1 - sum(lo), sum(cost), None
    for phi in range(len(e)):
        others = [i for i in range(len(e)) if i != phi]
        for mask in itertools.product([0, 1], repeat=len(others)):
            up = [i for i, m in zip(others, mask, strict=True) if m]
            x = slack - sum(hi[i] - lo[i] for i in up)
            if not 0 <= x <= hi[phi] - lo[phi]:
                continue
            p = lo[phi] + x
            value = base + sum(gain[i] for i in up) - cost[phi] - p * p.ln()
            best = value if best is None else min(best, value)
    return best


def test_certificate_holds_in_exact_arithmetic():
    # the certificate is a statement about exact γ of the (exactly representable) ε:
    # check it without float rounding; B₁ is only known to ±ulp, hence that tolerance
    with localcontext() as ctx:
        ctx.prec = 40
        cases = itertools.chain(
            _epsilon_instances(15, N_EXACT // 2, 5, n_max=8),
            _epsilon_instances(1000, N_EXACT // 2, 6, n_max=8),
        )
        seen = {True: 0, False: 0}
        for i, (a, size, tau) in enumerate(cases):
            inst = epsilon_subset_sum_instance(a, size, tau)
            gamma = _exact_gamma(inst.epsilons)
            b1 = Decimal(inst.first_order_value)
            ulp = Decimal(4 * math.ulp(inst.first_order_value))
            yes = _has_subset(a, tau, size)
            seen[yes] += 1
            assert (gamma <= Decimal(inst.threshold)) == yes, i
            if yes:
                assert gamma - b1 <= Decimal(inst.yes_bound) + ulp
            else:
                assert gamma - b1 >= Decimal(inst.no_bound) - ulp
        assert min(seen.values()) >= 10


def test_epsilons_are_exact_and_eta_is_halved_until_certified(monkeypatch):
    a, size, tau = [7, 7, 6, 1, 2, 3, 4, 5, 6], 3, 13
    inst = epsilon_subset_sum_instance(a, size, tau, eta=3e-5)
    assert inst.eta == 2.0**-16  # 3e-5 rounded down to a power of two, certified at once
    # ε_i − ε_j is computed exactly (Sterbenz) and equals η·(a_i − a_j) exactly
    assert np.array_equal(inst.epsilons - inst.epsilons[0], inst.eta * (np.array(a) - a[0]))
    monkeypatch.setattr(hardness, "MAX_ETA_WEIGHT2", 100.0)  # let a far too large η in
    big = epsilon_subset_sum_instance(a, size, tau, eta=0.1)
    assert big.certified and big.eta < 2.0**-4  # halved (ε₀ unfit / not separated)
    monkeypatch.setattr(hardness, "MAX_HALVINGS", 0)
    with pytest.raises(InvalidParameterError, match="eta must be small enough"):
        epsilon_subset_sum_instance(a, size, tau, eta=0.1)


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
