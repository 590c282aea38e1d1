"""`Scenarios.crowd_day` / `crowd_minutes`: the demo's crowds on its live day, an hour each."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from mechanisms.errors import InvalidParameterError
from simulator import simulate
from simulator.simulation import Scenarios

START = 1_768_293_000  # Tue 2026-01-13 08:30 UTC
MIDNIGHT = START - START % 86400


def test_crowds_on_the_first_day_for_an_hour_exceed_capacity_exactly_then() -> None:
    scen = replace(Scenarios.from_names(["overcapacity"]), crowd_day=0, crowd_minutes=60.0)
    sim = simulate("dbh", days=1, seed=1, start=START, scenarios=scen)
    crowds = sorted((s for s in sim.truth["scenarios"] if s["type"] == "overcapacity"),
                    key=lambda s: s["start_ts"])
    assert [(c["start_ts"] - MIDNIGHT, c["end_ts"] - MIDNIGHT) for c in crowds] == [
        (10 * 3600, 11 * 3600), (15 * 3600, 16 * 3600)]
    occ = sim.occupancy(tick_s=300)
    for c in crowds:
        j = occ.locations.index(c["location"])
        during = (occ.ticks >= c["start_ts"]) & (occ.ticks < c["end_ts"])
        assert during.sum() == 12 and (occ.counts[during, j] > c["capacity"]).all()
        assert (occ.counts[~during, j] <= c["capacity"]).all()
    # without the options: a one-day window from 08:30 puts them on day 1 (Wednesday)
    plain = simulate("dbh", days=1, seed=1, start=START,
                     scenarios=Scenarios.from_names(["overcapacity"]))
    assert all(s["start_ts"] >= MIDNIGHT + 86400 or s["end_ts"] > START + 86400
               for s in plain.truth["scenarios"] if s["type"] == "overcapacity")
    assert np.isfinite(occ.counts).all()


@pytest.mark.parametrize("bad", [{"crowd_day": -1}, {"crowd_day": True}, {"crowd_day": 1.5},
                                 {"crowd_minutes": 0.0}, {"crowd_minutes": 1e4}])
def test_crowd_options_are_checked(bad: dict) -> None:
    with pytest.raises(InvalidParameterError, match=next(iter(bad))):
        Scenarios(**bad)
