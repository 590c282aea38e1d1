"""The SSE stream with a plain HTTP client: ticks, alerts, filtering, catch-up on reconnect."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from dash_support import TOKENS, run_async

from dashboards.synthetic import seed, write_alert, write_tick

pytestmark = pytest.mark.e2e


async def _events(resp: Any, n: int, timeout_s: float = 10.0) -> list[tuple[str, str, Any]]:
    """Read ``n`` events (name, id, data) from an SSE response."""
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


def test_sse_ticks_alerts_filter_and_replay(served: Any, redis_client: Any, campus: Any) -> None:
    import aiohttp

    w = seed(redis_client, campus, days=1, last_day_ticks=4, mechs=("laplace", "pegasus"))
    tick = int(w["ticks"][-1]) + 300
    url = f"{served.url}/api/events?mech=laplace&access_token={TOKENS.analyst}"

    async def scenario() -> dict[str, Any]:
        res: dict[str, Any] = {}
        async with aiohttp.ClientSession() as s:
            async with s.get(f"{served.url}/api/events") as r:
                res["no_token"] = r.status
            async with s.get(url) as r:
                assert (await _events(r, 1))[0][0] == "hello"
                write_tick(redis_client, "pegasus", tick, dict.fromkeys(campus.location_ids, 1))
                write_tick(redis_client, "laplace", tick, dict.fromkeys(campus.location_ids, 7))
                a1 = write_alert(redis_client, {"tick": tick, "location": "hall-101",
                                                "capacity": 80, "algorithm": "TSLM",
                                                "beta": 0.05, "ex_post_epsilon": 0.5})
                res["live"] = await _events(r, 2)
            # disconnected: two alerts land meanwhile
            missed = [write_alert(redis_client, {"tick": tick + 300 * i, "location": "lib-1",
                                                 "capacity": 120, "algorithm": "TSLM",
                                                 "beta": 0.05}) for i in (1, 2)]
            async with s.get(url, headers={"Last-Event-ID": a1}) as r:
                res["replay"] = await _events(r, 3)
            res["a1"], res["missed"] = a1, missed
        return res

    res = run_async(scenario())
    assert res["no_token"] == 401
    # the two readers (ticks, alerts) are independent: no order between the types
    by_type = {e: (i, d) for e, i, d in res["live"]}
    assert set(by_type) == {"tick", "alert"}
    (_, tick_ev), (id2, alert_ev) = by_type["tick"], by_type["alert"]
    assert tick_ev["mech"] == "laplace" and tick_ev["tick"] == tick  # pegasus filtered out
    assert all(v["value"] == 7 for v in tick_ev["values"].values())
    assert len(tick_ev["values"]) == len(campus.location_ids)
    assert id2 == res["a1"] and "ex_post_epsilon" not in alert_ev
    hello, *replayed = res["replay"]
    assert hello[0] == "hello"
    assert [(e, i) for e, i, _ in replayed] == [("alert", m) for m in res["missed"]]
