"""The demo's terminal view lists incidents (one line per crowd), not one per decision."""

from __future__ import annotations

from typing import Any

from dashboards.synthetic import write_decisions

T0 = 1_767_625_200  # Mon 2026-01-05 15:00 UTC


def test_render_shows_one_line_per_incident(redis_client: Any) -> None:
    from occustream.demo import _incident_lines

    assert _incident_lines(redis_client, {}) == []
    dec = {"location": "r1", "capacity": 80, "algorithm": "tslm", "beta": 0.05}
    for k in range(6):  # six positive ticks, an hour decision, then quiet: one incident
        ds = [dec] + ([{**dec, "window": "hour"}] if k == 5 else [])
        write_decisions(redis_client, T0 + 300 * k, ds, {"r1": 90.0 + k})
    lines = _incident_lines(redis_client, {"r1": "Room 1"})
    assert lines[0] == "  incidents: 1 open, 1 in total"
    assert len(lines) == 2 and "Room 1: OPEN since Mon 15:00, last seen 15:25" in lines[1]
    assert "peak ≈ 95" in lines[1] and "6 tick + 1 hour decisions" in lines[1]
    for k in range(6, 10):
        write_decisions(redis_client, T0 + 300 * k, [], {"r1": 10.0})
    lines = _incident_lines(redis_client, {"r1": "Room 1"})
    assert lines[0] == "  incidents: 0 open, 1 in total"
    assert "Room 1: resolved Mon 15:00–15:25" in lines[1]
