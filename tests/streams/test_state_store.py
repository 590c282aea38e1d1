"""Sensitive pipeline state lives in the internal state store, never in the read model.

Real embedded Kafka and Redis (conftest fixtures): the presence and occupancy stages of
:class:`streams.runtime.pipeline.Pipeline` run one simulated hour; afterwards the read model
(``redis_url``, db 0) holds released values only, and the state store (db 1 by default)
holds the checkpoints (pseudonym trails, true partial counts, PeGaSus / hourly state).
"""

from __future__ import annotations

import asyncio
import types
from typing import Any

import pytest
import redis
from test_pipeline_e2e import read_topic

from occupancy import redis_layout as rl
from occupancy.buildings import load_site
from readmodel.writer import PipelineSink
from streams.app import Pipeline, pipeline_topics
from streams.settings import load_settings, next_db_url

SECRET = "state-store-test-secret-0123456789"
DAY0 = 1_767_600_000.0  # 2026-01-05 08:00 UTC


def _settings(redis_url: str, kafka: str, prefix: str, **extra: Any) -> Any:
    return load_settings(env={"OCCUSTREAM_SECRET": SECRET}, overrides={
        "privacy_unit": "event",  # these tests exercise the event-level releases
        "redis_url": redis_url, "kafka_bootstrap": kafka, "topic_prefix": prefix,
        "app_id": f"{prefix}app", "partitions": 1, **extra})


def _events(records: list[tuple[bytes | None, bytes]]) -> list[Any]:
    return [types.SimpleNamespace(message=types.SimpleNamespace(offset=i, value=v, partition=0))
            for i, (_, v) in enumerate(records)]


def run_hour(s: Any) -> Pipeline:
    """One simulated hour through presence → occupancy → release → cache."""
    from simulator import simulate

    site = load_site(s.site)
    sim = simulate(site, days=1 / 24, seed=5, start=DAY0)
    recs = [(i, value) for i, (_, value, _) in enumerate(sim.records())]
    # a watermark marker far enough ahead finalises every tick of the hour
    from streams.pipeline.presence import sign_marker
    recs.append((len(recs), sign_marker(
        DAY0 + 3600 + s.validity_s + s.lateness_s + s.tick_s, s.secret, 0)))
    pipe = Pipeline(s, site, PipelineSink.for_settings, app=None)

    # read_topic runs its own event loop: drive ours step by step around it
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(pipe.presence_records(
            {0: recs}, s.topic("occupancy.partial"), s.topic("wifi.observations.dlq")))
        partials = read_topic(s.kafka_bootstrap, s.topic("occupancy.partial"))
        outs = {"true": s.topic("occupancy.true"), "released": s.topic("occupancy.released"),
                "alerts": s.topic("alerts.firecode"), "ledger": s.topic("privacy.ledger")}
        loop.run_until_complete(pipe.occupancy_batch(_events(partials), outs))
        assert pipe.ticks_out > 0, "no tick became final"
    finally:
        loop.run_until_complete(pipe.close())
        loop.close()
    return pipe


def test_default_state_store_is_next_database() -> None:
    s = load_settings(env={"OCCUSTREAM_SECRET": SECRET, "REDIS_URL": "redis://h:6379/0"})
    assert s.state_store_url() == "redis://h:6379/1"
    s = load_settings(env={"OCCUSTREAM_SECRET": SECRET, "REDIS_URL": "redis://h:6379/0",
                           "OCCUSTREAM_STATE_REDIS_URL": "redis://other:6379/4"})
    assert s.state_store_url() == "redis://other:6379/4"
    assert next_db_url("unix:///run/r.sock?db=2") == "unix:///run/r.sock?db=3"


@pytest.mark.e2e
def test_checkpoints_only_in_state_store(redis_url: str, redis_client: Any,
                                         kafka_bootstrap: str, make_topics: Any,
                                         topic_prefix: str) -> None:
    s = _settings(redis_url, kafka_bootstrap, topic_prefix)
    state = redis.Redis.from_url(s.state_store_url())
    state.flushdb()
    make_topics(pipeline_topics(s))
    run_hour(s)
    read_keys = {k.decode() for k in redis_client.keys("*")}
    assert read_keys, "the read model was not written"
    assert redis_client.hlen(rl.latest("laplace")) > 0
    assert not [k for k in read_keys if k.startswith("state:")], sorted(read_keys)
    for stage in ("presence", "occupancy"):
        assert state.hget(rl.state_key(s.app_id, stage, 0), "data"), stage
    state.close()


@pytest.mark.e2e
def test_expost_epsilon_only_in_state_store(redis_url: str, redis_client: Any,
                                            kafka_bootstrap: str, make_topics: Any,
                                            topic_prefix: str) -> None:
    import json

    from streams.runtime.checkpoint import write_expost

    # a low threshold so that some location is over capacity and alerts are raised
    s = _settings(redis_url, kafka_bootstrap, topic_prefix, capacity_factor=0.05)
    state = redis.Redis.from_url(s.state_store_url())
    state.flushdb()
    make_topics(pipeline_topics(s))
    pipe = run_hour(s)
    entries = [json.loads(f[b"data"]) for _, f in state.xrange(rl.EXPOST_STREAM)]
    windows = {e["window"] for e in entries}
    assert windows == {"tick", "hour"}, windows
    assert len([e for e in entries if e["window"] == "tick"]) == pipe.ticks_out
    for e in entries:
        assert len(e["epsilons"]) == len(e["predicates"]) > 0
        assert max(e["epsilons"]) <= s.mide_epsilon_max + 1e-9
        assert e["internal"] is True
    # absent from the read model (keys and every stream/hash value) and from alerts
    assert not redis_client.exists(rl.EXPOST_STREAM)
    alerts = [f[b"data"].decode() for _, f in redis_client.xrange(rl.ALERTS_STREAM)]
    alerts += [v.decode() for _, v in read_topic(s.kafka_bootstrap, s.topic("alerts.firecode"))]
    assert alerts, "no alert raised: the check below would be vacuous"
    for a in alerts:
        assert "epsilons" not in a and "ex_post" not in a, a
    for key in redis_client.keys("*"):
        if redis_client.type(key) == b"stream":
            for _, f in redis_client.xrange(key):
                assert b"ex_post" not in f[b"data"], key
    # a replay of the last tick appends nothing
    from streams.pipeline.release import TickOutput

    last = entries[-1]
    replay = TickOutput(float(last["tick"]), [], [], [], [last])
    assert asyncio.run(_expost_once(s.state_store_url(), replay, write_expost)) == 0
    assert state.xlen(rl.EXPOST_STREAM) == len(entries)
    state.close()


async def _expost_once(url: str, out: Any, write: Any) -> int:
    import redis.asyncio as aredis

    client = aredis.Redis.from_url(url)
    try:
        return await write(client, out)
    finally:
        await client.aclose()
