"""The Xiao et al. reproduction writes its Markdown report and three plots."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from research import xiao_report


@pytest.mark.slow  # ~9 s: every sweep of the report, on a 16 × 16 cube
def test_write_xiao_report_small(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    cube = rng.gamma(0.3, 1.0, (16, 16)) * (rng.random((16, 16)) < 0.4) + 1e-6
    monkeypatch.setattr(xiao_report, "xiao_cubes", lambda data_dir=None: {"SMALL": cube})
    monkeypatch.setattr(xiao_report, "N_QUERIES", 100)
    path = xiao_report.write_xiao_report(tmp_path, quick=True)
    text = path.read_text()
    assert "## Where the shape agrees" in text and "Figs. 13/14" in text
    assert "| SMALL | cell-based |" in text
    assert "## Where the kd-tree loses, and why (measured)" in text
    assert "| SMALL | 0.05 |" in text  # one reasons row per α
    assert "kd-tree loses to cell-based" in text or "beats cell-based at every α" in text
    for name in ("xiao_height.png", "xiao_xi0.png", "xiao_alpha.png"):
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"


def test_loss_reasons_layout_error_is_zero_on_uniform_data() -> None:
    x = np.full((16, 16), 50.0)  # uniform: any partition is uniform inside
    boxes = np.array([[[0, 5], [3, 16]], [[2, 16], [0, 7]]])
    r = xiao_report.loss_reasons(x, boxes, (0.5, 5.0), releases=2, key=(1,))
    assert set(r) == {0.5, 5.0}
    for v in r.values():
        assert v["layout"] < 1e-9 and v["kd"] > 0 and v["cells"] > 0
    skew = np.zeros((16, 16))
    skew[::2, ::3] = 3.0  # a sparse lattice: kept in coarse boxes, not uniform inside
    r = xiao_report.loss_reasons(skew, boxes, (0.5,), releases=2, key=(1,))
    assert r[0.5]["layout"] > 0
