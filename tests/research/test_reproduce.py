"""``occustream reproduce thesis`` (research.reproduce): one report, every claim side by side."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from mechanisms.errors import InvalidParameterError
from research import mide_thesis
from research import reproduce as rp
from research.tuning import TuneRow

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ``reproduce thesis --quick`` run (≈ 25 s of CPU) shared by the tests below."""
    out = tmp_path_factory.mktemp("reproduce")
    assert rp.main(["thesis", "--quick", "--out", str(out), "--no-progress"]) == 0
    return out


def test_quick_report_has_every_section_and_each_row_has_thesis_ours_agrees(
    quick_run: Path,
) -> None:
    md = (quick_run / "reproduce.md").read_text(encoding="utf-8")
    data = json.loads((quick_run / "reproduce.json").read_text(encoding="utf-8"))
    claims = data["claims"]
    for sec in rp.SECTIONS:
        assert f"## {sec}\n" in md, sec
        assert any(c["section"] == sec for c in claims), f"no claim in {sec}"
    for c in claims:
        assert c["thesis"].strip() and c["ours"].strip() and c["source"].strip(), c
        assert c["agrees"] in {"yes", "no", "partly", "n/a"}, c
        if c["agrees"] in {"no", "partly", "n/a"}:
            assert c["why"].strip(), f"a differing claim must say why: {c['claim']}"
        # the row is in the Markdown with its six cells
        row = f"| {c['claim']} | {c['source']} | {c['thesis']} | {c['ours']} | {c['agrees']} |"
        assert row in md, row
    # Table 4.2 side by side: the thesis' cells are transcribed, ours are numbers
    assert "| laplace | day | 75% | 0.1 | 23.7 |" in md
    assert "| pegasus | day | 90% | 15 | 16.9 |" in md
    # every linked plot exists and is a PNG
    figs = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert len(figs) >= len(rp.SECTIONS)
    for f in figs:
        assert (quick_run / f).read_bytes()[:8] == PNG_MAGIC, f
    for sec in rp.SECTIONS:  # at least one plot per section
        body = md.split(f"## {sec}\n", 1)[1].split("\n## ", 1)[0]
        assert "![" in body, sec


def test_internal_ex_post_section_is_only_in_the_internal_file(quick_run: Path) -> None:
    md = (quick_run / "reproduce.md").read_text(encoding="utf-8")
    internal = (quick_run / rp.INTERNAL_FILE).read_text(encoding="utf-8")
    for marker in (mide_thesis.INTERNAL_BANNER, rp.A3_HEADING, "INTERNAL_fig_a3",
                   "predicates ≤ 0.01"):
        assert marker not in md, marker
        assert marker in internal, marker
    assert "INTERNAL" not in json.dumps(
        [c for c in json.loads((quick_run / "reproduce.json").read_text())["claims"]])
    png = re.search(r"\]\((INTERNAL_[^)]+\.png)\)", internal)
    assert png and (quick_run / png.group(1)).read_bytes()[:8] == PNG_MAGIC


def _row(mech: str, period: str, target: float, param: float) -> TuneRow:
    return TuneRow(mech, period, target, "epsilon", param, target, 5.0, True, "")


def _rows(peg: dict[tuple[str, float], float]) -> list[TuneRow]:
    lap = {("day", 0.75): 1.0, ("day", 0.9): 2.0, ("night", 0.75): 1.2, ("night", 0.9): 2.4}
    return ([_row("laplace", p, t, v) for (p, t), v in lap.items()]
            + [_row("pegasus", p, t, v) for (p, t), v in peg.items()])


def test_table42_directions_follow_the_numbers() -> None:
    thesis_like = {("day", 0.75): 0.5, ("day", 0.9): 5.0, ("night", 0.75): 0.6,
                   ("night", 0.9): 3.0}
    claims, cells = rp.table42_claims(_rows(thesis_like))
    got = {c.claim: c.agrees for c in claims}
    assert got["pegasus needs less ε than Laplace for 75% utility"] == "yes"
    assert got["pegasus needs more ε than Laplace for 90% utility"] == "yes"
    assert got["Laplace needs more ε by night than by day"] == "yes"
    # one cell on the wrong side flips the claim (and the claim then says why)
    flipped = {**thesis_like, ("night", 0.75): 1.3}
    claims, _ = rp.table42_claims(_rows(flipped))
    c = next(c for c in claims if c.claim == "pegasus needs less ε than Laplace for 75% utility")
    assert c.agrees == "no" and c.why
    assert any(cell[:3] == ["pegasus", "night", "75%"] and cell[3] == "1e-05" for cell in cells)


def test_delta_claims_reject_confidence_falling_with_epsilon() -> None:
    def r(delta: float, method: str, eps: float, hi: float) -> dict:
        return {"delta": delta, "method": method, "epsilon": eps, "p > 0.5": hi}

    rows = []
    for d in (0.0, 0.9):
        rows += [r(d, "prior", math.nan, 10 + 100 * d), r(d, "true", math.inf, 500)]
        for e, v in ((0.1, 50), (1.0, 300), (5.0, 495)):
            rows += [r(d, "laplace-known", e, v), r(d, "dp-bound", e, 20 if e < 1 else 900)]
        rows += [r(0.9, "laplace-kde", e, v) for e, v in ((0.1, 52), (1.0, 300), (5.0, 490))
                 ] if d == 0.9 else []
    assert all(c.agrees == "yes" for c in rp.delta_claims(rows))
    bad = [dict(x, **{"p > 0.5": 100}) if (x["method"], x["epsilon"]) == ("laplace-known", 5.0)
           else x for x in rows]
    fig44 = [c.agrees for c in rp.delta_claims(bad) if c.source == "Fig. 4.4"]
    assert fig44 == ["no", "no"]


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(InvalidParameterError, match="seed must be >= 0"):
        rp.main(["thesis", "--seed", "-1"])
    with pytest.raises(SystemExit):
        rp.main(["everything"])
