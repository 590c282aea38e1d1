"""The fast ingest path: a batched aiokafka consumer group feeding presence.

Faust's per-event stream machinery caps a Python worker at a few thousand events/s
here; this consumer hands whole fetches to the presence runtime instead. On assignment
each partition seeks to its checkpoint (offset + 1), so committed offsets are only
informational (lag) and a crash never skips a record.

Before seeking, the checkpoint's position is checked against the broker's log
(:func:`streams.runtime.kafkalog.check_position`: log end offset, fingerprint of the
record at the checkpoint's offset); the same check runs when a fetch goes backwards
(the consumer was reset to the log start under a live worker). A reset or truncated log
is reported loudly (ERROR line, health ``degraded``, ``occustream_log_resets_total``) and
the partition continues from the new log's start with its state kept
(:meth:`~streams.runtime.presence.PresenceRuntime.rebase`): nothing is skipped and no
tick already reported is reported again.

Records reach the presence stage as ``(offset, value)`` tuples straight from aiokafka's
fetch buffer (:func:`offset_value_records`): no ``ConsumerRecord`` per event.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.abc import ConsumerRebalanceListener

from streams.runtime.kafkalog import check_position
from streams.runtime.presence import PresenceRuntime
from streams.runtime.resilience import Status
from streams.settings import Settings

log = logging.getLogger("occustream.pipeline")


#: Committed offsets are informational only (lag for outside tools; a partition resumes
#: from its checkpoint), so the group commits at most once per this many seconds, and
#: whenever a poll comes back empty.
COMMIT_INTERVAL_S = 1.0
#: Event-loop turns given to aiokafka's fetcher after each poll: enough for it to send
#: the next fetch for the partitions just drained, whose answer then arrives while the
#: batch is processed (CPU-bound, no await) instead of after it.
FETCHER_TURNS = 4


async def _let_fetcher_run() -> None:
    for _ in range(FETCHER_TURNS):
        await asyncio.sleep(0)


def _offset_value(tp: Any, record: Any) -> tuple[int, bytes | None]:
    return record.offset, record.value


class _OffsetValueFetches(collections.OrderedDict):  # type: ignore[type-arg]
    """aiokafka's buffer of fetched partitions, whose records come out as tuples.

    Each fetched partition's ``PartitionRecords`` builds one ``ConsumerRecord`` per
    record with its ``_consumer_record(tp, record)`` (topic, timestamps, key, sizes,
    headers, …); the presence stage reads the offset and the value only, so for the
    buffers of this one consumer that method is replaced by :func:`_offset_value`.
    """

    def __setitem__(self, tp: Any, result: Any) -> None:
        records = getattr(result, "_partition_records", None)
        if records is not None:
            records._consumer_record = _offset_value
        super().__setitem__(tp, result)


def offset_value_records(consumer: Any) -> bool:
    """Make a started consumer's ``getmany`` return ``(offset, value)`` tuples.

    The hook is per consumer (Faust's consumers in the same process are untouched) and
    relies on aiokafka internals (``Fetcher._records``, an empty ``OrderedDict`` after
    ``start()``, and ``PartitionRecords._consumer_record``); where they are not as
    expected nothing is changed and False is returned. Callers accept both kinds of
    record (:func:`offset_values`), so a future aiokafka only costs speed.
    """
    fetcher = getattr(consumer, "_fetcher", None)
    buf = getattr(fetcher, "_records", None)
    if type(buf) is not collections.OrderedDict or buf:
        return False
    fetcher._records = _OffsetValueFetches()
    return True


def offset_values(msgs: list[Any]) -> list[tuple[int, bytes | None]]:
    """``(offset, value)`` of fetched records: the list itself when already tuples."""
    if msgs and type(msgs[0]) is tuple:
        return msgs
    return [(m.offset, m.value) for m in msgs]


class _Rebalance(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, ingest: Ingest) -> None:
        self.ingest = ingest

    async def on_partitions_revoked(self, revoked: Any) -> None:
        async with self.ingest.presence.lock():
            for tp in revoked:
                self.ingest.presence.forget(tp.partition)

    async def on_partitions_assigned(self, assigned: Any) -> None:
        # a failure here is safe: the first batch of a partition loads its checkpoint
        # anyway and skips what it already includes
        consumer = self.ingest.consumer
        presence = self.ingest.presence
        async with presence.lock():  # a batch in flight finishes (and checkpoints) first
            for tp in assigned:
                st = await presence.resume(tp.partition)
                if st is not None:
                    await self.ingest.verify(tp.topic, tp.partition)
                    consumer.seek(tp, st.offset + 1)
                    log.info("presence partition %d: resumed at offset %d",
                             tp.partition, st.offset + 1)
                else:
                    await consumer.seek_to_beginning(tp)
                    self.ingest.seeks += 1
                    self.ingest.rewound[tp.partition] = self.ingest.seeks


class Ingest:
    """One consumer-group member reading ``wifi.observations``."""

    def __init__(self, settings: Settings, presence: PresenceRuntime,
                 status: Status | None = None) -> None:
        self.s = settings
        self.presence = presence
        self.status = status or Status()
        self.consumer: Any = None
        # partition → number of the rebalance listener's seek to its log start. At the
        # first assignment a fetch races the listener: a batch polled before the seek is
        # followed by the same records again, which is not a reset log (no verify)
        self.seeks = 0
        self.rewound: dict[int, int] = {}

    async def verify(self, topic: str, p: int) -> bool:
        """Check partition ``p``'s checkpoint against the broker's log; rebase on a reset.

        Returns:
            True when the log was found reset (the state now continues on the new log).
        """
        st = self.presence.states.get(p)
        if st is None or st.offset < 0:
            return False
        try:
            pos = await check_position(self.s.kafka_bootstrap, topic, p, st.offset,
                                       self.presence.fps.get(p))
        except Exception as exc:  # noqa: BLE001 - unverifiable: resume as before, say so
            log.warning("presence partition %d: log position not verified: %s", p, exc)
            return False
        if pos.problem is None:
            return False
        log.error("LOG RESET DETECTED %s; presence partition %d continues from the new "
                  "log's start %d (state kept: nothing already reported is reported again)",
                  pos.problem, p, pos.begin)
        self.status.degrade(f"log_reset:{topic}:{p}", pos.problem)
        self.status.count("log_resets")
        self.presence.rebase(p, pos.begin)
        return True

    async def _batch(self, fetched: dict[Any, list[Any]], partial_topic: str,
                     dlq_topic: str, seeks: int) -> dict[int, int]:
        """Process one poll (all partitions); return each partition's new offset.

        ``seeks``: :attr:`seeks` when the poll returned.
        """
        by_p = {tp.partition: offset_values(msgs) for tp, msgs in fetched.items() if msgs}
        async with self.presence.lock():
            for tp in fetched:
                st = self.presence.states.get(tp.partition)
                recs = by_p.get(tp.partition)
                sought = self.rewound.get(tp.partition)
                if sought is not None and sought <= seeks:  # polled after the seek
                    if recs and (st is None or recs[-1][0] > st.offset):
                        del self.rewound[tp.partition]  # the records read again are over
                elif recs and st is not None and recs[0][0] <= st.offset:
                    # a fetch that goes backwards: a replay, or a reset log
                    await self.verify(tp.topic, tp.partition)
        return await self.presence.process(by_p, partial_topic, dlq_topic)

    async def run(self, topic: str, partial_topic: str, dlq_topic: str) -> None:
        """Consume until cancelled."""
        s = self.s
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=s.kafka_bootstrap,
            group_id=f"{s.app_id}-presence",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=int(s.session_timeout_s * 1000),
            heartbeat_interval_ms=int(s.heartbeat_s * 1000),
            max_poll_records=s.batch_max,
            fetch_max_bytes=64 << 20,
            max_partition_fetch_bytes=16 << 20,
        )
        await self.consumer.start()
        if not offset_value_records(self.consumer):
            log.info("ingest: aiokafka's fetch buffer is not as expected; "
                     "reading ConsumerRecords")
        self.consumer.subscribe([topic], listener=_Rebalance(self))
        try:
            pending: dict[int, int] = {}  # partition → offset processed, not yet committed
            committed_at = 0.0
            while True:
                fetched = await self.consumer.getmany(
                    timeout_ms=int(s.batch_within_s * 1000), max_records=s.batch_max)
                if fetched:
                    seeks = self.seeks
                    await _let_fetcher_run()
                    pending.update(await self._batch(fetched, partial_topic, dlq_topic, seeks))
                now = time.monotonic()
                if pending and (not fetched or now - committed_at >= COMMIT_INTERVAL_S):
                    committed_at = now
                    try:
                        await self.consumer.commit(
                            {TopicPartition(topic, p): o + 1 for p, o in pending.items()})
                    except Exception as exc:  # noqa: BLE001 - informational (lag) only
                        log.debug("commit skipped: %s", exc)
                    pending = {}
        finally:
            await self.consumer.stop()
