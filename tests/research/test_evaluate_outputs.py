"""`occustream evaluate`: its help text and its figure files (issue 18 item 6)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from occustream.cli import main as cli_main


def test_help_prints_single_percent_signs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli_main(["evaluate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "%%" not in text
    assert "75 % and 90 % utility" in text


@pytest.mark.parametrize("fmt", ["html", "md"])
def test_each_figure_is_written_once(tmp_path: Path, fmt: str) -> None:
    out = tmp_path / fmt
    rc = cli_main(["evaluate", "--days", "2", "--scale", "0.2", "--mechanisms", "laplace,ttl",
                   "--epsilons", "1", "--ttls", "600", "--runs", "1", "--table42", "off",
                   "--format", fmt, "--out", str(out)])
    assert rc == 0
    pngs = sorted(out.glob("*.png"))
    assert len(pngs) >= 2
    digests = [hashlib.sha256(p.read_bytes()).hexdigest() for p in pngs]
    assert len(set(digests)) == len(digests), [p.name for p in pngs]
    assert all(p.name.startswith("evaluate-") for p in pngs), [p.name for p in pngs]
    if fmt == "md":  # every figure file is the one the report links to
        text = (out / "evaluate.md").read_text()
        assert all(f"]({p.name})" in text for p in pngs)
