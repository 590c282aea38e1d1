"""``occustream mide-eval``: runs end to end on small inputs, refuses bad input."""

import csv

import numpy as np
import pytest

from streams.cli import main as cli_main
from streams.tools import mide_eval


@pytest.fixture
def count_files(tmp_path):
    rng = np.random.default_rng(0)
    cap = rng.integers(50, 300, 6).astype(float)
    counts = rng.poisson(cap * rng.uniform(0.3, 1.2, (2, 24, 6))).astype(float)
    cp, kp = tmp_path / "counts.npy", tmp_path / "cap.npy"
    np.save(cp, counts)
    np.save(kp, cap)
    return cp, kp, counts, cap


def test_runs_on_counts_file_and_writes_tables_and_plots(count_files, tmp_path, capsys):
    cp, kp, counts, cap = count_files
    out = tmp_path / "out"
    rc = mide_eval.main(["--counts", str(cp), "--capacities", str(kp), "--runs", "2",
                         "--betas", "0.05,0.1", "--alphas", "1,100", "--out", str(out),
                         "--no-progress"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "| Q1L | dppwlm |" in text and "| Q2H | tslm |" in text
    for name in ("main.csv", "sweep_beta.csv", "sweep_alpha.csv", "complex.csv", "tables.md",
                 "fig_5_6_privacy.png", "fig_5_7_accuracy.png", "fig_5_8_alpha.png",
                 "fig_6_complex.png"):
        assert (out / name).stat().st_size > 0, name
    rows = list(csv.DictReader((out / "main.csv").open()))
    assert len(rows) == 2 * 3 * len(mide_eval.ALGORITHMS)
    # positives are counted against the true data
    q1l = next(r for r in rows if r["query"] == "Q1L" and r["algorithm"] == "tslm")
    g = counts[0, 7:22].ravel()
    c = np.tile(0.6 * cap, 15)
    assert int(q1l["positives"]) == int((g > c).sum())
    tslm = [r for r in rows if r["algorithm"] == "tslm"]
    assert all(float(r["eps"]) == pytest.approx(np.log(10)) for r in tslm)


def test_synthetic_data_through_the_cli_dispatch(tmp_path):
    rc = cli_main(["mide-eval", "--synthetic", "--runs", "1", "--skip",
                   "beta,alpha,complex,plots", "--out", str(tmp_path), "--no-progress"])
    assert rc == 0
    assert (tmp_path / "main.csv").exists()


@pytest.mark.parametrize("argv", [
    ["--counts", "missing.npy"],
    ["--synthetic", "--runs", "0"],
    ["--synthetic", "--skip", "everything"],
    ["--synthetic", "--betas", "0.7"],
])
def test_bad_input_exits_nonzero_with_one_line(argv, tmp_path, capsys):
    rc = cli_main(["mide-eval", *argv, "--out", str(tmp_path), "--no-progress"])
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("occustream mide-eval: error:")


def test_counts_of_wrong_shape_are_refused(tmp_path, capsys):
    np.save(tmp_path / "c.npy", np.ones((5, 3)))
    np.save(tmp_path / "k.npy", np.ones(3))
    rc = cli_main(["mide-eval", "--counts", str(tmp_path / "c.npy"), "--capacities",
                   str(tmp_path / "k.npy"), "--out", str(tmp_path), "--no-progress"])
    assert rc == 2
    assert "shape" in capsys.readouterr().err


def test_simulated_day_with_history_thresholds():
    (day,) = mide_eval.simulated_days("dbh", ["2026-01-13"], seed=3, progress=False)
    assert day.name == "weekday"
    assert day.counts.shape == (24, 1)
    assert day.counts[9:17].max() > 0  # people during the day
    assert day.capacity.shape == (1,) and day.capacity[0] >= 1  # last week's peak
    values, pred = day.dwell
    assert values.size == pred.size > 0 and np.all(values >= 0)
    assert pred.min() >= 0 and pred.max() < len(mide_eval.HOURS)
