"""Determinism, the simulate/replay command lines and their errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mechanisms.errors import InvalidParameterError
from occustream.cli import main as occustream
from simulator import simulate, truth_path_for
from simulator.cli import main as simulate_main
from simulator.replay import file_records


def _run(tmp: Path, name: str, *args: str) -> tuple[bytes, bytes]:
    out = tmp / f"{name}.jsonl"
    assert simulate_main(["--building", "dbh", "--days", "1", "--out", str(out), "-q", *args]) == 0
    return out.read_bytes(), truth_path_for(out).read_bytes()


def test_same_seed_is_byte_identical_and_other_seed_differs(tmp_path: Path) -> None:
    a = _run(tmp_path, "a", "--seed", "7")
    b = _run(tmp_path, "b", "--seed", "7")
    c = _run(tmp_path, "c", "--seed", "8")
    assert a == b
    assert a[0] != c[0] and a[1] != c[1]
    lines = a[0].decode().splitlines()
    assert 30_000 < len(lines) < 90_000
    first = json.loads(lines[0])
    assert set(first) == {"device", "ap", "ts", "rssi"}
    assert isinstance(first["ts"], float) and isinstance(first["rssi"], int)
    truth = json.loads(a[1])
    assert {s["type"] for s in truth["scenarios"]} >= {"overcapacity", "broken_ap"}
    assert truth["presence"]["columns"] == ["device", "location", "start_ts", "end_ts"]
    assert len(truth["malformed"]) > 0


def test_api_lines_match_events(tmp_path: Path) -> None:
    sim = simulate("dbh", days=0.25, seed=3, start="2026-01-06T08:00",
                   scenarios=["malformed"])
    events = list(sim.events())
    assert [json.loads(line) for line in sim.lines()] == events
    bad = {i for i, _ in sim.truth["malformed"]}
    assert bad and all(sim.start_ts <= e["ts"] < sim.end_ts
                       for i, e in enumerate(events) if i not in bad)
    path = tmp_path / "q.jsonl"
    sim.write_jsonl(path, presence=False)
    recs = list(file_records(path))
    assert [r[1].decode() for r in recs] == list(sim.lines())
    assert [r[0] for r in recs] == [r[0] for r in sim.records()]


def test_campus_simulates() -> None:
    sim = simulate("campus", days=1 / 24, seed=1, start="2026-01-07T11:00", scale=0.2)
    buildings = {e["ap"].split("-")[1] for e in sim.events()}
    assert len(sim.site.aps) >= 1500 and len(buildings) == 24


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["simulate", "--building", "nowhere", "--out", "x.jsonl"], "no such building file"),
        (["simulate", "--days", "-1", "--out", "x.jsonl"], "days must be"),
        (["simulate", "--scenarios", "fire", "--out", "x.jsonl"], "scenarios must be among"),
        (["simulate", "--out", "x.jsonl", "--kafka", "h:1"], "--out writes a file"),
        (["replay", "missing.jsonl"], "file must be an existing JSONL file"),
    ],
)
def test_bad_input_gives_one_line_and_exit_2(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert occustream(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err


def test_help_explains() -> None:
    out = subprocess.run([sys.executable, "-m", "occustream.cli", "simulate", "--help"],
                         capture_output=True, text=True, check=True).stdout
    for word in ("--building", "--days", "--seed", "--out", "--kafka", "--speed", "overcapacity"):
        assert word in out


def test_scenario_validation() -> None:
    with pytest.raises(InvalidParameterError, match="malformed_rate"):
        simulate("dbh", days=1, scenarios=__import__("simulator").Scenarios(malformed_rate=2))


def test_pacer_follows_speed_and_max_rate() -> None:
    from simulator.kafka import _Pacer

    p = _Pacer(speed=60.0, max_rate=None)
    assert p.delay(0, 1000.0) <= 0
    assert 0.9 < p.delay(1, 1060.0) <= 1.0  # one simulated minute = one second
    q = _Pacer(speed=None, max_rate=100.0)
    assert 0.9 < q.delay(100, 0.0) <= 1.0
    with pytest.raises(InvalidParameterError, match="speed must be > 0"):
        _Pacer(speed=0.0, max_rate=None)
