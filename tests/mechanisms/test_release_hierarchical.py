"""Hierarchical PeGaSus (mechanisms.hierarchical)."""

from __future__ import annotations

import numpy as np
import pytest

from mechanisms import hierarchical as hi
from mechanisms import pegasus as pg
from mechanisms.errors import InvalidParameterError


class RecordingRng(np.random.Generator):
    def __init__(self, seed: int) -> None:
        super().__init__(np.random.PCG64(seed))
        self.scales: list[float] = []

    def laplace(self, loc=0.0, scale=1.0, size=None):  # type: ignore[override]
        self.scales.append(float(scale))
        return super().laplace(loc, scale, size)


def _tree(n_floors: int = 3, per_floor: int = 4) -> hi.Tree:
    return hi.tree_from_paths(
        [("dbh", f"f{f}", f"r{f}-{i}") for f in range(n_floors) for i in range(per_floor)]
    )


def test_tree_from_paths_puts_leaves_first_and_aggregates() -> None:
    tree = _tree()
    assert tree.height == 3 and tree.n_nodes == 12 + 3 + 1
    np.testing.assert_array_equal(tree.leaves, np.arange(12))
    assert tree.names[:2] == ("dbh/f0/r0-0", "dbh/f0/r0-1") and "dbh" in tree.names
    counts = np.arange(12)
    agg = tree.aggregate(counts)
    root = tree.names.index("dbh")
    assert agg[root] == counts.sum()
    assert agg[tree.names.index("dbh/f1")] == counts[4:8].sum()
    np.testing.assert_array_equal(agg[:12], counts)


def test_bad_trees_raise() -> None:
    with pytest.raises(InvalidParameterError):
        hi.Tree(parent=np.array([1, 0]), names=("a", "b"))  # cycle
    with pytest.raises(InvalidParameterError):
        hi.tree_from_paths([("a", "b"), ("a", "b")])
    with pytest.raises(InvalidParameterError):
        hi.tree_from_paths([("a", "b"), ("a", "b", "c")])  # leaf used as internal node
    with pytest.raises(InvalidParameterError):
        _tree().aggregate(np.arange(5))


def test_without_pruning_it_is_pegasus_at_epsilon_over_h_on_every_node() -> None:
    tree = _tree()
    cfg = hi.HierarchicalConfig(1.5, smoother="median")
    st = hi.initialize(tree, cfg)
    level = cfg.level_config(tree.height)
    assert level.epsilon == pytest.approx(0.5)
    ref = pg.initialize(tree.n_nodes, level)
    rng = np.random.default_rng(0)
    for t in range(20):
        c = rng.integers(0, 6, 12)
        st, rel = hi.update(st, c, tree, cfg, rng=np.random.default_rng(t), tick=t)
        ref, rref = pg.update(ref, tree.aggregate(c), level, rng=np.random.default_rng(t), tick=t)
        np.testing.assert_array_equal(rel, rref)
    assert cfg.spent_epsilon(tree.height) == pytest.approx(1.5)


def test_pruning_noise_is_scaled_by_height_and_pruned_subtrees_release_zero() -> None:
    tree = _tree()
    cfg = hi.HierarchicalConfig(1.2, prune_epsilon=0.3, prune_threshold=3.0)
    rec = RecordingRng(1)
    st = hi.initialize(tree, cfg)
    counts = np.array([0] * 4 + [30] * 8)  # floor f0 empty
    zero_floor = tree.names.index("dbh/f0")
    n_pruned_f0 = 0
    for t in range(40):
        st, rel = hi.update(st, counts, tree, cfg, rng=rec, tick=t)
        if rel[zero_floor] != 0 and np.all(rel[:4] == 0):
            n_pruned_f0 += 1
            # the pruned floor's rooms: released 0, groups closed, nothing kept
            assert not st.nodes.group_open[:4].any() and np.all(st.nodes.group_len[:4] == 0)
    # both pruning noises per tick use 2h/ε_pr
    assert rec.scales[:2] == [2 * 3 / 0.3, 2 * 3 / 0.3]
    assert cfg.prune_noise_scale(3) == pytest.approx(20.0)
    assert n_pruned_f0 > 0
    assert cfg.spent_epsilon(tree.height) == pytest.approx(1.2)


def test_pruned_node_gets_the_subtree_budget() -> None:
    # Pruned roots (depth 0, h = 3) perturb with ε_p,level + 2·ε_level. 2000 separate
    # buildings (a forest), all forced to be pruned (β huge): the roots' noise must be
    # that of ε ≈ 3 (MAE ≈ 0.10), not of ε_level ≈ 1 (MAE ≈ 0.85).
    n_b = 2000
    tree = hi.tree_from_paths(
        [(f"b{k}", f"b{k}f{i}", f"b{k}r{i}") for k in range(n_b) for i in range(2)]
    )
    cfg = hi.HierarchicalConfig(3.0, prune_epsilon=3e-3, prune_threshold=1e9,
                                grouping=False, perturb_share=1.0)
    roots = np.flatnonzero(tree.depth == 0)
    st = hi.initialize(tree, cfg)
    st, rel = hi.update(st, np.tile([3, 4], n_b), tree, cfg, rng=np.random.default_rng(5))
    assert np.all(rel[tree.leaves] == 0)
    assert np.all(rel[tree.depth == 1] == 0)
    assert np.mean(np.abs(rel[roots] - 7)) < 0.2


def test_bad_config_raises() -> None:
    with pytest.raises(InvalidParameterError):
        hi.HierarchicalConfig(1.0, prune_epsilon=1.0)
    with pytest.raises(InvalidParameterError):
        hi.HierarchicalConfig(0.0)


def test_state_round_trip() -> None:
    tree = _tree()
    cfg = hi.HierarchicalConfig(1.0)
    st = hi.initialize(tree, cfg)
    st, _ = hi.update(st, np.arange(12), tree, cfg, rng=np.random.default_rng(0))
    assert hi.HierarchicalState.from_bytes(st.to_bytes()).nodes == st.nodes
