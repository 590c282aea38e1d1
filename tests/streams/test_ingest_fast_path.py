"""The ingest speed-ups change nothing but speed.

* The TTL-pseudonym memo of the presence stage (one ``ttl_step`` per device and salt
  period, not per record) gives the states and pseudonyms of calling ``ttl_step`` for
  every record — also for a device seen both raw and pseudonymised at the edge, and
  across salt expiry, out-of-order records and restarts from a checkpoint.
* The ingest consumer's ``(offset, value)`` records (aiokafka's fetch buffer without a
  ``ConsumerRecord`` per event) are exactly what a stock consumer reads, values of any
  size and tombstones included, and other consumers in the process are untouched.
"""

from __future__ import annotations

import asyncio
import json
import zlib

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from mechanisms.pseudonym import hmac_pseudonym
from occupancy.buildings import load_site
from streams.pipeline.identity import pseudonymizer, ttl_step
from streams.pipeline.presence import PartitionState, StageConfig
from streams.runtime.ingest import offset_value_records, offset_values

SECRET = b"fast-path-secret-0123456789abcdef"
T0 = 1_767_571_200.0


def _cfg(site, ttl_s: float) -> StageConfig:  # type: ignore[no-untyped-def]
    return StageConfig(ap_location=dict(site.ap_location),
                       location_index=dict(site.location_index), tick_s=300.0,
                       validity_s=600.0, lateness_s=600.0, max_future_s=3600.0,
                       ttl_s=ttl_s, secret=SECRET, clock_quorum=3)


def _records(site) -> list[tuple[int, bytes]]:  # type: ignore[no-untyped-def]
    """Six devices for six hours: every few minutes, some out of order, one device also
    pseudonymised at the edge (its TTL salts then salt the pseudonym, not the MAC)."""
    aps = [a.id for a in site.aps]
    out = []
    for i in range(6 * 60):
        d = i % 6
        mac = f"aa:bb:cc:dd:ee:{d:02x}"
        ts = T0 + i * 60.0 - (170.0 if i % 7 == 3 else 0.0)  # some out of order
        doc = {"device": mac, "ap": aps[(i * 5) % len(aps)], "ts": ts}
        if d == 5 and i % 4 == 1:
            doc = {**doc, "device": hmac_pseudonym(SECRET, mac), "pseudonymised": True}
        out.append((i, json.dumps(doc).encode()))
    return out


def _every_record(state, records, cfg):  # type: ignore[no-untyped-def]
    """One record per call, with a ttl_step never seen before: the memo is emptied each
    time (it belongs to the functions it was computed with), so ttl_step runs per record."""
    pseudo = pseudonymizer(SECRET)
    partials, salted = [], set()

    def record(*a):  # type: ignore[no-untyped-def]
        tid, st = ttl_step(*a)
        salted.add((a[1], tid))
        return tid, st

    for rec in records:
        step = lambda *a: record(*a)  # noqa: E731 - a new function object each call
        partials += state.process([rec], cfg, pseudo, step).partials
    return partials, salted


@pytest.mark.parametrize("ttl_s", [600.0, 1800.0])
def test_ttl_memo_equals_ttl_step_per_record(ttl_s: float) -> None:
    site = load_site("dbh")
    cfg = _cfg(site, ttl_s)
    recs = _records(site)
    fast, ref = PartitionState(0), PartitionState(0)
    pseudo = pseudonymizer(SECRET)
    partials = []
    for start in range(0, len(recs), 50):
        partials += fast.process(recs[start:start + 50], cfg, pseudo, ttl_step).partials
        if start % 150 == 0:  # a restart: the memo is gone, the checkpoint is not
            fast = PartitionState.from_bytes(fast.to_bytes())
    want, salted = _every_record(ref, recs, cfg)
    assert [(p.tick, p.counts, p.ttl) for p in partials] == \
        [(p.tick, p.counts, p.ttl) for p in want]
    assert fast.ttl_devices == ref.ttl_devices and fast.ttl_state == ref.ttl_state
    assert fast.to_bytes() == ref.to_bytes()
    # the test has teeth: several salts per device, and the edge device's own salts
    assert len(salted) >= 6 * (6 * 3600 / ttl_s) / 2 and sum(map(sum, (p.ttl for p in want)))
    assert any(len(mac) == 32 for mac, _ in salted)


async def _read(bootstrap: str, topic: str, n: int,
                hooked: bool) -> list[tuple[int, int, bytes | None]]:
    c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=None,
                         auto_offset_reset="earliest", enable_auto_commit=False,
                         max_poll_records=500)
    await c.start()
    try:
        if hooked:
            assert offset_value_records(c)
        out: list[tuple[int, int, bytes | None]] = []
        while len(out) < n:
            got = await c.getmany(timeout_ms=2000)
            assert got or out, "no records"
            for tp, msgs in got.items():
                if hooked:
                    assert all(type(m) is tuple for m in msgs)
                out += [(tp.partition, o, v) for o, v in offset_values(msgs)]
        return sorted(out)
    finally:
        await c.stop()


def test_offset_value_records_equal_a_stock_consumer(kafka_bootstrap: str, make_topics,  # type: ignore[no-untyped-def]
                                                      topic_prefix: str) -> None:
    topic = topic_prefix + "obs"
    make_topics({topic: 3})
    values = [json.dumps({"i": i, "pad": "x" * (i % 97) * 50}).encode() for i in range(1500)]
    values[17] = None  # a tombstone
    values[18] = b""

    async def run() -> tuple[list, list]:
        p = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap)
        await p.start()
        try:
            for i, v in enumerate(values):
                await p.send(topic, v, key=str(i).encode(),
                             partition=zlib.crc32(str(i).encode()) % 3)
            await p.flush()
        finally:
            await p.stop()
        return (await _read(kafka_bootstrap, topic, len(values), hooked=True),
                await _read(kafka_bootstrap, topic, len(values), hooked=False))

    fast, stock = asyncio.run(run())
    assert fast == stock and len(fast) == len(values)
    assert sorted(v or b"" for _, _, v in fast) == sorted(v or b"" for v in values)
    assert None in [v for _, _, v in fast]
