"""IoT-DETECTIVE in a real headless Chromium: one round played from the released stream."""

from __future__ import annotations

import json
from typing import Any

import pytest
from dash_support import TOKENS

from dashboards import game_rounds as gr
from dashboards.game import GAME
from occupancy import redis_layout as rl

pytestmark = [pytest.mark.browser, pytest.mark.e2e]


def test_play_one_round(served: Any, redis_client: Any, page: Any) -> None:
    bodies: list[tuple[str, str]] = []
    page.on("response", lambda r: bodies.append((r.url, r.text()))
            if "/api/game/rounds" in r.url else None)
    refused: list[str] = []  # the CSP is enforced (no inline script or style sheet)
    page.on("console", lambda m: refused.append(m.text)
            if "Content Security Policy" in m.text else None)
    # from the dashboard's header link, with the dashboard's token
    page.goto(f"{served.url}/#token={TOKENS.analyst}")
    page.click("#game-link")
    page.wait_for_selector("body[data-ready='1']", timeout=15_000)
    page.fill("#player", "Grace")
    page.click("#new-round")
    page.wait_for_selector("body[data-round]", timeout=30_000)
    rid = page.get_attribute("body", "data-round")
    assert page.inner_text("#round-privacy").count("ε =") >= 2  # ε stated, and the charge
    assert page.inner_text("#timer").endswith("left") or "full points" in page.inner_text("#timer")
    server = served.app[GAME].rounds[rid].round
    tasks = {t.id: t for t in server.tasks}

    # task 1 from the chart: the threshold room is shown with its threshold line; count
    # the released values over it (the player's estimate, from the page alone)
    page.click(f"button[data-show='loc:{tasks['threshold'].params['location']}']")
    released = json.loads(page.get_attribute("#chart path.released", "data-values"))
    thr = float(page.get_attribute("#chart line.threshold", "data-threshold"))
    assert released == [round(float(v), 1) for v in server.released[
        :, server.locations.index(tasks["threshold"].params["location"])]]
    assert page.locator("#chart path.true").count() == 0  # no truth before answering
    estimate = sum(1 for v in released if v > thr)
    page.fill("#a-threshold", str(estimate))
    page.select_option("#a-night_region", index=1)
    page.fill("#a-broken_sensor", "12:00")
    page.fill("#a-routine_event", "09:30")
    # a region view draws the sum of its rooms
    region = server.regions[0]
    page.select_option("#view", f"region:{region.id}")
    assert page.get_attribute("#chart", "data-view") == f"region:{region.id}"
    page.click("#submit")
    page.wait_for_selector(f"body[data-answered='{rid}']", timeout=15_000)

    # the truth revealed, matching the server's; the leaderboard updated
    for t in server.tasks:
        cell = page.inner_text(f"#result-rows tr[data-task='{t.id}'] td.truth")
        want = (gr.hhmm(float(t.answer)) if t.params.get("answer") == "time"
                else next(r.name for r in server.regions if r.id == t.answer)
                if t.id == "night_region" else str(t.answer))
        assert cell == want
    points = int(page.get_attribute("#result", "data-points"))
    assert int(redis_client.zscore(rl.GAME_LEADERBOARD, "Grace")) == points
    assert page.inner_text("#board li[data-player='Grace'] .pts").startswith(f"{points} pts")
    page.click(f"button[data-show='loc:{tasks['broken_sensor'].params['location']}']")
    assert page.locator("#chart path.true").count() == 1  # the true day, drawn after
    # nothing the browser received before the answer held the truth
    before = [b for u, b in bodies if not u.endswith("/answer")]
    assert before and all('"true_series"' not in b and '"ranking"' not in b and
                          '"truth"' not in b for b in before)
    assert page.js_errors == [] and refused == []
