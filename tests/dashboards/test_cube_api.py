"""The daily cube's API: /api/histogram and /api/histogram/{day} over the real writer."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from dash_support import TOKENS, get_json, run_async

from mechanisms.accounting import DayBudget, epsilon_to_zcdp
from occupancy import redis_layout as rl
from readmodel.writer import CacheWriter
from streams.pipeline.cube import DailyCube
from streams.pipeline.release import TickOutput

pytestmark = pytest.mark.e2e

D = 20_000  # 2024-10-04
DAY = "2024-10-04"


def _released(site: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The cube document and ledger record the worker's release stage makes for day D."""
    rho = 0.05 * epsilon_to_zcdp(4.0, 1e-6)
    dc = DailyCube(tuple(tuple(p) for p in site.hierarchy()), list(site.location_ids),
                   rho=rho, delta=1e-6, ticks_per_day=72, ticks_per_hour=3, max_slots=72,
                   tick_s=1200.0, secret=b"cube-api-secret-0123456789abcdef")
    budget = DayBudget(4.0, 1e-6, shares={"heatmap": 0.85, "alerts": 0.10, "histogram": 0.05})
    # 20-minute slots (72 a day) as in test_release_cube_stage.py: the same sampler tables
    counts = np.random.default_rng(2).integers(0, 20, (72, len(site.location_ids)))
    doc, rec = dc.release(D, 72, counts, budget)
    assert rec is not None
    return doc, rec


async def _write(redis_url: str, site: Any, out: TickOutput) -> None:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(redis_url)
    try:
        await CacheWriter(client, list(site.location_ids), tick_s=1200.0,
                          retention_ticks=2016).write_tick(out)
    finally:
        await client.aclose()


def test_cube_written_by_the_worker_path_is_served(served: Any, redis_client: Any,
                                                   redis_url: str, campus: Any) -> None:
    doc, rec = _released(campus)
    tick = float((D + 1) * 86400)  # released at the next day's first tick
    out = TickOutput(tick, [], [], [rec], cube=doc)
    run_async(_write(redis_url, campus, out))
    run_async(_write(redis_url, campus, out))  # a replayed tick: same text, ledger once
    url = served.url
    # the released values are public: the analyst token reads them
    status, body = get_json(f"{url}/api/histogram", token=TOKENS.analyst)
    assert (status, body) == (200, {"days": [DAY]})
    status, got = get_json(f"{url}/api/histogram/{DAY}", token=TOKENS.analyst)
    assert status == 200 and got == json.loads(json.dumps(doc))
    assert set(got["hourly"]) == set(got["nodes"]) and len(got["cube"]) == len(got["locations"])
    status, small = get_json(f"{url}/api/histogram/{DAY}?cube=false", token=TOKENS.analyst)
    assert status == 200 and "cube" not in small and small["hourly"] == got["hourly"]
    # errors: no token, a malformed day, a day without a release, a bad flag
    assert get_json(f"{url}/api/histogram/{DAY}", token=None)[0] == 401
    status, err = get_json(f"{url}/api/histogram/yesterday")
    assert status == 400 and "day must be YYYY-MM-DD" in err["error"]
    status, err = get_json(f"{url}/api/histogram/2024-10-05")
    assert status == 404 and "no daily cube" in err["error"]
    assert get_json(f"{url}/api/histogram/{DAY}?cube=maybe")[0] == 400
    assert get_json(f"{url}/api/histogram/{DAY}?bogus=1")[0] == 400
    # the ledger: once, counted on the released day (not the day of the release tick)
    ledger = [json.loads(f[b"data"]) for _, f in redis_client.xrange(rl.LEDGER_STREAM)]
    assert [r["release_id"] for r in ledger] == [rec["release_id"]]
    assert redis_client.hget(rl.ledger_spent(DAY), rec["mechanism"]) is not None
    assert not redis_client.exists(rl.ledger_spent("2024-10-05"))


def test_cube_page_plots_the_hourly_profile_with_error_bars(
        served: Any, redis_url: str, campus: Any, page: Any) -> None:
    doc, rec = _released(campus)
    run_async(_write(redis_url, campus, TickOutput(float((D + 1) * 86400), [], [], [rec],
                                                   cube=doc)))
    page.goto(f"{served.url}/static/cube.html#token={TOKENS.analyst}")
    page.wait_for_selector("#cube-table tbody tr:nth-child(24)")
    assert page.locator("#cube-day option").all_inner_texts() == [DAY]
    first = page.locator("#cube-node").input_value()
    assert first == doc["nodes"][int(np.argmin(doc["depth"]))]  # the building first
    assert page.locator("#cube-plot rect.bar").count() == 24
    assert page.locator("#cube-plot line.err").count() == 24
    cells = page.locator("#cube-table tbody tr:first-child td").all_inner_texts()
    assert float(cells[1]) == pytest.approx(doc["hourly"][first][0], abs=0.05)
    assert float(cells[2]) == pytest.approx(1.645 * doc["hourly_sd"][first], abs=0.05)
    room = campus.location_ids[0]
    page.select_option("#cube-node", room)
    page.wait_for_function(
        f"document.getElementById('cube-cap').textContent.startsWith({json.dumps(room)})")
    cells = page.locator("#cube-table tbody tr:first-child td").all_inner_texts()
    assert float(cells[1]) == pytest.approx(doc["hourly"][room][0], abs=0.05)
    assert "device-day budget" in page.locator("#cube-cap").inner_text()
    assert page.js_errors == []
