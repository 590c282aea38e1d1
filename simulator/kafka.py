"""Deliver event records to Kafka (topic ``wifi.observations``, key = device MAC).

:func:`produce` takes ``(key, value, arrival_ts)`` triples (what
:meth:`simulator.Simulation.records` and :func:`simulator.replay.file_records` yield),
or plain event dicts / JSON strings, and sends them:

* as fast as possible (default), or
* paced: ``speed`` simulated seconds per wall second (``speed=60``: one simulated
  minute per second) and/or at most ``max_rate`` records per second;
* paced by a :class:`PaceControl` (the demo's speed control): its speed is read about
  four times a second and may change (0 = paused) while records are being sent, and the
  producer's simulated "now" is reported back to it about once a second.

Two engines: ``"aiokafka"`` (default) fills record batches itself — values are
pre-serialised, partitions computed once per key with Kafka's murmur2 partitioner
(the Java client's and Faust's default), whole batches sent with ``send_batch`` —
and ``"kafka-python"`` (``KafkaProducer.send`` per record, large linger/batch, no
compression). ``bench/bench_simulator.py`` measures both against the embedded Tansu.
Neither producer is idempotent or transactional (Tansu refuses InitProducerId).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from infra.services import TOPICS, create_topics, running_services
from mechanisms.errors import InvalidParameterError, ServiceError

log = logging.getLogger(__name__)

TOPIC = "wifi.observations"
ENGINES = ("aiokafka", "kafka-python")
#: Batches in flight before the producer waits for acknowledgements.
MAX_IN_FLIGHT = 16
#: Pacing granularity: records between two clock checks.
PACE_EVERY = 200
#: Wall seconds between two reads of a :class:`PaceControl` (and the longest sleep).
CONTROL_POLL_S = 0.25
#: Wall seconds between two reports of the simulated "now" to a :class:`PaceControl`.
REPORT_EVERY_S = 1.0

Record = tuple[bytes | None, bytes, float]


def add_kafka_arguments(group: Any) -> None:
    """Add ``--kafka --topic --speed --max-rate --engine`` to a parser or argument group."""
    group.add_argument("--kafka", help="Kafka bootstrap host:port (default $KAFKA_BOOTSTRAP, "
                                       "else an embedded broker for the run)")
    group.add_argument("--topic", default=TOPIC, help="Kafka topic")
    group.add_argument("--speed", type=float,
                       help="simulated seconds per wall second (default: as fast as possible)")
    group.add_argument("--max-rate", type=float, help="at most this many events per second")
    group.add_argument("--engine", choices=ENGINES, default="aiokafka", help="Kafka client")


def quiet_kafka_logs() -> None:
    """Keep the Kafka clients' INFO chatter (connections, IO loops) out of CLI output."""
    for name in ("kafka", "aiokafka"):
        logging.getLogger(name).setLevel(logging.WARNING)


def as_records(events: Iterable[Any]) -> Iterator[Record]:
    """Normalise dicts / JSON strings / bytes / ``(key, value, arrival)`` to records.

    A dict's key is its ``device`` (if a string); its arrival time its ``ts`` (if a
    number, else the previous record's). Unparseable strings are sent as they are,
    without key (they are for the dead-letter path).
    """
    last = 0.0
    for ev in events:
        if isinstance(ev, tuple):
            last = float(ev[2])
            yield ev
            continue
        if isinstance(ev, dict):
            obj: Any = ev
            value = json.dumps(ev).encode()
        else:
            value = ev.encode() if isinstance(ev, str) else bytes(ev)
            try:
                obj = json.loads(value)
            except ValueError:
                obj = None
        key = None
        if isinstance(obj, dict):
            dev, ts = obj.get("device"), obj.get("ts")
            key = dev.encode() if isinstance(dev, str) else None
            if isinstance(ts, int | float) and not isinstance(ts, bool):
                last = float(ts)
        yield key, value, last


class PaceControl(Protocol):
    """The port through which a running producer's pace is changed and its clock shown.

    The simulator knows nothing of where the speed comes from (the demo reads a key
    the dashboard writes; a test may use a plain object).
    """

    def speed(self) -> float | None:
        """The wanted speed (simulated s per wall s; 0 = paused), or None: unchanged."""
        ...

    def report(self, sim_ts: float, speed: float) -> None:
        """The producer's simulated "now" (epoch s) and its current speed."""
        ...


class _Pacer:
    """Sleeps so that records go out at ``speed`` × real time and ≤ ``max_rate``/s.

    With a ``control``, the speed is re-read every :data:`CONTROL_POLL_S` and a change
    re-anchors the schedule at the current simulated instant (what was already sent
    stays sent; the rest follows the new speed); speed 0 pauses.
    """

    def __init__(self, speed: float | None, max_rate: float | None,
                 control: PaceControl | None = None) -> None:
        if speed is not None and not speed > 0:
            raise InvalidParameterError(f"speed must be > 0, not {speed!r}")
        if max_rate is not None and not max_rate > 0:
            raise InvalidParameterError(f"max_rate must be > 0, not {max_rate!r}")
        if control is not None and speed is None:
            raise InvalidParameterError("speed must be set with a pace control, not None")
        self.speed, self.max_rate, self.control = speed, max_rate, control
        self.active = speed is not None or max_rate is not None
        self.every = 1 if control is not None else PACE_EVERY
        self.wall0 = time.monotonic()
        self.sim0: float | None = None
        # the speed schedule: at wall time anchor_wall the simulated time was anchor_sim
        self.anchor_wall = self.wall0
        self.anchor_sim: float | None = None
        self._polled = self._reported = -1e18

    def now_sim(self, wall: float | None = None) -> float | None:
        """The simulated instant the schedule is at (None before the first record)."""
        if self.anchor_sim is None or self.speed is None:
            return None
        wall = time.monotonic() if wall is None else wall
        return self.anchor_sim + (wall - self.anchor_wall) * self.speed

    def _poll(self, wall: float) -> None:
        if self.control is None or wall - self._polled < CONTROL_POLL_S:
            return
        self._polled = wall
        want = self.control.speed()
        if want is not None and want >= 0 and want != self.speed:
            self.anchor_sim = self.now_sim(wall)
            self.anchor_wall = wall
            log.info("pace: %g → %g simulated s per wall s", self.speed, want)
            self.speed = want
        if wall - self._reported >= REPORT_EVERY_S and self.anchor_sim is not None:
            self._reported = wall
            self.control.report(float(self.now_sim(wall) or 0.0), float(self.speed or 0.0))

    def delay(self, count: int, arrival: float) -> float:
        """Seconds to wait before sending record number ``count`` arriving at ``arrival``."""
        wall = time.monotonic()
        target = 0.0
        if self.speed is not None:
            if self.sim0 is None:
                self.sim0 = self.anchor_sim = arrival
                self.anchor_wall = wall
            self._poll(wall)
            if self.speed == 0:
                return CONTROL_POLL_S  # paused: ask again
            target = self.anchor_wall - self.wall0 + (arrival - self.anchor_sim) / self.speed
        if self.max_rate is not None:
            target = max(target, count / self.max_rate)
        wait = target - (wall - self.wall0)
        return min(wait, CONTROL_POLL_S) if self.control is not None else wait


def produce(
    events: Iterable[Any],
    bootstrap: str,
    topic: str = TOPIC,
    *,
    speed: float | None = None,
    max_rate: float | None = None,
    engine: str = "aiokafka",
    progress: bool = False,
    total: int | None = None,
    control: PaceControl | None = None,
) -> int:
    """Send records to ``topic``; return how many were sent (all acknowledged).

    Args:
        events: ``(key, value, arrival_ts)`` records, event dicts, or JSON lines.
        bootstrap: Kafka bootstrap address (``host:port``).
        topic: the topic (default ``wifi.observations``).
        speed: simulated seconds per wall second (None: as fast as possible).
        max_rate: at most this many records per second (None: no limit).
        engine: ``"aiokafka"`` (batched send_batch, fastest) or ``"kafka-python"``.
        progress: show a progress bar on stderr.
        total: number of records, for the progress bar.
        control: changes ``speed`` while sending and hears the simulated "now"
            (needs ``speed``; see :class:`PaceControl`).

    Raises:
        ServiceError: the broker cannot be reached or refuses the records.
    """
    if engine not in ENGINES:
        raise InvalidParameterError(f"engine must be one of {ENGINES}, not {engine!r}")
    pacer = _Pacer(speed, max_rate, control)
    from tqdm import tqdm

    bar = tqdm(total=total, desc=f"→ {topic}", unit="ev", unit_scale=True,
               disable=not progress, leave=False)
    try:
        if engine == "kafka-python":
            return _produce_kafka_python(as_records(events), bootstrap, topic, pacer, bar)
        return asyncio.run(_produce_aiokafka(as_records(events), bootstrap, topic, pacer, bar))
    finally:
        bar.close()


def _produce_kafka_python(records: Iterator[Record], bootstrap: str, topic: str,
                          pacer: _Pacer, bar: Any) -> int:
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    try:
        producer = KafkaProducer(
            bootstrap_servers=bootstrap, acks=1, linger_ms=20, batch_size=512 * 1024,
            compression_type=None, max_request_size=4 << 20,
        )
    except KafkaError as exc:
        raise ServiceError(f"cannot reach Kafka at {bootstrap}: {exc}") from None
    n = 0
    try:
        send = producer.send
        for key, value, arrival in records:
            if pacer.active and n % pacer.every == 0:
                wait = pacer.delay(n, arrival)
                if wait > 0:
                    producer.flush()
                while wait > 0:
                    time.sleep(wait)
                    wait = pacer.delay(n, arrival) if pacer.control is not None else 0.0
            send(topic, key=key, value=value)
            n += 1
            if n % 10_000 == 0:
                bar.update(10_000)
        producer.flush()
        bar.update(n % 10_000)
    except KafkaError as exc:
        raise ServiceError(f"Kafka at {bootstrap} refused records: {exc}") from None
    finally:
        producer.close()
    return n


async def _produce_aiokafka(records: Iterator[Record], bootstrap: str, topic: str,
                            pacer: _Pacer, bar: Any) -> int:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaError
    from aiokafka.partitioner import murmur2

    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks=1, linger_ms=5, max_batch_size=1 << 20,
        compression_type=None, enable_idempotence=False, request_timeout_ms=30_000,
    )
    try:
        await producer.start()
    except KafkaError as exc:
        await producer.stop()
        raise ServiceError(f"cannot reach Kafka at {bootstrap}: {exc}") from None
    n = 0
    try:
        partitions = sorted(await producer.partitions_for(topic))
        n_part = len(partitions)
        part_of: dict[bytes, int] = {}
        batches: dict[int, Any] = {}
        in_flight: list[asyncio.Future[Any]] = []

        async def ship(p: int) -> None:
            batch = batches.pop(p, None)
            if batch is None or batch.record_count() == 0:
                return
            in_flight.append(await producer.send_batch(batch, topic, partition=p))
            if len(in_flight) >= MAX_IN_FLIGHT:
                await asyncio.gather(*in_flight)
                in_flight.clear()

        rr = 0
        for key, value, arrival in records:
            if pacer.active and n % pacer.every == 0:
                wait = pacer.delay(n, arrival)
                if wait > 0:
                    for p in list(batches):
                        await ship(p)
                while wait > 0:
                    await asyncio.sleep(wait)
                    wait = pacer.delay(n, arrival) if pacer.control is not None else 0.0
            if key is None:
                p = partitions[rr % n_part]
                rr += 1
            else:
                p = part_of.get(key, -1)
                if p < 0:
                    p = part_of[key] = partitions[(murmur2(key) & 0x7FFFFFFF) % n_part]
            batch = batches.get(p)
            if batch is None:
                batch = batches[p] = producer.create_batch()
            if batch.append(key=key, value=value, timestamp=None) is None:
                await ship(p)
                batch = batches[p] = producer.create_batch()
                batch.append(key=key, value=value, timestamp=None)
            n += 1
            if n % 10_000 == 0:
                bar.update(10_000)
        for p in list(batches):
            await ship(p)
        if in_flight:
            await asyncio.gather(*in_flight)
        bar.update(n % 10_000)
    except KafkaError as exc:
        raise ServiceError(f"Kafka at {bootstrap} refused records: {exc}") from None
    finally:
        await producer.stop()
    return n


@contextlib.contextmanager
def kafka_target(bootstrap: str | None, topic: str = TOPIC) -> Iterator[str]:
    """The broker to send to: ``bootstrap``, else ``$KAFKA_BOOTSTRAP``, else embedded.

    An embedded Tansu broker (:func:`infra.services.running_services`) lives only
    for the block. The topic is created (4 partitions) if it does not exist.
    """
    bootstrap = bootstrap or os.environ.get("KAFKA_BOOTSTRAP", "").strip() or None
    if bootstrap:

        try:
            create_topics(bootstrap, {topic: 4})
        except Exception as exc:  # kafka-python raises many unrelated types here
            raise ServiceError(
                f"cannot reach Kafka at {bootstrap}: {exc}; check --kafka / KAFKA_BOOTSTRAP"
            ) from None
        yield bootstrap
        return

    log.info("no --kafka and no KAFKA_BOOTSTRAP: starting the embedded broker")
    with running_services(redis=False, env={}, topics={**TOPICS, topic: 4}) as services:
        target = services.kafka_bootstrap
        if target is None:  # pragma: no cover - start_services guarantees it
            raise ServiceError("embedded Kafka did not start")
        yield target
