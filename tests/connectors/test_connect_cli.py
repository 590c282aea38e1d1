"""``occustream ingest`` as the service an administrator runs: start, /health, one message
through to the broker, clean stop on SIGTERM; configuration errors are one line."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from connect_support import SECRET, consume, fixture_lines

from mechanisms.pseudonym import hmac_pseudonym

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def _free_port(kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OCCUSTREAM_SECRET")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def test_ingest_syslog_service(kafka_bootstrap: str, topics: tuple[str, str],  # type: ignore[no-untyped-def]
                               lab_raw, tmp_path: Path, topic_prefix: str) -> None:
    site = tmp_path / "lab.json"
    site.write_text(json.dumps(lab_raw))
    udp, metrics = _free_port(socket.SOCK_DGRAM), _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "occustream.cli", "ingest", "syslog", "--kafka", kafka_bootstrap,
         "--site", str(site), "--host", "127.0.0.1", "--udp-port", str(udp),
         "--tcp-port", "-1", "--metrics-port", str(metrics), "--topic-prefix", topic_prefix],
        env=_env(OCCUSTREAM_SECRET=SECRET.decode()), cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        health = None
        deadline = time.monotonic() + 30
        line = fixture_lines("syslog_controllers.log")[0].encode()
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{metrics}/health", timeout=1) as r:
                    health = json.loads(r.read())
            except OSError:
                time.sleep(0.2)
                continue
            if health["produced"] >= 1:
                break
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.sendto(line, ("127.0.0.1", udp))
            time.sleep(0.3)
        assert health is not None and health["produced"] == 1, health
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics}/metrics", timeout=2) as r:
            assert b'occustream_ingest_produced_total{source="syslog"} 1.0' in r.read()
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "38:48:4c:22:52:16" not in err  # nothing identifying in the service's log
    obs = asyncio.run(consume(kafka_bootstrap, topics[0], expect=1))
    assert [json.loads(v)["device"] for _, v in obs] == [hmac_pseudonym(SECRET,
                                                                        "38:48:4c:22:52:16")]


@pytest.mark.parametrize(("argv", "env", "says"), [
    (["ingest", "syslog", "--kafka", "127.0.0.1:1"], {}, "no secret"),
    (["ingest", "syslog"], {"OCCUSTREAM_SECRET": "x" * 20, "KAFKA_BOOTSTRAP": ""}, "no Kafka"),
    (["ingest", "radius", "--site", "nope", "--kafka", "127.0.0.1:1"],
     {"OCCUSTREAM_SECRET": "x" * 20}, "no such building"),
    (["buildings", "import", "/nonexistent.csv"], {}, "cannot read"),
])
def test_configuration_errors_are_one_line(argv: list[str], env: dict[str, str],
                                           says: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "occustream.cli", *argv], env=_env(**env),
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and says in lines[0], proc.stderr


def test_ingest_spaces_from_stdin(kafka_bootstrap: str, topics: tuple[str, str],  # type: ignore[no-untyped-def]
                                  lab_raw, tmp_path: Path, topic_prefix: str) -> None:
    from test_connect_spaces import TRUTH

    site = tmp_path / "lab.json"
    site.write_text(json.dumps(lab_raw))
    stream = "\n".join(fixture_lines("spaces_firehose.ndjson")) + "\n"
    argv = [sys.executable, "-m", "occustream.cli", "ingest", "spaces", "--from", "-",
            "--kafka", kafka_bootstrap, "--site", str(site), "--metrics-port", "0",
            "--host", "127.0.0.1", "--topic-prefix", topic_prefix,
            "--state-file", str(tmp_path / "state.json")]
    env = _env(OCCUSTREAM_SECRET=SECRET.decode())
    proc = subprocess.run(argv, input=stream, env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    again = subprocess.run(argv, input=stream, env=env, cwd=ROOT, capture_output=True,
                           text=True, timeout=120)  # the same stream again: resumed
    assert again.returncode == 0, again.stderr
    obs = asyncio.run(consume(kafka_bootstrap, topics[0], expect=len(TRUTH)))
    assert sorted(json.loads(v)["device"] for _, v in obs) == sorted(
        hmac_pseudonym(SECRET, m) for m, _, _ in TRUTH)
    assert "aa:bb:cc:dd:ee" not in proc.stderr.lower() + again.stderr.lower()
