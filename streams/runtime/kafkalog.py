"""Reading the log of record directly: log identity, catch-up reads and topic tails.

Kafka is the log of record (docs/ARCHITECTURE.md "Failure model"); the runtime reads it
outside the consumer groups for three things:

* :func:`check_position` — is a checkpoint's offset still a position of *this* log?
  A checkpoint stores the last offset it includes and a fingerprint of that record;
  an offset at or beyond the log end, or a different record at that offset, means the
  broker's log was reset, truncated or replaced.
* :func:`read_range` — records ``[start, end)`` of one partition (the occupancy stage
  catches up with what the consumer group already committed past its checkpoint, e.g.
  from offset 0 after the state store lost its data).
* :func:`tail` — the last records of one partition (what an output topic already holds,
  so a replay does not send it again).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

#: Records per fetch of :func:`read_range`.
FETCH_MAX = 50_000


def fingerprint(value: bytes | None) -> str:
    """Short hash of a record value (identifies the record at a checkpoint's offset)."""
    return hashlib.blake2b(value or b"", digest_size=12).hexdigest()


@dataclass(frozen=True)
class Position:
    """Outcome of :func:`check_position`.

    Attributes:
        begin: the partition's log start offset.
        end: its end offset (next offset to be written).
        problem: None when the checkpoint is a position of this log, else why not.
    """

    begin: int
    end: int
    problem: str | None


async def _consumer(bootstrap: str) -> Any:
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                         auto_offset_reset="earliest", fetch_max_bytes=64 << 20,
                         max_partition_fetch_bytes=16 << 20)
    await c.start()
    return c


async def bounds(consumer: Any, tp: TopicPartition) -> tuple[int, int]:
    """(log start, log end) of one partition.

    Tansu 0.6 (memory storage) answers ListOffsets(latest) with the *last batch's base
    offset + 1*, not the log end, so the end is taken from the high watermark of a
    fetch at that offset (what a fetch reports is right); an empty log answers 0.
    """
    begin = int((await consumer.beginning_offsets([tp]))[tp])
    end = int((await consumer.end_offsets([tp]))[tp])
    if end > begin:
        consumer.assign([tp])
        consumer.seek(tp, end - 1)
        await consumer.getmany(tp, timeout_ms=2000, max_records=1)
        hw = consumer.highwater(tp)
        if hw is not None:
            end = max(end, int(hw))
    return begin, end


async def check_position(bootstrap: str, topic: str, partition: int, offset: int,
                         fp: str | None) -> Position:
    """Whether ``offset`` (last offset a checkpoint includes) belongs to the current log.

    Args:
        bootstrap: the broker.
        topic: the topic.
        partition: the partition.
        offset: the checkpoint's last incorporated offset (−1: none, always fine).
        fp: :func:`fingerprint` of the record at ``offset`` when it was processed
            (None / "": not recorded, only the bounds are checked).
    """
    c = await _consumer(bootstrap)
    tp = TopicPartition(topic, partition)
    try:
        begin, end = await bounds(c, tp)
        if offset < 0:
            return Position(begin, end, None)
        if offset >= end:
            return Position(begin, end, (
                f"{topic}:{partition}: checkpoint offset {offset} is beyond the log end "
                f"{end} — the broker's log was reset or truncated"))
        if fp and offset >= begin:
            got = await _read(c, tp, offset, offset + 1)
            if not got or fingerprint(got[0][1]) != fp:
                return Position(begin, end, (
                    f"{topic}:{partition}: the record at checkpoint offset {offset} is not "
                    "the one processed — the broker's log was reset and refilled"))
        return Position(begin, end, None)
    finally:
        await c.stop()


async def _read(c: Any, tp: TopicPartition, start: int, end: int) -> list[tuple[int, bytes]]:
    c.assign([tp])
    c.seek(tp, start)
    out: list[tuple[int, bytes]] = []
    pos = start
    while pos < end:
        got = await c.getmany(tp, timeout_ms=2000, max_records=FETCH_MAX)
        msgs = got.get(tp, [])
        if not msgs:
            if await c.position(tp) >= end:
                break
            continue
        for m in msgs:
            if m.offset >= end:
                return out
            out.append((m.offset, m.value))
            pos = m.offset + 1
    return out


async def read_range(bootstrap: str, topic: str, partition: int, start: int,
                     end: int | None = None) -> tuple[list[tuple[int, bytes]], int]:
    """Records ``(offset, value)`` of ``[max(start, log start), end)`` and the end used.

    ``end`` None: the log end at the time of the call.
    """
    c = await _consumer(bootstrap)
    tp = TopicPartition(topic, partition)
    try:
        begin, log_end = await bounds(c, tp)
        end = log_end if end is None else min(end, log_end)
        start = max(start, begin)
        if start >= end:
            return [], end
        return await _read(c, tp, start, end), end
    finally:
        await c.stop()


async def tail(bootstrap: str, topic: str, partition: int = 0,
               n: int = 5000) -> list[tuple[int, bytes]]:
    """The last ``n`` records of one partition (fewer when the log is shorter)."""
    c = await _consumer(bootstrap)
    tp = TopicPartition(topic, partition)
    try:
        begin, end = await bounds(c, tp)
        start = max(begin, end - n)
        if start >= end:
            return []
        return await _read(c, tp, start, end)
    finally:
        await c.stop()
