"""Webhook delivery against real local aiohttp receivers and the real Redis."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from aiohttp import web
from dash_support import run_async

from dashboards.synthetic import write_alert
from dashboards.webhooks import (
    IDEMPOTENCY_HEADER,
    SIGNATURE_HEADER,
    WebhookDispatcher,
    idempotency_key,
    sign,
    verify_signature,
)
from mechanisms.errors import ConfigError
from occupancy import redis_layout as rl

pytestmark = pytest.mark.e2e

SECRET = b"webhook-secret-for-tests-0123456789"


def _alerts(n: int) -> list[dict[str, Any]]:
    return [{"tick": 1_790_000_000 + 300 * i, "location": f"hall-10{i % 5 + 1}",
             "capacity": 80, "algorithm": "TSLM", "beta": 0.05,
             "ex_post_epsilon": 0.9} for i in range(n)]


class Receiver:
    """A real HTTP receiver: fails the first ``fail_first`` requests per key (or always)."""

    def __init__(self, fail_first: int = 0, status: int = 503) -> None:
        self.fail_first = fail_first
        self.status = status
        self.seen: list[dict[str, Any]] = []
        self.attempts: dict[str, int] = {}
        self.bad_signatures = 0
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        if not verify_signature(SECRET, request.headers.get(SIGNATURE_HEADER, ""), body,
                                request.headers.get(IDEMPOTENCY_HEADER, "")):
            self.bad_signatures += 1
            return web.Response(status=401)
        key = request.headers[IDEMPOTENCY_HEADER]
        self.attempts[key] = self.attempts.get(key, 0) + 1
        if self.fail_first < 0 or self.attempts[key] <= self.fail_first:
            return web.Response(status=self.status)
        if all(s["key"] != key for s in self.seen):  # idempotent receiver
            self.seen.append({"key": key, "alert": json.loads(body)})
        return web.Response(status=204)

    async def start(self, port: int = 0) -> Receiver:
        app = web.Application()
        app.router.add_post("/hook", self.handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", port)
        await site.start()
        self.url = f"http://127.0.0.1:{self.runner.addresses[0][1]}/hook"
        return self

    async def stop(self) -> None:
        if self.runner:
            await self.runner.cleanup()


def test_signature_roundtrip_and_tamper() -> None:
    body = b'{"a":1}'
    key = idempotency_key("1-0")
    header = sign(SECRET, body, key, ts=1000)
    assert verify_signature(SECRET, header, body, key, now=1000)
    assert not verify_signature(SECRET, header, body + b" ", key, now=1000)
    assert not verify_signature(b"other-secret-xxxxxxxx", header, body, key, now=1000)
    assert not verify_signature(SECRET, header, body, key, now=1000 + 301)  # replay window
    assert not verify_signature(SECRET, "garbage", body, key, now=1000)
    # a replay inside the window under a fresh Idempotency-Key does not verify
    assert not verify_signature(SECRET, header, body, idempotency_key("1-1"), now=1000)
    assert not verify_signature(SECRET, header, body, "", now=1000)
    # nor does a re-timed header with the old signature
    forged = header.replace("t=1000", "t=1100")
    assert not verify_signature(SECRET, forged, body, key, now=1100)
    assert "v2=" in header and "v1=" not in header
    assert idempotency_key("1-0") == idempotency_key("1-0") != idempotency_key("1-1")
    with pytest.raises(ConfigError):
        WebhookDispatcher("redis://x", "ftp://nope", SECRET)


async def _drain(d: WebhookDispatcher, n: int, timeout_s: float = 20.0) -> None:
    import aiohttp
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(d.redis_url)
    try:
        async with aiohttp.ClientSession() as session:
            loop = asyncio.get_running_loop()
            end = loop.time() + timeout_s
            while d.delivered + d.dead_lettered < n and loop.time() < end:
                await d.run_once(client, session, block_ms=200)
    finally:
        await client.aclose()


def test_each_alert_delivered_once_signed_with_retries(redis_url: str, redis_client: Any
                                                       ) -> None:
    ids = [write_alert(redis_client, a) for a in _alerts(6)]

    async def scenario() -> tuple[Receiver, WebhookDispatcher]:
        rec = await Receiver(fail_first=2).start()  # every alert fails twice, then succeeds
        d = WebhookDispatcher(redis_url, rec.url, SECRET, name="ok", backoff_base_s=0.01,
                              max_attempts=4)
        await _drain(d, len(ids))
        await rec.stop()
        return rec, d

    rec, d = run_async(scenario())
    assert rec.bad_signatures == 0
    assert [s["alert"]["id"] for s in rec.seen] == ids  # each once, in order
    assert all(a == 3 for a in rec.attempts.values())  # 2 failures + 1 success
    assert all("ex_post_epsilon" not in s["alert"] for s in rec.seen)
    assert [s["key"] for s in rec.seen] == [idempotency_key(i) for i in ids]
    assert d.delivered == 6 and d.dead_lettered == 0
    assert redis_client.get(rl.webhook_cursor("ok")).decode() == ids[-1]
    assert redis_client.llen(rl.webhook_dlq("ok")) == 0


def test_failing_receiver_is_retried_then_dead_lettered_nothing_lost(
        redis_url: str, redis_client: Any) -> None:
    ids = [write_alert(redis_client, a) for a in _alerts(3)]

    async def down() -> Receiver:
        rec = await Receiver(fail_first=-1, status=500).start()  # always failing
        d = WebhookDispatcher(redis_url, rec.url, SECRET, name="down", backoff_base_s=0.01,
                              max_attempts=3)
        await _drain(d, len(ids))
        await rec.stop()
        return rec

    rec = run_async(down())
    assert all(n == 3 for n in rec.attempts.values()) and len(rec.attempts) == 3
    letters = [json.loads(x) for x in redis_client.lrange(rl.webhook_dlq("down"), 0, -1)]
    assert [x["alert"]["id"] for x in letters] == ids
    for x in letters:
        assert x["error"] == "HTTP 500"
        assert x["idempotency_key"] == idempotency_key(x["alert"]["id"])

    # a 4xx that is not worth retrying is dead-lettered at once
    more = write_alert(redis_client, _alerts(1)[0])

    async def gone() -> Receiver:
        rec = await Receiver(fail_first=-1, status=410).start()
        d = WebhookDispatcher(redis_url, rec.url, SECRET, name="down", backoff_base_s=0.01,
                              max_attempts=3)
        await _drain(d, 1)
        await rec.stop()
        return rec

    rec = run_async(gone())
    assert list(rec.attempts.values()) == [1]
    assert json.loads(redis_client.lindex(rl.webhook_dlq("down"), -1))["alert"]["id"] == more

    # nothing lost: a dispatcher restarted later resumes after the cursor, not from the start
    last = write_alert(redis_client, _alerts(1)[0])

    async def restart() -> Receiver:
        rec = await Receiver().start()
        d = WebhookDispatcher(redis_url, rec.url, SECRET, name="down", backoff_base_s=0.01)
        await _drain(d, 1)
        await rec.stop()
        return rec

    rec = run_async(restart())
    assert [s["alert"]["id"] for s in rec.seen] == [last]


def test_network_error_is_retried(redis_url: str, redis_client: Any) -> None:
    from infra.services import free_port

    write_alert(redis_client, _alerts(1)[0])

    async def scenario() -> WebhookDispatcher:
        d = WebhookDispatcher(redis_url, f"http://127.0.0.1:{free_port()}/hook", SECRET,
                              name="nohost", backoff_base_s=0.01, max_attempts=2, timeout_s=1)
        await _drain(d, 1)
        return d

    d = run_async(scenario())
    assert d.dead_lettered == 1
    letter = json.loads(redis_client.lindex(rl.webhook_dlq("nohost"), 0))
    assert "Connect" in letter["error"] or "connect" in letter["error"]
    assert "/hook" not in json.dumps(letter)  # the URL's path may be a credential


def test_public_url_hides_path_and_credentials() -> None:
    from dashboards.webhooks import public_url

    assert public_url("https://u:pw@hooks.example.com:8443/services/T0/B0/XyZsecret?x=1") == (
        "https://hooks.example.com:8443/…")


def test_dashboard_app_runs_its_webhooks(campus: Any, redis_url: str, redis_client: Any) -> None:
    from dash_support import Served

    from infra.services import free_port

    port = free_port()
    d = WebhookDispatcher(redis_url, f"http://127.0.0.1:{port}/hook", SECRET, name="app",
                          backoff_base_s=0.05)
    served = Served(campus, redis_url, webhooks=[d])  # create_app(..., webhooks=[...])
    rec = Receiver()
    try:
        served.call(rec.start(port))
        aid = write_alert(redis_client, _alerts(1)[0])
        deadline = time.monotonic() + 10
        while not rec.seen and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [s["alert"]["id"] for s in rec.seen] == [aid]
        served.call(rec.stop())
    finally:
        served.close()
