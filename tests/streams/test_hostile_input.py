"""Hostile and malformed records (issue 14 A): every one is dead-lettered with a reason or
handled, nothing raises out of the decode paths, and the worker's state survives."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from occupancy.buildings import load_site
from occupancy.oracle import occupancy_oracle
from occupancy.schema import (
    MAX_DEPTH,
    MAX_RECORD_BYTES,
    REASONS,
    EventClock,
    Invalid,
    decode,
    parse_observation,
    validate,
)
from streams.pipeline.identity import pseudonymizer, ttl_step
from streams.pipeline.occupancy import OccupancyState
from streams.pipeline.presence import (
    PartitionState,
    StageConfig,
    sign_marker,
    verify_marker,
)

SECRET = b"hostile-secret-0123456789abcdef"
T0 = 1_767_571_200.0  # 2026-01-05 00:00:00 UTC


@pytest.fixture(scope="module")
def site():
    return load_site("dbh")


def _cfg(site, **kw):
    # quorum 1: the first record starts the clock (the quorum: tests/occupancy/test_clock.py)
    kw.setdefault("clock_quorum", 1)
    return StageConfig(ap_location=dict(site.ap_location),
                       location_index=dict(site.location_index), tick_s=300.0,
                       validity_s=600.0, lateness_s=60.0, max_future_s=3600.0,
                       ttl_s=1200.0, secret=SECRET, **kw)


def _ev(site, mac="aa:bb:cc:dd:ee:01", ts=T0 + 10, **extra):
    ap = site.aps[0].id
    return json.dumps({"device": mac, "ap": ap, "ts": ts, **extra}).encode()


def bad_records(site):
    """(label, record value, expected DLQ reason) for every kind of bad input tried."""
    ap = site.aps[0].id
    deep = b"[" * 100_000 + b"]" * 100_000
    return [
        ("null value (tombstone)", None, "null_value"),
        ("empty bytes", b"", "malformed_json"),
        ("deep JSON 100k levels", deep, "too_large"),
        ("deep JSON under the size limit", b'{"a":' + b"[" * 20_000 + b"]" * 20_000 + b"}",
         "too_deep"),
        ("deep object nesting", b'{"a":' * 5000 + b"1" + b"}" * 5000, "too_deep"),
        ("huge record", b'{"device":"' + b"x" * (MAX_RECORD_BYTES + 1) + b'"}', "too_large"),
        ("enormous string field", json.dumps(
            {"device": "aa:bb:cc:dd:ee:01", "ap": "y" * 60_000, "ts": T0}).encode(),
         "unknown_ap"),
        ("non-UTF-8 bytes", b'{"device":"\xff\xfe","ap":"a","ts":1}', "bad_encoding"),
        ("UTF-16 JSON", json.dumps({"device": "x"}).encode("utf-16"), "bad_encoding"),
        ("truncated JSON", b'{"device": "aa:bb', "malformed_json"),
        ("NaN literal", json.dumps({"device": "aa:bb:cc:dd:ee:01", "ap": ap,
                                    "ts": float("nan")}).encode(), "bad_timestamp"),
        ("int too big for a float", b'{"device":"aa:bb:cc:dd:ee:01","ap":"' + ap.encode()
         + b'","ts":1' + b"0" * 400 + b"}", "bad_timestamp"),
        ("int with 5000 digits", b'{"ts":1' + b"0" * 5000 + b"}", "malformed_json"),
        ("JSON array", b"[1, 2, 3]", "not_an_object"),
        ("JSON string", b'"aa:bb:cc:dd:ee:01"', "not_an_object"),
        ("JSON null", b"null", "not_an_object"),
        ("JSON number", b"42", "not_an_object"),
        ("device is a list", json.dumps({"device": ["aa"], "ap": ap, "ts": T0}).encode(),
         "bad_type:device"),
        ("device is null", json.dumps({"device": None, "ap": ap, "ts": T0}).encode(),
         "missing_field:device"),
        ("ap is a number", json.dumps({"device": "aa:bb:cc:dd:ee:01", "ap": 7,
                                       "ts": T0}).encode(), "bad_type:ap"),
        ("ts is a string", json.dumps({"device": "aa:bb:cc:dd:ee:01", "ap": ap,
                                       "ts": str(T0)}).encode(), "bad_type:ts"),
        ("ts is a bool", json.dumps({"device": "aa:bb:cc:dd:ee:01", "ap": ap,
                                     "ts": True}).encode(), "bad_type:ts"),
        ("rssi is an object", json.dumps({"device": "aa:bb:cc:dd:ee:01", "ap": ap, "ts": T0,
                                          "rssi": {}}).encode(), "bad_type:rssi"),
        ("rssi too big", b'{"device":"aa:bb:cc:dd:ee:01","ap":"' + ap.encode()
         + b'","ts":1767571210,"rssi":1' + b"0" * 400 + b"}", "bad_type:rssi"),
        ("MAC with trailing newline", json.dumps({"device": "aa:bb:cc:dd:ee:01\n", "ap": ap,
                                                  "ts": T0}).encode(), "bad_mac"),
        ("mixed-case field names", json.dumps({"Device": "aa:bb:cc:dd:ee:01", "AP": ap,
                                               "TS": T0}).encode(), "missing_field:device"),
        ("unsigned watermark 1e12", b'{"watermark": 1e12}', "bad_marker"),
        ("unsigned watermark in range", b'{"watermark":1767571500.0}', "bad_marker"),
        ("watermark not a number", b'{"watermark":"soon"}', "bad_marker"),
        ("marker of another partition", sign_marker(T0 + 100, SECRET, 3), "bad_marker"),
        ("marker signed with another secret",
         sign_marker(T0 + 100, b"another-secret-0123456789", 0), "bad_marker"),
        ("authentic marker 1e9 s ahead", sign_marker(T0 + 1e9, SECRET, 0), "marker_jump"),
    ]


def test_every_bad_record_is_dead_lettered_and_good_ones_still_count(site):
    cfg = _cfg(site)
    st_ = PartitionState(0)
    bad = bad_records(site)
    good = [_ev(site, f"aa:bb:cc:dd:ee:{i:02x}", T0 + 10 + i) for i in range(5)]
    good.append(_ev(site, "AA:BB:CC:DD:EE:09", T0 + 20))  # upper-case MAC: handled
    good.append(_ev(site, "aa:bb:cc:dd:ee:0a", T0 + 2000))  # moves the clock: final ticks
    records = [good[0]] + [raw for _, raw, _ in bad] + good[1:]
    res = st_.process(list(enumerate(records)), cfg, pseudonymizer(SECRET), ttl_step)
    reasons = [json.loads(d)["reason"] for d in res.dlq]
    assert reasons == [want for _, _, want in bad]
    assert {r.split(":")[0] for r in reasons} <= set(REASONS) | {"bad_type"}
    assert st_.offset == len(records) - 1
    # the good records count exactly as the oracle counts them without the bad ones
    occ = OccupancyState()
    final = occ.process([(i, p.to_json(1, site.id)) for i, p in enumerate(res.partials)],
                        300.0)
    ticks = [f.tick for f in final]
    assert ticks and max(ticks) < T0 + 2000
    oracle = occupancy_oracle(good, site.ap_location, site.location_ids, ticks=ticks,
                              quorum=cfg.clock_quorum)
    assert [f.counts for f in final] == oracle.counts.tolist()
    assert sum(map(sum, (f.counts for f in final))) > 0
    # the checkpoint round-trips after all of it
    assert PartitionState.from_bytes(st_.to_bytes()).offset == st_.offset


def test_bad_records_give_the_same_reason_in_the_oracle_path(site):
    for label, raw, want in bad_records(site):
        if raw is not None and raw.startswith(b'{"watermark"'):
            continue  # markers are the stream's, not observations
        got = validate(raw, dict(site.ap_location), EventClock(60.0, 3600.0))
        assert isinstance(got, Invalid) and got.reason == want, label


def test_depth_guard_ignores_brackets_inside_strings():
    text = json.dumps({"note": "[" * (MAX_DEPTH * 4), "x": [[1]]})
    assert isinstance(decode(text), dict)
    ok = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert isinstance(decode('{"a":' + ok[1:-1] + "}"), dict)
    assert decode('{"a":' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "}").reason == "too_deep"


def test_non_bytes_values_are_invalid_not_errors():
    for raw in (123, 4.5, object(), ["a"], ("x",)):
        assert isinstance(decode(raw), Invalid)


@settings(max_examples=300, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_property_arbitrary_bytes_never_raise(raw):
    ap = {"ap-1": "L"}
    out = parse_observation(raw, ap)
    assert out is not None
    assert isinstance(verify_marker(raw, SECRET, 0), float | Invalid)
    # through the stage too, also disguised as a marker: each record is DLQ'd or skipped
    cfg = StageConfig(ap_location=ap, location_index={"L": 0}, tick_s=300.0,
                      validity_s=600.0, lateness_s=60.0, max_future_s=3600.0, ttl_s=1200.0,
                      secret=SECRET)
    res = PartitionState(0).process([(0, raw), (1, b'{"watermark":' + raw)], cfg,
                                    pseudonymizer(SECRET), ttl_step)
    assert len(res.dlq) + (not isinstance(out, Invalid)) == 2


_json = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers()
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=30)


@settings(max_examples=300, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.fixed_dictionaries({}, optional={"device": _json, "ap": _json, "ts": _json,
                                           "rssi": _json}), st.booleans())
def test_property_arbitrary_json_objects_never_raise(obj, as_str):
    raw = json.dumps(obj) if as_str else json.dumps(obj).encode()
    out = validate(raw, {"ap-1": "L"}, EventClock(60.0, 3600.0, T0))
    if not isinstance(out, Invalid):
        assert math.isfinite(out.ts) and isinstance(out.device, str)


def test_marker_round_trip_and_tampering():
    raw = sign_marker(T0 + 123.5, SECRET, 2)
    assert verify_marker(raw, SECRET, 2) == T0 + 123.5
    for i in range(len(raw)):
        flipped = raw[:i] + bytes([raw[i] ^ 0x01]) + raw[i + 1:]
        assert verify_marker(flipped, SECRET, 2) != T0 + 123.5 or flipped == raw
    assert isinstance(verify_marker(raw, SECRET, 1), Invalid)
    assert isinstance(verify_marker(raw + b" " * 300, SECRET, 2), Invalid)


def test_forged_marker_does_not_move_the_clock(site):
    cfg = _cfg(site)
    st_ = PartitionState(0)
    st_.process([(0, _ev(site, ts=T0 + 10))], cfg, pseudonymizer(SECRET))
    before = st_.max_ts
    res = st_.process([(1, b'{"watermark": 1e12}'), (2, b'{"watermark":1767657600.0}')],
                      cfg, pseudonymizer(SECRET))
    assert st_.max_ts == before and not res.partials
    assert [json.loads(d)["reason"] for d in res.dlq] == ["bad_marker", "bad_marker"]


def test_marker_jump_is_bounded_and_allocates_nothing(site):
    """A signed marker further ahead than ``max_marker_jump_s`` is refused; one within the
    bound finalises exactly the ticks it passes (bounded by jump / tick_s)."""
    cfg = _cfg(site, max_marker_jump_s=3600.0)
    st_ = PartitionState(0)
    st_.process([(0, _ev(site, ts=T0 + 10))], cfg, pseudonymizer(SECRET))
    res = st_.process([(1, sign_marker(T0 + 10 + 3601, SECRET, 0))], cfg,
                      pseudonymizer(SECRET))
    assert [json.loads(d)["reason"] for d in res.dlq] == ["marker_jump"]
    assert not res.partials and st_.max_ts == T0 + 10
    res = st_.process([(2, sign_marker(T0 + 10 + 3600, SECRET, 0))], cfg,
                      pseudonymizer(SECRET))
    assert not res.dlq and st_.max_ts == T0 + 3610
    # ticks T0+300 .. below the watermark T0+3550: 11 of them, each reported once
    assert [p.tick for p in res.partials] == [T0 + 300 * k for k in range(1, 12)]


def test_dlq_records_hold_no_raw_mac_for_bad_input(site):
    cfg = _cfg(site)
    st_ = PartitionState(0)
    macs = ["AA:BB:CC:DD:EE:FF", "aa bb cc dd ee ff", "aabb.ccdd.eeff"]
    recs = [f'{{"device": "{m}", "ts": "x"'.encode() for m in macs]  # malformed JSON
    res = st_.process(list(enumerate(recs)), cfg, pseudonymizer(SECRET))
    assert len(res.dlq) == 3
    for d in res.dlq:
        assert "ee" not in json.loads(d)["raw"].lower().replace("<redacted>", "")


def test_malformed_partials_are_ignored_not_fatal(site):
    """``occupancy.partial`` is internal, but a record there must not stop the stage."""
    good = {"tick": T0, "partition": 0, "partitions": 1, "first_tick": T0, "site": "dbh",
            "max_ts": T0 + 400, "wall": 1.0, "counts": [1, 2], "ttl": [1, 2]}
    bad = [None, b"", b"[" * 100_000, b"null", b"[]", b'{"tick": "x"}',
           json.dumps({**good, "counts": ["a", 1]}).encode(),
           json.dumps({**good, "counts": {"a": 1}}).encode(),
           json.dumps({**good, "max_ts": "soon"}).encode(),
           json.dumps({**good, "wall": [1]}).encode(),
           json.dumps({**good, "partition": 5}).encode(),
           json.dumps({**good, "partitions": True}).encode(),
           json.dumps({**good, "tick": float("inf")}).encode(),
           b'{"tick":1' + b"0" * 400 + b"}"]
    occ = OccupancyState()
    recs = [(i, raw) for i, raw in enumerate(bad)] + [(len(bad), json.dumps(good).encode())]
    final = occ.process(recs, 300.0)
    assert [(f.tick, f.counts) for f in final] == [(T0, [1, 2])]
