"""The tuning search finds known answers on synthetic cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechanisms.errors import InvalidParameterError
from mechanisms.noise import discrete_laplace
from occupancy.heatmap import colour_utility
from research.tuning import search


def test_search_deterministic_known_answer() -> None:
    res = search(lambda e: [1 - math.exp(-e)], 0.75, 1e-3, 100, rel_tol=1e-4)
    assert res.reached and res.param == pytest.approx(math.log(4), rel=1e-3)
    assert search(lambda e: [0.1], 0.75, 1e-3, 100).reached is False
    assert search(lambda e: [0.9], 0.75, 1e-3, 100).param == 1e-3
    with pytest.raises(InvalidParameterError):
        search(lambda e: [1.0], 0.5, 2, 1)


def test_search_finds_the_epsilon_of_a_colour_utility_target() -> None:
    """True counts sit at μ with σ = 4: the colour matches iff the noise lies in [0, σ/2).

    For discrete Laplace with q = e^{-ε}: P[0 ≤ Z ≤ 1] = (1 − q)/(1 + q) · (1 + q),
    i.e. 1 − q. Target 0.5 → ε = ln 2. 200,000 cells per run, 3 runs: the mean's sd
    is ≈ 0.0007, far below the slope-scaled tolerance used.
    """
    n_cells, runs = 200_000, 3
    mu, sigma = 10.0, 4.0
    true = np.full(n_cells, mu)

    def util(eps: float) -> list[float]:
        return [
            colour_utility(true + discrete_laplace(1 / eps, n_cells,
                                                   rng=np.random.default_rng(r)),
                           true, mu, sigma)
            for r in range(runs)
        ]

    res = search(util, 0.5, 0.01, 20, rel_tol=0.002)
    assert res.param == pytest.approx(math.log(2), rel=0.02)


def test_tune_cli_writes_table(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from occustream.cli import main as cli_main

    out = tmp_path / "tune"
    rc = cli_main(["tune", "--days", "2", "--scale", "0.2", "--mechanisms", "laplace,ttl",
                   "--targets", "0.5", "--runs", "1", "--out", str(out), "--format", "md"])
    assert rc == 0
    md = (out / "tune.md").read_text()
    assert "Table 4.2" in md and "no formal guarantee" in md
    import json

    rows = json.loads((out / "table_4_2.json").read_text())
    assert {(r["mechanism"], r["period"]) for r in rows} == {
        ("laplace", "day"), ("laplace", "night"), ("ttl", "day"), ("ttl", "night")}
    for r in rows:
        if r["reached"]:
            assert r["utility"] >= 0.5


def test_grid_search_known_answer() -> None:
    from research.tuning import grid_search

    calls: list[float] = []

    def util(x: float) -> list[float]:
        calls.append(x)
        return [min(1.0, x / 1000)]

    res = grid_search(util, 0.25, [1, 10, 60, 300, 900, 1800])
    assert res.param == 300 and res.reached
    assert len(calls) <= 4
    assert not grid_search(util, 0.99, [1, 10]).reached
