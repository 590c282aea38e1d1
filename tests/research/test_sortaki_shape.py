"""The shape-agreement logic of the SORTaki reproduction (research/sortaki_paper.py).

Deterministic: the tests feed hand-made grids, so no false-alarm rate is involved.
"""

from __future__ import annotations

import math

import pytest

from research import sortaki_paper as sp


def _tiny(values: dict[str, tuple[float, ...]], eps: tuple[float, ...] = (1.0,)) -> sp.PaperTable:
    return sp.PaperTable("T", "tiny", "small", ("D",), eps, (0.9,), 1.0, values)


@pytest.mark.parametrize("key", list(sp.TABLES))
def test_the_paper_agrees_with_itself_and_every_claim_holds_on_it(key: str) -> None:
    table = sp.TABLES[key]
    grid = sp.paper_grid(table)
    assert len(grid) == len(table.algorithms) * len(table.columns())
    for s in sp.shape_scores(table, grid, grid):
        assert s.total > 0 and s.agree == s.total and s.verdict == "yes", (s.test, s.detail)
    claims = [c for c in sp.CLAIMS if c.table == key]
    assert claims, f"Table {key} has no claim of the paper's text"
    for c in claims:
        ok, detail = c.check(table, grid)
        assert ok, f"Table {key}: {c.text!r} does not hold on the paper's numbers: {detail}"


@pytest.mark.parametrize("key", list(sp.TABLES))
def test_a_reversed_grid_disagrees(key: str) -> None:
    table = sp.TABLES[key]
    paper = sp.paper_grid(table)
    reversed_ = {k: 1.0 / v for k, v in paper.items()}  # every order flipped, every column
    scores = {s.test: s for s in sp.shape_scores(table, paper, reversed_)}
    assert scores["order"].agree == 0 and scores["order"].verdict == "no"
    assert scores["winner"].verdict == "no"


def test_order_score_skips_pairs_the_paper_does_not_separate() -> None:
    # paper: a = 1, b = 1.05 (a tie: within CLEAR), c = 2 → clear pairs (a, c), (b, c)
    table = _tiny({"a": (1.0,), "b": (1.05,), "c": (2.0,)})
    paper = sp.paper_grid(table)
    ours = {("a", "D", 1.0, 0.9): 2.0, ("b", "D", 1.0, 0.9): 1.0, ("c", "D", 1.0, 0.9): 1.5}
    s = sp.order_score(table, paper, ours)
    assert (s.agree, s.total) == (1, 2)  # (a, c) flipped, (b, c) kept
    assert s.verdict == "partly"


def test_winner_accepts_the_papers_near_ties_only() -> None:
    table = _tiny({"a": (1.0,), "b": (1.04,), "c": (1.5,)})
    paper = sp.paper_grid(table)
    for best, hit in (("a", 1), ("b", 1), ("c", 0)):  # b is within TIE of a; c is not
        ours = {(x, "D", 1.0, 0.9): (0.5 if x == best else 1.0) for x in "abc"}
        assert sp.winner_score(table, paper, ours).agree == hit, best


def test_eps_trend_compares_the_direction_relative_to_identity() -> None:
    # paper: a gains on Identity as ε falls (1.0 → 0.5 of Identity); b barely moves
    table = _tiny({"Identity": (1.0, 100.0), "a": (1.0, 50.0), "b": (2.0, 205.0)},
                  eps=(1.0, 0.1))
    paper = sp.paper_grid(table)
    same = dict(paper)
    s = sp.eps_trend_score(table, paper, same)
    assert (s.agree, s.total) == (1, 1)  # b's move (2.0 → 2.05) is not clear
    flipped = dict(paper) | {("a", "D", 0.1, 0.9): 300.0}  # a falls behind as ε falls
    assert sp.eps_trend_score(table, paper, flipped).agree == 0


def test_gamma_score_ignores_rows_that_do_not_use_gamma() -> None:
    t = sp.TABLES["VIII"]
    paper = sp.paper_grid(t)
    s = sp.gamma_score(t, paper, paper)
    # Identity and DAWA rows are constant in γ_in: 8 rows × 2 ε remain
    assert s.total == (len(t.algorithms) - 2) * len(t.epsilons)
    moved = dict(paper)
    for g in t.gammas:  # make γ_in = 0.3 best for sDWF at ε = 1 (paper: 0.9)
        moved[("sDWF", "Wage-Per-Hour", 1.0, g)] = 0.5 if g == 0.3 else 5.0
    assert sp.gamma_score(t, paper, moved).agree == s.total - 1


def test_a_claim_fails_when_its_sentence_is_false() -> None:
    t = sp.TABLES["IX"]
    grid = sp.paper_grid(t)
    claim = next(c for c in sp.CLAIMS if c.table == "IX" and "NetTrace" in c.text)
    assert claim.check(t, grid)[0]
    worse = dict(grid) | {("DAWA", "NetTrace", 0.5, 0.9): 10.0}  # sDWF (3.36) now wins
    ok, detail = claim.check(t, worse)
    assert not ok and "ε=0.5: sDWF" in detail


def test_verdict_thresholds() -> None:
    assert sp.verdict(sp.AGREE) == "yes"
    assert sp.verdict(sp.AGREE - 0.01) == "partly"
    assert sp.verdict(sp.PARTLY) == "partly"
    assert sp.verdict(sp.PARTLY - 0.01) == "no"
    assert sp.verdict(math.nan) == "n/a"


def test_table_rows_must_match_the_columns() -> None:
    bad = _tiny({"a": (1.0, 2.0)})
    with pytest.raises(sp.InvalidParameterError, match="must have 1 values"):
        sp.paper_grid(bad)
