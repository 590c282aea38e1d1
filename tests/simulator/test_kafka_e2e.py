"""Simulator → embedded Tansu → an aiokafka consumer group reads back exactly what was sent."""

from __future__ import annotations

import asyncio
import collections

import pytest

from simulator import Scenarios, simulate
from simulator.kafka import produce

pytestmark = pytest.mark.e2e


async def _consume(bootstrap: str, topic: str, expected: int, timeout_s: float = 60.0
                   ) -> list[tuple[int, bytes | None, bytes]]:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, group_id=f"{topic}.readers",
        auto_offset_reset="earliest", enable_auto_commit=False,
        session_timeout_ms=6000, heartbeat_interval_ms=1000, max_poll_records=10_000,
    )
    await consumer.start()
    got: list[tuple[int, bytes | None, bytes]] = []
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while len(got) < expected and loop.time() < deadline:
            batches = await consumer.getmany(timeout_ms=1000)
            for tp, msgs in batches.items():
                got.extend((tp.partition, m.key, m.value) for m in msgs)
        # nothing more than expected arrives
        extra = await consumer.getmany(timeout_ms=1500)
        got.extend((tp.partition, m.key, m.value) for tp, ms in extra.items() for m in ms)
    finally:
        await consumer.stop()
    return got


@pytest.mark.parametrize("engine", ["aiokafka", "kafka-python"])
def test_round_trip_exact(kafka_bootstrap: str, make_topics, topic_prefix: str,  # type: ignore[no-untyped-def]
                          engine: str) -> None:
    topic = f"{topic_prefix}wifi.observations"
    make_topics({topic: 4})
    n_hours = 2 if engine == "aiokafka" else 0.5
    sim = simulate("dbh", days=n_hours / 24, seed=5, start="2026-01-07T10:00",
                   scenarios=Scenarios(malformed_rate=0.01))
    records = list(sim.records())
    assert any(k is None for k, _, _ in records)  # malformed records without a device
    sent = produce(records, kafka_bootstrap, topic, engine=engine)
    assert sent == len(records) == len(sim)
    got = asyncio.run(_consume(kafka_bootstrap, topic, len(records)))
    assert collections.Counter((k, v) for _, k, v in got) == collections.Counter(
        (k, v) for k, v, _ in records)
    # keyed by device: one device's records stay on one partition, in order
    by_key: dict[bytes, list[bytes]] = collections.defaultdict(list)
    parts: dict[bytes, set[int]] = collections.defaultdict(set)
    for p, k, v in got:
        if k is not None:
            by_key[k].append(v)
            parts[k].add(p)
    assert all(len(s) == 1 for s in parts.values())
    sent_by_key: dict[bytes, list[bytes]] = collections.defaultdict(list)
    for k, v, _ in records:
        if k is not None:
            sent_by_key[k].append(v)
    assert by_key == sent_by_key


def test_paced_delivery_respects_max_rate(kafka_bootstrap: str, make_topics,  # type: ignore[no-untyped-def]
                                          topic_prefix: str) -> None:
    import time

    topic = f"{topic_prefix}paced"
    make_topics({topic: 1})
    records = list(simulate("dbh", days=1 / 24, seed=2, start="2026-01-07T10:00",
                            scenarios=Scenarios.none()).records())[:3000]
    t0 = time.monotonic()
    produce(records, kafka_bootstrap, topic, max_rate=2000)
    elapsed = time.monotonic() - t0
    assert elapsed >= (len(records) - 200) / 2000


async def _read_all(bootstrap: str, topic: str, expected: int) -> list[bytes]:
    """Read a topic without a consumer group (no join wait)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        await consumer.topics()  # fetches metadata
        parts = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
        consumer.assign(parts)
        await consumer.seek_to_beginning(*parts)
        got: list[bytes] = []
        for _ in range(30):
            batches = await consumer.getmany(timeout_ms=500)
            got.extend(m.value for ms in batches.values() for m in ms)
            if len(got) >= expected and not batches:
                break
        return got
    finally:
        await consumer.stop()


def test_replay_cli_sends_the_file(kafka_bootstrap: str, topic_prefix: str,
                                   tmp_path) -> None:  # type: ignore[no-untyped-def]
    from occustream.cli import main as occustream

    path = tmp_path / "day.jsonl"
    assert occustream(["simulate", "--days", "0.02", "--start", "2026-01-07T10:00",
                       "--out", str(path), "-q"]) == 0
    lines = path.read_bytes().splitlines()
    topic = f"{topic_prefix}replayed"
    assert occustream(["replay", str(path), "--kafka", kafka_bootstrap, "--topic", topic,
                       "-q"]) == 0
    got = asyncio.run(_read_all(kafka_bootstrap, topic, len(lines)))
    assert sorted(got) == sorted(lines)
