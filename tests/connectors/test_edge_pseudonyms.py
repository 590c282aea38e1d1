"""The edge's pseudonymised records count exactly like raw ones in the pipeline's observe
stage (same HMAC pseudonyms, same HMAC and TTL counts), and the edge's own parts."""

from __future__ import annotations

import asyncio
import json

import pytest
from connect_support import SECRET

from connectors.edge import ApResolver, Edge, MemorySink, parse_mac, redact
from mechanisms.pseudonym import hmac_pseudonym
from occupancy.buildings import load_site
from occupancy.schema import Invalid, Observation, parse_observation
from simulator import Scenarios, simulate
from streams.pipeline.identity import pseudonymizer, ttl_step
from streams.pipeline.presence import PartitionState, StageConfig


def _cfg(site):  # type: ignore[no-untyped-def]
    return StageConfig(ap_location=dict(site.ap_location),
                       location_index=dict(site.location_index), tick_s=300.0,
                       validity_s=600.0, lateness_s=60.0, max_future_s=3600.0,
                       ttl_s=1800.0, secret=SECRET)


def _edge_records(site, raw_values: list[bytes]) -> list[bytes]:  # type: ignore[no-untyped-def]
    """Raw simulator records through the edge (MemorySink), valid ones only, in order."""
    sink = MemorySink()
    edge = Edge("test", SECRET, ApResolver(site), sink)
    out = []
    for v in raw_values:
        d = json.loads(v)
        if edge.observe(d["device"], d["ap"], d["ts"], d.get("rssi")):
            out.append(edge._pending[-1][2])  # noqa: SLF001 - the record just built
    return out


def test_pipeline_counts_edge_records_like_raw_ones() -> None:
    site = load_site("dbh")
    sim = simulate("dbh", days=2 / 24, seed=11, start="2026-01-07T09:00",
                   scenarios=Scenarios.none())
    raw = [v for _, v, _ in sim.records()]
    edged = _edge_records(site, raw)
    assert len(edged) == len(raw)  # every clean record passes the edge
    cfg = _cfg(site)
    a, b = PartitionState(partition=0), PartitionState(partition=0)
    ra = a.process(enumerate(raw), cfg, pseudonymizer(SECRET), ttl_step)
    rb = b.process(enumerate(edged), cfg, pseudonymizer(SECRET), ttl_step)
    assert ra.partials and not ra.dlq and not rb.dlq
    assert [(p.tick, p.counts, p.ttl) for p in ra.partials] == [
        (p.tick, p.counts, p.ttl) for p in rb.partials]
    assert any(sum(p.counts) for p in ra.partials)
    # the same HMAC pseudonyms on both paths
    assert set(a.devices) == set(b.devices)


def test_schema_accepts_only_well_formed_pseudonyms() -> None:
    ap = {"ap-1": "room"}
    pid = hmac_pseudonym(SECRET, "aa:bb:cc:dd:ee:ff")
    ok = parse_observation({"device": pid, "ap": "ap-1", "ts": 1.8e9, "pseudonymised": True}, ap)
    assert isinstance(ok, Observation) and ok.pseudonymised and ok.device == pid
    # a pseudonym without the marker is not a MAC; the marker does not admit a raw MAC
    assert parse_observation({"device": pid, "ap": "ap-1", "ts": 1.8e9}, ap) == Invalid("bad_mac")
    bad = {"device": "aa:bb:cc:dd:ee:ff", "ap": "ap-1", "ts": 1.8e9, "pseudonymised": True}
    assert parse_observation(bad, ap) == Invalid("bad_mac")
    truthy = {"device": pid, "ap": "ap-1", "ts": 1.8e9, "pseudonymised": "yes"}
    assert parse_observation(truthy, ap) == Invalid("bad_mac")


@pytest.mark.parametrize("spelling", ["AA:BB:CC:DD:EE:0F", "aa-bb-cc-dd-ee-0f", "aabb.ccdd.ee0f",
                                      "AABBCCDDEE0F", " aa:bb:cc:dd:ee:0f "])
def test_mac_spellings_and_redaction(spelling: str) -> None:
    assert parse_mac(spelling) == "aa:bb:cc:dd:ee:0f"
    text = redact(f"client {spelling.strip()} joined")
    assert "<redacted>" in text and "ee" not in text.lower().replace("redacted", "")


def test_redaction_of_structured_personal_fields() -> None:
    text = redact({"clientMac": "aa:bb:cc:dd:ee:ff", "userId": "x@example.com",
                   "nested": [{"ipv4": "10.0.0.1", "email": "y@example.com"}]})
    assert "example.com" not in text and "10.0.0.1" not in text and "aa:bb" not in text


def test_not_a_mac() -> None:
    for s in ("", "aa:bb:cc:dd:ee", "zz:bb:cc:dd:ee:ff", "aabbccddeeff00", None, 12):
        assert parse_mac(s) is None


def test_edge_dedupe_and_dlq_reasons() -> None:
    site = load_site("dbh")
    sink = MemorySink()
    edge = Edge("t", SECRET, ApResolver(site), sink)
    ap = site.aps[0].id
    assert edge.observe("aa:bb:cc:dd:ee:ff", ap, 1.8e9)
    assert not edge.observe("AA-BB-CC-DD-EE-FF", ap, 1.8e9)  # same observation: duplicate
    assert not edge.observe("aa:bb:cc:dd:ee:ff", "nope", 1.8e9)
    assert not edge.observe("bogus", ap, 1.8e9)
    assert not edge.observe("aa:bb:cc:dd:ee:ff", ap, 12.0)
    asyncio.run(edge.flush())
    assert edge.metrics.duplicates == 1 and edge.metrics.produced == 1
    assert dict(edge.metrics.dlq) == {"unknown_ap": 1, "bad_mac": 1, "bad_timestamp": 1}
    assert b"aa:bb" not in b"".join(v for _, _, v in sink.records)
