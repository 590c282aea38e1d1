"""The simulator's injected crowds through the real release stage: alerts vs incidents."""

from __future__ import annotations

import pytest

from research.incident_scenario import run


@pytest.mark.parametrize("seed", [1, 7])
def test_each_injected_crowd_is_one_incident(seed: int) -> None:
    out = run("dbh", days=1, seed=seed)
    assert len(out["crowds"]) == 2
    for crowd in out["crowds"]:
        # before: one alert per positive tick and hour decision (the complaint)
        assert crowd["alerts"] >= 5
        assert crowd["incidents"] == 1
        (rec,) = crowd["incident"]
        assert sum(rec["decisions"].values()) == crowd["alerts"]  # every decision fed it
        assert crowd["crowd_start"] <= rec["opened"] < crowd["crowd_end"]
        assert rec["resolved"] - rec["last_seen"] >= out["quiet_s"]
    # other locations: isolated positive decisions hours apart are separate episodes
    assert out["incidents_total"] < out["alerts_total"]
