"""The demo's producer: the simulated building sent to Kafka at the pace the page asks for.

``occustream demo`` runs it as a child process (``python -m occustream.demo_feed``). It
is the composition root of three parts that do not know each other: the simulator
(:func:`simulator.simulate`, :func:`simulator.kafka.produce`), the read model
(:func:`readmodel.reader.read_demo_speed`, :func:`readmodel.writer.queue_demo_clock`)
and, through the read model, the dashboard's speed control
(:mod:`dashboards.demo_control`). :class:`RedisPace` is the
:class:`simulator.kafka.PaceControl` port between them.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import sys
import time
from dataclasses import replace
from typing import Any

log = logging.getLogger("occustream.demo_feed")


class RedisPace:
    """:class:`simulator.kafka.PaceControl` through the read model (``demo:*`` keys).

    A Redis hiccup keeps the current pace (and skips a clock report): the demo goes on.
    """

    def __init__(self, client: Any) -> None:
        self.client = client

    def speed(self) -> float | None:
        """The pace the page asks for (None: unchanged)."""
        from redis.exceptions import RedisError

        from readmodel.reader import read_demo_speed

        try:
            return read_demo_speed(self.client)
        except RedisError as exc:
            log.warning("demo speed unreadable (%s); pace unchanged", exc)
            return None

    def report(self, sim_ts: float, speed: float) -> None:
        """Publish the simulated now and the pace (the page's clock)."""
        from redis.exceptions import RedisError

        from readmodel.writer import queue_demo_clock

        try:
            pipe = self.client.pipeline(transaction=False)
            queue_demo_clock(pipe, sim_ts, speed)
            pipe.execute()
        except RedisError as exc:
            log.warning("demo clock not written (%s)", exc)


def _wait_for_workers(client: Any, mech: str, start: float, *, timeout_s: float = 60.0,
                      lag_ticks: int = 2) -> None:
    """Until the read model holds ``mech``'s ticks up to ``lag_ticks`` before ``start``.

    The quorum clock finalises a tick only when later records arrive, so the last few
    ticks before the start come with the paced stream; a timeout only logs.
    """
    from redis.exceptions import RedisError

    from readmodel.reader import read_latest_tick

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            latest = read_latest_tick(client, mech)
        except RedisError:
            latest = None
        if latest is not None and latest >= start - lag_ticks * 300.0:
            log.info("workers at %s: pacing from the start", latest)
            return
        time.sleep(0.25)
    log.warning("workers not at the start after %.0f s: pacing anyway", timeout_s)


def build_parser() -> argparse.ArgumentParser:
    """Arguments (``occustream demo`` passes them)."""
    p = argparse.ArgumentParser(prog="python -m occustream.demo_feed",
                                description="The demo's paced producer (run by occustream demo).")
    p.add_argument("--building", default="dbh")
    p.add_argument("--start", required=True,
                   help="first paced simulated instant (ISO, UTC); the day up to it (from "
                        "its midnight) is sent first, as fast as possible")
    p.add_argument("--days", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--scenarios", default="overcapacity,malformed")
    p.add_argument("--speed", type=float, default=30.0, help="initial pace")
    p.add_argument("--kafka", required=True)
    p.add_argument("--topic", default="wifi.observations")
    p.add_argument("--redis-url", required=True)
    p.add_argument("--mechanism", default="",
                   help="wait until the workers have written this mechanism's ticks up to "
                        "--start before pacing (the clock and the map start together)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Simulate, then send at the controlled pace; return the exit code."""
    import redis

    from simulator.kafka import produce, quiet_kafka_logs
    from simulator.simulation import Scenarios, simulate

    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    quiet_kafka_logs()
    # the crowds on the live day (0), an hour each (10:00 and 15:00), so the first is seen
    # minutes after the start, also by the device-day alerts' reading at each hour's end
    scen = replace(Scenarios.from_names(args.scenarios.split(",")), crowd_day=0,
                   crowd_minutes=60.0)
    from occustream.history import start_of

    start = start_of(args.start)
    midnight = start - start % 86400.0
    t0 = time.perf_counter()
    sim = simulate(args.building, days=args.days + (start - midnight) / 86400.0,
                   seed=args.seed, start=midnight, scenarios=scen)
    log.info("simulated %d events in %.1f s; scenarios %s", len(sim),
             time.perf_counter() - t0,
             [(x["type"], x.get("location"), x["start_ts"]) for x in sim.truth["scenarios"]])
    client = redis.Redis.from_url(args.redis_url, socket_timeout=2.0)
    records = sim.records()
    ahead: list[Any] = []
    rest: Any = iter(())
    for rec in records:
        if rec[2] >= start:
            rest = itertools.chain([rec], records)
            break
        ahead.append(rec)
    # the morning before the start at full speed (the workers release it, charging the
    # day's budget once), then the rest at the page's pace
    n = produce(ahead, args.kafka, args.topic)
    log.info("sent %d events up to %s at full speed", n, args.start)
    if args.mechanism:
        _wait_for_workers(client, args.mechanism, start)
    n = produce(rest, args.kafka, args.topic, speed=args.speed, control=RedisPace(client))
    log.info("sent %d events", n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
