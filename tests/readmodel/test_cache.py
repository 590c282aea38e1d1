"""The cache writer against a real Redis (conftest ``redis_url``/``redis_client``)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from occupancy import redis_layout as rl
from readmodel.writer import CacheWriter
from streams.pipeline.release import Release, TickOutput

TICK_S = 300.0
DAY0 = 1_767_571_200.0  # 2026-01-05 00:00 UTC
LOCS = ["room-a", "room-b"]


def _out(tick: float, values: list[float], mech: str = "laplace") -> TickOutput:
    rec = {"mechanism": mech, "tick": int(tick), "epsilon": 0.5}
    return TickOutput(tick, [Release(mech, tick, values, 0.5)], [], [rec])


async def _write(url: str, outs: list[TickOutput]) -> None:
    import redis.asyncio as aredis

    client = aredis.Redis.from_url(url)
    try:
        w = CacheWriter(client, LOCS, tick_s=TICK_S, retention_ticks=10_000)
        for out in outs:
            await w.write_tick(out)
    finally:
        await client.aclose()


def _baseline(redis_client: Any, tick: float, loc: str = "room-a") -> dict[str, Any]:
    raw = redis_client.hget(rl.baseline("laplace"),
                            rl.baseline_field(loc, rl.slot_of(tick, TICK_S)))
    return json.loads(raw)


def test_baseline_uses_past_days_only(redis_url: str, redis_client: Any) -> None:
    t1 = DAY0 + 10 * 3600  # 10:00 on three consecutive days
    t2, t3 = t1 + 86400, t1 + 2 * 86400
    asyncio.run(_write(redis_url, [_out(t1, [5.0, 1.0])]))
    b = _baseline(redis_client, t1)
    # day 1: no past day yet, today's value must not be its own baseline
    assert b["n"] == 0 and b["mu"] is None and b["sigma"] is None
    asyncio.run(_write(redis_url, [_out(t2, [9.0, 1.0])]))
    b = _baseline(redis_client, t2)
    assert b["n"] == 1 and b["mu"] == pytest.approx(5.0) and b["sigma"] == pytest.approx(0.0)
    asyncio.run(_write(redis_url, [_out(t3, [1.0, 1.0])]))
    b = _baseline(redis_client, t3)
    assert b["n"] == 2 and b["mu"] == pytest.approx(7.0) and b["sigma"] == pytest.approx(2.0)
    # another slot of day 3 is untouched by the 10:00 values
    assert redis_client.hget(rl.baseline("laplace"),
                             rl.baseline_field("room-a", rl.slot_of(t3 + TICK_S, TICK_S))) is None


def test_replay_folds_nothing_twice(redis_url: str, redis_client: Any) -> None:
    t1 = DAY0 + 15 * 3600
    t2 = t1 + 86400
    outs = [_out(t1, [4.0, 2.0]), _out(t2, [6.0, 2.0])]
    # a crash replays both ticks, a second worker replays the later one again
    asyncio.run(_write(redis_url, outs))
    asyncio.run(_write(redis_url, outs))
    asyncio.run(_write(redis_url, outs[1:]))
    b = _baseline(redis_client, t2)
    assert b["n"] == 1 and b["mu"] == pytest.approx(4.0)
    spent = redis_client.hget(rl.ledger_spent("2026-01-05"), "laplace")
    assert float(spent) == pytest.approx(0.5)
    assert redis_client.xlen(rl.LEDGER_STREAM) == 2


def test_hpegasus_meta_publishes_the_tree_height(redis_url: str, redis_client: Any) -> None:
    from mechanisms.hierarchical import tree_from_paths
    from occupancy.buildings import load_site
    from readmodel.uncertainty import noise_scale
    from streams.pipeline.release import Releaser
    from streams.settings import load_settings

    site = load_site("dbh")
    s = load_settings(env={"OCCUSTREAM_SECRET": "x" * 32, "OCCUSTREAM_MECHANISMS": "hpegasus",
                           "OCCUSTREAM_PRIVACY_UNIT": "event"})
    metas = {m: Releaser(s.release_config(), site).meta(m) for m in ("hpegasus",)}

    async def write() -> None:
        import redis.asyncio as aredis

        client = aredis.Redis.from_url(redis_url)
        try:
            await CacheWriter(client, site.location_ids, tick_s=TICK_S,
                              retention_ticks=10).write_meta(metas)
        finally:
            await client.aclose()

    asyncio.run(write())
    meta = {k.decode(): json.loads(v)
            for k, v in redis_client.hgetall(rl.meta("hpegasus")).items()}
    h = tree_from_paths(site.hierarchy()).height
    assert meta["levels"] == h
    scale, _ = noise_scale("hpegasus", meta)
    assert scale == pytest.approx(h / (s.hpegasus_epsilon * meta["perturb_share"]))


def test_concurrent_writers_charge_the_ledger_once(redis_url: str, redis_client: Any) -> None:
    import redis.asyncio as aredis

    ticks = [DAY0 + 8 * 3600 + k * TICK_S for k in range(5)]

    async def run() -> None:
        clients = [aredis.Redis.from_url(redis_url) for _ in range(3)]
        try:
            writers = [CacheWriter(c, LOCS, tick_s=TICK_S, retention_ticks=10_000)
                       for c in clients]
            for t in ticks:  # overlapping owners write the same tick at the same time
                await asyncio.gather(*(w.write_tick(_out(t, [3.0, 4.0])) for w in writers))
        finally:
            for c in clients:
                await c.aclose()

    asyncio.run(run())
    assert redis_client.xlen(rl.LEDGER_STREAM) == len(ticks)
    spent = float(redis_client.hget(rl.ledger_spent("2026-01-05"), "laplace"))
    assert spent == pytest.approx(0.5 * len(ticks))


async def _write_retained(url: str, outs: list[TickOutput], retention_ticks: int) -> None:
    import redis.asyncio as aredis

    client = aredis.Redis.from_url(url)
    try:
        w = CacheWriter(client, LOCS, tick_s=TICK_S, retention_ticks=retention_ticks)
        for out in outs:
            await w.write_tick(out)
    finally:
        await client.aclose()


def _done_ticks(redis_client: Any, mech: str) -> set[float]:
    key = rl.release_done(mech)
    members = (redis_client.smembers(key) if redis_client.type(key) == b"set"
               else redis_client.zrange(key, 0, -1))
    return {float(m) for m in members}


def test_done_flags_are_trimmed_with_the_retention(redis_url: str, redis_client: Any) -> None:
    retention = 4
    ticks = [DAY0 + k * TICK_S for k in range(30)]
    asyncio.run(_write_retained(redis_url, [_out(t, [1.0, 2.0]) for t in ticks], retention))
    kept = _done_ticks(redis_client, "laplace")
    assert kept and max(kept) == ticks[-1]
    assert min(kept) >= ticks[-1] - retention * TICK_S, sorted(kept)
    # a replay of a recent tick is still recognised: nothing is charged twice
    n = redis_client.xlen(rl.LEDGER_STREAM)
    asyncio.run(_write_retained(redis_url, [_out(ticks[-2], [1.0, 2.0])], retention))
    assert redis_client.xlen(rl.LEDGER_STREAM) == n


def test_done_sets_of_older_versions_are_converted(redis_url: str, redis_client: Any) -> None:
    redis_client.sadd(rl.release_done("laplace"), int(DAY0))
    asyncio.run(_write_retained(redis_url, [_out(DAY0, [1.0, 2.0])], 100))
    assert redis_client.xlen(rl.LEDGER_STREAM) == 0  # DAY0 was done already
    asyncio.run(_write_retained(redis_url, [_out(DAY0 + TICK_S, [1.0, 2.0])], 100))
    assert redis_client.xlen(rl.LEDGER_STREAM) == 1
    assert _done_ticks(redis_client, "laplace") == {DAY0, DAY0 + TICK_S}


def test_device_day_charges_replayed_are_written_once(redis_url: str,
                                                      redis_client: Any) -> None:
    """A replayed first tick of a day (the same charges re-made after a crash before the
    checkpoint) adds nothing: the alert share's record is not a release of its own."""
    redis_client.flushdb()
    recs = [{"mechanism": "device-day", "tick": int(DAY0), "epsilon": 3.65,
             "release_id": "device-day/day:1/heatmap|device-day|0"},
            {"mechanism": "alerts", "tick": int(DAY0), "epsilon": 1.14,
             "release_id": "device-day/day:1/alerts|alerts|0"}]
    status = {"unit": "device-day", "epsilon_day": 4.0, "delta": 1e-6}
    first = TickOutput(DAY0, [Release("device-day", DAY0, [1.0, 2.0], 3.65)], [], recs,
                       privacy=status)
    asyncio.run(_write(redis_url, [first, first]))
    ledger = [json.loads(f[b"data"]) for _, f in redis_client.xrange(rl.LEDGER_STREAM)]
    assert sorted(d["mechanism"] for d in ledger) == ["alerts", "device-day"]
    assert json.loads(redis_client.get(rl.PRIVACY_STATUS)) == status
