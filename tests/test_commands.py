"""The command-line experience of ``occustream``: every sub-command in
:data:`occustream.cli.COMMANDS` explains itself with ``--help``, and bad input ends with
exit code 2 and ONE line on stderr that says what to fix — never a traceback, never a
service started (or a Kafka connection tried) before the bad value is noticed.

Each case runs ``python -m occustream.cli ...`` in a subprocess, as a user would; the
sub-command imports are lazy, so a case takes well under two seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from occustream.cli import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
#: a failure that waits on a service would hang; fail the test instead
TIMEOUT_S = 30
#: sub-commands whose own --help lists sub-sub-commands rather than options
GROUPS = {"histogram", "ingest", "buildings"}


def occustream(*argv: str, env: dict[str, str] | None = None,
               cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """Run ``occustream ARGV`` as a user would; return the finished process."""
    base = {k: v for k, v in os.environ.items()
            if k not in ("KAFKA_BOOTSTRAP", "REDIS_URL") and not k.startswith("OCCUSTREAM_")}
    base["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "occustream.cli", *argv], cwd=cwd,
                          env={**base, **(env or {})}, capture_output=True, text=True,
                          timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)


def assert_one_line_error(proc: subprocess.CompletedProcess[str], says: str = "") -> str:
    """Exit 2, one stderr line (containing ``says``), no traceback; return the line."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert len(lines) == 1, proc.stderr
    assert says in lines[0], lines[0]
    return lines[0]


def test_top_level_help_lists_every_command() -> None:
    proc = occustream("--help")
    assert proc.returncode == 0
    for name in COMMANDS:
        assert f"  {name} " in proc.stdout


def test_no_command_is_a_usage_error() -> None:
    proc = occustream()
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "usage: occustream COMMAND" in proc.stderr


def test_unknown_command() -> None:
    assert_one_line_error(occustream("nosuch"), "unknown command 'nosuch'")


@pytest.mark.parametrize("command", list(COMMANDS))
def test_help_exits_0_and_explains_defaults(command: str) -> None:
    proc = occustream(command, "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"usage: occustream {command}")
    assert "Traceback" not in proc.stderr
    if command not in GROUPS:
        assert "default" in proc.stdout


@pytest.mark.parametrize("sub", ["release", "evaluate"])
def test_histogram_subcommand_help_shows_defaults(sub: str) -> None:
    proc = occustream("histogram", sub, "--help")
    assert proc.returncode == 0
    assert "--epsilon" in proc.stdout
    # options whose help text never said their default now show it
    assert "(default: 1.0)" in proc.stdout or "(default: 1,0.5,0.1)" in proc.stdout


def test_a_default_of_zero_is_shown() -> None:
    proc = occustream("simulate", "--help")
    seed_help = proc.stdout.split("\n  --seed SEED", 1)[1].split("\n")[0]
    assert "(default: 0)" in seed_help


@pytest.mark.parametrize("command", list(COMMANDS))
def test_unknown_option_is_one_line(command: str) -> None:
    line = assert_one_line_error(occustream(command, "--no-such-option"),
                                 f"occustream {command}")
    assert "--help" in line


@pytest.fixture(scope="module")
def tiny_jsonl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "tiny.jsonl"
    path.write_text('{"ts": 1767571200.0, "device": "aa", "ap": "x"}\n')
    return path


SECRET = {"OCCUSTREAM_SECRET": "a-test-secret-of-enough-length"}


@pytest.mark.parametrize(("argv", "env", "says"), [
    (["simulate", "--days", "0.01", "--out", "/nonexistent/dir/x.jsonl"], None, "--out"),
    (["simulate", "--days", "0.01", "--speed", "0"], None, "--speed"),
    (["simulate", "--days", "0.01", "--building", "nope", "--out", "x.jsonl"], None,
     "no such building"),
    (["replay", "/nonexistent.jsonl"], None, "existing JSONL file"),
    (["replay", "{tiny}", "--speed", "-1", "--kafka", "127.0.0.1:1"], None, "--speed"),
    (["histogram", "evaluate", "--data-dir", "/nonexistent"], None, "--data-dir"),
    (["histogram", "release", "/nonexistent.npy"], None, "does not exist"),
    (["worker", "--site", "nope"], SECRET, "no such building"),
    (["worker", "--mechanisms", "bogus"], SECRET, "mechanisms"),
    (["dashboard", "--mechanisms", "bogus"], None, "--mechanisms"),
    (["dashboard", "--port", "-1"], None, "--port"),
    (["demo", "--days", "-1"], None, "--days"),
    (["demo", "--scenarios", "bogus"], None, "scenarios"),
    (["demo", "--workers", "0"], None, "--workers"),
    (["services", "--partitions", "0"], None, "--partitions"),
    (["alerts", "--last", "-1", "--redis-url", "redis://127.0.0.1:1"], None, "--last"),
    (["evaluate", "--days", "-1"], None, "days must be"),
    (["evaluate", "--days", "0.5"], None, "invalid int value"),
    (["evaluate", "--tick-s", "7"], None, "tick_s must divide a day"),
    (["tune", "--utility", "bogus"], None, "utility must be"),
    (["tune", "--mechanisms", "bogus"], None, "mechanisms must be among"),
    (["audit", "--mechanisms", "bogus"], None, "mechanisms must be among"),
    (["mide-eval", "--runs", "-1"], None, "--runs"),
    (["mide-eval", "--seed", "-1"], None, "--seed must be >= 0, not -1"),
    (["mide-eval", "--out", "/proc/mide-eval-out"], None, "'/proc/mide-eval-out'"),
    (["mide-eval", "--alphas", "1,1e6"], None, "--alphas must each be <"),
    (["bench", "nosuch"], None, "unknown benchmark"),
])
def test_bad_value_is_one_line(argv: list[str], env: dict[str, str] | None, says: str,
                               tiny_jsonl: Path, tmp_path: Path) -> None:
    argv = [a.replace("{tiny}", str(tiny_jsonl)) for a in argv]
    assert_one_line_error(occustream(*argv, env=env, cwd=tmp_path), says)
