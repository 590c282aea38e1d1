"""Fan-out of live events to many SSE subscribers from one Redis reader.

One task listens to the ``occ:updates`` pub/sub channel, one follows the ``alerts``
stream and one the ``incidents:events`` stream (XREAD, so every alert and incident
event carries its stream id, which SSE clients get as the event id). Each event is encoded
once and put into every subscriber's bounded queue; a subscriber that falls
``QUEUE_SIZE`` events behind is dropped (its browser reconnects and re-reads the
state), so one slow client never holds up the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from dashboards.hardening import cancel_requested
from occupancy import redis_layout as rl
from readmodel.reader import follow, stream_end

log = logging.getLogger(__name__)

QUEUE_SIZE = 256
#: how long :meth:`Broker.stop` waits for its cancelled Redis readers (they end at once:
#: :func:`dashboards.hardening.cancel_requested`; the bound is a belt so that shutdown can
#: never hang on them)
STOP_TIMEOUT_S = 2.0


def sse_message(event: str, data: Any, event_id: str | None = None) -> bytes:
    """Encode one Server-Sent Event."""
    lines = [f"event: {event}"]
    if event_id:
        lines.append(f"id: {event_id}")
    lines.append("data: " + json.dumps(data, separators=(",", ":")))
    return ("\n".join(lines) + "\n\n").encode()


@dataclass(eq=False)
class Subscriber:
    """One SSE client: its queue and its mechanism filter (None = all)."""

    mech: str | None = None
    queue: asyncio.Queue[bytes | None] = field(
        default_factory=lambda: asyncio.Queue(maxsize=QUEUE_SIZE))


class Broker:
    """Reads Redis once, fans events out to subscribers.

    Args:
        client: a ``redis.asyncio.Redis``.
        on_tick: coroutine ``(mech, tick) -> payload`` that builds the ``tick`` event's
            data once per tick (e.g. the snapshot), shared by all subscribers.
    """

    def __init__(self, client: Any,
                 on_tick: Callable[[str, float], Awaitable[dict[str, Any]]]) -> None:
        self.client = client
        self.on_tick = on_tick
        self.subscribers: set[Subscriber] = set()
        self._tasks: list[asyncio.Task[None]] = []
        self.ready = asyncio.Event()
        self.closed = False  # the server is shutting down: every stream ends

    async def start(self) -> None:
        """Start the Redis readers."""
        self._tasks = [asyncio.create_task(self._updates()),
                       asyncio.create_task(self._follow(rl.ALERTS_STREAM, "alert")),
                       asyncio.create_task(self._follow(rl.INCIDENTS_STREAM, "incident"))]

    async def stop(self) -> None:
        """Stop the readers and end every subscriber's stream."""
        for t in self._tasks:
            t.cancel()
        if self._tasks:
            done, pending = await asyncio.wait(self._tasks, timeout=STOP_TIMEOUT_S)
            for t in done:  # retrieve their outcome: nothing is left unreported
                if not t.cancelled() and t.exception() is not None:
                    log.warning("a Redis reader ended with %r", t.exception())
            if pending:
                log.warning("%d Redis reader(s) still pending %g s after cancel; "
                            "shutting down without them", len(pending), STOP_TIMEOUT_S)
        self.close_subscribers()

    def close_subscribers(self) -> None:
        """End every subscriber's stream, and any that subscribes later.

        The server is shutting down: it then never waits for a stream.
        """
        self.closed = True
        for s in list(self.subscribers):
            self._end(s)

    def _end(self, sub: Subscriber) -> None:
        """Unregister ``sub`` and end its stream.

        A full queue loses its oldest event: the end marker must get in.
        """
        self.subscribers.discard(sub)
        with contextlib.suppress(asyncio.QueueEmpty):
            if sub.queue.full():
                sub.queue.get_nowait()
        sub.queue.put_nowait(None)

    def subscribe(self, mech: str | None = None) -> Subscriber:
        """Register a subscriber (after :meth:`close_subscribers`: an ended one)."""
        sub = Subscriber(mech=mech)
        self.subscribers.add(sub)
        if self.closed:
            self._end(sub)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        """Forget a subscriber."""
        self.subscribers.discard(sub)

    def publish(self, message: bytes, mech: str | None = None) -> None:
        """Put an encoded event in every (matching) subscriber's queue."""
        for sub in list(self.subscribers):
            if mech is not None and sub.mech is not None and sub.mech != mech:
                continue
            try:
                sub.queue.put_nowait(message)
            except asyncio.QueueFull:
                log.warning("dropping a subscriber that fell %d events behind", QUEUE_SIZE)
                self._end(sub)

    async def _updates(self) -> None:
        while True:
            try:
                pubsub = self.client.pubsub(ignore_subscribe_messages=True)
                await pubsub.subscribe(rl.UPDATES_CHANNEL)
                self.ready.set()
                async for msg in pubsub.listen():
                    if msg.get("type") != "message":
                        continue
                    try:
                        doc = json.loads(msg["data"])
                        mech, tick = str(doc["mech"]), float(doc["tick"])
                    except (ValueError, KeyError, TypeError):
                        log.warning("ignoring a malformed %s message", rl.UPDATES_CHANNEL)
                        continue
                    try:
                        payload = await self.on_tick(mech, tick)
                    except Exception:  # noqa: BLE001 - keep serving the other ticks
                        log.exception("cannot build the tick event for %s %s", mech, tick)
                        continue
                    self.publish(sse_message("tick", payload), mech=mech)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - Redis hiccup: reconnect
                if cancel_requested():  # a cancel turned into a Redis error: stop
                    raise asyncio.CancelledError from None
                log.exception("updates listener failed; reconnecting in 1 s")
                await asyncio.sleep(1.0)

    async def _follow(self, stream: str, event: str) -> None:
        """Follow ``stream`` from its end; publish each entry (public fields) as ``event``."""
        last = "$"
        while True:
            try:
                if last == "$":
                    last = await stream_end(self.client, stream)
                async for sid, doc in follow(self.client, stream, last, count=500):
                    self.publish(sse_message(event, doc, event_id=sid))
                    last = sid
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - Redis hiccup: retry
                if cancel_requested():  # a cancel turned into a Redis error: stop
                    raise asyncio.CancelledError from None
                log.exception("%s follower failed; retrying in 1 s", stream)
                await asyncio.sleep(1.0)
