"""Fixtures for the dashboard tests: a campus, a served app (real aiohttp server in a
thread) over the real Redis, and a headless Chromium."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dash_support import CHROMIUM, CHROMIUM_ARGS, Served, campus_dict

from occupancy.buildings import Site, parse_site


@pytest.fixture(scope="session")
def campus_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("buildings") / "testcampus.json"
    p.write_text(json.dumps(campus_dict()))
    return p


@pytest.fixture(scope="session")
def campus() -> Site:
    return parse_site(campus_dict(), "testcampus.json")


@pytest.fixture
def served(campus: Site, redis_url: str, redis_client: Any) -> Iterator[Served]:
    """The app on a fresh (flushed) Redis; write the read model with dashboards.synthetic."""
    s = Served(campus, redis_url)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    # Module scope, not session: Playwright's sync API keeps an event loop running in
    # this thread while it is open, which breaks asyncio.run() in later test modules.
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail("Debian chromium missing: run `make install` (scripts/install-sysdeps.sh)")
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
