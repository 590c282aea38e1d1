"""One simulated dbh week (with every scenario) shared by the simulator tests."""

from __future__ import annotations

import numpy as np
import pytest

from occupancy.oracle import OccupancyTable
from simulator import Scenarios, Simulation, simulate

WEEK_SEED = 11
MALFORMED_RATE = 0.002


@pytest.fixture(scope="session")
def week() -> Simulation:
    """dbh, Monday 2026-01-05 .. Sunday, all scenarios, malformed records at 0.2 %."""
    scenarios = Scenarios(malformed_rate=MALFORMED_RATE)
    return simulate("dbh", days=7, seed=WEEK_SEED, scenarios=scenarios)


@pytest.fixture(scope="session")
def week_occupancy(week: Simulation) -> OccupancyTable:
    """The oracle's occupancy of the week, 5-minute ticks over the whole week."""
    ticks = np.arange(week.start_ts, week.end_ts, 300.0)
    return week.occupancy(300, ticks=ticks)
