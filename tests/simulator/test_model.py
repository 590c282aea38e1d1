"""Simulator realism, scenarios and the malformed-record contract (one shared week)."""

from __future__ import annotations

import collections

import numpy as np

from occupancy.oracle import DEFAULT_LATENESS_S, DEFAULT_MAX_FUTURE_S, OccupancyTable
from occupancy.schema import EventClock, Invalid, Observation, validate
from simulator import Simulation
from simulator.events import MAX_DELAY_S

DAY_S = 86_400


def _hour_of_day(sim: Simulation, ticks: np.ndarray) -> np.ndarray:
    return ((ticks - sim.start_ts) % DAY_S) // 3600


def test_daily_profile_peaks_in_the_day_and_is_low_at_night(
    week: Simulation, week_occupancy: OccupancyTable
) -> None:
    occ = week_occupancy
    total = occ.counts.sum(axis=1)
    hour = _hour_of_day(week, occ.ticks)
    day = ((occ.ticks - week.start_ts) // DAY_S).astype(int)
    for d in range(5):  # Monday .. Friday
        today = day == d
        by_hour = np.array([total[today & (hour == h)].mean() for h in range(24)])
        assert 9 <= int(np.argmax(by_hour)) <= 17, by_hour
        night = by_hour[[0, 1, 2, 3, 4, 5]].mean()
        midday = by_hour[10:16].mean()
        assert midday > 10 * max(night, 1.0), (d, midday, night)
        assert by_hour[21:24].mean() < 0.3 * midday  # evening low
        assert night > 0  # always-on lab devices


def test_weekend_is_lower_than_weekdays(week: Simulation, week_occupancy: OccupancyTable) -> None:
    total = week_occupancy.counts.sum(axis=1)
    day = ((week_occupancy.ticks - week.start_ts) // DAY_S).astype(int)
    per_day = np.array([total[day == d].sum() for d in range(7)])
    assert per_day[5:].max() < 0.3 * per_day[:5].min(), per_day


def test_volume_is_thesis_like(week: Simulation) -> None:
    # thesis §4.2: 3.9M events over 3 months from 64 APs → ~40k–60k per weekday
    ts = np.array([e["ts"] for e in week.events() if isinstance(e.get("ts"), float)])
    day = ((ts - week.start_ts) // DAY_S).astype(int)
    per_day = np.bincount(day[(day >= 0) & (day < 7)], minlength=7)
    assert (per_day[:5] > 30_000).all() and (per_day[:5] < 90_000).all(), per_day
    assert week.truth["n_devices"] > 1000


def test_population_has_two_device_people_and_randomised_macs(week: Simulation) -> None:
    devices = set(week.presence()["device"].tolist())
    randomised = [m for m in devices if int(m[:2], 16) & 0x02]
    assert len(randomised) > 20  # visitors' locally administered MACs, one per connection
    assert all(m == m.lower() for m in devices)
    pop = week.truth["population"]
    assert {"student", "faculty", "lab", "visitor"} <= set(pop)
    assert week.truth["n_devices"] > sum(v for k, v in pop.items() if k != "visitor")


def test_overcapacity_exactly_when_injected(week: Simulation,
                                            week_occupancy: OccupancyTable) -> None:
    occ = week_occupancy
    cap = np.array(week.site.capacities)
    over = occ.counts > cap
    injected = np.zeros_like(over)
    scen = [s for s in week.truth["scenarios"] if s["type"] == "overcapacity"]
    assert len(scen) == 2
    for s in scen:
        j = occ.locations.index(s["location"])
        rows = (occ.ticks >= s["start_ts"]) & (occ.ticks < s["end_ts"])
        assert rows.sum() == (s["end_ts"] - s["start_ts"]) / 300
        injected[rows, j] = True
    assert np.array_equal(over, injected), list(zip(*np.nonzero(over != injected), strict=True))[:5]
    # the crowds alone exceed capacity; normal use stays below it
    normal = np.where(injected, 0, occ.counts) / cap
    assert normal.max() <= 1.0


def test_broken_ap_goes_silent(week: Simulation) -> None:
    (s,) = [s for s in week.truth["scenarios"] if s["type"] == "broken_ap"]
    ts = [e["ts"] for e in week.events()
          if e.get("ap") == s["ap"] and isinstance(e.get("ts"), float)]
    before = [t for t in ts if t < s["start_ts"]]
    after = [t for t in ts if s["start_ts"] <= t < week.end_ts]
    assert len(before) > 100
    assert after == []


def test_weekly_meeting_happens(week: Simulation, week_occupancy: OccupancyTable) -> None:
    (s,) = [s for s in week.truth["scenarios"] if s["type"] == "weekly_meeting"]
    j = week_occupancy.locations.index(s["location"])
    rows = (week_occupancy.ticks > s["start_ts"]) & (week_occupancy.ticks < s["end_ts"])
    assert (week_occupancy.counts[rows, j] >= s["attendees"]).all()


def test_jitter_within_lateness(week: Simulation) -> None:
    delay = week.arrival_times() - week._c["ts_ms"] / 1000.0
    assert delay.min() >= 0 and delay.max() <= MAX_DELAY_S <= DEFAULT_LATENESS_S / 3
    assert np.all(np.diff(week.arrival_times()) >= 0)


def test_malformed_records_get_their_intended_reason(week: Simulation) -> None:
    intended = dict(map(tuple, week.truth["malformed"]))
    assert len(intended) > 100
    kinds = collections.Counter(intended.values())
    assert len(kinds) == 9  # every kind occurs
    clock = EventClock(DEFAULT_LATENESS_S, DEFAULT_MAX_FUTURE_S)
    ap_location = week.site.ap_location
    seen = 0
    for i, rec in enumerate(week.events()):
        got = validate(rec, ap_location, clock)
        if i in intended:
            assert isinstance(got, Invalid) and got.reason == intended[i], (i, rec, got)
            seen += 1
        else:
            assert isinstance(got, Observation), (i, rec, got)
    assert seen == len(intended) == len(week) - week.n_valid


def test_fast_occupancy_equals_the_oracle() -> None:
    from simulator import Scenarios, simulate

    sim = simulate("dbh", days=0.25, seed=4, start="2026-01-07T10:00",
                   scenarios=Scenarios(malformed_rate=0.01))
    for tick_s, validity_s in ((300.0, 600.0), (60.0, 600.0), (300.0, 120.0)):
        fast = sim.occupancy(tick_s, validity_s=validity_s, method="fast")
        ref = sim.occupancy(tick_s, validity_s=validity_s, method="oracle")
        assert np.array_equal(fast.ticks, ref.ticks) and fast.locations == ref.locations
        assert np.array_equal(fast.counts, ref.counts)
    ticks = np.arange(sim.start_ts + 3600, sim.start_ts + 7200, 300.0)
    assert np.array_equal(sim.occupancy(ticks=ticks, method="fast").counts,
                          sim.occupancy(ticks=ticks, method="oracle").counts)


def test_lunch_peak_in_the_cafe(week: Simulation, week_occupancy: OccupancyTable) -> None:
    (cafe,) = [loc.id for loc in week.site.locations if loc.name == "Café"]
    j = week_occupancy.locations.index(cafe)
    hour = _hour_of_day(week, week_occupancy.ticks)
    weekday = week_occupancy.ticks < week.start_ts + 5 * DAY_S
    counts = week_occupancy.counts[:, j]

    def mean(h0: int, h1: int) -> float:
        return float(counts[weekday & (hour >= h0) & (hour < h1)].mean())

    assert mean(12, 14) > 1.3 * max(mean(9, 11), mean(15, 17))
