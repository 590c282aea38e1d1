"""Write a synthetic read model into Redis, exactly as the pipeline's cache writer does.

For tests, benchmarks, screenshots and ``occustream dashboard --synthetic``: the
values are made up (a daily occupancy curve per location plus noise), not releases of
any real data, so no budget is involved. Every write goes through
the read model's one writer (the ``queue_*`` functions of :mod:`readmodel.writer`), so
the dashboard is tested against exactly what the pipeline writes.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from mechanisms.registry import without_guarantee
from occupancy import incidents as inc
from occupancy import redis_layout as rl
from occupancy.buildings import Site
from occupancy.heatmap import baselines
from readmodel.writer import (
    queue_alert,
    queue_baselines,
    queue_history,
    queue_incident_step,
    queue_ledger,
    queue_meta,
    queue_update,
    queue_values,
)

log = logging.getLogger(__name__)

#: Public parameters written for each synthetic mechanism (``occ:{mech}:meta``).
DEFAULT_META: dict[str, dict[str, Any]] = {
    "laplace": {"epsilon": 0.5, "sensitivity": 1, "unit": "event-level (device, tick)"},
    "pegasus": {"epsilon": 0.5, "epsilon_p": 0.4, "epsilon_g": 0.1, "smoother": "median",
                "unit": "event-level (device, tick)"},
    "hpegasus": {"epsilon": 0.5, "levels": 3, "smoother": "median",
                 "unit": "event-level (device, tick)"},
    "ttl": {"ttl_s": 1800, "guarantee": "no formal guarantee"},
}


def write_meta(client: Any, mech: str, meta: Mapping[str, Any], tick_s: float) -> None:
    """Write a mechanism's public parameters (values JSON-encoded)."""
    pipe = client.pipeline(transaction=False)
    queue_meta(pipe, mech, {**meta, "tick_s": tick_s})
    pipe.execute()


def write_tick(
    client: Any, mech: str, tick: float, values: Mapping[str, float], *, publish: bool = True
) -> None:
    """Write one tick's released values: latest, series, ticks, then ``occ:updates``."""
    pipe = client.pipeline(transaction=False)
    queue_values(pipe, mech, float(tick), {loc: round(float(v), 3) for loc, v in values.items()})
    if publish:
        queue_update(pipe, mech, tick)
    pipe.execute()


def write_baselines(
    client: Any, mech: str, location_ids: list[str], history: np.ndarray,
    ticks: np.ndarray, tick_s: float,
) -> None:
    """Baselines μ, σ per (location, slot) from released history (post-processing)."""
    n_slots = rl.n_slots(tick_s)
    slots = np.array([rl.slot_of(t, tick_s) for t in ticks], dtype=np.int64)
    mu, sigma = baselines(history, slots, n_slots)
    counts = np.bincount(slots, minlength=n_slots)
    fields = {}
    for s in np.flatnonzero(counts):
        for j, loc in enumerate(location_ids):
            fields[rl.baseline_field(loc, int(s))] = json.dumps(
                {"mu": round(float(mu[s, j]), 3), "sigma": round(float(sigma[s, j]), 3),
                 "n": int(counts[s])}
            )
    pipe = client.pipeline(transaction=False)
    queue_baselines(pipe, mech, fields)
    pipe.execute()


def write_alert(client: Any, alert: Mapping[str, Any]) -> str:
    """Append an alert to the ``alerts`` stream and publish it; return its stream id."""
    pipe = client.pipeline(transaction=False)
    queue_alert(pipe, alert)
    sid = pipe.execute()[0]
    return sid.decode() if isinstance(sid, bytes) else str(sid)


def write_decisions(client: Any, tick: float, alerts: list[Mapping[str, Any]],
                    values: Mapping[str, float] | None = None, *, quiet_s: float = inc.QUIET_S,
                    mechanism: str | None = "laplace", with_alerts: bool = True) -> inc.Step:
    """One tick of MIDE decisions, as the pipeline's writer applies them.

    Appends the positive decisions to ``alerts`` (unless ``with_alerts`` is false) and
    folds them into the incidents (:func:`occupancy.incidents.step` from the stored
    state, then :func:`readmodel.writer.queue_incident_step`), in one transaction.
    ``alerts`` may be empty: a tick without a positive decision can resolve incidents.
    """
    raw = client.get(rl.INCIDENTS_STATE)
    st = inc.step(json.loads(raw) if raw else None, tick, alerts, values, quiet_s=quiet_s,
                  mechanism=mechanism)
    pipe = client.pipeline(transaction=True)
    if with_alerts:
        for a in alerts:
            queue_alert(pipe, {**a, "tick": tick})
    queue_incident_step(pipe, st)
    pipe.execute()
    return st


def write_ledger(client: Any, mech: str, tick: float, epsilon: float, day: str) -> None:
    """Record one release in the internal ledger (stream + per-day total)."""
    pipe = client.pipeline(transaction=False)
    queue_ledger(pipe, {"mechanism": mech, "tick": tick, "epsilon": epsilon}, day)
    pipe.execute()


def daily_curve(site: Site, ticks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A plausible occupancy per (tick, location): a working-day bump scaled to capacity."""
    hours = (np.asarray(ticks, dtype=float) % 86400) / 3600.0
    caps = np.asarray(site.capacities, dtype=float)
    peak = rng.uniform(0.15, 0.9, size=caps.size)
    centre = rng.uniform(10.0, 15.0, size=caps.size)
    width = rng.uniform(1.5, 3.5, size=caps.size)
    shape = np.exp(-0.5 * ((hours[:, None] - centre[None, :]) / width[None, :]) ** 2)
    base = caps[None, :] * peak[None, :] * shape
    return np.maximum(0.0, base + rng.normal(0, 1 + 0.05 * base))


def seed(
    client: Any, site: Site, *, days: int = 2, tick_s: float = 300.0,
    mechs: Iterable[str] = ("laplace", "pegasus", "hpegasus", "ttl"),
    start: float = 1_790_000_000.0 - (1_790_000_000.0 % 86400), seed_value: int = 7,
    last_day_ticks: int | None = None,
) -> dict[str, Any]:
    """Fill Redis with ``days`` of synthetic released history for every mechanism.

    Baselines are computed from all days but the last; the last day is the one the
    page shows (``last_day_ticks`` of it, default all). Returns what was written.
    """
    rng = np.random.default_rng(seed_value)
    per_day = int(86400 // tick_s)
    n_last = per_day if last_day_ticks is None else last_day_ticks
    ticks = start + tick_s * np.arange((days - 1) * per_day + n_last)
    truth = daily_curve(site, ticks, rng)
    ids = list(site.location_ids)
    written: dict[str, Any] = {"ticks": ticks, "values": {}}
    for mech in mechs:
        meta = DEFAULT_META.get(mech, {"epsilon": 1.0})
        write_meta(client, mech, meta, tick_s)
        eps = float(meta.get("epsilon", 1.0))
        noise = 0 if without_guarantee(mech) else rng.laplace(0, 1 / eps, size=truth.shape)
        released = np.round(truth * (1.15 if without_guarantee(mech) else 1.0) + noise, 1)
        written["values"][mech] = released
        hist_rows = (days - 1) * per_day
        if hist_rows:
            write_baselines(client, mech, ids, released[:hist_rows], ticks[:hist_rows], tick_s)
        pipe = client.pipeline(transaction=False)
        tick_list = [float(t) for t in ticks]
        queue_history(pipe, mech, tick_list, ids, released.tolist())
        for t in tick_list if not without_guarantee(mech) else []:
            queue_ledger(pipe, {"mechanism": mech, "tick": int(t), "epsilon": eps},
                         time.strftime("%Y-%m-%d", time.gmtime(t)))
        pipe.execute()
    log.info("synthetic read model: %d ticks × %d locations × %s", len(ticks), len(ids),
             list(written["values"]))
    return written
