"""Take the README's screenshots from the real demo (``make demo``'s defaults).

    .venv/bin/python scripts/demo_screenshots.py [--out docs]

Starts ``occustream demo`` (default options: Tuesday 08:30, a week of released history,
×30), opens the admin page in the headless Chromium the browser tests use and saves:

* ``demo-first-look.png`` — the first frame, coloured against the usual day;
* ``screenshot.png`` — the lounge crowd's incident open (the page's ×120 button is
  used to get there sooner; the page then shows the pace it runs at);
* ``demo-incident-resolved.png`` — the same incident resolved.

Needs Debian's chromium (``make install``). Stops the demo on exit.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def _api(base: str, token: str, path: str) -> Any:
    req = urllib.request.Request(f"{base}{path}", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def _lounge(start: str) -> tuple[str, str]:
    """The demo's lounge crowd: (location id, floor id), as the demo's producer places it."""
    from dataclasses import replace

    from occupancy.buildings import load_site
    from simulator import simulate
    from simulator.simulation import Scenarios

    scen = replace(Scenarios.from_names(["overcapacity"]), crowd_day=0, crowd_minutes=60.0)
    sim = simulate("dbh", days=1, seed=1, start=start, scenarios=scen)
    first = min((s for s in sim.truth["scenarios"] if s["type"] == "overcapacity"),
                key=lambda s: s["start_ts"])
    site = load_site("dbh")
    loc = site.locations[site.location_index[first["location"]]]
    return loc.id, loc.floor


def _wait(what: str, check: Any, timeout: float = 300.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.5)
    raise TimeoutError(what)


def main(argv: list[str] | None = None) -> int:
    """Run the demo, take the three pictures."""
    from playwright.sync_api import sync_playwright

    from occustream.demo import DEFAULT_START

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs")
    args = ap.parse_args(argv)
    lounge, floor = _lounge(DEFAULT_START)
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKA_BOOTSTRAP", "REDIS_URL")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.Popen(
        [sys.executable, "-m", "occustream.cli", "demo", "--dashboard-port", "0",
         "--log-dir", tempfile.mkdtemp(prefix="demo-shots-")],
        env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    try:
        base = token = None
        assert proc.stdout is not None
        while base is None:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError("the demo ended early")
            m = re.search(r"dashboard \(admin\) (http://\S+/)#token=(\S+)", line)
            if m:
                base, token = m.group(1), m.group(2)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_context(viewport={"width": 1600, "height": 1000}).new_page()
            page.goto(f"{base}#token={token}")
            page.wait_for_selector("body[data-ready='1']", timeout=60_000)
            page.wait_for_selector("#demo-pace:not([hidden])", timeout=30_000)
            page.wait_for_selector("#plan .loc[data-class]", timeout=30_000)
            from occustream.history import start_of

            _wait("the workers reach the start", lambda: _api(base, token, "api/snapshot")[
                "tick"] >= start_of(DEFAULT_START))
            time.sleep(2.0)
            page.click(f"#floors button[data-floor='{floor}']")
            time.sleep(1.0)
            page.screenshot(path=str(args.out / "demo-first-look.png"))
            print("first look:", page.inner_text("#demo-clock"), flush=True)
            page.click("#demo-buttons button[data-speed='120']")

            def incident(state: str) -> Any:
                for i in _api(base, token, "api/incidents")["incidents"]:
                    if i["location"] == lounge and i["state"] == state:
                        return i
                return None

            _wait("the lounge incident opens", lambda: incident("open"))
            page.click("#demo-buttons button[data-speed='30']")
            time.sleep(3.0)
            page.click(f"[data-location='{lounge}']")
            page.wait_for_selector("#spark polyline", timeout=10_000)
            page.mouse.move(300, 900)  # no tooltip over the header
            time.sleep(1.0)
            page.screenshot(path=str(args.out / "screenshot.png"))
            print("incident open:", page.inner_text("#demo-clock"), flush=True)
            page.click("#demo-buttons button[data-speed='120']")
            _wait("the lounge incident resolves", lambda: incident("resolved"))
            page.click("#demo-buttons button[data-speed='30']")
            time.sleep(3.0)
            page.click(f"[data-location='{lounge}']")
            page.mouse.move(300, 900)
            time.sleep(1.0)
            page.screenshot(path=str(args.out / "demo-incident-resolved.png"))
            print("incident resolved:", page.inner_text("#demo-clock"), flush=True)
            browser.close()
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    return 0


if __name__ == "__main__":
    sys.exit(main())
