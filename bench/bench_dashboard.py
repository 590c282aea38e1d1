"""Dashboard benchmarks (issue 6).

* **SSE fan-out**: N concurrent ``/api/events`` subscribers (500; 100 with --quick) on a
  dashboard running in its own process over the real Redis, started with
  ``--max-sse-clients N`` (the default cap, ``hardening.MAX_SSE_CLIENTS`` = 200, would
  answer the rest 503 — the figure is what a raised cap costs); a new tick is written to
  Redis, then ``occ:updates`` is published; latency = publish → the tick's event (a
  full snapshot of the building) fully received by a subscriber. p50/p95/max over
  all subscribers × repeats; ratio vs the same measurement with a single subscriber.
* **API history**: ``GET /api/history`` of one location over 30 days of 300 s ticks
  (8,640 points); p50/p95 over repeats; ratio vs the raw ``ZRANGEBYSCORE`` of the same
  key from this process (what the API adds on top of Redis).

The subscribers run in this process (one event loop, 2-core machine shared with the
server and Redis), so the fan-out figures include the clients' own reading time.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from typing import Any

import numpy as np

from dashboards.synthetic import seed
from infra.services import free_port, running_services
from occupancy import redis_layout as rl
from occupancy.buildings import load_site

ADMIN = "bench-admin-token"
ANALYST = "bench-analyst-token"
BUILDING = "dbh"


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q)) if xs else float("nan")


def _start_dashboard(redis_url: str, port: int, max_sse_clients: int) -> subprocess.Popen[bytes]:
    env = dict(os.environ, OCCUSTREAM_ADMIN_TOKEN=ADMIN, OCCUSTREAM_ANALYST_TOKEN=ANALYST)
    proc = subprocess.Popen([sys.executable, "-m", "occustream.cli", "dashboard", "--building",
                             BUILDING, "--redis-url", redis_url, "--port", str(port),
                             "--max-sse-clients", str(max_sse_clients)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=1)
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("dashboard did not start")


async def _fanout(base: str, redis_url: str, site: Any, n_subs: int, repeats: int,
                  first_tick: int) -> list[float]:
    import aiohttp
    import redis.asyncio as aioredis


    arrivals: dict[int, list[float]] = {}
    hello = asyncio.Event()
    connected = 0
    refused: list[str] = []

    async def subscriber(session: aiohttp.ClientSession) -> None:
        nonlocal connected
        url = f"{base}/api/events?mech=laplace&access_token={ANALYST}"
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=None)) as resp:
            if resp.status != 200:  # e.g. 503 past the server's SSE cap: say so, not a timeout
                refused.append(f"{resp.status} {(await resp.text())[:200]}")
                hello.set()
                return
            buf = b""
            async for chunk in resp.content.iter_any():
                buf += chunk
                while b"\n\n" in buf:
                    msg, buf = buf.split(b"\n\n", 1)
                    now = time.perf_counter()
                    if msg.startswith(b"event: hello"):
                        connected += 1
                        if connected == n_subs:
                            hello.set()
                    elif msg.startswith(b"event: tick"):
                        i = msg.find(b'"tick":')
                        tick = int(float(msg[i + 7: msg.find(b",", i)]))
                        arrivals.setdefault(tick, []).append(now)

    client = aioredis.Redis.from_url(redis_url)
    ids = list(site.location_ids)
    conn = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=conn) as session:
        tasks = [asyncio.create_task(subscriber(session)) for _ in range(n_subs)]
        try:
            await asyncio.wait_for(hello.wait(), 60)
        except TimeoutError:
            raise RuntimeError(f"only {connected}/{n_subs} subscribers connected in 60 s") from None
        if refused:
            raise RuntimeError(f"{len(refused)}/{n_subs} subscribers refused: {refused[0]}")
        lat: list[float] = []
        rng = np.random.default_rng(1)
        for r in range(repeats):
            tick = first_tick + 300 * r
            pipe = client.pipeline(transaction=False)
            for loc, v in zip(ids, rng.poisson(20, len(ids)), strict=True):
                doc = json.dumps({"tick": tick, "value": float(v)})
                pipe.hset(rl.latest("laplace"), loc, doc)
                pipe.zadd(rl.series("laplace", loc), {doc: tick})
            pipe.zadd(rl.ticks("laplace"), {str(tick): tick})
            await pipe.execute()  # the tick has landed in Redis
            t0 = time.perf_counter()
            await client.publish(rl.UPDATES_CHANNEL, json.dumps({"mech": "laplace",
                                                                 "tick": tick}))
            end = time.monotonic() + 30
            while len(arrivals.get(tick, [])) < n_subs and time.monotonic() < end:
                await asyncio.sleep(0.005)
            got = arrivals.get(tick, [])
            if len(got) < n_subs:
                raise RuntimeError(f"only {len(got)}/{n_subs} subscribers got tick {tick}")
            lat += [(t - t0) * 1000 for t in got]
            await asyncio.sleep(0.2)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    await client.aclose()
    return lat


def _history(base: str, redis_url: str, location: str, start: float, end: float,
             repeats: int) -> tuple[list[float], list[float], int]:
    import redis


    url = (f"{base}/api/history?mech=laplace&location={location}&start={start:.0f}"
           f"&end={end:.0f}")
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {ANALYST}"})
    api, raw = [], []
    n = 0
    for _ in range(3):  # warm-up
        urllib.request.urlopen(req).read()
    for _ in range(repeats):
        t = time.perf_counter()
        body = urllib.request.urlopen(req).read()
        api.append((time.perf_counter() - t) * 1000)
        n = len(json.loads(body)["points"])
    client = redis.Redis.from_url(redis_url)
    for _ in range(repeats):
        t = time.perf_counter()
        client.zrangebyscore(rl.series("laplace", location), start, end)
        raw.append((time.perf_counter() - t) * 1000)
    client.close()
    return api, raw, n


def run(quick: bool = False) -> dict[str, Any]:
    """Run both benchmarks; return their figures."""
    import redis


    n_subs = 100 if quick else 500
    repeats = 5 if quick else 15
    site = load_site(BUILDING)
    out: dict[str, Any] = {"building": BUILDING, "locations": len(site.location_ids)}
    with running_services(kafka=False, redis=True) as svc:
        url = svc.redis_url or ""
        client = redis.Redis.from_url(url)
        client.flushdb()
        start = 1_790_000_000 - 1_790_000_000 % 86400
        w = seed(client, site, days=2, last_day_ticks=100, mechs=("laplace",), start=start)
        # 30 days of one location's history (8,640 ticks)
        loc = site.location_ids[0]
        t30 = start - 30 * 86400 + 300 * np.arange(30 * 288)
        pipe = client.pipeline(transaction=False)
        for t in t30:
            pipe.zadd(rl.series("laplace", loc),
                      {json.dumps({"tick": int(t), "value": 1.0}): float(t)})
        pipe.execute()
        client.close()
        port = free_port()
        proc = _start_dashboard(url, port, n_subs + 1)
        base = f"http://127.0.0.1:{port}"
        try:
            first = int(w["ticks"][-1]) + 300
            one = asyncio.run(_fanout(base, url, site, 1, repeats, first))
            many = asyncio.run(_fanout(base, url, site, n_subs, repeats,
                                       first + 300 * repeats))
            api, raw, n_points = _history(base, url, loc, float(t30[0]), float(t30[-1]),
                                          30 if quick else 100)
        finally:
            proc.terminate()
            proc.wait(10)
    out.update({
        "sse_subscribers": n_subs,
        "sse_client_cap": n_subs + 1,
        "sse_repeats": repeats,
        "sse_latency_p50_ms": round(_pct(many, 50), 1),
        "sse_latency_p95_ms": round(_pct(many, 95), 1),
        "sse_latency_max_ms": round(max(many), 1),
        "sse_single_subscriber_p95_ms": round(_pct(one, 95), 1),
        "sse_p95_ratio_vs_single": round(_pct(many, 95) / _pct(one, 95), 1),
        "api_history_points": n_points,
        "api_history_p50_ms": round(statistics.median(api), 1),
        "api_history_p95_ms": round(_pct(api, 95), 1),
        "redis_zrange_p50_ms": round(statistics.median(raw), 1),
        "api_history_p50_ratio_vs_redis": round(statistics.median(api) / statistics.median(raw),
                                                1),
    })
    return out
