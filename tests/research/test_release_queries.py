"""Post-processing queries (research.queries) and the rng-signature convention."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from mechanisms import hierarchical, laplace, noise, pegasus
from mechanisms.errors import InvalidParameterError
from research import queries


def test_sliding_window_sum_matches_a_loop() -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(0, 9, (30, 4)).astype(float)
    for w in (1, 3, 7):
        got = queries.sliding_window_sum(x, w)
        want = np.array([x[max(0, t - w + 1) : t + 1].sum(axis=0) for t in range(30)])
        np.testing.assert_allclose(got, want)


def test_window_change_and_events() -> None:
    x = np.array([0, 0, 0, 5, 5, 5, 0, 0], dtype=float)
    ch = queries.window_change(x, 2)
    assert np.isnan(ch[:3]).all()
    np.testing.assert_allclose(ch[3:], [5, 10, 5, -5, -10])
    np.testing.assert_array_equal(
        queries.detect_events(x, "jump", 3, 2), [0, 0, 0, 1, 1, 1, 0, 0]
    )
    np.testing.assert_array_equal(
        queries.detect_events(x, "drop", 3, 2), [0, 0, 0, 0, 0, 0, 1, 1]
    )
    np.testing.assert_array_equal(queries.detect_events(x, "low", 1, 2), [0, 1, 1, 0, 0, 0, 0, 1])
    with pytest.raises(InvalidParameterError):
        queries.detect_events(x, "spike", 1)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError):
        queries.sliding_window_sum(x, 0)


def test_roc_sweep_perfect_and_useless_detectors() -> None:
    rng = np.random.default_rng(1)
    true = np.repeat(rng.integers(0, 2, (20, 50)) * 10, 5, axis=0).astype(float)
    perfect = queries.roc_sweep(true, true, "jump", 5, np.linspace(-20, 20, 41), w=2)
    assert perfect.auc() == pytest.approx(1.0)
    assert perfect.n_events > 0 and perfect.n_non_events > 0
    noise_only = rng.normal(0, 1, true.shape)
    useless = queries.roc_sweep(noise_only, true, "jump", 5, np.linspace(-10, 10, 81), w=2)
    assert 0.35 < useless.auc() < 0.65
    assert np.all(np.diff(useless.tpr) <= 1e-12)  # higher threshold, fewer detections
    d = perfect.to_dict()
    assert set(d) == {"thresholds", "tpr", "fpr", "n_events", "n_non_events", "auc"}


def test_clip_and_mae() -> None:
    np.testing.assert_array_equal(queries.clip_nonnegative([-2, 0, 3]), [0, 0, 3])
    assert queries.mean_absolute_error([1, 2], [2, 2]) == 0.5
    with pytest.raises(InvalidParameterError):
        queries.mean_absolute_error([1], [1, 2])


POST_PROCESSING = [
    queries.sliding_window_sum,
    queries.window_change,
    queries.detect_events,
    queries.roc_sweep,
    queries.clip_nonnegative,
    queries.mean_absolute_error,
    pegasus.smooth,
    noise.laplace_interval,
    noise.laplace_mae,
]

NOISY = [
    noise.discrete_laplace,
    noise.laplace,
    laplace.laplace_release,
    laplace.update,
    pegasus.update,
    pegasus.step,
    hierarchical.update,
]


@pytest.mark.parametrize("fn", POST_PROCESSING, ids=lambda f: f.__qualname__)
def test_post_processing_functions_accept_no_rng(fn) -> None:
    params = inspect.signature(fn).parameters
    assert "rng" not in params and "prng" not in params and "seed" not in params


@pytest.mark.parametrize("fn", NOISY, ids=lambda f: f.__qualname__)
def test_noisy_functions_take_keyword_only_rng_defaulting_to_none(fn) -> None:
    p = inspect.signature(fn).parameters["rng"]
    assert p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is None
