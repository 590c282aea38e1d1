"""UG / AG / QuadTree / kd-trees (issue 17, 2-D): post-processing exactness, data flow,
accounting. Statistical noise-scale tests are in test_hist_spatial_noise.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechanisms.accounting import Accountant, Budget
from mechanisms.errors import BudgetExhaustedError
from mechanisms.histograms import evaluation as ev
from mechanisms.histograms import grids, kdtree, quadtree
from mechanisms.histograms.select2d import run_2d
from mechanisms.histograms.spend import SCALE_SHARE

_BOXES = ev.random_boxes((32, 32), 50, rng=np.random.default_rng(5))


def _cube(seed: int = 0, shape: tuple[int, int] = (32, 32), lam: float = 5.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = rng.gamma(0.5, lam, shape)
    return rng.poisson(base).astype(float)


# ------------------------------------------------------------ post-processing exactness


def _tree_design(side: int, height: int) -> list[np.ndarray]:
    """Rows of the measurement matrix per level (leaves first), leaves = blocks."""
    leaf = side >> height
    n = (side // leaf) ** 2
    rows_per_level = []
    for i in range(height + 1):
        f = 2**i
        k = (side // leaf) // f
        idx = np.arange(n).reshape(side // leaf, side // leaf)
        rows = np.zeros((k * k, n))
        for a in range(k):
            for b in range(k):
                rows[a * k + b, idx[a * f : (a + 1) * f, b * f : (b + 1) * f].ravel()] = 1
        rows_per_level.append(rows)
    return rows_per_level


def test_tree_least_squares_equals_weighted_lstsq() -> None:
    rng = np.random.default_rng(3)
    side, h = 8, 3
    design = _tree_design(side, h)
    y = [rng.normal(10, 5, (side >> i, side >> i)) for i in range(h + 1)]
    var = [np.full(yi.shape, rng.uniform(0.5, 4.0)) for yi in y]
    var[1][0, 1] = 7.0  # unequal variances inside a level too
    got = quadtree.tree_least_squares(y, var).ravel()
    a = np.vstack(design)
    b = np.concatenate([yi.ravel() for yi in y])
    w = 1.0 / np.sqrt(np.concatenate([vi.ravel() for vi in var]))
    want = np.linalg.lstsq(a * w[:, None], b * w, rcond=None)[0]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


def test_ag_inference_equals_weighted_lstsq() -> None:
    rng = np.random.default_rng(4)
    for alpha in (0.3, 0.5, 0.8):
        u = rng.normal(5, 2, 6)
        v = float(rng.normal(30, 3))
        a = np.vstack([np.ones(6), np.eye(6)])
        sd = np.concatenate([[1 / alpha], np.full(6, 1 / (1 - alpha))])
        want = np.linalg.lstsq(a / sd[:, None], np.concatenate([[v], u]) / sd, rcond=None)[0]
        np.testing.assert_allclose(grids.ag_inference(v, u, alpha), want, rtol=1e-10)


def test_leaf_inference_equals_inverse_variance_mean() -> None:
    got = kdtree.leaf_inference(np.array([10.0]), np.array([14.0]), np.array([4.0]), 0.5, 1.0)
    var_c, var_p = 2 * 4 / 0.25, 2 / 1.0
    want = (14 / var_c + 10 / var_p) / (1 / var_c + 1 / var_p)
    assert got[0] == pytest.approx(want)


def _zero_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    def zero(scale, size, *, rng=None, discrete=False):  # noqa: ANN001, ARG001
        return np.zeros(size)

    for mod in ("grids", "quadtree", "spend"):
        monkeypatch.setattr(f"mechanisms.histograms.{mod}.laplace_noise", zero)
    monkeypatch.setattr("mechanisms.histograms._noise.laplace_noise", zero)


def test_zero_noise_releases_preserve_region_totals(monkeypatch: pytest.MonkeyPatch) -> None:
    _zero_noise(monkeypatch)
    x = _cube(1, (40, 37))
    q = quadtree.quadtree_release(x, 1.0)
    np.testing.assert_allclose(q.estimate, x, atol=1e-9)  # full height, exact → x itself
    for rel in (grids.ug_release(x, 1.0), grids.ag_release(x, 1.0)):
        assert rel.estimate.sum() == pytest.approx(x.sum())
        for (a, b), (c, d) in rel.boxes:  # uniform inside each region, exact totals
            assert rel.estimate[a:b, c:d].sum() == pytest.approx(x[a:b, c:d].sum())
            assert np.ptp(rel.estimate[a:b, c:d]) == pytest.approx(0.0, abs=1e-9)
        covered = np.zeros(x.shape, int)
        for (a, b), (c, d) in rel.boxes:
            covered[a:b, c:d] += 1
        assert (covered == 1).all()


def test_ug_grid_size_follows_guideline() -> None:
    assert grids.ug_size(1e6, 1.0) == math.ceil(math.sqrt(1e5))
    assert grids.ag_first_size(1e4, 0.1) == 10
    assert grids.ag_first_size(1e8, 1.0) == math.ceil(0.25 * math.sqrt(1e7))
    np.testing.assert_array_equal(
        grids.ag_second_sizes(np.array([-5.0, 0.0, 100.0]), 0.5, 5.0), [1, 1, 4]
    )
    assert sum(quadtree.geometric_budget(0.7, 5)) == pytest.approx(0.7)
    e = quadtree.geometric_budget(1.0, 4)
    np.testing.assert_allclose(e[:-1] / e[1:], 2 ** (1 / 3))  # leaves get the most


# ------------------------------------------------------------ data flow


def _fixed_measurements(monkeypatch: pytest.MonkeyPatch, module: str, name: str) -> None:
    """Replace a module's noisy measurement by outputs that ignore the data."""

    def fixed(values, epsilon, *args, **kw):  # noqa: ANN001, ARG001
        v = np.asarray(values, np.float64)
        seed = abs(hash((v.shape, round(float(epsilon), 9)))) % 2**32
        return np.random.default_rng(seed).gamma(0.5, 20.0, v.shape)

    monkeypatch.setattr(f"mechanisms.histograms.{module}.{name}", fixed)


def test_ag_layout_depends_on_data_only_through_noisy_counts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    x1, x2 = _cube(5, (64, 64), 1.0), _cube(6, (64, 64), 40.0)
    unpatched = [
        grids.ag_release(x, 1.0, scale=2e4, rng=np.random.default_rng(0)) for x in (x1, x2)
    ]
    assert unpatched[0].boxes != unpatched[1].boxes  # the layout is data-dependent …
    _fixed_measurements(monkeypatch, "grids", "_noisy")
    r1 = grids.ag_release(x1, 1.0, scale=2e4, rng=np.random.default_rng(0))
    r2 = grids.ag_release(x2, 1.0, scale=2e4, rng=np.random.default_rng(0))
    assert r1.boxes == r2.boxes  # … but only through the noisy level-1 counts


def test_kd_partition_depends_on_data_only_through_d_c(monkeypatch: pytest.MonkeyPatch) -> None:
    x1, x2 = _cube(7, (32, 32), 2.0), _cube(8, (32, 32), 30.0)
    kw = {"xi0": 50.0, "inference": True}
    raw = [kdtree.kd_tree_release(x, 1.0, rng=np.random.default_rng(0), **kw) for x in (x1, x2)]
    assert raw[0].boxes != raw[1].boxes
    _fixed_measurements(monkeypatch, "kdtree", "_noisy_counts")
    r1 = kdtree.kd_tree_release(x1, 1.0, rng=np.random.default_rng(0), **kw)
    r2 = kdtree.kd_tree_release(x2, 1.0, rng=np.random.default_rng(0), **kw)
    assert r1.boxes == r2.boxes
    h1 = kdtree.hierarchical_kd_release(x1, 1.0, height=6, rng=np.random.default_rng(0))
    h2 = kdtree.hierarchical_kd_release(x2, 1.0, height=6, rng=np.random.default_rng(0))
    assert h1.boxes == h2.boxes


def test_ug_layout_depends_on_data_only_through_scale_estimate() -> None:
    x1, x2 = _cube(9, (64, 64), 1.0), _cube(10, (64, 64), 40.0)
    b1 = grids.ug_release(x1, 1.0, scale=5e3, rng=np.random.default_rng(0)).boxes
    assert b1 == grids.ug_release(x2, 1.0, scale=5e3, rng=np.random.default_rng(0)).boxes
    assert b1 != grids.ug_release(x1, 1.0, scale=5e4, rng=np.random.default_rng(0)).boxes


# ------------------------------------------------------------ accounting


RELEASES = {
    "UG": lambda x, e, **kw: grids.ug_release(x, e, **kw),
    "AG": lambda x, e, **kw: grids.ag_release(x, e, **kw),
    "QuadTree": lambda x, e, **kw: quadtree.quadtree_release(x, e, **kw),
    "kd": lambda x, e, **kw: kdtree.kd_tree_release(x, e, inference=True, **kw),
    "kd-h": lambda x, e, **kw: kdtree.hierarchical_kd_release(x, e, height=5, **kw),
    "cells": lambda x, e, **kw: kdtree.cell_based_release(x, e, **kw),
    "DAWA-2D": lambda x, e, **kw: run_2d("DAWA-2D", x, e, boxes=_BOXES, **kw),
    "DAWA-2D-cells": lambda x, e, **kw: run_2d("DAWA-2D", x, e, **kw),
    "DAWA-2D-aligned": lambda x, e, **kw: run_2d("DAWA-2D-aligned", x, e, boxes=_BOXES, **kw),
    "DAWA-2D-boxes": lambda x, e, **kw: run_2d("DAWA-2D-boxes", x, e, boxes=_BOXES, **kw),
    "DAWA-2D-boxes-cells": lambda x, e, **kw: run_2d("DAWA-2D-boxes", x, e, **kw),
    "AHP-2D": lambda x, e, **kw: run_2d("AHP-2D", x, e, **kw),
}


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_accountant_charged_exactly_epsilon(name: str) -> None:
    acct = Accountant(Budget(2.0), name="test")
    RELEASES[name](_cube(11), 0.8, accountant=acct, rng=np.random.default_rng(1))
    assert acct.spent().epsilon == pytest.approx(0.8)
    assert len(acct.records) >= 1


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_refused_before_any_noise(name: str) -> None:
    acct = Accountant(Budget(0.5), name="test")
    rng = np.random.default_rng(2)
    before = rng.bit_generator.state
    with pytest.raises(BudgetExhaustedError):
        RELEASES[name](_cube(11), 0.8, accountant=acct, rng=rng)
    assert rng.bit_generator.state == before  # refused before any part drew noise
    assert acct.spent().epsilon == 0.0


def test_scale_share_is_charged_only_when_scale_unknown() -> None:
    acct = Accountant(Budget(1.0), name="t")
    grids.ug_release(_cube(12), 1.0, accountant=acct, rng=np.random.default_rng(0))
    assert [r.epsilon for r in acct.records] == pytest.approx([SCALE_SHARE, 1 - SCALE_SHARE])
    acct2 = Accountant(Budget(1.0), name="t")
    grids.ag_release(_cube(12), 1.0, scale=1e3, accountant=acct2, rng=np.random.default_rng(0))
    assert [r.epsilon for r in acct2.records] == pytest.approx([0.5, 0.5])


def test_quadtree_coarse_leaves_on_padded_domain_keep_mass(monkeypatch: pytest.MonkeyPatch) -> None:
    _zero_noise(monkeypatch)
    x = _cube(13, (20, 27))  # padded to 32 × 32; leaves of 4 × 4 cells straddle the padding
    est = quadtree.quadtree_release(x, 1.0, height=3).estimate
    assert est.shape == x.shape
    assert est.sum() == pytest.approx(x.sum())
    np.testing.assert_allclose(est[:4, :4].sum(), x[:4, :4].sum())
