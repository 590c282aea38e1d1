"""Final ticks, releases and idle-partition markers (runtime of the occupancy stage).

Runs :mod:`streams.pipeline.occupancy` and :mod:`streams.pipeline.release`.

Per batch of partials: sum them, finalise ticks in order, run the release mechanisms
and MIDE for each final tick, send ``occupancy.true`` / ``occupancy.released`` /
``alerts.firecode`` / ``privacy.ledger``, wait for the broker, write the read model,
then checkpoint.

Restarts and losses (docs/ARCHITECTURE.md "Failure model"):

* The state is loaded as soon as this worker owns ``occupancy.partial`` — at start by
  :meth:`OccupancyRuntime.idle_check`, not only when a partial arrives — so idle
  partitions get their watermark markers right after a restart.
* Whatever the consumer group committed past the checkpoint is read back from the log
  (:func:`streams.runtime.kafkalog.read_range`): with no checkpoint at all (a state store
  restarted empty) the stage rebuilds from offset 0, recomputing every tick with the
  same keyed noise, and refills the read model; the state store's sentinel
  (:meth:`~streams.runtime.checkpoint.CheckpointStore.lost_data`) triggers the same
  rebuild under a live worker.
* Output records carry deterministic ids (``id``; ledger records ``release_id``). On
  load the stage reads the tail of each output topic and does not send again what is
  already there (ticks before the last tick present, and the ids of that tick): the
  source sends no duplicates, and the ids let consumers drop those of an overlap.
* A checkpoint whose offset is not a position of the current ``occupancy.partial`` log
  (a reset broker) is reported loudly and the stage continues on the new log with its
  state kept, so ticks already released are never released again.
"""

from __future__ import annotations

import asyncio
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
from streams.runtime.kafkalog import check_position, fingerprint, read_range, tail
from streams.runtime.output import Output
from streams.runtime.ports import ReadModelSink
from streams.runtime.resilience import Status, retry_redis
from streams.settings import Settings

log = logging.getLogger("occustream.pipeline")

STAGE = "occupancy"

#: Output topics by role (keys of the ``topics`` argument).
OUTPUTS = ("true", "released", "alerts", "ledger")

#: Records read from the end of each output topic on load (≥ one tick's records).
TAIL_RECORDS = 5000


def _tj(tick: float) -> int | float:
    return int(tick) if float(tick).is_integer() else float(tick)


def alert_id(alert: dict[str, Any]) -> str:
    """Deterministic id of an alert record (same on every replay)."""
    return (f"alert|{alert.get('algorithm')}|{alert.get('window')}|{alert.get('location')}|"
            f"{_tj(alert['tick'])}")


def true_id(tick: float) -> str:
    """Deterministic id of an ``occupancy.true`` record."""
    return f"true|{_tj(tick)}"


def record_id(doc: dict[str, Any]) -> str | None:
    """The deterministic id of an output record (``id``, or a ledger's ``release_id``)."""
    rid = doc.get("id") or doc.get("release_id")
    return None if rid is None else str(rid)


class OccupancyRuntime:
    """The occupancy stage of this worker (one owner of ``occupancy.partial``)."""

    def __init__(self, settings: Settings, site: Site, checkpoints: CheckpointStore,
                 output: Output, sink: ReadModelSink, status: Status | None = None) -> None:
        self.s = settings
        self.site = site
        self.checkpoints = checkpoints
        self.output = output
        self.sink = sink
        self.status = status or Status()
        if settings.eval_mode:
            log.warning(
                "!!! EVALUATION MODE: TRUE occupancy counts are written to Redis %s:* so "
                "utility can be scored. They are sensitive: never run this on real data "
                "that analysts can read. !!!", rl.EVAL_PREFIX)
        self.releaser = Releaser(settings.release_config(), site)
        self.partial_topic = settings.topic("occupancy.partial")
        self.topics = {
            "true": settings.topic("occupancy.true"),
            "released": settings.topic("occupancy.released"),
            "alerts": settings.topic("alerts.firecode"),
            "ledger": settings.topic("privacy.ledger"),
        }
        self.state: OccupancyState | None = None
        self.gen = 0  # log generation of the checkpoint
        self.fp = ""  # fingerprint of the partial at state.offset
        self._rebuild = False
        self._prepare: asyncio.Future[None] | None = None
        self._lock: asyncio.Lock | None = None
        # output role → (last tick on the topic, ids of that tick's records there);
        # (None, ∅): nothing known, send everything
        self._sent: dict[str, tuple[float | None, set[str]]] = {}
        self._meta_written = False
        self._stall_tick: float | None = None
        self._stall_since = time.monotonic()
        self._marker_sent: dict[int, float] = {}  # partition → last marker ts
        self.ticks_out = 0
        self.last_tick: float | None = None
        self.latency: list[float] = []
        self.privacy: dict[str, Any] = {}

    def privacy_status(self) -> dict[str, Any]:
        """Unit, ε_day, δ, spent today and the projection (the last tick's, else today's)."""
        if self.privacy:
            return self.privacy
        return self.releaser.privacy_status(int(time.time() // 86400))

    def _locked(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    async def write_meta(self) -> None:
        """Publish the mechanisms' public parameters once per worker."""
        if not self._meta_written:
            metas = {m: self.releaser.meta(m) for m in self.releaser.mechanisms}
            await retry_redis(self.status, "meta", lambda: self.sink.write_meta(metas))
            self._meta_written = True

    async def process_events(self, events: list[Any], topics: dict[str, str]) -> None:
        """Process a batch of partials; release every tick that became final."""
        recs = sorted((ev.message.offset, ev.message.value) for ev in events)
        if not recs:
            return
        async with self._locked():
            await self._ensure(recs[0][0], topics)
            await self._run(recs, topics)

    def release_ownership(self) -> None:
        """Forget the in-memory state (another worker owns ``occupancy.partial`` now)."""
        self.state = None

    async def _ensure(self, upto: int | None, topics: dict[str, str]) -> None:
        """Have a state that includes every partial before offset ``upto`` (None: log end)."""
        st = self.state
        if st is not None and upto is not None and 0 <= upto <= st.offset:
            # delivered from before the state's offset: a replay, or a reset log
            await self._verify(st)
        if st is None or self._rebuild or (upto is not None and st.offset + 1 < upto):
            await self._load(topics)
            st = self.state
        if st is None or (upto is not None and st.offset + 1 >= upto):
            return
        recs, end = await read_range(self.s.kafka_bootstrap, self.partial_topic, 0,
                                     st.offset + 1, upto)
        if recs:
            log.info("occupancy: read %d partials [%d, %d) from the log to catch up",
                     len(recs), recs[0][0], end)
            await self._run(recs, topics)

    async def _load(self, topics: dict[str, str]) -> None:
        rebuild, self._rebuild = self._rebuild, False
        ck = None if rebuild else await self.checkpoints.load_checkpoint(STAGE, 0)
        if ck is not None and await self.checkpoints.lost_data():
            # a checkpoint written after the store was wiped (e.g. killed before the
            # sentinel check): the state it holds is sound, the read model may not be
            log.error("STATE STORE LOST: a checkpoint but no sentinel (Redis restarted "
                      "empty); rebuilding from the start of %s", self.partial_topic)
            self.status.count("state_rebuilds")
            ck = None
        if ck is not None:
            st = OccupancyState.from_bytes(ck.data)
            self.gen, self.fp = ck.gen, ck.fp
            log.info("occupancy: resumed from checkpoint at offset %d (tick %s)",
                     st.offset, st.next_tick)
        else:
            st, self.fp = OccupancyState(), ""
            log.info("occupancy: no checkpoint; (re)building from the start of %s",
                     self.partial_topic)
        await self._verify(st)
        await self.checkpoints.mark_loaded()
        self._sent = await self._tails(topics)
        self.state = st
        if self._prepare is None:  # sampler tables of the daily cube, off the event loop
            self._prepare = asyncio.get_running_loop().run_in_executor(
                None, self.releaser.prepare)

    async def _verify(self, st: OccupancyState) -> bool:
        """Check ``st.offset`` against the partial log; rebase onto a reset log (True)."""
        if st.offset < 0:
            return False
        try:
            pos = await check_position(self.s.kafka_bootstrap, self.partial_topic, 0,
                                       st.offset, self.fp)
        except Exception as exc:  # noqa: BLE001 - unverifiable: resume as before
            log.warning("occupancy: log position not verified: %s", exc)
            return False
        if pos.problem is None:
            return False
        log.error("LOG RESET DETECTED %s; the occupancy stage continues from the new "
                  "log's start %d with its state kept (ticks before %s are not released "
                  "again)", pos.problem, pos.begin, st.next_tick)
        self.status.degrade(f"log_reset:{self.partial_topic}:0", pos.problem)
        self.status.count("log_resets")
        st.offset, self.gen, self.fp = pos.begin - 1, self.gen + 1, ""
        if self.state is st:  # under a live worker: the output topics' tails changed too
            self._sent = await self._tails(self.topics)
        return True

    async def _tails(self, topics: dict[str, str]) -> dict[str, tuple[float | None, set[str]]]:
        """What each output topic already holds: its last tick and that tick's ids."""
        sent: dict[str, tuple[float | None, set[str]]] = {}
        for role in OUTPUTS:
            try:
                recs = await tail(self.s.kafka_bootstrap, topics[role], 0, TAIL_RECORDS)
            except Exception as exc:  # noqa: BLE001 - unknown: send all (ids mark repeats)
                log.warning("occupancy: tail of %s not read: %s", topics[role], exc)
                recs = []
            last: float | None = None
            ids: set[str] = set()
            for _, v in recs:
                try:
                    d = json.loads(v)
                    t = float(d["tick"])
                except (ValueError, KeyError, TypeError):
                    continue
                rid = record_id(d)
                if last is None or t > last:
                    last, ids = t, set()
                if t == last and rid is not None:
                    ids.add(rid)
            sent[role] = (last, ids)
        return sent

    def _first_send(self, role: str, tick: float, rid: str) -> bool:
        """Whether a record is not on its topic yet (and note it as sent)."""
        last, ids = self._sent.get(role, (None, set()))
        if last is not None and (tick < last or (tick == last and rid in ids)):
            return False
        if last is None or tick > last:
            self._sent[role] = (tick, {rid})
        else:
            ids.add(rid)
        return True

    async def _run(self, recs: list[tuple[int, bytes]], topics: dict[str, str]) -> None:
        st = self.state
        if st is None:
            return
        p = 0  # occupancy.partial has one partition
        final = st.process(recs, self.s.tick_s)
        at = [v for o, v in recs if o == st.offset]
        if at:
            self.fp = fingerprint(at[-1])
        if not final:
            await self.checkpoints.save(STAGE, p, st.offset, st.to_bytes(),
                                        gen=self.gen, fp=self.fp)
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
            self.privacy = out.privacy
            await self._send(ft, out, topics)
        await self.output.flush()
        for ft, out in outputs:
            true = ft.counts if self.s.eval_mode else None
            await retry_redis(self.status, f"read model tick {ft.tick}",
                              lambda out=out, true=true: self.sink.write_tick(out, true))
            await self.checkpoints.write_expost(out)
            self.ticks_out += 1
            self.last_tick = ft.tick
            if ft.wall:
                self.latency.append(time.time() - ft.wall)
                del self.latency[:-1000]
        await self.checkpoints.save(STAGE, p, st.offset, st.to_bytes(), gen=self.gen, fp=self.fp)

    async def _send(self, ft: Any, out: Any, topics: dict[str, str]) -> None:
        send = self.output.send
        tick = float(ft.tick)
        if self._first_send("true", tick, true_id(tick)):
            await send(topics["true"], str(int(ft.tick)).encode(), json.dumps(
                {"id": true_id(tick), "tick": ft.tick, "site": self.site.id,
                 "counts": dict(zip(self.site.location_ids, ft.counts, strict=False))}
            ).encode())
        for rel in out.releases:
            pairs = list(zip(self.site.location_ids, rel.values, strict=False))
            pairs += [(node, vals[0]) for node, vals in rel.extra.items()]
            for loc, v in pairs:
                rec = release_record(rel, loc, v)
                if self._first_send("released", tick, json.loads(rec)["id"]):
                    await send(topics["released"], f"{rel.mechanism}:{loc}".encode(), rec)
        for alert in out.alerts:
            rid = alert_id({**alert, "tick": ft.tick})
            if self._first_send("alerts", tick, rid):
                await send(topics["alerts"], alert["location"].encode(),
                           json.dumps({**alert, "id": rid}).encode())
        for rec in out.ledger:
            if self._first_send("ledger", tick, str(rec.get("release_id"))):
                await send(topics["ledger"], rec["mechanism"].encode(), json.dumps(rec).encode())

    async def check_state_store(self, topics: dict[str, str] | None = None) -> None:
        """Rebuild from Kafka when the state store lost its data under this worker.

        A Redis restarted without persistence comes back empty: its sentinel is gone.
        The state is then rebuilt from offset 0 of ``occupancy.partial`` (same values,
        same keyed noise), refilling the read model; nothing is sent twice to Kafka.
        """
        if self.state is None or not await self.checkpoints.lost_data():
            return
        msg = "the state store lost its data (Redis restarted empty); rebuilding from Kafka"
        log.error("STATE STORE LOST: %s", msg)
        self.status.degrade("state_store_lost", msg)
        self.status.count("state_rebuilds")
        async with self._locked():
            self._rebuild = True
            await self._ensure(None, topics or self.topics)
        self.status.recover("state_store_lost")
        log.warning("occupancy: rebuilt from Kafka up to offset %s (tick %s)",
                    self.state.offset if self.state else None,
                    self.state.next_tick if self.state else None)

    async def idle_check(self, obs_topic: str) -> None:
        """Load the state if needed, then unblock ticks held back by idle input partitions.

        When the next tick has not become final for ``idle_s`` wall seconds, each
        partition it still waits for gets a watermark marker carrying the largest event
        time a majority of partitions has reached and not past wall time + max_future_s
        (:func:`occupancy.clock.global_clock`; markers:
        :func:`~streams.pipeline.presence.sign_marker`), so one partition pushed ahead
        is never copied to the others.
        """
        if self.state is None or self._rebuild:
            async with self._locked():
                if self.state is None or self._rebuild:
                    await self._ensure(None, self.topics)
        else:
            await self.check_state_store()
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
