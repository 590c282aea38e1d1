"""``occustream histogram release -a auto-2d | AG | UG | QuadTree | HB-2D | Privelet-2D | …``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from occustream.cli import main as occustream


@pytest.mark.parametrize(
    "algorithm",
    ["auto-2d", "AG", "UG", "QuadTree", "HB-2D", "Privelet-2D", "DAWA-2D-aligned",
     "DAWA-2D-boxes", "kd-hierarchical"],
)
def test_release_2d_algorithms(tmp_path: Path, algorithm: str) -> None:
    cube = np.random.default_rng(0).poisson(3, (12, 288))
    path = tmp_path / "cube.npy"
    np.save(path, cube)
    out = tmp_path / "rel.json"
    args = ["histogram", "release", str(path), "-a", algorithm, "-e", "0.5"]
    rc = occustream([*args, "--day", "2026-11-20", "-o", str(out), "--redis-url", ""])
    assert rc == 0
    doc = json.loads(out.read_text())
    rel = np.array(doc["released"])
    assert rel.shape == cube.shape
    assert doc["ledger"]["epsilon"] == 0.5
    if algorithm != "kd-hierarchical":  # h = 13: ~3000 leaves at ε/14 each, sd ≈ 2000
        assert abs(rel.sum() - cube.sum()) < 0.05 * cube.sum()
