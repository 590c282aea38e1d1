"""The dashboard reads what the pipeline's real cache writer (readmodel.writer) writes."""

from __future__ import annotations

from typing import Any

import pytest
from dash_support import run_async

pytestmark = pytest.mark.e2e

cache = pytest.importorskip("readmodel.writer")
release = pytest.importorskip("streams.pipeline.release")


def test_readmodel_over_the_pipeline_cache_writer(redis_url: str, redis_client: Any,
                                                  campus: Any) -> None:
    import redis.asyncio as aioredis

    from readmodel.reader import ReadModel

    ids = list(campus.location_ids)
    day0 = 1_790_000_000 - 1_790_000_000 % 86400 + 9 * 3600

    async def scenario() -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
        client = aioredis.Redis.from_url(redis_url)
        try:
            w = cache.CacheWriter(client, ids, tick_s=300, retention_ticks=10_000)
            await w.write_meta({"laplace": {"mechanism": "laplace", "epsilon": 0.5,
                                            "tick_s": 300},
                                "ttl": {"mechanism": "ttl", "epsilon": 0, "tick_s": 300,
                                        "guarantee": "none (no formal guarantee)"}})
            for d in range(3):  # same time of day on three days → a baseline with n = 3
                t = day0 + d * 86400
                vals = [float(10 + d + j) for j in range(len(ids))]
                out = release.TickOutput(
                    t, [release.Release("laplace", t, vals, 0.5),
                        release.Release("ttl", t, vals, 0.0)],
                    [{"tick": t, "location": ids[0], "capacity": 80, "algorithm": "TSLM",
                      "beta": 0.05}] if d == 2 else [],
                    [{"mechanism": "laplace", "tick": t, "epsilon": 0.5},
                     {"mechanism": "ttl", "tick": t, "epsilon": 0.0},
                     {"mechanism": "mide", "tick": t, "epsilon": 0.3}])
                await w.write_tick(out)
            rm = ReadModel(client, campus)
            return (await rm.snapshot("laplace"), await rm.alerts(), await rm.ledger())
        finally:
            await client.aclose()

    snap, alerts, ledger = run_async(scenario())
    assert snap["tick"] == day0 + 2 * 86400
    v = snap["values"][ids[0]]
    assert v["value"] == 12.0 and v["class"] is not None and v["interval"]["low"] < 12.0
    assert alerts[0]["location"] == ids[0] and alerts[0]["algorithm"] == "TSLM"
    rows = {r["mechanism"]: r for r in ledger["rows"] if r["day"] == ledger["rows"][-1]["day"]}
    assert rows["laplace"]["device_day_worst_case_epsilon"] == pytest.approx(0.5)
    assert rows["mide"]["epsilon_spent"] == pytest.approx(0.3)
    assert rows["ttl"]["guarantee"] == "no formal guarantee"
