"""``occustream ingest SOURCE`` — run one network connector as a service (docs/CONNECT.md).

Sources: ``meraki`` (Scanning API v3 receiver), ``spaces`` (Cisco Spaces Firehose NDJSON
from a file, stdin or the HTTP stream), ``syslog`` (controller syslog over UDP/TCP),
``radius`` (RADIUS accounting over UDP). Every source writes pseudonymised observations
to ``wifi.observations`` and bad input to ``wifi.observations.dlq``, and serves
``/health`` and ``/metrics`` (Meraki on its own port, the others on ``--metrics-port``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from typing import Any

from connectors import meraki, radius, spaces, syslog
from connectors.edge import (
    DLQ_TOPIC,
    TOPIC,
    ApResolver,
    Edge,
    KafkaSink,
    edge_secret,
    read_secret_value,
    start_health_server,
    start_http,
)
from mechanisms.errors import ConfigError

log = logging.getLogger(__name__)

SOURCES = ("meraki", "spaces", "syslog", "radius")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (one sub-command per source)."""
    parser = argparse.ArgumentParser(
        prog="occustream ingest",
        description="Receive a WiFi network's events, pseudonymise them at the edge and "
                    "write them to wifi.observations (docs/CONNECT.md).")
    sub = parser.add_subparsers(dest="source", required=True, metavar="SOURCE")

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--site", default=os.environ.get("OCCUSTREAM_SITE", "dbh"),
                       help="building file or name (AP ids, MACs and aliases; default dbh)")
        p.add_argument("--kafka", default=os.environ.get("KAFKA_BOOTSTRAP"),
                       help="Kafka bootstrap host:port (default $KAFKA_BOOTSTRAP)")
        p.add_argument("--topic-prefix", default=os.environ.get("OCCUSTREAM_TOPIC_PREFIX", ""),
                       help="prefix of the topic names (as the pipeline's topic_prefix)")
        p.add_argument("--secret-file",
                       help="pseudonym secret, the pipeline's (default "
                            "$OCCUSTREAM_SECRET_FILE / $OCCUSTREAM_SECRET)")
        p.add_argument("--demo", action="store_true",
                       help="allow the built-in development secret (never for real data)")
        p.add_argument("--host", default="0.0.0.0", help="address to listen on")
        p.add_argument("--metrics-port", type=int, default=9108,
                       help="port of /health and /metrics (0 = any free port)")
        p.add_argument("--dedupe-window-s", type=float, default=600.0,
                       help="drop repeats of an observation received within this many seconds")

    p = sub.add_parser("meraki", help="Meraki Scanning API v3 receiver (HTTP)")
    common(p)
    p.add_argument("--port", type=int, default=8088, help="HTTP port (also /health, /metrics)")
    p.add_argument("--path", default=meraki.DEFAULT_PATH, help="receiver URL path")
    p.add_argument("--validator", default=os.environ.get("MERAKI_VALIDATOR"),
                   help="validator string from Dashboard (default $MERAKI_VALIDATOR)")
    p.add_argument("--meraki-secret-file", help="file with the shared secret "
                                                "(default $MERAKI_SECRET)")
    p.add_argument("--max-body", type=int, default=meraki.DEFAULT_MAX_BODY,
                   help="largest accepted POST body in bytes (larger: 413)")

    p = sub.add_parser("spaces", help="Cisco Spaces Firehose NDJSON (file, stdin, HTTP)")
    common(p)
    p.add_argument("--from", dest="source_uri", required=True,
                   help="a file or - for stdin (read to the end), or the Firehose events "
                        "URL https://… (followed forever, reconnecting and resuming)")
    p.add_argument("--api-key-file", help="file with the Firehose API key "
                                          "(default $SPACES_API_KEY; HTTP only)")
    p.add_argument("--state-file", default="spaces-state.json",
                   help="resume state (last event id/time); '' = no resume")
    p.add_argument("--overlap-s", type=float, default=spaces.DEFAULT_OVERLAP_S,
                   help="resume overlap: events this much older than the last are re-checked")

    p = sub.add_parser("syslog", help="controller syslog (RFC 3164/5424) over UDP and TCP")
    common(p)
    p.add_argument("--udp-port", type=int, default=5514, help="UDP port (-1 = off)")
    p.add_argument("--tcp-port", type=int, default=5514, help="TCP port (-1 = off)")

    p = sub.add_parser("radius", help="RADIUS accounting (RFC 2866) over UDP")
    common(p)
    p.add_argument("--port", type=int, default=1813, help="UDP port")
    p.add_argument("--radius-secret-file", help="file with the RADIUS shared secret "
                                                "(default $RADIUS_SECRET)")
    return parser


async def make_edge(args: argparse.Namespace) -> Edge:
    """The edge for the parsed options (building, secret, Kafka sink)."""
    if not args.kafka:
        raise ConfigError("no Kafka: pass --kafka host:port or set KAFKA_BOOTSTRAP")
    secret = edge_secret(args.secret_file, demo=args.demo)
    _site, resolver = ApResolver.load(args.site)
    sink = KafkaSink(args.kafka, args.topic_prefix + TOPIC, args.topic_prefix + DLQ_TOPIC)
    await sink.start()
    return Edge(args.source, secret, resolver, sink, dedupe_window_s=args.dedupe_window_s)


async def run(args: argparse.Namespace, stop: asyncio.Event) -> int:
    """Run the selected connector until ``stop`` is set (or a finite input ends)."""
    edge = await make_edge(args)
    cleanup: list[Any] = []
    flusher = None
    try:
        if args.source == "meraki":
            validator = args.validator
            if not validator:
                raise ConfigError("no validator: pass --validator or set MERAKI_VALIDATOR")
            secret = read_secret_value("meraki secret", args.meraki_secret_file, "MERAKI_SECRET")
            rec = meraki.MerakiReceiver(edge, validator=validator, secret=secret,
                                        path=args.path, max_body=args.max_body)
            runner, port = await start_http(rec.app(), args.host, args.port)
            cleanup.append(runner.cleanup)
            log.info("meraki receiver on %s:%d%s (health, metrics on the same port)",
                     args.host, port, args.path)
            await stop.wait()
            return 0
        runner, mport = await start_health_server(edge, args.host, args.metrics_port)
        cleanup.append(runner.cleanup)
        log.info("%s: /health and /metrics on port %d", args.source, mport)
        if args.source == "spaces":
            state = spaces.ResumeState(args.state_file or None, args.overlap_s)
            conn = spaces.SpacesConnector(edge, state)
            uri = args.source_uri
            if uri.startswith(("http://", "https://")):
                key_file = args.api_key_file
                api_key = (read_secret_value("api key", key_file, "SPACES_API_KEY")
                           if key_file or os.environ.get("SPACES_API_KEY") else None)
                lines = spaces.http_lines(uri, api_key, state)
            else:
                lines = spaces.file_lines(uri)
            task = asyncio.ensure_future(conn.run(lines))
            waiter = asyncio.ensure_future(stop.wait())
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                await conn.commit()
            else:
                task.result()
            log.info("spaces: %s", edge.metrics.health(edge.pending))
            return 0
        flusher = asyncio.ensure_future(edge.flush_forever())
        if args.source == "syslog":
            sconn = syslog.SyslogConnector(edge)
            closables, ports = await syslog.serve(
                sconn, args.host, None if args.udp_port < 0 else args.udp_port,
                None if args.tcp_port < 0 else args.tcp_port)
            cleanup += [c.close for c in closables]
            log.info("syslog listening on %s %s", args.host, ports)
        else:
            rsecret = read_secret_value("radius secret", args.radius_secret_file,
                                        "RADIUS_SECRET").encode()
            rconn = radius.RadiusConnector(edge, rsecret)
            transport, port = await radius.serve(rconn, args.host, args.port)
            cleanup.append(transport.close)
            log.info("radius accounting on %s:%d/udp", args.host, port)
        await stop.wait()
        return 0
    finally:
        if flusher is not None:
            flusher.cancel()
        for c in reversed(cleanup):
            res = c()
            if asyncio.iscoroutine(res):
                await res
        await edge.flush()
        await edge.sink.stop()


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``occustream ingest``."""
    args = build_parser().parse_args(argv)
    for name in ("kafka", "aiokafka"):
        logging.getLogger(name).setLevel(logging.WARNING)

    async def _main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        return await run(args, stop)

    try:
        return asyncio.run(_main())
    except ConfigError as exc:
        print(f"occustream ingest: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
