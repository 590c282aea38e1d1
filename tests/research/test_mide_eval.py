"""``occustream mide-eval``: runs end to end on small inputs, refuses bad input."""

import csv
from pathlib import Path

import numpy as np
import pytest

from mechanisms.errors import InvalidParameterError
from occustream.cli import main as cli_main
from research import mide_eval, mide_experiments


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
    assert "≥" not in text  # MIDE outputs: γ is exact
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
    assert all(float(r["gamma_inexact"]) == 0 for r in rows if r["denied"] == "0.0")
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
    (day,) = mide_experiments.simulated_days("dbh", ["2026-01-13"], seed=3, progress=False)
    assert day.name == "weekday"
    assert day.counts.shape == (24, 1)
    assert day.counts[9:17].max() > 0  # people during the day
    assert day.capacity.shape == (1,) and day.capacity[0] >= 1  # last week's peak
    values, pred = day.dwell
    assert values.size == pred.size > 0 and np.all(values >= 0)
    assert pred.min() >= 0 and pred.max() < len(mide_experiments.HOURS)


# --------------------------------------------------------------------- bad input, up front
@pytest.fixture
def no_long_work(monkeypatch):
    """Fail the test if mide-eval starts simulating or running experiments."""
    def boom(*_args, **_kwargs):
        raise AssertionError("long work started before the bad value was refused")

    for name in ("simulated_days", "synthetic_days", "main_table", "sweep",
                 "complex_experiment"):
        monkeypatch.setattr(mide_eval, name, boom)


def refused(argv, capsys, out) -> str:
    """Run ``occustream mide-eval ARGV``; assert exit 2 and ONE stderr line; return it."""
    rc = cli_main(["mide-eval", *argv, "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2, err
    assert len(err) == 1 and err[0].startswith("occustream mide-eval: error:"), err
    return err[0]


def test_negative_seed_is_refused_before_simulating(no_long_work, tmp_path, capsys):
    line = refused(["--seed", "-1"], capsys, tmp_path / "out")
    assert "--seed must be >= 0, not -1" in line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("where", ["under_a_file", "proc"])
def test_unwritable_out_is_refused_before_simulating(where, no_long_work, tmp_path, capsys):
    if where == "proc":
        out = Path("/proc/mide-eval-out")  # procfs: no mkdir, even as root
    else:
        (tmp_path / "file").write_text("x")
        out = tmp_path / "file" / "out"
    line = refused([], capsys, out)
    assert f"--out must be a writable directory, not {str(out)!r}" in line


def test_unknown_site_is_refused_before_out_is_created(no_long_work, tmp_path, capsys):
    line = refused(["--site", "no-such-site"], capsys, tmp_path / "out")
    assert "no-such-site" in line
    assert not (tmp_path / "out").exists()


def _npy(tmp_path, name, arr, **kw):
    path = tmp_path / name
    np.save(path, arr, **kw)
    return str(path)


@pytest.mark.parametrize(("counts", "caps", "says"), [
    (np.array([[1, "a", None]] * 24, dtype=object), np.ones(3), "--counts must hold real numbers"),
    (np.full((24, 3), "1"), np.ones(3), "--counts must hold real numbers, not dtype <U1"),
    (np.full((24, 3), 1.0 + 0j), np.ones(3), "not dtype complex128"),
    (np.where(np.eye(24, 3) > 0, np.nan, 1.0), np.ones(3), "--counts must be finite, not nan "
                                                           "at index (0, 0)"),
    (-np.eye(24, 3), np.ones(3), "--counts must be >= 0, not -1.0 at index (0, 0)"),
    (np.ones((24, 3)), np.array([1.0, 0.0, 1.0]),
     "--capacities must be > 0, not 0.0 at index (1,)"),
    (np.ones((24, 3)), np.array([1.0, np.inf, 1.0]), "--capacities must be finite, not inf"),
    (np.ones((24, 3)), np.ones((3, 2)), "--capacities must have shape (3,) or (1, 3) for --counts "
                                        "of shape (24, 3), not (3, 2)"),
    (np.ones((3, 24, 3)), np.ones(3), "--counts must have shape (24, P) or (2, 24, P)"),
])
def test_bad_counts_or_capacities_files_are_named(counts, caps, says, no_long_work, tmp_path,
                                                  capsys):
    argv = ["--counts", _npy(tmp_path, "c.npy", counts, allow_pickle=True),
            "--capacities", _npy(tmp_path, "k.npy", caps)]
    assert says in refused(argv, capsys, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_complex_days_below_one_is_refused(no_long_work, tmp_path, capsys):
    line = refused(["--complex-days", "-1"], capsys, tmp_path / "out")
    assert "--complex-days must be >= 1" in line and "not -1" in line


@pytest.mark.parametrize(("alphas", "says"), [
    ("1,inf", "--alphas must each be finite and > 0, not inf"),
    ("nan", "--alphas must each be finite and > 0, not nan"),
    ("10,0", "--alphas must each be finite and > 0, not 0.0"),
    ("1,1e6", f"--alphas must each be < {mide_eval.max_alpha():.6g}"),
])
def test_alphas_are_checked_before_any_day_is_simulated(alphas, says, no_long_work, tmp_path,
                                                        capsys):
    line = refused(["--alphas", alphas], capsys, tmp_path / "out")
    assert says in line
    assert "epsilon_1" not in line  # not a CLI option


def test_largest_allowed_alpha_still_gives_ppwlm_a_plan():
    from mechanisms.mide import decide

    alpha = mide_eval.max_alpha() * (1 - 1e-9)
    mide_eval.check_sweeps([0.05], [alpha])
    for alg in ("ppwlm", "dppwlm"):
        res = decide(np.ones(3), 2.0, algorithm=alg, beta=0.05, alpha=alpha, epsilon_max=4.0,
                     epsilon_1=mide_eval.DEFAULTS["epsilon_1"], steps=mide_eval.DEFAULTS["steps"],
                     rng=np.random.default_rng(0))
        assert not res.denied
    with pytest.raises(InvalidParameterError, match="--alphas"):
        mide_eval.check_sweeps([0.05], [mide_eval.max_alpha() * (1 + 1e-9)])


def test_bad_beta_message_names_the_value(no_long_work, tmp_path, capsys):
    line = refused(["--betas", "0.05,0.7"], capsys, tmp_path / "out")
    assert "--betas must each lie in (0, 0.5), not 0.7" in line
    assert "alphas" not in line


# --------------------------------------------------------------------- γ exactness
def test_inexact_min_entropy_is_marked_with_a_footnote(count_files, tmp_path, capsys,
                                                       monkeypatch):
    import mechanisms.mide.entropy as entropy

    # a tiny search budget and no level enumeration: every γ is a certified lower bound
    for name, value in (("MAX_NODES", 1), ("LEVEL_FALLBACK_NODES", 1),
                        ("LEVEL_ENUM_LIMIT", 0), ("LEVEL_ENUM_FIRST", 0)):
        monkeypatch.setattr(entropy, name, value)
    cp, kp, _, _ = count_files
    out = tmp_path / "out"
    rc = mide_eval.main(["--counts", str(cp), "--capacities", str(kp), "--runs", "1",
                         "--skip", "beta,alpha,complex,plots", "--out", str(out),
                         "--no-progress"])
    assert rc == 0
    text = capsys.readouterr().out
    assert mide_eval.GAMMA_NOTE in text and mide_eval.GAMMA_NOTE in (out / "tables.md").read_text()
    rows = list(csv.DictReader((out / "main.csv").open()))
    answered = [r for r in rows if r["denied"] == "0.0"]
    assert answered and all(float(r["gamma_inexact"]) == 1 for r in answered)
    assert all(float(r["gamma_upper"]) >= float(r["gamma"]) for r in answered)
    gamma_col = mide_eval.markdown(answered, ["algorithm", "gamma"]).splitlines()[2]
    assert "| ≥" in gamma_col


def test_markdown_marks_only_cells_with_an_inexact_run():
    rows = [{"a": "x", "gamma": 1.5, "gamma_inexact": 0.0},
            {"a": "y", "gamma": 2.5, "gamma_inexact": 0.25},
            {"a": "z", "gamma": float("nan"), "gamma_inexact": float("nan")}]
    text = mide_eval.markdown(rows, ["a", "gamma"])
    assert "| x | 1.5 |" in text and "| y | ≥2.5 |" in text and "| z | n/a |" in text
    assert text.endswith(mide_eval.GAMMA_NOTE)
    assert mide_eval.GAMMA_NOTE not in mide_eval.markdown(rows[:1], ["a", "gamma"])
