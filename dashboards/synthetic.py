"""Write a synthetic read model into Redis, exactly as the pipeline's cache writer does.

For tests, benchmarks, screenshots and ``occustream dashboard --synthetic``: the
values are made up (a daily occupancy curve per location plus noise), not releases of
any real data, so no budget is involved. Every key comes from
:mod:`occupancy.redis_layout`, so the dashboard is tested against the real layout.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from mechanisms.registry import without_guarantee
from occupancy import redis_layout as rl
from occupancy.buildings import Site
from occupancy.heatmap import baselines

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
    fields = {k: json.dumps(v) for k, v in {**meta, "tick_s": tick_s}.items()}
    client.hset(rl.meta(mech), mapping=fields)


def write_tick(
    client: Any, mech: str, tick: float, values: Mapping[str, float], *, publish: bool = True
) -> None:
    """Write one tick's released values: latest, series, ticks, then ``occ:updates``."""
    pipe = client.pipeline(transaction=False)
    tick_j = int(tick) if float(tick).is_integer() else float(tick)
    for loc, v in values.items():
        doc = json.dumps({"tick": tick_j, "value": round(float(v), 3)})
        pipe.hset(rl.latest(mech), loc, doc)
        pipe.zadd(rl.series(mech, loc), {doc: float(tick)})
    pipe.zadd(rl.ticks(mech), {str(tick_j): float(tick)})
    pipe.execute()
    if publish:
        client.publish(rl.UPDATES_CHANNEL, json.dumps({"mech": mech, "tick": tick_j}))


def write_baselines(
    client: Any, mech: str, location_ids: list[str], history: np.ndarray,
    ticks: np.ndarray, tick_s: float,
) -> None:
    """Baselines μ, σ per (location, slot) from released history (post-processing)."""
    n_slots = int(86400 // tick_s)
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
    if fields:
        client.hset(rl.baseline(mech), mapping=fields)


def write_alert(client: Any, alert: Mapping[str, Any]) -> str:
    """Append an alert to the ``alerts`` stream and publish it; return its stream id."""
    data = json.dumps(dict(alert))
    sid = client.xadd(rl.ALERTS_STREAM, {"data": data}, maxlen=10000, approximate=True)
    client.publish(rl.ALERTS_CHANNEL, data)
    return sid.decode() if isinstance(sid, bytes) else str(sid)


def write_ledger(client: Any, mech: str, tick: float, epsilon: float, day: str) -> None:
    """Record one release in the internal ledger (stream + per-day total)."""
    client.xadd(rl.LEDGER_STREAM, {"data": json.dumps(
        {"mechanism": mech, "tick": tick, "epsilon": epsilon})})
    client.hincrbyfloat(rl.ledger_spent(day), mech, epsilon)


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
        for j, loc in enumerate(ids):  # one ZADD per location with every tick
            pipe.zadd(rl.series(mech, loc), {
                json.dumps({"tick": int(t), "value": float(v)}): t
                for t, v in zip(tick_list, released[:, j].tolist(), strict=True)})
        pipe.zadd(rl.ticks(mech), {str(int(t)): t for t in tick_list})
        spent_by_day: dict[str, float] = {}
        for t in tick_list if not without_guarantee(mech) else []:
            pipe.xadd(rl.LEDGER_STREAM, {"data": json.dumps(
                {"mechanism": mech, "tick": int(t), "epsilon": eps})})
            day = time.strftime("%Y-%m-%d", time.gmtime(t))
            spent_by_day[day] = spent_by_day.get(day, 0.0) + eps
        for day, spent in spent_by_day.items():
            pipe.hincrbyfloat(rl.ledger_spent(day), mech, spent)
        for j, loc in enumerate(ids):
            pipe.hset(rl.latest(mech), loc,
                      json.dumps({"tick": int(ticks[-1]), "value": float(released[-1, j])}))
        pipe.execute()
    log.info("synthetic read model: %d ticks × %d locations × %s", len(ticks), len(ids),
             list(written["values"]))
    return written
