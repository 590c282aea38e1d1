"""`CacheWriter.write_history` (the demo's bulk load) leaves what `write_tick` leaves."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import redis

from occustream.history import release_history
from readmodel.writer import CacheWriter
from streams.settings import Settings

START = 1_768_293_000  # Tue 2026-01-13 08:30 UTC


def _dump(client: Any) -> dict[str, Any]:
    """Every key's content; stream entry ids (arrival times) and wall-clock stamps left out."""
    out: dict[str, Any] = {}
    for key in sorted(client.keys("*")):
        kind = client.type(key).decode()
        if kind == "string":
            out[key] = client.get(key)
        elif kind == "hash":
            out[key] = client.hgetall(key)
        elif kind == "zset":
            out[key] = client.zrange(key, 0, -1, withscores=True)
        elif kind == "stream":
            out[key] = [fields for _, fields in client.xrange(key)]
        else:
            out[key] = kind
    return out


def _write(url: str, h: Any, bulk: bool) -> None:
    import redis.asyncio as aredis

    async def go() -> None:
        client = aredis.Redis.from_url(url)
        s = h.settings
        w = CacheWriter(client, h.locations, tick_s=s.tick_s, retention_ticks=s.retention_ticks,
                        incident_quiet_s=s.incident_quiet_s)
        await w.write_meta(h.metas)
        if bulk:
            await w.write_history(h.outs, chunk=50)  # several chunks
        else:
            for out in h.outs:
                await w.write_tick(out)
        await client.aclose()

    asyncio.run(go())


def _same_either_way(url: str, h: Any) -> dict[str, Any]:
    """Write ``h`` tick by tick and in bulk into a fresh db each; both dumps must be equal."""
    client = redis.Redis.from_url(url)
    dumps = []
    for bulk in (False, True):
        client.flushdb()
        _write(url, h, bulk)
        dumps.append(_dump(client))
    client.flushdb()
    one, bulk_dump = dumps
    assert set(one) == set(bulk_dump)
    for key in one:
        assert one[key] == bulk_dump[key], key
    return one


def test_bulk_history_equals_tick_by_tick(redis_url: str) -> None:
    # event-level Laplace + the thesis MIDE alerts: releases, ledger, alerts, incidents
    s = Settings(site="dbh", mechanisms=("laplace",), secret=b"bulk-history-secret",
                 privacy_unit="event")
    h = release_history(s, start_ts=START, days=1.0, seed=3)
    assert sum(len(o.alerts) for o in h.outs) > 0  # the comparison covers incidents
    one = _same_either_way(redis_url, h)
    assert any(k.startswith(b"baseline:") for k in one)
    assert json.loads(one[b"incidents:state"]) is not None


def test_bulk_history_under_device_day_writes_the_daily_cube_on_its_day(redis_url: str) -> None:
    # the default unit: the history crosses midnight, so the first day's cube is released
    # at 00:00 and its ρ counts on the day it describes (as write_tick books it)
    s = Settings(site="dbh", mechanisms=("device-day",), secret=b"bulk-history-secret-dd")
    h = release_history(s, start_ts=START, days=1.0, seed=3)
    cubes = [o.cube for o in h.outs if o.cube]
    assert len(cubes) == 1
    one = _same_either_way(redis_url, h)
    day = cubes[0]["day"]
    assert f"hist:{day}:daily-cube".encode() in one
    spent = one[f"ledger:spent:{day}".encode()]
    assert any(k.startswith(b"daily-cube") for k in spent), spent


def test_history_cache_keeps_the_daily_cube() -> None:
    from occustream.history import _out_doc, _out_of

    s = Settings(site="dbh", mechanisms=("device-day",), secret=b"bulk-history-secret-dd")
    h = release_history(s, start_ts=START, days=1.0, seed=3)
    out = next(o for o in h.outs if o.cube)
    again = _out_of(json.loads(json.dumps(_out_doc(out))))
    assert again.cube == out.cube
