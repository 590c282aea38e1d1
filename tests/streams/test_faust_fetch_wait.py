"""The Faust consumer fetches with a short broker wait (the tick latency depends on it).

``streams/faust_kafka.py``: Faust hard-codes a 1.5-s fetch wait, which the embedded broker
spends in full; the partials' fetch then set the tick latency (bench/bench_pipeline.py).
"""

from __future__ import annotations

import asyncio

from readmodel.writer import PipelineSink
from streams.app import build_app
from streams.faust_kafka import FETCH_MAX_WAIT_MS
from streams.settings import load_settings


def test_worker_consumer_fetches_with_the_short_wait() -> None:
    s = load_settings(env={"OCCUSTREAM_SECRET": "fetch-wait-secret-0123456789abcdef",
                           "KAFKA_BOOTSTRAP": "127.0.0.1:1", "REDIS_URL": "redis://127.0.0.1:1"})
    app, _ = build_app(s, PipelineSink.for_settings)

    async def create() -> int:  # aiokafka wants a running loop; nothing connects
        thread = app.consumer._new_consumer_thread()
        consumer = thread._create_worker_consumer(app.transport)
        return consumer._fetch_max_wait_ms

    assert FETCH_MAX_WAIT_MS <= 200
    assert asyncio.run(create()) == FETCH_MAX_WAIT_MS
