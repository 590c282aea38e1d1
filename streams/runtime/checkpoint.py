"""The internal state store: stage checkpoints and the internal ex-post ledger.

Checkpoints hold sensitive state — true partial counts, the hourly count history of
MIDE and PeGaSus state (occupancy stage), pseudonym location trails (presence stage) —
so they live in the internal *state store* (``Settings.state_store_url``), never in the
analysts' read model. Each checkpoint is one key written by a single-key
compare-and-set script that never moves backwards, so it needs no transaction with the
read model. MIDE's per-predicate ex-post ε goes to the state store's
``ledger:expost`` only, never to a topic, the read model or an alert.
"""

from __future__ import annotations

import json
from typing import Any

from occupancy import redis_layout as rl
from streams.pipeline.release import TickOutput

EXPOST_MAXLEN = 100_000

_CAS = """
local cur = redis.call('HGET', KEYS[1], 'offset')
if cur and tonumber(cur) >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'offset', ARGV[1], 'data', ARGV[2])
return 1
"""


class CheckpointStore:
    """Stage checkpoints of one app in the state store (``redis.asyncio``, lazy)."""

    def __init__(self, url: str, app_id: str) -> None:
        self.url = url
        self.app_id = app_id
        self._client: Any = None
        self._cas: Any = None

    async def client(self) -> Any:
        """The async client (created in the running event loop)."""
        if self._client is None:
            import redis.asyncio as aredis

            self._client = aredis.Redis.from_url(
                self.url, socket_connect_timeout=30, socket_timeout=60,
                health_check_interval=30)
            self._cas = self._client.register_script(_CAS)
        return self._client

    async def load(self, stage: str, partition: int) -> bytes | None:
        """The checkpoint of (stage, partition), or None."""
        r = await self.client()
        return await r.hget(rl.state_key(self.app_id, stage, partition), "data")

    async def save(self, stage: str, partition: int, offset: int, data: bytes) -> None:
        """Store a checkpoint unless one at this offset or later is already there."""
        await self.client()
        await self._cas(keys=[rl.state_key(self.app_id, stage, partition)],
                        args=[offset, data])

    async def write_expost(self, out: TickOutput) -> int:
        """See :func:`write_expost`."""
        return await write_expost(await self.client(), out)

    async def aclose(self) -> None:
        """Close the client."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None


async def write_expost(state: Any, out: TickOutput) -> int:
    """Append a tick's ex-post ε entries to the state store's ``ledger:expost`` (idempotent).

    Args:
        state: ``redis.asyncio`` client of the internal state store — never the read model.
        out: the tick's output; its ``expost`` entries are written in order.

    Returns:
        The number of entries appended (0 on a replay of a tick already written).
    """
    if not out.expost:
        return 0
    ms = round(float(out.tick) * 1000)
    pipe = state.pipeline(transaction=False)
    for seq, entry in enumerate(out.expost):
        pipe.xadd(rl.EXPOST_STREAM, {"data": json.dumps(entry)}, id=f"{ms}-{seq}",
                  maxlen=EXPOST_MAXLEN, approximate=True)
    added = 0
    for res in await pipe.execute(raise_on_error=False):
        if isinstance(res, Exception):
            if "equal or smaller" not in str(res):
                raise res
        else:
            added += 1
    return added


