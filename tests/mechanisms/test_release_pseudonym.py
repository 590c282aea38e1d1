"""Keyed HMAC and TTL-salt pseudonyms (mechanisms.pseudonym)."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanisms import pseudonym
from mechanisms.errors import InvalidParameterError
from mechanisms.pseudonym import (
    TTL_GUARANTEE,
    TtlSaltState,
    hmac_pseudonym,
    normalize_mac,
    ttl_expired,
    ttl_pseudonym,
)

KEY = b"deployment-secret-0123456789"
MAC = "AA:BB:CC:DD:EE:FF"


def test_hmac_pseudonym_is_keyed_stable_and_not_a_plain_hash() -> None:
    p = hmac_pseudonym(KEY, MAC)
    assert p == hmac_pseudonym(KEY, "aa-bb-cc-dd-ee-ff") == hmac_pseudonym(KEY, "aabbccddeeff")
    assert p != hmac_pseudonym(KEY[::-1], MAC)
    assert p != hmac_pseudonym(KEY, "AA:BB:CC:DD:EE:00")
    for h in (hashlib.sha256, hashlib.md5, hashlib.sha1):
        for m in (MAC, "aabbccddeeff", "aa:bb:cc:dd:ee:ff"):
            assert not h(m.encode()).hexdigest().startswith(p)
    assert len(p) == 32 and MAC.lower() not in p
    with pytest.raises(InvalidParameterError):
        hmac_pseudonym(b"short", MAC)
    with pytest.raises(InvalidParameterError):
        hmac_pseudonym(KEY, "  ")
    assert normalize_mac(" device-42 ") == "device-42"


def test_ttl_salt_expires_ttl_seconds_after_first_use() -> None:
    p0, s0 = ttl_pseudonym(KEY, MAC, 1000.0, None, ttl_s=600)
    p1, s1 = ttl_pseudonym(KEY, MAC, 1599.9, s0, ttl_s=600)
    p2, s2 = ttl_pseudonym(KEY, MAC, 1600.0, s1, ttl_s=600)
    p3, s3 = ttl_pseudonym(KEY, MAC, 1700.0, s2, ttl_s=600)
    assert p0 == p1 and s1 == s0 == TtlSaltState(0, 1000.0)
    assert p2 != p1 and s2 == TtlSaltState(1, 1600.0)
    assert p3 == p2
    assert p0 != hmac_pseudonym(KEY, MAC)
    late, s_late = ttl_pseudonym(KEY, MAC, 900.0, s3, ttl_s=600)  # out of order: keeps salt
    assert late == p3 and s_late == s3
    other, _ = ttl_pseudonym(KEY, "11:22:33:44:55:66", 1000.0, None, ttl_s=600)
    assert other != p0
    assert TtlSaltState.from_dict(s2.to_dict()) == s2
    with pytest.raises(InvalidParameterError):
        ttl_pseudonym(KEY, MAC, 0.0, None, ttl_s=0)
    with pytest.raises(InvalidParameterError):
        ttl_pseudonym(KEY, MAC, float("nan"), None, ttl_s=60)


def test_a_dropped_expired_state_never_brings_back_an_old_pseudonym() -> None:
    kept, dropped, seen = None, None, []
    for t in [0.0, 100.0, 700.0, 1300.0, 1350.0, 5000.0, 5001.0]:
        p_kept, kept = ttl_pseudonym(KEY, MAC, t, kept, ttl_s=600)
        if dropped is not None and ttl_expired(dropped, t, ttl_s=600):
            dropped = None  # what the stream does once the watermark passes the salt's end
        p_dropped, dropped = ttl_pseudonym(KEY, MAC, t, dropped, ttl_s=600)
        assert p_dropped == p_kept  # dropping expired states changes no pseudonym
        seen.append(p_kept)
    assert len(set(seen)) == 4  # salts started at 0, 700, 1300 and 5000
    # a state built by hand with an integer start time is the same state
    assert ttl_pseudonym(KEY, MAC, 1350.0, TtlSaltState(0, 1300), 600)[0] == seen[3]
    assert not ttl_expired(TtlSaltState(0, 100.0), 699.9, ttl_s=600)
    assert ttl_expired(TtlSaltState(0, 100.0), 700.0, ttl_s=600)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0, 1e5, allow_nan=False), min_size=1, max_size=30),
       st.floats(1, 5000))
def test_ttl_pseudonyms_replay_identically(times: list[float], ttl_s: float) -> None:
    def run() -> list[str]:
        state, out = None, []
        for t in sorted(times):
            p, state = ttl_pseudonym(KEY, MAC, t, state, ttl_s)
            out.append(p)
        return out
    first = run()
    assert first == run()
    # a salt lives at most ttl_s: pseudonyms more than ttl_s apart always differ
    ts = sorted(times)
    for i in range(len(ts)):
        for j in range(i + 1, len(ts)):
            if ts[j] - ts[i] >= 2 * ttl_s:
                assert first[i] != first[j]


def test_ttl_guarantee_label() -> None:
    assert TTL_GUARANTEE == "none (no formal guarantee)"
    assert "NO formal privacy guarantee" in (pseudonym.__doc__ or "")
    assert "NO formal guarantee" in (ttl_pseudonym.__doc__ or "")
