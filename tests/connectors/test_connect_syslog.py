"""Controller syslog fixtures → the real UDP and TCP listeners on loopback → the real broker."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest
from connect_support import (
    assert_no_raw_mac,
    check_oracle,
    consume,
    dlq_reasons,
    epoch,
    fixture_lines,
    start_edge,
)

from connectors import syslog

pytestmark = pytest.mark.e2e

NOW = epoch("2026-01-07T12:00:00Z")  # pins the year of the RFC 3164 lines
TRUTH = [
    ("38:48:4c:22:52:16", "ap-lab-101a", epoch("2026-01-07T10:00:20Z")),
    ("74:da:38:56:0a:80", "ap-lab-201", epoch("2026-01-07T10:03:00Z")),
    ("18:fe:34:fc:5a:7f", "ap-lab-102", epoch("2026-01-07T10:05:00Z")),
    ("74:4d:28:12:0a:81", "ap-lab-202", epoch("2026-01-07T10:06:30Z")),
    ("aa:bb:cc:dd:ee:01", "ap-lab-101b", epoch("2026-01-07T10:06:10Z")),  # Aruba BSSID alias
    ("aa:bb:cc:dd:ee:01", "ap-lab-201", epoch("2026-01-07T10:16:40Z")),
    ("18:fe:34:fc:5a:7f", "ap-lab-101b", epoch("2026-01-07T10:21:00Z")),
]


def test_header_parsing_and_year_inference() -> None:
    ts, msg = syslog.parse_header("<134>Dec 31 23:59:59 host tag: hello", NOW)
    assert ts == epoch("2025-12-31T23:59:59Z") and msg.endswith("hello")  # not next December
    ts, _ = syslog.parse_header("<134>Jan  7 10:00:00 host tag: x", NOW)
    assert ts == epoch("2026-01-07T10:00:00Z")
    ts, msg = syslog.parse_header("<13>1 2026-01-07T11:00:00.5+01:00 h a p m - hi", NOW)
    assert ts == epoch("2026-01-07T10:00:00.5Z") and msg == "hi"
    with pytest.raises(ValueError):
        syslog.parse_header("<13>1 2026-01-07T11:00:00 h a p m - no zone", NOW)
    with pytest.raises(ValueError):
        syslog.parse_header("no pri", NOW)


@pytest.mark.parametrize(("line", "vendor", "kind"), [
    ("<134>Jan  7 10:00:20 wlc *apfMsConnTask_3: Jan 07 10:00:20.187: 38:48:4c:22:52:16 "
     "Association received from mobile on AP 00:18:0a:13:dd:b0", "cisco-wlc", "assoc"),
    ("<190>1 2026-01-07T10:09:00Z c9800 - - - - %CLIENT_ORCH_LOG-6-CLIENT_DELETED: wncd: "
     "Client with MAC: 18fe.34fc.5a7f deleted", "cisco-9800", "disassoc"),
    ("<142>Jan  7 10:08:00 mc stm[1]: <501102> <NOTI> |stm|  Disassoc from sta: "
     "aa:bb:cc:dd:ee:01: AP 10.1.1.21-00:24:6c:10:01:b0-ap105 Reason x", "aruba", "disassoc"),
])
def test_vendor_patterns(line: str, vendor: str, kind: str) -> None:
    _, msg = syslog.parse_header(line, NOW)
    hit = syslog.classify(msg)
    assert hit is not None and (hit[0].vendor, hit[0].kind) == (vendor, kind)


def test_syslog_udp_and_tcp_end_to_end(kafka_bootstrap: str, topics: tuple[str, str],  # type: ignore[no-untyped-def]
                                       lab_site, lab_resolver) -> None:
    lines = fixture_lines("syslog_controllers.log")
    half = len(lines) // 2

    async def scenario() -> dict[str, Any]:
        edge = await start_edge("syslog", lab_resolver, kafka_bootstrap, topics)
        conn = syslog.SyslogConnector(edge, now=lambda: NOW)
        closables, ports = await syslog.serve(conn, "127.0.0.1", 0, 0)
        flusher = asyncio.ensure_future(edge.flush_forever(0.02))
        loop = asyncio.get_running_loop()
        try:
            # first half over UDP, one datagram each
            udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            for ln in lines[:half]:
                udp.sendto(ln.encode(), ("127.0.0.1", ports["udp"]))
            udp.close()
            # second half over TCP: octet counting and LF framing mixed on one connection
            _, w = await asyncio.open_connection("127.0.0.1", ports["tcp"])
            for i, ln in enumerate(lines[half:]):
                data = ln.encode()
                w.write(b"%d %s" % (len(data), data) if i % 2 else data + b"\n")
            await w.drain()
            # a broken frame closes that connection only; the server keeps serving
            _, w2 = await asyncio.open_connection("127.0.0.1", ports["tcp"])
            w2.write(b"999999999 x")
            await w2.drain()
            deadline = loop.time() + 10
            while edge.metrics.received < len(lines) and loop.time() < deadline:
                await asyncio.sleep(0.05)
            w.close()
            _, w3 = await asyncio.open_connection("127.0.0.1", ports["tcp"])
            w3.write(lines[0].encode() + b"\n")  # after the error: still accepted (dedupe)
            await w3.drain()
            await asyncio.sleep(0.3)
            w3.close()
            await edge.flush()
        finally:
            flusher.cancel()
            for c in closables:
                c.close()
            await edge.sink.stop()
        return edge.metrics.health()

    h = asyncio.run(scenario())
    assert h["received"] == len(lines) + 1
    assert h["produced"] == len(TRUTH)
    assert h["duplicates"] == 1
    assert h["ignored"] == {"disassociation": 2}
    obs = asyncio.run(consume(kafka_bootstrap, topics[0], expect=len(TRUTH)))
    dlq = asyncio.run(consume(kafka_bootstrap, topics[1], expect=4))
    check_oracle(lab_site, TRUTH, obs)
    assert dlq_reasons(dlq) == ["bad_syslog:frame length", "bad_syslog:no <PRI>",
                                "unknown_ap", "unknown_message"]
    blobs = [v for _, v in obs + dlq] + [k for k, _ in obs if k]
    assert_no_raw_mac(blobs, [m for m, _, _ in TRUTH])
    assert b"10.0.0.5" not in b"".join(blobs)  # the admin's address in the unknown line
