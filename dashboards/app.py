"""``occustream dashboard`` — the live heatmap, alerts, privacy view and REST API.

An aiohttp app that reads the Redis read model (docs/DESIGN.md "Redis read model") and
serves static HTML/JS/CSS (no build step):

* ``/`` — the page: floor plans (SVG from the building's plan geometry) coloured by
  the ten-colour scale, legend, floor switcher, campus tiles, mechanism selector,
  time scrubber, over-capacity incidents (open first) with acknowledgement per
  incident, the admin's privacy view.
* ``/api/*`` — REST (see ``/openapi.json`` and ``/docs``) and ``/api/events`` (SSE).

Auth: ``Authorization: Bearer <token>`` or ``?access_token=``. Two roles: the analyst
token (env ``OCCUSTREAM_ANALYST_TOKEN``) reads released values and alerts; the admin
token (``OCCUSTREAM_ADMIN_TOKEN``) also reads the privacy ledger and acknowledges
alerts. Unset tokens are generated at start and printed on stdout (never logged); tokens
set in the environment are never printed (the banner says where they come from).

Hardening (:mod:`dashboards.hardening`): tokens are masked in every log line (also the
raw request lines aiohttp logs for malformed requests), every response carries a CSP
(no inline script; ``frame-ancestors 'none'``), ``X-Frame-Options: DENY``,
``X-Content-Type-Options: nosniff`` and ``Referrer-Policy``, ``Server`` has no version,
a connection must send its request head within ``--header-timeout`` seconds, at most
``--max-sse-clients`` live-update streams are served at once (503 past it), and a
Redis outage answers 503 with a JSON body (``/api/health`` too), never 500.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import hmac
import io
import logging
import os
import re
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from dashboards import cube as cube_api
from dashboards import demo_control as demo_control_routes
from dashboards import game, hardening
from dashboards.broker import Broker, sse_message
from dashboards.openapi import allowed_query_parameters, spec
from infra.urls import safe_url
from mechanisms.errors import ConfigError, InvalidParameterError, OccustreamError
from mechanisms.registry import MECHANISMS
from occupancy.buildings import Site, load_site
from readmodel.reader import ReadModel

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
KEEPALIVE_S = 15.0
ROLE_KEY: Any = (web.RequestKey("role", str) if hasattr(web, "RequestKey")  # aiohttp >= 3.13
                 else "occustream.role")
_ALLOWED_QUERY = allowed_query_parameters()
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class Tokens:
    """The two bearer tokens."""

    analyst: str
    admin: str

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> tuple[Tokens, bool]:
        """Tokens from the environment; missing ones generated. Returns (tokens, generated)."""
        env = dict(os.environ) if env is None else env
        analyst = env.get("OCCUSTREAM_ANALYST_TOKEN", "").strip()
        admin = env.get("OCCUSTREAM_ADMIN_TOKEN", "").strip()
        generated = not (analyst and admin)
        tokens = cls(analyst or secrets.token_urlsafe(18), admin or secrets.token_urlsafe(18))
        if tokens.analyst == tokens.admin:
            raise ConfigError("OCCUSTREAM_ANALYST_TOKEN and OCCUSTREAM_ADMIN_TOKEN must differ")
        return tokens, generated

    def role(self, token: str) -> str | None:
        """The role a token grants, or None."""
        if token and hmac.compare_digest(token.encode(), self.admin.encode()):
            return "admin"
        if token and hmac.compare_digest(token.encode(), self.analyst.encode()):
            return "analyst"
        return None


TOKENS: web.AppKey[Tokens] = web.AppKey("tokens")
SITE_JSON: web.AppKey[dict[str, Any]] = web.AppKey("site_json")
RM: web.AppKey[ReadModel] = web.AppKey("rm", ReadModel)
BROKER: web.AppKey[Broker] = web.AppKey("broker", Broker)
SSE_LIMIT: web.AppKey[int] = web.AppKey("sse_limit", int)


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message, "status": status}, status=status)


def _float(request: web.Request, name: str) -> float | None:
    raw = request.query.get(name)
    if raw is None:
        return None
    try:
        v = float(raw)
    except ValueError:
        raise InvalidParameterError(f"{name} must be a number, not {raw!r}") from None
    if v != v or v in (float("inf"), float("-inf")):
        raise InvalidParameterError(f"{name} must be a finite number, not {raw!r}")
    return v


def _int(request: web.Request, name: str, default: int, lo: int, hi: int) -> int:
    raw = request.query.get(name)
    if raw is None:
        return default
    try:
        v = int(raw)
    except ValueError:
        raise InvalidParameterError(f"{name} must be an integer, not {raw!r}") from None
    if not lo <= v <= hi:
        raise InvalidParameterError(f"{name} must be in [{lo}, {hi}], not {raw!r}")
    return v


def _format(request: web.Request) -> str:
    fmt = request.query.get("format", "json")
    if fmt not in ("json", "csv"):
        raise InvalidParameterError(f"format must be 'json' or 'csv', not {fmt!r}")
    return fmt


def _csv(rows: list[dict[str, Any]], columns: list[str], filename: str) -> web.Response:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return web.Response(text=buf.getvalue(), content_type="text/csv", headers={
        "Content-Disposition": f'attachment; filename="{filename}"'})


def site_json(site: Site) -> dict[str, Any]:
    """The public plan of a site: buildings, floors, locations (polygons, capacity)."""
    return {
        "id": site.id, "name": site.name,
        "buildings": [{
            "id": b.id, "name": b.name,
            "floors": [{"id": f.id, "level": f.level, "name": f.name, "width": f.width,
                        "height": f.height} for f in sorted(b.floors, key=lambda f: f.level)],
            "locations": [{"id": loc.id, "name": loc.name, "floor": loc.floor,
                           "kind": loc.kind, "capacity": loc.capacity,
                           "polygon": [list(p) for p in loc.polygon]} for loc in b.locations],
        } for b in site.buildings],
    }


@web.middleware
async def _errors_and_auth(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    path = request.path
    if path.startswith("/api/") and path != "/api/health":
        header = request.headers.get("Authorization", "")
        token = header[7:].strip() if header.lower().startswith("bearer ") else ""
        token = token or request.query.get("access_token", "")
        role = request.app[TOKENS].role(token)
        if role is None:
            return _error(401, "missing or invalid token: send 'Authorization: Bearer <token>'"
                          " (the analyst or admin token printed at start)")
        request[ROLE_KEY] = role
        route = request.match_info.route.resource
        allowed = _ALLOWED_QUERY.get(route.canonical if route is not None else "")
        if allowed is not None:
            unknown = sorted(set(request.query) - allowed)
            if unknown:
                return _error(400, f"unknown query parameter(s) {unknown}; this endpoint "
                                   f"takes {sorted(allowed)}")
            repeated = sorted(k for k in set(request.query) if len(request.query.getall(k)) > 1)
            if repeated:
                return _error(400, f"query parameter(s) {repeated} must be given once")
    try:
        return await handler(request)
    except hardening.REDIS_DOWN:
        log.warning("%s: the read model (Redis) is unavailable", path)
        return hardening.redis_unavailable(health=path == "/api/health")
    except InvalidParameterError as exc:
        return _error(400, str(exc))
    except web.HTTPException as exc:
        if exc.status >= 400 and path.startswith("/api/"):
            resp = _error(exc.status, exc.reason or "error")
            if "Allow" in exc.headers:
                resp.headers["Allow"] = exc.headers["Allow"]
            return resp
        raise


def _admin(request: web.Request) -> None:
    if request[ROLE_KEY] != "admin":
        raise web.HTTPForbidden(reason="admin token required: the analyst token cannot "
                                       "read the privacy ledger or acknowledge alerts")


# -- handlers ---------------------------------------------------------------------------
async def index(request: web.Request) -> web.FileResponse:
    """The single-page dashboard."""
    return web.FileResponse(STATIC / "index.html")


async def docs(request: web.Request) -> web.FileResponse:
    """Human-readable API docs rendered from /openapi.json."""
    return web.FileResponse(STATIC / "docs.html")


async def openapi(request: web.Request) -> web.Response:
    """The OpenAPI document."""
    return web.json_response(spec())


async def health(request: web.Request) -> web.Response:
    """Liveness: Redis reachable."""
    await request.app[RM].client.ping()
    return web.json_response({"ok": True})


async def whoami(request: web.Request) -> web.Response:
    """The caller's role."""
    return web.json_response({"role": request[ROLE_KEY]})


async def site_handler(request: web.Request) -> web.Response:
    """Building plans."""
    return web.json_response(request.app[SITE_JSON])


async def mechanisms(request: web.Request) -> web.Response:
    """Mechanisms with data and their public parameters."""
    rm: ReadModel = request.app[RM]
    out = []
    for m in await rm.mechanisms():
        out.append({"name": m, "meta": await rm.meta(m), "latest_tick": await rm.latest_tick(m)})
    return web.json_response({"mechanisms": out})


async def ticks(request: web.Request) -> web.Response:
    """Ticks of a mechanism, optionally within one UTC day."""
    rm: ReadModel = request.app[RM]
    mech = await rm.check_mech(request.query.get("mech"))
    day = request.query.get("day")
    start = end = None
    if day is not None:
        if not _DAY.match(day):
            raise InvalidParameterError(f"day must be YYYY-MM-DD, not {day!r}")
        import datetime as dt

        try:
            d0 = dt.datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=dt.UTC)
        except ValueError:
            raise InvalidParameterError(f"day must be a real date, not {day!r}") from None
        start = d0.timestamp()
        end = start + 86400 - 1e-6
    return web.json_response({"mech": mech, "ticks": await rm.ticks(mech, start, end)})


async def snapshot(request: web.Request) -> web.Response:
    """All locations at a tick."""
    rm: ReadModel = request.app[RM]
    mech = await rm.check_mech(request.query.get("mech"))
    return web.json_response(await rm.snapshot(mech, _float(request, "tick")))


async def history(request: web.Request) -> web.Response:
    """One location's released values, JSON or CSV."""
    rm: ReadModel = request.app[RM]
    fmt = _format(request)
    mech = await rm.check_mech(request.query.get("mech"))
    loc = rm.check_location(request.query.get("location"))
    start, end = _float(request, "start"), _float(request, "end")
    if start is not None and end is not None and start > end:
        raise InvalidParameterError(f"start must be <= end, not {start!r} > {end!r}")
    limit = _int(request, "limit", 0, 1, 100_000) if "limit" in request.query else None
    points = await rm.history(mech, loc, start, end, limit)
    if fmt == "csv":
        rows = [{"mechanism": mech, "location": loc, **p} for p in points]
        return _csv(rows, ["mechanism", "location", "tick", "value"], f"{mech}-{loc}.csv")
    return web.json_response({"mech": mech, "location": loc, "points": points})


async def alerts(request: web.Request) -> web.Response:
    """Alerts, newest first."""
    rm: ReadModel = request.app[RM]
    fmt = _format(request)
    items = await rm.alerts(_int(request, "limit", 100, 1, 1000))
    if fmt == "csv":
        rows = [{**a, "acknowledged": bool(a.get("acknowledged"))} for a in items]
        return _csv(rows, ["id", "tick", "location", "capacity", "algorithm", "beta",
                           "acknowledged"], "alerts.csv")
    return web.json_response({"alerts": items})


async def ack(request: web.Request) -> web.Response:
    """Acknowledge an alert (admin)."""
    _admin(request)
    rm: ReadModel = request.app[RM]
    alert_id = request.match_info["alert_id"]
    return web.json_response({"id": alert_id,
                              "acknowledged": await rm.acknowledge(alert_id, "admin")})


async def privacy(request: web.Request) -> web.Response:
    """The unit of privacy, ε_day and δ, spent today, the projection and the header text."""
    return web.json_response(await request.app[RM].privacy_status())
async def incidents(request: web.Request) -> web.Response:
    """Over-capacity incidents, the open ones first."""
    rm: ReadModel = request.app[RM]
    fmt = _format(request)
    items = await rm.incidents(_int(request, "limit", 100, 1, 1000))
    if fmt == "csv":
        rows = [{**i, "acknowledged": bool(i.get("acknowledged")),
                 "tick_decisions": (i.get("decisions") or {}).get("tick"),
                 "hour_decisions": (i.get("decisions") or {}).get("hour")} for i in items]
        return _csv(rows, ["id", "location", "state", "opened", "last_seen", "resolved",
                           "capacity", "peak", "peak_mechanism", "tick_decisions",
                           "hour_decisions", "algorithm", "beta", "acknowledged"],
                    "incidents.csv")
    return web.json_response({"incidents": items})


async def ack_incident(request: web.Request) -> web.Response:
    """Acknowledge an incident (admin); tells every live page."""
    _admin(request)
    rm: ReadModel = request.app[RM]
    incident_id = request.match_info["incident_id"]
    ack = await rm.acknowledge_incident(incident_id, "admin")
    request.app[BROKER].publish(sse_message("incident_ack", {"id": incident_id,
                                                             "acknowledged": ack}))
    return web.json_response({"id": incident_id, "acknowledged": ack})


async def ledger(request: web.Request) -> web.Response:
    """The privacy ledger view (admin)."""
    _admin(request)
    return web.json_response(await request.app[RM].ledger())


async def events(request: web.Request) -> web.StreamResponse:
    """Server-Sent Events: ``tick`` (a snapshot), ``alert`` (a decision), ``incident``.

    A reconnecting browser sends ``Last-Event-ID``; alert and incident-event ids are
    both Redis stream ids (time-ordered on the one server), so the alerts and incident
    events after it are replayed, merged in id order.
    """
    broker: Broker = request.app[BROKER]
    mech = request.query.get("mech") or None
    limit = request.app[SSE_LIMIT]
    if len(broker.subscribers) >= limit:
        return web.json_response(
            {"error": f"too many live-update clients (limit {limit}); retry later or poll "
                      "/api/snapshot", "status": 503},
            status=503, headers={"Retry-After": "10"})
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                       "Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    sub = broker.subscribe(mech)  # counted before the first await: the cap holds
    try:
        await resp.prepare(request)
        await resp.write(sse_message("hello", {"role": request[ROLE_KEY]}))
        last_id = request.headers.get("Last-Event-ID", "").strip()
        if last_id:  # a reconnecting browser: replay the alerts it missed
            rm: ReadModel = request.app[RM]
            try:
                missed = [("alert", a) for a in reversed(
                    await rm.alerts(limit=1000, after=last_id))]
                missed += [("incident", e) for e in await rm.incident_events(after=last_id)]
            except hardening.REDIS_DOWN:  # the stream is open: say it, keep streaming
                missed = []
                await resp.write(sse_message("error", {"error": "the read model (Redis) is "
                                                                "unavailable"}))
            missed.sort(key=lambda kv: tuple(int(x) for x in kv[1]["id"].split("-")))
            for kind, doc in missed:
                await resp.write(sse_message(kind, doc, event_id=doc["id"]))
        while True:
            try:
                msg = await asyncio.wait_for(sub.queue.get(), KEEPALIVE_S)
            except TimeoutError:
                await resp.write(b": keepalive\n\n")
                continue
            if msg is None:
                break
            await resp.write(msg)
    except ConnectionResetError:
        pass  # the client went away
    finally:
        broker.unsubscribe(sub)
    return resp


# -- app ----------------------------------------------------------------------------------
def create_app(
    site: Site, redis_url: str, tokens: Tokens, *, mechanisms_allowed: list[str] | None = None,
    webhooks: list[Any] | None = None, max_sse_clients: int = hardening.MAX_SSE_CLIENTS,
    demo_control: bool = False,
) -> web.Application:
    """Build the aiohttp application.

    Args:
        site: the building/campus to draw.
        redis_url: the read model.
        tokens: analyst and admin tokens.
        mechanisms_allowed: show only these mechanisms (default: all found in Redis).
        webhooks: :class:`dashboards.webhooks.WebhookDispatcher` objects to run with the app.
        max_sse_clients: live-update streams served at once; more get 503.
        demo_control: let the page change ``occustream demo``'s pace
            (:mod:`dashboards.demo_control`).

    Serve it with :func:`dashboards.hardening.server_options` (header read timeout).
    """
    import redis.asyncio as aioredis

    if not isinstance(max_sse_clients, int) or max_sse_clients < 1:
        raise InvalidParameterError(
            f"max_sse_clients must be an integer >= 1, not {max_sse_clients!r}")
    hardening.install_log_redaction([tokens.analyst, tokens.admin])
    app = web.Application(middlewares=[_errors_and_auth])
    app.on_response_prepare.append(hardening.security_headers)
    app[TOKENS] = tokens
    app[SSE_LIMIT] = max_sse_clients
    app[SITE_JSON] = site_json(site)

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        client = aioredis.Redis.from_url(redis_url, max_connections=64,
                                          socket_connect_timeout=2.0, socket_timeout=10.0)
        rm = ReadModel(client, site, mechanisms_allowed)
        app[RM] = rm

        async def on_tick(mech: str, tick: float) -> dict[str, Any]:
            return await rm.snapshot(mech, tick)

        broker = Broker(client, on_tick)
        app[BROKER] = broker
        await broker.start()
        hooks = [asyncio.create_task(w.run()) for w in (webhooks or [])]
        try:
            yield
        finally:
            for h in hooks:
                h.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await h
            await broker.stop()
            await client.aclose()

    async def end_streams(app: web.Application) -> None:
        if BROKER in app:
            app[BROKER].close_subscribers()

    app.cleanup_ctx.append(lifecycle)
    app.on_shutdown.append(end_streams)
    r = app.router
    r.add_get("/", index)
    r.add_get("/docs", docs)
    r.add_get("/openapi.json", openapi)
    r.add_get("/api/health", health)
    r.add_get("/api/whoami", whoami)
    r.add_get("/api/site", site_handler)
    r.add_get("/api/mechanisms", mechanisms)
    r.add_get("/api/ticks", ticks)
    r.add_get("/api/snapshot", snapshot)
    r.add_get("/api/history", history)
    r.add_get("/api/alerts", alerts)
    r.add_post("/api/alerts/{alert_id}/ack", ack)
    r.add_get("/api/incidents", incidents)
    r.add_post("/api/incidents/{incident_id}/ack", ack_incident)
    r.add_get("/api/ledger", ledger)
    r.add_get("/api/privacy", privacy)
    r.add_get("/api/events", events)
    game.register(app, site, lambda a: a[RM].client)  # IoT-DETECTIVE: /game, /api/game/*
    cube_api.register(r, RM)  # /api/histogram, /api/histogram/{day}
    demo_control_routes.register(app, RM, ROLE_KEY, enabled=demo_control)
    r.add_static("/static", STATIC, append_version=True)
    return app


def banner(host: str, port: int, tokens: Tokens, redis: str,
           env: dict[str, str] | None = None) -> str:
    """The start banner: URLs with generated tokens; env tokens named, never printed."""
    env = dict(os.environ) if env is None else env
    shown = "localhost" if host in ("127.0.0.1", "0.0.0.0") else host
    lines = []
    for role, token, var in (("admin", tokens.admin, "OCCUSTREAM_ADMIN_TOKEN"),
                             ("analyst", tokens.analyst, "OCCUSTREAM_ANALYST_TOKEN")):
        if env.get(var, "").strip() == token:
            lines.append(f"http://{shown}:{port}/#token=<{role} token from ${var}>  ({role})")
        else:
            lines.append(f"http://{shown}:{port}/#token={token}  ({role})")
    lines.append(f"API docs http://{shown}:{port}/docs ; Redis {redis}")
    return "dashboard: " + "\n           ".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The ``occustream dashboard`` argument parser."""
    p = argparse.ArgumentParser(
        prog="occustream dashboard",
        description="Serve the live occupancy heatmap, alerts, privacy view and REST API "
                    "from the Redis read model.",
        epilog="Tokens: OCCUSTREAM_ANALYST_TOKEN / OCCUSTREAM_ADMIN_TOKEN (generated when "
               "unset and printed on stdout, never logged). Open http://HOST:PORT/#token=<token>.",
    )
    p.add_argument("--building", default="dbh",
                   help="building or campus: a name in buildings/ or a JSON path (default dbh)")
    p.add_argument("--redis-url", default=os.environ.get("REDIS_URL", ""),
                   help="Redis read model (default $REDIS_URL; unset: start an embedded Redis)")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="port (default 8080; 0 = any free)")
    p.add_argument("--mechanisms", default="",
                   help="comma-separated mechanisms to show (default: all found in Redis)")
    p.add_argument("--webhook", action="append", default=[], metavar="URL",
                   help="deliver the incident lifecycle (open, update, resolve) to this URL "
                        "(HMAC-signed; repeatable); secret from $OCCUSTREAM_WEBHOOK_SECRET")
    p.add_argument("--webhook-decisions", action="store_true",
                   help="deliver every MIDE decision (one alert per tick and hour) instead "
                        "of incidents")
    p.add_argument("--max-sse-clients", type=int, default=hardening.MAX_SSE_CLIENTS,
                   help="live-update (SSE) clients served at once; more get 503 "
                        f"(default {hardening.MAX_SSE_CLIENTS})")
    p.add_argument("--header-timeout", type=float, default=hardening.HEADER_TIMEOUT_S,
                   help="seconds a client may take to send its request head (slowloris "
                        f"protection; default {hardening.HEADER_TIMEOUT_S:g})")
    p.add_argument("--synthetic", action="store_true",
                   help="fill an EMPTY Redis with a week of made-up values (a look at the "
                        "page without a pipeline; never use with real data)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the dashboard until interrupted."""
    args = build_parser().parse_args(argv)
    if not 0 <= args.port <= 65535:
        raise InvalidParameterError(f"--port must be in [0, 65535], not {args.port!r}")
    if args.max_sse_clients < 1:
        raise InvalidParameterError(
            f"--max-sse-clients must be >= 1, not {args.max_sse_clients!r}")
    if not 0 < args.header_timeout < float("inf"):
        raise InvalidParameterError(
            f"--header-timeout must be a positive number, not {args.header_timeout!r}")
    the_site = load_site(args.building)
    mechs = [m.strip() for m in args.mechanisms.split(",") if m.strip()] or None

    unknown = sorted(set(mechs or ()) - set(MECHANISMS))
    if unknown:
        raise InvalidParameterError(
            f"--mechanisms must be among {sorted(MECHANISMS)}, not {unknown}"
        )
    tokens, generated = Tokens.from_env()
    from infra.services import running_services

    env = dict(os.environ)
    if args.redis_url:
        env["REDIS_URL"] = args.redis_url
    if args.port == 0:
        from infra.services import free_port

        args.port = free_port()
    with running_services(kafka=False, redis=True, env=env) as services:
        url = services.redis_url or ""
        if args.synthetic:
            import redis

            from dashboards.synthetic import seed

            client = redis.Redis.from_url(url)
            if client.dbsize():
                raise ConfigError("--synthetic needs an empty Redis (this one has data)")
            now = time.time()
            small = len(the_site.locations) <= 300  # keep a campus quick to fill
            days = 8 if small else 3
            mechs = ("laplace", "pegasus", "hpegasus", "ttl") if small else ("laplace", "ttl")
            seed(client, the_site, days=days, mechs=mechs,
                 start=now - now % 86400 - (days - 1) * 86400,
                 last_day_ticks=int((now % 86400) // 300) + 1)
            client.close()
        hooks = []
        if args.webhook:
            from dashboards.webhooks import WebhookDispatcher, secret_from_env

            secret = secret_from_env()
            source = "alerts" if args.webhook_decisions else "incidents"
            hooks = [WebhookDispatcher(url, u, secret, source=source) for u in args.webhook]
        app = create_app(the_site, url, tokens, mechanisms_allowed=mechs, webhooks=hooks,
                         max_sse_clients=args.max_sse_clients,
                         demo_control=os.environ.get("OCCUSTREAM_DEMO", "").lower()
                         in ("1", "true", "yes"))
        if generated:  # tokens go to the terminal only, never to the log
            log.warning("OCCUSTREAM_ANALYST_TOKEN / OCCUSTREAM_ADMIN_TOKEN unset: tokens "
                        "generated (printed on stdout, not logged)")
            print("generated tokens (set OCCUSTREAM_ANALYST_TOKEN / OCCUSTREAM_ADMIN_TOKEN "
                  "to fix them):", flush=True)
        print(banner(args.host, args.port, tokens, safe_url(url)), flush=True)
        try:
            web.run_app(app, host=args.host, port=args.port, print=None,
                        handle_signals=True, **hardening.server_options(args.header_timeout))
        except OSError as exc:
            raise OccustreamError(f"cannot listen on {args.host}:{args.port}: "
                                  f"{exc.strerror}; pick another --port") from None
    return 0
