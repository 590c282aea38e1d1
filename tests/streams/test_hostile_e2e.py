"""Hostile records through the real worker (issue 14 A): a real ``occustream.worker``
subprocess on the embedded Tansu + Redis receives every kind of bad record — null
values, 100k-deep JSON, huge and non-UTF-8 values, forged and misdirected watermark
markers, wrong types — on every partition, with null and mixed-case keys, before and
among a simulated morning. The worker must not die, every bad record must reach
``wifi.observations.dlq`` with its reason, and the true counts must equal the oracle
of the good records."""

from __future__ import annotations

import asyncio
import collections
import json

import numpy as np
import pytest
import redis
from test_hostile_input import bad_records
from test_pipeline_e2e import Run, produce, read_topic, true_table, wait_settled

from occupancy.buildings import load_site
from occupancy.oracle import occupancy_oracle
from streams.pipeline.presence import sign_marker

pytestmark = pytest.mark.e2e


def hostile(site, secret: bytes, partitions: int) -> list[tuple[bytes | None, bytes | None,
                                                               int, str]]:
    """(key, value, partition, expected reason) of every bad record sent."""
    recs = []
    keys = [None, b"AA:BB:CC:DD:EE:FF", b"Aa:bB:cC:dD:eE:fF", b""]
    for i, (_, raw, want) in enumerate(bad_records(site)):
        if raw is not None and b'"sig"' in raw[:300]:
            continue  # markers signed with the unit tests' secret: replaced below
        key = keys[i % len(keys)] if raw is not None else b"tombstone"  # Kafka needs one
        recs.append((key, raw, i % partitions, want))
    # a marker signed with the pipeline's own secret but sent to another partition
    recs.append((None, sign_marker(1_767_600_000.0, secret, 1), 0, "bad_marker"))
    return recs


async def _send(bootstrap: str, topic: str, recs: list) -> None:
    from aiokafka import AIOKafkaProducer

    p = AIOKafkaProducer(bootstrap_servers=bootstrap, max_request_size=4 << 20)
    await p.start()
    try:
        for key, value, part, _ in recs:
            await p.send_and_wait(topic, value, key=key, partition=part)
    finally:
        await p.stop()


def test_worker_survives_hostile_records_and_dead_letters_them(kafka_bootstrap, redis_url,
                                                                tmp_path_factory):
    from simulator import simulate

    site = load_site("dbh")
    sim = simulate(site, days=2 / 24, seed=11, start="2026-01-06T08:00")
    run = Run(kafka_bootstrap, redis_url, tmp_path_factory.mktemp("hostile"), "hostile")
    r = redis.Redis.from_url(redis_url)
    r.flushdb()
    topic = run.topic("wifi.observations")
    bad = hostile(site, run.settings.secret, run.settings.partitions)
    try:
        w = run.start_worker()
        asyncio.run(_send(kafka_bootstrap, topic, bad))  # before any valid event
        produce(sim, kafka_bootstrap, topic).join(60)
        asyncio.run(_send(kafka_bootstrap, topic, bad))  # and among them
        total = wait_settled(r, 15, timeout_s=120)
        assert w.poll() is None, "the worker died on a hostile record"
        assert len(run.procs) == 1
    finally:
        run.stop()
        r.close()
    dlq = [json.loads(v) for _, v in read_topic(kafka_bootstrap,
                                                run.topic("wifi.observations.dlq"))]
    got = collections.Counter(d["reason"] for d in dlq)
    want = collections.Counter([reason for *_, reason in bad] * 2)
    assert got == want, (got, want)
    # the good records count exactly as the oracle says
    table = true_table(run)
    ticks = sorted(table)
    assert len(ticks) >= total >= 15
    oracle = occupancy_oracle(sim.events(), site.ap_location, site.location_ids, ticks=ticks)
    got_counts = np.array([[table[t][loc] for loc in site.location_ids] for t in ticks])
    assert np.array_equal(got_counts, oracle.counts)
    assert got_counts.sum() > 0
