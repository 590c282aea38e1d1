"""Redis retries with capped back-off, degraded health, and generation-aware checkpoints."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from redis import exceptions as redis_errors

from streams.runtime import resilience
from streams.runtime.checkpoint import CheckpointStore
from streams.runtime.health import health_line, prometheus_text
from streams.runtime.resilience import BACKOFF_CAP_S, BACKOFF_FIRST_S, Status, retry_redis
from streams.settings import next_db_url


def test_retry_backs_off_exponentially_up_to_the_cap_and_reports_degraded(monkeypatch):
    delays: list[float] = []
    status = Status()
    seen_degraded: list[str | None] = []

    async def fake_sleep(s: float) -> None:
        delays.append(s)
        seen_degraded.append(status.health()["degraded"])

    monkeypatch.setattr(resilience.asyncio, "sleep", fake_sleep)
    fails = 9
    calls = {"n": 0}

    async def op() -> str:
        calls["n"] += 1
        if calls["n"] <= fails:
            raise redis_errors.ConnectionError("Connection refused")
        return "ok"

    assert asyncio.run(retry_redis(status, "test op", op)) == "ok"
    assert calls["n"] == fails + 1
    want = [min(BACKOFF_FIRST_S * 2 ** i, BACKOFF_CAP_S) for i in range(fails)]
    assert delays == pytest.approx(want)
    assert max(delays) == BACKOFF_CAP_S
    assert all(d and "redis unavailable (test op)" in d for d in seen_degraded)
    assert status.health()["degraded"] is None  # recovered
    assert status.counters["redis_outages"] == 1


def test_retry_does_not_swallow_bugs():
    async def op() -> None:
        raise KeyError("a bug, not an outage")

    with pytest.raises(KeyError):
        asyncio.run(retry_redis(Status(), "bug", op))


def test_health_and_prometheus_show_degraded():
    status = Status()
    status.degrade("log_reset:obs:0", "obs:0: checkpoint offset 9 is beyond the log end 2")
    status.count("log_resets")
    h = health_line(worker="w", started=0.0, events_in=0, ticks_out=0, last_tick=None,
                    watermarks={}, lag={}, dlq={}, latency=[], status=status.health())
    assert "beyond the log end" in h["degraded"]
    text = prometheus_text(h)
    assert "occustream_degraded 1.0" in text
    assert 'occustream_degraded_reason{reason="log_reset",key="log_reset:obs:0"} 1.0' in text
    assert "occustream_log_resets_total 1.0" in text
    ok = health_line(worker="w", started=0.0, events_in=0, ticks_out=0, last_tick=None,
                     watermarks={}, lag={}, dlq={}, latency=[], status=Status().health())
    assert ok["degraded"] is None and "occustream_degraded 0.0" in prometheus_text(ok)


def test_checkpoint_cas_accepts_a_lower_offset_only_of_a_newer_generation(redis_url):
    store = CheckpointStore(next_db_url(redis_url), f"cas{uuid.uuid4().hex[:6]}")

    async def run() -> list[tuple[int, int, bytes]]:
        got = []
        for off, gen, data in ((10, 0, b"a"), (5, 0, b"b"), (2, 1, b"c"), (20, 0, b"d"),
                               (3, 1, b"e")):
            await store.save("presence", 0, off, data, gen=gen, fp=f"fp{off}")
            ck = await store.load_checkpoint("presence", 0)
            got.append((ck.offset, ck.gen, ck.data))
        assert (await store.load_checkpoint("presence", 0)).fp == "fp3"
        await store.aclose()
        return got

    assert asyncio.run(run()) == [(10, 0, b"a"), (10, 0, b"a"), (2, 1, b"c"), (2, 1, b"c"),
                                  (3, 1, b"e")]
