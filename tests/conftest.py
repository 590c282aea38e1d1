"""Shared fixtures: real embedded services (Tansu Kafka broker, Redis), started once per
test session (per xdist worker) and stopped at the end — also when tests fail.

Set KAFKA_BOOTSTRAP / REDIS_URL to run the same tests against external services.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from infra.services import EmbeddedKafka, EmbeddedRedis, create_topics

ARTIFACTS = Path(os.environ.get("OCCUSTREAM_ARTIFACTS", Path(__file__).parent.parent / "artifacts"))


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """Folder for test artifacts (screenshots, plots); kept after the run."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """bootstrap address of a real Kafka-protocol broker (embedded Tansu unless KAFKA_BOOTSTRAP)."""
    external = os.environ.get("KAFKA_BOOTSTRAP")
    if external:
        yield external
        return
    broker = EmbeddedKafka(log_dir=tmp_path_factory.mktemp("kafka-logs")).start()
    try:
        yield broker.bootstrap
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a real Redis server (embedded unless REDIS_URL)."""
    external = os.environ.get("REDIS_URL")
    if external:
        yield external
        return
    server = EmbeddedRedis(log_dir=tmp_path_factory.mktemp("redis-logs")).start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def redis_client(redis_url: str):  # type: ignore[no-untyped-def]
    """A redis client on a freshly flushed database."""
    import redis

    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def topic_prefix() -> str:
    """A unique prefix so tests sharing one broker never see each other's topics."""
    return f"t{uuid.uuid4().hex[:8]}."


@pytest.fixture
def make_topics(kafka_bootstrap: str):  # type: ignore[no-untyped-def]
    """Create topics with explicit partition counts: make_topics({name: partitions})."""

    def _make(topics: dict[str, int]) -> None:
        create_topics(kafka_bootstrap, topics)

    return _make
