"""Complex queries (ch. 6), query language, aggregates and the predicate-wise ledger."""

import math

import numpy as np
import pytest
from scipy import stats

from mechanisms.errors import InvalidParameterError
from mechanisms.mide.accounting import PredicateLedger, ledger_min_entropy, record_result
from mechanisms.mide.aggregates import avg_query, count_query, sum_query
from mechanisms.mide.complex import And, Leaf, Or, answer, leaf_epsilons, split_beta, truth
from mechanisms.mide.language import (
    AndExpr,
    Condition,
    CountSource,
    OrExpr,
    QuerySyntaxError,
    RecordSource,
    bind,
    parse,
)
from mechanisms.mide.mechanisms import decide

# Tree FNR check: a predicate true for the tree is missed only if some leaf that is true
# for it misses it (Def. 6.9–6.10), so FN ~ Binomial(N, p) with p ≤ Σ_{true leaves} β_j
# (union bound, eq. 6.23–6.25). Reject when FN exceeds the (1 − ALPHA) quantile of
# Binomial(N, Σ_{true} β_j): false-alarm rate ≤ ALPHA. Comparing with β itself would be
# blind: with a false leaf the true leaves hold only part of β.
ALPHA = 1e-6
BETA = 0.05
# Power: to reject leaves calibrated 30 % off (every β_j ×1.3) with probability POWER at
# the smallest bound tested, p = β·(1/2 + 1/5)/(1/2 + 1/5 + 1) = 0.0206 (optimal split),
# n ≥ ((z_{1-ALPHA}·sqrt(p(1-p)) + z_{POWER}·sqrt(1.3p(1-1.3p))) / (0.3p))² ≈ 28_900
# (z = 4.75, 2.33); N = 50_000 (exact binomial power ≥ 0.9999, asserted in the test).
POWER = 0.99
SCALE_OFF = 1.3
N = 50_000


def _leaf(values, thresholds, u, sens=1.0):
    q = count_query(values, thresholds)
    if sens != 1.0:
        q = type(q)(q.values, q.thresholds, sens, "sum")
    return Leaf(q, u)


def test_naive_and_optimal_splits_follow_eq_6_21():
    u = np.array([1.0, 2.0, 4.0])
    tree = And(tuple(_leaf(np.ones(3), 0.0, x) for x in u))
    np.testing.assert_allclose(split_beta(tree, 0.06, "naive"), [0.02, 0.02, 0.02])
    prods = np.array([np.prod(np.delete(u, j)) for j in range(3)])
    np.testing.assert_allclose(split_beta(tree, 0.06, "optimal"), 0.06 * prods / prods.sum())


def test_optimal_split_minimises_total_epsilon():
    rng = np.random.default_rng(0)
    for _ in range(30):
        n = int(rng.integers(2, 6))
        u = rng.uniform(0.5, 50, n)
        sens = rng.uniform(0.5, 3, n)
        tree = Or(tuple(_leaf(np.ones(2), 0.0, x, s) for x, s in zip(u, sens, strict=True)))
        opt = leaf_epsilons(tree, split_beta(tree, BETA, "optimal")).sum()
        assert opt <= leaf_epsilons(tree, split_beta(tree, BETA, "naive")).sum() + 1e-12
        for _ in range(20):  # any other split on the simplex costs at least as much
            w = rng.dirichlet(np.ones(n))
            assert opt <= leaf_epsilons(tree, BETA * w).sum() + 1e-12


@pytest.mark.slow
@pytest.mark.parametrize("split", ["naive", "optimal"])
def test_tree_fnr_is_bounded_by_beta(split):
    rng = np.random.default_rng(21)
    c1, c2, c3 = (rng.integers(10, 300, N).astype(float) for _ in range(3))
    u = np.array([2.0, 5.0, 1.0])
    # l1, l2 just true; l3 false (far below) so the OR rests on l2 alone: the tree misses
    # iff l1 misses or l2 misses (l3 returns with ½e^(−ε₃·99) ≈ 0)
    l1, l2 = _leaf(c1 + 1e-3, c1, u[0]), _leaf(c2 + 1e-3, c2, u[1])
    l3 = _leaf(c3 - 100.0, c3, u[2])
    tree = And((l1, Or((l2, l3))))
    t = truth(tree)
    assert t.all()
    # β_j derived here, not read from split_beta: naive β/n (Alg. 6–7), optimal
    # β_j ∝ Δ_j/u_j (eq. 6.21 with Δ = 1)
    betas = np.full(3, BETA / 3) if split == "naive" else BETA * (1 / u) / (1 / u).sum()
    bound = betas[0] + betas[1]  # Σ over the true leaves
    crit = int(stats.binom.ppf(1 - ALPHA, N, bound))
    assert stats.binom.sf(crit, N, SCALE_OFF * bound) >= POWER  # the sample size claim

    res = answer(tree, beta=BETA, epsilon_max=10.0, split=split, rng=rng)
    assert not res.denied
    np.testing.assert_allclose(res.betas, betas, rtol=1e-12)
    assert res.epsilon_spent == pytest.approx(np.sum(np.log(1 / (2 * betas)) / u))  # Alg. 6
    fn = int((~res.positive).sum())
    assert fn <= crit, f"{fn} false negatives of {N} (bound {bound:.4g}, critical {crit})"

    # power: the same check must reject leaves calibrated for 1.3β
    wrong = answer(tree, beta=SCALE_OFF * BETA, epsilon_max=10.0, split=split, rng=rng)
    assert int((~wrong.positive).sum()) > crit


def test_tree_denied_when_total_epsilon_exceeds_max():
    tree = And((_leaf(np.ones(4), 0.0, 1.0), _leaf(np.ones(4), 0.0, 1.0)))
    need = leaf_epsilons(tree, split_beta(tree, BETA)).sum()
    r = answer(tree, beta=BETA, epsilon_max=need * 0.99)
    assert r.denied and r.epsilon_spent == 0.0 and not r.positive.any()
    assert not answer(tree, beta=BETA, epsilon_max=need * 1.01).denied
    assert set(r.public()) == {"denied", "epsilon", "betas", "positive"}


def test_sub_queries_must_share_predicates():
    with pytest.raises(InvalidParameterError, match="same predicates"):
        answer(And((_leaf(np.ones(3), 0.0, 1.0), _leaf(np.ones(4), 0.0, 1.0))), beta=BETA,
               epsilon_max=10.0)


def test_parse_builds_the_tree_with_precedence_and_units():
    e = parse("count(location) > 0.8*capacity AND avg_dwell(location) > 30min ± 5min "
              "OR sum_fare(location) > 2h")
    assert isinstance(e, OrExpr)
    conj, last = e.children
    assert isinstance(conj, AndExpr)
    a, b = conj.children
    assert a == Condition("count", "location", 0.8, "capacity", None,
                          "count(location) > 0.8*capacity")
    assert (b.aggregate, b.factor, b.reference, b.u) == ("avg_dwell", 1800.0, None, 300.0)
    assert (last.aggregate, last.factor) == ("sum_fare", 7200.0)
    p = parse("(count(l) > 3 or count(l) > capacity*2) and count(l) > 50% +- 1")
    assert isinstance(p, AndExpr) and isinstance(p.children[0], OrExpr)
    assert p.children[1].factor == 0.5 and p.children[1].u == 1.0
    assert p.children[0].children[1].factor == 2.0


@pytest.mark.parametrize(("text", "match"), [
    ("", "column 1: expected a condition"),
    ("count(location) >", "column 18: expected a threshold"),
    ("count(location) < 5", "only '>'"),
    ("median(location) > 5", "aggregate must be"),
    ("count(location > 5", "column 16: expected '\\)'"),
    ("count(location) > 5 AND", "column 24"),
    ("count(location) > 5 count(location) > 2", "expected AND, OR or end"),
    ("count(room) > 5 AND count(floor) > 2", "same predicates"),
    ("count(location) > 5 ± 0", "must be > 0"),
    ("count(location) > 5 $", "unexpected character '\\$'"),
])
def test_parse_errors_are_clear(text, match):
    with pytest.raises(QuerySyntaxError, match=match):
        parse(text)


def test_bind_and_answer_end_to_end():
    rng = np.random.default_rng(3)
    k = 40
    capacity = rng.integers(20, 100, k).astype(float)
    counts = np.where(np.arange(k) < 20, capacity * 1.5, capacity * 0.2)
    # dwell records: predicates < 10 have long dwell, others short
    pred = np.repeat(np.arange(k), 30)
    dwell = np.where(pred < 10, 3600.0, 300.0) + rng.uniform(-60, 60, pred.size)
    sources = {"count": CountSource(counts),
               "avg_dwell": RecordSource(dwell, pred, k, 0.0, 4 * 3600.0, n_min=30)}
    tree = bind("count(location) > 0.8*capacity AND avg_dwell(location) > 30min ± 5min",
                sources, {"capacity": capacity}, default_u={"count": 10.0})
    assert isinstance(tree, And)
    np.testing.assert_array_equal(truth(tree), np.arange(k) < 10)
    res = answer(tree, beta=BETA, epsilon_max=20.0, rng=rng)
    assert not res.denied
    np.testing.assert_array_equal(res.positive[:10], True)  # far above: found
    assert not res.positive[20:].any()  # far below in count
    with pytest.raises(InvalidParameterError, match="uncertainty width for count"):
        bind("count(location) > 3", sources)
    with pytest.raises(InvalidParameterError, match="attribute must be one of"):
        bind("count(location) > 0.5*size ± 1", sources, {"capacity": capacity})
    with pytest.raises(InvalidParameterError, match="aggregate must be one of"):
        bind("avg_fare(location) > 3 ± 1", sources)


def test_aggregate_sensitivities_and_avg_rewrite():
    pred = np.array([0, 0, 1, 1, 1, 2])
    x = np.array([10.0, 50.0, 1.0, 2.0, 3.0, 100.0])
    s = sum_query(x, pred, 3, 20.0, lower=0.0, upper=40.0, max_contributions=2)
    np.testing.assert_allclose(s.values, [50.0, 6.0, 40.0])  # clipped to [0, 40]
    assert s.sensitivity == 80.0
    a = avg_query(x, pred, 3, np.array([25.0, 1.5, 50.0]), lower=0.0, upper=60.0)
    # avg > c  <=>  Σ(clip(x) − c) > 0
    clipped_avg = np.array([30.0, 2.0, 60.0])
    np.testing.assert_array_equal(a.values > 0, clipped_avg > np.array([25.0, 1.5, 50.0]))
    assert a.sensitivity == pytest.approx(max(60 - 1.5, 50 - 0.0))
    assert count_query([1, 2], 1).sensitivity == 1.0
    with pytest.raises(InvalidParameterError):
        sum_query(x, pred, 3, 1.0, lower=5.0, upper=5.0)
    with pytest.raises(InvalidParameterError):
        sum_query(x, pred + 5, 3, 1.0, lower=0.0, upper=5.0)


def test_ledger_composes_by_intersection_and_reports_ex_post():
    led = PredicateLedger(["r1", "r2", "r3"])
    r = decide(np.array([5.0, 50.0, 500.0]), 40.0, algorithm="ppwlm", beta=BETA, alpha=1.0,
               epsilon_max=4.0, rng=np.random.default_rng(1))
    entry = record_result(led, r, tick=7)
    assert entry is not None and entry.internal and entry.mechanism == "mide:ppwlm"
    np.testing.assert_allclose(entry.epsilons, r.ex_post)
    # a second query over coarser predicates: building A = r1 ∪ r2, building B = r3
    led.record_partition({"A": (["r1", "r2"], 0.4), "B": (["r3"], 1.0)}, mechanism="q2",
                         tick=7)
    eps = led.epsilons(7)
    np.testing.assert_allclose(eps, r.ex_post + [0.4, 0.4, 1.0])  # Thm 5.2: ε add
    assert led.ex_post_epsilon(7) == pytest.approx(eps.max())  # Thm 5.3
    assert 0 <= ledger_min_entropy(led, 7) <= math.log(3)
    denied = decide(np.ones(3), 0.0, algorithm="tslm", beta=BETA, alpha=1.0, epsilon_max=0.1)
    assert record_result(led, denied, tick=7) is None
