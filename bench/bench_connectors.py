"""Connector load test: each receiver on loopback, a fixed number of messages, into the
embedded Tansu broker; sustained rate and a loss check.

For each receiver a fixed count of distinct observations is sent as fast as the client
side allows (Meraki: concurrent POSTs of 100 clients; Spaces: an NDJSON file; syslog:
one TCP connection with octet-counting framing, and UDP datagrams offered at
``UDP_OFFERED_PER_S`` in bursts of 100;
RADIUS: a window of 64 outstanding Accounting-Requests). The rate is observations
acknowledged by the broker per wall second, from the first send to the last
acknowledgement (RADIUS: to the last Accounting-Response, which is sent after the ack).
"Lost" = sent − records read back from the topic (0 expected; UDP is reported as
measured — datagrams the kernel drops are lost by design of syslog over UDP).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import struct
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from connectors import meraki, radius, spaces, syslog
from connectors.edge import DLQ_TOPIC, TOPIC, ApResolver, Edge, KafkaSink, start_http

SECRET = b"bench-connectors-secret-0123456789"
T0 = 1767780000.0
#: Offered rate of the UDP syslog run (datagrams/s, env BENCH_UDP_RATE): UDP has no
#: back-pressure, so the run measures loss at a fixed offered load, not a maximum.
UDP_OFFERED_PER_S = float(os.environ.get("BENCH_UDP_RATE", "3000"))


def _mac(i: int) -> str:
    return "02:00:" + ":".join(f"{(i >> s) & 0xFF:02x}" for s in (24, 16, 8, 0))


async def _count(bootstrap: str, topic: str, expect: int, timeout_s: float = 60.0) -> int:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                         auto_offset_reset="earliest", max_poll_records=20_000)
    await c.start()
    n = 0
    try:
        parts = await c._client.fetch_all_metadata()  # noqa: SLF001 - partitions, no group
        c.assign([TopicPartition(topic, p) for p in parts.partitions_for_topic(topic) or ()])
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        idle = 0
        while loop.time() < deadline and (n < expect or idle < 2):
            batch = await c.getmany(timeout_ms=300)
            got = sum(len(v) for v in batch.values())
            n += got
            idle = 0 if got else idle + 1
    finally:
        await c.stop()
    return n


async def _edge(source: str, resolver: ApResolver, bootstrap: str, prefix: str) -> Edge:
    sink = KafkaSink(bootstrap, prefix + TOPIC, prefix + DLQ_TOPIC)
    await sink.start()
    return Edge(source, SECRET, resolver, sink)


async def _meraki(edge: Edge, aps: list[str], n: int) -> float:
    import aiohttp

    rec = meraki.MerakiReceiver(edge, validator="v", secret="s")
    runner, port = await start_http(rec.app(), "127.0.0.1", 0)
    url = f"http://127.0.0.1:{port}/meraki"
    per_post = 100
    posts = []
    for p in range(n // per_post):
        obs = []
        for j in range(per_post):
            i = p * per_post + j
            t = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(T0 + i * 0.01))
            obs.append({"clientMac": _mac(i), "locations": [{
                "time": f"{t}.{int(i % 100):02d}Z",
                "rssiRecords": [{"apMac": aps[i % len(aps)], "rssi": -50}]}]})
        posts.append(json.dumps({"version": "3.0", "secret": "s", "type": "WiFi",
                                 "data": {"networkId": "N", "observations": obs}}).encode())
    t0 = time.perf_counter()
    try:
        async with aiohttp.ClientSession() as s:
            sem = asyncio.Semaphore(4)

            async def post(body: bytes) -> None:
                async with sem, s.post(url, data=body) as r:
                    if r.status != 200:
                        raise RuntimeError(f"meraki answered {r.status}")

            await asyncio.gather(*(post(b) for b in posts))
        return time.perf_counter() - t0
    finally:
        await runner.cleanup()


async def _spaces(edge: Edge, aps: list[str], n: int, tmp: Path) -> float:
    path = tmp / "firehose.ndjson"
    with path.open("w") as f:
        for i in range(n):
            ms = int((T0 + i * 0.01) * 1000)
            f.write(json.dumps({
                "recordUid": f"e{i}", "recordTimestamp": ms, "eventType": "DEVICE_ASSOCIATION",
                "deviceAssociation": {"device": {"macAddress": _mac(i)}, "lastSeen": ms,
                                      "apMacAddress": aps[i % len(aps)]}}) + "\n")
    conn = spaces.SpacesConnector(edge, spaces.ResumeState(tmp / "state.json"),
                                  flush_every=2000)
    t0 = time.perf_counter()
    await conn.run(spaces.file_lines(str(path)))
    return time.perf_counter() - t0


def _syslog_line(i: int, ap: str) -> bytes:
    ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(T0 + i * 0.01))
    return (f"<142>1 {ts}.{i % 100:02d}Z mc stm 1 - - <501100> <NOTI> |stm|  Assoc success "
            f"@ 10:00:00.000000: {_mac(i)}: AP 10.0.0.1-02:ff:00:00:00:01-{ap}").encode()


async def _syslog_tcp(edge: Edge, aps: list[str], n: int) -> float:
    conn = syslog.SyslogConnector(edge)
    closables, ports = await syslog.serve(conn, "127.0.0.1", None, 0)
    flusher = asyncio.ensure_future(edge.flush_forever(0.02))
    t0 = time.perf_counter()
    try:
        _, w = await asyncio.open_connection("127.0.0.1", ports["tcp"])
        for i in range(n):
            m = _syslog_line(i, aps[i % len(aps)])
            w.write(b"%d %s" % (len(m), m))
            if i % 1000 == 999:
                await w.drain()
        await w.drain()
        while edge.metrics.received < n:
            await asyncio.sleep(0.01)
        await edge.flush()
        w.close()
        return time.perf_counter() - t0
    finally:
        flusher.cancel()
        for c in closables:
            c.close()


async def _syslog_udp(edge: Edge, aps: list[str], n: int, rate: float) -> float:
    conn = syslog.SyslogConnector(edge)
    closables, ports = await syslog.serve(conn, "127.0.0.1", 0, None)
    flusher = asyncio.ensure_future(edge.flush_forever(0.02))
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    t0 = time.perf_counter()
    try:
        for i in range(n):
            sock.sendto(_syslog_line(i, aps[i % len(aps)]), ("127.0.0.1", ports["udp"]))
            if i % 100 == 99:  # bursts of 100 at the offered rate
                lag = t0 + (i + 1) / rate - time.perf_counter()
                await asyncio.sleep(max(lag, 0))
        deadline = time.perf_counter() + 5
        while edge.metrics.received < n and time.perf_counter() < deadline:
            await asyncio.sleep(0.01)
        await edge.flush()
        return time.perf_counter() - t0
    finally:
        sock.close()
        flusher.cancel()
        for c in closables:
            c.close()


async def _radius(edge: Edge, aps: list[str], n: int) -> float:
    secret = b"radius-bench"
    conn = radius.RadiusConnector(edge, secret)
    transport, port = await radius.serve(conn, "127.0.0.1", 0)
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    answered: set[int] = set()
    reqs = {}
    for i in range(n):
        attrs = [(radius.ATTR_STATUS, struct.pack("!I", 3)),
                 (radius.ATTR_CALLING, _mac(i).replace(":", "-").upper().encode()),
                 (radius.ATTR_CALLED, (aps[i % len(aps)] + ":ssid").encode()),
                 (radius.ATTR_EVENT_TS, struct.pack("!I", int(T0) + i))]
        reqs[i] = radius.build_request(attrs, secret, ident=i % 256)

    class Client(asyncio.DatagramProtocol):
        def datagram_received(self, data: bytes, addr: Any) -> None:
            key = data[4:20]
            i = by_auth.pop(key, None)
            if i is not None:
                answered.add(i)
                window.release()
                if len(answered) == n:
                    done.set()

    # responses are matched by their authenticator, MD5(5 ‖ id ‖ len ‖ request auth ‖ secret)
    by_auth = {radius.response_packet(p[1], p[4:20], secret)[4:20]: i for i, p in reqs.items()}
    window = asyncio.Semaphore(64)
    ctrans, _ = await loop.create_datagram_endpoint(Client, remote_addr=("127.0.0.1", port))
    t0 = time.perf_counter()
    try:
        for i in range(n):
            await window.acquire()
            ctrans.sendto(reqs[i])
        await asyncio.wait_for(done.wait(), 60)
        return time.perf_counter() - t0
    finally:
        ctrans.close()
        transport.close()


async def _one(name: str, bootstrap: str, resolver: ApResolver, aps: list[str], n: int,
               tmp: Path) -> dict[str, Any]:
    from infra.services import create_topics

    prefix = f"bench.{name}.{uuid.uuid4().hex[:6]}."
    create_topics(bootstrap, {prefix + TOPIC: 4, prefix + DLQ_TOPIC: 1})
    edge = await _edge(name, resolver, bootstrap, prefix)
    try:
        if name == "meraki":
            wall = await _meraki(edge, aps, n)
        elif name == "spaces":
            wall = await _spaces(edge, aps, n, tmp)
        elif name == "syslog_tcp":
            wall = await _syslog_tcp(edge, aps, n)
        elif name == "syslog_udp":
            wall = await _syslog_udp(edge, aps, n, UDP_OFFERED_PER_S)
        else:
            wall = await _radius(edge, aps, n)
    finally:
        await edge.sink.stop()
    stored = await _count(bootstrap, prefix + TOPIC, n)
    dlq = sum(edge.metrics.dlq.values())
    return {"sent": n, "produced": edge.metrics.produced, "stored": stored,
            "lost": n - stored, "dlq": dlq, "wall_s": round(wall, 2),
            "rate_per_s": round(edge.metrics.produced / wall)}


def run(quick: bool = False) -> dict:
    from infra.services import EmbeddedKafka
    from occupancy.buildings import load_site

    site = load_site("dbh")
    resolver = ApResolver(site)
    aps = [ap.id for ap in site.aps]
    sizes = ({"meraki": 5_000, "spaces": 20_000, "syslog_tcp": 20_000, "syslog_udp": 10_000,
              "radius": 5_000} if quick else
             {"meraki": 30_000, "spaces": 60_000, "syslog_tcp": 50_000, "syslog_udp": 30_000,
              "radius": 20_000})
    out: dict[str, Any] = {}
    broker = EmbeddedKafka().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name, n in sizes.items():
                res = asyncio.run(_one(name, broker.bootstrap, resolver, aps, n, Path(tmp)))
                for k, v in res.items():
                    out[f"{name}_{k}"] = v
    finally:
        broker.stop()
    return out


if __name__ == "__main__":  # pragma: no cover
    import sys

    print(json.dumps(run(quick="--quick" in sys.argv), indent=1))
