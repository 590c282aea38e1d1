"""RADIUS accounting receiver (RFC 2866) over UDP.

Packet (RFC 2866 §3): Code (1 octet; 4 = Accounting-Request, 5 = Accounting-Response),
Identifier (1), Length (2), Authenticator (16), then attributes (Type, Length, Value).

Request Authenticator (§3): MD5(Code ‖ Identifier ‖ Length ‖ 16 zero octets ‖
attributes ‖ shared secret). A request whose authenticator does not verify is silently
discarded (§3 "…the Accounting-Request MUST be silently discarded") and counted
(``rejected{reason="bad_authenticator"}``) — no response, no DLQ. A valid request is
answered with an Accounting-Response whose Response Authenticator is MD5(5 ‖ Identifier ‖
Length ‖ Request Authenticator ‖ secret) (§3), sent only after Kafka acknowledged the
observation, so the NAS retransmits what was not stored.

Attributes used: Acct-Status-Type (40; §5.1: 1 Start, 2 Stop, 3 Interim-Update,
7 Accounting-On, 8 Accounting-Off), Called-Station-Id (30; the AP, ``AP-MAC[:SSID]`` as
RFC 3580 §3.20 recommends), Calling-Station-Id (31; the device MAC), Event-Timestamp
(55; RFC 2869 §5.3, epoch seconds) and Acct-Delay-Time (41; §5.2: the event happened
that many seconds before the packet was sent).

Start and Interim-Update give an observation of the device at the AP; Stop ends the
session and is counted (``ignored{reason="stop"}``) — the pipeline ends a presence by
time; Accounting-On/Off are acknowledged and counted. A retransmission (same client,
Identifier and Request Authenticator) is answered again but produces no second record.
A packet too short, with a bad length or not an Accounting-Request is dead-lettered
(``bad_radius``, as a redacted attribute summary).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hashlib
import hmac
import logging
import socket
import struct
import time
from typing import Any

from connectors.edge import Edge

log = logging.getLogger(__name__)

ACCOUNTING_REQUEST, ACCOUNTING_RESPONSE = 4, 5
ATTR_USER_NAME, ATTR_CALLED, ATTR_CALLING = 1, 30, 31
ATTR_STATUS, ATTR_DELAY, ATTR_SESSION_ID, ATTR_EVENT_TS = 40, 41, 44, 55
STATUS = {1: "start", 2: "stop", 3: "interim", 7: "accounting-on", 8: "accounting-off"}


def parse_packet(data: bytes) -> tuple[int, int, bytes, dict[int, list[bytes]]]:
    """(code, identifier, authenticator, attributes) of a packet; ValueError if malformed."""
    if len(data) < 20:
        raise ValueError("shorter than 20 octets")
    code, ident, length = struct.unpack("!BBH", data[:4])
    if not 20 <= length <= 4096 or length > len(data):
        raise ValueError(f"bad length {length}")
    attrs: dict[int, list[bytes]] = collections.defaultdict(list)
    i = 20
    while i < length:
        if i + 2 > length:
            raise ValueError("truncated attribute")
        t, ln = data[i], data[i + 1]
        if ln < 2 or i + ln > length:
            raise ValueError(f"bad attribute length {ln}")
        attrs[t].append(data[i + 2:i + ln])
        i += ln
    return code, ident, data[4:20], attrs


def request_authenticator(packet: bytes, secret: bytes) -> bytes:
    """The Request Authenticator an Accounting-Request must carry (RFC 2866 §3)."""
    length = struct.unpack("!H", packet[2:4])[0]
    return hashlib.md5(packet[:4] + b"\x00" * 16 + packet[20:length] + secret).digest()


def response_packet(ident: int, req_auth: bytes, secret: bytes) -> bytes:
    """An Accounting-Response without attributes (RFC 2866 §3, §4.2)."""
    head = struct.pack("!BBH", ACCOUNTING_RESPONSE, ident, 20)
    return head + hashlib.md5(head + req_auth + secret).digest()


def build_request(attrs: list[tuple[int, bytes]], secret: bytes, ident: int = 0) -> bytes:
    """An Accounting-Request with a valid authenticator (for tests, benches and NAS sims)."""
    body = b"".join(struct.pack("!BB", t, len(v) + 2) + v for t, v in attrs)
    head = struct.pack("!BBH", ACCOUNTING_REQUEST, ident, 20 + len(body))
    auth = hashlib.md5(head + b"\x00" * 16 + body + secret).digest()
    return head + auth + body


def _int(values: list[bytes] | None) -> int | None:
    if not values or len(values[0]) != 4:
        return None
    return int(struct.unpack("!I", values[0])[0])


def _text(values: list[bytes] | None) -> str | None:
    return values[0].decode("utf-8", "replace") if values else None


def summary(code: int, attrs: dict[int, list[bytes]]) -> dict[str, Any]:
    """A DLQ-safe description of a packet: attribute types and lengths, no values."""
    return {"code": code, "attributes": sorted((t, len(v)) for t, vs in attrs.items()
                                               for v in vs)}


class RadiusConnector:
    """Accounting-Request → observation + Accounting-Response (module docstring)."""

    def __init__(self, edge: Edge, secret: bytes, *, dedupe_s: float = 30.0) -> None:
        self.edge, self.secret = edge, secret
        self.transport: Any = None
        self._recent: collections.OrderedDict[tuple[Any, int, bytes], float] = (
            collections.OrderedDict())
        self.dedupe_s = dedupe_s
        self._tasks: set[asyncio.Task[None]] = set()

    def packet(self, data: bytes, addr: Any) -> bool:
        """Handle one datagram; True if it must be answered (after the next flush)."""
        edge = self.edge
        edge.metrics.received += 1
        try:
            code, ident, auth, attrs = parse_packet(data)
        except ValueError as exc:
            edge.reject({"error": str(exc), "octets": len(data)}, "bad_radius:malformed")
            return False
        if code != ACCOUNTING_REQUEST:
            edge.reject(summary(code, attrs), "bad_radius:not accounting-request")
            return False
        if not hmac.compare_digest(request_authenticator(data, self.secret), auth):
            edge.refuse("bad_authenticator")
            return False
        now = time.monotonic()
        key = (addr, ident, auth)
        while self._recent and next(iter(self._recent.values())) < now - self.dedupe_s:
            self._recent.popitem(last=False)
        if key in self._recent:
            edge.metrics.duplicates += 1
            return True
        self._recent[key] = now
        status = STATUS.get(_int(attrs.get(ATTR_STATUS)) or 0)
        if status is None:
            edge.reject(summary(code, attrs), "missing_field:Acct-Status-Type")
            return True  # a valid request: acknowledged, not used
        if status in ("stop", "accounting-on", "accounting-off"):
            edge.ignore(status)
            return True
        ts = _int(attrs.get(ATTR_EVENT_TS))
        if ts is None:
            ts = time.time() - (_int(attrs.get(ATTR_DELAY)) or 0)
        called = _text(attrs.get(ATTR_CALLED))
        ap = called.rsplit(":", 1)[0] if called and called.count(":") in (1, 6) else called
        mac = _text(attrs.get(ATTR_CALLING))
        edge.observe(mac, ap, float(ts), raw=summary(code, attrs))
        return True

    def answer(self, data: bytes, addr: Any) -> None:
        """Send the Accounting-Response after the edge flushed the record."""
        ident, auth = data[1], data[4:20]

        async def _reply() -> None:
            await self.edge.flush()
            if self.transport is not None:
                self.transport.sendto(response_packet(ident, auth, self.secret), addr)

        task = asyncio.ensure_future(_reply())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


class _Udp(asyncio.DatagramProtocol):
    def __init__(self, conn: RadiusConnector) -> None:
        self.conn = conn

    def connection_made(self, transport: Any) -> None:
        self.conn.transport = transport

    def datagram_received(self, data: bytes, addr: Any) -> None:
        if self.conn.packet(data, addr):
            self.conn.answer(data, addr)


async def serve(conn: RadiusConnector, host: str, port: int) -> tuple[Any, int]:
    """Start the UDP listener; returns (transport, bound port)."""
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_datagram_endpoint(lambda: _Udp(conn),
                                                       local_addr=(host, port))
    with contextlib.suppress(OSError):  # absorb bursts (capped by net.core.rmem_max)
        transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF,
                                                      8 << 20)
    return transport, transport.get_extra_info("sockname")[1]
