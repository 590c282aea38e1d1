"""Syslog from wireless controllers: RFC 3164 and RFC 5424 over UDP and TCP.

Transport:

* UDP (RFC 5426): one message per datagram;
* TCP (RFC 6587): per frame, octet counting (``MSG-LEN SP MSG``, §3.4.1) when the frame
  starts with a digit, else non-transparent framing ending at LF (§3.4.2). A connection
  that sends an impossible length is dead-lettered and closed; the server keeps running.

Header: RFC 5424 (``<PRI>1 TIMESTAMP HOST APP PROCID MSGID SD MSG``; the timestamp is
RFC 3339 with its zone) or RFC 3164 (``<PRI>Mmm dd hh:mm:ss HOST TAG: MSG``). Cisco
controllers put a sequence number and ``*``/``.`` before the 3164 time
(``<PRI>123: *Jan  5 10:00:00.123: %FAC-SEV-MNEMONIC: …``), which is accepted. A 3164
time has no year and no zone: it is read as UTC (configure the controllers to log in UTC,
docs/CONNECT.md) in the current year, or the previous one if that would put it more than
a day in the future. A message without any time gets the receive time.

Messages: one pattern set per vendor (:data:`PATTERNS`), each classifying a message as
``assoc`` (association / reassociation / roam: an observation at the AP), or
``disassoc`` (counted as ``ignored{reason="disassociation"}``; the pipeline ends a
presence by time, ``validity_s``). A message no pattern knows is counted and
dead-lettered (``unknown_message``, MACs redacted).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import socket
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from connectors.edge import Edge

log = logging.getLogger(__name__)

MAX_MESSAGE = 64 * 1024
#: UDP receive buffer asked for (the kernel caps it at net.core.rmem_max).
UDP_RCVBUF = 8 << 20
_MAC = r"(?:[0-9A-Fa-f]{2}[:\-]){5}[0-9A-Fa-f]{2}|[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}"
_MONTHS = {m: i + 1 for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"))}

_RFC5424 = re.compile(
    r"^<(?P<pri>\d{1,3})>(?P<ver>[1-9]\d?) (?P<ts>\S+) (?P<host>\S+) (?P<app>\S+) "
    r"(?P<proc>\S+) (?P<msgid>\S+) (?P<sd>-|(?:\[(?:[^\]\\]|\\.)*\])+)(?: (?P<msg>.*))?$",
    re.DOTALL)
_RFC3164_PRI = re.compile(r"^<(?P<pri>\d{1,3})>")
_BSD_TIME = re.compile(
    r"(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +(?P<day>\d{1,2}) "
    r"(?:(?P<year>\d{4}) )?(?P<h>\d{2}):(?P<m>\d{2}):(?P<s>\d{2})(?P<frac>\.\d+)?")


@dataclass(frozen=True)
class Pattern:
    """One message shape of one vendor."""

    vendor: str
    kind: str  # "assoc" or "disassoc"
    regex: re.Pattern[str]


def _p(vendor: str, kind: str, rx: str) -> Pattern:
    return Pattern(vendor, kind, re.compile(rx.replace("{MAC}", _MAC), re.IGNORECASE))


#: Per-vendor patterns, tried in order; named groups ``mac`` (client) and ``ap``
#: (AP name, AP MAC or BSSID) and optionally ``bssid``.
PATTERNS: tuple[Pattern, ...] = (
    # Cisco AireOS WLC (client debug / msglog lines)
    _p("cisco-wlc", "assoc",
       r"(?P<mac>{MAC}) (?:Re)?[Aa]ssociation received from mobile on (?:AP|BSSID) (?P<ap>{MAC})"),
    _p("cisco-wlc", "disassoc",
       r"(?P<mac>{MAC}) (?:Sent )?(?:Disassociation|Deauthentication) (?:received from mobile"
       r"|to mobile)(?: on (?:AP|BSSID) (?P<ap>{MAC}))?"),
    # Cisco Catalyst 9800 (IOS XE) client state-change syslog
    _p("cisco-9800", "assoc",
       r"%CLIENT_ORCH_LOG-\d-CLIENT_(?:ADDED_TO_RUN_STATE|ROAMED?|MOBILITY\w*):.*?"
       r"MAC:? *\(?(?P<mac>{MAC})\)?.*?\bAP(?:[ _]?name)? *[:=]? *\(?(?P<ap>[\w.:\-]+)\)?"),
    _p("cisco-9800", "disassoc",
       r"%CLIENT_ORCH_LOG-\d-CLIENT_(?:DELETED|REMOVED|DEL\w*):.*?MAC:? *\(?(?P<mac>{MAC})\)?"),
    # Aruba (ArubaOS stm messages; AP as <ip>-<bssid>-<name>)
    _p("aruba", "assoc",
       r"\|stm\|.*?(?:Re)?[Aa]ssoc(?:iation)? success\b.*?(?P<mac>{MAC})\b.*?"
       r"AP [\d.]+-(?P<bssid>{MAC})-(?P<ap>\S+)"),
    _p("aruba", "disassoc",
       r"\|stm\|.*?(?:Disassoc from sta|Deauth (?:to|from) sta):? *(?P<mac>{MAC})\b"),
)


def parse_header(line: str, now: float | None = None) -> tuple[float | None, str]:
    """(event time or None, message part) of one syslog line; raises ValueError if no PRI."""
    now = time.time() if now is None else now
    m = _RFC5424.match(line)
    if m:
        ts_s = m.group("ts")
        ts = None
        if ts_s != "-":
            try:
                dt = datetime.fromisoformat(ts_s.replace("Z", "+00:00"))
            except ValueError:
                raise ValueError("bad RFC 5424 timestamp") from None
            if dt.tzinfo is None:
                raise ValueError("RFC 5424 timestamp without zone")
            ts = dt.timestamp()
        msg = m.group("msg") or ""
        return ts, msg.lstrip("\ufeff")
    m = _RFC3164_PRI.match(line)
    if not m:
        raise ValueError("no <PRI>")
    rest = line[m.end():]
    t = _BSD_TIME.search(rest[:80])
    if t is None:
        return None, rest
    year = int(t.group("year")) if t.group("year") else datetime.fromtimestamp(now, UTC).year
    sec = float(t.group("s") + (t.group("frac") or ""))
    try:
        dt = datetime(year, _MONTHS[t.group("mon")], int(t.group("day")), int(t.group("h")),
                      int(t.group("m")), 0, tzinfo=UTC)
    except ValueError:
        raise ValueError("bad RFC 3164 timestamp") from None
    ts = dt.timestamp() + sec
    if not t.group("year") and ts > now + 86400:
        ts = dt.replace(year=year - 1).timestamp() + sec
    return ts, rest


def classify(msg: str) -> tuple[Pattern, dict[str, str]] | None:
    """The first vendor pattern that matches the message, with its groups."""
    for p in PATTERNS:
        m = p.regex.search(msg)
        if m:
            return p, {k: v for k, v in m.groupdict().items() if v}
    return None


class SyslogConnector:
    """Turns syslog messages into observations through an :class:`Edge`."""

    def __init__(self, edge: Edge, *, now: Any = time.time) -> None:
        self.edge = edge
        self.now = now  # the clock that dates RFC 3164 years and undated messages

    def message(self, data: bytes | str) -> None:
        """Process one syslog message (a datagram or one TCP frame)."""
        edge = self.edge
        edge.metrics.received += 1
        line = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        line = line.rstrip("\r\n\x00")
        if not line:
            return
        now = self.now()
        try:
            ts, msg = parse_header(line, now)
        except ValueError as exc:
            edge.reject(line, f"bad_syslog:{exc}")
            return
        hit = classify(msg)
        if hit is None:
            edge.reject(line, "unknown_message")
            return
        pat, g = hit
        if pat.kind == "disassoc":
            edge.ignore("disassociation")
            return
        ap = g.get("ap")
        if edge.resolver.resolve(ap) is None and g.get("bssid"):
            ap = g["bssid"]
        edge.observe(g.get("mac"), ap, ts if ts is not None else now, raw=line)


class _Udp(asyncio.DatagramProtocol):
    def __init__(self, conn: SyslogConnector) -> None:
        self.conn = conn

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self.conn.message(data)


async def _tcp_client(conn: SyslogConnector, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
    edge = conn.edge
    try:
        while True:
            first = await reader.read(1)
            if not first:
                return
            if first.isdigit():
                digits = first + await reader.readuntil(b" ")
                try:
                    n = int(digits[:-1])
                except ValueError:
                    n = -1
                if not 0 < n <= MAX_MESSAGE:
                    edge.reject(digits[:32], "bad_syslog:frame length")
                    return
                conn.message(await reader.readexactly(n))
            else:
                rest = await reader.readuntil(b"\n")
                conn.message(first + rest)
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        return
    finally:
        writer.close()


async def serve(conn: SyslogConnector, host: str, udp_port: int | None,
                tcp_port: int | None) -> tuple[list[Any], dict[str, int]]:
    """Start the UDP and/or TCP listeners; returns (closables, bound ports)."""
    loop = asyncio.get_running_loop()
    closables: list[Any] = []
    ports: dict[str, int] = {}
    if udp_port is not None:
        transport, _ = await loop.create_datagram_endpoint(lambda: _Udp(conn),
                                                           local_addr=(host, udp_port))
        sock = transport.get_extra_info("socket")
        with contextlib.suppress(OSError):  # absorb bursts (capped by net.core.rmem_max)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, UDP_RCVBUF)
        closables.append(transport)
        ports["udp"] = transport.get_extra_info("sockname")[1]
    if tcp_port is not None:
        server = await asyncio.start_server(lambda r, w: _tcp_client(conn, r, w), host,
                                            tcp_port, limit=MAX_MESSAGE + 64)
        closables.append(server)
        ports["tcp"] = server.sockets[0].getsockname()[1]
    return closables, ports
