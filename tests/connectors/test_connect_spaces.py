"""Cisco Spaces Firehose NDJSON fixtures → the real connector (file and HTTP stream)
→ the real broker; resume from the last event id after a restart."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from connect_support import (
    FIX,
    assert_no_raw_mac,
    check_oracle,
    consume,
    dlq_reasons,
    fixture_lines,
    start_edge,
)

from connectors import spaces

pytestmark = pytest.mark.e2e

T0 = 1767780000.0  # 2026-01-07T10:00:00Z, the fixture's time origin
# (device, AP id, event time): the meaning of spaces_firehose.ndjson (lastSeen of a
# location update is 0.5 s before its record time; associations carry it equal)
TRUTH = [
    ("aa:bb:cc:dd:ee:01", "ap-lab-102", T0 + 29.5),
    ("aa:bb:cc:dd:ee:02", "ap-lab-101a", T0 + 60),
    ("aa:bb:cc:dd:ee:03", "ap-lab-202", T0 + 199.5),
    ("aa:bb:cc:dd:ee:01", "ap-lab-202", T0 + 319.5),
    ("aa:bb:cc:dd:ee:05", "ap-lab-201", T0 + 610),
    ("aa:bb:cc:dd:ee:03", "ap-lab-102", T0 + 899.5),
    ("aa:bb:cc:dd:ee:05", "ap-lab-202", T0 + 1209.5),
]
MORE = [
    ("aa:bb:cc:dd:ee:01", "ap-lab-102", T0 + 1229.5),
    ("aa:bb:cc:dd:ee:03", "ap-lab-202", T0 + 1499.5),
]


async def _run_file(path: Path, state_file: Path, resolver, bootstrap, topics):  # type: ignore[no-untyped-def]
    edge = await start_edge("spaces", resolver, bootstrap, topics)
    conn = spaces.SpacesConnector(edge, spaces.ResumeState(state_file))
    try:
        await conn.run(spaces.file_lines(str(path)))
    finally:
        await edge.sink.stop()
    return edge.metrics.health()


def test_spaces_file_with_resume(kafka_bootstrap: str, topics: tuple[str, str], lab_site,  # type: ignore[no-untyped-def]
                                 lab_resolver, tmp_path: Path) -> None:
    stream = tmp_path / "firehose.ndjson"
    lines = fixture_lines("spaces_firehose.ndjson")
    stream.write_text("\n".join(lines) + "\n")
    state = tmp_path / "state.json"

    h1 = asyncio.run(_run_file(stream, state, lab_resolver, kafka_bootstrap, topics))
    assert h1["produced"] == len(TRUTH)
    assert h1["duplicates"] == 1  # the repeated recordUid
    assert h1["ignored"] == {"keep_alive": 1, "disassociation": 1}
    saved = json.loads(state.read_text())
    assert saved["last_uid"] == "evt-dlu-006"

    # restart on the same stream, grown by two events: only the new ones are produced
    stream.write_text("\n".join(lines + fixture_lines("spaces_firehose_more.ndjson")) + "\n")
    h2 = asyncio.run(_run_file(stream, state, lab_resolver, kafka_bootstrap, topics))
    assert h2["produced"] == len(MORE)
    assert h2["dlq"] == {}  # the bad lines of the first run are not dead-lettered twice

    obs = asyncio.run(consume(kafka_bootstrap, topics[0], expect=len(TRUTH) + len(MORE)))
    dlq = asyncio.run(consume(kafka_bootstrap, topics[1], expect=2))
    check_oracle(lab_site, TRUTH + MORE, obs)
    assert dlq_reasons(dlq) == ["malformed_json", "unknown_ap"]
    macs = [m for m, _, _ in TRUTH] + ["aa:bb:cc:dd:ee:04", "aa:bb:cc:dd:ee:09"]
    blobs = [v for _, v in obs + dlq] + [k for k, _ in obs if k]
    assert_no_raw_mac(blobs, macs)
    assert b"jdoe@example.com" not in b"".join(blobs)


def test_spaces_http_stream_resumes_from_timestamp(kafka_bootstrap: str,  # type: ignore[no-untyped-def]
                                                   topics: tuple[str, str], lab_site,
                                                   lab_resolver, tmp_path: Path) -> None:
    lines = fixture_lines("spaces_firehose.ndjson")
    more = fixture_lines("spaces_firehose_more.ndjson")

    async def scenario() -> dict[str, Any]:
        from aiohttp import web

        from connectors.edge import start_http

        requests: list[dict[str, str]] = []

        async def firehose(request: web.Request) -> web.StreamResponse:
            requests.append(dict(request.query) | {"key": request.headers.get("X-API-KEY", "")})
            resp = web.StreamResponse()
            await resp.prepare(request)
            body = lines if len(requests) == 1 else lines[-3:] + more
            for ln in body:
                await resp.write(ln.encode() + b"\n")
            await resp.write_eof()
            return resp

        app = web.Application()
        app.router.add_get("/api/partners/v1/firehose/events", firehose)
        runner, port = await start_http(app, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{port}/api/partners/v1/firehose/events"
        state = spaces.ResumeState(tmp_path / "state.json")
        try:
            for _ in range(2):  # two connections: the second resumes
                edge = await start_edge("spaces", lab_resolver, kafka_bootstrap, topics)
                conn = spaces.SpacesConnector(edge, state)
                await conn.run(spaces.http_lines(url, "k-123", state, once=True))
                await edge.sink.stop()
        finally:
            await runner.cleanup()
        return {"requests": requests}

    out = asyncio.run(scenario())
    first, second = out["requests"]
    assert first["key"] == second["key"] == "k-123"
    assert "fromTimestamp" not in first
    # resumed from the last event's time minus the overlap
    assert int(second["fromTimestamp"]) == int((T0 + 1210) * 1000 - spaces.DEFAULT_OVERLAP_S * 1000)
    obs = asyncio.run(consume(kafka_bootstrap, topics[0], expect=len(TRUTH) + len(MORE)))
    check_oracle(lab_site, TRUTH + MORE, obs)  # the overlap re-sent 3 events: not doubled
    assert (FIX / "spaces_firehose.ndjson").is_file()
