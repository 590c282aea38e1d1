"""The embedded services start, serve and stop cleanly, leaving no process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from infra.services import EmbeddedKafka, EmbeddedRedis, child_pids, running_services

pytestmark = pytest.mark.e2e


def test_kafka_and_redis_serve_and_stop(tmp_path):
    import redis
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient

    with running_services(env={}, log_dir=tmp_path) as svc:
        assert svc.embedded
        pids = [svc.kafka.pid, svc.redis.pid]
        admin = KafkaAdminClient(bootstrap_servers=svc.kafka_bootstrap)
        assert "wifi.observations" in admin.list_topics()
        admin.close()
        p = KafkaProducer(bootstrap_servers=svc.kafka_bootstrap)
        p.send("wifi.observations", b"x").get(timeout=10)
        p.close()
        r = redis.Redis.from_url(svc.redis_url)
        r.set("k", "v")
        assert r.get("k") == b"v"
        r.close()
    deadline = time.monotonic() + 5
    while child_pids(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert child_pids(pids) == []


def test_external_services_are_used_not_started(kafka_bootstrap, redis_url, tmp_path):
    env = {"KAFKA_BOOTSTRAP": kafka_bootstrap, "REDIS_URL": redis_url}
    with running_services(env=env, log_dir=tmp_path) as svc:
        assert not svc.embedded
        assert svc.kafka_bootstrap == kafka_bootstrap
        assert svc.redis_url == redis_url


def test_no_orphans_when_parent_is_killed(tmp_path):
    """SIGKILL the owning process: the kernel's PDEATHSIG takes the services down too."""
    script = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {os.getcwd()!r})
        from infra.services import running_services
        from pathlib import Path
        with running_services(env={{}}, log_dir=Path({str(tmp_path)!r})) as s:
            print(s.kafka.pid, s.redis.pid, flush=True)
            time.sleep(600)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    pids = [int(x) for x in line.split()]
    assert len(pids) == 2 and child_pids(pids) == pids
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while child_pids(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert child_pids(pids) == []


def test_unreachable_external_kafka_is_a_clear_error(tmp_path):
    from infra.services import free_port
    from mechanisms.errors import ServiceError

    # a short wait (OCCUSTREAM_SERVICE_WAIT_S) keeps the test fast; the message names it
    env = {"KAFKA_BOOTSTRAP": f"127.0.0.1:{free_port()}", "OCCUSTREAM_SERVICE_WAIT_S": "2"}
    with (
        pytest.raises(ServiceError, match="did not answer within 2 s"),
        running_services(env=env, redis=False, log_dir=tmp_path),
    ):
        pass
    with (
        pytest.raises(ServiceError, match="OCCUSTREAM_SERVICE_WAIT_S must be seconds"),
        running_services(env={**env, "OCCUSTREAM_SERVICE_WAIT_S": "-1"}, redis=False,
                         log_dir=tmp_path),
    ):
        pass


def test_embedded_classes_restartable(tmp_path):
    k = EmbeddedKafka(log_dir=tmp_path).start()
    r = EmbeddedRedis(log_dir=tmp_path).start()
    assert k.alive() and r.alive()
    k.stop()
    r.stop()
    assert not k.alive() and not r.alive()
