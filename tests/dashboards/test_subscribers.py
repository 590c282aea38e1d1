"""``occustream alerts`` in a real subprocess against the real Redis."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from typing import Any

import pytest

from dashboards.synthetic import write_alert

pytestmark = pytest.mark.e2e


def _readline(proc: subprocess.Popen[str], timeout_s: float) -> str:
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)  # type: ignore[arg-type]
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if sel.select(timeout=0.2):
            return proc.stdout.readline()  # type: ignore[union-attr]
    raise AssertionError("no line from occustream alerts within the timeout")


def test_alerts_follow_prints_alerts_as_they_arrive(redis_url: str, redis_client: Any) -> None:
    old = write_alert(redis_client, {"tick": 1_790_000_000, "location": "hall-101",
                                     "capacity": 80, "algorithm": "TSLM", "beta": 0.05})
    env = dict(os.environ, REDIS_URL=redis_url)
    proc = subprocess.Popen([sys.executable, "-m", "streams.cli", "alerts", "--follow", "--json",
                             "--last", "1"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        first = json.loads(_readline(proc, 15))
        assert first["id"] == old
        ids = [write_alert(redis_client, {"tick": 1_790_000_300 + i, "location": "hall-110",
                                          "capacity": 150, "algorithm": "PPWLM", "beta": 0.01,
                                          "ex_post_epsilon": 0.31}) for i in range(3)]
        got = [json.loads(_readline(proc, 10)) for _ in ids]
        assert [g["id"] for g in got] == ids
        assert all("ex_post_epsilon" not in g for g in got)
    finally:
        proc.terminate()
        proc.wait(10)


def test_alerts_text_output_and_bad_input(redis_url: str, redis_client: Any) -> None:
    write_alert(redis_client, {"tick": 1_790_000_000, "location": "hall-101", "capacity": 80,
                               "algorithm": "TSLM", "beta": 0.05})
    env = dict(os.environ, REDIS_URL=redis_url)
    out = subprocess.run([sys.executable, "-m", "streams.cli", "alerts"], env=env,
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0
    assert "OVER CAPACITY  hall-101" in out.stdout and "β=0.05" in out.stdout
    env.pop("REDIS_URL")
    bad = subprocess.run([sys.executable, "-m", "streams.cli", "alerts"], env=env,
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and "REDIS_URL" in bad.stderr and len(bad.stderr.splitlines()) == 1
