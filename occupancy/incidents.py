"""Over-capacity incidents: one per (location, episode), from MIDE's decisions.

MIDE (docs/MECHANISMS.md "MIDE") answers, per tick and per hour, "is this location
over its fire-code capacity?"; each positive answer used to be its own alert, so one
crowd produced one alert per tick plus one per hour (issue 18: 21 alerts for one crowd
in a classroom). This module folds the decision sequence into *incidents*, as facility
products do (open → update → resolve):

* a positive **tick** decision at a location without an open incident **opens** one
  (``opened = last_seen = tick``); further positive tick decisions move ``last_seen``;
* the incident's **peak** is the largest *released* value of the location seen while it
  is open (post-processing of a DP release: no budget, no true count); a new peak is an
  **update** event;
* an incident **resolves** at the first tick at least ``quiet_s`` seconds of event time
  after its ``last_seen`` without a positive tick decision (default 15 min);
* a positive **hour** decision (the peak of the hour ending at the tick,
  ``[tick − hour_s, tick]``) is attached to the location's open incident, or to its last
  resolved one when that incident was seen within the hour — the same crowd, counted
  once; only an hour decision no incident covers opens a new incident. Hour decisions
  never move the ``last_seen`` of an incident that tick decisions feed (they say "some
  time in the hour", not "now");
* an incident fed by **hour decisions only** (the device-day alerts, which read each
  room once an hour) has no finer evidence: each positive hour decision moves its
  ``last_seen``, and it resolves only when a whole ``hour_s`` passes without one — at the
  next hourly reading that is negative. With the tick rule a two-hour crowd showed as
  resolved 15 minutes after its first reading and its second reading was filed in the
  resolved incident (found watching the demo).

The β-FNR guarantee stays a statement *per decision* (each over-capacity answer is
missed with probability at most β, docs/MECHANISMS.md "MIDE"); an incident records how
many decisions of each window fed it and says so in its ``guarantee`` field; it makes no
claim about episodes.

Pure: :func:`step` is a function of (state, tick, decisions, released values) only, and
incident ids and idempotency keys are hashes of (location, opening tick) and (id, event,
version), so replaying the same decision sequence (replay-safe noise makes it the same)
gives the same incidents, events and keys. The state is a JSON-able dict the one writer
(readmodel/writer.py) keeps in Redis next to the incidents.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mechanisms.errors import InvalidParameterError

#: Default quiet period: 15 min of event time without a positive tick decision.
QUIET_S = 900.0
#: Span an hourly decision covers, ending at its tick.
HOUR_S = 3600.0
OPEN, RESOLVED = "open", "resolved"
EVENTS = ("open", "update", "resolve")


def empty_state() -> dict[str, Any]:
    """The state before any tick: no open incident, nothing recently resolved."""
    return {"now": None, "open": {}, "recent": {}}


def incident_id(location: str, opened: float) -> str:
    """Deterministic id of the incident of ``location`` opened at tick ``opened``."""
    digest = hashlib.sha256(f"{location}|{_num(opened)}".encode()).hexdigest()
    return "inc-" + digest[:20]


def event_key(inc_id: str, event: str, version: int) -> str:
    """Idempotency key of one lifecycle event (the same on every replay and retry)."""
    return "incident-" + hashlib.sha256(f"{inc_id}|{event}|{version}".encode()).hexdigest()[:32]


def guarantee_text(beta: Any) -> str:
    """The per-decision β-FNR statement an incident carries."""
    return (f"per decision: an over-capacity tick or hour is missed with probability "
            f"at most β = {beta} (β-FNR); no claim about whole episodes")


def _num(x: float) -> int | float:
    x = float(x)
    return int(x) if x.is_integer() else x


@dataclass
class Step:
    """What one tick did: the new state, the lifecycle events, the records to store.

    Attributes:
        state: the state after the tick (a new dict; the input is not modified).
        events: ``{"event", "key", "incident"}`` dicts, in order (open / update / resolve).
        records: every incident whose record changed at this tick (id → record), also
            the silent changes (``last_seen``, an hour decision counted).
    """

    state: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    records: dict[str, dict[str, Any]] = field(default_factory=dict)


def _check(quiet_s: float, hour_s: float) -> None:
    for name, v in (("quiet_s", quiet_s), ("hour_s", hour_s)):
        if not isinstance(v, (int, float)) or not v > 0 or v == float("inf"):
            raise InvalidParameterError(f"{name} must be a positive finite number, not {v!r}")


def step(state: Mapping[str, Any] | None, tick: float, decisions: Iterable[Mapping[str, Any]],
         values: Mapping[str, float] | None = None, *, quiet_s: float = QUIET_S,
         hour_s: float = HOUR_S, mechanism: str | None = None) -> Step:
    """Fold one tick's positive MIDE decisions into the incidents.

    Args:
        state: the state after the previous tick (:func:`empty_state` at first).
        tick: the tick (event time, epoch s).
        decisions: the tick's positive decisions, alert dicts with ``location``,
            ``window`` (``"tick"`` or ``"hour"``; missing means ``"tick"``),
            ``capacity``, ``algorithm`` and ``beta``.
        values: released values of this tick by location (for the peak), or None.
        quiet_s: event time without a positive tick decision after which an incident
            resolves.
        hour_s: the span an hour decision covers, ending at its tick.
        mechanism: name of the release ``values`` come from (stated with the peak).

    Returns:
        A :class:`Step`.
    """
    _check(quiet_s, hour_s)
    st = copy.deepcopy(dict(state)) if state else empty_state()
    st.setdefault("open", {})
    st.setdefault("recent", {})
    t = float(tick)
    now = t if st.get("now") is None else max(float(st["now"]), t)
    st["now"] = _num(now)
    out = Step(st)
    values = values or {}
    by_window: dict[str, dict[str, Mapping[str, Any]]] = {"tick": {}, "hour": {}}
    for d in decisions:
        w = str(d.get("window") or "tick")
        if w not in by_window:
            raise InvalidParameterError(f"decision window must be 'tick' or 'hour', not {w!r}")
        by_window[w].setdefault(str(d["location"]), d)

    def emit(inc: dict[str, Any], event: str) -> None:
        inc["version"] = int(inc.get("version", 0)) + 1
        out.events.append({"event": event, "key": event_key(inc["id"], event, inc["version"]),
                           "incident": dict(inc, decisions=dict(inc["decisions"]))})

    def touch(inc: dict[str, Any]) -> None:
        out.records[inc["id"]] = inc

    # 1. positive tick decisions: open or extend
    for loc in sorted(by_window["tick"]):
        d = by_window["tick"][loc]
        inc = st["open"].get(loc)
        if inc is None:
            recent = st["recent"].get(loc)
            if recent is not None and t <= float(recent["last_seen"]) + quiet_s \
                    and t >= float(recent["opened"]):
                # a late tick inside an episode already resolved: count it there
                recent["decisions"]["tick"] += 1
                touch(recent)
                continue
            inc = _new(loc, t, d, mechanism)
            st["open"][loc] = inc
            st["recent"].pop(loc, None)
            _peak(inc, values.get(loc), t)
            emit(inc, "open")
            touch(inc)
            continue
        inc["decisions"]["tick"] += 1
        if t > float(inc["last_seen"]):
            inc["last_seen"] = _num(t)
        touch(inc)
    # 2. hour decisions: attach to the episode they cover, else open
    for loc in sorted(by_window["hour"]):
        d = by_window["hour"][loc]
        inc = st["open"].get(loc)
        if inc is None:
            recent = st["recent"].get(loc)
            if recent is not None and float(recent["last_seen"]) >= t - hour_s:
                recent["decisions"]["hour"] += 1
                touch(recent)
                continue
            inc = _new(loc, t, d, mechanism, window="hour")
            st["open"][loc] = inc
            st["recent"].pop(loc, None)
            _peak(inc, values.get(loc), t)
            emit(inc, "open")
            touch(inc)
            continue
        inc["decisions"]["hour"] += 1
        if _hour_only(inc) and t > float(inc["last_seen"]):
            inc["last_seen"] = _num(t)
        touch(inc)
    # 3. peaks of the incidents still open (those opened now already have theirs)
    opened_now = {e["incident"]["id"] for e in out.events if e["event"] == "open"}
    for loc in sorted(st["open"]):
        inc = st["open"][loc]
        if inc["id"] not in opened_now and _peak(inc, values.get(loc), t):
            emit(inc, "update")
            touch(inc)
    # 4. quiet long enough: resolve
    for loc in sorted(st["open"]):
        inc = st["open"][loc]
        if loc in by_window["tick"]:
            continue
        quiet = max(quiet_s, hour_s) if _hour_only(inc) else quiet_s
        if now - float(inc["last_seen"]) >= quiet:
            inc["state"] = RESOLVED
            inc["resolved"] = _num(now)
            emit(inc, "resolve")
            touch(inc)
            st["recent"][loc] = inc
    for loc in [loc for loc, inc in st["open"].items() if inc["state"] == RESOLVED]:
        del st["open"][loc]
    # 5. forget resolved incidents no later decision can reach
    horizon = now - max(hour_s, quiet_s)
    for loc in [loc for loc, inc in st["recent"].items() if float(inc["last_seen"]) < horizon]:
        del st["recent"][loc]
    return out


def _hour_only(inc: Mapping[str, Any]) -> bool:
    """Whether only hour decisions fed the incident (no tick decision ever joined it)."""
    return int(inc["decisions"].get("tick", 0)) == 0


def _new(loc: str, t: float, d: Mapping[str, Any], mechanism: str | None,
         window: str = "tick") -> dict[str, Any]:
    beta = d.get("beta")
    # the alert's data-independent uncertainty width (device-day alerts), when it has one
    extra = {k: d[k] for k in ("alpha", "uncertainty") if d.get(k) is not None}
    return {
        **extra,
        "id": incident_id(loc, t), "location": loc, "state": OPEN,
        "opened": _num(t), "last_seen": _num(t), "resolved": None,
        "capacity": d.get("capacity"), "algorithm": d.get("algorithm"), "beta": beta,
        "peak": None, "peak_tick": None, "peak_mechanism": mechanism,
        "decisions": {"tick": 1 if window == "tick" else 0, "hour": 1 if window == "hour" else 0},
        "opened_by": window, "guarantee": guarantee_text(beta), "version": 0,
    }


def _peak(inc: dict[str, Any], value: float | None, t: float) -> bool:
    """Raise the incident's peak to ``value`` (a released value); whether it rose."""
    if value is None:
        return False
    v = float(value)
    if v != v:  # NaN: no release
        return False
    if inc["peak"] is None or v > float(inc["peak"]):
        inc["peak"], inc["peak_tick"] = v, _num(t)
        return True
    return False


def replay(ticks: Sequence[tuple[float, Sequence[Mapping[str, Any]], Mapping[str, float] | None]],
           state: Mapping[str, Any] | None = None, *, quiet_s: float = QUIET_S,
           hour_s: float = HOUR_S, mechanism: str | None = None
           ) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Fold a whole sequence of ``(tick, decisions, values)`` (see :func:`step`).

    Returns:
        ``(state, events, incidents)``: the final state, every event in order, and the
        latest record of every incident by id.
    """
    st: Mapping[str, Any] | None = state
    events: list[dict[str, Any]] = []
    records: dict[str, dict[str, Any]] = {}
    for tick, decisions, values in ticks:
        s = step(st, tick, decisions, values, quiet_s=quiet_s, hour_s=hour_s,
                 mechanism=mechanism)
        st = s.state
        events += s.events
        records.update(copy.deepcopy(s.records))
    return dict(st or empty_state()), events, records
