"""Weighted hierarchical strategies over a 1-D domain, their measurement and exact GLS.

A strategy is a tree of intervals ``[lo, hi)``: the root is the whole domain, a node's
children split it into contiguous parts, and every node carries a measurement weight
``w ≥ 0`` (0: not measured). Measuring it (:func:`measure`) releases (the equivalent of)
``w_v·x(v) + Lap(Δ/ε)`` for every node with ``w_v > 0``, where ``x(v)`` is the node's sum
and ``Δ = max_i Σ_{v ∋ i} w_v`` is the L1 sensitivity of the weighted query set (one
record changes one cell by one): that is the Laplace mechanism on the vector of
weighted queries, ε-DP (Dwork et al. 2006). :func:`least_squares` is post-processing:
the exact generalised least-squares estimate of every cell from the noisy node sums
(independent noise, node variances ``2Δ²/(w_v ε)²``), by the two-pass tree algorithm of
Hay, Rastogi, Miklau & Suciu (VLDB 2010, §4) with per-node variances: bottom-up,
each node combines its own measurement with the sum of its children's estimates by
inverse variance; top-down, the parent's final estimate is distributed to the children
in proportion to their variances. A *terminal* node (no children) of size > 1 is
estimated as uniform over its cells.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.histograms._noise import laplace_noise

__all__ = [
    "Tree", "split_sizes", "build_tree", "uniform_tree", "sensitivity", "measure", "least_squares",
    "prune",
]


@dataclass
class Tree:
    """A tree of intervals in preorder: node ``v`` is ``[lo[v], hi[v])``."""

    lo: list[int] = field(default_factory=list)
    hi: list[int] = field(default_factory=list)
    children: list[list[int]] = field(default_factory=list)
    depth: list[int] = field(default_factory=list)
    weight: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def size(self) -> int:
        """Number of nodes."""
        return len(self.lo)

    @property
    def n(self) -> int:
        """Domain size (the root's length)."""
        return self.hi[0] - self.lo[0]


def split_sizes(n: int, branch: int) -> list[int]:
    """Sizes of the ``branch`` children of a node of size n (n ≤ branch: singletons).

    ``n = m·b + r``: ``b − r`` children of size m then r of size m + 1.
    """
    if n <= branch:
        return [1] * n
    m, r = divmod(n, branch)
    return [m] * (branch - r) + [m + 1] * r


def build_tree(n: int, branch: int) -> Tree:
    """The complete tree with fan-out ``branch`` down to single cells (weights 0)."""
    if n < 1:
        raise InvalidParameterError(f"n must be >= 1, not {n!r}")
    if branch < 2:
        raise InvalidParameterError(f"branch must be >= 2, not {branch!r}")
    t = Tree()

    def add(lo: int, hi: int, d: int) -> int:
        v = len(t.lo)
        t.lo.append(lo)
        t.hi.append(hi)
        t.children.append([])
        t.depth.append(d)
        if hi - lo > 1:
            start = lo
            for s in split_sizes(hi - lo, branch):
                t.children[v].append(add(start, start + s, d + 1))
                start += s
        return v

    add(0, n, 0)
    t.weight = np.zeros(t.size)
    return t


def uniform_tree(n: int, branch: int = 2) -> Tree:
    """H_b over n cells (Hay et al. VLDB 2010): every node, the root too, with weight 1.

    The workload-blind strategy DAWA-2D falls back to when its buckets are too many for
    a dense workload Gram (:data:`~mechanisms.histograms.dawa2d.GRAM_MAX`).
    """
    tree = build_tree(n, branch)
    tree.weight = np.ones(tree.size)
    return tree


def sensitivity(tree: Tree) -> float:
    """``Δ = max_i Σ_{v ∋ i} w_v`` of the weighted node queries."""
    diff = np.zeros(tree.n + 1)
    w = np.asarray(tree.weight, np.float64)
    lo = np.asarray(tree.lo)
    hi = np.asarray(tree.hi)
    np.add.at(diff, lo, w)
    np.add.at(diff, hi, -w)
    return float(np.max(np.cumsum(diff)[:-1]))


def _sums(x: np.ndarray, tree: Tree) -> np.ndarray:
    c = np.concatenate(([0.0], np.cumsum(x)))
    return c[np.asarray(tree.hi)] - c[np.asarray(tree.lo)]


def measure(
    x: np.ndarray,
    tree: Tree,
    epsilon: float,
    *,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
) -> np.ndarray:
    """NOISE DRAWING: noisy node sums ``x(v) + Lap(Δ/(w_v·ε))`` (NaN where ``w_v = 0``).

    Equivalent to releasing ``w_v·x(v) + Lap(Δ/ε)`` and dividing by ``w_v``. The caller
    has charged ε. Privacy: one record changes ``x(v)`` by one on the nodes containing its
    cell, so the releases cost ``Σ_{v∋i} w_v·ε/Δ ≤ ε`` (sequential composition along a
    path, parallel across disjoint nodes). ``discrete=True``: exact discrete Laplace on
    integer counts.
    """
    epsilon = check_positive("epsilon", epsilon)
    x = np.asarray(x, np.float64).ravel()
    if len(x) != tree.n:
        raise InvalidParameterError(f"x must have {tree.n} values, not {len(x)}")
    w = np.asarray(tree.weight, np.float64)
    on = w > 0
    delta = sensitivity(tree)
    y = np.full(tree.size, np.nan)
    scale = delta / (w[on] * epsilon)
    y[on] = _sums(x, tree)[on] + laplace_noise(scale, int(on.sum()), rng=rng, discrete=discrete)
    return y


def least_squares(tree: Tree, y: np.ndarray, epsilon: float) -> np.ndarray:
    """Exact GLS cell estimates from :func:`measure`'s output (post-processing, no rng)."""
    w = np.asarray(tree.weight, np.float64)
    delta = sensitivity(tree)
    wpos = np.where(w > 0, w, 1.0)
    var_meas = np.where(w > 0, 2.0 * (delta / (wpos * epsilon)) ** 2, np.inf)
    s_meas = np.where(w > 0, np.nan_to_num(np.asarray(y, np.float64)), 0.0)
    z = np.zeros(tree.size)
    var = np.zeros(tree.size)
    for v in range(tree.size - 1, -1, -1):  # children come after parents in preorder
        ch = tree.children[v]
        if not ch:
            if not np.isfinite(var_meas[v]):
                raise InvalidParameterError(f"terminal node {v} is not measured")
            z[v], var[v] = s_meas[v], var_meas[v]
            continue
        zc = float(z[ch].sum())
        vc = float(var[ch].sum())
        if np.isfinite(var_meas[v]):
            inv = 1.0 / vc + 1.0 / var_meas[v]
            z[v] = (zc / vc + s_meas[v] / var_meas[v]) / inv
            var[v] = 1.0 / inv
        else:
            z[v], var[v] = zc, vc
    est = z.copy()
    out = np.zeros(tree.n)
    for v in range(tree.size):
        ch = tree.children[v]
        if not ch:
            lo, hi = tree.lo[v], tree.hi[v]
            out[lo:hi] = est[v] / (hi - lo)
            continue
        diff = est[v] - float(z[ch].sum())
        vc = var[ch]
        est[ch] = z[ch] + vc / vc.sum() * diff
    return out


def prune(tree: Tree, terminal: np.ndarray) -> Tree:
    """A copy of ``tree`` without the descendants of the nodes flagged ``terminal``."""
    t = Tree()
    old_to_new: dict[int, int] = {}

    def walk(v: int) -> None:
        nv = len(t.lo)
        old_to_new[v] = nv
        t.lo.append(tree.lo[v])
        t.hi.append(tree.hi[v])
        t.depth.append(tree.depth[v])
        t.children.append([])
        if not terminal[v]:
            for c in tree.children[v]:
                t.children[nv].append(len(t.lo))
                walk(c)

    walk(0)
    keep = np.fromiter(old_to_new.keys(), np.int64)
    t.weight = np.asarray(tree.weight, np.float64)[keep]
    return t
