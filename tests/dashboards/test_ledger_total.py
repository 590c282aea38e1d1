"""The privacy view's per-device-day report: per-mechanism rates from the ledger, and a total.

All mechanisms release the same underlying data, so a device present all day loses
the sum over mechanisms (sequential composition) of ε × releases that day. The
ledger is written by the pipeline's real cache writer (readmodel.writer); every expected
figure below follows from the ε values written, not from any random draw.
"""

from __future__ import annotations

from typing import Any

import pytest
from dash_support import run_async

pytestmark = pytest.mark.e2e

cache = pytest.importorskip("readmodel.writer")
release = pytest.importorskip("streams.pipeline.release")

TICK_S = 300
HOURS = 2
EPS_LAPLACE, EPS_MIDE, EPS_MIDE_HOUR = 0.5, 0.3, 0.25


def _ledger(redis_url: str, site: Any, day0: int) -> dict[str, Any]:
    ids = list(site.location_ids)
    import redis.asyncio as aioredis

    from readmodel.reader import ReadModel

    async def scenario() -> dict[str, Any]:
        client = aioredis.Redis.from_url(redis_url)
        try:
            w = cache.CacheWriter(client, ids, tick_s=TICK_S, retention_ticks=10_000)
            await w.write_meta({"laplace": {"mechanism": "laplace", "epsilon": EPS_LAPLACE,
                                            "tick_s": TICK_S},
                                "ttl": {"mechanism": "ttl", "epsilon": 0, "tick_s": TICK_S}})
            for k in range(HOURS * 3600 // TICK_S):
                t = day0 + k * TICK_S
                vals = [float(10 + j) for j in range(len(ids))]
                ledger = [{"mechanism": "laplace", "tick": t, "epsilon": EPS_LAPLACE},
                          {"mechanism": "ttl", "tick": t, "epsilon": 0.0},
                          {"mechanism": "mide", "tick": t, "epsilon": EPS_MIDE}]
                if (t + TICK_S) % 3600 == 0:  # as streams.pipeline.release: hour-closing tick
                    ledger.append({"mechanism": "mide-hour", "tick": t,
                                   "epsilon": EPS_MIDE_HOUR})
                out = release.TickOutput(t, [release.Release("laplace", t, vals, EPS_LAPLACE),
                                             release.Release("ttl", t, vals, 0.0)], [], ledger)
                await w.write_tick(out)
            return await ReadModel(client, site).ledger()
        finally:
            await client.aclose()

    return run_async(scenario())


def test_rates_from_released_ticks_and_an_honest_total(redis_url: str, redis_client: Any,
                                                        campus: Any) -> None:
    day0 = 1_790_000_000 - 1_790_000_000 % 86400 + 9 * 3600
    led = _ledger(redis_url, campus, day0)
    rows = {r["mechanism"]: r for r in led["rows"]}
    n = HOURS * 3600 // TICK_S
    assert rows["laplace"]["ticks_released"] == n
    assert rows["mide-hour"]["ticks_released"] == HOURS
    # once per hour: a device present one hour is in one mide-hour release, not twelve
    assert rows["mide-hour"]["epsilon_per_hour_present"] == pytest.approx(EPS_MIDE_HOUR)
    assert rows["mide"]["epsilon_per_hour_present"] == pytest.approx(EPS_MIDE * 12)
    assert rows["laplace"]["epsilon_per_hour_present"] == pytest.approx(EPS_LAPLACE * 12)
    assert rows["mide-hour"]["device_day_worst_case_epsilon"] == pytest.approx(
        EPS_MIDE_HOUR * HOURS)
    total = rows["total"]
    assert total["total"] is True and not rows["laplace"]["total"]
    # sequential composition across mechanisms: Σ ε × releases that day, TTL excluded
    assert total["device_day_worst_case_epsilon"] == pytest.approx(
        n * (EPS_LAPLACE + EPS_MIDE) + HOURS * EPS_MIDE_HOUR)
    # any hour holds 12 ticks of laplace and mide and exactly one hour-closing release
    assert total["epsilon_per_hour_present"] == pytest.approx(
        12 * (EPS_LAPLACE + EPS_MIDE) + EPS_MIDE_HOUR)
    assert total["epsilon_spent"] == pytest.approx(
        n * (EPS_LAPLACE + EPS_MIDE) + HOURS * EPS_MIDE_HOUR)
    assert "ttl" in total["excluded"] and "no formal guarantee" in total["guarantee"]
    assert [r["mechanism"] for r in led["rows"]][-1] == "total"  # after the day's mechanisms
