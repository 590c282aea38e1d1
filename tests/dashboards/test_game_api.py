"""The IoT-DETECTIVE API over a real server and Redis: no truth before the answer, scoring,
the leaderboard and the traces (dashboards/game.py)."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from typing import Any

import pytest
from dash_support import TOKENS, get_json

from dashboards import game_rounds as gr
from dashboards.app import RM
from dashboards.game import GAME
from occupancy import redis_layout as rl
from readmodel.reader import game_traces

pytestmark = pytest.mark.e2e

MAC = re.compile(r"(?i)\b[0-9a-f]{2}(?::[0-9a-f]{2}){5}\b")


def post(url: str, body: Any, token: str | None = TOKENS.analyst) -> tuple[int, Any]:
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _keys(doc: Any) -> set[str]:
    if isinstance(doc, dict):
        return set(doc) | {k for v in doc.values() for k in _keys(v)}
    if isinstance(doc, list):
        return {k for v in doc for k in _keys(v)}
    return set()


def test_a_round_from_start_to_leaderboard(served: Any, redis_client: Any) -> None:
    base = f"{served.url}/api/game"
    assert post(f"{base}/rounds", {"player": "ann"}, token=None)[0] == 401
    assert post(f"{base}/rounds", {"player": "<script>"})[0] == 400
    assert post(f"{base}/rounds", {"player": "ann", "mechanism": "ttl"})[0] == 400  # no DP
    assert post(f"{base}/rounds", {"player": "ann", "mechanism": "device-day",
                                   "epsilon": 1e-4})[0] == 400  # off the grid
    # a long bad name is refused in one short line (not echoed back whole)
    status, err = post(f"{base}/rounds", {"player": "x" * 100_000})
    assert status == 400 and len(json.dumps(err)) < 500
    # ε alone: the mechanism is drawn among those whose grid has it (never a 400)
    for _ in range(4):
        status, only_eps = post(f"{base}/rounds", {"player": "eve", "epsilon": 16})
        assert status == 200 and only_eps["epsilon"] == 16, only_eps
    assert post(f"{base}/rounds", {"player": "eve", "epsilon": 0.3})[0] == 400  # in no grid
    status, rnd = post(f"{base}/rounds", {"player": "ann", "mechanism": "laplace",
                                          "epsilon": 0.2})
    assert status == 200, rnd
    # the browser gets released values and questions only: never the truth
    assert _keys(rnd) <= {
        "id", "day", "midnight", "tick_s", "mechanism", "epsilon", "unit", "description",
        "meta", "privacy", "ticks", "locations", "regions", "released", "tasks",
        "time_limit_s", "par_s", "player", "rounds_played", "bonus", "name", "question",
        "params", "location", "threshold", "answer", "max", "choices", *rnd["released"],
        *rnd["meta"], *rnd["privacy"]}
    assert not _keys(rnd) & {"truth", "true", "true_series", "ranking", "detail"}
    for t in rnd["tasks"]:
        assert t["params"].get("answer") in ("count", "region", "time")
    assert rnd["epsilon"] == 0.2 and rnd["privacy"]["releases_charged"] == len(rnd["ticks"])
    server = served.app[GAME].rounds[rnd["id"]].round
    released = {lid: v for lid, v in rnd["released"].items()}
    assert any(released[lid] != server.true_series(lid) for lid in released)

    # answered with the truth, fast: full points; bad answers are refused without using it
    truth = {t.id: t.answer for t in server.tasks}
    exact = {"threshold": truth["threshold"], "night_region": truth["night_region"],
             "broken_sensor": gr.hhmm(truth["broken_sensor"]),
             "routine_event": gr.hhmm(truth["routine_event"])}
    url = f"{base}/rounds/{rnd['id']}/answer"
    assert post(url, {"answers": {"broken_sensor": "7 pm"}})[0] == 400
    status, res = post(url, {"answers": exact})
    assert status == 200, res
    assert res["points"] == 4 * gr.POINTS_PER_TASK and res["total"] == res["points"]
    by_task = {t["task"]: t for t in res["tasks"]}
    assert by_task["broken_sensor"]["truth_hhmm"] == exact["broken_sensor"]
    assert by_task["threshold"]["true_series"] == server.true_series(
        by_task["threshold"]["location"])
    assert res["leaderboard"] == [{"name": "ann", "points": res["points"], "rounds": 1}]
    assert post(url, {"answers": exact})[0] == 404  # answered rounds are gone
    assert post(f"{base}/rounds/nope/answer", {"answers": {}})[0] == 404

    # a second round: the rounds bonus; nothing answered scores 0 but is traced
    status, rnd2 = post(f"{base}/rounds", {"player": "ann", "mechanism": "pegasus"})
    assert status == 200 and rnd2["rounds_played"] == 1 and rnd2["bonus"] == pytest.approx(1.1)
    assert rnd2["epsilon"] in gr.epsilons_for("pegasus")
    status, res2 = post(f"{base}/rounds/{rnd2['id']}/answer", {"answers": {}})
    assert status == 200 and res2["points"] == 0 and res2["bonus"] == pytest.approx(1.1)
    status, board = get_json(f"{base}/leaderboard?limit=5", token=TOKENS.analyst)
    assert status == 200 and board["players"] == [
        {"name": "ann", "points": 4 * gr.POINTS_PER_TASK, "rounds": 2}]
    assert get_json(f"{base}/leaderboard?limit=0", token=TOKENS.analyst)[0] == 400

    # the traces of play: one per round, per task accuracy, no raw MAC
    traces = served.call(game_traces(served.app[RM].client))
    assert [t["round"] for t in traces] == [rnd["id"], rnd2["id"]]
    assert [t["mechanism"] for t in traces] == ["laplace", "pegasus"]
    assert [t["accuracy"] for t in traces[0]["tasks"]] == [1.0] * 4
    assert [t["accuracy"] for t in traces[1]["tasks"]] == [0.0] * 4
    raw = b"".join(v for _, f in redis_client.xrange(rl.GAME_TRACES) for v in f.values())
    assert not MAC.search(raw.decode())

