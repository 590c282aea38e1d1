"""Support for the dashboard tests: a small campus, tokens, a threaded server, HTTP helpers."""

from __future__ import annotations

import asyncio
import io
import json
import sys
import threading
import traceback
import urllib.error
import urllib.request
from typing import Any

from dashboards.app import BROKER, Tokens, create_app
from occupancy.buildings import Site

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
TOKENS = Tokens(analyst="analyst-token-for-tests", admin="admin-token-for-tests")


def _rooms(prefix: str, floor: str, y0: float, row: list[tuple[str, str, int, float]]
           ) -> list[dict[str, Any]]:
    out, x = [], 0.0
    for num, kind, cap, w in row:
        out.append({"id": f"{prefix}-{num}", "name": f"{kind.title()} {num}", "floor": floor,
                    "kind": kind, "capacity": cap,
                    "polygon": [[x, y0], [x + w, y0], [x + w, y0 + 14], [x, y0 + 14]]})
        x += w
    return out


def campus_dict() -> dict[str, Any]:
    """Two buildings; the first has two floors with a corridor between room rows."""
    locs_a = (
        _rooms("hall", "hall-f1", 0, [("101", "classroom", 80, 24), ("102", "classroom", 40, 16),
                                      ("103", "lab", 30, 20), ("104", "office", 6, 10),
                                      ("105", "restroom", 8, 10)])
        + [{"id": "hall-c1", "name": "Corridor 1", "floor": "hall-f1", "kind": "corridor",
            "capacity": 60, "polygon": [[0, 14], [80, 14], [80, 20], [0, 20]]}]
        + _rooms("hall", "hall-f1", 20, [("110", "public", 150, 40), ("111", "meeting", 12, 20),
                                         ("112", "lounge", 25, 20)])
        + _rooms("hall", "hall-f2", 0, [("201", "office", 4, 20), ("202", "office", 4, 20),
                                        ("203", "lab", 24, 40)])
        + _rooms("hall", "hall-f2", 20, [("210", "meeting", 16, 40), ("211", "classroom", 60, 40)])
    )
    locs_b = _rooms("lib", "lib-f1", 0, [("1", "public", 120, 40), ("2", "lounge", 30, 20)])
    def aps(locs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{"id": f"ap-{loc['id']}", "location": loc["id"], "x": loc["polygon"][0][0] + 1,
                 "y": loc["polygon"][0][1] + 1} for loc in locs]
    return {"id": "testcampus", "name": "Test Campus", "buildings": [
        {"id": "hall", "name": "Engineering Hall",
         "floors": [{"id": "hall-f1", "level": 1, "name": "Floor 1", "width": 80, "height": 34},
                    {"id": "hall-f2", "level": 2, "name": "Floor 2", "width": 80, "height": 34}],
         "locations": locs_a, "aps": aps(locs_a)},
        {"id": "lib", "name": "Library",
         "floors": [{"id": "lib-f1", "level": 1, "name": "Ground floor", "width": 60,
                     "height": 20}],
         "locations": locs_b, "aps": aps(locs_b)},
    ]}


#: how long :meth:`Served.close` waits for the server's cleanup before it reports it
CLEANUP_TIMEOUT_S = 30.0


class Served:
    """A dashboard app served from a background thread."""

    def __init__(self, site: Site, redis_url: str, *, header_timeout_s: float = 10.0,
                 **kw: Any) -> None:
        from aiohttp import web

        self.loop = asyncio.new_event_loop()
        self.app = create_app(site, redis_url, TOKENS, **kw)
        from dashboards.hardening import server_options

        self.runner = web.AppRunner(self.app, **server_options(header_timeout_s))
        self._cleanup: Any = None
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.call(self.runner.setup())
        site_ = web.TCPSite(self.runner, "127.0.0.1", 0)
        self.call(site_.start())
        self.port = self.runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.call(self.app[BROKER].ready.wait())

    def call(self, coro: Any, timeout: float = 20.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        """Stop the server (idempotent: a test may stop it before the fixture does)."""
        if not self.thread.is_alive():
            return
        # the server waits at most hardening.SHUTDOWN_TIMEOUT_S for open requests (event
        # streams are ended first); the rest is margin for a loaded machine. Slower than
        # that, the error says what the server's loop was doing (the loop is left running:
        # a second close waits for the same cleanup again)
        if self._cleanup is None:  # one cleanup: a second close waits for the first
            self._cleanup = asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop)
        try:
            self._cleanup.result(CLEANUP_TIMEOUT_S)
        except TimeoutError:
            raise TimeoutError(f"dashboard server cleanup took over {CLEANUP_TIMEOUT_S:g} "
                               f"s; its loop:\n{self._loop_state()}") from None
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)

    def _loop_state(self) -> str:
        """The loop thread's stack and every pending task's (for a slow cleanup)."""
        frame = sys._current_frames().get(self.thread.ident or -1)
        out = ["loop thread:", "".join(traceback.format_stack(frame)) if frame else "  gone"]
        for task in list(asyncio.all_tasks(self.loop)):
            buf = io.StringIO()
            task.print_stack(limit=8, file=buf)
            out.append(buf.getvalue())
        return "\n".join(out)


def call(url: str, *, token: str | None = TOKENS.admin, method: str = "GET"
         ) -> tuple[int, dict[str, str], bytes]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    req = urllib.request.Request(url, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=15) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def get_json(url: str, *, token: str | None = TOKENS.admin, method: str = "GET"
             ) -> tuple[int, Any]:
    status, headers, body = call(url, token=token, method=method)
    assert headers.get("Content-Type", "").startswith("application/json"), (status, body[:200])
    return status, json.loads(body)


def run_async(coro: Any, timeout_s: float = 120.0) -> Any:
    """``asyncio.run`` in a fresh thread (Playwright's sync API keeps a loop in this one)."""
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["value"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            out["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout_s)
    if t.is_alive():
        raise TimeoutError("coroutine did not finish")
    if "error" in out:
        raise out["error"]
    return out.get("value")
