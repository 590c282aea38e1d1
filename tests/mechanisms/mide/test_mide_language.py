"""Query language: WHERE filters in sub-queries (thesis §6.1), parsing, binding, answering."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanisms.errors import InvalidParameterError
from mechanisms.mide.aggregates import Comparison, Filter, avg_query, record_count_query
from mechanisms.mide.complex import And, Or, answer, leaves, truth
from mechanisms.mide.language import (
    AndExpr,
    Condition,
    CountSource,
    OrExpr,
    QuerySyntaxError,
    RecordCountSource,
    RecordSource,
    bind,
    parse,
    unparse,
)

EXAMPLE = ("count(location WHERE kind = 'laptop') > 0.8*capacity "
           "AND avg_dwell(location WHERE dwell > 10min) > 30min ± 5min")


def test_parse_where_clause_builds_filters():
    e = parse(EXAMPLE)
    assert isinstance(e, AndExpr)
    a, b = e.children
    assert a == Condition("count", "location", 0.8, "capacity", None,
                          where=Filter((Comparison("kind", "=", "laptop"),)))
    assert a.text == "count(location WHERE kind = 'laptop') > 0.8*capacity"
    assert b == Condition("avg_dwell", "location", 1800.0, None, 300.0,
                          where=Filter((Comparison("dwell", ">", 600.0),)))
    assert parse("count(location) > 3").where is None


def test_parse_every_operator_text_units_signs_and_and():
    c = parse('sum_fare(zone where kind != "phone" and dwell >= 1h and t < -2.5 '
              'AND n <= 3 AND x == 7 AND y = 50%) > 2')
    assert c.where.terms == (
        Comparison("kind", "!=", "phone"), Comparison("dwell", ">=", 3600.0),
        Comparison("t", "<", -2.5), Comparison("n", "<=", 3.0), Comparison("x", "=", 7.0),
        Comparison("y", "=", 0.5))
    assert c.where.fields == ("kind", "dwell", "t", "n", "x", "y")
    # WHERE's AND stays inside the parentheses; outside it joins conditions
    e = parse("count(l WHERE a = 1 AND b = 2) > 1 OR count(l) > 2 AND count(l) > 3")
    assert isinstance(e, OrExpr) and len(e.children[0].where.terms) == 2
    assert isinstance(e.children[1], AndExpr)


@pytest.mark.parametrize("text", [
    EXAMPLE.replace("10min", "600").replace("30min ± 5min", "1800 ± 300"),
    "count(location WHERE kind = 'laptop' AND dwell > 600) > capacity",
    "count(room) > 3 OR sum_fare(room WHERE kind != \"o'hare\") > 2.5*budget ± 0.25",
    "(count(l) > 1 OR count(l WHERE t <= -3) > 2) AND avg_x(l) > 0.001",
    "count(l) > 1 AND (count(l) > 2 AND count(l WHERE k = '') > 3)",
])
def test_unparse_is_canonical_and_round_trips(text):
    e = parse(text)
    assert unparse(e) == text
    assert parse(unparse(e)) == e


@pytest.mark.parametrize("text", [
    EXAMPLE,
    "COUNT(location where kind=='laptop' and dwell>=.5h) > 50% +- 1e-1",
    "count(l) > capacity*2 or (count(l WHERE a != 'b') > 3 and avg_d(l) > 2min)",
])
def test_non_canonical_text_round_trips_to_the_same_ast(text):
    e = parse(text)
    assert parse(unparse(e)) == e
    assert unparse(parse(unparse(e))) == unparse(e)


@pytest.mark.parametrize(("text", "match"), [
    ("count(location WHERE) > 1", "column 21: expected a record field"),
    ("count(location WHERE kind) > 1", "column 26: expected a comparison = != <"),
    ("count(location WHERE kind = laptop) > 1",
     "column 29: expected a number or a quoted text \\(write 'laptop' in quotes\\)"),
    ("count(location WHERE kind = 'laptop) > 1", "column 29: quoted text without its closing"),
    ("count(location WHERE kind < 'laptop') > 1", "column 27: text can only be compared"),
    ("count(location WHERE a = 1 OR b = 2) > 1", "column 28: expected '\\)' or AND \\(OR is"),
    ("count(location WHERE dwell > 10min AND) > 1", "column 39: expected a record field"),
    ("count(location WHERE dwell > -) > 1", "column 31: expected a number or a quoted"),
    ("count(location WHERE dwell > 10min > 1", "column 36: expected '\\)' or AND"),
    ("count(location kind = 'x') > 1", "column 16: expected '\\)' or WHERE"),
    ("count(location) <= 5", "column 17: only '>'"),
    ("count(location) != 5", "column 17: only '>'"),
    ("count(location) > 5 ± 0min", "column 23: the uncertainty width"),  # not the unit's
])
def test_filter_syntax_errors_give_column_and_expectation(text, match):
    with pytest.raises(QuerySyntaxError, match=match):
        parse(text)


# Twelve records over three locations; dwell in seconds.
PRED = np.array([0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2])
KIND = np.array(["laptop", "laptop", "laptop", "phone", "laptop", "phone", "phone",
                 "laptop", "laptop", "laptop", "laptop", "watch"])
DWELL = np.array([3000.0, 2400.0, 200.0, 4000.0, 100.0, 5000.0, 5000.0, 900.0, 700.0,
                  650.0, 2000.0, 60.0])
CAPACITY = np.array([3.0, 2.0, 5.0])


def _sources():
    return {
        "count": RecordCountSource(PRED, 3, {"kind": KIND, "dwell": DWELL}),
        "avg_dwell": RecordSource(DWELL, PRED, 3, 0.0, 4 * 3600.0, n_min=1,
                                  fields={"kind": KIND}),
    }


def test_bound_filtered_leaves_equal_hand_computation():
    tree = bind(EXAMPLE, _sources(), {"capacity": CAPACITY}, default_u={"count": 1.0})
    count_leaf, avg_leaf = leaves(tree)
    laptops = [sum(1 for i in range(12) if PRED[i] == loc and KIND[i] == "laptop")
               for loc in range(3)]
    assert laptops == [3, 1, 4]
    np.testing.assert_array_equal(count_leaf.query.values, laptops)
    np.testing.assert_allclose(count_leaf.query.thresholds, 0.8 * CAPACITY)
    long_stays = [[DWELL[i] for i in range(12) if PRED[i] == loc and DWELL[i] > 600]
                  for loc in range(3)]
    excess = [sum(d - 1800.0 for d in ds) for ds in long_stays]
    np.testing.assert_allclose(avg_leaf.query.values, excess)
    # avg over long stays > 30 min  <=>  excess > 0: location 0 (3133 s), 1 (5000 s) yes;
    # location 2 (mean of 900, 700, 650, 2000 = 1062.5 s) no
    np.testing.assert_array_equal(avg_leaf.query.values > 0, [True, True, False])
    # the sensitivities are the unfiltered ones
    assert count_leaf.query.sensitivity == record_count_query(PRED, 3, 0.0).sensitivity == 1.0
    unfiltered = avg_query(DWELL, PRED, 3, 1800.0, lower=0.0, upper=4 * 3600.0)
    assert avg_leaf.query.sensitivity == unfiltered.sensitivity
    assert (count_leaf.u, avg_leaf.u) == (1.0, 300.0)  # avg width · n_min (= 1)


def test_filters_on_text_field_of_the_avg_source_and_its_own_value_field():
    tree = bind("avg_dwell(location WHERE kind = 'phone' AND dwell < 4500) > 1h ± 1min",
                _sources())
    (leaf,) = leaves(tree)
    np.testing.assert_allclose(leaf.query.values, [4000.0 - 3600.0, 0.0, 0.0])


@pytest.mark.parametrize(("text", "sources", "match"), [
    ("count(location WHERE knd = 'x') > 1 ± 1", None,
     r"filter field must be one of the record fields \['dwell', 'kind'\], not 'knd'"),
    ("count(location WHERE kind > 3) > 1 ± 1", None,
     r"'kind' holds text.*fields: \['dwell', 'kind'\]"),
    ("count(location WHERE dwell = 'long') > 1 ± 1", None, r"'dwell' is numeric"),
    ("avg_dwell(location WHERE floor = 2) > 1 ± 1", None,
     r"record fields \['dwell', 'kind'\], not 'floor'"),
    ("count(location WHERE kind = 'x') > 1 ± 1", {"count": CountSource(np.ones(3))},
     r"filter fields \['kind'\] need per-record data.*RecordCountSource"),
    ("count(location WHERE kind = 'x') > 1 ± 1", {"count": RecordCountSource(PRED, 3)},
     r"record fields \[\], not 'kind'"),
])
def test_filter_binding_errors_are_one_line_and_name_the_fields(text, sources, match):
    with pytest.raises(InvalidParameterError, match=match) as err:
        bind(text, sources or _sources())
    msg = str(err.value)
    assert "\n" not in msg and "(in " in msg


def test_answer_on_filtered_data_equals_true_comparison_without_effective_noise():
    """Tiny widths u = 0.001 → huge ε_j = Δ_j·ln(1/(2β_j))/u_j: noise scale u/ln(1/(2β_j))
    < 1e-3 and shift u, while every filtered value is ≥ 0.2 from its threshold (counts
    are integers vs thresholds ≡ 0.2 mod 0.8·capacity; sums are multiples of 900 s vs
    29250 s), so the answer must equal the true comparison (P[miss] < exp(−200))."""
    rng = np.random.default_rng(7)
    k, per = 30, 20
    pred = np.repeat(np.arange(k), per)
    kind = np.where(rng.random(pred.size) < 0.5, "laptop", "phone")
    dwell = rng.choice([300.0, 900.0, 3600.0], size=pred.size)
    capacity = rng.integers(5, 25, k).astype(float)
    thr = 0.8 * capacity + 0.2  # laptop counts are integers: |count − thr| ≥ 0.2
    sources = {"count": RecordCountSource(pred, k, {"kind": kind}),
               "sum_dwell": RecordSource(dwell, pred, k, 0.0, 3600.0, kind="sum",
                                         fields={"kind": kind})}
    text = ("count(location WHERE kind = 'laptop') > cap ± 0.001 AND "
            "(sum_dwell(location WHERE dwell > 10min) > 29250 ± 0.001 "
            "OR count(location WHERE kind != 'laptop') > 8 ± 0.001)")
    tree = bind(text, sources, {"cap": thr})
    assert isinstance(tree, And) and isinstance(tree.children[1], Or)
    laptops = np.array([np.sum((pred == j) & (kind == "laptop")) for j in range(k)])
    long_sum = np.array([dwell[(pred == j) & (dwell > 600)].sum() for j in range(k)])
    others = per - laptops
    a, b, c = laptops > thr, long_sum > 29250.0, others > 8
    expected = a & (b | c)
    np.testing.assert_array_equal(truth(tree), expected)
    # the data exercise every branch: the AND fails, the OR holds by either side or fails
    assert (~a).any() and (a & b & ~c).any() and (a & ~b & c).any() and (a & ~b & ~c).any()
    # and the filters matter: unfiltered counts/sums would give other answers
    assert ((per > thr) != a).any()
    assert ((np.bincount(pred, np.clip(dwell, 0, 3600), k) > 29250.0) != b).any()
    res = answer(tree, beta=0.05, epsilon_max=1e12, rng=rng)
    assert not res.denied
    np.testing.assert_array_equal(res.positive, truth(tree))


# --- property: unparse is an inverse of parse on every AST -------------------------------
_KEYWORDS = {"AND", "OR", "WHERE"}
_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True).filter(
    lambda n: n.upper() not in _KEYWORDS)
_numbers = st.floats(min_value=0.0, max_value=1e18, allow_nan=False, allow_infinity=False)
_texts = st.text(max_size=8).filter(lambda t: not ("'" in t and '"' in t))
_terms = st.one_of(
    st.builds(Comparison, _names, st.sampled_from(["=", "!=", "<", "<=", ">", ">="]),
              st.floats(min_value=-1e9, max_value=1e9, allow_nan=False)),
    st.builds(Comparison, _names, st.sampled_from(["=", "!="]), _texts),
)
_conditions = st.builds(
    Condition,
    aggregate=st.one_of(st.just("count"),
                        st.from_regex(r"(sum|avg)_[a-z0-9_]{1,6}", fullmatch=True)),
    group_by=st.just("location"),
    factor=_numbers,
    reference=st.none() | _names,
    u=st.none() | _numbers.filter(lambda x: x > 0),
    where=st.none() | st.lists(_terms, min_size=1, max_size=3).map(
        lambda ts: Filter(tuple(ts))),
)
_trees = st.recursive(
    _conditions,
    lambda kids: st.one_of(
        st.lists(kids, min_size=2, max_size=3).map(lambda c: AndExpr(tuple(c))),
        st.lists(kids, min_size=2, max_size=3).map(lambda c: OrExpr(tuple(c)))),
    max_leaves=6,
)


@settings(max_examples=100, deadline=None)
@given(_trees)
def test_property_parse_inverts_unparse(e):
    assert parse(unparse(e)) == e
