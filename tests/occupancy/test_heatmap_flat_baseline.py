"""Colour classes when the usual value never varied (σ = 0): the usual value is usual."""

from __future__ import annotations

import numpy as np

from occupancy.heatmap import colour_class


def test_flat_baseline_colours_the_usual_value_as_usual() -> None:
    v = np.array([0.0, 0.5, -0.5, 3.0, 3.0, 2.0])
    mu = np.array([0.0, 0.0, 0.0, 3.0, 3.0, 3.0])
    got = colour_class(v, mu, np.zeros(6)).tolist()
    assert got == [6, 10, 1, 6, 6, 1]


def test_mu_has_the_same_class_with_and_without_spread() -> None:
    # with σ > 0 a value at μ is class 6 (the boundary of the two middle bins goes up);
    # σ → 0 must not move it to an end of the scale
    for sigma in (1.0, 0.25, 0.0):
        assert colour_class(np.array([5.0]), np.array([5.0]), np.array([sigma]))[0] == 6
    # the ends stay where they were
    assert colour_class(np.array([7.0]), np.array([5.0]), np.array([1.0]))[0] == 10
    assert colour_class(np.array([2.9]), np.array([5.0]), np.array([1.0]))[0] == 1
