"""Hierarchical (multi-state) PeGaSus over a tree: building → floor → location.

Chen, Machanavajjhala, Hay & Miklau, CCS 2017, §5 "Multiple target states with
aggregation" (Algorithm 4); specification and corrections in docs/MECHANISMS.md
("Many locations / hierarchy").

The tree is given as parent index arrays (:class:`Tree`; build it on the caller side,
e.g. ``tree_from_paths(site.hierarchy())`` — this module never imports ``streams``).
Every node's stream is released: locations, floors, buildings.

Budget, per tick, with h levels (depth of the deepest node + 1) and optional pruning
budget ε_pr: ε = ε_pr + ε_rest, every level gets ε_level = ε_rest/h and runs
PeGaSus (:func:`mechanisms.pegasus.step`) at ε_level on each of its nodes
(ε_p = share·ε_level, ε_g = (1 − share)·ε_level, θ = 20/ε_g, PeGaSus' default).

Consistency (optional, ``consistency=True``; issue 16 item 2)
    Every tick's node values are post-processed by :mod:`mechanisms.consistency`: the
    weighted tree least squares of Hay et al. (VLDB 2010, §4) — building = Σ floors =
    Σ rooms — followed by the non-negativity projection. ``level_shares`` (with
    ``grouping=False``, i.e. the hierarchical *Laplace* release) gives the leaves most
    of the budget: rooms then lose almost nothing against flat Laplace while floors and
    buildings, measured directly and combined with the rooms' sums, are far more
    accurate than the sum of noisy rooms (``bench/bench_device_day.py`` measures both).

Sums of filtered rooms (:func:`subtree_sums`; registry ``hpegasus-filter``)
    The release that meets issue 16's hierarchy targets (docs/pegasus.md): all of ε to
    the rooms, each filtered by :mod:`mechanisms.pegasus_filter`, every floor and
    building the sum of its rooms' releases (consistent and non-negative by
    construction). Once the rooms are filtered, a budget split towards the upper levels
    with least squares loses at every level (measured there).

Pruning (optional, ``prune_epsilon``): top-down, each node not below an already
pruned node is tested with c_t(v) + Lap(2h/ε_pr) < β + Lap(2h/ε_pr). The paper
prints Lap(2/ε_pr) per level, which adds up to ε_pr only for h ≤ 2; the noise here is
scaled by h so the h tests a device takes part in (one per level) cost ≤ ε_pr/h
each (strictly ε_pr/(2h): the threshold noise is data independent). A pruned node v
at depth d:

* releases its own PeGaSus value with the subtree's budget handed to it: its
  perturber runs at ε_p,level + (h − d − 1)·ε_level (its grouper keeps ε_g,level, so
  the SVT analysis of its group is unchanged);
* every node below v releases 0, spends nothing, and has its group **closed**: the
  gap breaks the group, and its next unpruned tick starts a new group with a fresh
  threshold (no count of a pruned tick is ever tested).

Privacy argument (event level): a device at a location at tick t is in exactly one
node per level. Unpruned levels above the pruned node cost ε_level each; the pruned
node costs ε_p,level + (h−d−1)ε_level + ε_g,level = (h−d)·ε_level; the levels below
cost 0. Total ε_rest, plus ε_pr for the tests. Grouper decisions of a node involve
only that node's counts, as in single-state PeGaSus, and closing a group because of a
pruning decision is post-processing of that (private) decision.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from mechanisms import consistency, pegasus
from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.laplace import as_counts
from mechanisms.noise import resolve_rng

__all__ = [
    "HierarchicalConfig",
    "HierarchicalState",
    "Tree",
    "initialize",
    "subtree_sums",
    "tree_from_paths",
    "update",
]


@dataclass(frozen=True)
class Tree:
    """A forest given by parent indices (−1 for roots); leaves carry the counts.

    Attributes:
        parent: int64 array (n_nodes,), parent index or −1.
        names: one label per node.
    """

    parent: np.ndarray
    names: tuple[str, ...]
    depth: np.ndarray = field(init=False, repr=False, compare=False)
    leaves: np.ndarray = field(init=False, repr=False, compare=False)
    _by_depth: tuple[np.ndarray, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        par = np.asarray(self.parent, dtype=np.int64)
        n = par.size
        if par.ndim != 1 or n == 0:
            raise InvalidParameterError(f"parent must be a non-empty 1-D array, not {par.shape}")
        if np.any((par < -1) | (par >= n)) or np.any(par == np.arange(n)):
            raise InvalidParameterError("parent must hold node indices in [0, n) or −1")
        if len(self.names) != n:
            raise InvalidParameterError(f"names must have {n} entries, not {len(self.names)}")
        depth = np.full(n, -1, dtype=np.int64)
        depth[par == -1] = 0
        for _ in range(n):
            todo = depth < 0
            if not todo.any():
                break
            ready = todo & (depth[np.maximum(par, 0)] >= 0) & (par >= 0)
            depth[ready] = depth[par[ready]] + 1
        if np.any(depth < 0):
            raise InvalidParameterError("parent must describe a forest (a cycle was found)")
        has_child = np.zeros(n, dtype=bool)
        has_child[par[par >= 0]] = True
        object.__setattr__(self, "parent", par)
        object.__setattr__(self, "depth", depth)
        object.__setattr__(self, "leaves", np.flatnonzero(~has_child))
        object.__setattr__(
            self, "_by_depth", tuple(np.flatnonzero(depth == d) for d in range(depth.max() + 1))
        )

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return int(self.parent.size)

    @property
    def height(self) -> int:
        """Number of levels h (depth of the deepest node + 1)."""
        return len(self._by_depth)

    def aggregate(self, leaf_counts: np.ndarray) -> np.ndarray:
        """Counts of every node from the counts of the leaves (in ``leaves`` order)."""
        c = as_counts(leaf_counts, "leaf_counts")
        if c.size != self.leaves.size:
            raise InvalidParameterError(
                f"leaf_counts must have {self.leaves.size} entries, not {c.size}"
            )
        out = np.zeros(self.n_nodes, dtype=np.int64)
        out[self.leaves] = c
        for d in range(self.height - 1, 0, -1):
            nodes = self._by_depth[d]
            np.add.at(out, self.parent[nodes], out[nodes])
        return out

    def nodes_at_depth(self, d: int) -> np.ndarray:
        """Indices of the nodes at depth ``d`` (0 = roots)."""
        return self._by_depth[d]

    @functools.cached_property
    def plan(self) -> consistency.TreePlan:
        """The tree's :class:`mechanisms.consistency.TreePlan` (for least squares)."""
        return consistency.TreePlan(self.parent)


def subtree_sums(tree: Tree, leaf_values: np.ndarray) -> np.ndarray:
    """Every node's value as the sum of its leaves' values (post-processing, floats).

    The float counterpart of :meth:`Tree.aggregate` for released (not true) values: a
    release whose aggregates are these sums is consistent by construction, and
    non-negative when the leaves are.

    Args:
        tree: the hierarchy.
        leaf_values: values of the leaves in ``tree.leaves`` order, shape (..., n_leaves).

    Returns:
        float array (..., n_nodes).
    """
    v = np.asarray(leaf_values, dtype=float)
    if v.shape[-1:] != (tree.leaves.size,):
        raise InvalidParameterError(
            f"leaf_values must have last dimension {tree.leaves.size}, not shape {v.shape!r}")
    out = np.zeros((*v.shape[:-1], tree.n_nodes))
    out[..., tree.leaves] = v
    by_node = np.moveaxis(out, -1, 0)  # a view: node first
    for d in range(tree.height - 1, 0, -1):
        nodes = tree.nodes_at_depth(d)
        np.add.at(by_node, tree.parent[nodes], by_node[nodes])
    return out


def tree_from_paths(paths: Sequence[Sequence[str]]) -> Tree:
    """Tree from root-to-leaf label paths, e.g. ``Site.hierarchy()`` triples.

    Leaves are nodes ``0..len(paths)-1`` in the given order (the location vector
    order); internal nodes follow in first-seen order, named by their joined path
    (``"dbh/2"``).

    Raises:
        InvalidParameterError: empty input, duplicate leaves, or a leaf that is also an
            internal node.
    """
    if not paths:
        raise InvalidParameterError("paths must be non-empty, not []")
    tuples = [tuple(str(x) for x in p) for p in paths]
    if any(len(p) == 0 for p in tuples):
        raise InvalidParameterError("paths must be non-empty label sequences")
    leaf_keys = ["/".join(p) for p in tuples]
    if len(set(leaf_keys)) != len(leaf_keys):
        raise InvalidParameterError("paths must be distinct, not with duplicate leaves")
    index = {k: i for i, k in enumerate(leaf_keys)}
    names = list(leaf_keys)
    parent: list[int] = [-1] * len(tuples)
    for i, p in enumerate(tuples):
        child = i
        for d in range(len(p) - 1, 0, -1):
            key = "/".join(p[:d])
            if key in index and index[key] < len(tuples):
                raise InvalidParameterError(f"paths must not use leaf {key!r} as an internal node")
            if key not in index:
                index[key] = len(names)
                names.append(key)
                parent.append(-1)
            parent[child] = index[key]
            child = index[key]
    return Tree(parent=np.array(parent, dtype=np.int64), names=tuple(names))


@dataclass(frozen=True)
class HierarchicalConfig:
    """Parameters of hierarchical PeGaSus.

    Attributes:
        epsilon: total ε per event (pruning + all levels).
        perturb_share: ε_p/ε_level within each level.
        theta: base grouper threshold; None → PeGaSus' default (20/ε_g of a level).
        smoother: ``"average"``, ``"median"`` or ``"js"``.
        grouping: False turns the groupers off.
        max_group_len: group length cap (state bound).
        prune_epsilon: ε_pr for pruning, None = no pruning.
        prune_threshold: β, the count below which a subtree is pruned.
        consistency: post-process every tick's release with the tree least squares and
            non-negativity of :mod:`mechanisms.consistency` (free: post-processing),
            weighting each node by its perturber's noise variance 2/ε_p².
        level_shares: fraction of ε_rest per depth (root first, adding up to ≤ 1);
            None = ε_rest/h each. Only with ``grouping=False`` (the grouper's SVT
            budget is per level and not re-split): the hierarchical Laplace release.
    """

    epsilon: float
    perturb_share: float = 0.8
    theta: float | None = None
    smoother: Literal["average", "median", "js"] = "average"
    grouping: bool = True
    max_group_len: int = 48
    prune_epsilon: float | None = None
    prune_threshold: float = 2.0
    consistency: bool = False
    level_shares: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        check_positive("epsilon", self.epsilon)
        if self.level_shares is not None:
            sh = tuple(float(x) for x in self.level_shares)
            if self.grouping:
                raise InvalidParameterError(
                    "level_shares must be None with grouping=True (the grouper's budget is "
                    f"per level), not {self.level_shares!r}"
                )
            if not sh or any(not (x > 0) for x in sh) or sum(sh) > 1 + 1e-9:
                raise InvalidParameterError(
                    f"level_shares must be positive fractions adding up to ≤ 1, not {sh!r}"
                )
            object.__setattr__(self, "level_shares", sh)
        if self.prune_epsilon is not None:
            check_positive("prune_epsilon", self.prune_epsilon)
            if self.prune_epsilon >= self.epsilon:
                raise InvalidParameterError(
                    f"prune_epsilon must be < epsilon={self.epsilon:g}, not {self.prune_epsilon!r}"
                )

    @property
    def rest_epsilon(self) -> float:
        """ε left for the levels after pruning."""
        return self.epsilon - (self.prune_epsilon or 0.0)

    def level_config(self, height: int) -> pegasus.PegasusConfig:
        """The PeGaSus configuration every level runs (ε_level = ε_rest/h)."""
        return pegasus.PegasusConfig(
            epsilon=self.rest_epsilon / height,
            perturb_share=self.perturb_share,
            theta=self.theta,
            smoother=self.smoother,
            grouping=self.grouping,
            max_group_len=self.max_group_len,
        )

    def shares(self, height: int) -> np.ndarray:
        """Fraction of ε_rest per depth (root first)."""
        if self.level_shares is None:
            return np.full(height, 1.0 / height)
        if len(self.level_shares) != height:
            raise InvalidParameterError(
                f"level_shares must have {height} entries (one per level), not "
                f"{len(self.level_shares)}"
            )
        return np.asarray(self.level_shares, dtype=float)

    def spent_epsilon(self, height: int) -> float:
        """ε spent per event for a tree of ``height`` levels."""
        if self.level_shares is not None:
            level = self.level_config(height)
            return (self.prune_epsilon or 0.0) + float(
                self.shares(height).sum() * self.rest_epsilon * level.perturb_share
            )
        return (self.prune_epsilon or 0.0) + height * self.level_config(height).spent_epsilon

    def prune_noise_scale(self, height: int) -> float:
        """Scale 2h/ε_pr of both pruning noises."""
        return 2.0 * height / float(self.prune_epsilon or float("nan"))


@dataclass(frozen=True)
class HierarchicalState:
    """State: one PeGaSus state over all nodes of the tree.

    Attributes:
        nodes: :class:`mechanisms.pegasus.PegasusState` with ``tree.n_nodes`` rows.
    """

    nodes: pegasus.PegasusState

    def to_bytes(self) -> bytes:
        """Serialise (see :meth:`PegasusState.to_bytes`)."""
        return self.nodes.to_bytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> HierarchicalState:
        """Inverse of :meth:`to_bytes`."""
        return cls(nodes=pegasus.PegasusState.from_bytes(data))


def initialize(tree: Tree, config: HierarchicalConfig) -> HierarchicalState:
    """Empty state for every node of ``tree``."""
    return HierarchicalState(
        nodes=pegasus.initialize(tree.n_nodes, config.level_config(tree.height))
    )


def _pruning(
    tree: Tree, node_counts: np.ndarray, config: HierarchicalConfig, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(pruned_root, covered): nodes pruned at this tick, and nodes below a pruned one."""
    n = tree.n_nodes
    pruned_root = np.zeros(n, dtype=bool)
    covered = np.zeros(n, dtype=bool)
    if config.prune_epsilon is None:
        return pruned_root, covered
    b = config.prune_noise_scale(tree.height)
    noisy_count = node_counts + rng.laplace(0.0, b, n)
    noisy_threshold = config.prune_threshold + rng.laplace(0.0, b, n)
    below = noisy_count < noisy_threshold
    for d in range(tree.height):
        nodes = tree.nodes_at_depth(d)
        if d > 0:
            par = tree.parent[nodes]
            covered[nodes] = covered[par] | pruned_root[par]
        pruned_root[nodes] = below[nodes] & ~covered[nodes]
    return pruned_root, covered


def update(
    state: HierarchicalState,
    leaf_counts: np.ndarray | list[int],
    tree: Tree,
    config: HierarchicalConfig,
    *,
    rng: np.random.Generator | None = None,
    tick: int | None = None,
) -> tuple[HierarchicalState, np.ndarray]:
    """Release one tick for every node (spends ``config.spent_epsilon(tree.height)``).

    Noise order (replay-safe with a keyed generator): pruning noise for every node
    (count side, then threshold side) if pruning is on, then the PeGaSus draws of
    :func:`mechanisms.pegasus.step` over all nodes.

    Args:
        state: state before the tick.
        leaf_counts: true counts of the leaves, in ``tree.leaves`` order.
        tree: the hierarchy.
        config: parameters.
        rng: generator; None → the project's CSPRNG-seeded generator.
        tick: optional increasing tick index.

    Returns:
        ``(new_state, released)``: float64 values for every node (0 below a pruned node).
    """
    rng = resolve_rng(rng)
    node_counts = tree.aggregate(np.asarray(leaf_counts))
    h = tree.height
    level = config.level_config(h)
    pruned_root, covered = _pruning(tree, node_counts, config, rng)
    if config.level_shares is None:
        eps_p = np.full(tree.n_nodes, level.epsilon_p)
        eps_p[pruned_root] += (h - tree.depth[pruned_root] - 1) * level.epsilon
    else:  # per-level Laplace budgets; a pruned node takes its whole subtree's
        per_depth = config.shares(h) * config.rest_epsilon * level.perturb_share
        below = np.cumsum(per_depth[::-1])[::-1]  # Σ over depths ≥ d
        eps_p = per_depth[tree.depth].copy()
        eps_p[pruned_root] = below[tree.depth[pruned_root]]
    new_nodes, released = pegasus.step(
        state.nodes, node_counts, level, perturb_scale=1.0 / eps_p, active=~covered,
        rng=rng, tick=tick,
    )
    if config.consistency:
        var = 2.0 / eps_p**2  # Laplace variance of each node's perturber
        var = np.where(covered, 1e12, var)  # below a pruned node: nothing was measured
        released = consistency.consistent_nonnegative(released, var, tree.plan)
    return HierarchicalState(nodes=new_nodes), released
