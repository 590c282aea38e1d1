"""``occustream reproduce sortaki`` writes its report, plots and JSON (tiny settings)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from research import reproduce, sortaki_report
from research.histogram import DPBENCH_1D
from research.sortaki_paper import TABLES


def test_workloads_are_every_range_of_the_papers_lengths() -> None:
    n = 50
    small = sortaki_report.workload("small", n)
    assert small.size == sum(n - k + 1 for k in range(1, 11))
    assert set(np.unique(small.hi - small.lo)) == set(range(1, 11))
    assert small.lo.min() == 0 and small.hi.max() == n
    big = sortaki_report.workload("big", 1000)
    assert set(np.unique(big.hi - big.lo)) == set(range(100, 1001, 100))
    assert big.size == sum(1000 - k + 1 for k in range(100, 1001, 100))
    assert sortaki_report.workload("identity", 7).size == 7


def test_density_scale_keeps_the_papers_records_per_value() -> None:
    assert sortaki_report.scale_for("Amazon", 4096) == 61_440  # 7.5 M × 4096 / 500 K
    assert sortaki_report.scale_for("Amazon", 4096, "paper") == 7_500_000
    assert sortaki_report.scale_for("NetTrace", 1024) == 100_000  # the paper's own domain


@pytest.mark.slow  # 4 s idle, up to 20 s loaded: mostly drawing three PNGs (matplotlib)
def test_report_on_tiny_shapes(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    shapes = {d: rng.pareto(1.5, 48) + 0.1 for d in sortaki_report.SUBSTITUTES}
    tables = ("III", "IV", "VII")  # a γ_in sweep, three shapes, the big-range workload
    path = sortaki_report.write_sortaki_report(tmp_path, quick=True, shapes=shapes,
                                               tables=tables)
    text = path.read_text()
    for key in tables:
        assert f"## Table {key}" in text
        assert (tmp_path / f"sortaki-table-{key}.png").read_bytes()[:4] == b"\x89PNG"
    assert "## Table IX" not in text
    assert "| [VII](#table-vii) |" in text and "| the paper says |" in text
    dump = json.loads((tmp_path / "sortaki.json").read_text())
    cells = dump["tables"]["IV"]["cells"]
    assert len(cells) == len(TABLES["IV"].algorithms) * len(TABLES["IV"].columns())
    assert all(c["ours"] > 0 and np.isfinite(c["ours"]) for c in cells)
    # quick keeps γ_in ∈ {0.5, 0.9}: the γ claims say they need the full sweep
    assert "needs the full γ_in sweep" in text


def test_cli_reads_a_dpbench_folder(tmp_path: Path) -> None:
    data = tmp_path / "dpbench"
    (data / "1D").mkdir(parents=True)
    rng = np.random.default_rng(1)
    for key in {v[0] for v in sortaki_report.SUBSTITUTES.values()}:
        np.save(data / DPBENCH_1D[key], rng.integers(0, 50, 64).astype(np.float64))
    out = tmp_path / "out"
    code = reproduce.main(["sortaki", "--quick", "--tables", "IX", "--out", str(out),
                           "--data-dir", str(data), "--no-progress"])
    assert code == 0
    text = (out / "sortaki.md").read_text()
    assert "data: DPBench files" in text and "## Table IX" in text and "## Table III" not in text
    assert "| NetTrace | 1,024 | 100,000 |" in text  # the paper's Table I beside ours


def test_unknown_table_is_refused(tmp_path: Path) -> None:
    with pytest.raises(sortaki_report.InvalidParameterError, match="tables must be among"):
        sortaki_report.write_sortaki_report(tmp_path, tables=("X",))


def test_bad_arguments_end_with_one_line() -> None:
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-m", "occustream.cli", "reproduce", "sortaki", "--tables", "III,X"],
        cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True,
        text=True, timeout=60, stdin=subprocess.DEVNULL,
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "tables must be among" in lines[0]


@pytest.mark.parametrize(("argv", "says"), [
    (["--trials", "0"], "trials must be >= 1"),
    (["--seed", "-1"], "seed must be >= 0"),
])
def test_bad_values_are_refused_before_any_run(argv: list[str], says: str) -> None:
    with pytest.raises(sortaki_report.InvalidParameterError, match=says):
        sortaki_report.main(argv)
