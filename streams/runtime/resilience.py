"""Degraded states and retries: a Redis outage or a reset broker log is loud, never fatal.

:class:`Status` is the worker's list of *degraded* reasons (health field ``degraded``,
Prometheus gauge ``occustream_degraded``) and its counters of recoveries.
:func:`retry_redis` runs one state-store / read-model operation until it succeeds, with
exponential back-off capped at :data:`BACKOFF_CAP_S`: a stage blocks (its input waits in
Kafka, nothing is skipped) instead of crashing the worker, and health says why.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from redis import exceptions as redis_errors

log = logging.getLogger("occustream.pipeline")

T = TypeVar("T")

#: First and largest pause between two attempts (seconds): 0.1, 0.2, 0.4, … 5, 5, …
BACKOFF_FIRST_S = 0.1
BACKOFF_CAP_S = 5.0

#: Errors that mean "Redis is unreachable or restarting" (retried), not a bug.
REDIS_UNAVAILABLE: tuple[type[BaseException], ...] = (
    redis_errors.ConnectionError, redis_errors.TimeoutError, ConnectionError,
    asyncio.TimeoutError, OSError)


class Status:
    """Degraded reasons of one worker (``key → message``) and recovery counters."""

    def __init__(self) -> None:
        self.reasons: dict[str, str] = {}
        self.counters: collections.Counter[str] = collections.Counter()

    def degrade(self, key: str, message: str) -> None:
        """Mark the worker degraded for ``key`` (shown until :meth:`recover`)."""
        self.reasons[key] = message

    def recover(self, key: str) -> None:
        """Clear one degraded reason."""
        self.reasons.pop(key, None)

    def count(self, name: str) -> None:
        """Count one event (``redis_outages``, ``log_resets``, ``state_rebuilds``)."""
        self.counters[name] += 1

    def health(self) -> dict[str, Any]:
        """The health fields: ``degraded`` (joined reasons or None), reasons, counters."""
        return {"degraded": "; ".join(self.reasons.values()) or None,
                "degraded_reasons": dict(self.reasons),
                "recoveries": dict(self.counters)}


async def retry_redis(status: Status | None, what: str,
                      op: Callable[[], Awaitable[T]]) -> T:
    """Run ``op`` until it succeeds; retry Redis-unavailable errors with capped back-off.

    Args:
        status: marked degraded (key ``redis``) while the attempts fail; None: not tracked.
        what: the operation, for the log line.
        op: a coroutine factory (called once per attempt).

    Returns:
        The first successful result. Other errors propagate at once.
    """
    delay = BACKOFF_FIRST_S
    failures = 0
    while True:
        try:
            res = await op()
        except REDIS_UNAVAILABLE as exc:
            failures += 1
            if failures == 1:
                log.error("Redis unavailable (%s): %s — retrying with back-off up to %.0f s; "
                          "the stage waits, nothing is skipped", what, exc, BACKOFF_CAP_S)
                if status is not None:
                    status.count("redis_outages")
            if status is not None:
                status.degrade("redis", f"redis unavailable ({what}): {exc}")
            await asyncio.sleep(delay)
            delay = min(delay * 2, BACKOFF_CAP_S)
            continue
        if failures:
            log.warning("Redis available again (%s) after %d failed attempts", what, failures)
            if status is not None:
                status.recover("redis")
        return res
