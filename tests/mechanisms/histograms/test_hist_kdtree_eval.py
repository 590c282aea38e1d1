"""kd-tree / cell-based release (kdtree.txt §4) and the DPBench evaluation helpers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechanisms.errors import InvalidParameterError
from mechanisms.histograms import evaluation as ev
from mechanisms.histograms import kdtree as kd


def test_heterogeneity_and_usefulness_hand_computed() -> None:
    assert kd.heterogeneity(np.array([[1.0, 3.0], [5.0, 7.0]])) == pytest.approx(8.0)
    # Thm 4.2: a = β (GS/ε) ln(β/δ)
    assert kd.usefulness_accuracy(100, 0.5, 0.01) == pytest.approx(100 * 2 * math.log(1e4))
    a = kd.usefulness_accuracy(64, 1.0, 0.05)
    assert kd.usefulness_holds(64, 1.0, 0.05, a * 1.0001)
    assert not kd.usefulness_holds(64, 1.0, 0.05, a * 0.9)
    with pytest.raises(InvalidParameterError):
        kd.usefulness_accuracy(0, 1.0, 0.1)


def test_usefulness_bound_holds_empirically() -> None:
    # the bound is loose: even the full-domain query stays within it far more than 1-δ
    rng = np.random.default_rng(0)
    x = rng.poisson(5, (8, 8)).astype(float)
    a = kd.usefulness_accuracy(x.size, 1.0, 0.05)
    errs = [abs(kd.cell_based_release(x, 1.0, rng=rng).sum() - x.sum()) for _ in range(200)]
    assert np.mean(np.array(errs) <= a) >= 0.95


def _covers_exactly(boxes, shape) -> bool:
    cover = np.zeros(shape, int)
    for b in boxes:
        cover[tuple(slice(lo, hi) for lo, hi in b)] += 1
    return bool(np.all(cover == 1))


def test_kd_partition_finds_uniform_blocks() -> None:
    cube = np.zeros((8, 8))
    cube[:4, :] = 10.0
    cube[4:, 4:] = 50.0
    boxes = kd.kd_tree_partition(cube, xi1=0.5)
    assert _covers_exactly(boxes, cube.shape)
    for b in boxes:
        assert kd.heterogeneity(cube[tuple(slice(lo, hi) for lo, hi in b)]) <= 0.5
    assert len(kd.kd_tree_partition(cube, xi1=1e9)) == 1
    # ξ0: keep splitting while a partition holds more than ξ0 records
    assert all(
        cube[tuple(slice(lo, hi) for lo, hi in b)].sum() <= 100
        for b in kd.kd_tree_partition(cube, xi0=100, xi1=1e9)
    )


def test_kd_tree_release_3d_and_budget() -> None:
    x = np.random.default_rng(1).poisson(3, (4, 5, 6)).astype(float)
    r = kd.kd_tree_release(x, 1.0, rng=np.random.default_rng(2))
    assert r.estimate.shape == x.shape
    assert r.eps_cells + r.eps_partitions == pytest.approx(1.0)
    assert _covers_exactly(r.boxes, x.shape)


def test_range_queries_hand_computed() -> None:
    cube = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    box = ((0, 2), (1, 3))  # columns 1..2
    assert kd.range_count(cube, box) == 16.0
    # sum over axis 1 with attribute values = index: 1·(2+5) + 2·(3+6) = 25
    assert kd.range_sum(cube, box, axis=1) == 25.0
    assert kd.range_average(cube, box, axis=1) == pytest.approx(25 / 16)
    assert kd.range_sum(cube, box, axis=0, values=np.array([10.0, 20.0])) == 5 * 10 + 11 * 20
    with pytest.raises(InvalidParameterError):
        kd.range_count(cube, ((0, 3), (0, 1)))


def test_scaled_error_and_workloads_hand_computed() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0])
    est = np.array([1.0, 2.0, 3.0, 6.0])
    w = ev.prefix_workload(4)
    # prefix answers differ only in the last query, by 2 → ‖·‖₂ = 2, q = 4, s = 10
    assert ev.scaled_error(x, est, w) == pytest.approx(2 / 40)
    assert ev.scaled_error(x, est, ev.identity_workload(4)) == pytest.approx(2 / 40)
    rng = np.random.default_rng(0)
    small = ev.make_workload("small", 100, n_queries=500, rng=rng)
    sizes = small.hi - small.lo
    assert sizes.min() >= 1 and sizes.max() <= 10 and small.hi.max() <= 100
    large = ev.make_workload("large", 5000, n_queries=500, rng=rng)
    assert set(np.unique(large.hi - large.lo)) <= set(range(100, 1001, 100))
    with pytest.raises(InvalidParameterError):
        ev.make_workload("huge", 10)


def test_resample_and_coarsen() -> None:
    rng = np.random.default_rng(0)
    shape = np.array([0.0, 1.0, 3.0, 0.0])
    x = ev.resample(shape, 10_000, rng=rng)
    assert x.sum() == 10_000 and x[0] == 0 and x[3] == 0
    assert ev.coarsen(np.arange(8.0), 2).tolist() == [6.0, 22.0]
    boxes = ev.random_boxes((6, 7), 50, rng=rng)
    cube = rng.poisson(2, (6, 7)).astype(float)
    want = [cube[b[0, 0] : b[0, 1], b[1, 0] : b[1, 1]].sum() for b in boxes]
    assert ev.answer_boxes(cube, boxes) == pytest.approx(want)
