"""Filtered aggregates (thesis §6.1, D^f_λ): hand-computed values, unchanged sensitivity."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanisms.errors import InvalidParameterError
from mechanisms.mide.aggregates import (
    Comparison,
    Filter,
    avg_query,
    count_query,
    filter_mask,
    record_count_query,
    sum_query,
)

# Ten device records over three locations (predicates 0..2); dwell in seconds.
PRED = np.array([0, 0, 0, 1, 1, 1, 1, 2, 2, 0])
KIND = np.array(["laptop", "phone", "laptop", "laptop", "laptop", "phone", "watch",
                 "phone", "phone", "laptop"])
DWELL = np.array([900.0, 120.0, 300.0, 3600.0, 700.0, 60.0, 5000.0, 650.0, 30.0, 1200.0])
FIELDS = {"kind": KIND, "dwell": DWELL}
LAPTOP = Filter((Comparison("kind", "=", "laptop"),))
LONG = Filter((Comparison("dwell", ">", 600.0),))


def _by_hand(keep, agg):
    """Per-location aggregate over the records kept by ``keep(i)``, with plain loops."""
    out = []
    for loc in range(3):
        rows = [i for i in range(PRED.size) if PRED[i] == loc and keep(i)]
        out.append(agg(rows))
    return np.array(out, dtype=float)


def test_filtered_count_matches_hand_count():
    q = record_count_query(PRED, 3, 1.0, where=LAPTOP, fields=FIELDS)
    np.testing.assert_array_equal(q.values, [3.0, 2.0, 0.0])
    np.testing.assert_array_equal(q.values, _by_hand(lambda i: KIND[i] == "laptop", len))
    both = Filter((Comparison("kind", "!=", "phone"), Comparison("dwell", ">=", 700.0)))
    q2 = record_count_query(PRED, 3, 1.0, where=both, fields=FIELDS)
    np.testing.assert_array_equal(
        q2.values, _by_hand(lambda i: KIND[i] != "phone" and DWELL[i] >= 700, len))
    np.testing.assert_array_equal(record_count_query(PRED, 3, 0.0).values, [4.0, 4.0, 2.0])


@pytest.mark.parametrize("op", ["=", "!=", "<", "<=", ">", ">="])
def test_every_comparison_operator_on_a_number(op):
    py = {"=": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
          "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}[op]
    q = record_count_query(PRED, 3, 0.0, where=Filter((Comparison("dwell", op, 700.0),)),
                           fields=FIELDS)
    np.testing.assert_array_equal(q.values, _by_hand(lambda i: py(DWELL[i], 700.0), len))


def test_filtered_sum_and_avg_filter_before_clipping():
    # the filter reads the raw dwell (> 600 s) and the kept values are then clipped to 1000
    s = sum_query(DWELL, PRED, 3, 0.0, lower=0.0, upper=1000.0, where=LONG, fields=FIELDS)
    np.testing.assert_allclose(
        s.values, _by_hand(lambda i: DWELL[i] > 600, lambda r: sum(min(DWELL[i], 1000.0)
                                                                  for i in r)))
    c = np.array([800.0, 900.0, 100.0])
    a = avg_query(DWELL, PRED, 3, c, lower=0.0, upper=4000.0, where=LAPTOP, fields=FIELDS)
    excess = [sum(min(DWELL[i], 4000.0) - c[loc] for i in range(PRED.size)
                  if PRED[i] == loc and KIND[i] == "laptop") for loc in range(3)]
    np.testing.assert_allclose(a.values, excess)
    np.testing.assert_array_equal(a.thresholds, 0.0)
    # location 2 has no laptop: excess 0, not over its threshold
    assert a.values[2] == 0.0


def test_mask_and_filter_agree_with_pre_subsetting():
    m = KIND == "laptop"
    by_filter = sum_query(DWELL, PRED, 3, 0.0, lower=0.0, upper=2000.0, where=LAPTOP,
                          fields=FIELDS)
    by_mask = sum_query(DWELL, PRED, 3, 0.0, lower=0.0, upper=2000.0, where=m)
    subset = sum_query(DWELL[m], PRED[m], 3, 0.0, lower=0.0, upper=2000.0)
    np.testing.assert_array_equal(by_filter.values, by_mask.values)
    np.testing.assert_array_equal(by_filter.values, subset.values)


@pytest.mark.parametrize("where", [None, LAPTOP, LONG])
def test_sensitivity_unchanged_and_bounds_every_neighbour(where):
    """Δ is the unfiltered Δ, and removing any one record moves the vector by ≤ Δ (L1).

    A Filter is a per-record rule, so the neighbour data set is filtered by the same rule.
    """
    c = np.array([800.0, 900.0, 100.0])
    builders = {
        "count": lambda keep: record_count_query(PRED[keep], 3, 1.0, where=where,
                                                 fields=_fields(keep)),
        "sum": lambda keep: sum_query(DWELL[keep], PRED[keep], 3, 1.0, lower=0.0,
                                      upper=1000.0, where=where,
                                      fields=_fields(keep)),
        "avg": lambda keep: avg_query(DWELL[keep], PRED[keep], 3, c, lower=0.0, upper=4000.0,
                                      where=where, fields=_fields(keep)),
    }
    unfiltered_delta = {"count": 1.0, "sum": 1000.0, "avg": max(4000.0 - 100.0, 900.0)}
    everyone = np.ones(PRED.size, dtype=bool)
    for kind, build in builders.items():
        full = build(everyone)
        assert full.sensitivity == unfiltered_delta[kind]
        for i in range(PRED.size):
            keep = everyone.copy()
            keep[i] = False
            assert np.abs(full.values - build(keep).values).sum() <= full.sensitivity + 1e-9


def _fields(keep):
    return {k: v[keep] for k, v in FIELDS.items()}


def test_count_query_over_counts_is_unchanged():
    q = count_query([1, 2], 1)
    assert q.sensitivity == 1.0 and q.kind == "count"
    assert record_count_query(PRED, 3, 1.0, max_contributions=3).sensitivity == 3.0


@pytest.mark.parametrize(("where", "fields", "match"), [
    (Filter((Comparison("knd", "=", "laptop"),)), FIELDS,
     r"record fields \['dwell', 'kind'\], not 'knd'"),
    (LAPTOP, None, r"record fields \[\], not 'kind'"),
    (Filter((Comparison("kind", ">", 3.0),)), FIELDS, "'kind' holds text.*fields: "),
    (Filter((Comparison("dwell", "=", "long"),)), FIELDS, "'dwell' is numeric.*fields: "),
    (LAPTOP, {"kind": KIND[:4]}, "one entry per record \\(10\\), not 4"),
    (np.ones(10), None, "boolean mask of shape \\(10,\\)"),
    (np.ones(9, dtype=bool), None, "boolean mask of shape \\(10,\\)"),
])
def test_filter_binding_errors_are_one_line(where, fields, match):
    with pytest.raises(InvalidParameterError, match=match) as err:
        filter_mask(where, 10, fields)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(("args", "match"), [
    (("", "=", 1.0), "non-empty name"),
    (("kind", "~", 1.0), "operator must be one of"),
    (("kind", "<", "laptop"), "must be = or !="),
    (("dwell", ">", float("nan")), "finite number"),
    (("dwell", ">", True), "finite number"),
])
def test_comparison_validates_itself(args, match):
    with pytest.raises(InvalidParameterError, match=match):
        Comparison(*args)
    with pytest.raises(InvalidParameterError, match="non-empty tuple"):
        Filter(())


# --- property: filtered = aggregate of the pre-filtered records; every neighbour ≤ Δ ----
_record_sets = st.integers(1, 25).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 3), min_size=n, max_size=n),
    st.lists(st.sampled_from(["laptop", "phone", "watch"]), min_size=n, max_size=n),
    st.lists(st.floats(-100.0, 5000.0, allow_nan=False), min_size=n, max_size=n)))
_filters = st.lists(st.one_of(
    st.builds(Comparison, st.just("kind"), st.sampled_from(["=", "!="]),
              st.sampled_from(["laptop", "phone", "tablet"])),
    st.builds(Comparison, st.just("dwell"), st.sampled_from(["=", "!=", "<", "<=", ">", ">="]),
              st.floats(-100.0, 5000.0, allow_nan=False))), min_size=1, max_size=3).map(
    lambda ts: Filter(tuple(ts)))


@settings(max_examples=60, deadline=None)
@given(_record_sets, _filters, st.floats(0.0, 3000.0))
def test_property_filter_equals_subset_and_neighbours_move_at_most_delta(records, where, c):
    pred, kind, dwell = (np.array(a) for a in records)
    fields = {"kind": kind, "dwell": dwell}
    keep = filter_mask(where, pred.size, fields)
    builders = [
        lambda p, f, w: record_count_query(p, 4, 1.0, where=w, fields=f),
        lambda p, f, w: sum_query(f["dwell"], p, 4, c, lower=0.0, upper=1000.0, where=w,
                                  fields=f),
        lambda p, f, w: avg_query(f["dwell"], p, 4, c, lower=-50.0, upper=4000.0, where=w,
                                  fields=f),
    ]
    for build in builders:
        q = build(pred, fields, where)
        sub = build(pred[keep], {k: v[keep] for k, v in fields.items()}, None)
        np.testing.assert_allclose(q.values, sub.values, atol=1e-6)
        assert q.sensitivity == build(pred, fields, None).sensitivity
        for i in range(pred.size):
            rest = np.arange(pred.size) != i
            nb = build(pred[rest], {k: v[rest] for k, v in fields.items()}, where)
            assert np.abs(q.values - nb.values).sum() <= q.sensitivity * (1 + 1e-12) + 1e-6


def test_numeric_field_with_object_dtype_compares_as_numbers():
    fields = {"kind": KIND, "dwell": DWELL.astype(object)}  # e.g. from a JSON/pandas column
    q = record_count_query(PRED, 3, 1.0, where=LONG, fields=fields)
    np.testing.assert_array_equal(q.values, _by_hand(lambda i: DWELL[i] > 600, len))
