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





@pytest.mark.e2e
def test_a_cleanup_started_while_the_loop_is_busy_still_ends(
        campus: Any, redis_url: str, redis_client: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop is busy for 2 s when the server's cleanup is asked for: the helper's
    0.5 s guard fails with the loop thread's stack and every pending task, and the same
    cleanup, waited for again, ends. Found as a browser test's 30 s teardown in CI: the
    cancellations then land inside the Broker's Redis reads and a reader can stay
    "cancelling" for ever; Broker.stop waited for it unboundedly (it now waits
    STOP_TIMEOUT_S). With the unbounded wait, one such round in three hung (measured 2
    of 6), so three rounds: the old code fails this test with probability ≈ 0.7."""
    import time

    import dash_support

    for _ in range(3):
        monkeypatch.setattr(dash_support, "CLEANUP_TIMEOUT_S", 0.5)
        s = dash_support.Served(campus, redis_url)
        s.loop.call_soon_threadsafe(time.sleep, 2.0)  # the loop is busy: cleanup waits
        with pytest.raises(TimeoutError, match="took over 0.5 s") as err:
            s.close()
        assert "loop thread:" in str(err.value) and "Task" in str(err.value)
        monkeypatch.setattr(dash_support, "CLEANUP_TIMEOUT_S", 15.0)
        s.close()  # the same cleanup: it ends
        assert not s.thread.is_alive()


def test_a_cancel_turned_into_an_error_is_still_a_cancel() -> None:
    """What redis-py can do to a cancelled read (raise ConnectionError instead): a retry
    loop that asks cancel_requested stops; outside a cancel it is False."""
    from dashboards.hardening import cancel_requested

    async def reader() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            try:
                raise ConnectionError("Connection closed by server.") from None
            except Exception:  # noqa: BLE001 - what the Broker's retry loops catch
                if cancel_requested():
                    raise asyncio.CancelledError from None
                return "retried"
        return "slept"

    async def main() -> tuple[bool, bool]:
        t = asyncio.create_task(reader())
        await asyncio.sleep(0)
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t
        return cancel_requested(), t.cancelled()

    outside, cancelled = asyncio.run(main())
    assert outside is False and cancelled
