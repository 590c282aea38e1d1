"""``occustream alerts`` in a real subprocess against the real Redis."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from typing import Any

import pytest

from dashboards.synthetic import write_alert

pytestmark = pytest.mark.e2e


class Lines:
    """Lines of a subprocess's stdout, read by a thread (no select/buffering races)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.q: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, args=(proc,), daemon=True).start()

    def _pump(self, proc: subprocess.Popen[str]) -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            self.q.put(line)

    def next(self, timeout_s: float) -> str:
        try:
            return self.q.get(timeout=timeout_s)
        except queue.Empty:
            raise AssertionError("no line from occustream alerts within the timeout") from None


def test_alerts_follow_prints_alerts_as_they_arrive(redis_url: str, redis_client: Any) -> None:
    old = write_alert(redis_client, {"tick": 1_790_000_000, "location": "hall-101",
                                     "capacity": 80, "algorithm": "TSLM", "beta": 0.05})
    env = dict(os.environ, REDIS_URL=redis_url)
    proc = subprocess.Popen([sys.executable, "-m", "occustream.cli", "alerts", "--decisions",
                             "--follow", "--json", "--last", "1"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    lines = Lines(proc)
    try:
        first = json.loads(lines.next(20))
        assert first["id"] == old
        ids = [write_alert(redis_client, {"tick": 1_790_000_300 + i, "location": "hall-110",
                                          "capacity": 150, "algorithm": "PPWLM", "beta": 0.01,
                                          "ex_post_epsilon": 0.31}) for i in range(3)]
        got = [json.loads(lines.next(10)) for _ in ids]
        assert [g["id"] for g in got] == ids
        assert all("ex_post_epsilon" not in g for g in got)
    finally:
        proc.terminate()
        proc.wait(10)


def test_alerts_text_output_and_bad_input(redis_url: str, redis_client: Any) -> None:
    write_alert(redis_client, {"tick": 1_790_000_000, "location": "hall-101", "capacity": 80,
                               "algorithm": "TSLM", "beta": 0.05})
    env = dict(os.environ, REDIS_URL=redis_url)
    out = subprocess.run([sys.executable, "-m", "occustream.cli", "alerts", "--decisions"],
                         env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0
    assert "OVER CAPACITY  hall-101" in out.stdout and "β=0.05" in out.stdout
    env.pop("REDIS_URL")
    bad = subprocess.run([sys.executable, "-m", "occustream.cli", "alerts"], env=env,
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and "REDIS_URL" in bad.stderr and len(bad.stderr.splitlines()) == 1
