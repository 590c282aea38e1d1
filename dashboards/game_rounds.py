"""IoT-DETECTIVE rounds: a released simulated day, the four analysis tasks, the scoring.

The game of thesis §3.2 (docs/game.md): a player sees a differentially private stream
of a building's day and estimates four facts of the *true* day (§3.2 "Example Tasks"):

* ``threshold`` — the number of 5-minute ticks in which a room's occupancy exceeds a
  threshold (accuracy: distance in ticks);
* ``night_region`` — the region (floor) most occupied at night, 18:00–06:00, by mean
  occupancy (accuracy: the difference in rank between the choice and the true answer);
* ``broken_sensor`` — the earliest time from which a "broken" sensor reports zero
  continuously (the dataset is modified to make it appear broken, as in §3.2; accuracy:
  distance to the true time);
* ``routine_event`` — the start time of a routine event (a room's first lecture or
  meeting of the day: the first tick at which it holds half its peak; accuracy:
  distance to the true start).

A round (:func:`make_round`) simulates one weekday with :func:`simulator.simulate`,
counts it with the oracle (:meth:`simulator.Simulation.occupancy`), modifies one room
to look broken, derives the four true answers from the modified counts, and releases
the modified counts with one mechanism of :mod:`mechanisms.registry` at the round's ε —
every release charged to the round's own accountant before its noise is drawn. Only
:meth:`Round.public` leaves the server before the answer; :func:`score` reveals the
truth. Points (§3.2: "a combination of the accuracy of their estimate, the time taken
to complete the task, and the number of tasks they have completed") are
``POINTS_PER_TASK × accuracy × time factor × rounds bonus`` per task (:func:`points`).

Nothing here branches on a mechanism's name: the unit, the cost and whether the cost
is charged per tick or per day come from the registry.
"""

from __future__ import annotations

import math
import reprlib
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from mechanisms import registry
from mechanisms.accounting import (
    DEVICE_DAY_UNIT,
    UNIT_OF_PRIVACY,
    Accountant,
    Budget,
    DayBudget,
    LedgerRecord,
)
from mechanisms.errors import InvalidParameterError, OccustreamError
from mechanisms.noise import resolve_rng
from occupancy.buildings import Site
from simulator import Scenarios, simulate

TICK_S = 300.0
TICKS_PER_DAY = int(86_400 // TICK_S)
TASKS = ("threshold", "night_region", "broken_sensor", "routine_event")
#: Night for the ``night_region`` task (§3.2: "6pm to 6am"), hours of the day.
NIGHT_FROM_H, NIGHT_TO_H = 18.0, 6.0
#: ``night_region`` asks among this many regions (all when there are fewer).
NIGHT_CHOICES = 3
#: The broken sensor breaks between these hours (while people are in the building).
BREAK_WINDOW_H = (9.0, 19.0)
#: Rooms a task is asked about must reach at least this peak (visible under noise).
MIN_TASK_PEAK = 8
#: ``threshold``: the threshold is this share of the room's true peak (drawn uniformly).
THRESHOLD_SHARE = (0.35, 0.7)

# -- scoring (constants of :func:`accuracy` and :func:`points`) --------------------------
POINTS_PER_TASK = 100
#: ``threshold``: an error of max(true count, this many ticks) scores 0.
THRESHOLD_SLACK_TICKS = 6
#: ``broken_sensor`` / ``routine_event``: an error of this many minutes scores 0.
BROKEN_ZERO_MIN = 120.0
ROUTINE_ZERO_MIN = 60.0
#: Time factor: 1 up to ``PAR_S``, then linearly down to ``TIME_FLOOR`` at
#: ``TIME_LIMIT_S``; answers after the limit are revealed and traced but score 0.
PAR_S = 90.0
TIME_LIMIT_S = 300.0
TIME_FLOOR = 0.5
#: Rounds bonus: × (1 + ROUND_BONUS · rounds already played), at most ROUND_BONUS_CAP rounds.
ROUND_BONUS = 0.1
ROUND_BONUS_CAP = 10

#: ε of a round per unit of privacy (registry ``unit``): event-level ε per tick; ε per
#: device-day for device-day mechanisms. Spread so that tasks go from hard to easy.
EPSILONS: dict[str, tuple[float, ...]] = {
    UNIT_OF_PRIVACY: (0.05, 0.2, 1.0),
    DEVICE_DAY_UNIT: (4.0, 16.0, 64.0),
}
DEFAULT_DELTA = 1e-6
#: A simulated day starts on a weekday of this week (Monday 2026-01-05 + 0..4 days).
FIRST_DAY = datetime(2026, 1, 5, tzinfo=UTC)


def game_mechanisms() -> list[str]:
    """Registry mechanisms a round may use: those with a formal guarantee."""
    return [n for n in registry.REGISTRY if registry.has_guarantee(n)]


def epsilons_for(mechanism: str) -> tuple[float, ...]:
    """The ε grid of a mechanism's unit of privacy."""
    cls = registry.REGISTRY.get(mechanism)
    if cls is None:
        raise InvalidParameterError(
            f"mechanism must be one of {game_mechanisms()}, not {mechanism!r}")
    return EPSILONS.get(cls.unit, EPSILONS[UNIT_OF_PRIVACY])


@dataclass(frozen=True)
class Region:
    """A region of the building (a floor): its id, name and rooms."""

    id: str
    name: str
    locations: tuple[str, ...]


@dataclass(frozen=True)
class Task:
    """One analysis task of a round: public question and parameters, hidden answer.

    Attributes:
        id: one of :data:`TASKS`.
        question: the question shown to the player.
        params: public parameters (room, threshold, choices …), sent before the answer.
        answer: the true answer (ticks for ``threshold``, a region id, or minutes since
            the day's midnight) — never sent before the answer is submitted.
        detail: what the reveal adds (e.g. the true region ranking).
    """

    id: str
    question: str
    params: Mapping[str, Any]
    answer: int | str | float
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class Round:
    """A round: the released day, its tasks and everything the reveal needs."""

    id: str
    seed: int
    day: str
    midnight: float
    mechanism: str
    epsilon: float
    unit: str
    meta: dict[str, Any]
    privacy: dict[str, Any]
    locations: tuple[str, ...]
    names: dict[str, str]
    regions: tuple[Region, ...]
    ticks: np.ndarray
    released: np.ndarray
    true: np.ndarray = field(repr=False)
    tasks: tuple[Task, ...]

    def public(self) -> dict[str, Any]:
        """What the browser gets before answering: released values and questions only."""
        return {
            "id": self.id, "day": self.day, "midnight": self.midnight, "tick_s": TICK_S,
            "mechanism": self.mechanism, "epsilon": self.epsilon, "unit": self.unit,
            "description": registry.MECHANISMS.get(self.mechanism, ""),
            "meta": self.meta, "privacy": self.privacy,
            "ticks": [int(t) for t in self.ticks],
            "locations": [{"id": lid, "name": self.names[lid]} for lid in self.locations],
            "regions": [{"id": r.id, "name": r.name, "locations": list(r.locations)}
                        for r in self.regions],
            "released": {lid: [round(float(v), 1) for v in self.released[:, j]]
                         for j, lid in enumerate(self.locations)},
            "tasks": [{"id": t.id, "question": t.question, "params": dict(t.params)}
                      for t in self.tasks],
            "time_limit_s": TIME_LIMIT_S, "par_s": PAR_S,
        }

    def true_series(self, location: str) -> list[int]:
        """The (modified) true counts of one room, for the reveal."""
        return [int(v) for v in self.true[:, self.locations.index(location)]]


# -- helpers --------------------------------------------------------------------------------
def hhmm(minutes: float) -> str:
    """Minutes since midnight as ``HH:MM``."""
    m = int(round(minutes))
    return f"{m // 60:02d}:{m % 60:02d}"


def parse_hhmm(text: Any, name: str) -> float:
    """``HH:MM`` (00:00–23:59) as minutes since midnight."""
    if not isinstance(text, str) or len(text) != 5 or text[2] != ":":
        raise InvalidParameterError(f"{name} must be a time HH:MM, not {reprlib.repr(text)}")
    try:
        h, m = int(text[:2]), int(text[3:])
    except ValueError:
        raise InvalidParameterError(
            f"{name} must be a time HH:MM, "
            f"not {reprlib.repr(text)}") from None
    if not (0 <= h <= 23 and 0 <= m <= 59):
        raise InvalidParameterError(f"{name} must be a time HH:MM, not {reprlib.repr(text)}")
    return float(60 * h + m)


def trailing_zero_start(series: Sequence[float]) -> int | None:
    """Index of the first element of the trailing run of zeros (None: it ends non-zero)."""
    s = np.asarray(series)
    nz = np.flatnonzero(s != 0)
    if len(nz) == 0:
        return 0
    return None if nz[-1] == len(s) - 1 else int(nz[-1]) + 1


def night_mask(ticks: np.ndarray, midnight: float) -> np.ndarray:
    """Ticks at night (§3.2: 6 pm to 6 am) within the day."""
    h = (np.asarray(ticks, float) - midnight) / 3600.0
    return (h >= NIGHT_FROM_H) | (h < NIGHT_TO_H)


def region_ranking(counts: np.ndarray, regions: Sequence[Region], locations: Sequence[str],
                   mask: np.ndarray) -> list[tuple[str, float]]:
    """Regions by mean total occupancy over the masked ticks, most occupied first."""
    idx = {lid: j for j, lid in enumerate(locations)}
    means = []
    for r in regions:
        cols = [idx[lid] for lid in r.locations]
        total = counts[mask][:, cols].sum(axis=1) if cols else np.zeros(int(mask.sum()))
        means.append((r.id, float(total.mean()) if len(total) else 0.0))
    return sorted(means, key=lambda kv: (-kv[1], kv[0]))


def regions_of(site: Site) -> tuple[Region, ...]:
    """The regions of a site: its floors (named with their building when several)."""
    several = len(site.buildings) > 1
    out = []
    for b in site.buildings:
        for f in sorted(b.floors, key=lambda f: f.level):
            locs = tuple(loc.id for loc in b.locations if loc.floor == f.id)
            out.append(Region(f.id, f"{b.name} · {f.name}" if several else f.name, locs))
    return tuple(out)


def game_site(site: Site, max_locations: int = 300) -> Site:
    """The site a round simulates: the whole site, or its first building if it is large."""
    if len(site.locations) <= max_locations:
        return site
    return Site(site.buildings[0].id, site.buildings[0].name, (site.buildings[0],),
                site.source)


# -- round generation ------------------------------------------------------------------------
def _pick(rng: np.random.Generator, options: Sequence[int]) -> int:
    return int(options[int(rng.integers(len(options)))])


def _event_word(kind: str) -> str:
    return {"classroom": "lecture", "meeting": "meeting"}.get(kind, "busy period")


def make_tasks(site: Site, ticks: np.ndarray, counts: np.ndarray, midnight: float,
               choice: np.random.Generator) -> tuple[np.ndarray, tuple[Task, ...]]:
    """Modify the day (one broken sensor) and ask the four tasks; answers from the truth.

    Args:
        site: the simulated site.
        ticks: tick times (epoch s), shape (T,).
        counts: the oracle's true counts, shape (T, L) (not modified in place).
        midnight: the day's 00:00 (epoch s).
        choice: generator of the game's choices (rooms, threshold, break time) — not
            noise: it decides the questions, not a release.

    Returns:
        (the modified true counts, the four tasks).
    """
    counts = np.array(counts, dtype=np.int64, copy=True)
    locs = site.locations
    ids = [loc.id for loc in locs]
    hours = (ticks - midnight) / 3600.0
    peak = counts.max(axis=0) if len(counts) else np.zeros(len(ids), np.int64)
    minutes = (ticks - midnight) / 60.0

    # broken sensor: a room with people in the break window; break at a tick that
    # follows a non-zero count, so the true answer is that tick
    win = np.flatnonzero((hours >= BREAK_WINDOW_H[0]) & (hours < BREAK_WINDOW_H[1]))
    win = win[win >= 1]
    def break_ticks(j: int) -> list[int]:
        return [int(i) for i in win if counts[i - 1, j] > 0]
    cands = [j for j in range(len(ids)) if peak[j] >= MIN_TASK_PEAK and break_ticks(j)]
    cands = cands or [j for j in range(len(ids)) if break_ticks(j)]
    if not cands:
        raise OccustreamError("the simulated day has nobody in the building; no round possible")
    b = _pick(choice, cands)
    i_break = _pick(choice, break_ticks(b))
    counts[i_break:, b] = 0
    start = trailing_zero_start(counts[:, b])
    broken = Task("broken_sensor",
                  f"The sensor of {locs[b].name} breaks during the day and reports zero from "
                  "then on. From what time does it report zero continuously?",
                  {"location": ids[b], "answer": "time"},
                  float(minutes[start]) if start is not None and start < len(ticks) else 0.0)
    peak = counts.max(axis=0)

    # threshold: a busy room (not the broken one), a threshold between 35 % and 70 % of peak
    others = [j for j in range(len(ids)) if j != b]
    busy = [j for j in others if peak[j] >= MIN_TASK_PEAK] or \
        [j for j in others if peak[j] >= 2] or others
    r = _pick(choice, busy)
    share = float(choice.uniform(*THRESHOLD_SHARE))
    thr = max(1, int(round(share * peak[r])))
    n_over = int((counts[:, r] > thr).sum())
    threshold = Task("threshold",
                     f"Count the 5-minute intervals in which the occupancy of {locs[r].name} "
                     f"exceeds {thr}.",
                     {"location": ids[r], "threshold": thr, "answer": "count",
                      "max": len(ticks)}, n_over)

    # night region: mean total occupancy 18:00-06:00 per floor, among up to
    # NIGHT_CHOICES floors drawn for the round (a building's night ranking hardly
    # changes from day to day, so the choices vary instead)
    regions = regions_of(site)
    if len(regions) > NIGHT_CHOICES:
        keep = sorted(choice.choice(len(regions), size=NIGHT_CHOICES, replace=False).tolist())
        regions = tuple(regions[i] for i in keep)
    ranking = region_ranking(counts, regions, ids, night_mask(ticks, midnight))
    night = Task("night_region",
                 f"Of {', '.join(g.name for g in regions)}: which region is the most occupied "
                 "at night (18:00 to 06:00), by mean number of people?",
                 {"choices": [{"id": g.id, "name": g.name} for g in regions],
                  "answer": "region"},
                 ranking[0][0], {"ranking": [{"id": k, "mean": round(v, 2)}
                                            for k, v in ranking]})

    # routine event: a classroom's first lecture (else a busy room's first busy period)
    def first_half(j: int) -> int:
        return int(np.flatnonzero(counts[:, j] >= math.ceil(peak[j] / 2))[0])
    rooms = [j for j in others if locs[j].kind == "classroom" and peak[j] >= MIN_TASK_PEAK
             and first_half(j) > 0]
    rooms = rooms or [j for j in others if peak[j] >= 2 and first_half(j) > 0] or others
    e = _pick(choice, rooms)
    word = _event_word(locs[e].kind)
    routine = Task("routine_event",
                   f"A {word} takes place in {locs[e].name} regularly. When does the first "
                   f"{word} of the day start (the first 5-minute tick at which the room "
                   "holds at least half of its peak occupancy of the day)?",
                   {"location": ids[e], "answer": "time"},
                   float(minutes[first_half(e)]) if peak[e] > 0 else 0.0)
    return counts, (threshold, night, broken, routine)


def release_day(mech: registry.StreamMechanism, ticks: np.ndarray, counts: np.ndarray, *,
                name: str, epsilon_day: float, rng: np.random.Generator | None = None
                ) -> tuple[np.ndarray, list[LedgerRecord]]:
    """Release a day tick by tick; every release charged before its noise is drawn.

    A mechanism charged per day (``Cost.day_rho`` > 0, device-day) is charged its whole
    day to a :class:`DayBudget` at the first tick; the others to a per-tick
    :class:`Accountant` whose cap is the mechanism's own ε per tick.

    Args:
        mech: a built registry mechanism.
        ticks: tick times (epoch s).
        counts: true counts (T, L).
        name: the ledger scope's name (the round id).
        epsilon_day: the day budget's ε (mechanisms charged per day only).
        rng: noise generator; None → the project's cryptographic generator.

    Returns:
        (released values (T, L), ledger records).
    """
    rng = resolve_rng(rng)
    n_loc = counts.shape[1]
    cost = mech.cost(n_loc)
    records: list[LedgerRecord] = []
    acct = None
    if cost.day_rho > 0:
        day = DayBudget(epsilon_day, cost.budget.delta or DEFAULT_DELTA,
                        shares={cost.day_share or "all": 1.0}, name=f"game:{name}")
        records.append(day.charge(day=int(ticks[0] // 86400) if len(ticks) else 0,
                                  share=cost.day_share or "all", mechanism=mech.name,
                                  rho=cost.day_rho, n_locations=cost.n_values,
                                  sensitivity=cost.sensitivity, note="game round"))
    else:
        acct = Accountant(Budget(cost.epsilon, cost.budget.delta), name=f"game:{name}")
    out = np.zeros(counts.shape, dtype=float)
    state: bytes | None = None
    for i, t in enumerate(ticks):
        k = int(round(float(t) / TICK_S))
        if acct is not None:
            records.append(acct.spend(cost.epsilon, mechanism=mech.name, tick=k,
                                      delta=cost.budget.delta, parts=cost.parts,
                                      composition=cost.composition, n_locations=cost.n_values,
                                      sampler=cost.sampler, guarantee=cost.guarantee))
        step = mech.update(state, counts[i], rng=rng, tick=k)
        state = step.state
        out[i] = step.values
    return out, records


def make_round(site: Site, *, mechanism: str, epsilon: float, seed: int | None = None,
               round_id: str | None = None, rng: np.random.Generator | None = None) -> Round:
    """Simulate a weekday, ask the four tasks, release the day with ``mechanism`` at ε.

    Args:
        site: the site (see :func:`game_site` for large campuses).
        mechanism: a registry mechanism with a formal guarantee.
        epsilon: ε per tick (event-level) or per device-day (device-day mechanisms).
        seed: the simulation's and the questions' seed (None: random).
        round_id: the id (None: random).
        rng: the release's noise generator (None: the project's cryptographic one).
    """
    if mechanism not in game_mechanisms():
        raise InvalidParameterError(
            f"mechanism must be one of {game_mechanisms()}, not {mechanism!r}")
    if not (isinstance(epsilon, int | float) and math.isfinite(epsilon) and epsilon > 0):
        raise InvalidParameterError(f"epsilon must be a positive number, not {epsilon!r}")
    seed = secrets.randbits(31) if seed is None else int(seed)
    rid = round_id or secrets.token_urlsafe(9)
    start = FIRST_DAY + timedelta(days=seed % 5)
    midnight = start.timestamp()
    sim = simulate(site, days=1, seed=seed, start=start, scenarios=Scenarios.none())
    table = sim.occupancy(tick_s=TICK_S)
    ticks = np.asarray(table.ticks, float)
    choice = np.random.default_rng(seed)
    true, tasks = make_tasks(site, ticks, table.counts, midnight, choice)
    params = registry.ReleaseParams(
        epsilon=float(epsilon), epsilon_day=float(epsilon), delta=DEFAULT_DELTA,
        paths=tuple(tuple(p) for p in site.hierarchy()), ticks_per_day=TICKS_PER_DAY,
        capacities=tuple(site.capacities))
    mech = registry.build(mechanism, params)
    released, records = release_day(mech, ticks, true, name=rid, epsilon_day=float(epsilon),
                                    rng=rng)
    cost = mech.cost(len(site.locations))
    cls = registry.REGISTRY[mechanism]
    privacy = {
        "unit": cls.unit, "guarantee": cost.guarantee, "composition": cost.composition,
        "epsilon": float(epsilon), "epsilon_release": cost.epsilon,
        "delta": cost.budget.delta, "charged_per": "day" if cost.day_rho > 0 else "tick",
        "releases_charged": len(records), "accountant": f"game:{rid}",
        "note": cost.note,
    }
    return Round(
        id=rid, seed=seed, day=start.strftime("%A %Y-%m-%d"), midnight=midnight,
        mechanism=mechanism, epsilon=float(epsilon), unit=cls.unit, meta=mech.meta(),
        privacy=privacy, locations=tuple(site.location_ids),
        names={loc.id: loc.name for loc in site.locations}, regions=regions_of(site),
        ticks=ticks, released=released, true=true, tasks=tasks)


# -- scoring --------------------------------------------------------------------------------
@dataclass(frozen=True)
class TaskResult:
    """A task's outcome: the estimate, the truth, the error and the accuracy in [0, 1]."""

    task: str
    estimate: int | str | float | None
    truth: int | str | float
    error: float | None
    accuracy: float
    points: int = 0


def parse_answers(task_params: Mapping[str, Mapping[str, Any]], raw: Mapping[str, Any]
                  ) -> dict[str, int | str | float | None]:
    """Validate a submission: ``{task: estimate}`` (missing / empty: unanswered)."""
    if not isinstance(raw, Mapping):
        raise InvalidParameterError(f"answers must be an object, not {reprlib.repr(raw)}")
    unknown = sorted(set(raw) - set(TASKS))
    if unknown:
        raise InvalidParameterError(f"answers must only name tasks {list(TASKS)}, not {unknown}")
    out: dict[str, int | str | float | None] = {}
    for task in TASKS:
        v = raw.get(task)
        if v is None or v == "":
            out[task] = None
        elif task == "threshold":
            hi = int(task_params[task].get("max", TICKS_PER_DAY))
            if isinstance(v, bool) or not isinstance(v, int | str):
                raise InvalidParameterError(f"threshold must be an integer, not {reprlib.repr(v)}")
            try:
                n = int(v)
            except ValueError:
                raise InvalidParameterError(
                    f"threshold must be an integer, "
                    f"not {reprlib.repr(v)}") from None
            if not 0 <= n <= hi:
                raise InvalidParameterError(
                    f"threshold must be in [0, {hi}], "
                    f"not {reprlib.repr(v)}")
            out[task] = n
        elif task == "night_region":
            choices = [c["id"] for c in task_params[task]["choices"]]
            if v not in choices:
                raise InvalidParameterError(
                    f"night_region must be one of {choices}, "
                    f"not {reprlib.repr(v)}")
            out[task] = str(v)
        else:
            out[task] = parse_hhmm(v, task)
    return out


def accuracy(task: Task, estimate: int | str | float | None) -> TaskResult:
    """Accuracy of one estimate against the true answer (§3.2's measure per task).

    * ``threshold``: 1 − |error| / max(true count, THRESHOLD_SLACK_TICKS), at least 0;
    * ``night_region``: 1 − (rank of the choice in the true ranking) / (regions − 1);
    * ``broken_sensor`` / ``routine_event``: 1 − |minutes off| / BROKEN_ZERO_MIN
      (resp. ROUTINE_ZERO_MIN), at least 0;
    * unanswered: 0.
    """
    if estimate is None:
        return TaskResult(task.id, None, task.answer, None, 0.0)
    if task.id == "threshold":
        err = abs(float(estimate) - float(task.answer))
        acc = 1.0 - err / max(float(task.answer), THRESHOLD_SLACK_TICKS)
    elif task.id == "night_region":
        ranking = [r["id"] for r in task.detail["ranking"]]
        means = {r["id"]: r["mean"] for r in task.detail["ranking"]}
        # rank = regions strictly more occupied than the choice (ties share a rank)
        err = float(sum(1 for k in ranking if means[k] > means[str(estimate)]))
        acc = 1.0 - err / max(len(ranking) - 1, 1)
    else:
        err = abs(float(estimate) - float(task.answer))
        zero = BROKEN_ZERO_MIN if task.id == "broken_sensor" else ROUTINE_ZERO_MIN
        acc = 1.0 - err / zero
    return TaskResult(task.id, estimate, task.answer, err, float(min(max(acc, 0.0), 1.0)))


def time_factor(elapsed_s: float) -> float:
    """1 up to PAR_S, linear down to TIME_FLOOR at TIME_LIMIT_S, 0 after (late)."""
    if elapsed_s <= PAR_S:
        return 1.0
    if elapsed_s > TIME_LIMIT_S:
        return 0.0
    return 1.0 - (1.0 - TIME_FLOOR) * (elapsed_s - PAR_S) / (TIME_LIMIT_S - PAR_S)


def rounds_bonus(rounds_played: int) -> float:
    """The multiplier for having played ``rounds_played`` rounds before this one."""
    return 1.0 + ROUND_BONUS * min(max(int(rounds_played), 0), ROUND_BONUS_CAP)


def points(acc: float, elapsed_s: float, rounds_played: int) -> int:
    """Points of one task: POINTS_PER_TASK × accuracy × time factor × rounds bonus."""
    return int(round(POINTS_PER_TASK * acc * time_factor(elapsed_s)
                     * rounds_bonus(rounds_played)))


def score(rnd: Round, answers: Mapping[str, int | str | float | None], elapsed_s: float,
          rounds_played: int) -> dict[str, Any]:
    """Score a submission and reveal the truth.

    Returns:
        ``{"points", "time_factor", "bonus", "late", "elapsed_s", "tasks": [...]}``;
        each task has its estimate, truth, error, accuracy and points, times also as
        ``HH:MM``, and the true (modified) series of its room for the reveal chart.
    """
    results = []
    total = 0
    for task in rnd.tasks:
        res = accuracy(task, answers.get(task.id))
        pts = points(res.accuracy, elapsed_s, rounds_played)
        total += pts
        doc: dict[str, Any] = {"task": task.id, "estimate": res.estimate, "truth": res.truth,
                               "error": res.error, "accuracy": round(res.accuracy, 4),
                               "points": pts, **dict(task.detail)}
        if task.params.get("answer") == "time":
            doc["truth_hhmm"] = hhmm(float(task.answer))
            doc["estimate_hhmm"] = None if res.estimate is None else hhmm(float(res.estimate))
        if "location" in task.params:
            doc["location"] = task.params["location"]
            doc["true_series"] = rnd.true_series(str(task.params["location"]))
        results.append(doc)
    return {"points": total, "time_factor": round(time_factor(elapsed_s), 4),
            "bonus": rounds_bonus(rounds_played), "late": elapsed_s > TIME_LIMIT_S,
            "elapsed_s": round(float(elapsed_s), 2), "tasks": results}


def trace(rnd: Round, player: str, result: Mapping[str, Any], rounds_played: int,
          ts: float) -> dict[str, Any]:
    """The trace kept of a played round (post-demo evaluation, §3.2): no true series."""
    return {
        "round": rnd.id, "player": player, "ts": round(float(ts), 3), "day": rnd.day,
        "seed": rnd.seed, "mechanism": rnd.mechanism, "unit": rnd.unit,
        "epsilon": rnd.epsilon, "elapsed_s": result["elapsed_s"], "late": result["late"],
        "rounds_before": int(rounds_played), "time_factor": result["time_factor"],
        "bonus": result["bonus"], "points": result["points"],
        "tasks": [{k: t.get(k) for k in ("task", "estimate", "truth", "error", "accuracy",
                                           "points")} for t in result["tasks"]],
    }
