"""Population and schedule model: who is where, when (the *stays* of every device).

One building at a time (a campus is its buildings side by side). The population
(thesis §4.2: students, faculty, staff, visitors of a university building):

* **Students** enrol in courses. Every classroom has a weekly timetable: eight fixed
  80-minute slots a day (08:00 … 18:30); in each slot a fixed, slot-dependent share
  of the rooms (peaks late morning and early afternoon, few evening courses) holds a
  Mon/Wed/Fri course and another share a Tue/Thu course. Enrolment is 30–70 % of the
  room's fire-code capacity, attendance 85 %, so normal use stays below capacity.
  Between classes students wait in the corridor (short gaps) or go to a lounge, the
  lobby or the café (long gaps; lunch), some visit an office (office hours) or a
  restroom; some stay to study after their last class.
* **Faculty and staff** work in office suites (≈ 40 % of capacity), arrive around
  09:00, leave around 17:30, lunch in the café or a lounge, attend meetings in
  meeting rooms; a few come in at weekends.
* **Lab members** (graduate students) work in labs, later hours, more weekends;
  every lab has one always-on device (night-time floor of occupancy).
* **Visitors** come from a pool (repeat visitors), stay 15 min – 4 h in public
  areas, lounges and meeting rooms; half of them randomise their MAC address.

Some people carry two devices (a phone and a laptop; the laptop sleeps through some
stays). A *stay* is ``(location, start, end)`` in seconds since the simulation start;
:mod:`simulator.events` turns stays into connectivity events.

Randomness: one :class:`numpy.random.SeedSequence` per building; from it one child
per purpose (timetable, visitors, …) and one per person (spawned in a fixed order).
A person's sequence generates the state of the person's planning generator and of
one PCG64 stream per device — so the output is a pure function of the seed and the
arguments (byte-identical runs), and each device's randomness is its own.
"""

from __future__ import annotations

import bisect
import math
import random
from dataclasses import dataclass, field

import numpy as np

from occupancy.buildings import Building, Site

DAY_S = 86_400.0
HOUR_S = 3_600.0
MIN_S = 60.0

#: Course slots: start hours, 80 minutes each (every 90 minutes).
SLOT_START_H = (8.0, 9.5, 11.0, 12.5, 14.0, 15.5, 17.0, 18.5)
SLOT_LEN_S = 80 * MIN_S
#: Share of the classrooms used in a slot, per day pattern.
SLOT_P = (0.06, 0.08, 0.10, 0.07, 0.09, 0.08, 0.045, 0.025)
#: Day patterns of a course: Mon/Wed/Fri or Tue/Thu (weekday numbers, Monday = 0).
PATTERNS = ((0, 2, 4), (1, 3))
ENROL_FRACTION = (0.30, 0.70)
ATTENDANCE_P = 0.85
COURSES_PER_STUDENT = 3.0
OFFICE_FILL = 0.4
LAB_FILL = 0.25
VISITORS_PER_WEEKDAY_PER_AP = 1.0
VISITOR_POOL_FACTOR = 8
#: (P(two devices)) per role.
MAX_DEVICES = 2
TWO_DEVICES_P = {"student": 0.35, "faculty": 0.6, "lab": 0.5, "visitor": 0.1}
RANDOMISED_MAC_P = 0.5  # visitors whose device randomises its MAC per connection


class PersonRng(random.Random):
    """A person's generator: Mersenne Twister seeded from the person's seed sequence.

    Planning draws scalars one at a time; ``random.Random`` does that ~10× faster than
    a numpy Generator. Methods mirror the numpy names used here.
    """

    def __init__(self, words: np.ndarray) -> None:
        super().__init__(int.from_bytes(words.tobytes(), "little"))

    def normal(self, mu: float, sigma: float) -> float:
        """A normal variate."""
        return self.normalvariate(mu, sigma)

    def integers(self, n: int) -> int:
        """Uniform integer in ``[0, n)``."""
        return self.randrange(n)

    def exponential(self, scale: float) -> float:
        """An exponential variate of mean ``scale``."""
        return self.expovariate(1.0 / scale)


def _clip(x: float, lo: float, hi: float) -> float:
    return lo if x < lo else hi if x > hi else x


def _cumulative(weights: list[int]) -> list[float]:
    """Cumulative shares (last < 1 avoided: the final bucket absorbs rounding)."""
    total = float(sum(weights)) or 1.0
    out, acc = [], 0.0
    for w in weights[:-1]:
        acc += w / total
        out.append(acc)
    return out


@dataclass
class Person:
    """One member of the population (state used while planning days)."""

    role: str  # student | faculty | lab | visitor | fixed | crowd
    home: int  # location index of office/lab, or -1
    seq: np.random.SeedSequence
    rng: PersonRng = field(init=False)
    devices: list[int] = field(default_factory=list)
    courses: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # weekday→[(slot, loc)]

    def __post_init__(self) -> None:
        # 2 words seed the planning generator, 4 words per device its PCG64 stream
        self.words = self.seq.generate_state(2 + 4 * MAX_DEVICES, np.uint64)
        self.rng = PersonRng(self.words[:2])


@dataclass
class Device:
    """A WiFi device: its owner, re-association interval and MAC behaviour."""

    person: int
    kind: str  # phone | laptop | fixed
    stream: tuple[int, int]  # PCG64 (state, increment), from the owner's seed sequence
    interval_s: float
    skip_p: float = 0.0  # probability it sleeps through a stay (laptops)
    randomised: bool = False
    offset_max_s: float = 5.0  # delay of the association event after arrival
    stays: list[tuple[int, float, float]] = field(default_factory=list)


class BuildingPlan:
    """Population and day-by-day stays of one building.

    Args:
        site: the site (location indices refer to ``site.location_ids``).
        building: the building to populate.
        seq: the building's seed sequence.
        scale: population multiplier (1.0 = the calibrated default).
    """

    def __init__(
        self, site: Site, building: Building, seq: np.random.SeedSequence, scale: float = 1.0
    ) -> None:
        self.site = site
        self.building = building
        self.scale = scale
        idx = site.location_index
        locs = building.locations
        self.loc_idx = [idx[loc.id] for loc in locs]
        self.cap = {idx[loc.id]: loc.capacity for loc in locs}
        by_kind: dict[str, list[int]] = {}
        for loc in locs:
            by_kind.setdefault(loc.kind, []).append(idx[loc.id])
        self.by_kind = by_kind
        floor_of = {idx[loc.id]: loc.floor for loc in locs}
        self.floor_of = floor_of
        corridors = {floor_of[i]: i for i in by_kind.get("corridor", [])}
        levels = {f.id: f.level for f in building.floors}
        self.corridor_of = {
            i: corridors.get(floor_of[i], next(iter(corridors.values()), i)) for i in self.loc_idx
        }
        publics = sorted(by_kind.get("public", []), key=lambda i: (levels[floor_of[i]], i))
        self.entrance = publics[0] if publics else self.corridor_of[self.loc_idx[0]]
        self.hangouts = by_kind.get("lounge", []) + by_kind.get("public", [])
        if not self.hangouts:
            self.hangouts = by_kind.get("corridor", []) or list(self.loc_idx)
        self.hang_cum = _cumulative([self.cap[i] for i in self.hangouts])
        self.restrooms = by_kind.get("restroom", [])
        self.offices = by_kind.get("office", [])
        self.office_cum = _cumulative([self.cap[i] for i in self.offices])
        self.meetings = by_kind.get("meeting", [])
        self.exits = by_kind.get("corridor", []) + by_kind.get("public", [])
        (self.tt_seq, self.visit_seq, self.people_seq, self.meet_seq) = seq.spawn(4)
        self.persons: list[Person] = []
        self.devices: list[Device] = []
        self._person_seqs = self.people_seq  # spawned lazily, in order
        self.visitor_pool: dict[int, int] = {}  # pool slot → person, created on first visit
        self.visitor_pool_size = 0
        self._build_population()

    # ------------------------------------------------------------------ population
    def _new_person(self, role: str, home: int = -1, two_p: float | None = None,
                    seq: np.random.SeedSequence | None = None) -> int:
        if seq is None:
            (seq,) = self._person_seqs.spawn(1)
        p = Person(role, home, seq)
        pid = len(self.persons)
        self.persons.append(p)
        if role == "fixed":
            self._new_device(pid, "fixed", 300.0)
            return pid
        phone_iv = float(p.rng.uniform(240.0, 460.0))
        self._new_device(pid, "phone", phone_iv,
                         randomised=role == "visitor" and p.rng.random() < RANDOMISED_MAC_P)
        two = TWO_DEVICES_P.get(role, 0.0) if two_p is None else two_p
        if p.rng.random() < two:
            self._new_device(pid, "laptop", float(p.rng.uniform(150.0, 400.0)),
                             skip_p=0.3)
        return pid

    def _new_device(self, pid: int, kind: str, interval_s: float,
                    *, skip_p: float = 0.0, randomised: bool = False) -> None:
        person = self.persons[pid]
        w = [int(x) for x in person.words[2 + 4 * len(person.devices):][:4]]
        stream = ((w[0] << 64) | w[1], (w[2] << 64) | w[3] | 1)
        person.devices.append(len(self.devices))
        self.devices.append(Device(pid, kind, stream, interval_s, skip_p, randomised))

    def _build_population(self) -> None:
        rng = np.random.Generator(np.random.PCG64(self.tt_seq))
        # weekly timetable: course = (loc, slot, pattern, enrolment)
        courses: list[tuple[int, int, tuple[int, ...], int]] = []
        rooms = self.by_kind.get("classroom", [])
        for slot, p in enumerate(SLOT_P):
            for pattern in PATTERNS:  # a fixed share of the rooms is used in every slot
                k = int(round(p * len(rooms)))
                for r in sorted(rng.choice(len(rooms), size=k, replace=False).tolist()):
                    frac = rng.uniform(*ENROL_FRACTION)
                    courses.append((rooms[r], slot, pattern, int(frac * self.cap[rooms[r]])))
        self.courses = courses
        total = sum(c[3] for c in courses)
        n_students = max(1, int(self.scale * total / COURSES_PER_STUDENT))
        students = [self._new_person("student") for _ in range(n_students)]
        for loc, slot, pattern, enrol in courses:
            k = min(enrol, n_students)
            for s in rng.choice(n_students, size=k, replace=False).tolist():
                person = self.persons[students[s]]
                for wd in pattern:
                    day = person.courses.setdefault(wd, [])
                    if all(sl != slot for sl, _ in day):
                        day.append((slot, loc))
        for loc in self.offices:
            for _ in range(max(1, round(self.scale * OFFICE_FILL * self.cap[loc]))):
                self._new_person("faculty", loc)
        for loc in self.by_kind.get("lab", []):
            for _ in range(max(1, round(self.scale * LAB_FILL * self.cap[loc]))):
                self._new_person("lab", loc)
            self._new_person("fixed", loc)
        n_aps = len(self.building.aps)
        self.visitors_per_day = self.scale * VISITORS_PER_WEEKDAY_PER_AP * n_aps
        pool = max(1, int(self.visitors_per_day * VISITOR_POOL_FACTOR))
        self.visitor_pool_size = pool

    def visitor(self, slot: int) -> int:
        """The person in visitor-pool ``slot``, created on the first visit.

        Its seed sequence is keyed by the slot, so creation order does not matter.
        """
        pid = self.visitor_pool.get(slot)
        if pid is None:
            vs = self.visit_seq
            seq = np.random.SeedSequence(vs.entropy, spawn_key=(*vs.spawn_key, 1 << 30, slot))
            pid = self.visitor_pool[slot] = self._new_person("visitor", seq=seq)
        return pid

    # ------------------------------------------------------------------ helpers
    def hangout(self, rng: PersonRng) -> int:
        """A lounge / public area, chosen in proportion to capacity."""
        return self.hangouts[bisect.bisect_right(self.hang_cum, rng.random())]

    def add_stays(self, pid: int, stays: list[tuple[int, float, float]]) -> None:
        """Give every device of person ``pid`` the stays (laptops sleep through some)."""
        person = self.persons[pid]
        for d in person.devices:
            dev = self.devices[d]
            for st in stays:
                if st[2] - st[1] <= 0:
                    continue
                if dev.skip_p and person.rng.random() < dev.skip_p:
                    continue
                dev.stays.append(st)

    def day_route(
        self, rng: PersonRng, appts: list[tuple[float, float, int]],
        arrive: float, leave: float, home: int,
    ) -> list[tuple[int, float, float]]:
        """Stays of one person-day: entrance, appointments, gap filling, exit.

        Args:
            rng: the person's generator.
            appts: ``(start, end, location)``, non-overlapping, sorted.
            arrive: arrival time (before the first appointment).
            leave: departure time (after the last appointment).
            home: the person's office/lab, or -1 (gaps then go to hangouts/corridors).
        """
        stays: list[tuple[int, float, float]] = []
        t = arrive
        ent_end = t + rng.uniform(60.0, 180.0)
        stays.append((self.entrance, t, ent_end))
        t = ent_end
        for s, e, loc in [*appts, (leave, leave, -1)]:
            if s - t > 0:
                stays.extend(self._fill(rng, t, s, home, loc))
            if loc >= 0:
                stays.append((loc, max(s, t), e))
                t = max(e, t)
        last = stays[-1][0] if stays else self.entrance
        out_end = leave + rng.uniform(60.0, 180.0)
        stays.append((self.corridor_of.get(last, self.entrance), leave, out_end))
        return [st for st in stays if st[2] > st[1]]

    def _fill(self, rng: PersonRng, t0: float, t1: float, home: int,
              nxt: int) -> list[tuple[int, float, float]]:
        gap = t1 - t0
        if home >= 0:
            return [(home, t0, t1)]
        if gap < 40 * MIN_S:
            if rng.random() < 0.5 or nxt < 0:
                return [(self.corridor_of.get(nxt, self.entrance) if nxt >= 0
                         else self.entrance, t0, t1)]
            return [(self.hangout(rng), t0, t1)]
        out = []
        if self.restrooms and rng.random() < 0.15:
            r0 = t0 + rng.uniform(0.0, gap - 6 * MIN_S)
            out.append((self.hangout(rng), t0, r0))
            rr = self.restrooms[int(rng.integers(len(self.restrooms)))]
            out.append((rr, r0, r0 + rng.uniform(3 * MIN_S, 6 * MIN_S)))
            out.append((self.hangout(rng), out[-1][2], t1))
            return out
        return [(self.hangout(rng), t0, t1)]

    # ------------------------------------------------------------------ days
    def plan_day(self, day: int, weekday: int, forced: dict[int, list[tuple[float, float, int]]]
                 ) -> None:
        """Plan every person's stays on one calendar day.

        Args:
            day: day number since the simulation's first midnight.
            weekday: Monday = 0.
            forced: person → extra appointments (recurring meeting), relative seconds.
        """
        t_day = day * DAY_S
        weekend = weekday >= 5
        meet_rng = np.random.Generator(np.random.PCG64(self.meet_seq.spawn(1)[0]))
        windows: dict[int, tuple[float, float]] = {}
        appts: dict[int, list[tuple[float, float, int]]] = {}
        for pid, p in enumerate(self.persons):
            rng = p.rng
            if p.role == "student":
                today = [] if weekend else p.courses.get(weekday, [])
                attended = sorted(sl for sl, _ in today if rng.random() < ATTENDANCE_P)
                room = dict(today)
                if attended:
                    ap_ = [(t_day + SLOT_START_H[sl] * HOUR_S,
                            t_day + SLOT_START_H[sl] * HOUR_S + SLOT_LEN_S, room[sl])
                           for sl in attended]
                    if self.offices and rng.random() < 0.08:
                        s = t_day + rng.uniform(10.0, 16.0) * HOUR_S
                        office = self.offices[bisect.bisect_right(self.office_cum, rng.random())]
                        ap_ = _insert(ap_, (s, s + 20 * MIN_S, office))
                    arrive = ap_[0][0] - rng.uniform(5.0, 20.0) * MIN_S
                    stay_on = rng.uniform(30.0, 150.0) if rng.random() < 0.3 else 0.0
                    leave = ap_[-1][1] + (stay_on + rng.uniform(1.0, 5.0)) * MIN_S
                    appts[pid] = ap_
                    windows[pid] = (arrive, leave)
                elif rng.random() < (0.04 if weekend else 0.1):
                    arrive = t_day + rng.uniform(10.0, 17.0) * HOUR_S
                    windows[pid] = (arrive, arrive + rng.uniform(1.0, 3.0) * HOUR_S)
                    appts[pid] = []
            elif p.role in ("faculty", "lab"):
                fac = p.role == "faculty"
                present = rng.random() < ((0.08 if fac else 0.25) if weekend else 0.85)
                if present or pid in forced:
                    mu_in, mu_out = (9.0, 17.5) if fac else (10.0, 18.5)
                    arrive = t_day + _clip(rng.normal(mu_in, 0.75), 6.5, 12.0) * HOUR_S
                    hours_out = rng.normal(mu_out, 1.0 if fac else 1.75)
                    if weekend:
                        hours_out = mu_in + rng.uniform(2.0, 5.0)
                    leave = t_day + _clip(hours_out, 13.0, 23.5) * HOUR_S
                    ap_ = []
                    if rng.random() < 0.6:
                        s = t_day + rng.uniform(11.75, 13.0) * HOUR_S
                        ap_.append((s, s + rng.uniform(20.0, 45.0) * MIN_S, self.hangout(rng)))
                    for a in forced.get(pid, []):
                        arrive, leave = min(arrive, a[0] - 15 * MIN_S), max(leave, a[1] + MIN_S)
                    windows[pid] = (arrive, leave)
                    appts[pid] = ap_
            elif p.role == "fixed":
                self.add_stays(pid, [(p.home, t_day, t_day + DAY_S)])
        # meetings among faculty/lab members present
        if not weekend:
            for room in self.meetings:
                for hour in range(9, 17):
                    if meet_rng.random() >= 0.3:
                        continue
                    s = t_day + hour * HOUR_S
                    e = s + 50 * MIN_S
                    free = [pid for pid, (a, b) in windows.items()
                            if self.persons[pid].role in ("faculty", "lab") and a < s and b > e]
                    hi = max(4, min(12, self.cap[room] // 3))
                    k = min(len(free), int(meet_rng.integers(3, hi)))
                    for i in meet_rng.choice(len(free), size=k, replace=False).tolist():
                        appts[free[i]].append((s, e, room))
        for pid, extra in forced.items():
            if pid in windows:
                appts[pid] = [a for a in appts[pid]
                              if not any(a[0] < f[1] and f[0] < a[1] for f in extra)] + extra
        for pid in sorted(windows):
            p = self.persons[pid]
            arrive, leave = windows[pid]
            ap_ = _non_overlapping(appts.get(pid, []))
            if ap_:
                arrive = min(arrive, ap_[0][0] - MIN_S)
                leave = max(leave, ap_[-1][1] + MIN_S)
            self.add_stays(pid, self.day_route(p.rng, ap_, arrive, leave, p.home))
        self._plan_visitors(day, weekday, t_day)

    def _plan_visitors(self, day: int, weekday: int, t_day: float) -> None:
        rng = np.random.Generator(np.random.PCG64(self.visit_seq.spawn(1)[0]))
        lam = self.visitors_per_day * (0.15 if weekday >= 5 else 1.0)
        n = min(int(rng.poisson(lam)), self.visitor_pool_size)
        places = self.hangouts + self.meetings
        for k in sorted(rng.choice(self.visitor_pool_size, size=n, replace=False).tolist()):
            pid = self.visitor(k)
            prng = self.persons[pid].rng
            arrive = t_day + prng.uniform(9.0, 17.0) * HOUR_S
            dur = _clip(prng.exponential(60.0), 15.0, 240.0) * MIN_S
            n_places = 1 + int(prng.random() < 0.4)
            cuts = sorted(prng.uniform(arrive, arrive + dur) for _ in range(n_places - 1))
            bounds = [arrive, *cuts, arrive + dur]
            ap_ = [(bounds[i], bounds[i + 1], places[int(prng.integers(len(places)))])
                   for i in range(n_places)]
            self.add_stays(pid, self.day_route(prng, ap_, arrive, arrive + dur, -1))

    def add_crowd(self, loc: int, t0: float, t1: float, size: int) -> list[int]:
        """Scenario: ``size`` extra devices at ``loc`` exactly during ``[t0, t1)``.

        Each associates at ``t0`` exactly, re-associates within the window and roams to
        an exit area (corridor or public space, spread by capacity) at ``t1`` exactly,
        then leaves; so in the oracle they count at ``loc`` for ticks in ``[t0, t1)``.
        """
        exits = [e for e in self.exits if e != loc] or [loc]
        w = np.array([self.cap[e] for e in exits], float)
        share = np.floor(w / w.sum() * size).astype(int)
        order = np.argsort(-(w / w.sum() * size - share), kind="stable")
        share[order[: size - share.sum()]] += 1
        targets = np.repeat(np.arange(len(exits)), share)
        pids = []
        for k in range(size):
            pid = self._new_person("crowd", two_p=0.0)
            dev = self.devices[self.persons[pid].devices[0]]
            dev.offset_max_s = 0.0
            dev.interval_s = min(dev.interval_s, 400.0)
            dev.stays.append((loc, t0, t1))
            ex = exits[int(targets[k])]
            dev.stays.append((ex, t1, t1 + float(self.persons[pid].rng.uniform(60.0, 240.0))))
            pids.append(pid)
        return pids


def _insert(appts: list[tuple[float, float, int]], a: tuple[float, float, int]
            ) -> list[tuple[float, float, int]]:
    """Add ``a`` unless it overlaps an existing appointment."""
    if any(a[0] < b[1] and b[0] < a[1] for b in appts):
        return appts
    return sorted([*appts, a])


def _non_overlapping(appts: list[tuple[float, float, int]]) -> list[tuple[float, float, int]]:
    """Sort and drop appointments that overlap an earlier kept one."""
    out: list[tuple[float, float, int]] = []
    for a in sorted(appts):
        if not out or a[0] >= out[-1][1]:
            out.append(a)
    return out


def crowd_size(capacity: int, factor: float = 1.3) -> int:
    """Number of devices that puts a location of ``capacity`` ``factor`` over it."""
    return int(math.ceil(capacity * factor)) + 1
