"""``occustream replay`` — send a JSONL event file (from ``occustream simulate --out``) to Kafka.

Each line is sent as it is (malformed lines too: they are for the dead-letter path),
keyed by its ``device``; ``--speed`` paces by the events' ``ts``.

Example::

    occustream simulate --days 1 --out day.jsonl
    occustream replay day.jsonl --kafka localhost:9092 --speed 3600
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from mechanisms.errors import InvalidParameterError
from simulator.cli import HelpFormatter, check_pacing
from simulator.kafka import (
    Record,
    add_kafka_arguments,
    kafka_target,
    produce,
    quiet_kafka_logs,
)

#: A line's ts sets the pace only if it is within this of the previous one (malformed
#: far-future / too-late records must not stall or rush the replay).
PACE_WINDOW_S = 3600.0


def file_records(path: str | os.PathLike[str]) -> Iterator[Record]:
    """``(key, value, arrival_ts)`` for every non-empty line of a JSONL file."""
    last: float | None = None
    with Path(path).open("rb") as f:
        for raw in f:
            value = raw.rstrip(b"\r\n")
            if not value:
                continue
            key = None
            try:
                obj = json.loads(value)
            except ValueError:
                obj = None
            if isinstance(obj, dict):
                dev, ts = obj.get("device"), obj.get("ts")
                if isinstance(dev, str):
                    # the canonical key (the pipeline lower-cases MACs): one device,
                    # one partition, whatever the file's spelling
                    key = dev.strip().lower().encode()
                if (isinstance(ts, int | float) and not isinstance(ts, bool)
                        and (last is None or abs(ts - last) < PACE_WINDOW_S)):
                    last = float(ts) if last is None else max(last, float(ts))
            yield key, value, 0.0 if last is None else last


def count_lines(path: str | os.PathLike[str]) -> int:
    """Number of lines (for the progress bar)."""
    with Path(path).open("rb") as f:
        return sum(1 for _ in f)


def main(argv: list[str] | None = None) -> int:
    """Run ``occustream replay``; return the exit code."""
    ap = argparse.ArgumentParser(
        prog="occustream replay",
        description="Send a JSONL file of WiFi events (one JSON object per line, as written "
                    "by `occustream simulate --out`) to the Kafka topic, keyed by device MAC.",
        formatter_class=HelpFormatter,
    )
    ap.add_argument("file", help="the JSONL file")
    add_kafka_arguments(ap)
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    quiet_kafka_logs()
    check_pacing(args)
    path = Path(args.file)
    if not path.is_file():
        raise InvalidParameterError(f"file must be an existing JSONL file, not {args.file!r}")
    t0 = time.perf_counter()
    total = count_lines(path)
    with kafka_target(args.kafka, args.topic) as bootstrap:
        n = produce(file_records(path), bootstrap, args.topic, speed=args.speed,
                    max_rate=args.max_rate, engine=args.engine, progress=not args.quiet,
                    total=total)
    print(f"replayed {n} events from {path} to {args.topic} at {bootstrap} "
          f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    return 0
