"""A week behind the demo: released history written before the live stream starts.

``occustream demo --history-days N`` calls :func:`backfill` so the heatmap colours
against the usual day (baselines of past days, docs/DESIGN.md "Heatmap colour") from
its first frame: the simulator's usual population (no injected crowd, no broken AP) for
the ``N`` days before the demo's start → the oracle's counts per tick → the pipeline's
own release stage (:class:`streams.pipeline.release.Releaser`: every release charged
to its accountant before noise is drawn; MIDE decisions too) → the read model's one
writer (:class:`readmodel.writer.CacheWriter`), tick by tick, exactly as a worker
would have written those days. The pipeline's own state (checkpoints, PeGaSus state)
is not touched: the live workers start at the demo's start as before.

Simulated data only: the true counts never leave this process.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import Any

from mechanisms.registry import without_guarantee

log = logging.getLogger(__name__)


def start_of(start: str) -> float:
    """Epoch seconds of an ISO date/time (naive = UTC), as ``occustream simulate --start``."""
    from datetime import UTC, datetime

    from mechanisms.errors import InvalidParameterError

    try:
        when = datetime.fromisoformat(start)
    except ValueError:
        raise InvalidParameterError(
            f"--start must be an ISO date/time like 2026-01-12T07:00, not {start!r}") from None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def backfill(redis_url: str, settings: Any, *, start_ts: float, days: float,
             seed: int = 0) -> dict[str, Any]:
    """Release and write the ``days`` up to ``start_ts``; return what was written.

    Args:
        redis_url: the read model.
        settings: the pipeline's :class:`streams.settings.Settings` (site, tick, ε, MIDE).
        start_ts: the live stream's first instant (epoch s); history ends just before.
        days: days of history (> 0).
        seed: simulator seed.

    Returns:
        ``{"ticks", "first_tick", "last_tick", "mechanisms", "alerts"}``.
    """
    from mechanisms.errors import check_positive
    from occupancy.buildings import load_site
    from simulator.simulation import Scenarios, simulate
    from streams.pipeline.release import Releaser

    days = check_positive("history days", days)
    site = load_site(settings.site)
    # the TTL chain needs the presence stage's pseudonym chains: not replayed here
    mechs = tuple(m for m in settings.mechanisms if not without_guarantee(m))
    s = replace(settings, mechanisms=mechs)
    first = start_ts - days * 86400.0
    # the oracle's ticks are (first, end]: one tick more so that the tick closing at
    # start_ts (the live stream's first tick is the one after it) is history's last
    sim = simulate(site, days=days + s.tick_s / 86400.0, seed=seed, start=first,
                   scenarios=Scenarios(overcapacity=False, broken_ap=False,
                                       weekly_meeting=True))
    table = sim.occupancy(tick_s=s.tick_s)
    keep = table.ticks <= start_ts
    ticks, counts = table.ticks[keep], table.counts[keep]
    releaser = Releaser(s.release_config(), site)
    return asyncio.run(_write(redis_url, s, site, releaser, ticks, counts))


async def _write(redis_url: str, s: Any, site: Any, releaser: Any, ticks: Any,
                 counts: Any) -> dict[str, Any]:
    import redis.asyncio as aredis

    from readmodel.writer import CacheWriter

    client = aredis.Redis.from_url(redis_url)
    n_alerts = 0
    try:
        writer = CacheWriter(client, site.location_ids, tick_s=s.tick_s,
                             retention_ticks=s.retention_ticks, eval_mode=False,
                             incident_quiet_s=s.incident_quiet_s)
        await writer.write_meta({m: releaser.meta(m) for m in releaser.mechanisms})
        states: dict[str, bytes | None] = {}
        for tick, row in zip(ticks, counts, strict=True):
            out, states = releaser.run(float(tick), [int(c) for c in row], [], states)
            n_alerts += len(out.alerts)
            await writer.write_tick(out)
    finally:
        await client.aclose()
    log.info("history: %d ticks of %s written", len(ticks), ", ".join(releaser.mechanisms))
    return {"ticks": len(ticks), "first_tick": float(ticks[0]) if len(ticks) else None,
            "last_tick": float(ticks[-1]) if len(ticks) else None,
            "mechanisms": list(releaser.mechanisms), "alerts": n_alerts}
