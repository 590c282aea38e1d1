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


# ---- a cache of released history (a second `make demo` starts in seconds) -------------
#: Source folders whose code decides the released history (its cache key hashes them).
_CODE = ("mechanisms", "occupancy", "simulator", "streams/pipeline", "buildings")
#: Settings that do not change a release (where services run, how a worker runs).
_RUNTIME_ONLY = frozenset({"kafka_bootstrap", "redis_url", "state_redis_url", "web_port",
                           "data_dir", "secret_file", "idle_s", "ingest", "batch_max",
                           "batch_within_s", "session_timeout_s", "heartbeat_s",
                           "metrics_interval_s", "app_id", "topic_prefix", "partitions"})


def cache_key(settings: Any, *, start_ts: float, days: float, seed: int) -> str:
    """SHA-256 of everything the released history depends on.

    The settings (public ones and a digest of the secret: the noise is keyed by it),
    the window, the seed, and the source of the simulator, the release stage, the
    mechanisms and the buildings: any change computes it again.
    """
    import hashlib
    import json
    from pathlib import Path

    h = hashlib.sha256()
    public = {k: v for k, v in settings.public().items() if k not in _RUNTIME_ONLY}
    h.update(json.dumps({"settings": public, "start": start_ts, "days": days,
                         "seed": seed}, sort_keys=True, default=str).encode())
    h.update(hashlib.sha256(settings.secret).digest())
    root = Path(__file__).resolve().parents[1]
    for folder in _CODE:
        for f in sorted((root / folder).rglob("*")):
            if f.suffix in (".py", ".json") and f.is_file():
                h.update(str(f.relative_to(root)).encode())
                h.update(f.read_bytes())
    return h.hexdigest()


def _out_doc(out: Any) -> dict[str, Any]:
    from dataclasses import asdict

    # ex-post ε is internal (state store only) and the history never writes it
    return {"tick": out.tick, "releases": [asdict(r) for r in out.releases],
            "alerts": out.alerts, "ledger": out.ledger, "privacy": out.privacy,
            "cube": out.cube}


def _out_of(doc: dict[str, Any]) -> Any:
    from streams.pipeline.release import Release, TickOutput

    return TickOutput(doc["tick"], [Release(**r) for r in doc["releases"]], doc["alerts"],
                      doc["ledger"], [], doc["privacy"], doc.get("cube"))


def release_history_cached(settings: Any, *, start_ts: float, days: float, seed: int = 0,
                           cache_dir: Any = None) -> tuple[History, bool]:
    """:func:`release_history`, kept in ``cache_dir`` (None: not cached).

    The file holds what the release stage produced (released values, alerts, ledger
    records, the privacy status; never true counts), so loading it writes exactly what
    computing it again would (keyed noise: the same values), with its ledger records.

    Returns:
        ``(history, True if it came from the cache)``.
    """
    import gzip
    import json
    import os
    from pathlib import Path

    if cache_dir is None:
        return release_history(settings, start_ts=start_ts, days=days, seed=seed), False
    key = cache_key(settings, start_ts=start_ts, days=days, seed=seed)
    path = Path(cache_dir) / f"history-{key[:32]}.json.gz"
    try:
        doc = json.loads(gzip.decompress(path.read_bytes()))
        if doc.get("key") == key:
            return History(replace(settings, mechanisms=tuple(doc["mechanisms"])),
                           doc["locations"], doc["metas"],
                           [_out_of(o) for o in doc["outs"]]), True
    except (OSError, ValueError, KeyError, TypeError):
        pass  # absent or unreadable: compute it
    h = release_history(settings, start_ts=start_ts, days=days, seed=seed)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        data = {"key": key, "mechanisms": list(h.settings.mechanisms),
                "locations": h.locations, "metas": h.metas,
                "outs": [_out_doc(o) for o in h.outs]}
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(gzip.compress(json.dumps(data).encode(), compresslevel=3))
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("history not cached in %s: %s", cache_dir, exc)
    return h, False
