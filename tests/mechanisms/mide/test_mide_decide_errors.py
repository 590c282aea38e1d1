"""``decide()`` refuses malformed array inputs with an InvalidParameterError that names
the bad shape or value — never a raw numpy ValueError/TypeError."""

from __future__ import annotations

import numpy as np
import pytest

from mechanisms.errors import InvalidParameterError
from mechanisms.mide import decide

BASE = {"beta": 0.05, "alpha": 1.0, "epsilon_max": 4.0}


@pytest.mark.parametrize("algorithm", ["naive", "tslm", "ppwlm", "dppwlm"])
def test_thresholds_of_the_wrong_shape_name_both_shapes(algorithm: str) -> None:
    with pytest.raises(InvalidParameterError, match=r"thresholds.*\(5,\).*\(3,\)"):
        decide(np.ones(5), np.ones(3), algorithm=algorithm, **BASE)


@pytest.mark.parametrize(("counts", "thresholds", "says"), [
    (np.array([1.0, np.nan, 3.0]), 1.0, r"counts must be finite.*nan at index \(1,\)"),
    (np.array([1.0, 2.0, np.inf]), 1.0, r"counts must be finite.*inf at index \(2,\)"),
    (np.ones(3), np.array([1.0, -np.inf, 1.0]), r"thresholds must be finite.*-inf"),
    (np.array(["a", "b"]), 1.0, r"counts must be real numbers.*dtype <U1"),
    (np.array([object(), 1.0], dtype=object), 1.0, r"counts must be real numbers.*object"),
    (np.ones(2), np.array(["x", "y"]), r"thresholds must be real numbers"),
    ([[1.0, 2.0], [3.0]], 1.0, r"counts must be real numbers"),  # ragged
])
def test_non_numeric_or_non_finite_arrays_are_named(counts, thresholds, says: str) -> None:
    with pytest.raises(InvalidParameterError, match=says):
        decide(counts, thresholds, algorithm="tslm", **BASE)


@pytest.mark.parametrize(("params", "says"), [
    ({"value_range": (0.0, np.ones(3))}, r"value_range hi.*\(5,\).*\(3,\)"),
    ({"value_range": (0.0, np.nan)}, r"value_range hi must be finite"),
    ({"value_range": (2.0, 1.0)}, r"hi > lo, not lo=2.0 >= hi=1.0"),
    ({"value_range": 3.0}, r"value_range must be a pair"),
    ({"priors": np.ones(3)}, r"priors.*\(5\).*\(3,\)"),
    ({"priors": -np.ones(5)}, r"priors must be > 0, not -1.0"),
])
def test_dppwlm_array_parameters_are_checked_up_front(params: dict, says: str) -> None:
    with pytest.raises(InvalidParameterError, match=says):
        decide(np.ones(5), 1.0, algorithm="dppwlm", **BASE, **params)


def test_well_formed_inputs_still_work() -> None:
    rng = np.random.default_rng(0)
    counts = np.array([[10, 0], [0, 10]])  # 2-D ints, scalar and per-predicate thresholds
    for thresholds in (5.0, np.full((2, 2), 5.0), np.array([5.0, 5.0])):
        res = decide(counts, thresholds, algorithm="dppwlm", rng=rng, **BASE,
                     value_range=(0.0, 20.0), priors=np.ones(4))
        assert res.positive.shape == (4,)


def test_value_range_as_a_two_row_array_is_accepted() -> None:
    rng = np.random.default_rng(1)
    counts = np.array([3.0, 12.0, 30.0])
    ranges = np.stack([np.zeros(3), np.full(3, 60.0)])  # shape (2, P): lo row, hi row
    res = decide(counts, 10.0, algorithm="dppwlm", rng=rng, **BASE, value_range=ranges)
    assert res.positive.shape == (3,)
