"""The batched hot path of the presence stage (orjson fast decode, per-partition device memo,
TTL memo, vectorised counting) gives exactly what record-by-record processing with the full
validation gives: the same partials, the same DLQ records with the same reasons, the same
pseudonyms in the state, the same checkpoint bytes — on a simulated day with malformed,
hostile, edge-pseudonymised and replayed records mixed in."""

from __future__ import annotations

import json
import math
import zlib
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mechanisms.pseudonym import hmac_pseudonym
from occupancy.buildings import load_site
from occupancy.schema import (
    MAC_RE,
    MAX_DEPTH,
    PSEUDONYM_RE,
    Invalid,
    parse_observation,
    quick_fields,
)
from streams.pipeline import presence
from streams.pipeline.identity import pseudonymizer, ttl_step
from streams.pipeline.presence import (
    PartitionState,
    StageConfig,
    sign_marker,
)

SECRET = b"batched-secret-0123456789abcdef"
T0 = 1_767_571_200.0


@pytest.fixture(scope="module")
def site():
    return load_site("dbh")


def _cfg(site):
    return StageConfig(ap_location=dict(site.ap_location),
                       location_index=dict(site.location_index), tick_s=300.0,
                       validity_s=600.0, lateness_s=60.0, max_future_s=3600.0,
                       ttl_s=1200.0, secret=SECRET)


# ---- the specification: one record at a time, full validation, per-entry counting ----

def _count_range_per_entry(devices, t0, n, tick_s, validity_s, n_loc):
    diff = np.zeros((n + 1, n_loc), dtype=np.int64)
    for lst in devices.values():
        for i, e in enumerate(lst):
            li = int(e[2])
            if li < 0:
                continue
            end = e[0] + validity_s
            if i < len(lst) - 1 and lst[i + 1][0] < end:
                end = lst[i + 1][0]
            lo = max(math.ceil((e[0] - t0) / tick_s), 0)
            hi = min(math.ceil((end - t0) / tick_s), n)
            if lo < hi:
                diff[lo, li] += 1
                diff[hi, li] -= 1
    return np.cumsum(diff, axis=0)[:n]


def _reference(state, records, cfg, pseudo, monkeypatch):
    """Record-by-record: the full parse on every record (no fast path, no memo hit), a
    fresh HMAC and TTL step each, and the per-entry counting."""
    with monkeypatch.context() as m:
        m.setattr(presence, "quick_fields", lambda raw: None)
        m.setattr(presence, "_count_range", _count_range_per_entry)
        return state.process(records, cfg, pseudo, ttl_step)


def _uncached(secret):
    return lambda mac: hmac_pseudonym(secret, mac)  # no memo anywhere


def _dlq(res):
    return [(d["raw"], d["reason"]) for d in map(json.loads, res.dlq)]


def _odd_records(site):
    """Records on the edge of the fast path: each must get the full path's answer."""
    ap = site.aps[0].id
    pid = hmac_pseudonym(SECRET, "aa:bb:cc:dd:ee:77")

    def ev(**kw):
        return json.dumps({"device": "aa:bb:cc:dd:ee:71", "ap": ap, "ts": T0 + 50, **kw})

    deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    return [
        ev().encode(),
        bytearray(ev(device="aa:bb:cc:dd:ee:72").encode()),  # not bytes: full path
        ev(device="AA:BB:CC:DD:EE:71").encode(),  # upper case: the same device
        ev(note=deep).encode(),  # too_deep although its fields are fine
        ev(note="[" * 40).encode(),  # brackets in a string: fine, full path counts them
        ('{"device":"aa:bb:cc:dd:ee:71","device":' + deep + f',"ap":"{ap}","ts":{T0}}}'
         ).encode(),  # duplicate key hiding a deep value: too_deep
        ('{"device":' + deep + ',"device":"aa:bb:cc:dd:ee:73",'
         f'"ap":"{ap}","ts":{T0 + 51}}}').encode(),
        b"\xef\xbb\xbf" + ev().encode(),  # BOM
        ev(ts=float("nan")).encode(),
        ev(ts=int(T0) + 52).encode(),  # int ts
        ev(ts=10 ** 30).encode(),  # beyond 64 bits: bad_timestamp on both paths
        ev(rssi=10 ** 30).encode(),  # fine as a float
        ev(rssi=float("inf")).encode(),
        ev(rssi=True).encode(),
        ev(rssi=None).encode(),
        ev(device="XX").encode().replace(b"XX", b"\xed\xa0\x80"),  # not UTF-8 (a surrogate)
        ev(device="XX").encode().replace(b"XX", b"\xff"),
        ev(device="\\ud800").encode(),
        json.dumps({"device": "aa:bb:cc:dd:ee:74\u0000", "ap": ap, "ts": T0 + 53}).encode(),
        ev(device=pid, pseudonymised=True).encode(),  # edge: the same pseudonym as the MAC
        ev(device="aa:bb:cc:dd:ee:77").encode(),
        ev(device=pid.upper(), pseudonymised=True).encode(),
        ev(device="aa:bb:cc:dd:ee:78", pseudonymised=True).encode(),  # not a pseudonym
        ev(device=pid, pseudonymised=1).encode(),  # not True: a MAC is expected
        ev(device=pid, pseudonymised="true").encode(),
        ev(ap="no-such-ap").encode(),
        ev(ap=ap + " ").encode(),
        ev(ts=T0 + 10 ** 6).encode(),  # far future
        ev(ts=T0 - 10 ** 4).encode(),  # too late
        ev(ts=True).encode(),
        ev(device="aa:bb:cc:dd:ee:7g").encode(),
        ev(device="aa-bb-cc-dd-ee-79").encode(),
        b'{"device":"aa:bb:cc:dd:ee:71","ap":"' + ap.encode() + b'","ts":1767571260}  \n',
        b'{"device":"aa:bb:cc:dd:ee:71","ap":"' + ap.encode() + b'","ts":1767571260}x',
        b"null", None, b"", b"[]", b"a str value", b'{"watermark":1}',
        sign_marker(T0 + 55, SECRET, 0),
    ]


def _stream(site, malformed_rate):
    from simulator import simulate
    from simulator.simulation import Scenarios

    sim = simulate(site, days=1.0, seed=5,
                   scenarios=Scenarios(malformed_rate=malformed_rate))
    parts = [[] for _ in range(2)]
    odd = _odd_records(site)
    for i, (key, value, _) in enumerate(sim.records()):
        p = zlib.crc32(key or b"") % 2
        if p == 0 and i % 997 == 0:  # the odd records, again and again through the day
            for raw in odd:
                parts[0].append(raw)
        if i % 501 == 0 and b'"device": "' in value:  # some devices pseudonymised at the edge
            obj = json.loads(value)
            obj["device"] = hmac_pseudonym(SECRET, obj["device"])
            obj["pseudonymised"] = True
            value = json.dumps(obj).encode()
        parts[p].append(value)
    return sim, [list(enumerate(p)) for p in parts]


@pytest.mark.parametrize("batch", [3, 97, 5000])
def test_batched_equals_record_by_record_on_a_day_with_malformed_records(site, monkeypatch,
                                                                           batch):
    sim, parts = _stream(site, malformed_rate=0.02)
    assert len(sim.truth["malformed"]) > 100
    cfg = _cfg(site)
    rng = np.random.default_rng(batch)
    reasons = set()
    for p, recs in enumerate(parts):
        fast, ref = PartitionState(p), PartitionState(p)
        pseudo, plain = pseudonymizer(SECRET), _uncached(SECRET)
        pos = 0
        while pos < len(recs):
            # batches of this size, with replays of already-incorporated offsets
            lo = max(0, pos - int(rng.integers(0, 3))) if rng.random() < 0.1 else pos
            chunk = recs[lo:pos + batch]
            a = fast.process(chunk, cfg, pseudo, ttl_step)
            b = _reference(ref, chunk, cfg, plain, monkeypatch)
            assert a.partials == b.partials
            assert _dlq(a) == _dlq(b)
            assert (a.processed, a.skipped) == (b.processed, b.skipped)
            reasons |= {r for _, r in _dlq(a)}
            pos += batch
            if rng.random() < 0.05:  # crash: the memos are lost, the checkpoint is not
                fast = PartitionState.from_bytes(fast.to_bytes())
        assert fast.devices == ref.devices and fast.ttl_devices == ref.ttl_devices
        assert fast.ttl_state == ref.ttl_state and fast.dlq_counts == ref.dlq_counts
        assert fast.to_bytes() == ref.to_bytes()
    expected = {"bad_mac", "unknown_ap", "too_late", "far_future", "too_deep",
                "malformed_json", "bad_encoding", "bad_timestamp", "bad_type:rssi",
                "bad_type:ts", "null_value", "not_an_object", "bad_marker",
                "missing_field:device", "missing_field:ap", "missing_field:ts"}
    assert expected <= reasons


def test_batched_partials_do_not_depend_on_batch_size(site):
    _, parts = _stream(site, malformed_rate=0.01)
    cfg = _cfg(site)
    runs = []
    for batch in (1, 20000):
        st_ = PartitionState(0)
        out = []
        for i in range(0, len(parts[0]), batch):
            out += st_.process(parts[0][i:i + batch], cfg, pseudonymizer(SECRET),
                               ttl_step).partials
        runs.append([(p.tick, p.counts, p.ttl) for p in out])
    assert runs[0] == runs[1] and len(runs[0]) > 250
    assert sum(map(sum, (c for _, c, _ in runs[0]))) > 0


@settings(max_examples=400, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.binary(max_size=200)
       | st.builds(lambda d: json.dumps(d).encode(),
                   st.fixed_dictionaries({}, optional={
                       "device": st.sampled_from(["aa:bb:cc:dd:ee:01", "AA:bb:cc:dd:ee:01",
                                                  "0" * 32, "x", "", 7]) | st.text(max_size=20),
                       "ap": st.sampled_from(["ap-1", "ap-2", None, 1]),
                       "ts": st.floats() | st.integers() | st.booleans() | st.none(),
                       "rssi": st.floats() | st.integers() | st.none() | st.text(max_size=2),
                       "pseudonymised": st.booleans() | st.integers(0, 1) | st.none()})))
def test_property_quick_fields_never_disagrees_with_the_full_check(raw):
    """Whenever the fast path answers, the full path accepts the same fields (or rejects
    only for the MAC or the AP, which the fast path's caller checks the same way)."""
    aps = {"ap-1": "L"}
    q = quick_fields(raw)
    full = parse_observation(raw, aps)
    if q is None:
        return
    device, ap, ts, edge = q
    syntax = PSEUDONYM_RE if edge else MAC_RE
    if syntax.fullmatch(device.lower()) is None:
        assert isinstance(full, Invalid) and full.reason == "bad_mac"
    elif ap not in aps:
        assert isinstance(full, Invalid) and full.reason == "unknown_ap"
    else:
        assert not isinstance(full, Invalid)
        assert (full.device, full.ap, full.ts, full.pseudonymised) == (device.lower(), ap, ts,
                                                                       edge)


def test_device_memo_follows_the_pseudonymizer(site):
    """The memo caches ``pseudonym(MAC)``: another pseudonymizer (another secret) is never
    answered from it."""
    cfg = replace(_cfg(site), clock_quorum=1)  # two records: each must move the clock
    ap = site.aps[0].id
    st_ = PartitionState(0)
    rec = json.dumps({"device": "aa:bb:cc:dd:ee:01", "ap": ap, "ts": T0}).encode()
    st_.process([(0, rec)], cfg, pseudonymizer(SECRET), ttl_step)
    other = b"another-secret-0123456789abcdef"
    st_.process([(1, rec)], cfg, pseudonymizer(other), ttl_step)
    assert set(st_.devices) == {hmac_pseudonym(SECRET, "aa:bb:cc:dd:ee:01"),
                                hmac_pseudonym(other, "aa:bb:cc:dd:ee:01")}
