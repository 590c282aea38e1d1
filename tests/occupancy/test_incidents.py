"""The incident state machine (occupancy/incidents.py): unit and property tests."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanisms.errors import InvalidParameterError
from occupancy import incidents as inc

T0 = 1_790_000_000 - 1_790_000_000 % 3600  # an hour boundary
TICK = 300


def _d(loc: str, window: str = "tick") -> dict[str, Any]:
    return {"location": loc, "window": window, "capacity": 40, "algorithm": "tslm",
            "beta": 0.05}


def _seq(pattern: str, loc: str = "room", start: int = T0, values: list[float] | None = None
         ) -> list[tuple[int, list[dict[str, Any]], dict[str, float] | None]]:
    """'1' = positive tick decision, 'h' = positive hour decision, '.' = no decision."""
    out = []
    for i, c in enumerate(pattern):
        ds = [_d(loc)] if c == "1" else [_d(loc, "hour")] if c == "h" else []
        v = {loc: values[i]} if values else None
        out.append((start + i * TICK, ds, v))
    return out


def test_one_crowd_opens_updates_and_resolves_once() -> None:
    # positive for 6 ticks with one negative tick in between (MIDE's noise), then quiet
    vals = [41, 45, 44, 50, 48, 47] + [10] * 4
    state, events, records = inc.replay(_seq("111.11....", values=vals), quiet_s=900)
    assert [e["event"] for e in events] == ["open", "update", "update", "resolve"]
    assert len(records) == 1
    (rec,) = records.values()
    assert rec["state"] == "resolved" and rec["opened"] == T0
    assert rec["last_seen"] == T0 + 5 * TICK  # the last positive tick
    assert rec["resolved"] == T0 + 8 * TICK  # 900 s of event time after it
    assert rec["peak"] == 50 and rec["peak_tick"] == T0 + 3 * TICK
    assert rec["decisions"] == {"tick": 5, "hour": 0}
    assert "β = 0.05" in rec["guarantee"] and "per decision" in rec["guarantee"]
    assert state["open"] == {} and events[-1]["incident"]["id"] == rec["id"]
    # every event of the incident has its own key, the same id
    assert len({e["key"] for e in events}) == 4
    assert {e["incident"]["id"] for e in events} == {rec["id"]}


def test_quiet_period_is_configurable_and_separates_episodes() -> None:
    pattern = "11....11"  # 4 quiet ticks = 1200 s between the two crowds
    _, ev_short, rec_short = inc.replay(_seq(pattern), quiet_s=900)
    _, ev_long, rec_long = inc.replay(_seq(pattern), quiet_s=1500)
    assert len(rec_short) == 2 and len(rec_long) == 1
    assert [e["event"] for e in ev_short] == ["open", "resolve", "open"]
    with pytest.raises(InvalidParameterError, match="quiet_s must be"):
        inc.step(None, T0, [], quiet_s=0)


def test_hour_decision_joins_the_episode_it_covers() -> None:
    # crowd at the start of the hour, resolved; the hour's peak decision at its end
    # belongs to the same crowd: no second incident
    pattern = "11......." + "..h"  # 12 ticks = one hour ending with the hour decision
    _, events, records = inc.replay(_seq(pattern), quiet_s=900)
    assert len(records) == 1
    (rec,) = records.values()
    assert rec["decisions"] == {"tick": 2, "hour": 1} and rec["state"] == "resolved"
    assert [e["event"] for e in events] == ["open", "resolve"]
    # an hour decision that no episode covers opens an incident of its own; with no
    # finer evidence it stays open until a whole hour passes without a positive reading
    _, events, records = inc.replay(_seq("...h" + "." * 12), quiet_s=900)
    assert [e["event"] for e in events] == ["open", "resolve"]
    (rec,) = records.values()
    assert rec["opened_by"] == "hour" and rec["decisions"] == {"tick": 0, "hour": 1}
    assert rec["resolved"] == T0 + 3 * TICK + 3600
    _, events, _ = inc.replay(_seq("...h" + "." * 11), quiet_s=900)
    assert [e["event"] for e in events] == ["open"]  # still open 55 min after the reading


def test_hourly_readings_of_one_long_crowd_are_one_open_incident() -> None:
    # device-day alerts: a reading per hour, positive at 10:55 and 11:55, negative at 12:55
    hour = "h" + "." * 11
    _, events, records = inc.replay(_seq(hour + hour + "." * 12), quiet_s=900)
    assert [e["event"] for e in events] == ["open", "resolve"]
    (rec,) = records.values()
    assert rec["decisions"] == {"tick": 0, "hour": 2}
    assert rec["last_seen"] == T0 + 12 * TICK  # the second reading
    assert rec["resolved"] == T0 + 24 * TICK  # the first negative reading
    # a positive reading an hour after the episode resolved is a new episode
    _, events, records = inc.replay(_seq(hour + "." * 12 + hour + "." * 12), quiet_s=900)
    assert [e["event"] for e in events] == ["open", "resolve", "open", "resolve"]
    assert len(records) == 2


def test_locations_are_independent_and_ids_deterministic() -> None:
    seq = [(T0, [_d("a"), _d("b")], None), (T0 + TICK, [_d("a")], None)]
    seq += [(T0 + k * TICK, [], None) for k in range(2, 8)]
    _, events, records = inc.replay(seq, quiet_s=900)
    by_loc = {r["location"]: r for r in records.values()}
    assert set(by_loc) == {"a", "b"}
    assert by_loc["a"]["id"] == inc.incident_id("a", T0) != inc.incident_id("b", T0)
    assert by_loc["b"]["resolved"] == T0 + 3 * TICK
    assert by_loc["a"]["resolved"] == T0 + 4 * TICK


def test_step_does_not_modify_its_input_and_state_is_json() -> None:
    s1 = inc.step(None, T0, [_d("a")]).state
    frozen = json.dumps(s1, sort_keys=True)
    inc.step(s1, T0 + TICK, [], quiet_s=1)
    assert json.dumps(s1, sort_keys=True) == frozen
    with pytest.raises(InvalidParameterError, match="window"):
        inc.step(None, T0, [{"location": "a", "window": "day"}])


# -- properties ---------------------------------------------------------------------------
LOCS = ["a", "b", "c"]
tick_decisions = st.lists(
    st.tuples(st.sampled_from(LOCS), st.sampled_from(["tick", "hour"])), max_size=4)
sequences = st.lists(
    st.tuples(tick_decisions,
              st.dictionaries(st.sampled_from(LOCS), st.floats(-5, 100), max_size=3)),
    min_size=1, max_size=40)


def _as_seq(raw: list[Any]) -> list[Any]:
    return [(T0 + i * TICK, [_d(loc, w) for loc, w in ds], vals)
            for i, (ds, vals) in enumerate(raw)]


@settings(max_examples=150, deadline=None)
@given(raw=sequences, cut=st.integers(0, 40), quiet=st.sampled_from([300, 900, 1800]))
def test_replay_is_deterministic_and_resumable(raw: list[Any], cut: int, quiet: int) -> None:
    seq = _as_seq(raw)
    first = inc.replay(seq, quiet_s=quiet)
    assert inc.replay(seq, quiet_s=quiet) == first
    # resuming from the JSON state at any cut (a writer restarted from Redis) is the same
    cut = min(cut, len(seq))
    s_mid, ev_a, rec_a = inc.replay(seq[:cut], quiet_s=quiet)
    s_end, ev_b, rec_b = inc.replay(seq[cut:], json.loads(json.dumps(s_mid)), quiet_s=quiet)
    assert (s_end, ev_a + ev_b, {**rec_a, **rec_b}) == first


@settings(max_examples=150, deadline=None)
@given(raw=sequences, quiet=st.sampled_from([300, 900, 1800]))
def test_lifecycle_invariants(raw: list[Any], quiet: int) -> None:
    seq = _as_seq(raw)
    state, events, records = inc.replay(seq, quiet_s=quiet)
    per: dict[str, list[str]] = {}
    for e in events:
        per.setdefault(e["incident"]["id"], []).append(e["event"])
    for kinds in per.values():  # open, then updates, then at most one resolve, last
        assert kinds[0] == "open" and kinds.count("open") == 1
        assert kinds.count("resolve") <= 1 and "resolve" not in kinds[:-1]
    assert len({e["key"] for e in events}) == len(events)
    # at most one open incident per location, and the state lists exactly those
    open_recs = [r for r in records.values() if r["state"] == "open"]
    assert sorted(r["location"] for r in open_recs) == sorted(state["open"])
    for r in records.values():
        assert r["opened"] <= r["last_seen"]
        if r["state"] == "resolved":
            assert r["resolved"] - r["last_seen"] >= quiet


@settings(max_examples=150, deadline=None)
@given(gaps=st.lists(st.integers(1, 6), max_size=30), quiet_ticks=st.integers(1, 6),
       offset=st.integers(0, 11))
def test_one_crowd_is_one_incident(gaps: list[int], quiet_ticks: int, offset: int) -> None:
    """A crowd: positive tick decisions whose misses (negative decisions in between) are
    shorter than the quiet period, plus a positive hour decision for every hour the crowd
    overlaps → exactly one incident, fed by every decision."""
    quiet = quiet_ticks * TICK
    positive = [offset]
    for g in gaps:
        positive.append(positive[-1] + min(g, quiet_ticks))
    last = T0 + positive[-1] * TICK
    seq, n_hour = [], 0
    for k in range(positive[-1] + quiet_ticks + 14):
        t = T0 + k * TICK
        ds = [_d("room")] if k in positive else []
        if (t + TICK) % 3600 == 0 and t >= T0 + offset * TICK and t - 3600 < last:
            ds.append(_d("room", "hour"))
            n_hour += 1
        seq.append((t, ds, None))
    _, events, records = inc.replay(seq, quiet_s=quiet)
    assert len(records) == 1, [e["event"] for e in events]
    (rec,) = records.values()
    assert rec["decisions"] == {"tick": len(positive), "hour": n_hour}
    assert rec["state"] == "resolved" and rec["last_seen"] == last
