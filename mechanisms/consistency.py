"""Free post-processing of hierarchical releases: tree least squares, non-negativity, time.

Every function here reads only released (noisy) values and public parameters (noise
variances, the tree), takes no ``rng`` and spends no budget (post-processing, Dwork &
Roth 2014 Prop. 2.1).

Tree least squares (Hay, Rastogi, Miklau & Suciu, VLDB 2010, §4, Thm 3 — generalised)
    Given noisy values y_v for the nodes of a forest (every node a sum of its children,
    e.g. building = Σ floors, floor = Σ rooms) with independent noise of variance σ_v²,
    :func:`least_squares` returns the consistent x (x_v = Σ_children x_c) minimising
    Σ_v (x_v − y_v)²/σ_v² — the best linear unbiased estimate. Hay et al. solve the
    uniform k-ary tree with equal variances in two passes; the same two passes solve
    irregular trees with per-node variances (the Gaussian tree smoother):

    * bottom-up, each node's estimate from its subtree,
      z_v = (y_v/σ_v² + s_v/S_v)/(1/σ_v² + 1/S_v) with s_v = Σ_c z_c, S_v = Σ_c V_c,
      and its variance V_v = 1/(1/σ_v² + 1/S_v) (leaves: z = y, V = σ²);
    * top-down, roots keep x = z and each child takes its variance's share of the
      parent's residual: x_c = z_c + (V_c/S_v)(x_v − s_v).

    An internal node that is not released has σ_v² = ∞ (its estimate is its
    children's sum); leaves must be released.

Non-negativity (:func:`nonnegative`)
    Top-down on consistent values: roots are clipped at 0, and each parent's (already
    projected) total P ≥ 0 is shared among its children by the V-weighted projection
    onto {x ≥ 0, Σ x = P}: x_c = max(z_c − λV_c, 0) with λ found by bisection. The
    output is consistent and non-negative (and equals the input where that already was).

Time (:func:`aggregate_time`, :func:`trailing_mean`)
    Sums of consecutive releases (e.g. twelve 5-minute ticks → an hour) and a causal
    moving average for a live view: post-processing of released values only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mechanisms.errors import InvalidParameterError

__all__ = [
    "TreePlan",
    "aggregate_time",
    "consistent_nonnegative",
    "least_squares",
    "nonnegative",
    "trailing_mean",
]

_BISECT = 60  # λ bisection steps: the interval shrinks by 2⁻⁶⁰


@dataclass(frozen=True)
class TreePlan:
    """Precomputed level structure of a forest given by parent indices (−1: root).

    Attributes:
        parent: int64 (n,), parent index or −1.
    """

    parent: np.ndarray
    depth: np.ndarray = field(init=False, repr=False, compare=False)
    #: per depth d ≥ 1: (children sorted by parent, their parents, reduceat offsets,
    #: the distinct parents in offset order)
    levels: tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], ...] = field(
        init=False, repr=False, compare=False
    )
    roots: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        par = np.asarray(self.parent, dtype=np.int64)
        n = par.size
        if par.ndim != 1 or n == 0:
            raise InvalidParameterError(f"parent must be a non-empty 1-D array, not {par.shape}")
        if np.any((par < -1) | (par >= n)) or np.any(par == np.arange(n)):
            raise InvalidParameterError("parent must hold node indices in [0, n) or −1")
        depth = np.full(n, -1, dtype=np.int64)
        depth[par == -1] = 0
        for _ in range(n):
            todo = depth < 0
            if not todo.any():
                break
            ready = todo & (par >= 0) & (depth[np.maximum(par, 0)] >= 0)
            depth[ready] = depth[par[ready]] + 1
        if np.any(depth < 0):
            raise InvalidParameterError("parent must describe a forest (a cycle was found)")
        levels = []
        for d in range(1, int(depth.max()) + 1):
            ch = np.flatnonzero(depth == d)
            ch = ch[np.argsort(par[ch], kind="stable")]
            pp = par[ch]
            starts = np.flatnonzero(np.concatenate([[True], pp[1:] != pp[:-1]]))
            levels.append((ch, pp, starts, pp[starts]))
        object.__setattr__(self, "parent", par)
        object.__setattr__(self, "depth", depth)
        object.__setattr__(self, "levels", tuple(levels))
        object.__setattr__(self, "roots", np.flatnonzero(par == -1))

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""
        return int(self.parent.size)

    def group_index(self, d: int) -> np.ndarray:
        """For the children at depth d (sorted), the index of their parent's group."""
        _, _, starts, _ = self.levels[d - 1]
        n_ch = self.levels[d - 1][0].size
        g = np.zeros(n_ch, dtype=np.int64)
        g[starts[1:]] = 1
        return np.cumsum(g)


def _check(values: np.ndarray, variances: np.ndarray, plan: TreePlan) -> tuple[np.ndarray, ...]:
    y = np.asarray(values, dtype=float)
    if y.shape[-1:] != (plan.n_nodes,):
        raise InvalidParameterError(
            f"values must have last dimension {plan.n_nodes}, not shape {y.shape!r}"
        )
    v = np.broadcast_to(np.asarray(variances, dtype=float), y.shape)
    if np.any(np.isnan(v)) or np.any(v <= 0):
        raise InvalidParameterError("variances must be > 0 (∞ for an unreleased node)")
    leaf = np.ones(plan.n_nodes, dtype=bool)
    leaf[plan.parent[plan.parent >= 0]] = False
    if np.any(np.isinf(v[..., leaf])):
        raise InvalidParameterError("variances must be finite at the leaves, not ∞")
    return y, v


def _bottom_up(
    y: np.ndarray, var: np.ndarray, plan: TreePlan
) -> tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """Subtree estimates z, their variances (finite), and per depth the parents' (s, vs)."""
    z = y.copy()
    vz = var.copy()
    own_prec = np.where(np.isinf(var), 0.0, 1.0 / var)
    sums: list[tuple[np.ndarray, np.ndarray]] = []
    for d in range(len(plan.levels), 0, -1):
        ch, _, starts, parents = plan.levels[d - 1]
        s = np.add.reduceat(z[..., ch], starts, axis=-1)
        vs = np.add.reduceat(vz[..., ch], starts, axis=-1)
        own = own_prec[..., parents]
        prec = own + 1.0 / vs
        z[..., parents] = (y[..., parents] * own + s / vs) / prec
        vz[..., parents] = 1.0 / prec
        sums.append((s, vs))
    return z, vz, sums[::-1]


def least_squares(values: np.ndarray, variances: np.ndarray, plan: TreePlan) -> np.ndarray:
    """Consistent weighted least squares over the tree (see the module).

    Args:
        values: noisy node values, shape (..., n_nodes) (e.g. (ticks, nodes)).
        variances: noise variance per node, broadcastable to ``values`` (∞: unreleased).
        plan: the tree.

    Returns:
        float array of the shape of ``values``: every node equals the sum of its children.
    """
    y, var = _check(values, variances, plan)
    z, vz, sums = _bottom_up(y, var, plan)
    x = z.copy()
    for d in range(1, len(plan.levels) + 1):
        ch, _, _, parents = plan.levels[d - 1]
        s, vs = sums[d - 1]
        g = plan.group_index(d)
        x[..., ch] = z[..., ch] + vz[..., ch] / vs[..., g] * (x[..., parents] - s)[..., g]
    return x


def nonnegative(values: np.ndarray, weights: np.ndarray, plan: TreePlan) -> np.ndarray:
    """Non-negative consistent values from consistent ones (top-down projection).

    Args:
        values: consistent node values (..., n_nodes), e.g. from :func:`least_squares`.
        weights: per-node weights of the projection (e.g. posterior variances), > 0.
        plan: the tree.
    """
    x = np.asarray(values, dtype=float).copy()
    w = np.broadcast_to(np.asarray(weights, dtype=float), x.shape)
    w = np.where(np.isfinite(w) & (w > 0), w, 1.0)
    x[..., plan.roots] = np.maximum(x[..., plan.roots], 0.0)
    for d in range(1, len(plan.levels) + 1):
        ch, _, starts, parents = plan.levels[d - 1]
        g = plan.group_index(d)
        total = x[..., parents]  # ≥ 0 already (its own level was projected first)
        xc = x[..., ch]
        wc = w[..., ch]
        # f(λ) = Σ max(x_c − λw_c, 0) decreases from ≥ total at lo to 0 at hi
        hi = np.maximum.reduceat(np.maximum(xc, 0.0) / wc, starts, axis=-1)
        lo = np.minimum.reduceat((xc - total[..., g]) / wc, starts, axis=-1)
        for _ in range(_BISECT):
            mid = (lo + hi) / 2
            f = np.add.reduceat(np.maximum(xc - mid[..., g] * wc, 0.0), starts, axis=-1)
            above = f > total
            lo = np.where(above, mid, lo)
            hi = np.where(above, hi, mid)
        lam = (lo + hi) / 2
        new = np.maximum(xc - lam[..., g] * wc, 0.0)
        # restore the exact sum (bisection leaves a 2⁻⁶⁰-relative gap) by scaling
        ssum = np.add.reduceat(new, starts, axis=-1)
        scale = np.where(ssum > 0, total / np.where(ssum > 0, ssum, 1.0), 0.0)
        x[..., ch] = new * scale[..., g]
    return x


def consistent_nonnegative(
    values: np.ndarray, variances: np.ndarray, plan: TreePlan
) -> np.ndarray:
    """:func:`least_squares`, then :func:`nonnegative` weighted by the noise variances."""
    x = least_squares(values, variances, plan)
    var = np.broadcast_to(np.asarray(variances, dtype=float), x.shape)
    return nonnegative(x, np.where(np.isinf(var), 1.0, var), plan)


def aggregate_time(values: np.ndarray, factor: int, *, mean: bool = True) -> np.ndarray:
    """Sum (or mean) of ``factor`` consecutive rows; a trailing partial block is dropped."""
    k = int(factor)
    if k < 1:
        raise InvalidParameterError(f"factor must be ≥ 1, not {factor!r}")
    v = np.asarray(values, dtype=float)
    n = (v.shape[0] // k) * k
    out = v[:n].reshape(n // k, k, *v.shape[1:]).sum(axis=1)
    return out / k if mean else out


def trailing_mean(values: np.ndarray, window: int) -> np.ndarray:
    """Causal moving average over the last ``window`` rows (fewer at the start)."""
    w = int(window)
    if w < 1:
        raise InvalidParameterError(f"window must be ≥ 1, not {window!r}")
    v = np.asarray(values, dtype=float)
    c = np.cumsum(v, axis=0)
    out = c.copy()
    out[w:] = c[w:] - c[:-w]
    n = np.minimum(np.arange(1, v.shape[0] + 1), w).reshape(-1, *([1] * (v.ndim - 1)))
    return out / n
