"""The default 2-D release (issue 17): the choice uses public features and DP estimates
only, the whole ε is charged, and the dispatcher knows every algorithm."""

from __future__ import annotations

import numpy as np
import pytest

from mechanisms.accounting import Accountant, Budget
from mechanisms.errors import BudgetExhaustedError, InvalidParameterError
from mechanisms.histograms import select2d as s2
from mechanisms.histograms._noise import child_stream


def _sparse(seed: int, lam: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.poisson(lam * (rng.random((64, 64)) < 0.3)).astype(float)


def test_rule_thresholds_on_public_features() -> None:
    cells = 256 * 256
    at = s2.KD_DENSITY * cells  # ψ = N̂·ε/n_cells exactly at the threshold for ε = 1
    assert s2.select_2d((256, 256), 1.0, at * 0.99) == "AG"
    assert s2.select_2d((256, 256), 1.0, at * 1.01) == "kd-tree"
    assert s2.select_2d((256, 256), 0.1, at * 1.01) == "AG"  # ε enters ψ
    assert s2.select_2d((256, 256), 0.1, 10.0, "identity") == "kd-tree"  # cell queries
    assert s2.select_2d_occupancy((256, 256), 1.0, 1e6, 100.0) == "kd-tree"
    assert s2.select_2d_occupancy((256, 256), 1.0, 1e6, 5000.0) == "AG"
    assert s2.select_2d_occupancy((256, 256), 0.01, 1e5, 100.0) == "AG"  # ψ too small
    with pytest.raises(InvalidParameterError):
        s2.select_2d((8, 8), 1.0, 10.0, "prefix")


@pytest.mark.parametrize("features", ["scale", "occupancy"])
def test_choice_depends_on_data_only_through_dp_estimates(
    monkeypatch: pytest.MonkeyPatch, features: str
) -> None:
    x_small, x_big = _sparse(0, 0.5), np.zeros((64, 64))
    x_big[[3, 9, 40, 41, 60], [7, 7, 20, 50, 2]] = 1e5  # dense and concentrated
    raw = [
        s2.release_2d(x, 1.0, features=features, rng=np.random.default_rng(0))
        for x in (x_small, x_big)
    ]
    assert raw[0].algorithm != raw[1].algorithm  # the choice is data-dependent …
    monkeypatch.setattr(s2, "noisy_total", lambda *a, **k: 500.0)
    monkeypatch.setattr(s2, "noisy_occupancy", lambda *a, **k: 10.0)
    fixed = [
        s2.release_2d(x, 1.0, features=features, rng=np.random.default_rng(0))
        for x in (x_small, x_big)
    ]
    assert fixed[0].algorithm == fixed[1].algorithm  # … only through N̂ (and occupancy)
    assert fixed[0].scale == fixed[1].scale == 500.0


@pytest.mark.parametrize("features", ["scale", "occupancy"])
def test_release_2d_charges_epsilon_scale_first(features: str) -> None:
    acct = Accountant(Budget(1.0), name="t")
    rel = s2.release_2d(
        _sparse(2, 50.0), 0.6, features=features, accountant=acct, rng=np.random.default_rng(1)
    )
    recs = acct.records
    assert recs[0].mechanism == "select2d:scale"
    assert recs[0].epsilon == pytest.approx(s2.AUTO_SCALE_SHARE * 0.6)
    assert acct.spent().epsilon == pytest.approx(0.6)
    assert sum(rel.parts.values()) == pytest.approx(0.6)
    assert rel.estimate.shape == (64, 64)


def test_release_2d_refused_before_noise() -> None:
    acct = Accountant(Budget(0.5), name="t")
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    with pytest.raises(BudgetExhaustedError):
        s2.release_2d(_sparse(3, 5.0), 0.6, accountant=acct, rng=rng)
    assert rng.bit_generator.state == state and acct.spent().epsilon == 0.0


@pytest.mark.parametrize("name", s2.ALGORITHMS_2D)
def test_every_algorithm_dispatches(name: str) -> None:
    x = _sparse(4, 20.0)
    acct = Accountant(Budget(1.0), name="t")
    rel = s2.release_2d(x, 1.0, algorithm=name, accountant=acct, rng=np.random.default_rng(5))
    assert rel.algorithm == name
    assert acct.spent().epsilon == pytest.approx(1.0)
    # useful: the total is within a few noise scales of the truth
    assert abs(rel.estimate.sum() - x.sum()) < 0.05 * x.sum()


def test_unknown_algorithm_and_shape_rejected() -> None:
    with pytest.raises(InvalidParameterError):
        s2.release_2d(np.ones((4, 4)), 1.0, algorithm="nope")
    with pytest.raises(InvalidParameterError):
        s2.release_2d(np.ones(16), 1.0)


def test_default_identity_release_is_nonnegative_and_no_worse_per_cell() -> None:
    """Identity workload: the default clamps at 0 — never negative, every cell's error ≤
    unclamped release's on the same draws (fails if the clamp is removed: the noise of
    the buckets over empty space leaves negative cells on sparse data)."""
    x = np.zeros((64, 64))
    spikes = np.random.default_rng(8).choice(x.size, 12, replace=False)
    x.flat[spikes] = 30.0  # a few spikes: the empty space between is cut into many buckets
    clamped = s2.release_2d(x, 0.5, workload="identity", rng=np.random.default_rng(9))
    gen = np.random.default_rng(9)
    name = clamped.algorithm.split(":", 1)[1]
    eps_left = sum(v for k, v in clamped.parts.items() if k.startswith(f"{name}:"))
    if clamped.scale is not None:  # a rule that bought features spawned their stream
        _ = child_stream(gen)
    raw = s2.run_2d(name, x, eps_left, scale=clamped.scale, rng=gen).estimate
    assert np.any(raw < 0)
    assert np.all(clamped.estimate >= 0)
    assert np.all(np.abs(clamped.estimate - x) <= np.abs(raw - x) + 1e-9)
    assert np.abs(clamped.estimate - x).sum() < np.abs(raw - x).sum()


@pytest.mark.parametrize(
    ("workload", "chosen"), [("rectangles", "DAWA-2D-borders"), ("identity", "DAWA-2D-aligned")]
)
def test_default_release_is_the_dawa_variant_of_its_workload(workload: str, chosen: str) -> None:
    """The default rule (select2d.DAWA_EVIDENCE): the rectangles partition with its border
    layouts for rectangles,
    the aligned runs of the curve for cells; the whole ε, the release that algorithm gives
    alone on the same stream (then clamped for cells)."""
    x = _sparse(6, 20.0)
    rel = s2.release_2d(x, 0.7, workload=workload, rng=np.random.default_rng(11))
    assert rel.algorithm.split(":", 1)[1] == chosen
    boxes = None if workload == "identity" else s2.default_boxes(x.shape)
    alone = s2.run_2d(chosen, x, 0.7, boxes=boxes, rng=np.random.default_rng(11)).estimate
    if workload == "identity":
        alone = np.maximum(alone, 0.0)
    assert np.array_equal(rel.estimate, alone)
