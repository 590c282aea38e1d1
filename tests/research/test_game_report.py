"""``occustream game-report``: accuracy per task and ε from the game's traces (thesis §3.2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dashboards import game_rounds as gr
from mechanisms.accounting import UNIT_OF_PRIVACY
from mechanisms.errors import InvalidParameterError
from occupancy import redis_layout as rl
from occupancy.buildings import load_site
from readmodel.writer import queue_game_result
from research import game_report


def _trace(mech: str, eps: float, accs: list[float], player: str = "ann") -> dict[str, Any]:
    return {"round": f"r-{mech}-{eps}-{accs}", "player": player, "mechanism": mech,
            "unit": UNIT_OF_PRIVACY, "epsilon": eps,
            "tasks": [{"task": t, "accuracy": a, "error": 10 * (1 - a)}
                      for t, a in zip(gr.TASKS, accs, strict=True)]}


def test_summary_per_task_and_epsilon() -> None:
    traces = [_trace("laplace", 0.1, [0.2, 1.0, 0.5, 0.0]),
              _trace("laplace", 0.1, [0.6, 0.0, 1.0, 0.0]),
              _trace("laplace", 1.0, [1.0, 1.0, 1.0, 0.8]),
              _trace("laplace", 1.0, [0.9, 1.0, 1.0, 1.0], player="bot:analyst")]
    rows = game_report.summarise(traces)
    key = {(r["who"], r["epsilon"], r["task"]): r for r in rows}
    low = key[("players", 0.1, "threshold")]
    assert low["n"] == 2 and low["accuracy"] == pytest.approx(0.4)
    assert low["ci95"] == pytest.approx(1.96 * np.std([0.2, 0.6], ddof=1) / np.sqrt(2))
    assert low["median_error"] == pytest.approx(6.0)
    assert key[("players", 0.1, "broken_sensor")]["solved"] == pytest.approx(0.5)
    assert key[("players", 1.0, "routine_event")]["solved"] == 1.0
    assert key[("bot", 1.0, "threshold")]["n"] == 1  # people and the bot kept apart
    assert [r["task"] for r in rows[:4]] == list(gr.TASKS)


def test_bot_reads_the_public_round_only() -> None:
    rnd = gr.make_round(load_site("dbh"), mechanism="laplace", epsilon=1.0, seed=2,
                        rng=np.random.default_rng(2))
    answers = game_report.bot_answers(rnd.public())
    parsed = gr.parse_answers({t.id: t.params for t in rnd.tasks}, answers)
    assert set(parsed) == set(gr.TASKS) and all(v is not None for v in parsed.values())
    res = gr.score(rnd, parsed, 0.0, 0)
    # at ε = 1 per tick (noise sd √2) the scripted analyst solves the threshold task
    assert next(t for t in res["tasks"] if t["task"] == "threshold")["accuracy"] >= 0.75


def test_command_reads_the_game_traces_from_redis(redis_url: str, redis_client: Any,
                                                  tmp_path: Path, capsys: Any) -> None:
    pipe = redis_client.pipeline()
    for eps, accs in ((0.05, [0.1, 0.0, 0.2, 0.0]), (1.0, [1.0, 1.0, 0.9, 1.0])):
        queue_game_result(pipe, "ann", 100, _trace("pegasus", eps, accs))
    pipe.execute()
    assert redis_client.xlen(rl.GAME_TRACES) == 2
    out = tmp_path / "rep"
    assert game_report.main(["--redis-url", redis_url, "--out", str(out),
                             "--save-traces", str(tmp_path / "t.jsonl")]) == 0
    rows = json.loads((out / "game-report.json").read_text())
    assert {(r["epsilon"], r["task"]): r["accuracy"] for r in rows}[(1.0, "broken_sensor")] == 0.9
    md = (out / "game-report.md").read_text()
    assert "accuracy against ε per task" in md and list(out.glob("game-report-01-*.png"))
    assert "2 rounds" in capsys.readouterr().out
    # the saved traces are a valid input again
    again = tmp_path / "again"
    assert game_report.main(["--traces", str(tmp_path / "t.jsonl"), "--out", str(again)]) == 0
    assert json.loads((again / "game-report.json").read_text()) == rows
    redis_client.flushdb()
    with pytest.raises(InvalidParameterError, match="traces must come from somewhere"):
        game_report.main(["--redis-url", redis_url, "--out", str(again)])
