"""RADIUS accounting fixtures → the real UDP receiver on loopback → the real broker."""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
import struct
from typing import Any

import pytest
from connect_support import (
    FIX,
    assert_no_raw_mac,
    check_oracle,
    consume,
    dlq_reasons,
    epoch,
    start_edge,
)

from connectors import radius
from connectors.edge import parse_mac

pytestmark = pytest.mark.e2e


def _packets(fx: dict[str, Any], secret: bytes) -> list[bytes]:
    out = []
    for i, r in enumerate(fx["requests"]):
        attrs = [(radius.ATTR_STATUS, struct.pack("!I", r["status"])),
                 (radius.ATTR_CALLING, r["calling"].encode()),
                 (radius.ATTR_CALLED, r["called"].encode()),
                 (radius.ATTR_SESSION_ID, r["session"].encode()),
                 (radius.ATTR_EVENT_TS, struct.pack("!I", int(epoch(r["event_ts"]))))]
        if "user" in r:
            attrs.append((radius.ATTR_USER_NAME, r["user"].encode()))
        out.append(radius.build_request(attrs, secret, ident=i))
    return out


def test_authenticators_follow_rfc2866() -> None:
    secret = b"s3cret"
    pkt = radius.build_request([(radius.ATTR_STATUS, struct.pack("!I", 1))], secret, ident=9)
    # RFC 2866 §3: MD5(Code+Identifier+Length+16 zero octets+request attributes+secret)
    want = hashlib.md5(pkt[:4] + b"\0" * 16 + pkt[20:] + secret).digest()
    assert pkt[4:20] == want == radius.request_authenticator(pkt, secret)
    resp = radius.response_packet(9, pkt[4:20], secret)
    assert resp[:4] == struct.pack("!BBH", 5, 9, 20)
    assert resp[4:] == hashlib.md5(resp[:4] + pkt[4:20] + secret).digest()
    assert radius.request_authenticator(pkt, b"other") != pkt[4:20]


def test_radius_end_to_end(kafka_bootstrap: str, topics: tuple[str, str], lab_site,  # type: ignore[no-untyped-def]
                           lab_resolver) -> None:
    fx = json.loads((FIX / "radius_accounting.json").read_text())
    secret = fx["secret"].encode()
    packets = _packets(fx, secret)
    forged = _packets(fx, b"not-the-secret")[0]

    async def scenario() -> dict[str, Any]:
        edge = await start_edge("radius", lab_resolver, kafka_bootstrap, topics)
        conn = radius.RadiusConnector(edge, secret)
        transport, port = await radius.serve(conn, "127.0.0.1", 0)
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.setblocking(False)
        sock.connect(("127.0.0.1", port))
        answers: dict[int, bytes] = {}

        async def exchange(pkt: bytes, wait_s: float = 5.0) -> bytes | None:
            await loop.sock_sendall(sock, pkt)
            try:
                return await asyncio.wait_for(loop.sock_recv(sock, 4096), wait_s)
            except TimeoutError:
                return None

        try:
            for pkt in packets:
                answers[pkt[1]] = await exchange(pkt)
            out = {"answers": answers,
                   "retransmit": await exchange(packets[0]),
                   "forged": await exchange(forged, 1.0),
                   "short": await exchange(b"\x04\x01\x00", 1.0),
                   "not_acct": await exchange(b"\x01" + packets[1][1:], 1.0)}
            out["after_errors"] = await exchange(packets[2])
        finally:
            sock.close()
            transport.close()
            await edge.flush()
            await edge.sink.stop()
        out["health"] = edge.metrics.health()
        return out

    out = asyncio.run(scenario())
    for pkt in packets:  # every valid request answered with a valid Accounting-Response
        resp = out["answers"][pkt[1]]
        assert resp == radius.response_packet(pkt[1], pkt[4:20], secret)
    assert out["retransmit"] == radius.response_packet(packets[0][1], packets[0][4:20], secret)
    assert out["forged"] is None and out["short"] is None and out["not_acct"] is None
    assert out["after_errors"] is not None
    h = out["health"]
    assert h["rejected"] == {"bad_authenticator": 1}
    assert h["ignored"] == {"stop": 1}
    assert h["duplicates"] == 2  # the retransmission and the repeat after the errors

    truth = [(parse_mac(r["calling"]), lab_resolver.resolve(r["called"].split(":")[0]),
              epoch(r["event_ts"])) for r in fx["requests"] if r["status"] in (1, 3)]
    obs = asyncio.run(consume(kafka_bootstrap, topics[0], expect=len(truth)))
    dlq = asyncio.run(consume(kafka_bootstrap, topics[1], expect=2))
    check_oracle(lab_site, truth, obs)
    assert dlq_reasons(dlq) == ["bad_radius:malformed", "bad_radius:not accounting-request"]
    blobs = [v for _, v in obs + dlq] + [k for k, _ in obs if k]
    assert_no_raw_mac(blobs, [m for m, _, _ in truth])
    assert b"alice@example.com" not in b"".join(blobs)
