"""Server shutdown ends every event stream: a full queue or a late subscriber cannot hold it.

Found when a browser test's teardown waited out aiohttp's 60 s shutdown timeout on a
loaded machine: a stream that never receives its end marker keeps the server waiting.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from dash_support import TOKENS

from dashboards.broker import QUEUE_SIZE, Broker


async def _no_tick(mech: str, tick: float) -> dict[str, Any]:
    return {}


def _drain(q: asyncio.Queue) -> list[Any]:
    out = []
    while not q.empty():
        out.append(q.get_nowait())
    return out


def test_close_ends_a_subscriber_whose_queue_is_full() -> None:
    b = Broker(None, _no_tick)
    sub = b.subscribe()
    for i in range(QUEUE_SIZE):
        b.publish(f"e{i}".encode())
    assert sub.queue.full()
    b.close_subscribers()
    got = _drain(sub.queue)
    assert got[-1] is None and len(got) == QUEUE_SIZE  # the oldest event made room
    assert got[0] == b"e1"
    assert not b.subscribers


def test_a_subscriber_after_close_gets_an_ended_stream() -> None:
    b = Broker(None, _no_tick)
    b.close_subscribers()
    sub = b.subscribe()
    assert _drain(sub.queue) == [None]
    assert not b.subscribers


def test_a_falling_behind_subscriber_is_still_dropped_with_an_end_marker() -> None:
    b = Broker(None, _no_tick)
    sub = b.subscribe()
    for i in range(QUEUE_SIZE + 1):
        b.publish(f"e{i}".encode())
    got = _drain(sub.queue)
    assert got[-1] is None and not b.subscribers


@pytest.mark.e2e
def test_stopping_the_server_ends_an_open_event_stream(served: Any) -> None:
    """A client holds /api/events open; the server stops; the client's stream ends and
    the stop returns (Served.close raises TimeoutError if it does not)."""
    import urllib.request

    lines: list[bytes] = []
    opened = threading.Event()

    def client() -> None:
        url = f"{served.url}/api/events?access_token={TOKENS.analyst}"
        with urllib.request.urlopen(url, timeout=60) as r:
            for line in r:
                lines.append(line)
                opened.set()

    t = threading.Thread(target=client, daemon=True)
    t.start()
    assert opened.wait(15), "the event stream did not open"
    served.close()
    t.join(15)
    assert not t.is_alive(), "the client's event stream did not end"
    assert lines[0].startswith(b"event: hello")
