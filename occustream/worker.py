"""``occustream worker`` — run one pipeline worker (several workers share the partitions).

Needs Kafka and Redis: ``KAFKA_BOOTSTRAP`` / ``REDIS_URL`` (or ``--kafka-bootstrap`` /
``--redis-url``); ``occustream services`` starts embedded ones. Topics are created with
their configured partition counts if missing. The worker logs a health/lag line every
``--metrics-interval-s`` seconds (also in Redis ``health:{app_id}``) and stops cleanly
on SIGTERM / Ctrl-C; a SIGKILL loses nothing (see :mod:`streams.runtime.pipeline`).
This module is the worker's composition root: it hands the read-model writer
(:class:`readmodel.writer.PipelineSink`) to the runtime, which never imports it.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import sys

from faust import Worker

from infra.services import create_topics
from occupancy.buildings import load_site
from readmodel.writer import PipelineSink
from streams import settings as settings_mod
from streams.app import build_app, pipeline_topics

log = logging.getLogger("occustream.worker")


def build_parser() -> argparse.ArgumentParser:
    """The ``occustream worker`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="occustream worker",
        description="Run one occustream pipeline worker (Faust) against Kafka and Redis. "
        "Several workers with the same --app-id share the partitions.",
    )
    parser.add_argument("--loglevel", default=os.environ.get("OCCUSTREAM_LOGLEVEL", "WARNING"),
                        help="Faust/log level (default WARNING; health lines are logged at "
                        "INFO by occustream.pipeline)")
    settings_mod.add_arguments(parser)
    return parser


#: Allocations between young-generation collections (CPython's default: 700). The ingest
#: path allocates a few objects per event (its record, value and state entry); at the
#: default, collections of a heap holding Faust and the presence states cost more than
#: the consumer itself (bench/bench_pipeline.py).
GC_GEN0_THRESHOLD = 50_000


def tune_gc() -> None:
    """Collect less often, and never again the objects of the start-up (modules, the app).

    ``gc.freeze`` moves everything alive now to a permanent generation that collections
    skip; reference cycles are still collected, only less often. Process-wide, so set
    here in the composition root, once the app is built.
    """
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GC_GEN0_THRESHOLD, gen1, gen2)


def run_worker(s: settings_mod.Settings, loglevel: str = "WARNING") -> int:
    """Create topics, build the Faust app and run it until stopped."""
    create_topics(s.kafka_bootstrap, pipeline_topics(s))
    app, _ = build_app(s, PipelineSink.for_settings)
    logging.getLogger("occustream").setLevel(logging.INFO)
    asyncio.set_event_loop(asyncio.new_event_loop())
    worker = Worker(app, loglevel=loglevel, quiet=True, redirect_stdouts=False)
    tune_gc()
    log.info("worker starting: %s", {k: v for k, v in s.public().items()
                                     if k in ("app_id", "site", "partitions", "tick_s",
                                              "mechanisms", "kafka_bootstrap")})
    try:
        worker.execute_from_commandline()
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``occustream worker``."""
    args = build_parser().parse_args(argv)
    s = settings_mod.load_settings(args)
    load_site(s.site)  # an unknown site fails here, not after connecting to Kafka
    return run_worker(s, args.loglevel)


if __name__ == "__main__":
    sys.exit(main())
