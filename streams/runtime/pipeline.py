"""One worker's runtime: checkpoints, output, presence, ingest, occupancy and health.

Exactly-once releases on an at-least-once log (Tansu has no transactions): both stages
batch and, after each batch, (1) send their outputs and wait until the broker has them,
(2) checkpoint their state *with the last input offset it includes* to the state store
(a compare-and-set that never moves backwards), and only then (3) let the batch be
acknowledged, so committed offsets never pass the checkpoint. After a crash, restart or
rebalance a stage reloads the checkpoint and skips records at or below its offset;
everything after is replayed deterministically (noise from ``keyed_rng(secret,
mechanism, tick, …)``), so no tick is skipped, none is released with different values,
no device is counted twice.

Failures (docs/ARCHITECTURE.md "Failure model"): a Redis outage blocks the stages with
capped back-off retries (health ``degraded``), a state store restarted empty is rebuilt
from Kafka, a reset broker log is detected from the checkpoints' positions; the shared
:class:`~streams.runtime.resilience.Status` carries the reasons to the health line.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from typing import Any

from occupancy.buildings import Site
from streams.runtime.checkpoint import CheckpointStore
from streams.runtime.health import health_line, lag_of
from streams.runtime.ingest import Ingest
from streams.runtime.occupancy import OccupancyRuntime
from streams.runtime.output import Output
from streams.runtime.ports import SinkFactory
from streams.runtime.presence import PresenceRuntime
from streams.runtime.resilience import Status
from streams.settings import Settings

log = logging.getLogger("occustream.pipeline")


class Pipeline:
    """The parts of one worker, composed (state in memory, checkpoints in the state store).

    Args:
        settings: the worker's settings.
        site: the building model.
        sink: builds the read-model sink (the layer above the runtime provides it).
        app: the Faust app hosting the agents (its consumer is read for lag), or None.
    """

    def __init__(self, settings: Settings, site: Site, sink: SinkFactory,
                 app: Any = None) -> None:
        self.s = settings
        self.site = site
        self.app = app
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}"
        self.started = time.monotonic()
        self.sink = sink(settings, site)
        self.status = Status()
        self.checkpoints = CheckpointStore(settings.state_store_url(), settings.app_id,
                                           self.status)
        self.output = Output(settings.kafka_bootstrap)
        self.presence = PresenceRuntime(settings, site, self.checkpoints, self.output,
                                        self.sink, self.status)
        self.occupancy = OccupancyRuntime(settings, site, self.checkpoints, self.output,
                                          self.sink, self.status)
        self.ingest = Ingest(settings, self.presence, self.status)

    # the stages' entry points, as the Faust agents and the tests call them
    async def presence_batch(self, events: list[Any], partial_topic: str,
                             dlq_topic: str) -> None:
        """Process one batch of Faust ``wifi.observations`` events."""
        await self.presence.process_events(events, partial_topic, dlq_topic)

    async def presence_records(self, by_p: dict[int, list[tuple[int, bytes]]],
                               partial_topic: str, dlq_topic: str) -> dict[int, int]:
        """Process records per partition; return the new offsets."""
        return await self.presence.process(by_p, partial_topic, dlq_topic)

    async def direct_ingest(self, topic: str, partial_topic: str, dlq_topic: str) -> None:
        """Run the batched consumer group until cancelled."""
        await self.occupancy.write_meta()
        await self.ingest.run(topic, partial_topic, dlq_topic)

    async def occupancy_batch(self, events: list[Any], topics: dict[str, str]) -> None:
        """Process a batch of partials; release every tick that became final."""
        await self.occupancy.process_events(events, topics)

    def owns_partial(self) -> bool:
        """Whether this worker's Faust consumer owns ``occupancy.partial`` (True without app)."""
        if self.app is None:
            return True
        try:
            assigned = self.app.consumer.assignment()
        except Exception:  # noqa: BLE001 - not started yet
            return False
        topic = self.occupancy.partial_topic
        return any(tp.topic == topic and tp.partition == 0 for tp in assigned)

    async def idle_check(self, obs_topic: str) -> None:
        """See :meth:`OccupancyRuntime.idle_check` (only on the owner of the partials)."""
        if not self.owns_partial():
            self.occupancy.release_ownership()
            return
        await self.occupancy.idle_check(obs_topic)

    @property
    def ticks_out(self) -> int:
        """Ticks released by this worker."""
        return self.occupancy.ticks_out

    async def health(self) -> dict[str, Any]:
        """A health/lag line (also written to the read model's ``health:{app_id}``)."""
        consumer = self.ingest.consumer or (self.app.consumer if self.app else None)
        offsets = {p: st.offset + 1 for p, st in self.presence.states.items()}
        occ = self.occupancy
        h = health_line(worker=self.worker_id, started=self.started,
                        events_in=self.presence.events_in, ticks_out=occ.ticks_out,
                        last_tick=occ.last_tick, watermarks=self.presence.watermarks(),
                        lag=lag_of(consumer, offsets) if consumer is not None else {},
                        dlq=self.presence.dlq_totals(), latency=occ.latency,
                        status=self.status.health(),
                        privacy=occ.privacy_status())
        try:
            await self.sink.write_health(self.s.app_id, self.worker_id, h)
        except Exception:  # noqa: BLE001
            log.warning("health: Redis unavailable")
        return h

    async def close(self) -> None:
        """Stop the producer and the Redis clients."""
        await self.output.aclose()
        await self.sink.aclose()
        await self.checkpoints.aclose()
