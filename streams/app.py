"""The Faust application: observe/presence → occupancy → release agents → Redis.

Agents (DESIGN.md "Flow"; the per-stage logic is in :mod:`streams.pipeline`):

``presence`` on ``wifi.observations`` (raw bytes, keyed by MAC, P partitions shared by
the workers): validation + DLQ, AP → location, HMAC and TTL-salt pseudonyms, presence
per device; when a partition's watermark passes a tick it sends its partial counts to
``occupancy.partial``. Raw MACs stop here.

``occupancy`` on ``occupancy.partial`` (1 partition, so one worker at a time): sums the
partials of all P partitions, finalises ticks in order, sends the true counts to
``occupancy.true`` (internal), runs the release mechanisms and MIDE, sends
``occupancy.released`` / ``alerts.firecode`` / ``privacy.ledger`` and fills Redis.

Exactly-once releases on an at-least-once log (Tansu has no transactions): both agents
batch with ``stream.take_events`` and, after each batch, (1) send their outputs and wait
until the broker has them, (2) checkpoint their state *with the last input offset it
includes* to the state store (a compare-and-set that never moves backwards), and only then
(3) let Faust ack the batch, so committed offsets never pass the checkpoint. After a
crash, restart or rebalance a stage reloads the checkpoint and skips records at or
below its offset; everything after is replayed deterministically (noise from
``keyed_rng(secret, mechanism, tick, …)``), so no tick is skipped, none is released
with different values, no device is counted twice. Faust's wall-clock
``on_window_close`` is not used.

Two Redis stores (:meth:`streams.settings.Settings.state_store_url`): checkpoints hold
sensitive state — true partial counts, the hourly count history of MIDE and PeGaSus state
(occupancy stage), pseudonym location trails (presence stage) — so they live in the
internal *state store* (by default the read model's server, next database number), never
in the analysts' read model (``redis_url``). Each checkpoint is one key written by a
single-key compare-and-set script, so it needs no transaction with the read model; the
``occ:{mech}:done`` flags that make the read-model writes exactly-once stay in the read
model, in the same MULTI/EXEC as the writes they guard (:mod:`streams.cache`). MIDE's
per-predicate ex-post ε goes to the state store's ``ledger:expost`` only
(:func:`streams.cache.write_expost`), never to a topic, the read model or an alert.

Records (JSON; DESIGN.md "Topics and records", with these refinements):

* ``occupancy.partial`` (internal, always partition 0, key = tick): one record per
  (presence partition, tick) with the whole location vector, ``{tick, partition,
  partitions, first_tick, site, max_ts, wall, counts: [...], ttl: [...]}`` (vector order
  = ``Site.location_ids``).
* ``occupancy.true`` (internal, key = tick): ``{tick, site, counts: {location: n}}``.
* ``occupancy.released`` (key ``mech:location``): ``{tick, location, mechanism, value,
  epsilon}``; hierarchical PeGaSus also releases its floor/building nodes this way.
* ``alerts.firecode`` (key = location): ``{tick, location, capacity, algorithm, beta,
  window}`` with window ``tick`` or ``hour`` — never an ex-post ε.
* ``privacy.ledger`` (key = mechanism): :class:`mechanisms.accounting.LedgerRecord`.
* ``wifi.observations`` may carry watermark markers ``{"watermark": ts}`` (see
  :func:`streams.pipeline.presence.sign_marker`, HMAC-signed), sent by the occupancy
  stage to idle partitions.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import socket
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import faust

from streams import redis_layout as rl
from streams.buildings import Site, load_site
from streams.cache import CacheWriter, write_expost
from streams.pipeline.identity import pseudonymizer, ttl_step
from streams.pipeline.occupancy import OccupancyState
from streams.pipeline.presence import PartitionState, StageConfig, sign_marker
from streams.pipeline.release import Releaser, release_record
from streams.settings import Settings

log = logging.getLogger("occustream.pipeline")

#: Topics of the pipeline and their partition counts for given settings.
def pipeline_topics(s: Settings) -> dict[str, int]:
    """Topic name (with prefix) → partitions, for :func:`streams.services.create_topics`."""
    return {
        s.topic("wifi.observations"): s.partitions,
        s.topic("wifi.observations.dlq"): 1,
        s.topic("occupancy.partial"): 1,
        s.topic("occupancy.true"): 1,
        s.topic("occupancy.released"): 1,
        s.topic("alerts.firecode"): 1,
        s.topic("privacy.ledger"): 1,
    }


_CAS = """
local cur = redis.call('HGET', KEYS[1], 'offset')
if cur and tonumber(cur) >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'offset', ARGV[1], 'data', ARGV[2])
return 1
"""


class Pipeline:
    """Per-worker runtime of the agents (state in memory, checkpoints in the state store)."""

    def __init__(self, settings: Settings, site: Site, app: faust.App) -> None:
        self.s = settings
        self.site = site
        self.app = app
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}"
        self.cfg = StageConfig(
            ap_location=dict(site.ap_location), location_index=dict(site.location_index),
            tick_s=settings.tick_s, validity_s=settings.validity_s,
            lateness_s=settings.lateness_s, max_future_s=settings.max_future_s,
            ttl_s=settings.ttl_s, secret=settings.secret,
            track_ttl="ttl" in settings.mechanisms,
            max_marker_jump_s=settings.max_marker_jump_s,
        )
        self.pseudonym = pseudonymizer(settings.secret)
        if settings.eval_mode:
            log.warning(
                "!!! EVALUATION MODE: TRUE occupancy counts are written to Redis %s:* so "
                "utility can be scored. They are sensitive: never run this on real data "
                "that analysts can read. !!!", rl.EVAL_PREFIX)
        self.releaser = Releaser(settings, site)
        self.presence: dict[int, PartitionState] = {}
        self.occupancy: OccupancyState | None = None
        self._redis: Any = None
        self._state: Any = None
        self._cache: CacheWriter | None = None
        self._cas: Any = None
        self._consumer: Any = None
        self._producer: Any = None
        self._stall_tick: float | None = None
        self._stall_since = time.monotonic()
        self._marker_sent: dict[int, float] = {}  # partition → last marker ts
        self.events_in = 0
        self.ticks_out = 0
        self.started = time.monotonic()
        self.last_tick: float | None = None
        self.latency: list[float] = []

    # ---- services -------------------------------------------------------------------
    async def redis(self) -> Any:
        """The async Redis client (created in the running event loop)."""
        if self._redis is None:
            import redis.asyncio as aredis

            self._redis = aredis.Redis.from_url(
                self.s.redis_url, socket_connect_timeout=30, socket_timeout=60,
                health_check_interval=30)
            self._cache = CacheWriter(
                self._redis, self.site.location_ids, tick_s=self.s.tick_s,
                retention_ticks=self.s.retention_ticks, eval_mode=self.s.eval_mode)
            await self._cache.write_meta(
                {m: self.releaser.meta(m) for m in self.releaser.mechanisms})
        return self._redis

    async def state(self) -> Any:
        """The async client of the internal state store (checkpoints, ex-post ledger)."""
        if self._state is None:
            import redis.asyncio as aredis

            self._state = aredis.Redis.from_url(
                self.s.state_store_url(), socket_connect_timeout=30, socket_timeout=60,
                health_check_interval=30)
            self._cas = self._state.register_script(_CAS)
        return self._state

    async def send(self, topic: str, key: bytes | None, value: bytes,
                   partition: int | None = None) -> None:
        """Queue one output record (delivery is awaited by :meth:`flush`)."""
        if self._producer is None:
            from aiokafka import AIOKafkaProducer

            self._producer = AIOKafkaProducer(
                bootstrap_servers=self.s.kafka_bootstrap, linger_ms=2,
                max_batch_size=1 << 20, max_request_size=16 << 20)
            await self._producer.start()
        await self._producer.send(topic, value, key=key, partition=partition)

    async def flush(self) -> None:
        """Wait until the broker has every queued output record."""
        if self._producer is not None:
            await self._producer.flush()

    async def close(self) -> None:
        """Stop the producer and the Redis client."""
        if self._producer is not None:
            await self._producer.stop()
            self._producer = None
        if self._redis is not None:
            await self._redis.aclose()
            self._redis = None
        if self._state is not None:
            await self._state.aclose()
            self._state = None

    @property
    def cache(self) -> CacheWriter:
        """The Redis cache writer (after :meth:`redis` was awaited once)."""
        if self._cache is None:
            raise RuntimeError("the Redis client is not connected yet")
        return self._cache

    async def _load(self, stage: str, partition: int) -> bytes | None:
        r = await self.state()
        return await r.hget(rl.state_key(self.s.app_id, stage, partition), "data")

    async def _save(self, stage: str, partition: int, offset: int, data: bytes) -> None:
        await self.state()
        await self._cas(keys=[rl.state_key(self.s.app_id, stage, partition)],
                        args=[offset, data])

    # ---- presence -------------------------------------------------------------------
    async def _presence_state(self, p: int, first_offset: int) -> PartitionState:
        st = self.presence.get(p)
        if st is not None and st.offset + 1 >= first_offset:
            return st
        data = await self._load("presence", p)
        st = PartitionState.from_bytes(data) if data else PartitionState(p)
        if data:
            log.info("presence partition %d: resumed from checkpoint at offset %d", p, st.offset)
        self.presence[p] = st
        return st

    async def presence_batch(self, events: list[Any], partial_topic: str,
                             dlq_topic: str) -> None:
        """Process one batch of Faust ``wifi.observations`` events (partitions mixed)."""
        by_p: dict[int, list[tuple[int, bytes]]] = defaultdict(list)
        for ev in events:
            m = ev.message
            by_p[m.partition].append((m.offset, m.value))
        await self.presence_records(by_p, partial_topic, dlq_topic)

    async def presence_records(self, by_p: dict[int, list[tuple[int, bytes]]],
                               partial_topic: str, dlq_topic: str) -> dict[int, int]:
        """Process records per partition, send outputs, checkpoint; return new offsets."""
        touched = []
        for p, recs in by_p.items():
            recs.sort()
            st = await self._presence_state(p, recs[0][0])
            res = st.process(recs, self.cfg, self.pseudonym,
                             ttl_step if self.cfg.track_ttl else None)
            self.events_in += res.processed
            for d in res.dlq:
                await self.send(dlq_topic, None, d)
            for part in res.partials:
                key = str(int(part.tick) if part.tick.is_integer() else part.tick).encode()
                # partition 0 always: one owner sees every partial, whatever the
                # topic's partition count (Tansu auto-creates topics with 4)
                await self.send(partial_topic, key,
                                part.to_json(self.s.partitions, self.site.id), partition=0)
            touched.append((st, bool(res.dlq)))
        await self.flush()
        for st, dlq in touched:
            await self._save("presence", st.partition, st.offset, st.to_bytes())
            if dlq:
                await self.cache.write_dlq_counts(self.s.app_id, st.partition, st.dlq_counts)
        return {st.partition: st.offset for st, _ in touched}

    async def direct_ingest(self, topic: str, partial_topic: str, dlq_topic: str) -> None:
        """observe/presence with a batched aiokafka consumer group (the fast path).

        Faust's per-event stream machinery caps a Python worker at a few thousand
        events/s here; this consumer hands whole fetches to the stage instead. On
        assignment each partition seeks to its checkpoint (offset + 1), so committed
        offsets are only informational (lag) and a crash never skips a record.
        """
        from aiokafka import AIOKafkaConsumer, TopicPartition
        from aiokafka.abc import ConsumerRebalanceListener

        pipe = self
        await self.redis()

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            async def on_partitions_revoked(self, revoked: Any) -> None:
                for tp in revoked:
                    pipe.presence.pop(tp.partition, None)

            async def on_partitions_assigned(self, assigned: Any) -> None:
                # a failure here is safe: the first batch of a partition loads its
                # checkpoint anyway and skips what it already includes
                for tp in assigned:
                    pipe.presence.pop(tp.partition, None)
                    data = await pipe._load("presence", tp.partition)
                    if data:
                        st = PartitionState.from_bytes(data)
                        pipe.presence[tp.partition] = st
                        consumer.seek(tp, st.offset + 1)
                        log.info("presence partition %d: resumed at offset %d",
                                 tp.partition, st.offset + 1)
                    else:
                        await consumer.seek_to_beginning(tp)

        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.s.kafka_bootstrap,
            group_id=f"{self.s.app_id}-presence",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=int(self.s.session_timeout_s * 1000),
            heartbeat_interval_ms=int(self.s.heartbeat_s * 1000),
            max_poll_records=self.s.batch_max,
            fetch_max_bytes=64 << 20,
            max_partition_fetch_bytes=16 << 20,
        )
        await consumer.start()
        consumer.subscribe([topic], listener=Listener())
        self._consumer = consumer
        try:
            while True:
                fetched = await consumer.getmany(
                    timeout_ms=int(self.s.batch_within_s * 1000),
                    max_records=self.s.batch_max)
                if not fetched:
                    continue
                by_p = {tp.partition: [(m.offset, m.value) for m in msgs]
                        for tp, msgs in fetched.items() if msgs}
                offsets = await self.presence_records(by_p, partial_topic, dlq_topic)
                try:
                    await consumer.commit(
                        {TopicPartition(topic, p): o + 1 for p, o in offsets.items()})
                except Exception as exc:  # noqa: BLE001 - informational (lag) only
                    log.debug("commit skipped: %s", exc)
        finally:
            await consumer.stop()

    # ---- occupancy + release ---------------------------------------------------------
    async def occupancy_batch(self, events: list[Any], topics: dict[str, str]) -> None:
        """Process a batch of partials; release every tick that became final."""
        recs = sorted((ev.message.offset, ev.message.value) for ev in events)
        if not recs:
            return
        p = events[0].message.partition
        st = self.occupancy
        if st is None or st.offset + 1 < recs[0][0]:
            data = await self._load("occupancy", p)
            st = OccupancyState.from_bytes(data) if data else OccupancyState()
            if data:
                log.info("occupancy: resumed from checkpoint at offset %d (tick %s)",
                         st.offset, st.next_tick)
            self.occupancy = st
        final = st.process(recs, self.s.tick_s)
        if not final:
            await self._save("occupancy", p, st.offset, st.to_bytes())
            return
        await self.redis()
        outputs = []
        for ft in final:
            states = {m: st.get_mech(m) for m in self.releaser.state_names}
            out, new_states = self.releaser.run(ft.tick, ft.counts, ft.ttl, states)
            for m, b in new_states.items():
                if b is not None:
                    st.set_mech(m, b)
            outputs.append((ft, out))
            done = await self.cache.done(out)
            tk = str(int(ft.tick)).encode()
            if not done:
                await self.send(topics["true"], tk, json.dumps(
                    {"tick": ft.tick, "site": self.site.id,
                     "counts": dict(zip(self.site.location_ids, ft.counts, strict=False))}
                ).encode())
                for rel in out.releases:
                    for loc, v in zip(self.site.location_ids, rel.values, strict=False):
                        await self.send(topics["released"], f"{rel.mechanism}:{loc}".encode(),
                                        release_record(rel, loc, v))
                    for node, vals in rel.extra.items():
                        await self.send(topics["released"], f"{rel.mechanism}:{node}".encode(),
                                        release_record(rel, node, vals[0]))
                for alert in out.alerts:
                    await self.send(topics["alerts"], alert["location"].encode(),
                                    json.dumps(alert).encode())
                for rec in out.ledger:
                    await self.send(topics["ledger"], rec["mechanism"].encode(),
                                    json.dumps(rec).encode())
        await self.flush()
        for ft, out in outputs:
            await self.cache.write_tick(out, ft.counts if self.s.eval_mode else None)
            await write_expost(await self.state(), out)
            self.ticks_out += 1
            self.last_tick = ft.tick
            if ft.wall:
                self.latency.append(time.time() - ft.wall)
                del self.latency[:-1000]
        await self._save("occupancy", p, st.offset, st.to_bytes())

    async def idle_check(self, obs_topic: str) -> None:
        """Unblock ticks held back by idle input partitions (e.g. at night).

        When the next tick has not become final for ``idle_s`` wall seconds, each
        partition it still waits for gets a watermark marker carrying the largest event
        time any partition has reported (:func:`~streams.pipeline.presence.sign_marker`).
        """
        st = self.occupancy
        if st is None or st.partitions is None:
            return
        now = time.monotonic()
        if st.next_tick != self._stall_tick:
            self._stall_tick, self._stall_since = st.next_tick, now
            return
        if now - self._stall_since < self.s.idle_s:
            return
        g = max(st.max_ts.values(), default=0.0)
        if g <= 0:
            return
        sent = []
        for p in st.blocking():
            if st.max_ts.get(str(p), 0.0) >= g or self._marker_sent.get(p) == g:
                continue
            await self.send(obs_topic, b"__watermark__", sign_marker(g, self.s.secret, p),
                            partition=p)
            self._marker_sent[p] = g
            sent.append(p)
        if sent:
            await self.flush()
            log.info("idle partitions %s: watermark marker %.0f sent", sent, g)

    # ---- health ---------------------------------------------------------------------
    async def health(self) -> dict[str, Any]:
        """A health/lag line (also written to Redis ``health:{app_id}``)."""
        lag: dict[str, int] = {}
        try:
            consumer = self._consumer or self.app.consumer
            for tp in consumer.assignment():
                hw = consumer.highwater(tp)
                pos = self.presence.get(tp.partition) if "observations" in tp.topic else None
                off = pos.offset + 1 if pos else None
                if hw is not None and off is not None:
                    lag[f"{tp.topic}:{tp.partition}"] = max(int(hw) - off, 0)
        except Exception:  # noqa: BLE001 - metrics never break the worker
            pass
        wms = {p: st.watermark(self.s.lateness_s) for p, st in self.presence.items()}
        h = {
            "worker": self.worker_id,
            "uptime_s": round(time.monotonic() - self.started, 1),
            "events_in": self.events_in,
            "events_per_s": round(self.events_in / max(time.monotonic() - self.started, 1e-9)),
            "ticks_released": self.ticks_out,
            "last_tick": self.last_tick,
            "watermarks": wms,
            "lag": lag,
            "partitions": sorted(self.presence),
            "dlq": dict(sum((collections.Counter(st.dlq_counts)
                             for st in self.presence.values()), collections.Counter())),
        }
        if self.latency:
            lat = sorted(self.latency)
            h["tick_latency_p50_s"] = round(lat[len(lat) // 2], 3)
            h["tick_latency_p95_s"] = round(lat[min(int(len(lat) * 0.95), len(lat) - 1)], 3)
            h["tick_latency_n"] = len(lat)
        try:
            r = await self.redis()
            await r.hset(rl.health(self.s.app_id), self.worker_id, json.dumps(h))
        except Exception:  # noqa: BLE001
            log.warning("health: Redis unavailable")
        return h


def prometheus_text(h: dict[str, Any]) -> str:
    """The health line as Prometheus text (no secrets, no counts of people)."""
    lines = []

    def metric(name: str, value: Any, labels: str = "") -> None:
        if isinstance(value, int | float) and value is not None:
            lines.append(f"occustream_{name}{labels} {float(value)}")

    metric("events_in_total", h.get("events_in"))
    metric("ticks_released_total", h.get("ticks_released"))
    metric("last_tick_seconds", h.get("last_tick"))
    metric("tick_latency_p50_seconds", h.get("tick_latency_p50_s"))
    metric("tick_latency_p95_seconds", h.get("tick_latency_p95_s"))
    for p, wm in (h.get("watermarks") or {}).items():
        metric("watermark_seconds", wm, f'{{partition="{p}"}}')
    for reason, n in (h.get("dlq") or {}).items():
        metric("dlq_records_total", n, f'{{reason="{reason}"}}')
    for tp, lag in (h.get("lag") or {}).items():
        metric("consumer_lag", lag, f'{{topic_partition="{tp}"}}')
    return "\n".join(lines) + "\n"


def build_app(settings: Settings, site: Site | None = None) -> tuple[faust.App, Pipeline]:
    """Create the Faust app and its agents for ``settings``."""
    site = site or load_site(settings.site)
    if not settings.kafka_bootstrap or not settings.redis_url:
        from mechanisms.errors import ConfigError

        raise ConfigError("kafka_bootstrap and redis_url are required (KAFKA_BOOTSTRAP, "
                          "REDIS_URL, or run `occustream demo`)")
    data_dir = settings.data_dir or tempfile.mkdtemp(prefix=f"occustream-{settings.app_id}-")
    Path(data_dir).mkdir(parents=True, exist_ok=True)
    app = faust.App(
        settings.app_id,
        broker=f"kafka://{settings.kafka_bootstrap}",
        value_serializer="raw",
        key_serializer="raw",
        store="memory://",
        processing_guarantee="at_least_once",
        broker_session_timeout=settings.session_timeout_s,
        broker_heartbeat_interval=settings.heartbeat_s,
        broker_commit_interval=1.0,
        consumer_auto_offset_reset="earliest",
        web_enabled=settings.web_port > 0,
        web_port=settings.web_port or 6066,
        web_bind="127.0.0.1",
        datadir=data_dir,
        topic_partitions=settings.partitions,
        topic_disable_leader=True,
        stream_buffer_maxsize=max(settings.batch_max * 2, 4096),
        broker_max_poll_records=settings.batch_max,
        producer_linger_ms=5,
        producer_max_batch_size=1 << 20,
    )
    pipe = Pipeline(settings, site, app)
    raw = {"key_type": bytes, "value_type": bytes, "key_serializer": "raw",
           "value_serializer": "raw"}
    t_obs = app.topic(settings.topic("wifi.observations"), partitions=settings.partitions, **raw)
    t_dlq = app.topic(settings.topic("wifi.observations.dlq"), partitions=1, **raw)
    t_partial = app.topic(settings.topic("occupancy.partial"), partitions=1, **raw)
    outs = {
        "true": settings.topic("occupancy.true"),
        "released": settings.topic("occupancy.released"),
        "alerts": settings.topic("alerts.firecode"),
        "ledger": settings.topic("privacy.ledger"),
    }
    n_partial, n_dlq = t_partial.get_topic_name(), t_dlq.get_topic_name()

    if settings.ingest == "faust":
        @app.agent(t_obs, name="presence")
        async def presence(stream: Any) -> None:
            async for events in stream.take_events(settings.batch_max,
                                                   within=settings.batch_within_s):
                await pipe.presence_batch(list(events), n_partial, n_dlq)
    else:
        @app.task
        async def presence_direct() -> None:
            await pipe.direct_ingest(t_obs.get_topic_name(), n_partial, n_dlq)

    @app.agent(t_partial, name="occupancy")
    async def occupancy(stream: Any) -> None:
        async for events in stream.take_events(1000, within=0.05):
            await pipe.occupancy_batch(list(events), outs)

    @app.service
    class Closer(faust.Service):  # type: ignore[misc]
        """Closes the pipeline's producer and Redis client when the app stops."""

        async def on_stop(self) -> None:
            await pipe.close()

    @app.timer(interval=1.0)
    async def idle() -> None:
        await pipe.idle_check(t_obs.get_topic_name())

    if settings.web_port > 0:
        @app.page("/metrics")
        async def metrics_page(web: Any, request: Any) -> Any:
            """Prometheus text exposition of the health line."""
            return web.text(prometheus_text(await pipe.health()),
                            content_type="text/plain; version=0.0.4")

    @app.timer(interval=settings.metrics_interval_s)
    async def metrics() -> None:
        h = await pipe.health()
        log.info("health %s", json.dumps(h, default=str))

    return app, pipe
