"""A week behind the demo: released history written before the live stream starts.

``occustream demo --history-days N`` calls :func:`backfill` so the heatmap colours
against the usual day (baselines of past days, docs/DESIGN.md "Heatmap colour") from
its first frame: the simulator's usual population (no injected crowd, no broken AP) for
the ``N`` days before the demo's start → the oracle's counts per tick → the pipeline's
own release stage (:class:`streams.pipeline.release.Releaser`: every release charged
to its accountant before noise is drawn; MIDE decisions too) → the read model's one
writer (:meth:`readmodel.writer.CacheWriter.write_history`: the same keys and documents
as tick by tick, in bulk), exactly as a worker would have written those days. The
pipeline's own state (checkpoints, PeGaSus state) is not touched: the live workers start
at the demo's start as before.

Simulated data only: the true counts never leave this process.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, replace
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


@dataclass
class History:
    """Released history, computed but not yet written (:func:`release_history`)."""

    settings: Any
    locations: list[str]
    metas: dict[str, dict[str, Any]]
    outs: list[Any]

    def summary(self) -> dict[str, Any]:
        """``{"ticks", "first_tick", "last_tick", "mechanisms", "alerts"}``."""
        ticks = [float(o.tick) for o in self.outs]
        return {"ticks": len(ticks), "first_tick": ticks[0] if ticks else None,
                "last_tick": ticks[-1] if ticks else None, "mechanisms": list(self.metas),
                "alerts": sum(len(o.alerts) for o in self.outs)}


def release_history(settings: Any, *, start_ts: float, days: float,
                    seed: int = 0) -> History:
    """Simulate and release the ``days`` up to ``start_ts`` (no I/O: ready to write).

    Each tick goes through the pipeline's release stage, which charges every release
    to its accountant before drawing its noise (device-day: each day's budget at its
    first tick). CPU only, so the demo runs it while its services start.

    Args:
        settings: the pipeline's :class:`streams.settings.Settings` (site, tick, ε, MIDE).
        start_ts: the live stream's first instant (epoch s); history ends just before.
        days: days of history (> 0).
        seed: simulator seed (the demo passes its live seed: the same people and
            timetable, so the usual day is this building's).
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
    releaser = Releaser(s.release_config(), site)
    states: dict[str, bytes | None] = {}
    outs = []
    for tick, row in zip(table.ticks[keep], table.counts[keep], strict=True):
        out, states = releaser.run(float(tick), [int(c) for c in row], [], states)
        outs.append(out)
    return History(s, list(site.location_ids),
                   {m: releaser.meta(m) for m in releaser.mechanisms}, outs)


def write_history(redis_url: str, history: History) -> dict[str, Any]:
    """Write released history through the read model's one writer; return its summary."""
    asyncio.run(_write(redis_url, history))
    got = history.summary()
    log.info("history: %d ticks of %s written", got["ticks"], ", ".join(got["mechanisms"]))
    return got


def backfill(redis_url: str, settings: Any, *, start_ts: float, days: float,
             seed: int = 0) -> dict[str, Any]:
    """Release and write the ``days`` up to ``start_ts``; return what was written.

    :func:`release_history` then :func:`write_history`.

    Returns:
        ``{"ticks", "first_tick", "last_tick", "mechanisms", "alerts"}``.
    """
    return write_history(redis_url, release_history(settings, start_ts=start_ts, days=days,
                                                    seed=seed))


async def _write(redis_url: str, h: History) -> None:
    import redis.asyncio as aredis

    from readmodel.writer import CacheWriter

    s = h.settings
    client = aredis.Redis.from_url(redis_url)
    try:
        writer = CacheWriter(client, h.locations, tick_s=s.tick_s,
                             retention_ticks=s.retention_ticks, eval_mode=False,
                             incident_quiet_s=s.incident_quiet_s)
        await writer.write_meta(h.metas)
        await writer.write_history(h.outs)  # what write_tick would leave, in bulk
    finally:
        await client.aclose()
