"""observe + presence per input partition, with checkpoints.

Runs :mod:`streams.pipeline.presence`.

Per batch: process each partition's records in offset order, send DLQ records and
partial counts, wait for the broker, then checkpoint each partition's state with the
last offset it includes — so a crash replays from the checkpoint and skips nothing.
Each checkpoint also records its log generation and the fingerprint of the record at
its offset, so :mod:`streams.runtime.ingest` can tell a reset broker log from a replay
(:meth:`PresenceRuntime.rebase`).
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections import defaultdict
from typing import Any

from mechanisms.registry import reads_ttl_counts
from occupancy.buildings import Site
from streams.pipeline.identity import pseudonymizer, ttl_step
from streams.pipeline.presence import PartitionState, StageConfig
from streams.runtime.checkpoint import CheckpointStore
from streams.runtime.kafkalog import fingerprint
from streams.runtime.output import Output
from streams.runtime.ports import ReadModelSink
from streams.runtime.resilience import Status, retry_redis
from streams.settings import Settings

log = logging.getLogger("occustream.pipeline")

STAGE = "presence"


def stage_config(settings: Settings, site: Site) -> StageConfig:
    """The presence stage's small config object (no Kafka, ports or paths)."""
    return StageConfig(
        ap_location=dict(site.ap_location), location_index=dict(site.location_index),
        tick_s=settings.tick_s, validity_s=settings.validity_s,
        lateness_s=settings.lateness_s, max_future_s=settings.max_future_s,
        ttl_s=settings.ttl_s, secret=settings.secret,
        track_ttl=reads_ttl_counts(settings.mechanisms),
        max_marker_jump_s=settings.max_marker_jump_s, clock_quorum=settings.clock_quorum,
    )


class PresenceRuntime:
    """The presence states of the partitions this worker owns."""

    def __init__(self, settings: Settings, site: Site, checkpoints: CheckpointStore,
                 output: Output, sink: ReadModelSink, status: Status | None = None) -> None:
        self.s = settings
        self.status = status
        self.site = site
        self.cfg = stage_config(settings, site)
        self.pseudonym = pseudonymizer(settings.secret)
        self.checkpoints = checkpoints
        self.output = output
        self.sink = sink
        self.states: dict[int, PartitionState] = {}
        self.gens: dict[int, int] = {}  # partition → log generation of its checkpoint
        self.fps: dict[int, str] = {}  # partition → fingerprint of the record at its offset
        self.events_in = 0
        self._lock: asyncio.Lock | None = None

    def lock(self) -> asyncio.Lock:
        """Serialises batches with rebalance callbacks (both replace partition states)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    async def resume(self, p: int) -> PartitionState | None:
        """Load partition ``p``'s checkpoint (None when it has none)."""
        self.states.pop(p, None)
        ck = await self.checkpoints.load_checkpoint(STAGE, p)
        if ck is None:
            return None
        st = PartitionState.from_bytes(ck.data)
        self.states[p] = st
        self.gens[p], self.fps[p] = ck.gen, ck.fp
        return st

    def rebase(self, p: int, log_start: int) -> None:
        """Continue partition ``p``'s state on a new log that starts at ``log_start``.

        The broker's log was reset (docs/ARCHITECTURE.md "Failure model"): the state
        (devices, watermark, ticks already reported) is kept, so nothing already
        reported is reported again; the new log is read from its start with the next
        log generation, whose checkpoints replace the old ones.
        """
        st = self.states.get(p)
        if st is None:
            return
        st.offset = log_start - 1
        self.gens[p] = self.gens.get(p, 0) + 1
        self.fps[p] = ""

    def forget(self, p: int) -> None:
        """Drop a revoked partition's state (its checkpoint stays)."""
        self.states.pop(p, None)

    async def _state(self, p: int, first_offset: int) -> PartitionState:
        st = self.states.get(p)
        if st is not None and st.offset + 1 >= first_offset:
            return st
        st = await self.resume(p)
        if st is None:
            st = self.states[p] = PartitionState(p)
        else:
            log.info("presence partition %d: resumed from checkpoint at offset %d",
                     p, st.offset)
        return st

    async def process_events(self, events: list[Any], partial_topic: str,
                             dlq_topic: str) -> None:
        """Process one batch of Faust events (partitions mixed)."""
        by_p: dict[int, list[tuple[int, bytes]]] = defaultdict(list)
        for ev in events:
            m = ev.message
            by_p[m.partition].append((m.offset, m.value))
        await self.process(by_p, partial_topic, dlq_topic)

    async def process(self, by_p: dict[int, list[tuple[int, bytes]]],
                      partial_topic: str, dlq_topic: str) -> dict[int, int]:
        """Process records per partition, send outputs, checkpoint; return new offsets."""
        async with self.lock():
            return await self._process(by_p, partial_topic, dlq_topic)

    async def _process(self, by_p: dict[int, list[tuple[int, bytes]]],
                       partial_topic: str, dlq_topic: str) -> dict[int, int]:
        touched = []
        for p, recs in by_p.items():
            recs.sort()
            st = await self._state(p, recs[0][0])
            res = st.process(recs, self.cfg, self.pseudonym,
                             ttl_step if self.cfg.track_ttl else None)
            for o, v in reversed(recs):  # the record at the new offset, if in this batch
                if o <= st.offset:
                    if o == st.offset:
                        self.fps[p] = fingerprint(v)
                    break
            self.events_in += res.processed
            for d in res.dlq:
                await self.output.send(dlq_topic, None, d)
            for part in res.partials:
                key = str(int(part.tick) if part.tick.is_integer() else part.tick).encode()
                # partition 0 always: one owner sees every partial, whatever the
                # topic's partition count (Tansu auto-creates topics with 4)
                await self.output.send(partial_topic, key,
                                       part.to_json(self.s.partitions, self.site.id),
                                       partition=0)
            touched.append((st, bool(res.dlq)))
        await self.output.flush()
        for st, dlq in touched:
            p = st.partition
            await self.checkpoints.save(STAGE, p, st.offset, st.to_bytes(),
                                        gen=self.gens.get(p, 0), fp=self.fps.get(p, ""))
            if dlq:
                counts = dict(st.dlq_counts)
                await retry_redis(self.status, "dlq counts", lambda p=p, c=counts: (
                    self.sink.write_dlq_counts(self.s.app_id, p, c)))
        return {st.partition: st.offset for st, _ in touched}

    def watermarks(self) -> dict[int, float | None]:
        """Each owned partition's watermark."""
        return {p: st.watermark(self.s.lateness_s) for p, st in self.states.items()}

    def dlq_totals(self) -> dict[str, int]:
        """Dead-letter counts by reason over the owned partitions."""
        return dict(sum((collections.Counter(st.dlq_counts) for st in self.states.values()),
                        collections.Counter()))
