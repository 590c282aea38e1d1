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
def test_demo_opens_on_its_start_with_a_week_released_before_it(tmp_path: Path) -> None:
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
    midnight = start - start % 86400
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
                # written before the workers get an event: the 7 whole days before the
                # start's day, and the demo's clock at the start
                ticks = [t for _, t in r.zrange(rl.ticks("laplace"), 0, -1, withscores=True)]
                assert ticks and ticks[-1] == midnight - 300, ticks[-1:]
                assert len(ticks) == 7 * 288 and ticks[0] == midnight - 7 * 86400
                assert json.loads(r.get(rl.DEMO_CLOCK))["sim_ts"] == start
            shown = re.search(r"tick Tue (\d\d):(\d\d) UTC", line)
            live = bool(shown) and (int(shown[1]), int(shown[2])) > (8, 30)
        text = "".join(lines)
        assert url is not None, text[-2000:]
        assert live, text[-2000:]  # the live stream goes on past the start
        # then: the morning up to the start released by the workers, after the week
        ticks = [t for _, t in r.zrange(rl.ticks("laplace"), 0, -1, withscores=True)]
        before = [t for t in ticks if t <= start]
        assert len(before) >= 7 * 288 + 100 and before[0] == midnight - 7 * 86400
        assert max(b - a for a, b in zip(before, before[1:], strict=False)) <= 600
        # the slot of the start compares against the week's weekdays (a Tuesday's usual
        # day is the five weekdays of the released week, not the weekend)
        first = [json.loads(v) for v in r.hmget(
            rl.baseline("laplace"), [rl.baseline_field(loc.decode(), rl.slot_of(start, 300))
                                     for loc in r.hkeys(rl.latest("laplace"))])]
        assert first and all(b["n"] >= 5 and b["mu"] is not None for b in first)
        # history and workers never released the same tick (release ids are unique)
        ids = [json.loads(f[b"data"]).get("release_id") for _, f in r.xrange(rl.LEDGER_STREAM)]
        assert len(ids) == len(set(ids)) and len(ids) >= len(before)
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise


def test_history_never_charges_the_live_day() -> None:
    from dataclasses import replace

    from occustream.demo import history_end
    from occustream.history import release_history
    from streams.settings import Settings

    s = replace(Settings(site="dbh", secret=b"live-day-test-secret"), mide=False)  # device-day
    start = start_of(build_parser().parse_args([]).start)
    end = history_end(start, s.tick_s)
    h = release_history(s, start_ts=end, days=0.25, seed=1)
    live_day = int(start // 86400)
    days = {int(o.tick // 86400) for o in h.outs}
    charged = {r["tick"] // 86400 for o in h.outs for r in o.ledger}
    assert days == {live_day - 1} and charged == {live_day - 1}, (days, charged)
    assert h.outs[-1].tick == start - start % 86400 - s.tick_s
