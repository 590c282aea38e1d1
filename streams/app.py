"""The Faust application: observe/presence → occupancy → release agents → Redis.

Agents (docs/DESIGN.md "Flow"; the per-stage logic is in :mod:`streams.pipeline`):

``presence`` on ``wifi.observations`` (raw bytes, keyed by MAC, P partitions shared by
the workers): validation + DLQ, AP → location, HMAC and TTL-salt pseudonyms, presence
per device; when a partition's watermark passes a tick it sends its partial counts to
``occupancy.partial``. Raw MACs stop here.

``occupancy`` on ``occupancy.partial`` (1 partition, so one worker at a time): sums the
partials of all P partitions, finalises ticks in order, sends the true counts to
``occupancy.true`` (internal), runs the release mechanisms and MIDE, sends
``occupancy.released`` / ``alerts.firecode`` / ``privacy.ledger`` and fills Redis.

Exactly-once releases on an at-least-once log: see :mod:`streams.runtime.pipeline`.
Faust's wall-clock ``on_window_close`` is not used. Checkpoints and the internal ex-post
ledger live in the internal state store (:mod:`streams.runtime.checkpoint`), never in the
analysts' read model, which the runtime reaches only through the
:class:`~streams.runtime.ports.ReadModelSink` the worker passes in.

Records (JSON; docs/DESIGN.md "Topics and records", with these refinements):

* ``occupancy.partial`` (internal, always partition 0, key = tick): one record per
  (presence partition, tick) with the whole location vector, ``{tick, partition,
  partitions, first_tick, site, max_ts, wall, counts: [...], ttl: [...]}`` (vector order
  = ``Site.location_ids``).
* ``occupancy.true`` (internal, key = tick): ``{id, tick, site, counts: {location: n}}``.
* ``occupancy.released`` (key ``mech:location``): ``{id, tick, location, mechanism, value,
  epsilon}``; hierarchical PeGaSus also releases its floor/building nodes this way.
* ``alerts.firecode`` (key = location): ``{tick, location, capacity, algorithm, beta,
  window, id}`` with window ``tick`` or ``hour`` — never an ex-post ε.
* ``privacy.ledger`` (key = mechanism): :class:`mechanisms.accounting.LedgerRecord`
  (its ``release_id`` is the record's id).
* ``id``: deterministic (the same on a replay); the source does not re-send what a topic
  already holds, and consumers drop repeated ids (docs/ARCHITECTURE.md "Failure model").
* ``wifi.observations`` may carry watermark markers ``{"watermark": ts}`` (see
  :func:`streams.pipeline.presence.sign_marker`, HMAC-signed), sent by the occupancy
  stage to idle partitions.
"""

from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path
from typing import Any

import faust

from mechanisms.errors import ConfigError
from occupancy.buildings import Site, load_site
from streams.faust_kafka import App
from streams.runtime.health import prometheus_text
from streams.runtime.pipeline import Pipeline
from streams.runtime.ports import SinkFactory
from streams.settings import Settings

log = logging.getLogger("occustream.pipeline")

#: Topics of the pipeline and their partition counts for given settings.
def pipeline_topics(s: Settings) -> dict[str, int]:
    """Topic name (with prefix) → partitions, for :func:`infra.services.create_topics`."""
    return {
        s.topic("wifi.observations"): s.partitions,
        s.topic("wifi.observations.dlq"): 1,
        s.topic("occupancy.partial"): 1,
        s.topic("occupancy.true"): 1,
        s.topic("occupancy.released"): 1,
        s.topic("alerts.firecode"): 1,
        s.topic("privacy.ledger"): 1,
    }


def build_app(settings: Settings, sink: SinkFactory,
              site: Site | None = None) -> tuple[faust.App, Pipeline]:
    """Create the Faust app and its agents for ``settings``.

    Args:
        settings: the worker's settings.
        sink: builds the read-model sink (:class:`readmodel.writer.PipelineSink`.for_settings
            in the worker; the runtime never imports the read model).
        site: the building model (default: ``settings.site`` loaded).
    """
    site = site or load_site(settings.site)
    if not settings.kafka_bootstrap or not settings.redis_url:
        raise ConfigError("kafka_bootstrap and redis_url are required (KAFKA_BOOTSTRAP, "
                          "REDIS_URL, or run `occustream demo`)")
    data_dir = settings.data_dir or tempfile.mkdtemp(prefix=f"occustream-{settings.app_id}-")
    Path(data_dir).mkdir(parents=True, exist_ok=True)
    app = App(
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
    pipe = Pipeline(settings, site, sink, app)
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
