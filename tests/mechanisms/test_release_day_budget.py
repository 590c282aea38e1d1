"""Device-day budget (mechanisms.accounting.DayBudget): zCDP/RDP via dp-accounting."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanisms.accounting import DayBudget, epsilon_to_zcdp, zcdp_to_epsilon
from mechanisms.errors import BudgetExhaustedError, InvalidParameterError

SHARES = {"heatmap": 0.85, "alerts": 0.10, "histogram": 0.05}


def test_conversion_is_tighter_than_bun_steinke_and_inverts() -> None:
    for rho in (0.05, 0.25, 1.0):
        eps = zcdp_to_epsilon(rho, 1e-6)
        bs16 = rho + 2 * math.sqrt(rho * math.log(1e6))  # Bun & Steinke 2016 Prop. 1.3
        assert rho < eps < bs16
    rho = epsilon_to_zcdp(4.0, 1e-6)
    assert zcdp_to_epsilon(rho, 1e-6) <= 4.0
    assert zcdp_to_epsilon(rho * 1.001, 1e-6) > 4.0


@settings(max_examples=60, deadline=None)
@given(
    ops=st.lists(
        st.tuples(
            st.integers(0, 2),  # day
            st.sampled_from(sorted(SHARES)),
            st.one_of(
                st.floats(1e-4, 0.2).map(lambda r: ("rho", r)),
                st.floats(0.01, 1.5).map(lambda e: ("laplace", e)),
            ),
        ),
        max_size=40,
    ),
    eps_day=st.floats(0.5, 6.0),
)
def test_day_spend_never_exceeds_epsilon_day(ops, eps_day) -> None:
    b = DayBudget(eps_day, 1e-6, shares=SHARES)
    for day, share, (kind, value) in ops:
        before = b.spent(day).epsilon
        try:
            if kind == "rho":
                b.charge(day=day, share=share, mechanism="t", rho=value)
            else:
                b.charge(day=day, share=share, mechanism="t", laplace_epsilon=value)
        except BudgetExhaustedError as err:
            assert b.spent(day).epsilon == before  # nothing charged on refusal
            assert err.remaining == pytest.approx(max(eps_day - before, 0.0))
        assert b.spent(day).epsilon <= eps_day
        for s in SHARES:
            assert b.spent_rho(day, s) <= b.share_rho(s) * (1 + 1e-9) + 1e-12


def test_refusal_names_requested_remaining_and_share() -> None:
    b = DayBudget(4.0, 1e-6, shares=SHARES)
    for _ in range(24):
        b.charge(day=3, share="heatmap", mechanism="hourly", rho=b.share_rho("heatmap") / 24)
    with pytest.raises(BudgetExhaustedError) as e:
        b.charge(day=3, share="heatmap", mechanism="hourly", rho=1e-3)
    assert e.value.requested > 0
    assert e.value.remaining == pytest.approx(4.0 - b.spent(3).epsilon)
    assert "day:3/heatmap" in e.value.scope
    # another day is another unit
    b.charge(day=4, share="heatmap", mechanism="hourly", rho=1e-3)
    assert len(b.records) == 25
    assert b.records[0].unit.startswith("device-day")


def test_whole_day_fits_exactly_and_plan_check() -> None:
    b = DayBudget(4.0, 1e-6, shares=SHARES)
    for s in SHARES:
        for _ in range(96):
            b.charge(day=0, share=s, mechanism=s, rho=b.share_rho(s) / 96)
    assert 3.99 < b.spent(0).epsilon <= 4.0
    ok = b.check_plan({"heatmap": ("heatmap", 0.2), "alerts": ("alerts", 0.02)})
    assert ok.epsilon < 4.0
    with pytest.raises(BudgetExhaustedError, match="overshoot"):
        b.check_plan({"heatmap": ("heatmap", 0.3), "live": ("heatmap", 0.01)})


@pytest.mark.parametrize(
    ("kw", "msg"),
    [({"epsilon_day": 0.0, "delta": 1e-6}, "epsilon_day"),
     ({"epsilon_day": 1.0, "delta": 0.0}, "delta"),
     ({"epsilon_day": 1.0, "delta": 1e-6, "shares": {"a": 0.7, "b": 0.7}}, "shares")],
)
def test_invalid_day_budget(kw, msg) -> None:
    with pytest.raises(InvalidParameterError, match=msg):
        DayBudget(**kw)


def test_charges_are_exactly_once_and_restorable() -> None:
    b = DayBudget(4.0, 1e-6, shares=SHARES)
    r1 = b.charge(day=2, share="heatmap", mechanism="device-day-heatmap", rho=0.1, tick=576)
    r2 = b.charge(day=2, share="heatmap", mechanism="device-day-heatmap", rho=0.1, tick=576)
    assert r1 is r2
    assert b.spent_rho(2) == pytest.approx(0.1)
    b.charge(day=2, share="histogram", mechanism="hist", laplace_epsilon=0.1, tick=600)
    fresh = DayBudget(4.0, 1e-6, shares=SHARES)
    fresh.restore(b.records)
    fresh.restore(b.records)  # twice: still once
    assert fresh.spent(2).epsilon == pytest.approx(b.spent(2).epsilon)
    assert [r.to_dict() for r in fresh.records] == [r.to_dict() for r in b.records]
