"""Incident lifecycle events over SSE and the incidents API with a plain HTTP client."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from dash_support import TOKENS, run_async

from dashboards.synthetic import write_decisions

pytestmark = pytest.mark.e2e

T0 = 1_790_000_000 - 1_790_000_000 % 3600
DEC = {"location": "hall-110", "capacity": 150, "algorithm": "tslm", "beta": 0.05,
       "ex_post_epsilon": 0.77}


async def _events(resp: Any, n: int, timeout_s: float = 10.0) -> list[tuple[str, str, Any]]:
    out: list[tuple[str, str, Any]] = []
    buf = b""

    async def read() -> None:
        nonlocal buf
        async for chunk in resp.content.iter_any():
            buf += chunk
            while b"\n\n" in buf:
                msg, buf = buf.split(b"\n\n", 1)
                fields = dict(line.split(": ", 1) for line in msg.decode().splitlines()
                              if ": " in line and not line.startswith(":"))
                out.append((fields.get("event", ""), fields.get("id", ""),
                            json.loads(fields.get("data", "null"))))
                if len(out) >= n:
                    return

    await asyncio.wait_for(read(), timeout_s)
    return out


def test_sse_carries_the_lifecycle_and_replays_it(served: Any, redis_client: Any) -> None:
    import aiohttp

    url = f"{served.url}/api/events?access_token={TOKENS.analyst}"
    api = f"{served.url}/api/incidents"
    admin = {"Authorization": f"Bearer {TOKENS.admin}"}

    async def scenario() -> dict[str, Any]:
        res: dict[str, Any] = {}
        async with aiohttp.ClientSession() as s:
            async with s.get(url) as r:
                assert (await _events(r, 1))[0][0] == "hello"
                write_decisions(redis_client, T0, [DEC], {"hall-110": 160.0}, with_alerts=False)
                write_decisions(redis_client, T0 + 300, [DEC], {"hall-110": 171.0},
                                with_alerts=False)
                res["live"] = await _events(r, 2)
            # disconnected: the quiet period passes and the incident resolves meanwhile
            for k in range(2, 6):
                write_decisions(redis_client, T0 + 300 * k, [], {"hall-110": 10.0})
            async with s.get(url, headers={"Last-Event-ID": res["live"][-1][1]}) as r:
                res["replay"] = await _events(r, 2)
            inc_id = res["live"][0][2]["incident"]["id"]
            async with s.post(f"{api}/{inc_id}/ack",
                              headers={"Authorization": f"Bearer {TOKENS.analyst}"}) as r:
                res["ack_analyst"] = r.status
            acks = []
            for _ in range(2):
                async with s.post(f"{api}/{inc_id}/ack", headers=admin) as r:
                    acks.append(await r.json())
            res["acks"] = acks
            async with s.post(f"{api}/inc-nope/ack", headers=admin) as r:
                res["ack_unknown"] = r.status
            async with s.get(api, headers=admin) as r:
                res["list"] = await r.json()
            async with s.get(f"{api}?format=csv", headers=admin) as r:
                res["csv"] = await r.text()
        return res

    res = run_async(scenario())
    assert [(e, d["event"]) for e, _, d in res["live"]] == [("incident", "open"),
                                                           ("incident", "update")]
    _, *replayed = res["replay"]
    assert [(e, d["event"]) for e, _, d in replayed] == [("incident", "resolve")]
    assert replayed[0][2]["incident"]["state"] == "resolved"
    for _, _, d in res["live"] + replayed:
        assert "ex_post_epsilon" not in json.dumps(d)
        assert d["key"] and d["incident"]["id"] == res["live"][0][2]["incident"]["id"]
    assert res["ack_analyst"] == 403 and res["ack_unknown"] == 400
    assert res["acks"][0] == res["acks"][1]  # acknowledged once
    (item,) = res["list"]["incidents"]
    assert item["state"] == "resolved" and item["acknowledged"] == res["acks"][0]["acknowledged"]
    assert item["peak"] == 171.0 and item["decisions"] == {"tick": 2, "hour": 0}
    header, row = res["csv"].strip().splitlines()
    assert header.startswith("id,location,state") and ",resolved," in row


def test_incidents_list_open_first(served: Any, redis_client: Any) -> None:
    import urllib.request

    # lib-1: an earlier crowd, resolved; hall-101: opened later, still open; hall-110:
    # opened first and still open
    write_decisions(redis_client, T0, [{**DEC}], {"hall-110": 151.0})
    write_decisions(redis_client, T0 + 300, [{**DEC, "location": "lib-1"}])
    for k in range(2, 5):
        write_decisions(redis_client, T0 + 300 * k, [DEC])
    write_decisions(redis_client, T0 + 1500, [DEC, {**DEC, "location": "hall-101"}])
    req = urllib.request.Request(f"{served.url}/api/incidents",
                                 headers={"Authorization": f"Bearer {TOKENS.analyst}"})
    got = json.loads(urllib.request.urlopen(req, timeout=10).read())["incidents"]
    assert [(i["location"], i["state"]) for i in got] == [
        ("hall-101", "open"), ("hall-110", "open"), ("lib-1", "resolved")]
