"""The Faust app with a short broker fetch wait for its consumer (``occupancy.partial``).

Faust builds its aiokafka consumer with ``fetch_max_wait_ms=1500`` hard-coded
(``faust.transport.drivers.aiokafka.AIOKafkaConsumerThread._create_worker_consumer``).
The embedded broker (Tansu, :mod:`infra.services`) answers a long-polling fetch late
even when records arrived meanwhile: a record sent every 0.25 s to one partition reached
an aiokafka consumer after 0.35 s at the median (0.61 s p95; 20 records) with a 1.5-s
wait, 0.24 s with 0.5 s, 9 ms (19 ms) with 0.1 s.
Every final tick waits for its partial on that fetch, so the wait dominated the tick
latency (``python -m bench pipeline``, ``tick_latency_p95_s``; figures in
bench/bench_pipeline.py). :class:`App` uses :data:`FETCH_MAX_WAIT_MS` instead; only the
wait changes (delivery, commits, rebalances are Faust's own). The cost is one empty
fetch per partition every :data:`FETCH_MAX_WAIT_MS` while the partials are idle.
"""

from __future__ import annotations

import logging
from typing import Any

import faust
from faust.transport import by_url
from faust.transport.drivers import aiokafka as faust_aiokafka

log = logging.getLogger("occustream.pipeline")

#: The longest time the broker may hold a fetch of the Faust consumer (ms).
FETCH_MAX_WAIT_MS = 100


class _ConsumerThread(faust_aiokafka.AIOKafkaConsumerThread):  # type: ignore[misc]
    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        # read by AIOKafkaConsumer.start() when it builds its Fetcher
        if hasattr(consumer, "_fetch_max_wait_ms"):
            consumer._fetch_max_wait_ms = FETCH_MAX_WAIT_MS
        else:  # another aiokafka: keep Faust's wait (slower ticks, same results)
            log.warning("faust consumer: fetch wait not set (aiokafka changed); "
                        "tick latency may exceed 1 s")
        return consumer


class _Consumer(faust_aiokafka.Consumer):  # type: ignore[misc]
    def _new_consumer_thread(self) -> _ConsumerThread:
        return _ConsumerThread(self, loop=self.loop, beacon=self.beacon)


class _Transport(faust_aiokafka.Transport):  # type: ignore[misc]
    Consumer = _Consumer


class App(faust.App):  # type: ignore[misc]
    """A ``faust.App`` whose Kafka consumer fetches with :data:`FETCH_MAX_WAIT_MS`."""

    def _new_transport(self) -> Any:
        if by_url(self.conf.broker_consumer[0]) is not faust_aiokafka.Transport:
            return super()._new_transport()  # another driver: Faust's own
        return _Transport(self.conf.broker_consumer, self)
