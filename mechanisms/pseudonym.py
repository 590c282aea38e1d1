"""Device pseudonyms: keyed HMAC, and TTL-salt pseudonyms (thesis §4.2.2).

Keyed HMAC
    ``hmac_pseudonym(key, mac)`` = HMAC-SHA256(key, normalised MAC), hex-truncated.
    Never an unkeyed hash: the MAC space (2⁴⁸, far less per vendor prefix) is small
    enough to enumerate, so ``sha256(mac)`` is reversible by anyone. Without the key the
    pseudonym reveals nothing computable about the MAC; with it, the operator can
    re-identify, so the key is a secret of the deployment.

TTL-salt pseudonyms (thesis §4.2.2, "k-anonymity ... salt that changes periodically")
    A device's pseudonym is HMAC(salt, MAC) with a per-device salt that expires
    ``ttl_s`` seconds after it was first used for that device; the next observation
    after expiry starts a new salt, so a long stay yields several pseudonyms and may be
    counted more than once. The salt is *derived*, not drawn:
    salt = HMAC(key, "ttl-salt" ‖ MAC ‖ salt_started_ts), so the per-device state is
    just (salt_counter, salt_started_ts) and a replay of the same observations in the
    same order yields the same pseudonyms (replay-safe, no randomness to store).
    Keying the salt by its start time (not by the counter) makes an *expired* state
    disposable: a device's salts start at strictly increasing times, so one that
    returns after its state was dropped gets a salt never used before. A stream can
    therefore drop every state whose salt ended before the watermark
    (:func:`ttl_expired`) and keep memory bounded by the devices seen within ``ttl_s``;
    ``salt_counter`` only counts the salts since the state was created.

    **TTL has NO formal privacy guarantee** (thesis §4.2.2: "no formal guarantees of
    privacy w.r.t. released counts, as counting does not depend on the object
    identities anyway"). Every report that shows TTL must show
    :data:`TTL_GUARANTEE` beside it; its only tunable is ``ttl_s`` (thesis Table 4.2).

Out-of-order observations: a record older than the current salt's start keeps the
current salt (the state never goes back), so the result depends on arrival order —
replays must preserve per-device order (Kafka keys by device, which does).
"""

from __future__ import annotations

import hmac
import math
import re
from dataclasses import dataclass
from typing import Any

from mechanisms.errors import InvalidParameterError, check_positive

__all__ = [
    "PSEUDONYM_HEX_CHARS",
    "TTL_GUARANTEE",
    "TtlSaltState",
    "hmac_pseudonym",
    "normalize_mac",
    "ttl_expired",
    "ttl_pseudonym",
]

#: The label every report showing TTL-salt results must print next to them.
TTL_GUARANTEE = "none (no formal guarantee)"

#: Length of a pseudonym in hex characters (128 bits of the HMAC).
PSEUDONYM_HEX_CHARS = 32

_MIN_KEY_BYTES = 16
_MAC_RE = re.compile(r"^[0-9a-f]{2}([:\-.]?[0-9a-f]{2}){5}$")
_MAC_SEP = re.compile(r"[:\-.]")


def _check_key(key: bytes) -> bytes:
    if not isinstance(key, bytes | bytearray) or len(key) < _MIN_KEY_BYTES:
        raise InvalidParameterError(
            f"key must be at least {_MIN_KEY_BYTES} secret bytes (set the pseudonym "
            f"secret), not {type(key).__name__}"
        )
    return bytes(key)


def normalize_mac(mac: str) -> str:
    """Lower-case, separator-free form of a MAC (``AA:BB:..`` ≡ ``aa-bb-..``).

    Identifiers that do not look like a MAC are used as given (stripped), so other
    device ids still work; an empty id is rejected.
    """
    if not isinstance(mac, str) or not mac.strip():
        raise InvalidParameterError(f"mac must be a non-empty string, not {mac!r}")
    m = mac.strip().lower()
    if _MAC_RE.match(m):
        return _MAC_SEP.sub("", m)
    return m


def _hmac_hex(key: bytes, *parts: bytes) -> str:
    # hmac.digest: the one-shot C implementation, the same bytes as hmac.new(...).digest()
    msg = b"\x00".join(parts)
    return hmac.digest(key, msg, "sha256").hex()[:PSEUDONYM_HEX_CHARS]


def hmac_pseudonym(key: bytes, mac: str) -> str:
    """Stable keyed pseudonym of a device: HMAC-SHA256(key, "pseudonym" ‖ MAC), 128 bits hex.

    Raises:
        InvalidParameterError: key shorter than 16 bytes, or empty MAC.
    """
    return _hmac_hex(_check_key(key), b"pseudonym", normalize_mac(mac).encode())


@dataclass(frozen=True)
class TtlSaltState:
    """Per-device TTL-salt state, small enough for a stream table.

    Attributes:
        salt_counter: index of the current salt (0 for the device's first salt).
        salt_started_ts: event time (epoch s) at which the current salt was first used.
    """

    salt_counter: int
    salt_started_ts: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form for a table value."""
        return {"salt_counter": self.salt_counter, "salt_started_ts": self.salt_started_ts}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TtlSaltState:
        """Inverse of :meth:`to_dict`."""
        return cls(salt_counter=int(d["salt_counter"]), salt_started_ts=float(d["salt_started_ts"]))


def ttl_pseudonym(
    key: bytes, mac: str, ts: float, state: TtlSaltState | None, ttl_s: float
) -> tuple[str, TtlSaltState]:
    """TTL-salt pseudonym of one observation (thesis §4.2.2); NO formal guarantee.

    The salt of a device expires ``ttl_s`` seconds after its first use: an observation
    at ``ts ≥ salt_started_ts + ttl_s`` starts salt ``salt_counter + 1`` at ``ts``.

    Args:
        key: deployment secret (≥ 16 bytes); salts are HMAC(key, "ttl-salt", MAC,
            salt start time).
        mac: the device's MAC (or other device id).
        ts: the observation's event time, epoch seconds.
        state: the device's state, or None for a device not seen before.
        ttl_s: salt lifetime in seconds (> 0).

    Returns:
        (pseudonym, new_state). Pseudonyms of different salts are unlinkable without
        the key; they never equal :func:`hmac_pseudonym` of the same device.
    """
    k = _check_key(key)
    ttl = check_positive("ttl_s", ttl_s)
    t = float(ts)
    if not math.isfinite(t):
        raise InvalidParameterError(f"ts must be a finite epoch time, not {ts!r}")
    dev = normalize_mac(mac).encode()
    if state is None:
        new = TtlSaltState(salt_counter=0, salt_started_ts=t)
    elif t >= state.salt_started_ts + ttl:
        new = TtlSaltState(salt_counter=state.salt_counter + 1, salt_started_ts=t)
    else:
        new = state
    salt = hmac.digest(k, b"ttl-salt\x00" + dev + b"\x00"
                       + float(new.salt_started_ts).hex().encode(), "sha256")
    return _hmac_hex(salt, b"ttl-pseudonym", dev), new
def ttl_expired(state: TtlSaltState, watermark_ts: float, ttl_s: float) -> bool:
    """Whether a device's TTL state can be dropped at this watermark.

    Every observation still admitted has ``ts ≥ watermark_ts``; once the salt has ended
    (``salt_started_ts + ttl_s ≤ watermark_ts``) each of them starts a new salt keyed by
    its own time, so the state is never read again (see the module docstring).
    """
    return state.salt_started_ts + ttl_s <= watermark_ts


