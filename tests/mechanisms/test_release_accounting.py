"""Privacy accounting (mechanisms.accounting)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanisms.accounting import (
    TICKS_PER_DAY,
    UNIT_OF_PRIVACY,
    Accountant,
    Budget,
    LedgerRecord,
    PredicateLedger,
    compose_parallel,
    compose_predicatewise,
    compose_sequential,
    device_day_epsilon,
    w_event_per_tick,
)
from mechanisms.errors import BudgetExhaustedError, InvalidParameterError

TOL = 1e-9


def _all_nodes(acct: Accountant) -> list[Accountant]:
    out, stack = [], [acct]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(n._children.values())
    return out


spend_ops = st.lists(
    st.tuples(
        st.integers(0, 4),  # which scope
        st.one_of(st.none(), st.integers(0, 6)),  # tick
        st.floats(0, 0.7, allow_nan=False),  # epsilon
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(ops=spend_ops, window=st.one_of(st.none(), st.integers(1, 4)), total=st.floats(0.1, 2))
def test_accountant_never_lets_spending_exceed_any_cap(ops, window, total) -> None:
    root = Accountant(Budget(total), name="building:x", window_ticks=window)
    a = root.scope("mechanism:a", 0.6)
    b = root.scope("mechanism:b", 0.4)
    scopes = [root, a, b, a.scope("component:perturber", 0.8), a.scope("component:grouper", 0.2)]
    granted = 0
    for which, tick, eps in ops:
        node = scopes[which]
        try:
            rec = node.spend(eps, mechanism="m", tick=tick)
        except BudgetExhaustedError as e:
            assert e.requested == pytest.approx(eps) and e.remaining >= 0
            continue
        granted += 1
        assert rec.epsilon == pytest.approx(eps) and rec.scope == node.path
        for n in _all_nodes(root):
            for t in list(range(0, 7)) + [None]:
                assert n.spent(t).epsilon <= n.cap.epsilon + TOL
    assert len(root.records) == granted


def test_exhaustion_error_names_requested_remaining_and_scope() -> None:
    root = Accountant(1.0, name="building:dbh")
    peg = root.scope("mechanism:pegasus", 0.5)
    peg.spend(0.3, mechanism="pegasus", tick=1)
    with pytest.raises(BudgetExhaustedError) as ei:
        peg.spend(0.3, mechanism="pegasus", tick=1)
    e = ei.value
    assert e.requested == pytest.approx(0.3)
    assert e.remaining == pytest.approx(0.2)
    assert e.scope == "building:dbh/mechanism:pegasus"
    assert "0.3" in str(e) and "0.2" in str(e)
    # another tick is disjoint data under event-level privacy: parallel composition
    peg.spend(0.5, mechanism="pegasus", tick=2)
    assert root.spent(1).epsilon == pytest.approx(0.3)
    assert root.spent().epsilon == pytest.approx(0.5)  # worst tick


def test_weights_are_shares_of_the_parent_and_cannot_oversubscribe() -> None:
    root = Accountant(2.0)
    child = root.scope("mechanism:laplace", 0.25)
    assert child.cap.epsilon == pytest.approx(0.5)
    assert root.scope("mechanism:laplace", 0.25) is child
    with pytest.raises(InvalidParameterError):
        root.scope("mechanism:laplace", 0.5)
    with pytest.raises(InvalidParameterError):
        root.scope("mechanism:pegasus", 0.8)
    with pytest.raises(InvalidParameterError):
        root.scope("x", 0.0)


def test_parallel_and_sequential_composition() -> None:
    assert compose_sequential([0.1, Budget(0.2, 1e-6)]) == Budget(0.30000000000000004, 1e-6)
    assert compose_parallel([0.1, 0.4, 0.2]).epsilon == 0.4
    assert compose_parallel([]).epsilon == 0
    root = Accountant(1.0)
    rec = root.spend_parallel([0.2, 0.7, 0.1], mechanism="laplace", tick=3)
    assert rec.composition == "parallel" and rec.epsilon == pytest.approx(0.7)
    assert rec.parts == (0.2, 0.7, 0.1) and rec.n_locations == 3
    assert root.remaining(3).epsilon == pytest.approx(0.3)


def test_w_event_windows() -> None:
    root = Accountant(1.0, window_ticks=3)
    root.spend(0.4, mechanism="m", tick=0)
    root.spend(0.4, mechanism="m", tick=1)
    with pytest.raises(BudgetExhaustedError):
        root.spend(0.4, mechanism="m", tick=2)  # window {0,1,2} would hold 1.2
    root.spend(0.4, mechanism="m", tick=3)  # window {1,2,3} holds 0.8
    with pytest.raises(BudgetExhaustedError):
        root.spend(0.3, mechanism="m", tick=2)  # would break windows ending at 2 and 3
    assert w_event_per_tick(1.0, 4) == 0.25


def test_ledger_record_is_machine_readable() -> None:
    root = Accountant(1.0, name="building:dbh")
    rec = root.scope("mechanism:pegasus", 1.0).spend(
        0.5, mechanism="pegasus", tick=7, parts=(0.4, 0.1), n_locations=64
    )
    d = json.loads(rec.to_json())
    assert d["unit"] == UNIT_OF_PRIVACY == "event-level (device, tick)"
    assert d["mechanism"] == "pegasus" and d["tick"] == 7 and d["epsilon"] == 0.5
    assert d["scope"] == "building:dbh/mechanism:pegasus"
    assert d["release_id"] == "building:dbh/mechanism:pegasus|pegasus|7"
    assert LedgerRecord.from_dict(d) == rec


def test_device_day_report_is_honest() -> None:
    root = Accountant(1.0, name="building:dbh")
    for t in range(TICKS_PER_DAY):
        root.spend(0.1, mechanism="laplace", tick=t)
    rep = root.device_day_report(0)
    assert rep.event_level_epsilon == pytest.approx(0.1)
    assert rep.device_day_epsilon == pytest.approx(28.8)
    assert rep.ticks_with_releases == 288
    assert "28.8" in rep.statement and UNIT_OF_PRIVACY in rep.statement
    assert device_day_epsilon(0.1) == pytest.approx(28.8)
    w = Accountant(1.0, window_ticks=12)
    for t in range(24):
        w.spend(w_event_per_tick(1.0, 12), mechanism="pegasus", tick=t)
    rep = w.device_day_report(0)
    assert rep.w_event_epsilon == pytest.approx(1.0)
    assert rep.device_day_epsilon == pytest.approx(2.0)


def test_forget_before_bounds_memory_but_keeps_the_window() -> None:
    root = Accountant(1.0, window_ticks=2)
    for t in range(10):
        root.spend(0.5, mechanism="m", tick=t)
    root.forget_before(9)
    assert set(root._per_tick) == {8, 9}
    with pytest.raises(BudgetExhaustedError):
        root.spend(0.6, mechanism="m", tick=9)


def test_predicate_ledger_thesis_example_and_cap() -> None:
    # thesis §5.2.1: M1 = (0.1, 0.5), M2 = (0.5, 0.1) → ex-post 0.6, not 1.0
    led = PredicateLedger(["room1", "room2"], epsilon_max=1.0, scope="mide")
    # M1, M2 have fixed per-predicate ε (data-independent): ex_post=False
    led.record([0.1, 0.5], mechanism="m1", tick=0, ex_post=False)
    e = led.record({"room1": 0.5, "room2": 0.1}, mechanism="m2", tick=0, ex_post=False)
    assert led.ex_post_epsilon(0) == pytest.approx(0.6)
    assert e.internal and not e.ex_post and e.max_epsilon == pytest.approx(0.5)
    assert json.loads(e.to_json())["epsilons"] == [0.5, 0.1]
    led.record([0.9, 0.9], mechanism="m3", tick=1, ex_post=False)  # another tick: disjoint
    assert led.ex_post_epsilon() == pytest.approx(0.9)
    with pytest.raises(BudgetExhaustedError) as ei:
        led.record([0.0, 0.5], mechanism="m4", tick=0, ex_post=False)
    assert ei.value.scope == "mide:room2"
    with pytest.raises(BudgetExhaustedError):  # tick-less spending counts at every tick
        led.record([0.2, 0.0], mechanism="m5", ex_post=False)
    led.record([0.05, 0.0], mechanism="m6", ex_post=False)
    assert led.ex_post_epsilon(1) == pytest.approx(0.95)
    with pytest.raises(InvalidParameterError):
        led.record({"nowhere": 0.1}, mechanism="m")
    with pytest.raises(InvalidParameterError):
        led.record([0.1], mechanism="m")


def test_capped_predicate_ledger_refuses_on_the_worst_case_never_on_ex_post() -> None:
    # a refusal that depended on the data-dependent ex-post vector would leak it
    def ledger():
        return PredicateLedger(["a", "b"], epsilon_max=1.0, scope="mide")

    with pytest.raises(InvalidParameterError, match="worst_case"):
        ledger().record([0.1, 0.2], mechanism="mide:x", tick=0)  # ex-post, no worst case
    with pytest.raises(InvalidParameterError, match="worst_case"):
        ledger().record([0.1, 0.7], mechanism="mide:x", tick=0, worst_case=0.6)
    # two data sets: tiny ex-post vs the full worst case — the same admission decisions
    for ex_post in ([1e-5, 1e-5], [0.6, 0.6]):
        led = ledger()
        led.record(ex_post, mechanism="mide:x", tick=0, worst_case=0.6)
        assert list(led.epsilons(0)) == pytest.approx(ex_post)  # ledger keeps ex-post
        with pytest.raises(BudgetExhaustedError):
            led.record(ex_post, mechanism="mide:y", tick=0, worst_case=0.6)
        led.record(ex_post, mechanism="mide:z", tick=1, worst_case=[0.6, 0.6])
        led.record(ex_post, mechanism="mide:w", tick=2, worst_case=np.array(0.6))  # 0-d
    # a partition (e.g. floors) on a capped ledger: the worst case passes through
    led = ledger()
    led.record_partition({"floor": (["a", "b"], 0.3)}, mechanism="floor", tick=0,
                         worst_case=0.5)
    with pytest.raises(BudgetExhaustedError):
        led.record_partition({"floor": (["a", "b"], 0.1)}, mechanism="floor", tick=0,
                             worst_case=0.6)
    with pytest.raises(InvalidParameterError, match="worst_case"):
        led.record_partition({"floor": (["a"], 0.1)}, mechanism="floor", tick=1)


def test_predicate_partition_and_theorem_5_2_composition() -> None:
    led = PredicateLedger(["a", "b", "c"])
    led.record_partition({"floor1": (["a", "b"], 0.2), "floor2": (["c"], 0.4)},
                         mechanism="floor-level", tick=0)
    led.record([0.1, 0.3, 0.0], mechanism="room-level", tick=0)
    assert list(led.epsilons(0)) == pytest.approx([0.3, 0.5, 0.4])
    with pytest.raises(InvalidParameterError):
        led.record_partition({"x": (["a"], 0.1), "y": (["a"], 0.1)}, mechanism="bad")
    theta = compose_predicatewise(
        {frozenset("ab"): 0.1, frozenset("c"): 0.5},
        {frozenset("a"): 0.5, frozenset("bc"): 0.1},
    )
    assert theta == {
        frozenset("a"): pytest.approx(0.6),
        frozenset("b"): pytest.approx(0.2),
        frozenset("c"): pytest.approx(0.6),
    }
    # atoms only one side covers keep that side's ε
    assert compose_predicatewise({frozenset("ab"): 0.3}, {frozenset("a"): 0.2}) == {
        frozenset("a"): pytest.approx(0.5),
        frozenset("b"): pytest.approx(0.3),
    }


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf"), "x"])
def test_budget_rejects_bad_values(bad: object) -> None:
    with pytest.raises(InvalidParameterError):
        Budget(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError):
        Budget(1.0, 1.5)
