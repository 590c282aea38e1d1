"""Final ticks, releases and idle-partition markers (runtime of the occupancy stage).

Runs :mod:`streams.pipeline.occupancy` and :mod:`streams.pipeline.release`.

Per batch of partials: sum them, finalise ticks in order, run the release mechanisms
and MIDE for each final tick, send ``occupancy.true`` / ``occupancy.released`` /
``alerts.firecode`` / ``privacy.ledger`` (unless the read model already has the tick: a
replay), wait for the broker, write the read model, then checkpoint.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from occupancy import redis_layout as rl
from occupancy.buildings import Site
from occupancy.clock import global_clock
from streams.pipeline.occupancy import OccupancyState
from streams.pipeline.presence import sign_marker
from streams.pipeline.release import Releaser, release_record
from streams.runtime.checkpoint import CheckpointStore
from streams.runtime.output import Output
from streams.runtime.ports import ReadModelSink
from streams.settings import Settings

log = logging.getLogger("occustream.pipeline")

STAGE = "occupancy"


class OccupancyRuntime:
    """The occupancy stage of this worker (one owner of ``occupancy.partial``)."""

    def __init__(self, settings: Settings, site: Site, checkpoints: CheckpointStore,
                 output: Output, sink: ReadModelSink) -> None:
        self.s = settings
        self.site = site
        self.checkpoints = checkpoints
        self.output = output
        self.sink = sink
        if settings.eval_mode:
            log.warning(
                "!!! EVALUATION MODE: TRUE occupancy counts are written to Redis %s:* so "
                "utility can be scored. They are sensitive: never run this on real data "
                "that analysts can read. !!!", rl.EVAL_PREFIX)
        self.releaser = Releaser(settings.release_config(), site)
        self.state: OccupancyState | None = None
        self._meta_written = False
        self._stall_tick: float | None = None
        self._stall_since = time.monotonic()
        self._marker_sent: dict[int, float] = {}  # partition → last marker ts
        self.ticks_out = 0
        self.last_tick: float | None = None
        self.latency: list[float] = []

    async def write_meta(self) -> None:
        """Publish the mechanisms' public parameters once per worker."""
        if not self._meta_written:
            await self.sink.write_meta(
                {m: self.releaser.meta(m) for m in self.releaser.mechanisms})
            self._meta_written = True

    async def process_events(self, events: list[Any], topics: dict[str, str]) -> None:
        """Process a batch of partials; release every tick that became final."""
        recs = sorted((ev.message.offset, ev.message.value) for ev in events)
        if not recs:
            return
        p = events[0].message.partition
        st = self.state
        if st is None or st.offset + 1 < recs[0][0]:
            data = await self.checkpoints.load(STAGE, p)
            st = OccupancyState.from_bytes(data) if data else OccupancyState()
            if data:
                log.info("occupancy: resumed from checkpoint at offset %d (tick %s)",
                         st.offset, st.next_tick)
            self.state = st
        final = st.process(recs, self.s.tick_s)
        if not final:
            await self.checkpoints.save(STAGE, p, st.offset, st.to_bytes())
            return
        await self.write_meta()
        outputs = []
        for ft in final:
            states = {m: st.get_mech(m) for m in self.releaser.state_names}
            out, new_states = self.releaser.run(ft.tick, ft.counts, ft.ttl, states)
            for m, b in new_states.items():
                if b is not None:
                    st.set_mech(m, b)
            outputs.append((ft, out))
            if not await self.sink.done(out):
                await self._send(ft, out, topics)
        await self.output.flush()
        for ft, out in outputs:
            await self.sink.write_tick(out, ft.counts if self.s.eval_mode else None)
            await self.checkpoints.write_expost(out)
            self.ticks_out += 1
            self.last_tick = ft.tick
            if ft.wall:
                self.latency.append(time.time() - ft.wall)
                del self.latency[:-1000]
        await self.checkpoints.save(STAGE, p, st.offset, st.to_bytes())

    async def _send(self, ft: Any, out: Any, topics: dict[str, str]) -> None:
        send = self.output.send
        await send(topics["true"], str(int(ft.tick)).encode(), json.dumps(
            {"tick": ft.tick, "site": self.site.id,
             "counts": dict(zip(self.site.location_ids, ft.counts, strict=False))}
        ).encode())
        for rel in out.releases:
            for loc, v in zip(self.site.location_ids, rel.values, strict=False):
                await send(topics["released"], f"{rel.mechanism}:{loc}".encode(),
                           release_record(rel, loc, v))
            for node, vals in rel.extra.items():
                await send(topics["released"], f"{rel.mechanism}:{node}".encode(),
                           release_record(rel, node, vals[0]))
        for alert in out.alerts:
            await send(topics["alerts"], alert["location"].encode(), json.dumps(alert).encode())
        for rec in out.ledger:
            await send(topics["ledger"], rec["mechanism"].encode(), json.dumps(rec).encode())

    async def idle_check(self, obs_topic: str) -> None:
        """Unblock ticks held back by idle input partitions (e.g. at night).

        When the next tick has not become final for ``idle_s`` wall seconds, each
        partition it still waits for gets a watermark marker carrying the largest event
        time a majority of partitions has reached and not past wall time + max_future_s
        (:func:`occupancy.clock.global_clock`; markers:
        :func:`~streams.pipeline.presence.sign_marker`), so one partition pushed ahead
        is never copied to the others.
        """
        st = self.state
        if st is None or st.partitions is None:
            return
        now = time.monotonic()
        if st.next_tick != self._stall_tick:
            self._stall_tick, self._stall_since = st.next_tick, now
            return
        if now - self._stall_since < self.s.idle_s:
            return
        g = global_clock([st.max_ts.get(str(p)) or None for p in range(st.partitions)],
                         st.partitions, wall=time.time(), max_future_s=self.s.max_future_s)
        if g is None or g <= 0:
            return
        sent = []
        for p in st.blocking():
            if st.max_ts.get(str(p), 0.0) >= g or self._marker_sent.get(p) == g:
                continue
            await self.output.send(obs_topic, b"__watermark__",
                                   sign_marker(g, self.s.secret, p), partition=p)
            self._marker_sent[p] = g
            sent.append(p)
        if sent:
            await self.output.flush()
            log.info("idle partitions %s: watermark marker %.0f sent", sent, g)
