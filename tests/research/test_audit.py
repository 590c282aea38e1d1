"""A small ``occustream audit`` run, and audit invariants on simulated data."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from occustream.cli import main as cli_main
from research import audit as au
from research import evaluate as ev
from research.attacker import N_CLASSES


def test_audit_cli_writes_report(tmp_path: Path) -> None:
    out = tmp_path / "audit"
    rc = cli_main(["audit", "--days", "2", "--scale", "0.2", "--runs", "2",
                   "--epsilon-laplace", "1", "--epsilon-pegasus", "1", "--ttl-s", "600",
                   "--report", str(out)])
    assert rc == 0
    html = (out / "audit.html").read_text()
    assert html.count("data:image/png;base64,") == 3
    assert "no formal guarantee" in html and "administrator" in html
    assert {p.name for p in out.glob("audit-*.png")} == {
        "audit-external.png", "audit-student.png", "audit-administrator.png"}


def test_audit_orders_mechanisms_sensibly() -> None:
    data = ev.load_data("dbh", days=2, seed=5, tick_s=600, scale=0.3)
    res = au.audit(data, {"laplace": 0.05, "pegasus": 1.0, "ttl": 600.0}, runs=2,
                   attackers=["external"], mechanisms=["true", "laplace-known"],
                   progress=False)
    by = {r.mechanism: r for r in res}
    assert by["true"].per_class.shape == (144, N_CLASSES)
    # Heavy noise: the attacker learns far less than from the true counts.
    assert by["laplace-known"].total.sum() < 0.5 * by["true"].total.sum()
    # Localised people never exceed the people in the building.
    assert np.all(by["true"].per_class.sum(axis=1) <= data.true[data.eval_mask].sum(axis=1))
