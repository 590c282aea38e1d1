"""Record schemas (docs/DESIGN.md "Topics and records") and observation validation.

The validation here is *the* definition of a valid WiFi observation: the observe
agent applies it to every record of ``wifi.observations`` (invalid ones go to
``wifi.observations.dlq`` with the reason), and the reference oracle
(:mod:`occupancy.oracle`) applies the same function, so the stream and the oracle
agree on which events count.

Validation is stateful only through :class:`EventClock`, the maximum event time
seen so far, which defines "far future" and "too late":

* ``far_future``: ``ts > max_ts + max_future_s`` (the event does not advance the clock);
* ``too_late``:   ``ts < max_ts − lateness_s`` (its tick may already be final).

The first valid event has no reference and is only checked against the absolute
range [``MIN_TS``, ``MAX_TS``].

Hostile input (issue 14 A). Decoding never raises: every record value — ``None``
(a Kafka tombstone), non-UTF-8 bytes, a value over :data:`MAX_RECORD_BYTES`, JSON nested
deeper than :data:`MAX_DEPTH`, a number too large for a float, a non-object — becomes an
:class:`Invalid` with its reason, so the observe stage dead-letters it instead of
crash-looping on it. The size limit (64 KiB; a real observation is ~100 bytes) is
checked before anything else, and the depth guard counts brackets outside strings
*before* ``json.loads`` (CPython's decoder recurses once per level and raises
``RecursionError`` near 1,000 levels).

Pseudonymised at the edge: a record with ``"pseudonymised": true`` (written by the
network connectors, :mod:`connectors.edge`) carries in ``device`` the keyed HMAC
pseudonym :func:`mechanisms.pseudonym.hmac_pseudonym` of the MAC (32 lower-case hex
characters) instead of the MAC, and is keyed by it. It is validated the same way, with
the pseudonym in place of the MAC syntax check; :attr:`Observation.pseudonymised` tells
the observe stage not to hash it again, so with the same secret a device gets the same
pseudonym on both paths (the TTL-salt stage then salts the pseudonym instead of the MAC:
other TTL pseudonyms, the same TTL counts).

Fast path. :func:`quick_fields` decodes a record with ``orjson`` and returns its fields
only when :func:`parse_observation` would find nothing wrong with them apart from the
MAC syntax and the AP (which the caller checks against its own memo and AP table); on
anything unusual it returns None and the caller takes the full path above, which names
the reason. So the fast path changes speed, never a result: hostile and malformed input
always gets the full path's reason.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import orjson

#: Absolute sanity range of event time (epoch seconds): 2000-01-01 .. 2100-01-01.
MIN_TS = 946_684_800.0
MAX_TS = 4_102_444_800.0

MAC_RE = re.compile(r"[0-9a-f]{2}(?::[0-9a-f]{2}){5}")  # used with fullmatch

#: Largest record value decoded (bytes, or characters of a str): larger ones are
#: dead-lettered as ``too_large`` without being parsed.
MAX_RECORD_BYTES = 64 * 1024
#: Deepest nesting of JSON arrays/objects decoded; deeper ones are ``too_deep``.
MAX_DEPTH = 32

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_BRACKET = re.compile(r"[\[\]{}]")
#: An edge pseudonym (``mechanisms.pseudonym.hmac_pseudonym``: 128 bits in hex).
PSEUDONYM_RE = re.compile(r"[0-9a-f]{32}")  # used with fullmatch

#: DLQ reasons (the counter labels). ``missing_field:X`` and ``bad_type:X`` name the field.
REASONS = (
    "null_value",
    "too_large",
    "too_deep",
    "bad_encoding",
    "malformed_json",
    "not_an_object",
    "missing_field",
    "bad_type",
    "bad_mac",
    "unknown_ap",
    "bad_timestamp",
    "far_future",
    "too_late",
    "bad_marker",
    "marker_jump",
)


@dataclass(frozen=True, slots=True)
class Observation:
    """A valid observation: device MAC (lower case), AP id, its location, event time."""

    device: str
    ap: str
    location: str
    ts: float
    rssi: float | None = None
    pseudonymised: bool = False


@dataclass(frozen=True, slots=True)
class Invalid:
    """Why a record was rejected: ``reason`` is one of :data:`REASONS` (with ``:field``)."""

    reason: str

    @property
    def kind(self) -> str:
        """The reason without its field suffix (the counter label)."""
        return self.reason.split(":", 1)[0]


def _too_deep(text: str) -> bool:
    """Whether ``text`` nests arrays/objects deeper than :data:`MAX_DEPTH` (strings skipped).

    Cheap on the hot path: a record with at most :data:`MAX_DEPTH` brackets in all
    cannot be too deep, and only records with more are scanned.
    """
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return False
    depth = 0
    for m in _BRACKET.finditer(_STRING.sub("", text)):
        if m.group() in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return True
        else:
            depth -= 1
    return False


def decode(raw: Any) -> dict[str, Any] | Invalid:
    """Decode a record value to a dict, or say why it is not one (never raises)."""
    if isinstance(raw, dict):
        return raw
    if raw is None:
        return Invalid("null_value")
    if isinstance(raw, bytes | bytearray | memoryview):
        if len(raw) > MAX_RECORD_BYTES:
            return Invalid("too_large")
        try:
            text = bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            return Invalid("bad_encoding")
    elif isinstance(raw, str):
        if len(raw) > MAX_RECORD_BYTES:
            return Invalid("too_large")
        text = raw
    else:
        return Invalid("bad_type:value")
    if _too_deep(text):
        return Invalid("too_deep")
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):  # ValueError includes too many int digits
        return Invalid("malformed_json")
    if not isinstance(obj, dict):
        return Invalid("not_an_object")
    return obj


def _float(v: Any) -> float | None:
    """``float(v)`` for a JSON number, None for an int too large for a float."""
    try:
        return float(v)
    except OverflowError:
        return None


def parse_observation(raw: Any, ap_location: dict[str, str]) -> Observation | Invalid:
    """Stateless checks of one record: JSON, fields, types, MAC, AP, absolute time range."""
    obj = decode(raw)
    if isinstance(obj, Invalid):
        return obj
    for name in ("device", "ap", "ts"):
        if name not in obj or obj[name] is None:
            return Invalid(f"missing_field:{name}")
    device, ap, ts = obj["device"], obj["ap"], obj["ts"]
    if not isinstance(device, str):
        return Invalid("bad_type:device")
    if not isinstance(ap, str):
        return Invalid("bad_type:ap")
    if isinstance(ts, bool) or not isinstance(ts, int | float):
        return Invalid("bad_type:ts")
    rssi = obj.get("rssi")
    if rssi is not None and (isinstance(rssi, bool) or not isinstance(rssi, int | float)):
        return Invalid("bad_type:rssi")
    device = device.lower()
    pseudonymised = obj.get("pseudonymised") is True
    if not (PSEUDONYM_RE if pseudonymised else MAC_RE).fullmatch(device):
        return Invalid("bad_mac")
    ts = _float(ts)
    if ts is None or not math.isfinite(ts) or not (MIN_TS <= ts <= MAX_TS):
        return Invalid("bad_timestamp")
    if rssi is not None:
        rssi = _float(rssi)
        if rssi is None or not math.isfinite(rssi):
            return Invalid("bad_type:rssi")
    location = ap_location.get(ap)
    if location is None:
        return Invalid("unknown_ap")
    return Observation(device, ap, location, ts, rssi, pseudonymised)


_loads = orjson.loads
_INF = math.inf


def quick_fields(raw: Any) -> tuple[str, str, float, bool] | None:
    """``(device as sent, ap, ts, pseudonymised)`` of a plainly well-formed record, else None.

    The observe stage's hot path (one call per record, no exception, no object but the
    decoded dict). When it returns a tuple, :func:`parse_observation` on the same value
    passes every check except possibly ``bad_mac`` (``device.lower()`` against
    :data:`MAC_RE` / :data:`PSEUDONYM_RE`) and ``unknown_ap`` — in that order — and, if
    those pass too, returns an :class:`Observation` with ``device.lower()``, this ``ap``,
    this ``ts`` and this ``pseudonymised``. None never means invalid, only "take the full
    path": a value that is not ``bytes``, over :data:`MAX_RECORD_BYTES`, with more than
    :data:`MAX_DEPTH` brackets (the full path's own cheap depth test, on the same
    characters: UTF-8 continuation bytes are never ASCII), anything ``orjson`` refuses
    (invalid UTF-8, a BOM, ``NaN``, lone surrogates, a number beyond a double, more than
    1,024 levels, trailing bytes), a non-object, a missing, null or wrongly typed field,
    a ``ts`` out of [:data:`MIN_TS`, :data:`MAX_TS`] (NaN and ±inf included), or an
    ``rssi`` that is not a finite number.

    ``orjson`` accepts a subset of what :func:`json.loads` accepts and decodes it to the
    same values, except integers beyond 64 bits, which it returns as the nearest double —
    the value :func:`float` gives ``json.loads``' exact integer, and the only way a
    ``ts`` or ``rssi`` is used here.
    """
    if type(raw) is not bytes or len(raw) > MAX_RECORD_BYTES \
            or raw.count(b"[") + raw.count(b"{") > MAX_DEPTH:
        return None
    try:
        obj = _loads(raw)
    except ValueError:  # orjson.JSONDecodeError
        return None
    if type(obj) is not dict:
        return None
    device = obj.get("device")
    ap = obj.get("ap")
    ts = obj.get("ts")
    if type(device) is not str or type(ap) is not str:
        return None
    if type(ts) is not float:
        if type(ts) is not int:  # bool is not int here
            return None
        ts = float(ts)  # orjson's ints fit in 64 bits: always a finite double
    if not MIN_TS <= ts <= MAX_TS:  # NaN fails every comparison
        return None
    rssi = obj.get("rssi")
    if rssi is not None:
        if type(rssi) is float:
            if not -_INF < rssi < _INF:
                return None
        elif type(rssi) is not int:
            return None
    return device, ap, ts, obj.get("pseudonymised") is True


class EventClock:
    """Maximum event time seen so far; decides ``far_future`` and ``too_late``.

    The simple single-sequence clock (the simulator labels its malformed records with
    it). The stream and the oracle run the quorum clock of :mod:`occupancy.clock`.

    Args:
        lateness_s: allowed lateness; an event more than this behind the clock is late.
        max_future_s: an event more than this ahead of the clock is far-future.
    """

    __slots__ = ("lateness_s", "max_future_s", "max_ts")

    def __init__(self, lateness_s: float, max_future_s: float, max_ts: float | None = None):
        self.lateness_s = float(lateness_s)
        self.max_future_s = float(max_future_s)
        self.max_ts = max_ts

    def admit(self, ts: float) -> str | None:
        """Return None and advance the clock if ``ts`` is admissible, else the reason."""
        if self.max_ts is not None:
            if ts > self.max_ts + self.max_future_s:
                return "far_future"
            if ts < self.max_ts - self.lateness_s:
                return "too_late"
            if ts > self.max_ts:
                self.max_ts = ts
        else:
            self.max_ts = ts
        return None

    @property
    def watermark(self) -> float | None:
        """Max event time − allowed lateness (None before the first event)."""
        return None if self.max_ts is None else self.max_ts - self.lateness_s


def validate(raw: Any, ap_location: dict[str, str], clock: EventClock) -> Observation | Invalid:
    """Full validation of one record in arrival order (stateless checks, then the clock)."""
    obs = parse_observation(raw, ap_location)
    if isinstance(obs, Invalid):
        return obs
    reason = clock.admit(obs.ts)
    return Invalid(reason) if reason else obs
