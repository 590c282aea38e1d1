"""The fast ingest path: a batched aiokafka consumer group feeding presence.

Faust's per-event stream machinery caps a Python worker at a few thousand events/s
here; this consumer hands whole fetches to the presence runtime instead. On assignment
each partition seeks to its checkpoint (offset + 1), so committed offsets are only
informational (lag) and a crash never skips a record.
"""

from __future__ import annotations

import logging
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.abc import ConsumerRebalanceListener

from streams.runtime.presence import PresenceRuntime
from streams.settings import Settings

log = logging.getLogger("occustream.pipeline")


class _Rebalance(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, ingest: Ingest) -> None:
        self.ingest = ingest

    async def on_partitions_revoked(self, revoked: Any) -> None:
        for tp in revoked:
            self.ingest.presence.forget(tp.partition)

    async def on_partitions_assigned(self, assigned: Any) -> None:
        # a failure here is safe: the first batch of a partition loads its checkpoint
        # anyway and skips what it already includes
        consumer = self.ingest.consumer
        for tp in assigned:
            st = await self.ingest.presence.resume(tp.partition)
            if st is not None:
                consumer.seek(tp, st.offset + 1)
                log.info("presence partition %d: resumed at offset %d",
                         tp.partition, st.offset + 1)
            else:
                await consumer.seek_to_beginning(tp)


class Ingest:
    """One consumer-group member reading ``wifi.observations``."""

    def __init__(self, settings: Settings, presence: PresenceRuntime) -> None:
        self.s = settings
        self.presence = presence
        self.consumer: Any = None

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
        self.consumer.subscribe([topic], listener=_Rebalance(self))
        try:
            while True:
                fetched = await self.consumer.getmany(
                    timeout_ms=int(s.batch_within_s * 1000), max_records=s.batch_max)
                if not fetched:
                    continue
                by_p = {tp.partition: [(m.offset, m.value) for m in msgs]
                        for tp, msgs in fetched.items() if msgs}
                offsets = await self.presence.process(by_p, partial_topic, dlq_topic)
                try:
                    await self.consumer.commit(
                        {TopicPartition(topic, p): o + 1 for p, o in offsets.items()})
                except Exception as exc:  # noqa: BLE001 - informational (lag) only
                    log.debug("commit skipped: %s", exc)
        finally:
            await self.consumer.stop()
