"""`occustream demo` with its default start: a weekday morning with a week behind it."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis

from occupancy import redis_layout as rl
from occustream.demo import build_parser
from occustream.history import start_of

ROOT = Path(__file__).resolve().parents[2]


def test_default_start_is_a_weekday_morning_with_a_week_of_history() -> None:
    args = build_parser().parse_args([])
    start = datetime.fromtimestamp(start_of(args.start), UTC)
    assert start.weekday() < 5 and 7 <= start.hour < 10
    assert args.history_days >= 7
    assert 10 <= args.speed <= 60  # a pace a person can watch
    assert args.days >= 0.5  # the crowds of the live day (10:00, 15:00) are played


@pytest.mark.e2e
def test_demo_opens_on_its_start_with_a_week_released_behind_it(tmp_path: Path) -> None:
    # the defaults for the start, history and days; a cheap release (event-level Laplace,
    # no MIDE) and a faster pace keep the test short: what is tested is where the demo
    # starts and what the read model holds then
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKA_BOOTSTRAP", "REDIS_URL")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.Popen(
        [sys.executable, "-m", "occustream.cli", "demo", "--dashboard-port", "-1",
         "--log-dir", str(tmp_path), "--speed", "300", "--cache-dir", "none",
         "--privacy-unit", "event", "--mechanisms", "laplace", "--mide", "false"],
        env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    start = start_of(build_parser().parse_args([]).start)
    lines: list[str] = []
    url = None
    live = False
    deadline = time.monotonic() + 120
    try:
        assert proc.stdout is not None
        while time.monotonic() < deadline and not live:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            m = re.search(r"Redis (redis://\S+)", line)
            if m and url is None:
                url = m.group(1)
                r = redis.Redis.from_url(url)
                # written before the live stream starts: ≥ 7 days of ticks up to the start
                ticks = [t for _, t in r.zrange(rl.ticks("laplace"), 0, -1, withscores=True)]
                assert len(ticks) >= 7 * 288 and ticks[-1] == start, (len(ticks), ticks[-1:])
                assert ticks[0] <= start - 7 * 86400 + 300
                # the first frame's slot compares against past days (≥ 2 complete ones)
                first = [json.loads(v) for v in r.hmget(
                    rl.baseline("laplace"),
                    [rl.baseline_field(loc.decode(), rl.slot_of(start, 300))
                     for loc in r.hkeys(rl.latest("laplace"))])]
                assert first and all(b["n"] >= 6 and b["mu"] is not None for b in first)
            shown = re.search(r"tick Tue (\d\d):(\d\d) UTC", line)
            live = bool(shown) and (int(shown[1]), int(shown[2])) > (8, 30)
        text = "".join(lines)
        assert url is not None, text[-2000:]
        assert "tick Tue 08:30 UTC" in text, text[-2000:]  # the first frame: the start
        assert live, text[-2000:]  # then the live stream goes on from it
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
