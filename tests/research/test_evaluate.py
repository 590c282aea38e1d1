"""A small ``occustream evaluate`` run produces its table, plots and report."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from mechanisms.errors import InvalidParameterError
from occustream.cli import main as cli_main
from research import evaluate as ev


@pytest.fixture(scope="module")
def data() -> ev.EvalData:
    return ev.load_data("dbh", days=2, seed=3, scale=0.4)


def test_release_shapes_and_metrics(data: ev.EvalData) -> None:
    assert data.true.shape == (2 * 288, len(data.site.location_ids))
    rng = np.random.default_rng(0)
    for mech in ("laplace", "pegasus", "hierarchical"):
        rel = ev.release(data, mech, 1.0, rng=rng)
        assert rel.shape == data.true.shape
        m = ev.metrics(data, rel)
        assert 0 < m["mae"] < 5 and 0 <= m["utility_day"] <= 1
        assert set(m["tasks"]) >= {"exceed", "night_region"}
    # More budget → less error (Laplace MAE ≈ E|Z| = 2q/(1−q²), q = e^{−ε}).
    lo = ev.metrics(data, ev.release(data, "laplace", 0.2, rng=rng))["mae"]
    hi = ev.metrics(data, ev.release(data, "laplace", 5.0, rng=rng))["mae"]
    q = np.exp(-0.2)
    assert lo == pytest.approx(2 * q / (1 - q**2), rel=0.05) and hi < 0.05
    # Exact release: utility 1 and every task answered exactly.
    exact = ev.metrics(data, data.true.astype(float))
    assert exact["mae"] == 0 and exact["utility_day"] == 1 and exact["utility_night"] == 1
    assert all(v == 1 for v in exact["tasks"].values())


def test_cli_writes_table_plots_and_report(tmp_path: Path) -> None:
    out = tmp_path / "ev"
    rc = cli_main(["evaluate", "--days", "2", "--scale", "0.3",
                   "--mechanisms", "laplace,pegasus,ttl",
                   "--epsilons", "0.5,2", "--ttls", "600", "--runs", "1",
                   "--table42", "on", "--tune-mechanisms", "laplace", "--targets", "0.5",
                   "--tune-runs", "1", "--out", str(out)])
    assert rc == 0
    html = (out / "evaluate.html").read_text()
    assert "data:image/png;base64," in html and "no formal guarantee" in html
    assert "Table 4.2" in html
    rows = list(csv.DictReader((out / "evaluate.csv").open()))
    assert [(r["mechanism"], float(r["param"])) for r in rows] == [
        ("laplace", 0.5), ("laplace", 2.0), ("pegasus", 0.5), ("pegasus", 2.0), ("ttl", 600.0)]
    mae = {(r["mechanism"], float(r["param"])): float(r["mae"]) for r in rows}
    assert mae[("laplace", 2.0)] < mae[("laplace", 0.5)]
    assert len(list(out.glob("*.png"))) >= 3
    assert (out / "table_4_2.json").exists()


def test_bad_input_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(InvalidParameterError):
        ev.parse_mechanisms("laplace,bogus")
    assert cli_main(["evaluate", "--mechanisms", "bogus"]) == 2
    assert "mechanisms must be among" in capsys.readouterr().err
