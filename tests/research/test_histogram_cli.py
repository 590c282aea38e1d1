"""``occustream histogram release | evaluate`` end to end, through the real CLI entry."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from occupancy import redis_layout as rl
from occustream.cli import main as occustream
from research.histogram import dpbench_dir

DPBENCH = dpbench_dir()


def _cube(tmp_path: Path) -> tuple[np.ndarray, Path]:
    cube = np.random.default_rng(0).poisson(3, (12, 288))
    path = tmp_path / "cube.npy"
    np.save(path, cube)
    return cube, path


@pytest.mark.parametrize("algorithm", ["sDWF", "DAWA", "kdtree", "cell", "Identity"])
def test_release_small_cube(tmp_path: Path, algorithm: str) -> None:
    cube, path = _cube(tmp_path)
    out = tmp_path / "rel.json"
    rc = occustream(
        [
            "histogram",
            "release",
            str(path),
            "-a",
            algorithm,
            "-e",
            "0.5",
            "--day",
            "2026-11-20",
            "-o",
            str(out),
            "--redis-url",
            "",
        ]
    )
    assert rc == 0
    doc = json.loads(out.read_text())
    rel = np.array(doc["released"])
    assert rel.shape == cube.shape
    assert not np.array_equal(rel, cube)  # noisy
    assert doc["epsilon"] == 0.5 and doc["ledger"]["epsilon"] == 0.5
    assert doc["ledger"]["device_day_epsilon"] == pytest.approx(0.5 * 288)
    assert doc["noise"].startswith("discrete")
    assert "true" not in json.dumps(doc).lower()
    if algorithm == "cell":  # Thm 4.2 bound: β·(1/ε)·ln(β/δ)
        beta = cube.size
        assert doc["usefulness_accuracy_95"] == pytest.approx(beta / 0.5 * np.log(beta / 0.05))
    # the release is useful: mean abs error per cell well below the count scale
    assert np.abs(rel - cube).mean() < 3.0


def test_release_csv_and_seed_reproduces(tmp_path: Path) -> None:
    cube, _ = _cube(tmp_path)
    csv = tmp_path / "cube.csv"
    csv.write_text("\n".join(",".join(str(v) for v in row) for row in cube) + "\n")
    outs = []
    for i in range(2):
        out = tmp_path / f"r{i}.json"
        assert (
            occustream(
                [
                    "histogram",
                    "release",
                    str(csv),
                    "-a",
                    "sDAHP",
                    "--seed",
                    "7",
                    "-o",
                    str(out),
                    "--redis-url",
                    "",
                ]
            )
            == 0
        )
        outs.append(json.loads(out.read_text())["released"])
    assert outs[0] == outs[1]


def test_release_jsonl_through_the_oracle(tmp_path: Path) -> None:
    from occupancy.buildings import load_site

    site = load_site("dbh")
    aps = list(site.ap_location)[:5]
    t0 = 1_763_596_800.0  # 2025-11-20 00:00 UTC
    lines = []
    for d in range(40):
        mac = f"02:00:00:00:{d // 256:02x}:{d % 256:02x}"
        for k in range(6):
            lines.append(json.dumps({"device": mac, "ap": aps[d % 5], "ts": t0 + 60 + 290 * k}))
    lines.append(json.dumps({"device": "02:00:00:00:ff:ff", "ap": aps[0], "ts": t0 + 7200}))
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "rel.json"
    assert (
        occustream(
            [
                "histogram",
                "release",
                str(path),
                "-a",
                "DAWA",
                "-e",
                "1",
                "-o",
                str(out),
                "--redis-url",
                "",
            ]
        )
        == 0
    )
    doc = json.loads(out.read_text())
    assert doc["day"] == "2025-11-20"
    assert doc["shape"] == [len(site.location_ids), 288]
    assert doc["locations"] == list(site.location_ids)


def test_release_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert occustream(["histogram", "release", str(tmp_path / "missing.npy")]) == 2
    assert "does not exist" in capsys.readouterr().err
    bad = tmp_path / "neg.npy"
    np.save(bad, np.array([1.0, -2.0]))
    assert occustream(["histogram", "release", str(bad), "--redis-url", ""]) == 2
    assert occustream(["histogram", "release", str(bad), "-e", "-1"]) == 2


@pytest.mark.e2e
def test_release_to_redis(tmp_path: Path, redis_client, redis_url: str) -> None:  # type: ignore[no-untyped-def]
    _, path = _cube(tmp_path)
    rc = occustream(
        [
            "histogram",
            "release",
            str(path),
            "-a",
            "sDWF",
            "-e",
            "0.25",
            "--day",
            "2026-11-21",
            "-o",
            str(tmp_path / "r.json"),
            "--redis-url",
            redis_url,
        ]
    )
    assert rc == 0
    doc = json.loads(redis_client.get(rl.histogram("2026-11-21", "sDWF")))
    assert doc["algorithm"] == "sDWF" and len(doc["released"]) == 12
    spent = redis_client.hget(rl.ledger_spent("2026-11-21"), "histogram:sDWF")
    assert float(spent) == pytest.approx(0.25)
    entries = redis_client.xrange(rl.LEDGER_STREAM)
    rec = json.loads(entries[-1][1][b"data"])
    assert rec["mechanism"] == "histogram:sDWF" and rec["scope"] == "histogram/2026-11-21"
    assert sum(rec["parts"]) == pytest.approx(0.25)
    # a second release would exceed a daily cap of 0.3: refused, nothing spent
    again = ["histogram", "release", str(path), "-a", "DAWA", "-e", "0.25", "--day"]
    again += ["2026-11-21", "-o", str(tmp_path / "r2.json"), "--redis-url", redis_url]
    assert occustream([*again, "--daily-cap", "0.3"]) == 2
    assert not (tmp_path / "r2.json").exists()
    assert redis_client.hget(rl.ledger_spent("2026-11-21"), "histogram:DAWA") is None
    assert occustream([*again, "--daily-cap", "0.5"]) == 0


def test_evaluate_writes_tables_and_plots(tmp_path: Path) -> None:
    if DPBENCH is not None:
        data = ["NETTRACE"]
        extra = ["--domain", "512"]
    else:  # no DPBench folder: a generated shape keeps the test running
        shape = np.random.default_rng(0).pareto(1.5, 512) * 50
        np.save(tmp_path / "shape.npy", shape)
        data, extra = [str(tmp_path / "shape.npy")], []
    out = tmp_path / "ev"
    rc = occustream(
        [
            "histogram",
            "evaluate",
            "-d",
            *data,
            *extra,
            "-a",
            "Identity,DAWA,sDWF",
            "--epsilons",
            "1,0.1",
            "-t",
            "2",
            "--scale",
            "100000",
            "--gamma-in",
            "0.5,0.9",
            "-o",
            str(out),
        ]
    )
    assert rc == 0
    rows = json.loads((out / "results.json").read_text())
    assert len(rows) == 3 * 2 * 2 * 2  # algorithms × ε × workloads × γ_in
    md = (out / "histogram-evaluation.md").read_text()
    assert "Workload: small" in md and "Workload: large" in md
    assert "error scale" in md and "(×1e-" in md
    assert sorted(p.name for p in out.glob("*.png")) == [
        "histogram-evaluation-01-error-small.png",
        "histogram-evaluation-02-error-large.png",
    ]
    err = {(r["algorithm"], r["epsilon"], r["workload"]): r["error"] for r in rows}
    assert err[("Identity γ=0.5", 0.1, "small")] > err[("Identity γ=0.5", 1.0, "small")]
    assert ("sDWF γ=0.9", 1.0, "large") in err


@pytest.mark.skipif(DPBENCH is None, reason="DPBench folder absent")
def test_evaluate_two_d(tmp_path: Path) -> None:
    out = tmp_path / "ev2"
    rc = occustream(
        [
            "histogram",
            "evaluate",
            "--two-d",
            "-d",
            "ADULT-2D",
            "--epsilons",
            "0.1",
            "-t",
            "1",
            "--queries",
            "200",
            "-o",
            str(out),
        ]
    )
    assert rc == 0
    rows = json.loads((out / "results.json").read_text())
    assert {r["algorithm"] for r in rows} == {"cell", "kdtree"}


@pytest.mark.skipif(DPBENCH is None, reason="DPBench folder absent")
def test_evaluate_two_d_runs_the_spatial_algorithms_on_both_workloads(tmp_path: Path) -> None:
    out = tmp_path / "ev2s"
    algs = ["kdtree", "auto-2d", "AG", "DAWA-2D-boxes"]
    rc = occustream(
        [
            "histogram", "evaluate", "--two-d", "-d", "STROKE", "--epsilons", "1",
            "-t", "1", "--queries", "200", "--scale", "100000",
            "-a", ",".join(algs), "-w", "rectangles,identity", "-o", str(out),
        ]
    )
    assert rc == 0
    rows = json.loads((out / "results.json").read_text())
    got = {(r["algorithm"], r["workload"]) for r in rows}
    assert got == {(a, w) for a in algs for w in ("rectangles", "identity")}
    assert all(r["error"] > 0 and math.isfinite(r["error"]) for r in rows)
    # the kd-tree's figures do not depend on which other algorithms run beside it
    alone = tmp_path / "ev2k"
    rc = occustream(
        [
            "histogram", "evaluate", "--two-d", "-d", "STROKE", "--epsilons", "1",
            "-t", "1", "--queries", "200", "--scale", "100000",
            "-a", "kdtree", "-w", "rectangles", "-o", str(alone),
        ]
    )
    assert rc == 0
    kd = json.loads((alone / "results.json").read_text())[0]
    assert kd["error"] == next(
        r["error"] for r in rows if (r["algorithm"], r["workload"]) == ("kdtree", "rectangles")
    )
    md = (out / "histogram-evaluation.md").read_text()
    assert "Workload: rectangles" in md and "Workload: identity" in md
    assert len(list(out.glob("*.png"))) == 2


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("-a", "kdtree,Fancy-2D", "--two-d --algorithms must be among"),
        ("-w", "prefix", "--two-d --workloads must be among"),
    ],
)
def test_evaluate_two_d_rejects_unknown_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str, message: str
) -> None:
    rc = occustream(
        ["histogram", "evaluate", "--two-d", flag, value, "-o", str(tmp_path / "x")]
    )
    assert rc == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_evaluate_help_lists_every_2d_algorithm(capsys: pytest.CaptureFixture[str]) -> None:
    from mechanisms.histograms.select2d import ALGORITHMS_2D

    with pytest.raises(SystemExit):
        occustream(["histogram", "evaluate", "--help"])
    text = "".join(capsys.readouterr().out.split())  # argparse wraps names across lines
    for name in (*ALGORITHMS_2D, "auto-2d"):
        if name not in {"kd-tree", "cells"}:  # "kdtree" / "cell" in the CLI
            assert name in text, name
