"""Meraki Scanning API v3 fixtures → the real receiver on loopback → the real broker."""

from __future__ import annotations

import asyncio
import json
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

from connectors.edge import start_http
from connectors.meraki import MerakiReceiver, observations_of

pytestmark = pytest.mark.e2e


def test_meraki_end_to_end(kafka_bootstrap: str, topics: tuple[str, str], lab_site,  # type: ignore[no-untyped-def]
                           lab_resolver) -> None:
    fx = json.loads((FIX / "meraki_v3.json").read_text())

    async def scenario() -> dict[str, Any]:
        import aiohttp

        edge = await start_edge("meraki", lab_resolver, kafka_bootstrap, topics)
        rec = MerakiReceiver(edge, validator=fx["validator"], secret=fx["secret"],
                             max_body=64 * 1024)
        runner, port = await start_http(rec.app(), "127.0.0.1", 0)
        url = f"http://127.0.0.1:{port}/meraki"
        out: dict[str, Any] = {}
        try:
            async with aiohttp.ClientSession() as s:
                async with s.get(url) as r:
                    out["validator"] = (r.status, await r.text())
                statuses = []
                for post in fx["posts"]:
                    async with s.post(url, json=post) as r:
                        statuses.append(r.status)
                # a replay (Meraki retry) and an out-of-order (older) post
                async with s.post(url, json=fx["posts"][1]) as r:
                    statuses.append(r.status)
                async with s.post(url, json=fx["late_post"]) as r:
                    statuses.append(r.status)
                async with s.post(url, json=fx["ble_post"]) as r:
                    statuses.append(r.status)
                out["ok_statuses"] = statuses
                bad = dict(fx["posts"][0], secret="wrong-secret")
                async with s.post(url, json=bad) as r:
                    out["bad_secret"] = r.status
                nosecret = {k: v for k, v in fx["posts"][0].items() if k != "secret"}
                async with s.post(url, json=nosecret) as r:
                    out["no_secret"] = r.status
                async with s.post(url, data=b"{not json", headers={
                        "Content-Type": "application/json"}) as r:
                    out["malformed"] = r.status
                async with s.post(url, json=dict(fx["posts"][0], version="2.0")) as r:
                    out["v2"] = r.status
                big = b'{"secret": "supersecret", "pad": "' + b"x" * (70 * 1024) + b'"}'
                async with s.post(url, data=big) as r:
                    out["too_large"] = r.status
                # the receiver keeps running after every error
                async with s.get(url) as r:
                    out["still_up"] = r.status
                async with s.get(f"http://127.0.0.1:{port}/metrics") as r:
                    out["metrics"] = await r.text()
                async with s.get(f"http://127.0.0.1:{port}/health") as r:
                    out["health"] = await r.json()
        finally:
            await runner.cleanup()
            await edge.sink.stop()
        out["obs"] = await consume(kafka_bootstrap, topics[0], expect=len(fx["truth"]))
        out["dlq"] = await consume(kafka_bootstrap, topics[1], expect=3)
        return out

    out = asyncio.run(scenario())
    assert out["validator"] == (200, fx["validator"])
    assert out["ok_statuses"] == [200] * (len(fx["posts"]) + 3)
    assert out["bad_secret"] == 403 and out["no_secret"] == 403
    assert out["malformed"] == 400 and out["v2"] == 400
    assert out["too_large"] == 413
    assert out["still_up"] == 200

    truth = [(m, a, epoch(t)) for m, a, t in fx["truth"]]
    check_oracle(lab_site, truth, out["obs"])  # also: exactly one record per observation
    # unknown AP, bad client MAC, malformed body, v2 post; nothing for the bad secrets
    assert dlq_reasons(out["dlq"]) == ["bad_mac", "malformed_json", "unknown_ap",
                                       "unsupported_version"]
    h = out["health"]
    assert h["rejected"] == {"bad_secret": 2, "too_large": 1}
    replayed = sum(len(observations_of(c)) for c in fx["posts"][1]["data"]["observations"])
    assert h["duplicates"] == replayed  # the replayed post produced nothing new
    assert h["produced"] == len(truth)
    assert h["ignored"] == {"ble": 1}
    assert 'occustream_ingest_produced_total{source="meraki"}' in out["metrics"]
    assert 'occustream_ingest_dlq_total{source="meraki",reason="unknown_ap"} 1.0' in out["metrics"]
    macs = [m for m, _, _ in truth] + ["aa:bb:cc:dd:ee:01"]
    blobs = [v for _, v in out["obs"] + out["dlq"]] + [k for k, _ in out["obs"] if k]
    assert_no_raw_mac(blobs, macs)
    assert b"user@example.com" not in b"".join(blobs)
    assert b"supersecret" not in b"".join(blobs)
