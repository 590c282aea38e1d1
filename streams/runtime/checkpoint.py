"""The internal state store: stage checkpoints and the internal ex-post ledger.

Checkpoints hold sensitive state — true partial counts, the hourly count history of
MIDE and PeGaSus state (occupancy stage), pseudonym location trails (presence stage) —
so they live in the internal *state store* (``Settings.state_store_url``), never in the
analysts' read model. Each checkpoint is one key written by a single-key
compare-and-set script that never moves backwards, so it needs no transaction with the
read model. Each checkpoint also stores the *log generation* ``gen`` and the
fingerprint ``fp`` of the record at its offset (:mod:`streams.runtime.kafkalog`): when
the broker's log was reset the stage rebases onto the new log with ``gen + 1``, and the
compare-and-set accepts a lower offset of a newer generation (never of an older one).
Every call is retried while Redis is unavailable (:func:`~streams.runtime.resilience.retry_redis`).
The key :func:`sentinel_key` marks a state store that has not lost its data since the
occupancy stage loaded it (a Redis restarted without persistence comes back without it).
MIDE's per-predicate ex-post ε goes to the state store's
``ledger:expost`` only, never to a topic, the read model or an alert.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from occupancy import redis_layout as rl
from streams.pipeline.release import TickOutput
from streams.runtime.resilience import Status, retry_redis

EXPOST_MAXLEN = 100_000

_CAS = """
local cur = redis.call('HMGET', KEYS[1], 'offset', 'gen')
local g = tonumber(cur[2] or '0')
local ng = tonumber(ARGV[3])
if ng < g then return 0 end
if ng == g and cur[1] and tonumber(cur[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'offset', ARGV[1], 'data', ARGV[2], 'gen', ARGV[3], 'fp', ARGV[4])
return 1
"""


def sentinel_key(app_id: str) -> str:
    """State-store key present while the store keeps the data the stages loaded."""
    return rl.state_key(app_id, "sentinel", 0)


@dataclass(frozen=True)
class Checkpoint:
    """One stored checkpoint: state bytes, last offset, log generation, fingerprint."""

    data: bytes
    offset: int
    gen: int
    fp: str


class CheckpointStore:
    """Stage checkpoints of one app in the state store (``redis.asyncio``, lazy)."""

    def __init__(self, url: str, app_id: str, status: Status | None = None) -> None:
        self.url = url
        self.app_id = app_id
        self.status = status
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
        ck = await self.load_checkpoint(stage, partition)
        return None if ck is None else ck.data

    async def load_checkpoint(self, stage: str, partition: int) -> Checkpoint | None:
        """The checkpoint of (stage, partition) with its offset, generation and fingerprint."""
        key = rl.state_key(self.app_id, stage, partition)

        async def op() -> list[Any]:
            r = await self.client()
            return list(await r.hmget(key, ["data", "offset", "gen", "fp"]))

        data, off, gen, fp = await retry_redis(self.status, f"load {stage}:{partition}", op)
        if not data:
            return None
        fp_s = fp.decode() if isinstance(fp, bytes) else (fp or "")
        return Checkpoint(data, int(off if off is not None else -1), int(gen or 0), fp_s)

    async def save(self, stage: str, partition: int, offset: int, data: bytes, *,
                   gen: int = 0, fp: str = "") -> None:
        """Store a checkpoint (compare-and-set).

        Refused when one of a newer log generation, or of this generation at this
        offset or later, is already there.
        """
        key = rl.state_key(self.app_id, stage, partition)

        async def op() -> Any:
            await self.client()
            return await self._cas(keys=[key], args=[offset, data, gen, fp])

        await retry_redis(self.status, f"checkpoint {stage}:{partition}", op)

    async def mark_loaded(self) -> None:
        """Set :func:`sentinel_key` (the stages loaded their state from this store)."""

        async def op() -> Any:
            return await (await self.client()).set(sentinel_key(self.app_id), b"1")

        await retry_redis(self.status, "sentinel", op)

    async def lost_data(self) -> bool:
        """Whether :func:`sentinel_key` vanished (the store restarted empty).

        One attempt; False while Redis is unreachable (the retrying calls report that).
        """
        try:
            r = await self.client()
            return not await r.exists(sentinel_key(self.app_id))
        except Exception:  # noqa: BLE001 - an outage is reported by retry_redis
            return False

    async def write_expost(self, out: TickOutput) -> int:
        """See :func:`write_expost`."""

        async def op() -> int:
            return await write_expost(await self.client(), out)

        return await retry_redis(self.status, f"ex-post ledger tick {out.tick}", op)

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


