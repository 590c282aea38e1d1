"""Webhook delivery of fire-code incidents or alerts: signed, retried, dead-lettered, never lost.

A :class:`WebhookDispatcher` follows one stream from a cursor kept in Redis and POSTs
each entry to one URL. Its ``source`` is either

* ``"incidents"`` (what the CLIs deliver by default): the incident lifecycle of
  ``incidents:events`` (occupancy/incidents.py), one POST per event, body
  ``{id, event, key, incident}`` where ``event`` is ``open``, ``update`` (a new peak) or
  ``resolve`` and ``incident`` is the public record (id, location, state, opened,
  last_seen, resolved, peak, decisions, β, guarantee); the ``Idempotency-Key`` is the
  event's ``key``, a hash of (incident id, event, version), so a replayed tick or a
  retried delivery carries the same key; cursor ``webhook:{name}:incidents:cursor``;
* ``"alerts"``: every MIDE decision of the ``alerts`` stream, body the public alert
  JSON ``{id, tick, location, capacity, algorithm, beta}`` (never an ex-post ε), key
  derived from its stream id; cursor ``webhook:{name}:cursor``.

For both:
* ``X-Occustream-Signature: t=<unix>,v2=<hex>`` with
  ``hex = HMAC-SHA256(secret, f"{t}.{idempotency_key}.{body}")`` — the signature covers
  the timestamp, the ``Idempotency-Key`` header and the body, so neither a stale
  delivery nor one replayed under a fresh key verifies. Receivers check it with
  :func:`verify_signature` (constant-time, with a timestamp tolerance against replay)
  and then drop keys they have already seen;
* ``Idempotency-Key``: stable per delivery (see above), the same on every retry, so a
  receiver that sees a key twice (after a dispatcher crash between delivery and cursor
  update) drops the duplicate.

The receiver URL may itself be a credential (many hook URLs carry a token in the path):
log lines and dead letters name the subscriber and the URL's scheme and host only.

Retries: network errors, timeouts, 408, 429 and 5xx are retried with exponential
backoff (``backoff_base_s · 2^k``, capped) up to ``max_attempts``; other 4xx and
exhausted retries move the alert to the dead-letter list ``webhook:{name}:dlq``.
The cursor advances only after an alert is delivered or dead-lettered, so a restart
resumes where it stopped: nothing is lost.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import os
import time
from typing import Any

import aiohttp

from dashboards.hardening import cancel_requested
from mechanisms.errors import ConfigError, check_positive
from occupancy import redis_layout as rl
from readmodel.reader import read_after, stream_end

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Occustream-Signature"
IDEMPOTENCY_HEADER = "Idempotency-Key"
RETRYABLE = frozenset({408, 425, 429})
SOURCES = {"alerts": rl.ALERTS_STREAM, "incidents": rl.INCIDENTS_STREAM}


def secret_from_env(env: dict[str, str] | None = None) -> bytes:
    """The webhook signing secret from ``$OCCUSTREAM_WEBHOOK_SECRET``."""
    env = dict(os.environ) if env is None else env
    secret = env.get("OCCUSTREAM_WEBHOOK_SECRET", "").strip()
    if len(secret) < 16:
        raise ConfigError("set OCCUSTREAM_WEBHOOK_SECRET to a secret of at least 16 characters "
                          "to sign webhook payloads")
    return secret.encode()


def _message(ts: int, key: str, body: bytes) -> bytes:
    return f"{int(ts)}.{key}.".encode() + body


def sign(secret: bytes, body: bytes, key: str, ts: int | None = None) -> str:
    """The signature header value for ``body`` sent with ``Idempotency-Key: key``."""
    ts = int(time.time()) if ts is None else int(ts)
    mac = hmac.new(secret, _message(ts, key, body), hashlib.sha256).hexdigest()
    return f"t={ts},v2={mac}"


def verify_signature(secret: bytes, header: str, body: bytes, key: str, *,
                     tolerance_s: float = 300.0, now: float | None = None) -> bool:
    """Check a signature header against the body and the ``Idempotency-Key`` received.

    Constant time; false when the timestamp is more than ``tolerance_s`` away from now,
    when the body or the key differ from the signed ones, or when the header is malformed.
    """
    try:
        parts = dict(p.split("=", 1) for p in header.split(","))
        ts = int(parts["t"])
        given = parts["v2"]
    except (ValueError, KeyError, AttributeError):
        return False
    if not isinstance(key, str) or not key:
        return False
    now = time.time() if now is None else now
    if abs(now - ts) > tolerance_s:
        return False
    want = hmac.new(secret, _message(ts, key, body), hashlib.sha256).hexdigest()
    return hmac.compare_digest(want, given)


def public_url(url: str) -> str:
    """``scheme://host[:port]/…``: the URL without its path, query or credentials."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname or "?"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<unparseable url>"
    return f"{parts.scheme}://{host}{port}/…"


def idempotency_key(alert_id: str) -> str:
    """Stable key per alert (the same on every retry and every restart)."""
    return "alert-" + hashlib.sha256(alert_id.encode()).hexdigest()[:32]


class WebhookDispatcher:
    """Deliver every entry of the alerts or incidents stream to one URL (module docstring).

    Args:
        redis_url: the read model.
        url: receiver URL.
        secret: HMAC key.
        name: subscriber name for the cursor/dead-letter keys (default: derived from url).
        max_attempts: tries per alert before dead-lettering.
        backoff_base_s: first retry delay; doubles each retry.
        backoff_max_s: cap on one delay.
        timeout_s: per-request timeout.
        start: where a new subscriber starts: ``"$"`` (new entries only) or ``"0"`` (all).
        source: ``"alerts"`` (every decision) or ``"incidents"`` (the lifecycle).
    """

    def __init__(self, redis_url: str, url: str, secret: bytes, *, name: str | None = None,
                 max_attempts: int = 6, backoff_base_s: float = 0.5, backoff_max_s: float = 30.0,
                 timeout_s: float = 5.0, start: str = "0", source: str = "alerts") -> None:
        if source not in SOURCES:
            raise ConfigError(f"source must be one of {sorted(SOURCES)}, not {source!r}")
        self.source = source
        self.stream = SOURCES[source]
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"webhook url must start with http:// or https://, not {url!r}")
        if not isinstance(max_attempts, int) or max_attempts < 1:
            raise ConfigError(f"max_attempts must be an integer >= 1, not {max_attempts!r}")
        self.redis_url = redis_url
        self.url = url
        self.secret = secret
        self.name = name or hashlib.sha256(url.encode()).hexdigest()[:12]
        self.max_attempts = max_attempts
        self.backoff_base_s = check_positive("backoff_base_s", backoff_base_s)
        self.backoff_max_s = check_positive("backoff_max_s", backoff_max_s)
        self.timeout_s = check_positive("timeout_s", timeout_s)
        self.start = start
        self.delivered = 0
        self.dead_lettered = 0

    async def _cursor(self, client: Any) -> str:
        cur = await client.get(rl.webhook_cursor(self.name, self.stream))
        if cur is not None:
            return cur.decode() if isinstance(cur, bytes) else str(cur)
        if self.start == "$":
            cur = await stream_end(client, self.stream)
        else:
            cur = "0-0"
        await client.set(rl.webhook_cursor(self.name, self.stream), cur)
        return cur

    def _key(self, doc: dict[str, Any]) -> str:
        if self.source == "incidents" and doc.get("key"):
            return str(doc["key"])
        return idempotency_key(str(doc["id"]))

    async def deliver(self, session: aiohttp.ClientSession, alert: dict[str, Any]) -> str | None:
        """POST one alert (or incident event) with retries; None on success, else the error."""
        body = json.dumps(alert, separators=(",", ":"), sort_keys=True).encode()
        key = self._key(alert)
        error = "not attempted"
        for attempt in range(self.max_attempts):
            if attempt:
                delay = min(self.backoff_max_s, self.backoff_base_s * 2 ** (attempt - 1))
                await asyncio.sleep(delay)
            headers = {"Content-Type": "application/json", IDEMPOTENCY_HEADER: key,
                       SIGNATURE_HEADER: sign(self.secret, body, key),
                       "X-Occustream-Attempt": str(attempt + 1)}
            try:
                async with session.post(self.url, data=body, headers=headers,
                                        timeout=aiohttp.ClientTimeout(total=self.timeout_s)) as r:
                    if 200 <= r.status < 300:
                        return None
                    error = f"HTTP {r.status}"
                    if r.status < 500 and r.status not in RETRYABLE:
                        return error
            except (aiohttp.ClientError, TimeoutError) as exc:
                error = f"{type(exc).__name__}: {exc}".replace(self.url, public_url(self.url))
            log.info("webhook %s: alert %s attempt %d failed (%s)", self.name, alert["id"],
                     attempt + 1, error)
        return error

    async def run_once(self, client: Any, session: aiohttp.ClientSession,
                       block_ms: int = 1000) -> int:
        """Handle the entries after the cursor (waiting up to ``block_ms``); return how many."""
        cur = await self._cursor(client)
        n = 0
        for sid_s, alert in await read_after(client, self.stream, cur, block_ms=block_ms):
            error = await self.deliver(session, alert)
            if error is None:
                self.delivered += 1
            else:
                self.dead_lettered += 1
                log.warning("webhook %s: alert %s dead-lettered after %s", self.name, sid_s,
                            error)
                await client.rpush(rl.webhook_dlq(self.name, self.stream), json.dumps({
                    "alert": alert, "idempotency_key": self._key(alert),
                    "url": public_url(self.url), "name": self.name, "error": error,
                    "ts": time.time()}))
            await client.set(rl.webhook_cursor(self.name, self.stream), sid_s)
            n += 1
        return n

    async def run(self) -> None:
        """Deliver forever (until cancelled)."""
        import redis.asyncio as aioredis

        client = aioredis.Redis.from_url(self.redis_url)
        try:
            async with aiohttp.ClientSession() as session:
                while True:
                    try:
                        await self.run_once(client, session)
                    except asyncio.CancelledError:
                        raise
                    except Exception:  # noqa: BLE001 - Redis hiccup: retry
                        if cancel_requested():  # a cancel turned into a Redis error
                            raise asyncio.CancelledError from None
                        log.exception("webhook %s: follower failed; retrying in 1 s", self.name)
                        await asyncio.sleep(1.0)
        finally:
            await client.aclose()
