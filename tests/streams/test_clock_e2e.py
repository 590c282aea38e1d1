"""Issue 14 B, C through the real worker: a 2-day dbh replay with its nights, plus hostile
timestamps, on the embedded Tansu + Redis (one ``occustream.worker`` subprocess).

Before the quorum clock (occupancy/clock.py) the per-partition clocks dropped the
mornings of quiet partitions as far_future (13,713 of 119,783 valid events of this
replay, measured with the old ``EventClock`` per partition: ``python -m bench clock``)
and 25 chained events moved a partition's clock by a day. Here the released true counts
(``occupancy.true``) must equal the oracle — the same clock, per partition — on every
tick, no valid event may be dead-lettered, and each hostile record must end where the
design says.
"""

from __future__ import annotations

import collections
import json

import numpy as np
import pytest
import redis
from aiokafka.partitioner import murmur2
from test_pipeline_e2e import Run, read_topic, true_table, wait_settled

from occupancy.buildings import load_site
from occupancy.oracle import occupancy_oracle

pytestmark = pytest.mark.e2e


def _part(key: bytes, n: int) -> int:
    return (murmur2(key) & 0x7FFFFFFF) % n  # the producer's partitioner (simulator.kafka)


def test_two_day_replay_with_nights_and_hostile_timestamps(kafka_bootstrap, redis_url,
                                                           tmp_path_factory):
    from simulator import simulate
    from simulator.kafka import produce

    site = load_site("dbh")
    sim = simulate(site, days=2, seed=3)
    run = Run(kafka_bootstrap, redis_url, tmp_path_factory.mktemp("clock"), "clock")
    n = run.settings.partitions
    records = list(sim.records())
    cut = len(records) // 3
    ts_cut = json.loads(records[cut][1])["ts"]
    ts0 = json.loads(records[0][1])["ts"]
    key_p = {p: next(k for k, _, _ in records if _part(k, n) == p) for p in range(n)}
    ap = site.aps[0].id

    def ev(p: int, ts: float) -> tuple[bytes, bytes, float]:
        value = json.dumps({"device": key_p[p].decode(), "ap": ap, "ts": ts}).encode()
        return key_p[p], value, ts_cut

    # where each must go: +2 days first event in a partition → held, then far_future;
    # quorum − 1 events at +3,500 s → admitted at their time (the clock does not move); 25
    # chained +3,500 s apart → the first admitted, 24 far_future; an unsigned marker a
    # day ahead → bad_marker
    q = run.settings.clock_quorum
    first = [ev(2 % n, ts0 + 2 * 86400)]
    bad = [ev(0, ts_cut + 3500) for _ in range(q - 1)]
    bad += [ev(1 % n, ts_cut + 3500 * (k + 1)) for k in range(25)]
    bad.append((b"__watermark__", json.dumps({"watermark": ts_cut + 86400}).encode(), ts_cut))
    sent = first + records[:cut] + bad + records[cut:]
    r = redis.Redis.from_url(redis_url)
    r.flushdb()
    try:
        w = run.start_worker()
        produce(sent, kafka_bootstrap, run.topic("wifi.observations"))
        total = wait_settled(r, 2 * 270, timeout_s=150)
        assert w.poll() is None
    finally:
        run.stop()
        r.close()
    table = true_table(run)
    ticks = sorted(table)
    assert len(ticks) >= total >= 2 * 270
    assert np.all(np.diff(ticks) == 300.0), "a tick is missing"
    oracle = occupancy_oracle([v for _, v, _ in sent], site.ap_location, site.location_ids,
                              ticks=ticks, quorum=run.settings.clock_quorum,
                              partition_of=lambda o: _part(o.device.encode(), n),
                              partitions=n)
    got = np.array([[table[t][loc] for loc in site.location_ids] for t in ticks])
    assert got.sum() > 0
    assert np.array_equal(got, oracle.counts), (
        f"{int((got != oracle.counts).any(axis=1).sum())} of {len(ticks)} ticks differ")
    # the ticks reach the last night: no tick faked ahead, none held back by a night
    last = json.loads(records[-1][1])["ts"]
    assert last - 3 * 3600 < ticks[-1] < last
    dlq = [json.loads(v) for _, v in read_topic(kafka_bootstrap,
                                                run.topic("wifi.observations.dlq"))]
    got_reasons = collections.Counter(d["reason"] for d in dlq)
    assert got_reasons == {"far_future": 25, "bad_marker": 1}, got_reasons
