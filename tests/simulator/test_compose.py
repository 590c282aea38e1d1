"""docker-compose.yml and the Dockerfile: what can be checked without a Docker engine."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib

import pytest
import yaml

from occupancy.buildings import REPO_ROOT

COMPOSE = REPO_ROOT / "docker-compose.yml"
DOCKERFILE = REPO_ROOT / "Dockerfile"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_services_present(compose: dict) -> None:
    assert set(compose["services"]) >= {"kafka", "redis", "worker", "simulator", "dashboard"}
    assert set(compose["volumes"]) >= {"kafka-data", "redis-data"}


def test_kafka_is_kraft_with_volume_and_healthcheck(compose: dict) -> None:
    k = compose["services"]["kafka"]
    assert k["image"].startswith("apache/kafka:")
    env = k["environment"]
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    assert "ZOOKEEPER" not in " ".join(env)
    data_dir = env["KAFKA_LOG_DIRS"]
    assert any(v.startswith("kafka-data:") and v.endswith(data_dir) for v in k["volumes"])
    assert "kafka-broker-api-versions" in " ".join(k["healthcheck"]["test"])


def test_redis_has_aof_and_healthcheck(compose: dict) -> None:
    r = compose["services"]["redis"]
    cmd = r["command"]
    assert cmd[cmd.index("--appendonly") + 1] == "yes"
    assert any(v.startswith("redis-data:") for v in r["volumes"])
    assert "ping" in r["healthcheck"]["test"]


def test_project_services_built_from_dockerfile(compose: dict) -> None:
    s = compose["services"]
    expected = {"worker": ["occustream", "worker"],
                "simulator": ["occustream", "simulate", "--kafka", "kafka:9092"],
                "dashboard": ["occustream", "dashboard"]}
    for name, prefix in expected.items():
        svc = s[name]
        assert svc["build"] == "."
        assert svc["command"][: len(prefix)] == prefix
        assert svc["environment"]["KAFKA_BOOTSTRAP"] == "kafka:9092"
        assert svc["depends_on"]["kafka"]["condition"] == "service_healthy"


def test_dockerfile_installs_the_tested_package() -> None:
    text = DOCKERFILE.read_text()
    pkgs = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    include = pkgs["tool"]["setuptools"]["packages"]["find"]["include"]
    copied = set(re.findall(r"^COPY (\S+) ", text, flags=re.M))
    for pattern in include:
        assert pattern.rstrip("*") in copied, pattern
    assert "buildings" in copied and re.search(r"^RUN pip install \.", text, flags=re.M)
    assert "python:3.11" in text


def _compose_client() -> list[str] | None:
    for cmd in (["docker", "compose"], ["docker-compose"]):
        if shutil.which(cmd[0]) and subprocess.run(
            [*cmd, "version"], capture_output=True, timeout=20
        ).returncode == 0:
            return cmd
    return None


def test_docker_compose_config() -> None:
    cmd = _compose_client()
    if cmd is None:
        pytest.skip("no docker compose client here")
    env = {**os.environ, "OCCUSTREAM_SECRET": "x" * 32}
    res = subprocess.run([*cmd, "-f", str(COMPOSE), "config", "--quiet"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
