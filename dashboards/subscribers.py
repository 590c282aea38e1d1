"""``occustream alerts`` — fire-code alerts in the terminal, or delivered to webhooks.

``occustream alerts`` prints the recent alerts; ``--follow`` keeps printing new ones
as they arrive (from the Redis ``alerts`` stream, so none is missed between reads);
``--webhook URL`` delivers each alert to URL (HMAC-signed, retried, dead-lettered;
see :mod:`dashboards.webhooks`). Only public alert fields are shown.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from datetime import UTC, datetime
from typing import Any

from mechanisms.errors import ConfigError
from occupancy import redis_layout as rl
from readmodel.reader import public_alert


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


def build_parser() -> argparse.ArgumentParser:
    """The ``occustream alerts`` argument parser."""
    p = argparse.ArgumentParser(
        prog="occustream alerts",
        description="Show fire-code alerts from the Redis read model; follow them live or "
                    "deliver them to webhooks.")
    p.add_argument("--redis-url", default=os.environ.get("REDIS_URL", ""),
                   help="Redis read model (default $REDIS_URL)")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing new alerts")
    p.add_argument("--last", type=int, default=20, help="recent alerts to print first (20)")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.add_argument("--building", default="", help="building for location names (optional)")
    p.add_argument("--webhook", action="append", default=[], metavar="URL",
                   help="deliver alerts to URL (repeatable); secret $OCCUSTREAM_WEBHOOK_SECRET")
    p.add_argument("--max-attempts", type=int, default=6, help="webhook tries per alert (6)")
    return p


async def _follow(url: str, args: argparse.Namespace, names: dict[str, str]) -> None:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url)
    try:
        recent = await client.xrevrange(rl.ALERTS_STREAM, count=max(args.last, 1))
        last = recent[0][0].decode() if recent else "0-0"
        for sid, fields in reversed(recent[: args.last] if args.last > 0 else []):
            _print(public_alert(sid.decode(), fields.get(b"data")), args, names)
        while args.follow:
            rows = await client.xread({rl.ALERTS_STREAM: last}, block=1000, count=100)
            for _, entries in rows or []:
                for sid, fields in entries:
                    last = sid.decode()
                    _print(public_alert(last, fields.get(b"data")), args, names)
    finally:
        await client.aclose()


def _print(alert: dict[str, Any], args: argparse.Namespace, names: dict[str, str]) -> None:
    line = json.dumps(alert) if args.json else format_alert(alert, names)
    print(line, flush=True)


async def _webhooks(url: str, args: argparse.Namespace) -> None:
    from dashboards.hardening import install_log_redaction
    from dashboards.webhooks import WebhookDispatcher, secret_from_env

    secret = secret_from_env()
    # hook URLs may carry credentials in their path or query: never in a log line
    install_log_redaction([secret.decode(), *args.webhook])
    hooks = [WebhookDispatcher(url, u, secret, max_attempts=args.max_attempts)
             for u in args.webhook]
    await asyncio.gather(*(h.run() for h in hooks))


def main(argv: list[str] | None = None) -> int:
    """Print (and follow) alerts, or deliver them to webhooks."""
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
        print("alerts: stopped", file=sys.stderr)
    return 0
