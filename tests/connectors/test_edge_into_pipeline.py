"""Edge-pseudonymised records through the REAL pipeline worker: its true occupancy equals
the oracle's occupancy of the raw (MAC) events — the pipeline counts edge records as it
counts the records it pseudonymises itself."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
from connect_support import SECRET

from connectors.edge import ApResolver, Edge, KafkaSink
from infra.services import create_topics
from occupancy.buildings import load_site
from occupancy.oracle import occupancy_oracle
from streams.settings import load_settings

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def _read(bootstrap: str, topic: str) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> list[bytes]:
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await c.start()
        try:
            meta = await c._client.fetch_all_metadata()  # noqa: SLF001
            tps = [TopicPartition(topic, p) for p in sorted(meta.partitions_for_topic(topic)
                                                              or ())]
            c.assign(tps)
            await c.seek_to_beginning(*tps)
            end = await c.end_offsets(tps)
            out: list[bytes] = []
            pos = dict.fromkeys(tps, 0)
            while any(pos[tp] < end[tp] for tp in tps):
                got = await c.getmany(timeout_ms=1000, max_records=50000)
                for tp, msgs in got.items():
                    for m in msgs:
                        out.append(m.value)
                        pos[tp] = m.offset + 1
            return out
        finally:
            await c.stop()

    return asyncio.run(run())


def test_worker_counts_edge_records_like_raw_ones(kafka_bootstrap: str, redis_url: str,
                                                  tmp_path: Path) -> None:
    from simulator import Scenarios, simulate

    tag = f"edge{uuid.uuid4().hex[:6]}"
    env = dict(os.environ, KAFKA_BOOTSTRAP=kafka_bootstrap, REDIS_URL=redis_url,
               OCCUSTREAM_SECRET=SECRET.decode(), OCCUSTREAM_APP_ID=tag,
               OCCUSTREAM_TOPIC_PREFIX=f"{tag}.", OCCUSTREAM_EVAL_MODE="true",
               OCCUSTREAM_IDLE_S="3", OCCUSTREAM_METRICS_INTERVAL_S="2",
               OCCUSTREAM_MECHANISMS="laplace", OCCUSTREAM_PRIVACY_UNIT="event",
               PYTHONPATH=str(ROOT))
    settings = load_settings(env=env)
    from streams.app import pipeline_topics

    create_topics(kafka_bootstrap, pipeline_topics(settings))
    site = load_site(settings.site)
    sim = simulate(settings.site, days=3 / 24, seed=3, start="2026-01-07T09:00",
                   scenarios=Scenarios.none())
    events = list(sim.events())

    async def through_edge() -> int:
        sink = KafkaSink(kafka_bootstrap, settings.topic("wifi.observations"),
                         settings.topic("wifi.observations.dlq"))
        await sink.start()
        edge = Edge("test", SECRET, ApResolver(site), sink)
        try:
            for ev in events:
                edge.observe(ev["device"], ev["ap"], ev["ts"], ev.get("rssi"))
                if len(edge._pending) >= 5000:  # noqa: SLF001
                    await edge.flush()
            await edge.flush()
        finally:
            await sink.stop()
        return edge.metrics.produced

    assert asyncio.run(through_edge()) == len(events)
    oracle_all = occupancy_oracle(events, site.ap_location, site.location_ids)
    log = open(tmp_path / "worker.log", "ab")  # noqa: SIM115
    worker = subprocess.Popen([sys.executable, "-m", "occustream.worker"], env=env, cwd=ROOT,
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 180
        table: dict[float, list[int]] = {}
        while time.monotonic() < deadline:
            for v in _read(kafka_bootstrap, settings.topic("occupancy.true")):
                d = json.loads(v)
                table[float(d["tick"])] = [d["counts"][loc] for loc in site.location_ids]
            if len(table) >= len(oracle_all.ticks):
                break
            time.sleep(2)
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
        log.close()
    ticks = sorted(table)
    assert len(ticks) >= len(oracle_all.ticks) > 20, (len(ticks), len(oracle_all.ticks))
    want = occupancy_oracle(events, site.ap_location, site.location_ids, ticks=ticks)
    got = np.array([table[t] for t in ticks])
    assert got.sum() > 0
    np.testing.assert_array_equal(got, want.counts)
