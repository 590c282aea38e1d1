"""Tree least squares, non-negativity and time post-processing (mechanisms.consistency),
and the consistent hierarchical release (mechanisms.hierarchical, issue 16 item 2)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanisms import consistency as cs
from mechanisms import hierarchical as hi
from mechanisms.errors import InvalidParameterError
from mechanisms.laplace import laplace_release


def _random_tree(rng: np.random.Generator, n_internal: int, n_leaves: int) -> np.ndarray:
    parent = [-1]
    for i in range(1, n_internal):
        parent.append(int(rng.integers(0, i)))
    internal = list(range(n_internal))
    childless = [i for i in internal if i not in parent[1:]]
    for i in childless:  # every internal node gets a leaf
        parent.append(i)
    for _ in range(n_leaves - len(childless)):
        parent.append(int(rng.choice(internal)))
    return np.array(parent)


def _gls(y: np.ndarray, var: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Brute force: x = A·leaves, minimise Σ (x − y)²/var by the normal equations."""
    n = parent.size
    has_child = np.zeros(n, bool)
    has_child[parent[parent >= 0]] = True
    leaves = np.flatnonzero(~has_child)
    a = np.zeros((n, leaves.size))
    for j, leaf in enumerate(leaves):
        v = leaf
        while v >= 0:
            a[v, j] = 1
            v = parent[v]
    w = np.where(np.isinf(var), 0.0, 1.0 / np.where(np.isinf(var), 1.0, var))
    lhs = a.T @ (w[:, None] * a)
    return (np.linalg.solve(lhs, a.T @ (w[:, None] * y.T)).T) @ a.T


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n_internal=st.integers(1, 6), extra=st.integers(0, 12))
def test_least_squares_equals_brute_force_gls(seed, n_internal, extra) -> None:
    rng = np.random.default_rng(seed)
    parent = _random_tree(rng, n_internal, n_internal + extra)
    plan = cs.TreePlan(parent)
    var = rng.uniform(0.2, 5.0, parent.size)
    internal = np.unique(parent[parent >= 0])
    if internal.size > 1:
        var[rng.choice(internal)] = np.inf  # an unreleased internal node
    y = rng.normal(0, 4, (3, parent.size))
    x = cs.least_squares(y, var, plan)
    np.testing.assert_allclose(x, _gls(y, var, parent), atol=1e-8)
    nn = cs.nonnegative(x, np.where(np.isinf(var), 1.0, var), plan)
    assert nn.min() >= 0
    for v in internal:  # still consistent
        np.testing.assert_allclose(nn[:, v], nn[:, parent == v].sum(axis=1), atol=1e-8)
    np.testing.assert_allclose(nn[:, plan.roots], np.maximum(x[:, plan.roots], 0), atol=1e-8)


def test_nonnegative_keeps_already_nonnegative_values() -> None:
    plan = cs.TreePlan(np.array([-1, 0, 0]))
    x = np.array([5.0, 2.0, 3.0])
    np.testing.assert_array_equal(cs.nonnegative(x, np.ones(3), plan), x)
    np.testing.assert_allclose(cs.nonnegative(np.array([1.0, -1.0, 2.0]), np.ones(3), plan),
                               [1.0, 0.0, 1.0])


def test_time_helpers() -> None:
    v = np.arange(10.0).reshape(5, 2)
    np.testing.assert_allclose(cs.aggregate_time(v, 2), [[1, 2], [5, 6]])
    np.testing.assert_allclose(cs.aggregate_time(v, 2, mean=False), [[2, 4], [10, 12]])
    np.testing.assert_allclose(cs.trailing_mean(v[:, 0], 2), [0, 1, 3, 5, 7])
    with pytest.raises(InvalidParameterError):
        cs.aggregate_time(v, 0)
    with pytest.raises(InvalidParameterError, match="leaves"):
        cs.least_squares(np.zeros(3), np.array([1.0, np.inf, 1.0]), cs.TreePlan([-1, 0, 0]))


# Hierarchical release made consistent (issue 16 item 2), on two simulated dbh days
# (seed 11: 576 ticks × 53 rooms, 6 floors, 1 building) at ε = 1 per tick (event level),
# level shares building/floor/room = 0.2/0.2/0.6, against flat Laplace at ε on the rooms
# with floors and building as sums of noisy rooms. MAE per level over every (tick, node)
# value; measured 0.70× (rooms), 0.80× (floors), 0.61× (building) of flat. The margins
# asserted (0.85, 0.9, 0.75) are > 5 standard errors of the ratio away from the measured
# means (the SE of a 576-tick MAE ratio is < 2 % for floors and building, < 1 % for
# rooms), so the false-alarm rate is < 1e-6. Without the consistency step the same
# shares fail (rooms 1.6× worse: measured in bench/bench_device_day.py): the test can
# fail. Note: on *dense* synthetic rooms (no empty rooms) the rooms lose to flat Laplace
# at these shares (0.6 ε on rooms); the win comes from non-negativity on the many empty
# rooms of a real building, which the consistent release exploits and raw Laplace does not.
EPS = 1.0
SHARES = (0.2, 0.2, 0.6)


def _dbh() -> tuple[hi.Tree, np.ndarray]:
    from simulator import simulate  # noqa: PLC0415  (test data only)

    sim = simulate("dbh", days=2, seed=11)
    return hi.tree_from_paths(sim.site.hierarchy()), sim.occupancy().counts


def _maes(tree: hi.Tree, counts: np.ndarray, cfg: hi.HierarchicalConfig) -> np.ndarray:
    st_ = hi.initialize(tree, cfg)
    truth = np.array([tree.aggregate(c) for c in counts])
    out = []
    for t, c in enumerate(counts):
        st_, r = hi.update(st_, c, tree, cfg, rng=np.random.default_rng([5, t]))
        out.append(r)
    err = np.abs(np.array(out) - truth)
    return np.array([err[:, tree.depth == d].mean() for d in range(tree.height)])


def _flat(tree: hi.Tree, counts: np.ndarray) -> np.ndarray:
    truth = np.array([tree.aggregate(c) for c in counts])
    noisy = np.array([
        tree.aggregate(laplace_release(c, EPS, rng=np.random.default_rng([6, t])) + 10**6)
        - tree.aggregate(np.full(c.size, 10**6))
        for t, c in enumerate(counts)
    ])  # (shifted so aggregate accepts negative noisy counts)
    err = np.abs(noisy - truth)
    return np.array([err[:, tree.depth == d].mean() for d in range(tree.height)])


@pytest.mark.slow
def test_consistent_hierarchical_laplace_beats_flat_rooms_and_noisy_sums() -> None:
    tree, counts = _dbh()
    flat = _flat(tree, counts)
    cfg = hi.HierarchicalConfig(EPS, grouping=False, perturb_share=1.0, consistency=True,
                                level_shares=SHARES)
    assert cfg.spent_epsilon(tree.height) == pytest.approx(EPS)
    got = _maes(tree, counts, cfg)
    assert got[2] <= 0.85 * flat[2]
    assert got[1] <= 0.9 * flat[1]
    assert got[0] <= 0.75 * flat[0]
