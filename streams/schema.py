"""Record schemas (DESIGN.md "Topics and records") and observation validation.

The validation here is *the* definition of a valid WiFi observation: the observe
agent applies it to every record of ``wifi.observations`` (invalid ones go to
``wifi.observations.dlq`` with the reason), and the reference oracle
(:mod:`streams.oracle`) applies the same function, so the stream and the oracle
agree on which events count.

Validation is stateful only through :class:`EventClock`, the maximum event time
seen so far, which defines "far future" and "too late":

* ``far_future``: ``ts > max_ts + max_future_s`` (the event does not advance the clock);
* ``too_late``:   ``ts < max_ts − lateness_s`` (its tick may already be final).

The first valid event has no reference and is only checked against the absolute
range [``MIN_TS``, ``MAX_TS``].

Pseudonymised at the edge: a record with ``"pseudonymised": true`` (written by the
network connectors, :mod:`connectors.edge`) carries in ``device`` the keyed HMAC
pseudonym :func:`mechanisms.pseudonym.hmac_pseudonym` of the MAC (32 lower-case hex
characters) instead of the MAC, and is keyed by it. It is validated the same way, with
the pseudonym in place of the MAC syntax check; :attr:`Observation.pseudonymised` tells
the observe stage not to hash it again, so with the same secret a device gets the same
pseudonym on both paths (the TTL-salt stage then salts the pseudonym instead of the MAC:
other TTL pseudonyms, the same TTL counts).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

#: Absolute sanity range of event time (epoch seconds): 2000-01-01 .. 2100-01-01.
MIN_TS = 946_684_800.0
MAX_TS = 4_102_444_800.0

MAC_RE = re.compile(r"^[0-9a-f]{2}(?::[0-9a-f]{2}){5}$")
#: An edge pseudonym (``mechanisms.pseudonym.hmac_pseudonym``: 128 bits in hex).
PSEUDONYM_RE = re.compile(r"^[0-9a-f]{32}$")

#: DLQ reasons (the counter labels). ``missing_field:X`` and ``bad_type:X`` name the field.
REASONS = (
    "malformed_json",
    "not_an_object",
    "missing_field",
    "bad_type",
    "bad_mac",
    "unknown_ap",
    "bad_timestamp",
    "far_future",
    "too_late",
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


def decode(raw: bytes | str | dict[str, Any]) -> dict[str, Any] | Invalid:
    """Decode a record value to a dict, or say why it is not one."""
    if isinstance(raw, dict):
        return raw
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return Invalid("malformed_json")
    if not isinstance(obj, dict):
        return Invalid("not_an_object")
    return obj


def parse_observation(
    raw: bytes | str | dict[str, Any], ap_location: dict[str, str]
) -> Observation | Invalid:
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
    if not (PSEUDONYM_RE if pseudonymised else MAC_RE).match(device):
        return Invalid("bad_mac")
    ts = float(ts)
    if not math.isfinite(ts) or not (MIN_TS <= ts <= MAX_TS):
        return Invalid("bad_timestamp")
    location = ap_location.get(ap)
    if location is None:
        return Invalid("unknown_ap")
    return Observation(device, ap, location, ts, None if rssi is None else float(rssi),
                       pseudonymised)


class EventClock:
    """Maximum event time seen so far; decides ``far_future`` and ``too_late``.

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


def validate(
    raw: bytes | str | dict[str, Any], ap_location: dict[str, str], clock: EventClock
) -> Observation | Invalid:
    """Full validation of one record in arrival order (stateless checks, then the clock)."""
    obs = parse_observation(raw, ap_location)
    if isinstance(obs, Invalid):
        return obs
    reason = clock.admit(obs.ts)
    return Invalid(reason) if reason else obs
