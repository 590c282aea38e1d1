"""``occustream alerts`` — fire-code incidents in the terminal, or delivered to webhooks.

``occustream alerts`` prints the recent incident lifecycle events (open, update with a
new peak, resolve; occupancy/incidents.py); ``--follow`` keeps printing new ones as
they arrive (from the Redis ``incidents:events`` stream, so none is missed between
reads); ``--webhook URL`` delivers each event to URL (HMAC-signed, retried,
dead-lettered; see :mod:`dashboards.webhooks`). ``--decisions`` shows (or delivers)
every MIDE decision instead, one alert per tick and hour, as before incidents. Only
public fields are shown.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
from datetime import UTC, datetime
from typing import Any

from mechanisms.errors import ConfigError
from occupancy import redis_layout as rl
from readmodel.reader import follow, recent_entries

log = logging.getLogger(__name__)


def format_alert(alert: dict[str, Any], names: dict[str, str] | None = None) -> str:
    """One line per alert."""
    try:
        when = datetime.fromtimestamp(float(alert["tick"]), UTC).strftime("%Y-%m-%d %H:%M UTC")
    except (TypeError, ValueError, KeyError):
        when = str(alert.get("tick"))
    loc = str(alert.get("location"))
    name = (names or {}).get(loc)
    where = f"{loc} ({name})" if name else loc
    return (f"{when}  OVER CAPACITY  {where}  capacity={alert.get('capacity')}  "
            f"algorithm={alert.get('algorithm')}  β={alert.get('beta')}  id={alert.get('id')}")


def _when(tick: Any) -> str:
    try:
        return datetime.fromtimestamp(float(tick), UTC).strftime("%Y-%m-%d %H:%M UTC")
    except (TypeError, ValueError):
        return str(tick)


def format_incident_event(event: dict[str, Any], names: dict[str, str] | None = None) -> str:
    """One line per incident lifecycle event."""
    inc = event.get("incident") or {}
    kind = str(event.get("event") or "?")
    at = {"open": "opened", "resolve": "resolved", "update": "peak_tick"}.get(kind, "last_seen")
    loc = str(inc.get("location"))
    name = (names or {}).get(loc)
    where = f"{loc} ({name})" if name else loc
    peak = inc.get("peak")
    peak_s = (f"  peak≈{float(peak):.0f} ({inc.get('peak_mechanism')}, released)"
              if peak is not None else "")
    dec = inc.get("decisions") or {}
    return (f"{_when(inc.get(at) or inc.get('last_seen'))}  INCIDENT {kind.upper():<7} {where}"
            f"  capacity={inc.get('capacity')}{peak_s}  since {_when(inc.get('opened'))}"
            f"  decisions={dec.get('tick', 0)} tick + {dec.get('hour', 0)} hour"
            f"  algorithm={inc.get('algorithm')}  β={inc.get('beta')} per decision"
            f"  id={inc.get('id')}")


def build_parser() -> argparse.ArgumentParser:
    """The ``occustream alerts`` argument parser."""
    p = argparse.ArgumentParser(
        prog="occustream alerts",
        description="Show fire-code incidents (open, update, resolve) from the Redis read "
                    "model; follow them live or deliver them to webhooks.")
    p.add_argument("--redis-url", default=os.environ.get("REDIS_URL", ""),
                   help="Redis read model (default $REDIS_URL)")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing new events")
    p.add_argument("--last", type=int, default=20, help="recent events to print first (20)")
    p.add_argument("--decisions", action="store_true",
                   help="every MIDE decision (one alert per tick and hour) instead of the "
                        "incident lifecycle")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.add_argument("--building", default="", help="building for location names (optional)")
    p.add_argument("--webhook", action="append", default=[], metavar="URL",
                   help="deliver incident events (or, with --decisions, alerts) to URL "
                        "(repeatable); secret $OCCUSTREAM_WEBHOOK_SECRET")
    p.add_argument("--max-attempts", type=int, default=6, help="webhook tries per event (6)")
    return p


async def _follow(url: str, args: argparse.Namespace, names: dict[str, str]) -> None:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url)
    stream = rl.ALERTS_STREAM if args.decisions else rl.INCIDENTS_STREAM
    try:
        recent = await recent_entries(client, stream, max(args.last, 1))
        last = recent[-1][0] if recent else "0-0"
        for _, doc in recent if args.last > 0 else []:
            _print(doc, args, names)
        if args.follow:
            async for _, doc in follow(client, stream, last):
                _print(doc, args, names)
    finally:
        await client.aclose()


def _print(alert: dict[str, Any], args: argparse.Namespace, names: dict[str, str]) -> None:
    fmt = format_alert if args.decisions else format_incident_event
    line = json.dumps(alert) if args.json else fmt(alert, names)
    print(line, flush=True)


async def _webhooks(url: str, args: argparse.Namespace) -> None:
    from dashboards.hardening import install_log_redaction
    from dashboards.webhooks import WebhookDispatcher, secret_from_env

    secret = secret_from_env()
    # hook URLs may carry credentials in their path or query: never in a log line
    install_log_redaction([secret.decode(), *args.webhook])
    source = "alerts" if args.decisions else "incidents"
    hooks = [WebhookDispatcher(url, u, secret, max_attempts=args.max_attempts, source=source)
             for u in args.webhook]
    await asyncio.gather(*(h.run() for h in hooks))


def main(argv: list[str] | None = None) -> int:
    """Print (and follow) incidents or alerts, or deliver them to webhooks."""
    args = build_parser().parse_args(argv)
    if not args.redis_url:
        raise ConfigError("set REDIS_URL or pass --redis-url (the pipeline's Redis)")
    if args.last < 0:
        raise ConfigError(f"--last must be >= 0, not {args.last!r}")
    names: dict[str, str] = {}
    if args.building:
        from occupancy.buildings import load_site

        names = {loc.id: loc.name for loc in load_site(args.building).locations}
    try:
        if args.webhook:
            asyncio.run(_webhooks(args.redis_url, args))
        else:
            asyncio.run(_follow(args.redis_url, args, names))
    except KeyboardInterrupt:
        log.info("alerts: stopped")
    return 0
