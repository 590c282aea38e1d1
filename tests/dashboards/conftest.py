"""Fixtures for the dashboard tests: a small two-building campus, a served app (real
aiohttp server in a thread) over the real Redis, and a headless Chromium."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dashboards.app import Tokens, create_app
from streams.buildings import Site, parse_site

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


@pytest.fixture(scope="session")
def campus_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("buildings") / "testcampus.json"
    p.write_text(json.dumps(campus_dict()))
    return p


@pytest.fixture(scope="session")
def campus() -> Site:
    return parse_site(campus_dict(), "testcampus.json")


class Served:
    """A dashboard app served from a background thread."""

    def __init__(self, site: Site, redis_url: str, **kw: Any) -> None:
        from aiohttp import web

        self.loop = asyncio.new_event_loop()
        self.app = create_app(site, redis_url, TOKENS, **kw)
        self.runner = web.AppRunner(self.app)
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.call(self.runner.setup())
        site_ = web.TCPSite(self.runner, "127.0.0.1", 0)
        self.call(site_.start())
        self.port = self.runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.call(self.app[__import__("dashboards.app").app.BROKER].ready.wait())

    def call(self, coro: Any, timeout: float = 20.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.call(self.runner.cleanup())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@pytest.fixture
def served(campus: Site, redis_url: str, redis_client: Any) -> Iterator[Served]:
    """The app on a fresh (flushed) Redis; write the read model with dashboards.synthetic."""
    s = Served(campus, redis_url)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium missing: run bash scripts/install-sysdeps.sh")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.js_errors = errors
    try:
        yield pg
    finally:
        ctx.close()
