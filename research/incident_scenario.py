"""Alerts vs incidents for the simulator's injected over-capacity crowds (issue 18 item 3).

Offline, no broker or Redis: the simulator's events (:func:`simulator.simulate` with the
``overcapacity`` scenario only) → the oracle's true counts per tick → the pipeline's
own release stage (:class:`streams.pipeline.release.Releaser`, default MIDE settings:
TSLM, β = 0.05, hourly decisions on) → each positive decision is one alert as before;
the same decision sequence folded by :func:`occupancy.incidents.step` (as the read
model's writer does) gives the incidents. Reported per injected crowd: the alerts at
its location and the incidents, and over the whole run the totals per location.

Run: ``python -m research.incident_scenario [--building dbh] [--days 1] [--seed 7]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from typing import Any

import numpy as np

from occupancy import incidents as inc


def run(building: str = "dbh", *, days: float = 1.0, seed: int = 7,
        quiet_s: float = inc.QUIET_S, mechanism: str = "laplace",
        secret: bytes = b"incident-scenario-secret") -> dict[str, Any]:
    """Simulate, release, decide; count alerts and incidents (see the module docstring)."""
    from occupancy.buildings import load_site
    from simulator.simulation import Scenarios, simulate
    from streams.pipeline.release import Releaser
    from streams.settings import Settings

    site = load_site(building)
    sim = simulate(site, days=days, seed=seed,
                   scenarios=Scenarios(overcapacity=True, broken_ap=False,
                                       weekly_meeting=False))
    # event-level MIDE (per-tick and per-hour decisions): the setting the issue measured
    settings = Settings(site=building, mechanisms=(mechanism,), secret=secret,
                        privacy_unit="event")
    releaser = Releaser(settings.release_config(), site)
    table = sim.occupancy(tick_s=settings.tick_s)
    states: dict[str, bytes | None] = {}
    state: dict[str, Any] | None = None
    alerts: list[dict[str, Any]] = []
    records: dict[str, dict[str, Any]] = {}
    events: list[dict[str, Any]] = []
    for i, tick in enumerate(table.ticks):
        counts = [int(c) for c in table.counts[i]]
        out, states = releaser.run(float(tick), counts, [], states)
        alerts += out.alerts
        rel = next((r for r in out.releases if r.values), None)
        values = dict(zip(site.location_ids, rel.values, strict=False)) if rel else None
        s = inc.step(state, float(tick), out.alerts, values, quiet_s=quiet_s,
                     mechanism=mechanism)
        state = s.state
        events += s.events
        records.update({k: dict(v) for k, v in s.records.items()})
    crowds = []
    names = {loc.id: loc.name for loc in site.locations}
    for sc in sim.truth["scenarios"]:
        if sc["type"] != "overcapacity":
            continue
        loc = sc["location"]
        at = [a for a in alerts if a["location"] == loc]
        incs = [r for r in records.values() if r["location"] == loc]
        crowds.append({
            "location": loc, "name": names.get(loc, loc), "capacity": sc["capacity"],
            "crowd_start": sc["start_ts"], "crowd_end": sc["end_ts"],
            "alerts": len(at),
            "alerts_by_window": dict(Counter(a.get("window", "tick") for a in at)),
            "incidents": len(incs),
            "incident": [{k: r[k] for k in ("id", "opened", "last_seen", "resolved", "peak",
                                            "decisions")} for r in incs],
        })
    per_loc_alerts = Counter(a["location"] for a in alerts)
    per_loc_inc = Counter(r["location"] for r in records.values())
    return {
        "building": building, "days": days, "seed": seed, "quiet_s": quiet_s,
        "mide": {"algorithm": settings.mide_algorithm, "beta": settings.mide_beta,
                 "hourly": settings.mide_hourly},
        "ticks": len(table.ticks), "crowds": crowds,
        "alerts_total": len(alerts), "incidents_total": len(records),
        "events_total": len(events),
        "events_by_kind": dict(Counter(e["event"] for e in events)),
        "locations_alerting": len(per_loc_alerts),
        "alerts_per_location_max": max(per_loc_alerts.values(), default=0),
        "incidents_per_location_max": max(per_loc_inc.values(), default=0),
        "true_over_capacity_ticks": int(np.sum(
            table.counts > np.asarray(site.capacities)[None, :])),
    }


def main(argv: list[str] | None = None) -> int:
    """Print the comparison as JSON."""
    p = argparse.ArgumentParser(prog="python -m research.incident_scenario",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--building", default="dbh")
    p.add_argument("--days", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--quiet-s", type=float, default=inc.QUIET_S)
    args = p.parse_args(argv)
    print(json.dumps(run(args.building, days=args.days, seed=args.seed,
                         quiet_s=args.quiet_s), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
