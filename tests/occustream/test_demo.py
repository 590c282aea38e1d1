"""`occustream demo` shows released values and alerts, and Ctrl-C leaves nothing behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infra.services import child_pids

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def _descendants(pid: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def test_demo_shows_releases_and_alerts_then_stops_cleanly(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKA_BOOTSTRAP", "REDIS_URL")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.Popen(
        [sys.executable, "-m", "occustream.cli", "demo", "--dashboard-port", "-1",
         "--log-dir", str(tmp_path), "--speed", "900", "--history-days", "0",
         "--start", "2026-01-05T00:00", "--cache-dir", "none"],
        env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
        # started with SIGINT ignored (a background job; pytest inherited it so from some
        # earlier test): the demo must still stop on SIGINT
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    lines: list[str] = []
    deadline = time.monotonic() + 120  # "within two minutes on a fresh clone"
    released = alerts = False
    family: list[int] = []
    try:
        while time.monotonic() < deadline and not (released and alerts):
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            released |= "ticks released" in line
            alerts |= "over capacity" in line
            family = sorted(set(family) | set(_descendants(proc.pid)))
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            # read what the demo still writes while it stops: an undrained pipe could
            # block its last writes and look like a demo that does not stop
            rest, _ = proc.communicate(timeout=40)
            lines.append(rest or "")
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    text = "".join(lines)
    assert "DEMO MODE" in text or "development secret" in text
    assert released, text[-2000:]
    assert alerts, text[-2000:]
    assert len(family) >= 4  # tansu, redis, worker, simulator
    deadline = time.monotonic() + 15
    while child_pids(family) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert child_pids(family) == []


def test_safe_url_hides_credentials() -> None:
    from occustream.demo import safe_url

    assert safe_url("redis://:hunter2@db.example:6379/0") == "redis://***@db.example:6379/0"
    assert safe_url("redis://user:pw@h:1") == "redis://***@h:1"
    assert "pw" not in safe_url("user:pw@broker:9092")
    assert safe_url("redis://127.0.0.1:6379") == "redis://127.0.0.1:6379"
    assert safe_url("127.0.0.1:9092") == "127.0.0.1:9092"
    assert safe_url(None) == ""


def test_render_tells_tick_and_hour_alerts_apart(redis_client) -> None:
    import json

    from occupancy import redis_layout as rl
    from occustream.demo import _render

    tick = 1_767_571_200 + 9 * 3600 + 55 * 60  # Mon 2026-01-05 09:55 UTC: closes 09:00–10:00
    redis_client.hset(rl.latest("laplace"), "r1", json.dumps({"tick": tick, "value": 90.0}))
    for window in ("tick", "hour"):
        redis_client.xadd(rl.ALERTS_STREAM, {"data": json.dumps(
            {"tick": tick, "location": "r1", "capacity": 80, "algorithm": "tslm",
             "beta": 0.05, "window": window})})
    text = _render(redis_client, "laplace", ["r1"], 5, {"r1": "Room 1"}, {"r1": 80}, 300.0)
    alert_lines = [ln for ln in text.splitlines() if "over capacity" in ln]
    assert len(alert_lines) == 2 and len(set(alert_lines)) == 2
    assert any("09:00–10:00" in ln and "hour" in ln for ln in alert_lines)
    assert any("09:55 tick" in ln for ln in alert_lines)
