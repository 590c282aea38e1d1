"""Fixtures of the connector tests: the lab building (imported from fixtures/building.csv)
and a pair of fresh topics on the real broker. Helpers are in connect_support.py."""

from __future__ import annotations

from typing import Any

import pytest
from connect_support import FIX

from connectors.buildings_import import import_csv
from connectors.edge import DLQ_TOPIC, TOPIC, ApResolver
from occupancy.buildings import Site, parse_site


@pytest.fixture(scope="session")
def lab_raw() -> dict[str, Any]:
    return import_csv((FIX / "building.csv").read_text(), "building.csv")


@pytest.fixture(scope="session")
def lab_site(lab_raw: dict[str, Any]) -> Site:
    return parse_site(lab_raw, "lab")


@pytest.fixture(scope="session")
def lab_resolver(lab_site: Site, lab_raw: dict[str, Any]) -> ApResolver:
    return ApResolver(lab_site, lab_raw)


@pytest.fixture
def topics(kafka_bootstrap: str, make_topics, topic_prefix: str) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    obs, dlq = topic_prefix + TOPIC, topic_prefix + DLQ_TOPIC
    make_topics({obs: 1, dlq: 1})
    return obs, dlq
