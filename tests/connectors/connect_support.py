"""Helpers of the connector tests (imported by the test modules; the fixtures are in
conftest.py): a real-broker edge, a consumer, the oracle check and the "no raw MAC
anywhere" check."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from connectors.edge import ApResolver, Edge, KafkaSink
from mechanisms.pseudonym import hmac_pseudonym
from occupancy.buildings import Site
from occupancy.oracle import occupancy_oracle

FIX = Path(__file__).parent / "fixtures"
SECRET = b"connector-test-secret-0123456789"


def fixture_lines(name: str) -> list[str]:
    """Lines of a fixture file without its ``#`` comment header and blank lines."""
    return [ln for ln in (FIX / name).read_text().splitlines()
            if ln.strip() and not ln.startswith("#")]


def epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


async def start_edge(source: str, resolver: ApResolver, bootstrap: str,
                     topics: tuple[str, str], **kw: Any) -> Edge:
    sink = KafkaSink(bootstrap, *topics)
    await sink.start()
    return Edge(source, SECRET, resolver, sink, **kw)


async def consume(bootstrap: str, topic: str, *, settle_s: float = 0.8,
                  timeout_s: float = 30.0, expect: int | None = None
                  ) -> list[tuple[bytes | None, bytes]]:
    """Everything on ``topic`` (read from the start until nothing new for ``settle_s``)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                enable_auto_commit=False)
    await consumer.start()
    got: list[tuple[bytes | None, bytes]] = []
    try:
        meta = await consumer._client.fetch_all_metadata()  # noqa: SLF001 - no group join
        consumer.assign([TopicPartition(topic, p)
                         for p in meta.partitions_for_topic(topic) or ()])
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        quiet_since = loop.time()
        while loop.time() < deadline:
            batch = await consumer.getmany(timeout_ms=300)
            n = sum(len(v) for v in batch.values())
            for msgs in batch.values():
                got += [(m.key, m.value) for m in msgs]
            if n:
                quiet_since = loop.time()
            elif (expect is None or len(got) >= expect) and loop.time() - quiet_since > settle_s:
                break
    finally:
        await consumer.stop()
    return got


def truth_records(truth: list[tuple[str, str, float]]) -> list[dict[str, Any]]:
    """The fixture's meaning as raw (MAC-keyed) observation records, in time order."""
    return [{"device": m, "ap": a, "ts": t} for m, a, t in sorted(truth, key=lambda r: r[2])]


def check_oracle(site: Site, truth: list[tuple[str, str, float]],
                 arrived: list[tuple[bytes | None, bytes]]) -> np.ndarray:
    """The oracle's occupancy of what arrived equals the oracle's occupancy of the truth."""
    values = [json.loads(v) for _, v in arrived]
    values.sort(key=lambda d: d["ts"])
    # a fixture is a handful of records: each moves the clock (the clock is not the subject)
    kw = {"ap_location": site.ap_location, "locations": site.location_ids, "quorum": 1}
    want = occupancy_oracle(truth_records(truth), **kw)
    got = occupancy_oracle(values, **kw)
    assert got.counts.sum() > 0, "the fixture must produce some occupancy"
    np.testing.assert_array_equal(got.ticks, want.ticks)
    np.testing.assert_array_equal(got.counts, want.counts)
    # the records are the edge-pseudonymised form of the truth, keyed by the pseudonym
    for key, v in arrived:
        d = json.loads(v)
        assert d["pseudonymised"] is True
        assert key == d["device"].encode()
    assert sorted(json.loads(v)["device"] for _, v in arrived) == sorted(
        hmac_pseudonym(SECRET, m) for m, _, _ in truth)
    return got.counts


def mac_spellings(mac: str) -> list[str]:
    h = re.sub(r"[^0-9a-f]", "", mac.lower())
    pairs = [h[i:i + 2] for i in range(0, 12, 2)]
    forms = [":".join(pairs), "-".join(pairs), h, f"{h[:4]}.{h[4:8]}.{h[8:]}"]
    return forms + [f.upper() for f in forms]


def assert_no_raw_mac(blobs: list[bytes], macs: list[str]) -> None:
    """No client MAC, in any spelling, in any record (values and keys)."""
    text = b"\n".join(blobs).decode("utf-8", "replace")
    for mac in macs:
        for form in mac_spellings(mac):
            assert form not in text, f"raw MAC {form} leaked"


def dlq_reasons(dlq: list[tuple[bytes | None, bytes]]) -> list[str]:
    return sorted(json.loads(v)["reason"] for _, v in dlq)
