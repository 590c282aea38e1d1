"""The simulator's Python API: :func:`simulate` → :class:`Simulation`.

Example::

    from simulator import simulate
    sim = simulate("dbh", days=7, seed=7)            # Monday 2026-01-05 00:00 UTC
    for event in sim.events():                       # dicts, in arrival order
        ...                                          # {"device", "ap", "ts", "rssi"}
    sim.truth["scenarios"]                           # injected scenarios (times, places)
    table = sim.occupancy(tick_s=300)                # true counts (occupancy.oracle)

Scenarios (all switchable with :class:`Scenarios`), placed deterministically:

* ``overcapacity``: per building, two crowds of ``ceil(1.3 · capacity) + 1`` extra
  devices, exactly during ``[t0, t1)`` (tick-aligned): the median-capacity classroom
  on day 3 (Wednesday) 15:00–16:00, and the smallest lounge on day 4 (Thursday)
  10:00–10:30 (earlier days when the simulation is shorter; both on day
  ``Scenarios.crowd_day`` and ``crowd_minutes`` long when set: the demo's live day, an
  hour each). Normal use stays below capacity, so in the oracle a location exceeds its
  capacity exactly then.
* ``broken_ap``: the busiest single-AP classroom's AP of the first building stops
  reporting from day 2 (Tuesday) 12:00 to the end (its events are dropped).
* ``weekly_meeting``: every Tuesday 10:00–11:00, the same eight faculty members
  meet in the first meeting room of each building.
* ``malformed_rate``: that share of extra malformed records (bad MACs, missing
  fields, unknown APs, non-numeric / out-of-range / far-future / too-late ts), each
  with its intended :mod:`occupancy.schema` reason in ``truth["malformed"]``.

Ground truth (``Simulation.truth``; the ``x.truth.json`` sidecar of ``x.jsonl``)::

    {"site", "source", "seed", "start_ts", "end_ts", "days", "scale",
     "lateness_s", "max_future_s", "scenario_settings",
     "scenarios": [{"type": "overcapacity", "location", "building", "capacity",
                    "devices", "start_ts", "end_ts"},
                   {"type": "broken_ap", "ap", "location", "building", "start_ts", "end_ts"},
                   {"type": "weekly_meeting", "location", "building", "attendees",
                    "start_ts", "end_ts"}],
     "malformed": [[record index in the stream, intended DLQ reason], ...],
     "n_records", "n_valid", "n_devices", "population": {role: persons},
     "presence": {"columns": ["device", "location", "start_ts", "end_ts"],
                  "rows": [...]}}        # sidecar only; Simulation.presence() in Python

``presence`` is what people did (planned stays); *occupancy* is what the events say
under :mod:`occupancy.oracle` (``Simulation.occupancy``), the figure everything is
held to. Every record not listed in ``malformed`` is valid and on time.
"""

from __future__ import annotations

import collections
import json
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from mechanisms.errors import InvalidParameterError, check_positive
from occupancy.buildings import Site, load_site
from occupancy.oracle import (
    DEFAULT_LATENESS_S,
    DEFAULT_MAX_FUTURE_S,
    DEFAULT_TICK_S,
    DEFAULT_VALIDITY_S,
    OccupancyTable,
    occupancy_oracle,
    presence_counts,
)
from simulator.events import (
    MALFORMED_KINDS,
    OUIS,
    BlockDrawer,
    StayTable,
    device_mac,
    events_per_stay,
    malformed_record,
    random_mac,
    stay_events,
)
from simulator.model import DAY_S, HOUR_S, MIN_S, BuildingPlan, crowd_size

#: Default start: Monday 2026-01-05 00:00 UTC (building local time = UTC).
DEFAULT_START = datetime(2026, 1, 5, tzinfo=UTC)
SCENARIO_NAMES = ("overcapacity", "broken_ap", "weekly_meeting", "malformed")
#: Malformed records are only inserted after this many events (the clock has a reference).
MALFORMED_WARMUP = 100


@dataclass(frozen=True)
class Scenarios:
    """Which scenarios to inject (see the module docstring for where and when)."""

    overcapacity: bool = True
    broken_ap: bool = True
    weekly_meeting: bool = True
    malformed_rate: float = 0.0
    overcapacity_factor: float = 1.3
    #: the day (0 = the first simulated day) of both crowds; None: days 2 and 3 as above
    crowd_day: int | None = None
    #: how long both crowds stay (minutes); None: 60 (classroom) and 30 (lounge)
    crowd_minutes: float | None = None

    def __post_init__(self) -> None:
        if self.crowd_day is not None and (isinstance(self.crowd_day, bool)
                                           or not isinstance(self.crowd_day, int)
                                           or self.crowd_day < 0):
            raise InvalidParameterError(
                f"crowd_day must be None or an integer >= 0, not {self.crowd_day!r}")
        if self.crowd_minutes is not None and not 5 <= self.crowd_minutes <= 300:
            raise InvalidParameterError(
                f"crowd_minutes must be None or in [5, 300], not {self.crowd_minutes!r}")
        if not 0.0 <= self.malformed_rate < 1.0:
            raise InvalidParameterError(
                f"malformed_rate must be in [0, 1), not {self.malformed_rate!r}"
            )
        if not self.overcapacity_factor > 1.0:
            raise InvalidParameterError(
                f"overcapacity_factor must be > 1, not {self.overcapacity_factor!r}"
            )

    @classmethod
    def none(cls) -> Scenarios:
        """No scenario at all (plain population)."""
        return cls(False, False, False, 0.0)

    @classmethod
    def from_names(cls, names: Iterable[str], malformed_rate: float = 0.001) -> Scenarios:
        """From names (:data:`SCENARIO_NAMES`); ``malformed`` uses ``malformed_rate``."""
        names = {n.strip() for n in names if n.strip()}
        unknown = names - set(SCENARIO_NAMES) - {"none", "all"}
        if unknown:
            raise InvalidParameterError(
                f"scenarios must be among {', '.join(SCENARIO_NAMES)}, not {sorted(unknown)!r}"
            )
        if "all" in names:
            names = set(SCENARIO_NAMES)
        return cls(
            overcapacity="overcapacity" in names,
            broken_ap="broken_ap" in names,
            weekly_meeting="weekly_meeting" in names,
            malformed_rate=malformed_rate if "malformed" in names else 0.0,
        )


def _start_ts(start: datetime | float | str | None) -> float:
    if start is None:
        return DEFAULT_START.timestamp()
    if isinstance(start, str):
        try:
            start = datetime.fromisoformat(start)
        except ValueError:
            raise InvalidParameterError(
                f"start must be an ISO date/time like 2026-01-05T00:00, not {start!r}"
            ) from None
    if isinstance(start, datetime):
        if start.tzinfo is None:
            start = start.replace(tzinfo=UTC)
        return start.timestamp()
    return float(start)


class Simulation:
    """A simulated event stream with its ground truth (build with :func:`simulate`).

    Attributes:
        site: the simulated site.
        start_ts: first event time considered (epoch seconds).
        end_ts: end of the simulated window (exclusive).
        truth: JSON-able dict: parameters, ``scenarios`` (each with type, location,
            times), ``malformed`` (``[stream index, intended reason]``), counts.
    """

    def __init__(self, site: Site, start_ts: float, end_ts: float, truth: dict[str, Any],
                 cols: dict[str, np.ndarray], macs: list[str], ap_ids: list[str],
                 malformed: list[tuple[int, dict[str, Any], str]],
                 presence: dict[str, np.ndarray], lateness_s: float,
                 max_future_s: float) -> None:
        self.site = site
        self.start_ts = start_ts
        self.end_ts = end_ts
        self.truth = truth
        self._c = cols
        self._macs = macs
        self._ap_ids = ap_ids
        self._malformed = malformed
        self._presence = presence
        self.lateness_s = lateness_s
        self.max_future_s = max_future_s

    def __len__(self) -> int:
        """Number of records, malformed included."""
        return len(self._c["ts_ms"]) + len(self._malformed)

    @property
    def n_valid(self) -> int:
        """Number of well-formed, on-time events."""
        return len(self._c["ts_ms"])

    @property
    def ap_location(self) -> dict[str, str]:
        """AP id → location id of the site."""
        return self.site.ap_location

    def _merged(self) -> Iterator[tuple[int, int]]:
        """(valid index or -1, malformed index or -1) in arrival order."""
        mal = self._malformed
        k = 0
        for i in range(len(self._c["ts_ms"])):
            while k < len(mal) and mal[k][0] == i:
                yield -1, k
                k += 1
            yield i, -1
        while k < len(mal):
            yield -1, k
            k += 1

    def _rows(self) -> Iterator[tuple[str, str, int, int] | dict[str, Any]]:
        """``(device, ap, ts_ms, rssi)`` per valid event, the dict per malformed one."""
        ts = self._c["ts_ms"].tolist()
        mac = self._c["mac"].tolist()
        ap = self._c["ap"].tolist()
        rssi = self._c["rssi"].tolist()
        macs, aps = self._macs, self._ap_ids
        for i, k in self._merged():
            yield (macs[mac[i]], aps[ap[i]], ts[i], rssi[i]) if i >= 0 else self._malformed[k][1]

    def events(self) -> Iterator[dict[str, Any]]:
        """Every record as a dict ``{"device", "ap", "ts", "rssi"}``, in arrival order."""
        for r in self._rows():
            if isinstance(r, dict):
                yield dict(r)
            else:
                yield {"device": r[0], "ap": r[1], "ts": r[2] / 1000, "rssi": r[3]}

    def line_chunks(self, size: int = 20_000) -> Iterator[list[str]]:
        """Every record as one line of JSON (no newline), in arrival order, in chunks."""
        c, macs, aps = self._c, self._macs, self._ap_ids
        mal = self._malformed
        k = 0
        for lo in range(0, max(len(c["ts_ms"]), 1), size):
            hi = min(lo + size, len(c["ts_ms"]))
            ts = c["ts_ms"][lo:hi]
            valid = [
                f'{{"device": "{macs[m]}", "ap": "{aps[a]}", "ts": {t}.{ms:03d}, "rssi": {r}}}'
                for m, a, t, ms, r in zip(c["mac"][lo:hi].tolist(), c["ap"][lo:hi].tolist(),
                                          (ts // 1000).tolist(), (ts % 1000).tolist(),
                                          c["rssi"][lo:hi].tolist(), strict=True)
            ]
            last = hi >= len(c["ts_ms"])
            if k < len(mal) and (mal[k][0] < hi or last):
                out: list[str] = []
                j = 0
                while k < len(mal) and (mal[k][0] < hi or last):
                    pos = mal[k][0] - lo
                    out.extend(valid[j:pos])
                    j = max(j, pos)
                    out.append(json.dumps(mal[k][1]))
                    k += 1
                out.extend(valid[j:])
                valid = out
            yield valid

    def lines(self) -> Iterator[str]:
        """Every record as one line of JSON (no newline), in arrival order."""
        for chunk in self.line_chunks():
            yield from chunk

    def records(self) -> Iterator[tuple[bytes | None, bytes, float]]:
        """``(key, value, arrival_ts)`` for Kafka: key = device MAC, value = JSON bytes."""
        arrival = self._c["arrival"].tolist()
        mac = self._c["mac"].tolist()
        macs = [m.encode() for m in self._macs]
        last = self.start_ts
        for (i, k), line in zip(self._merged(), self.lines(), strict=True):
            if i >= 0:
                last = arrival[i]
                yield macs[mac[i]], line.encode(), last
            else:
                dev = self._malformed[k][1].get("device")
                key = dev.strip().lower().encode() if isinstance(dev, str) else None
                yield key, line.encode(), last  # canonical key: one device, one partition

    def arrival_times(self) -> np.ndarray:
        """Arrival time of every valid event (epoch s), in stream order."""
        return self._c["arrival"].copy()

    def presence(self) -> dict[str, np.ndarray]:
        """Planned presence intervals (what people did), one row per device stay.

        Returns:
            Arrays ``device`` (MAC), ``location`` (id), ``start_ts``, ``end_ts``.
        """
        return dict(self._presence)

    def occupancy(
        self,
        tick_s: float = DEFAULT_TICK_S,
        *,
        validity_s: float = DEFAULT_VALIDITY_S,
        lateness_s: float | None = None,
        max_future_s: float | None = None,
        ticks: Iterable[float] | None = None,
        method: str = "auto",
    ) -> OccupancyTable:
        """True occupancy per tick and location: the oracle's result for this stream.

        Args:
            tick_s: tick period (ticks are multiples of it).
            validity_s: how long an observation keeps a device present.
            lateness_s: allowed lateness (default: the simulation's).
            max_future_s: allowed lead (default: the simulation's).
            ticks: explicit ticks (default: every final tick, as the oracle).
            method: ``"oracle"`` runs :func:`occupancy.oracle.occupancy_oracle` over
                :meth:`events` (malformed records included; it drops them);
                ``"fast"`` computes the same table with numpy from the simulator's own
                arrays (valid only with the simulation's lateness/lead, which decided
                which records are malformed; the tests check it equals the oracle);
                ``"auto"`` picks ``"fast"`` whenever that is valid.
        """
        lateness_s = self.lateness_s if lateness_s is None else float(lateness_s)
        max_future_s = self.max_future_s if max_future_s is None else float(max_future_s)
        if method not in ("auto", "fast", "oracle"):
            raise InvalidParameterError(f"method must be auto, fast or oracle, not {method!r}")
        same = lateness_s == self.lateness_s and max_future_s == self.max_future_s
        if method == "fast" and not same:
            raise InvalidParameterError(
                "method 'fast' needs the simulation's lateness_s and max_future_s"
            )
        tick_arr = None if ticks is None else np.asarray(list(ticks), float)
        if method == "oracle" or not same:
            return occupancy_oracle(
                self.events(), self.site.ap_location, self.site.location_ids,
                tick_s=tick_s, validity_s=validity_s, lateness_s=lateness_s,
                max_future_s=max_future_s, ticks=tick_arr,
            )
        return self._fast_occupancy(tick_s, validity_s, lateness_s, tick_arr)

    def _fast_occupancy(self, tick_s: float, validity_s: float, lateness_s: float,
                        tick_arr: np.ndarray | None) -> OccupancyTable:
        """The oracle's definition (occupancy.oracle) on the valid events, vectorised."""
        tick_s = check_positive("tick_s", tick_s)
        validity_s = check_positive("validity_s", validity_s)
        locations = tuple(self.site.location_ids)
        n_loc = len(locations)
        ts = self._c["ts_ms"] / 1000.0
        if tick_arr is None:
            if len(ts) == 0:
                return OccupancyTable(np.zeros(0), locations, np.zeros((0, n_loc), np.int64))
            k_first = math.ceil(float(ts.min()) / tick_s)
            k_last = math.ceil((float(ts.max()) - lateness_s) / tick_s) - 1
            tick_arr = np.arange(k_first, k_last + 1, dtype=np.float64) * tick_s
        else:  # the oracle's own checks of explicit ticks (no events: instant)
            occupancy_oracle([], {}, locations, tick_s=tick_s, ticks=tick_arr)
        n_t = len(tick_arr)
        if n_t == 0 or len(ts) == 0:
            return OccupancyTable(tick_arr, locations, np.zeros((n_t, n_loc), np.int64))
        loc_of_ap = np.array([self.site.location_index[self.site.ap_location[a]]
                              for a in self._ap_ids], np.int64)
        counts = presence_counts(
            self._c["mac"], ts, loc_of_ap[self._c["ap"]], tick_arr,
            validity_s=validity_s, n_locations=n_loc,
        )
        return OccupancyTable(tick_arr, locations, counts)

    def write_jsonl(self, path: str | os.PathLike[str], *, presence: bool = True,
                    progress: bool = False) -> Path:
        """Write the stream to ``path`` (JSONL) and the truth to ``<stem>.truth.json``.

        Returns:
            The path of the truth sidecar.
        """
        path = Path(path)
        bar = _bar(len(self), "writing", progress)
        with path.open("w", encoding="utf-8") as f:
            for chunk in self.line_chunks():
                if chunk:
                    f.write("\n".join(chunk) + "\n")
                    bar.update(len(chunk))
        bar.close()
        truth_path = truth_path_for(path)
        truth = dict(self.truth)
        if presence:
            p = self._presence
            truth["presence"] = {
                "columns": ["device", "location", "start_ts", "end_ts"],
                "rows": [list(r) for r in zip(p["device"].tolist(), p["location"].tolist(),
                                              p["start_ts"].tolist(), p["end_ts"].tolist(),
                                              strict=True)],
            }
        truth_path.write_text(json.dumps(truth, indent=None, separators=(",", ":")) + "\n")
        return truth_path


def truth_path_for(path: str | os.PathLike[str]) -> Path:
    """``x.jsonl`` → ``x.truth.json`` (the ground-truth sidecar)."""
    p = Path(path)
    stem = p.name[: -len(".jsonl")] if p.name.endswith(".jsonl") else p.stem
    return p.with_name(f"{stem}.truth.json")


def _bar(total: int, desc: str, enabled: bool, unit: str = "ev"):  # type: ignore[no-untyped-def]
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, unit_scale=unit == "ev",
                disable=not enabled, leave=False)


def _median_classroom(plan: BuildingPlan) -> int | None:
    rooms = sorted(plan.by_kind.get("classroom", []), key=lambda i: (plan.cap[i], i))
    return rooms[len(rooms) // 2] if rooms else None


#: A stay forced into a person's plan: ``(start s, end s, location index)``.
_ForcedStay = tuple[float, float, int]
#: The broken AP: ``(AP number in AP order, time it stops reporting, s since midnight)``.
_BrokenAp = tuple[int, float]


@dataclass(frozen=True)
class _Window:
    """The simulated window, in seconds since the (UTC) midnight before its start.

    Attributes:
        midnight: epoch seconds of that midnight.
        w0: window start (s since ``midnight``).
        w1: window end (exclusive).
        n_days: calendar days the window touches (the days that are planned).
        weekday0: weekday of day 0 (Monday = 0).
    """

    midnight: float
    w0: float
    w1: float
    n_days: int
    weekday0: int

    @classmethod
    def of(cls, t_start: float, days: float) -> _Window:
        """The window of ``days`` days from epoch second ``t_start``."""
        midnight = math.floor(t_start / DAY_S) * DAY_S
        w0 = t_start - midnight
        w1 = w0 + days * DAY_S
        return cls(midnight, w0, w1, int(math.ceil(w1 / DAY_S)),
                   datetime.fromtimestamp(midnight, UTC).weekday())

    def contains(self, t0: float, t1: float) -> bool:
        """Whether ``[t0, t1)`` lies inside the window."""
        return self.w0 <= t0 and t1 <= self.w1

    def weekday(self, day: int) -> int:
        """Weekday of day number ``day`` (Monday = 0)."""
        return (self.weekday0 + day) % 7


@dataclass(frozen=True)
class _ApLayout:
    """The site's APs ordered by location (each location's APs are contiguous).

    Attributes:
        ids: AP id per AP number.
        count: number of APs per location index.
        first: AP number of each location's first AP.
    """

    ids: list[str]
    count: np.ndarray
    first: np.ndarray


def _check_seed(seed: int) -> None:
    """Reject anything but a non-negative integer seed.

    Raises:
        InvalidParameterError: a bool, a non-integer or a negative integer.
    """
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise InvalidParameterError(f"seed must be a non-negative integer, not {seed!r}")


def _resolve_scenarios(scenarios: Scenarios | Iterable[str] | None) -> Scenarios:
    """``None`` → the defaults; names → :meth:`Scenarios.from_names`."""
    if scenarios is None:
        return Scenarios()
    if isinstance(scenarios, Scenarios):
        return scenarios
    return Scenarios.from_names(scenarios)


def _ap_layout(site: Site) -> _ApLayout:
    """Number the site's APs by (location index, position in the site file)."""
    loc_index = site.location_index
    aps_sorted = sorted(range(len(site.aps)), key=lambda i: (loc_index[site.aps[i].location], i))
    ap_loc = np.array([loc_index[site.aps[i].location] for i in aps_sorted], np.int64)
    count = np.bincount(ap_loc, minlength=len(site.location_ids)).astype(np.int64)
    first = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64)
    return _ApLayout([site.aps[i].id for i in aps_sorted], count, first)


def _scenario(kind: str, **fields: Any) -> dict[str, Any]:
    """One entry of ``truth["scenarios"]``."""
    return {"type": kind, **fields}


def _inject_overcapacity(plan: BuildingPlan, site: Site, scen: Scenarios,
                         win: _Window) -> list[dict[str, Any]]:
    """Add the two over-capacity crowds of a building to its plan.

    Returns:
        The scenario records of the crowds that fall inside the window.
    """
    lounges = sorted(plan.by_kind.get("lounge", []) or plan.by_kind.get("public", []),
                     key=lambda i: (plan.cap[i], i))
    days = ((min(2, win.n_days - 1), min(3, win.n_days - 1)) if scen.crowd_day is None
            else (scen.crowd_day, scen.crowd_day))
    minutes = ((60.0, 30.0) if scen.crowd_minutes is None
               else (scen.crowd_minutes, scen.crowd_minutes))
    picks = [(_median_classroom(plan), days[0], 15.0, minutes[0]),
             (lounges[0] if lounges else None, days[1], 10.0, minutes[1])]
    records = []
    for loc, day, hour, minutes in picks:
        if loc is None:
            continue
        t0 = day * DAY_S + hour * HOUR_S
        t1 = t0 + minutes * MIN_S
        if not win.contains(t0, t1):
            continue
        size = crowd_size(plan.cap[loc], scen.overcapacity_factor)
        plan.add_crowd(loc, t0, t1, size)
        records.append(_scenario(
            "overcapacity", location=site.location_ids[loc], building=plan.building.id,
            capacity=plan.cap[loc], devices=size,
            start_ts=win.midnight + t0, end_ts=win.midnight + t1))
    return records


def _weekly_meetings(plan: BuildingPlan, site: Site, win: _Window
                     ) -> tuple[dict[int, dict[int, list[_ForcedStay]]], list[dict[str, Any]]]:
    """The Tuesday 10:00–11:00 meeting of eight faculty members in the first meeting room.

    Returns:
        ``(forced stays by day → person → stays, scenario records inside the window)``.
    """
    forced_by_day: dict[int, dict[int, list[_ForcedStay]]] = {}
    records: list[dict[str, Any]] = []
    if not plan.meetings:
        return forced_by_day, records
    room = plan.meetings[0]
    members = [pid for pid, p in enumerate(plan.persons) if p.role == "faculty"][:8]
    for d in range(win.n_days):
        if win.weekday(d) == 1 and members:
            t0, t1 = d * DAY_S + 10 * HOUR_S, d * DAY_S + 11 * HOUR_S
            forced_by_day[d] = {pid: [(t0, t1, room)] for pid in members}
            if win.contains(t0, t1):
                records.append(_scenario(
                    "weekly_meeting", location=site.location_ids[room],
                    building=plan.building.id, attendees=len(members),
                    start_ts=win.midnight + t0, end_ts=win.midnight + t1))
    return forced_by_day, records


def _plan_buildings(site: Site, scen: Scenarios, win: _Window,
                    seeds: list[np.random.SeedSequence], scale: float,
                    progress: bool) -> tuple[list[BuildingPlan], list[dict[str, Any]]]:
    """Build every building's population and plan its days, scenarios included.

    Returns:
        ``(one plan per building, the crowd and meeting scenario records)``.
    """
    plans = []
    records: list[dict[str, Any]] = []
    bar = _bar(len(site.buildings) * win.n_days, "planning", progress, unit="building-day")
    for building, seq in zip(site.buildings, seeds, strict=True):
        plan = BuildingPlan(site, building, seq, scale)
        plans.append(plan)
        if scen.overcapacity:
            records.extend(_inject_overcapacity(plan, site, scen, win))
        forced_by_day: dict[int, dict[int, list[_ForcedStay]]] = {}
        if scen.weekly_meeting:
            forced_by_day, meeting_records = _weekly_meetings(plan, site, win)
            records.extend(meeting_records)
        for d in range(win.n_days):
            plan.plan_day(d, win.weekday(d), forced_by_day.get(d, {}))
            bar.update(1)
    bar.close()
    return plans, records


def _choose_broken_ap(plan: BuildingPlan, site: Site, aps: _ApLayout,
                      win: _Window) -> tuple[_BrokenAp, dict[str, Any]]:
    """The first building's busiest single-AP classroom loses its AP from day 2, 12:00.

    Returns:
        ``(the broken AP, its scenario record)``.
    """
    n_courses = collections.Counter(c[0] for c in plan.courses)
    singles = sorted((i for i in plan.by_kind.get("classroom", []) if aps.count[i] == 1),
                     key=lambda i: (-n_courses[i], i))
    cands = singles or sorted(plan.loc_idx)
    t_b = min(1, win.n_days - 1) * DAY_S + 12 * HOUR_S
    if not win.w0 <= t_b < win.w1:
        t_b = (win.w0 + win.w1) / 2
    ap_i = int(aps.first[cands[0]])
    record = _scenario("broken_ap", ap=aps.ids[ap_i], location=site.location_ids[cands[0]],
                       building=site.buildings[0].id, start_ts=win.midnight + t_b,
                       end_ts=win.midnight + win.w1)
    return (ap_i, t_b), record


def _population(plans: list[BuildingPlan]) -> dict[str, int]:
    """Persons per role, over every building."""
    roles: dict[str, int] = {}
    for plan in plans:
        for p in plan.persons:
            roles[p.role] = roles.get(p.role, 0) + 1
    return roles


def _stay_table(plans: list[BuildingPlan], win: _Window
                ) -> tuple[StayTable, list[tuple[int, bool]]]:
    """Every device's stays that overlap the window, with one uniform block per device.

    Returns:
        ``(the stays, (device number, randomises its MAC) per device kept)``; device
        ``k`` of the table is entry ``k`` of the list.
    """
    cols: dict[str, list[Any]] = {k: [] for k in ("device", "loc", "start_s", "end_s",
                                                  "n_events", "interval_s", "offset_max_s")}
    blocks: list[np.ndarray] = []
    u_offset: list[int] = []
    dev_info: list[tuple[int, bool]] = []
    drawer = BlockDrawer()
    u_pos = 0
    for number, dev in enumerate(dev for plan in plans for dev in plan.devices):
        stays = [st for st in dev.stays if st[2] > win.w0 and st[1] < win.w1]
        if not stays:
            continue
        starts = [st[1] for st in stays]
        ends = [st[2] for st in stays]
        n_ev = events_per_stay(starts, ends, dev.interval_s)
        block = drawer.draw(dev.stream, len(stays), sum(n_ev))
        blocks.append(block)
        u_offset.append(u_pos)
        u_pos += len(block)
        cols["device"].extend([len(dev_info)] * len(stays))
        dev_info.append((number, dev.randomised))
        cols["loc"].extend(st[0] for st in stays)
        cols["start_s"].extend(starts)
        cols["end_s"].extend(ends)
        cols["n_events"].extend(n_ev)
        cols["interval_s"].extend([dev.interval_s] * len(stays))
        cols["offset_max_s"].extend([dev.offset_max_s] * len(stays))
    ints = {"device", "loc", "n_events"}
    table = StayTable(
        **{k: np.array(v, np.int64 if k in ints else np.float64) for k, v in cols.items()},
        u_offset=np.array(u_offset, np.int64),
        u=np.concatenate(blocks) if blocks else np.zeros(0),
    )
    return table, dev_info


def _events_of_stays(table: StayTable, aps: _ApLayout) -> tuple[np.ndarray, ...]:
    """:func:`~simulator.events.stay_events` of the table (empty columns if no stay).

    Returns:
        ``(t, ap, rssi, stay, delay, u_mac)`` per generated event.
    """
    if len(table.loc):
        return stay_events(table, aps.first, aps.count)
    empty_f, empty_i = np.zeros(0), np.zeros(0, np.int64)
    return empty_f, empty_i, empty_i, empty_i, empty_f, empty_f


def _device_macs(table: StayTable, dev_info: list[tuple[int, bool]],
                 u_mac: np.ndarray) -> tuple[list[str], np.ndarray]:
    """MACs: a fixed one per device, or a fresh random one per stay (randomising visitors).

    Returns:
        ``(the MACs, MAC number per stay of the table)``.
    """
    macs: list[str] = []
    mac_of_stay = np.zeros(len(table.loc), np.int64)
    dev_first = np.searchsorted(table.device, np.arange(len(dev_info)))
    dev_end = np.r_[dev_first[1:], len(table.loc)]
    for k, (number, randomised) in enumerate(dev_info):
        a0, a1 = int(dev_first[k]), int(dev_end[k])
        if randomised:
            mac_of_stay[a0:a1] = np.arange(len(macs), len(macs) + a1 - a0)
            macs.extend(random_mac(float(x)) for x in u_mac[a0:a1])
        else:
            oui = OUIS[int(table.u[table.u_offset[k]] * len(OUIS))]
            mac_of_stay[a0:a1] = len(macs)
            macs.append(device_mac(number, oui))
    return macs, mac_of_stay


def _valid_columns(win: _Window, broken: _BrokenAp | None, *, t: np.ndarray, ap: np.ndarray,
                   rssi: np.ndarray, mac: np.ndarray, delay: np.ndarray
                   ) -> dict[str, np.ndarray]:
    """The events inside the window and not from the broken AP, in arrival order.

    Returns:
        Columns ``ts_ms`` (epoch ms), ``arrival`` (epoch s), ``mac`` (MAC number),
        ``ap`` (AP number), ``rssi``.
    """
    keep = (t >= win.w0) & (t < win.w1)
    if broken is not None:
        keep &= ~((ap == broken[0]) & (t >= broken[1]))
    ts_ms = np.rint((win.midnight + t[keep]) * 1000.0).astype(np.int64)
    arrival = ts_ms / 1000.0 + delay[keep]
    mac_col = mac[keep].astype(np.int64)
    order = np.lexsort((mac_col, ts_ms, arrival))
    return {
        "ts_ms": ts_ms[order],
        "arrival": arrival[order],
        "mac": mac_col[order],
        "ap": ap[keep].astype(np.int64)[order],
        "rssi": rssi[keep].astype(np.int64)[order],
    }


def _malformed_records(
    cols: dict[str, np.ndarray], rate: float, seq: np.random.SeedSequence, macs: list[str],
    ap_ids: list[str], broken: _BrokenAp | None, lateness_s: float, max_future_s: float,
) -> list[tuple[int, dict[str, Any], str]]:
    """Draw the malformed records and where they go (after :data:`MALFORMED_WARMUP`).

    Returns:
        ``(insertion position among the valid events, record, intended reason)``,
        sorted by position.
    """
    malformed: list[tuple[int, dict[str, Any], str]] = []
    n = len(cols["ts_ms"])
    if not (rate > 0 and n > MALFORMED_WARMUP):
        return malformed
    rng = np.random.Generator(np.random.PCG64(seq))
    pos = np.sort(rng.integers(MALFORMED_WARMUP, n + 1, size=int(round(rate * n))))
    clock = np.maximum.accumulate(cols["ts_ms"]) / 1000.0
    for p in pos.tolist():
        kind = MALFORMED_KINDS[int(rng.integers(len(MALFORMED_KINDS)))]
        j = int(rng.integers(p))
        ap_j = int(cols["ap"][j])
        if broken is not None and ap_j == broken[0]:  # a broken AP sends nothing at all
            ap_j = (ap_j + 1) % len(ap_ids)
        rec = malformed_record(
            kind, rng, device=macs[int(cols["mac"][j])], ap=ap_ids[ap_j],
            clock_s=float(clock[p - 1]), lateness_s=lateness_s, max_future_s=max_future_s)
        malformed.append((p, rec, kind))
    return malformed


def _presence(table: StayTable, mac_of_stay: np.ndarray, macs: list[str], site: Site,
              win: _Window) -> dict[str, np.ndarray]:
    """Planned stays clipped to the window, as :meth:`Simulation.presence` returns them."""
    return {
        "device": np.array([macs[i] for i in mac_of_stay.tolist()], dtype=object),
        "location": np.array([site.location_ids[i] for i in table.loc.tolist()], dtype=object),
        "start_ts": win.midnight + np.maximum(table.start_s, win.w0),
        "end_ts": win.midnight + np.minimum(table.end_s, win.w1),
    }


def _truth(site: Site, params: dict[str, Any], scen: Scenarios, win: _Window,
           scen_records: list[dict[str, Any]], n_valid: int,
           malformed: list[tuple[int, dict[str, Any], str]], macs: list[str],
           roles: dict[str, int]) -> dict[str, Any]:
    """The ground truth (see the module docstring); ``params``: seed, days, scale, lateness."""
    return {
        "site": site.id,
        "source": site.source,
        "seed": params["seed"],
        "start_ts": win.midnight + win.w0,
        "end_ts": win.midnight + win.w1,
        "days": params["days"],
        "scale": params["scale"],
        "lateness_s": params["lateness_s"],
        "max_future_s": params["max_future_s"],
        "scenario_settings": asdict(scen),
        "scenarios": scen_records,
        "n_records": n_valid + len(malformed),
        "n_valid": n_valid,
        "n_devices": len(set(macs)),
        "population": roles,
        # stream index of each malformed record = its insertion position + records before it
        "malformed": [[p + i, kind] for i, (p, _, kind) in enumerate(malformed)],
    }


def simulate(
    site: Site | str | os.PathLike[str],
    *,
    days: float = 7.0,
    seed: int = 0,
    start: datetime | float | str | None = None,
    scenarios: Scenarios | Iterable[str] | None = None,
    scale: float = 1.0,
    lateness_s: float = DEFAULT_LATENESS_S,
    max_future_s: float = DEFAULT_MAX_FUTURE_S,
    progress: bool = False,
) -> Simulation:
    """Simulate WiFi connectivity events of a building (or campus).

    Plans every building's days (population, timetable, injected scenarios), turns the
    stays into events (one uniform block per device, then all at once), drops what the
    broken AP would have sent, adds the malformed records and records the ground truth.

    Args:
        site: a :class:`~occupancy.buildings.Site`, or a building name/path for
            :func:`~occupancy.buildings.load_site` (``"dbh"``, ``"campus"``).
        days: simulated duration in days (> 0; fractions allowed).
        seed: the seed; same seed and arguments → identical output.
        start: first instant (datetime, ISO string or epoch seconds; naive = UTC).
            Default Monday 2026-01-05 00:00 UTC.
        scenarios: a :class:`Scenarios`, names from :data:`SCENARIO_NAMES`, or None
            for the defaults (over-capacity, broken AP, weekly meeting; no malformed).
        scale: population multiplier (1.0 ≈ the thesis' volume for ``dbh``).
        lateness_s: the pipeline's allowed lateness (sizes the too-late records).
        max_future_s: the pipeline's allowed lead (sizes the far-future records).
        progress: show a progress bar on stderr.

    Returns:
        The :class:`Simulation`.
    """
    days = check_positive("days", days)
    scale = check_positive("scale", scale)
    _check_seed(seed)
    scen = _resolve_scenarios(scenarios)
    if not isinstance(site, Site):
        site = load_site(site)
    win = _Window.of(_start_ts(start), days)
    aps = _ap_layout(site)
    *building_seeds, malformed_seed = np.random.SeedSequence(int(seed)).spawn(
        len(site.buildings) + 1)
    plans, scen_records = _plan_buildings(site, scen, win, building_seeds, scale, progress)
    broken: _BrokenAp | None = None
    if scen.broken_ap:
        broken, broken_record = _choose_broken_ap(plans[0], site, aps, win)
        scen_records.append(broken_record)

    table, dev_info = _stay_table(plans, win)
    t_ev, ap_ev, rssi_ev, stay_ev, delay_ev, u_mac = _events_of_stays(table, aps)
    macs, mac_of_stay = _device_macs(table, dev_info, u_mac)
    cols = _valid_columns(win, broken, t=t_ev, ap=ap_ev, rssi=rssi_ev,
                          mac=mac_of_stay[stay_ev], delay=delay_ev)
    malformed = _malformed_records(cols, scen.malformed_rate, malformed_seed, macs, aps.ids,
                                   broken, lateness_s, max_future_s)
    params = {"seed": int(seed), "days": days, "scale": scale, "lateness_s": lateness_s,
              "max_future_s": max_future_s}
    truth = _truth(site, params, scen, win, scen_records, len(cols["ts_ms"]), malformed, macs,
                   _population(plans))
    return Simulation(site, win.midnight + win.w0, win.midnight + win.w1, truth, cols, macs,
                      aps.ids, malformed, _presence(table, mac_of_stay, macs, site, win),
                      lateness_s, max_future_s)
