"""``occustream demo`` (default options): seconds until the page's first frame is coloured
against the usual day, with an empty history cache and with a warm one, and the pace the
speed control gives (simulated seconds per wall second read from ``GET /api/demo``
before and after ``POST /api/demo/speed``).

"Coloured against the usual day" = ``GET /api/snapshot`` returns a colour class (μ, σ
from ≥ 2 past days) for at least one location — what the page paints. Two times from
the process start (services, history, workers, dashboard included): the first such
frame (the week's last tick, Monday 23:55), and the first at the live start (Tuesday
08:30, after the workers have released the morning sent at full speed).
The machine is shared: the figures carry the load average at the start.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _get(url: str, token: str, body: dict[str, Any] | None = None) -> Any:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}",
                                               "Content-Type": "application/json"},
                                 data=json.dumps(body).encode() if body else None,
                                 method="POST" if body else "GET")
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def _pace(base: str, token: str, wall_s: float) -> float:
    """Simulated seconds per wall second over ``wall_s``, from the demo's clock."""
    a = _get(f"{base}api/demo", token)["clock"]
    time.sleep(wall_s)
    b = _get(f"{base}api/demo", token)["clock"]
    return (b["sim_ts"] - a["sim_ts"]) / max(b["wall_ts"] - a["wall_ts"], 1e-9)


def one_start(cache_dir: str, *, pace: bool) -> dict[str, Any]:
    """Start the demo, time its first coloured frame, optionally measure the pace."""
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKA_BOOTSTRAP", "REDIS_URL")}
    env["PYTHONPATH"] = str(ROOT)
    load = os.getloadavg()[0]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "occustream.cli", "demo", "--dashboard-port", "0",
         "--cache-dir", cache_dir, "--log-dir", tempfile.mkdtemp(prefix="bench-demo-")],
        env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    out: dict[str, Any] = {"load_avg_1min_at_start": round(load, 1)}
    try:
        base = token = start = None
        assert proc.stdout is not None
        while base is None or start is None:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError("the demo ended before printing its dashboard URL")
            m = re.search(r"dashboard \(admin\) (http://\S+/)#token=(\S+)", line)
            if m:
                base, token = m.group(1), m.group(2)
            p = re.search(r"pace .* from (\S+) ", line)
            if p:  # the demo's live start (naive ISO = UTC)
                start = datetime.fromisoformat(p.group(1)).replace(tzinfo=UTC).timestamp()
            h = re.search(r"history: .* \((\d+\.\d) s after start\)", line)
            if h:
                out["history_written_s"] = float(h.group(1))
        while True:
            try:
                snap = _get(f"{base}api/snapshot", token)
                coloured = any(v.get("class") for v in snap.get("values", {}).values())
                if coloured and "first_coloured_frame_s" not in out:
                    out["first_coloured_frame_s"] = round(time.monotonic() - t0, 1)
                    out["first_frame_tick"] = time.strftime("%a %H:%M",
                                                            time.gmtime(snap["tick"]))
                if coloured and snap["tick"] >= start:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        out["coloured_frame_at_start_s"] = round(time.monotonic() - t0, 1)
        if pace:
            time.sleep(5)  # the producer's first report
            out["pace_default"] = round(_pace(base, token, 4.0), 1)
            _get(f"{base}api/demo/speed", token, {"speed": 120})
            time.sleep(1.5)
            out["pace_after_x120"] = round(_pace(base, token, 4.0), 1)
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    return out


def run(quick: bool = False) -> dict[str, Any]:
    """A cold start (empty cache), then a warm one (cache filled by the first)."""
    with tempfile.TemporaryDirectory(prefix="bench-demo-cache-") as cache:
        cold = one_start(cache, pace=True)
        warm = {} if quick else one_start(cache, pace=False)
    return {"cold_cache": cold, "warm_cache": warm}
