"""The demo's speed control: the page → Redis (``demo:speed``) → the paced producer.

Real Redis, the real broker, the real producer (:func:`simulator.kafka.produce` with
:class:`occustream.demo_feed.RedisPace`) and, in the browser test, headless Chromium.
The producer sends one record per 10 simulated seconds; which record it pulls when is
recorded, so the pace measured is the pace records really left at.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
import redis
from dash_support import TOKENS, Served

from dashboards.synthetic import seed
from occustream.demo_feed import RedisPace
from readmodel.reader import read_demo_speed
from readmodel.writer import queue_demo_clock, queue_demo_speed
from simulator.kafka import produce

START = 1_768_293_000  # Tue 2026-01-13 08:30 UTC
STEP_S = 10  # simulated seconds between two records


class PacedProducer:
    """``produce`` in a thread at the pace the read model asks for."""

    def __init__(self, bootstrap: str, topic: str, redis_url: str, speed: float) -> None:
        self.client = redis.Redis.from_url(redis_url)
        pipe = self.client.pipeline()
        queue_demo_speed(pipe, speed)
        pipe.execute()
        self.pulled: list[tuple[float, float]] = []  # (wall, simulated) per record pulled
        self.stop = threading.Event()

        def records() -> Any:
            t = START
            while not self.stop.is_set():
                self.pulled.append((time.monotonic(), float(t)))
                yield b"dev-%d" % (t % 5), b"{}", float(t)
                t += STEP_S

        self.thread = threading.Thread(
            target=produce, args=(records(), bootstrap, topic),
            kwargs={"speed": speed, "control": RedisPace(self.client)}, daemon=True)
        self.thread.start()

    def ask(self, speed: float) -> float:
        pipe = self.client.pipeline()
        queue_demo_speed(pipe, speed)
        pipe.execute()
        return time.monotonic()

    def pace(self, t0: float, t1: float) -> float:
        """Simulated seconds per wall second of the records pulled in [t0, t1]."""
        got = [(w, s) for w, s in self.pulled if t0 <= w <= t1]
        assert len(got) >= 3, got
        return (got[-1][1] - got[0][1]) / (got[-1][0] - got[0][0])

    def close(self) -> None:
        self.stop.set()
        self.ask(3600)  # out of a pause: the next pull ends the records
        self.thread.join(timeout=20)
        self.client.close()


@pytest.fixture
def producer(kafka_bootstrap: str, make_topics: Any, topic_prefix: str, redis_url: str,
             redis_client: Any) -> Any:
    topic = f"{topic_prefix}wifi.observations"
    make_topics({topic: 2})
    p = PacedProducer(kafka_bootstrap, topic, redis_url, 30.0)
    try:
        yield p
    finally:
        p.close()


@pytest.mark.e2e
def test_speed_control_changes_the_pace(producer: PacedProducer, redis_client: Any) -> None:
    # pace windows start 0.6 s after a change: the producer reads the key every 0.25 s
    time.sleep(2.2)
    before = producer.pace(time.monotonic() - 1.8, time.monotonic())
    t = producer.ask(120.0) + 0.6
    time.sleep(2.2)
    after = producer.pace(t, time.monotonic())
    # ×30 → ×120: four times the pace; accept [2.5, 6] (scheduling jitter on a loaded
    # machine; an ignored change gives 1, a doubled speed 2)
    assert 2.5 < after / before < 6.0, (before, after)
    assert 20 < before < 45, before
    clock = json.loads(redis_client.get("demo:clock"))
    assert clock["speed"] == 120.0
    # pause: nothing leaves, the clock stands still
    t = producer.ask(0.0) + 0.6
    time.sleep(1.6)
    assert [w for w, _ in producer.pulled if w > t] == []
    sim_a = json.loads(redis_client.get("demo:clock"))["sim_ts"]
    time.sleep(1.2)
    assert json.loads(redis_client.get("demo:clock"))["sim_ts"] == sim_a
    assert read_demo_speed(redis_client) == 0.0


@pytest.mark.browser
@pytest.mark.e2e
def test_page_speed_buttons_change_the_producers_pace(
        campus: Any, redis_url: str, redis_client: Any, producer: PacedProducer,
        page: Any) -> None:
    from playwright.sync_api import expect

    seed(redis_client, campus, days=2, last_day_ticks=12, mechs=("laplace",))
    queue_demo_clock(redis_client, START, 30.0)
    served = Served(campus, redis_url, demo_control=True)
    try:
        page.goto(f"{served.url}/#token={TOKENS.analyst}")
        page.wait_for_selector("body[data-ready='1']", timeout=15_000)
        page.wait_for_selector("#demo-pace:not([hidden])", timeout=10_000)
        expect(page.locator("#demo-speed")).to_have_text("×30", timeout=10_000)
        first = page.inner_text("#demo-clock")
        assert first.startswith("Tue ")
        page.click("#demo-buttons button[data-speed='120']")
        # the producer reads the new pace and reports it: the page shows ×120
        expect(page.locator("#demo-speed")).to_have_text("×120", timeout=10_000)
        assert read_demo_speed(redis_client) == 120.0
        assert page.get_attribute("#demo-buttons button[data-speed='120']",
                                  "aria-pressed") == "true"
        page.click("#demo-buttons button[data-speed='0']")
        expect(page.locator("#demo-speed")).to_have_text("paused", timeout=10_000)
        a = page.inner_text("#demo-clock")
        time.sleep(1.5)
        assert page.inner_text("#demo-clock") == a  # paused: the clock stands still
        assert a != first
        assert page.js_errors == []
    finally:
        served.close()


def _post(url: str, body: Any, token: str | None = TOKENS.admin) -> int:
    import json
    import urllib.error
    import urllib.request

    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers,
                                 method="POST")
    try:
        with urllib.request.urlopen(req, timeout=15) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_speed_endpoint_only_inside_the_demo(campus: Any, redis_url: str,
                                             redis_client: Any) -> None:
    from dash_support import get_json

    off = Served(campus, redis_url)
    on = Served(campus, redis_url, demo_control=True)
    try:
        assert get_json(f"{off.url}/api/demo")[1]["enabled"] is False
        assert _post(f"{off.url}/api/demo/speed", {"speed": 10}) == 404
        assert read_demo_speed(redis_client) is None
        for bad in ({"speed": -1}, {"speed": "fast"}, {"speed": 1e9}, [], {"speed": True}):
            assert _post(f"{on.url}/api/demo/speed", bad) == 400, bad
        assert read_demo_speed(redis_client) is None
        assert _post(f"{on.url}/api/demo/speed", {"speed": 10}, TOKENS.analyst) == 200
        assert read_demo_speed(redis_client) == 10.0
        assert _post(f"{on.url}/api/demo/speed", {"speed": 30}, None) == 401
        assert read_demo_speed(redis_client) == 10.0
        status, body = get_json(f"{on.url}/api/demo")
        assert status == 200 and body["enabled"] is True and body["clock"] is None
    finally:
        off.close()
        on.close()
