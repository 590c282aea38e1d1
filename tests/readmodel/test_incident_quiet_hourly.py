"""An incident opened by an hourly reading resolves at the next quiet hourly reading.

The device-day fire-code alerts decide once an hour and a quiet hour writes no alert
and no ledger record; the read model's writer must still run the incident machine on
the following ticks, or an incident from one noisy reading in an empty room stays open
until some other room alerts (the demo's Lab 5510, "open since 06:55, peak ≈ 0").
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from readmodel.writer import CacheWriter
from streams.pipeline.release import TickOutput

T0 = 1_768_301_700  # Tue 2026-01-13 10:55 UTC, an hourly reading
TICK_S = 300.0
QUIET_S = 900.0
ALERT = {"location": "r1", "capacity": 79, "algorithm": "gaussian-threshold", "beta": 0.05,
         "window": "hour", "unit": "device-day"}


def _outs() -> list[TickOutput]:
    """The reading at T0 fires; the next twelve ticks decide nothing (a quiet hour)."""
    first = TickOutput(tick=T0, releases=[], alerts=[{**ALERT, "tick": T0}], ledger=[])
    return [first] + [TickOutput(tick=T0 + TICK_S * k, releases=[], alerts=[], ledger=[])
                      for k in range(1, 13)]


def _write(url: str, bulk: bool) -> None:
    import redis.asyncio as aredis

    async def go() -> None:
        client = aredis.Redis.from_url(url)
        w = CacheWriter(client, ["r1", "r2"], tick_s=TICK_S, retention_ticks=2016,
                        incident_quiet_s=QUIET_S)
        if bulk:
            await w.write_history(_outs(), chunk=2)
        else:
            for out in _outs():
                await w.write_tick(out)
        await client.aclose()

    asyncio.run(go())


@pytest.mark.parametrize("bulk", [False, True], ids=["write_tick", "write_history"])
def test_hour_opened_incident_resolves_after_quiet_period(redis_client: Any, redis_url: str,
                                                          bulk: bool) -> None:
    _write(redis_url, bulk)
    records = [json.loads(v) for v in redis_client.hgetall("incidents").values()]
    assert len(records) == 1
    rec = records[0]
    assert rec["location"] == "r1" and rec["opened"] == T0
    # hour readings only: open until the next reading (T0 + 1 h) is negative; the writer
    # steps the machine on ticks with no decision at all
    assert rec["state"] == "resolved"
    assert rec["resolved"] == T0 + 3600
    assert redis_client.zcard("incidents:active") == 0
    events = [json.loads(f[b"data"])["event"] for _, f in redis_client.xrange("incidents:events")]
    assert events == ["open", "resolve"]
