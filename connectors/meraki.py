"""Meraki Scanning API v3 receiver (https://developer.cisco.com/meraki/scanning-api/3-0).

Endpoints (the path is configurable, default ``/meraki``):

* ``GET  /meraki`` — the validator handshake: answers the validator string configured in
  Dashboard (Network-wide → General → Location and scanning), as ``text/plain``.
* ``POST /meraki`` — a Scanning API post ``{"version": "3.x", "secret", "type": "WiFi",
  "data": {"networkId", "observations": [...]}}``. The shared secret is compared in
  constant time (:func:`hmac.compare_digest`); a wrong or missing secret is refused with
  403 and counted (``rejected{reason="bad_secret"}``), never dead-lettered (an
  unauthenticated sender must not be able to fill the DLQ). Bodies over ``max_body``
  bytes are refused with 413 before they are read. A body that is not JSON, or not a
  v3 WiFi post, is dead-lettered (redacted) and answered with 400. ``type: BLE`` posts
  are acknowledged (200) and counted as ignored.

Each observation yields one record per entry of ``locations`` — at ``time``, at the AP of
its strongest ``rssiRecords`` entry (``apMac``/``rssi``) — or, when the client has no
recent locations, one record from ``latestRecord`` (``time``, ``nearestApMac``,
``nearestApRssi``). A client without a usable record is dead-lettered.

Replays and order: the response (200) is sent only after Kafka acknowledged the records,
so Meraki retries a post that was not stored. A replayed post (retry, or the same
observation in two posts) produces no second record inside the edge's dedupe window
(:class:`connectors.edge.Edge`); outside it the repeat is produced and is harmless (an
identical observation does not change a device's presence). Out-of-order posts are
forwarded as they are: the pipeline's event clock decides lateness, exactly as for any
other producer.
"""

from __future__ import annotations

import hmac
import json
import logging
from datetime import datetime
from typing import Any

from connectors.edge import Edge, add_health_routes

log = logging.getLogger(__name__)

DEFAULT_PATH = "/meraki"
DEFAULT_MAX_BODY = 4 << 20  # bytes; a post covers one network's clients for ~1 minute


def parse_time(value: Any) -> float | None:
    """Epoch seconds from an ISO 8601 string (``Z`` or offset) or a number; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        v = float(value)
        return v / 1000.0 if v > 1e11 else v  # epoch ms
    if not isinstance(value, str) or not value:
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        return None  # no zone: ambiguous, refuse rather than guess
    return dt.timestamp()


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return None
    return None


def observations_of(client: dict[str, Any]) -> list[tuple[Any, Any, Any, Any]]:
    """``(mac, ap, time, rssi)`` tuples of one v3 WiFi observation (module docstring)."""
    mac = client.get("clientMac")
    out = []
    for loc in client.get("locations") or []:
        if not isinstance(loc, dict):
            continue
        best = None
        for r in loc.get("rssiRecords") or []:
            if isinstance(r, dict) and r.get("apMac"):
                rssi = _number(r.get("rssi"))
                if best is None or (rssi is not None and (best[1] is None or rssi > best[1])):
                    best = (r.get("apMac"), rssi)
        if best is not None:
            out.append((mac, best[0], loc.get("time"), best[1]))
    if not out:
        lr = client.get("latestRecord")
        if isinstance(lr, dict):
            out.append((mac, lr.get("nearestApMac"), lr.get("time"),
                        _number(lr.get("nearestApRssi"))))
    return out


class MerakiReceiver:
    """The aiohttp application of the receiver (see the module docstring)."""

    def __init__(self, edge: Edge, *, validator: str, secret: str,
                 path: str = DEFAULT_PATH, max_body: int = DEFAULT_MAX_BODY) -> None:
        self.edge, self.validator, self.path = edge, validator, path
        self._secret = secret.encode()
        self.max_body = int(max_body)

    def app(self) -> Any:
        """The aiohttp application (receiver routes + ``/health`` + ``/metrics``)."""
        from aiohttp import web

        app = web.Application(client_max_size=self.max_body)
        app.router.add_get(self.path, self.handle_get)
        app.router.add_post(self.path, self.handle_post)
        add_health_routes(app, self.edge)
        return app

    async def handle_get(self, _request: Any) -> Any:
        """The validator handshake."""
        from aiohttp import web

        return web.Response(text=self.validator, content_type="text/plain")

    async def handle_post(self, request: Any) -> Any:
        """One Scanning API post."""
        from aiohttp import web

        edge = self.edge
        edge.metrics.received += 1
        if request.content_length is not None and request.content_length > self.max_body:
            edge.refuse("too_large")
            raise web.HTTPRequestEntityTooLarge(max_size=self.max_body,
                                                actual_size=request.content_length)
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            edge.refuse("too_large")
            raise
        try:
            post = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            edge.reject(body, "malformed_json")
            await edge.flush()
            return web.Response(status=400, text="body is not JSON\n")
        if not isinstance(post, dict):
            edge.reject(body, "not_an_object")
            await edge.flush()
            return web.Response(status=400, text="body is not a JSON object\n")
        secret = post.get("secret")
        if not isinstance(secret, str) or not hmac.compare_digest(secret.encode(), self._secret):
            edge.refuse("bad_secret")
            return web.Response(status=403, text="bad secret\n")
        post = {k: v for k, v in post.items() if k != "secret"}  # never in the DLQ
        version = str(post.get("version", ""))
        if version.split(".", 1)[0] != "3":
            edge.reject(post, "unsupported_version")
            await edge.flush()
            return web.Response(status=400, text="only Scanning API v3 posts are accepted\n")
        kind = post.get("type")
        if kind == "BLE":
            edge.ignore("ble")
            return web.Response(text="ok\n")
        data = post.get("data")
        clients = data.get("observations") if isinstance(data, dict) else None
        if kind != "WiFi" or not isinstance(clients, list):
            edge.reject(post, "bad_type:type" if kind != "WiFi" else "missing_field:observations")
            await edge.flush()
            return web.Response(status=400, text="not a v3 WiFi post\n")
        n_ok = 0
        for client in clients:
            if not isinstance(client, dict):
                edge.reject(client, "not_an_object")
                continue
            obs = observations_of(client)
            if not obs:
                edge.reject(client, "missing_field:latestRecord")
                continue
            for mac, ap, t, rssi in obs:
                ts = parse_time(t)
                if ts is None:
                    edge.reject(client, "bad_timestamp" if t else "missing_field:ts")
                    continue
                n_ok += edge.observe(mac, ap, ts, rssi, raw=client)
        await edge.flush()
        return web.json_response({"accepted": n_ok})
