"""The incident lifecycle from the pipeline's writer to a real loopback webhook receiver.

Ticks go through the real :class:`readmodel.writer.CacheWriter` into the real Redis (as
the release stage hands them over); a :class:`dashboards.webhooks.WebhookDispatcher`
with ``source="incidents"`` delivers the lifecycle to a real aiohttp receiver that
checks signature v2 (timestamp, idempotency key and body).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp import web
from dash_support import run_async

from dashboards.webhooks import IDEMPOTENCY_HEADER, SIGNATURE_HEADER, WebhookDispatcher
from dashboards.webhooks import verify_signature as verify
from occupancy import incidents as inc
from occupancy import redis_layout as rl
from readmodel.writer import CacheWriter
from streams.pipeline.release import Release, TickOutput

pytestmark = pytest.mark.e2e

SECRET = b"incident-webhook-secret-0123456789"
T0 = 1_790_000_000 - 1_790_000_000 % 3600
LOCS = ["hall-101", "hall-110"]


def _out(k: int, value: float, positive: bool, hour: bool = False) -> TickOutput:
    """Tick ``k`` of the crowd in hall-110: released values, a MIDE ledger record, alerts."""
    tick = float(T0 + 300 * k)
    ledger = [{"mechanism": "laplace", "tick": int(tick), "epsilon": 0.5},
              {"mechanism": "mide", "tick": int(tick), "epsilon": 0.1}]
    dec = {"location": "hall-110", "capacity": 150, "algorithm": "tslm", "beta": 0.05}
    alerts = ([{**dec, "tick": tick, "window": "tick"}] if positive else []) + (
        [{**dec, "tick": tick, "window": "hour"}] if hour else [])
    return TickOutput(tick, [Release("laplace", tick, [3.0, value], 0.5)], alerts, ledger)


#: a crowd: positive for 5 ticks with one miss, the hour decision at 10:55, then quiet
CROWD = [_out(0, 158.0, True), _out(1, 170.0, True), _out(2, 149.0, False),
         _out(3, 176.0, True), _out(4, 160.0, True)] + [
    _out(k, 30.0, False, hour=(k == 11)) for k in range(5, 12)]


class Receiver:
    """Records every delivery (duplicates too); fails the first try of ``update`` events."""

    def __init__(self) -> None:
        self.got: list[dict[str, Any]] = []
        self.bad = 0
        self.runner: web.AppRunner | None = None
        self.url = ""
        self.failed: set[str] = set()

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        key = request.headers.get(IDEMPOTENCY_HEADER, "")
        if not verify(SECRET, request.headers.get(SIGNATURE_HEADER, ""), body, key):
            self.bad += 1
            return web.Response(status=401)
        doc = json.loads(body)
        if doc["event"] == "update" and key not in self.failed:
            self.failed.add(key)  # a transient failure: the retry must carry the same key
            return web.Response(status=503)
        self.got.append({"key": key, "doc": doc})
        return web.Response(status=204)

    async def start(self) -> Receiver:
        app = web.Application()
        app.router.add_post("/hook", self.handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self.runner.addresses[0][1]}/hook"
        return self


async def _write(url: str, outs: list[TickOutput]) -> None:
    import redis.asyncio as aredis

    client = aredis.Redis.from_url(url)
    try:
        w = CacheWriter(client, LOCS, tick_s=300, retention_ticks=10_000, incident_quiet_s=900)
        for out in outs:
            await w.write_tick(out)
    finally:
        await client.aclose()


async def _deliver(redis_url: str, rec: Receiver, *, rounds: int) -> WebhookDispatcher:
    import aiohttp
    import redis.asyncio as aredis

    d = WebhookDispatcher(redis_url, rec.url, SECRET, name="inc", backoff_base_s=0.01,
                          max_attempts=3, source="incidents")
    client = aredis.Redis.from_url(redis_url)
    try:
        async with aiohttp.ClientSession() as session:
            for _ in range(rounds):
                await d.run_once(client, session, block_ms=100)
    finally:
        await client.aclose()
    return d


def test_crowd_is_one_incident_over_webhooks_open_update_resolve(
        redis_url: str, redis_client: Any) -> None:
    async def scenario() -> tuple[Receiver, int]:
        rec = await Receiver().start()
        await _write(redis_url, CROWD)
        d = await _deliver(redis_url, rec, rounds=3)
        # a crash replays every tick: the done flags keep the lifecycle from repeating
        await _write(redis_url, CROWD)
        d2 = await _deliver(redis_url, rec, rounds=2)
        assert rec.runner is not None
        await rec.runner.cleanup()
        return rec, d.delivered + d2.delivered

    rec, delivered = run_async(scenario())
    assert rec.bad == 0
    docs = [g["doc"] for g in rec.got]
    kinds = [d["event"] for d in docs]
    # peaks 158 → 170 → 176: two updates; quiet from 11:20 (last seen) + 15 min
    assert kinds == ["open", "update", "update", "resolve"], kinds
    assert delivered == 4 and len(rec.failed) == 2  # each update retried once
    ids = {d["incident"]["id"] for d in docs}
    assert ids == {inc.incident_id("hall-110", T0)}
    assert [d["incident"]["state"] for d in docs] == ["open", "open", "open", "resolved"]
    assert [d["incident"]["peak"] for d in docs] == [158.0, 170.0, 176.0, 176.0]
    last = docs[-1]["incident"]
    assert last["last_seen"] == T0 + 1200 and last["resolved"] == T0 + 2100
    # the hour decision at 10:55 (k = 11) came after the resolve: it joins the record
    stored = json.loads(redis_client.hget(rl.INCIDENTS, last["id"]))
    assert stored["decisions"] == {"tick": 4, "hour": 1}
    assert "β = 0.05" in last["guarantee"]
    # idempotency keys: distinct per event, the state machine's own, the same on retry
    assert [g["key"] for g in rec.got] == [
        inc.event_key(last["id"], d["event"], d["incident"]["version"]) for d in docs]
    assert len({g["key"] for g in rec.got}) == 4
    assert redis_client.xlen(rl.INCIDENTS_STREAM) == 4
    assert redis_client.xlen(rl.ALERTS_STREAM) == 5  # the decisions stay logged
    assert redis_client.zcard(rl.INCIDENTS_ACTIVE) == 0


def test_quiet_period_setting_is_validated() -> None:
    from mechanisms.errors import InvalidParameterError
    from readmodel.writer import quiet_period

    assert quiet_period(None, {}) == inc.QUIET_S
    assert quiet_period(None, {"OCCUSTREAM_INCIDENT_QUIET_S": "600"}) == 600
    assert quiet_period(120) == 120
    for bad in ("0", "-5", "soon", "inf"):
        with pytest.raises(InvalidParameterError, match="OCCUSTREAM_INCIDENT_QUIET_S"):
            quiet_period(None, {"OCCUSTREAM_INCIDENT_QUIET_S": bad})


def test_alerts_follow_prints_the_lifecycle(redis_url: str, redis_client: Any) -> None:
    import os
    import subprocess
    import sys

    asyncio.run(_write(redis_url, CROWD))
    env = dict(os.environ, REDIS_URL=redis_url)
    out = subprocess.run([sys.executable, "-m", "occustream.cli", "alerts", "--json"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(x) for x in out.stdout.splitlines()]
    assert [x["event"] for x in lines] == ["open", "update", "update", "resolve"]
    assert len({x["incident"]["id"] for x in lines}) == 1
    text = subprocess.run([sys.executable, "-m", "occustream.cli", "alerts"], env=env,
                          capture_output=True, text=True, timeout=60).stdout.splitlines()
    assert len(text) == 4 and "INCIDENT OPEN" in text[0] and "INCIDENT RESOLVE" in text[-1]
    assert "peak≈176" in text[-1] and "4 tick + 0 hour" in text[-1]  # as at the resolve
