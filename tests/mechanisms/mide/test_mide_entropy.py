"""Min-entropy γ(Θ): level enumeration and exact search vs brute-force vertex enumeration."""

import itertools
import math

import numpy as np
import pytest

from mechanisms.errors import InvalidParameterError, OccustreamError
from mechanisms.mide import entropy as entropy_module
from mechanisms.mide.entropy import (
    entropy,
    min_entropy,
    min_entropy_bruteforce,
    min_entropy_solution,
    posterior_bounds,
)


def _random_eps(rng, k):
    scale = rng.choice([1e-6, 0.01, 0.1, 0.5, 2.0, 30.0])
    eps = rng.exponential(scale, k)
    kind = rng.integers(5)
    if kind == 1:  # ties
        eps = rng.choice(eps[: max(1, k // 3)], k)
    elif kind == 2:  # extreme spread
        eps[rng.integers(k)] = 60.0
        eps[rng.integers(k)] = 0.0
    elif kind == 3:  # coarse levels (many ties, some zero)
        eps = np.round(eps, 1)
    elif kind == 4:  # near-equal ε (the search's hard case)
        eps = 0.3 + 1e-3 * rng.random(k)
    return eps


N_RANDOM_CASES = 2000


def _check_solution(sol, lo, hi, expected):
    assert sol.exact
    assert sol.value == pytest.approx(expected, abs=1e-9)
    # the minimiser is feasible, attains the value and is a vertex (Lemma 1)
    assert sol.p.sum() == pytest.approx(1.0, abs=1e-9)
    assert np.all(sol.p >= lo - 1e-12) and np.all(sol.p <= hi + 1e-12)
    assert entropy(sol.p) == pytest.approx(sol.value, abs=1e-9)
    inside = (sol.p > lo + 1e-13) & (sol.p < hi - 1e-13)
    assert inside.sum() <= 1


def test_both_methods_equal_brute_force_on_random_small_instances():
    rng = np.random.default_rng(2024)
    for _ in range(N_RANDOM_CASES):
        k = int(rng.integers(1, 11))
        eps = _random_eps(rng, k)
        priors = rng.uniform(0.2, 5.0, k) if rng.random() < 0.3 else None
        lo, hi = posterior_bounds(eps, priors)
        brute = min_entropy_bruteforce(lo, hi)
        for method in ("levels", "search", "auto"):
            _check_solution(min_entropy_solution(lo, hi, method=method), lo, hi, brute)


def test_level_enumeration_equals_search_with_many_ties():
    rng = np.random.default_rng(77)
    for _ in range(60):
        n_levels = int(rng.integers(1, 4))
        levels = rng.exponential(rng.choice([0.01, 0.3, 2.0]), n_levels)
        sizes = rng.integers(1, 60, n_levels)
        lo, hi = posterior_bounds(np.repeat(levels, sizes))
        by_search = min_entropy_solution(lo, hi, method="search")
        by_levels = min_entropy_solution(lo, hi, method="levels")
        assert by_search.exact and by_levels.method == "levels"
        assert by_levels.value == pytest.approx(by_search.value, abs=1e-9), (levels, sizes)


def test_search_budget_falls_back_to_exact_level_enumeration(monkeypatch):
    # three close levels: the search needs many nodes; with a tiny budget "auto" must
    # still be exact through the polynomial enumeration
    eps = np.repeat([0.3, 0.3001, 0.3002], [30, 30, 40])
    lo, hi = posterior_bounds(eps)
    reference = min_entropy_solution(lo, hi, method="levels").value
    monkeypatch.setattr(entropy_module, "MAX_NODES", 3)
    monkeypatch.setattr(entropy_module, "LEVEL_ENUM_FIRST", 0)
    cut = min_entropy_solution(lo, hi, method="search")
    assert not cut.exact and cut.value <= reference + 1e-12  # certified lower bound
    sol = min_entropy_solution(lo, hi)
    assert sol.exact and sol.method == "levels"
    assert sol.value == pytest.approx(reference, abs=1e-12)


@pytest.mark.parametrize("budget", [1, 4, 12])
def test_pruned_level_enumeration_after_a_cut_search_equals_brute_force(monkeypatch, budget):
    # the search stops early and its best vertex prunes the enumeration's rows: both the
    # "a better vertex exists" and the "the incumbent was optimal" outcomes must be exact
    monkeypatch.setattr(entropy_module, "MAX_NODES", budget)
    monkeypatch.setattr(entropy_module, "LEVEL_FALLBACK_NODES", budget)
    monkeypatch.setattr(entropy_module, "LEVEL_ENUM_FIRST", 0)
    rng = np.random.default_rng(budget)
    methods = set()
    for _ in range(150):
        k = int(rng.integers(2, 10))
        eps = rng.choice(rng.exponential(rng.choice([0.01, 0.3, 2.0]), 3), k)
        if rng.random() < 0.5:
            eps = 0.3 + 1e-4 * rng.integers(0, 3, k)  # near-equal levels: the hard case
        lo, hi = posterior_bounds(eps)
        sol = min_entropy_solution(lo, hi)
        methods.add(sol.method)
        _check_solution(sol, lo, hi, min_entropy_bruteforce(lo, hi))
    assert "levels" in methods


def test_min_entropy_is_a_lower_bound_or_an_error_when_the_search_stops(monkeypatch):
    eps = 0.3 + 1e-3 * np.random.default_rng(5).random(60)  # near-equal: the hard case
    exact = min_entropy(eps)
    monkeypatch.setattr(entropy_module, "MAX_NODES", 2)
    monkeypatch.setattr(entropy_module, "LEVEL_FALLBACK_NODES", 2)
    monkeypatch.setattr(entropy_module, "LEVEL_ENUM_LIMIT", 0)
    sol = min_entropy_solution(*posterior_bounds(eps))
    assert not sol.exact and sol.value <= exact <= sol.upper
    assert min_entropy(eps) == sol.value
    with pytest.raises(OccustreamError, match="only bracketed"):
        min_entropy(eps, require_exact=True)


def test_method_must_be_known_and_levels_must_fit(monkeypatch):
    lo, hi = posterior_bounds(np.array([0.1, 0.2, 0.3]))
    with pytest.raises(InvalidParameterError):
        min_entropy_solution(lo, hi, method="greedy")
    monkeypatch.setattr(entropy_module, "LEVEL_ENUM_LIMIT", 1)
    with pytest.raises(InvalidParameterError):
        min_entropy_solution(lo, hi, method="levels")


def test_equal_epsilons_and_zero_epsilons():
    assert min_entropy(np.zeros(7)) == pytest.approx(math.log(7))
    for e in (1e-9, 0.3, 2.3, 40.0):
        eps = np.full(9, e)
        lo, hi = posterior_bounds(eps)
        assert min_entropy(eps) == pytest.approx(min_entropy_bruteforce(lo, hi), abs=1e-9)


def test_larger_epsilon_never_raises_min_entropy():
    rng = np.random.default_rng(5)
    for _ in range(50):
        eps = rng.exponential(0.5, 8)
        more = eps.copy()
        more[rng.integers(8)] += rng.exponential(1.0)
        assert min_entropy(more) <= min_entropy(eps) + 1e-12


def _grouped_oracle(levels, sizes):
    """Independent oracle for ties: enumerate member counts at the upper bound."""
    eps = np.repeat(levels, sizes)
    lo, hi = posterior_bounds(eps)
    starts = np.cumsum([0, *sizes[:-1]])
    g_lo, g_hi = lo[starts], hi[starts]
    s = 1.0 - lo.sum()
    best = math.inf
    for counts in itertools.product(*[range(n + 1) for n in sizes]):
        used = float(np.dot(counts, g_hi - g_lo))
        rem = s - used
        if rem < -1e-12:
            continue
        base = sum(c * -g_hi[i] * math.log(g_hi[i]) + (n - c) * -g_lo[i] * math.log(g_lo[i])
                   for i, (c, n) in enumerate(zip(counts, sizes, strict=True)))
        for g, (c, n) in enumerate(zip(counts, sizes, strict=True)):
            if c < n and rem <= g_hi[g] - g_lo[g] + 1e-12:
                x = g_lo[g] + max(rem, 0.0)
                val = base + g_lo[g] * math.log(g_lo[g]) - x * math.log(x)
                best = min(best, val)
    return best


@pytest.mark.parametrize("levels", [(0.01, 0.5, 3.0), (1e-5, 7e-4, 3.7), (0.2, 0.21, 0.9)])
def test_many_ties_match_grouped_enumeration(levels):
    sizes = [25, 20, 15]
    eps = np.repeat(levels, sizes)
    assert min_entropy(eps) == pytest.approx(_grouped_oracle(np.array(levels), sizes),
                                             abs=1e-9)


def test_upper_bound_set_is_not_a_prefix_by_epsilon():
    """Why a search is needed: best 'widest-first' vertex is strictly worse here."""
    eps = np.array([0.003, 0.005, 0.111, 0.253, 0.353, 0.411, 0.439, 0.751])
    lo, hi = posterior_bounds(eps)
    k = eps.size
    best_prefix = math.inf
    for f in range(k):
        for top in range(k):
            p = lo.copy()
            widest = [i for i in np.argsort(-eps) if i != f][:top]
            p[widest] = hi[widest]
            p[f] = 1.0 - (p.sum() - p[f])
            if lo[f] - 1e-12 <= p[f] <= hi[f] + 1e-12:
                best_prefix = min(best_prefix, entropy(p))
    exact = min_entropy(eps)
    assert exact == pytest.approx(min_entropy_bruteforce(lo, hi), abs=1e-12)
    assert best_prefix > exact + 1e-4


def test_ten_thousand_predicates_mide_shaped_is_exact():
    rng = np.random.default_rng(1)
    eps = rng.choice([1e-5, 7.2e-4, 0.051, 3.69], 10_000)
    sol = min_entropy_solution(*posterior_bounds(eps))
    assert sol.exact
    assert 0 < sol.value < math.log(10_000)


def test_bad_input():
    with pytest.raises(InvalidParameterError):
        posterior_bounds(np.array([-1.0, 2.0]))
    with pytest.raises(InvalidParameterError):
        posterior_bounds(np.array([]))
    with pytest.raises(InvalidParameterError):
        min_entropy_solution(np.array([0.6, 0.6]), np.array([0.7, 0.7]))
    with pytest.raises(InvalidParameterError):
        posterior_bounds(np.ones(3), priors=np.array([1.0, 0.0, 1.0]))
