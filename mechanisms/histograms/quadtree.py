"""Private quadtree (Cormode, Procopiuc, Srivastava, Shen & Yu, ICDE 2012).

Source: "Differentially private spatial decompositions".

The domain (padded to a 2^H × 2^H square; the padding is public and known to be empty)
is split recursively into four quadrants, data-independently, down to ``height`` levels
below the root (default H: single cells). Every node's count is measured with the
Laplace mechanism.

* Budget — geometric allocation (§III-B, Lemma 2 / Cor. 1): level i counted from the
  leaves (i = 0) to the root (i = h) gets ``ε_i = 2^{(h−i)/3}·ε·(2^{1/3}−1)/(2^{(h+1)/3}−1)``,
  which minimises the worst-case variance of a range query (it touches ≤ 8·2^{h−i}
  nodes at level i, so minimise Σ 2^{h−i}/ε_i² subject to Σ ε_i = ε).
* Privacy — the nodes of one level are disjoint (parallel composition), the h+1
  levels compose sequentially: Σ_i ε_i = ε (§III-A).
* Post-processing — ordinary least squares consistent with the tree (§IV-A, after Hay et
  al. VLDB 2010, with per-level variances): a bottom-up pass combines each node's own
  measurement with the sum of its children's estimates, inverse-variance weighted; a
  top-down pass spreads each node's remaining difference over its children in proportion
  to their variances. On a tree with independent noise this is exactly the weighted least
  squares (BLUE) estimate of the leaves; leaves coarser than a cell are uniform inside.

Budget ``ε`` is spent in full; the quadtree needs no scale.
"""

from __future__ import annotations

import math

import numpy as np

from mechanisms.accounting import Accountant
from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.histograms._noise import laplace_noise
from mechanisms.histograms.spend import SpatialRelease, charge, ledger

__all__ = ["geometric_budget", "pyramid", "tree_least_squares", "quadtree_release"]


def geometric_budget(epsilon: float, height: int) -> np.ndarray:
    """ε_i for levels i = 0 (leaves) … h (root), Cormode et al. Cor. 1; Σ ε_i = ε."""
    epsilon = check_positive("epsilon", epsilon)
    if int(height) < 0:
        raise InvalidParameterError(f"height must be >= 0, not {height!r}")
    h = int(height)
    w = 2.0 ** ((h - np.arange(h + 1)) / 3.0)
    return epsilon * w / w.sum()


def _blocks(a: np.ndarray, f: int) -> np.ndarray:
    """Sums over f × f blocks of a square array (side divisible by f)."""
    n = a.shape[0] // f
    return a.reshape(n, f, n, f).sum(axis=(1, 3))


def pyramid(x: np.ndarray, height: int, branching: int = 2) -> list[np.ndarray]:
    """Node counts per level i = 0 (leaves, blocks of side/b^h cells) … h (root).

    ``branching`` b: every node has b × b children (the quadtree: b = 2; HB-2D: any b).
    """
    side = x.shape[0]
    leaf = side // int(branching) ** int(height)
    levels = [_blocks(x, leaf)]
    for _ in range(int(height)):
        levels.append(_blocks(levels[-1], int(branching)))
    return levels


def tree_least_squares(
    y: list[np.ndarray], var: list[np.ndarray], branching: int = 2
) -> np.ndarray:
    """Leaf estimates consistent with a (b×b)-ary tree of noisy node counts (post-processing).

    Args:
        y: measurements per level, leaves first; level i has shape (s/b^i, s/b^i).
        var: their noise variances (same shapes; 0 = known exactly). The top level
            given is the top of the tree (an unmeasured root is simply left out).
        branching: b (the quadtree: 2).

    Returns:
        The weighted least squares leaf counts (their sums equal every parent's estimate).
    """
    b = int(branching)
    z, v = [y[0]], [var[0]]
    for i in range(1, len(y)):  # bottom-up: own measurement ⊕ children's sum
        s, vs = _blocks(z[-1], b), _blocks(v[-1], b)
        with np.errstate(divide="ignore", invalid="ignore"):
            w_own = np.where(var[i] == 0, 1.0, np.where(vs == 0, 0.0, vs / (vs + var[i])))
            vz = np.where((var[i] == 0) | (vs == 0), 0.0, var[i] * vs / (var[i] + vs))
        z.append(w_own * y[i] + (1.0 - w_own) * s)
        v.append(vz)
    top = z[-1]
    for i in range(len(y) - 2, -1, -1):  # top-down: spread the difference by variance
        zi, vi = z[i], v[i]
        up = np.repeat(np.repeat(top - _blocks(zi, b), b, 0), b, 1)
        vs = np.repeat(np.repeat(_blocks(vi, b), b, 0), b, 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(vs > 0, vi / vs, 1.0 / (b * b))
        top = zi + share * up
    return top


def quadtree_release(
    x: np.ndarray,
    epsilon: float,
    *,
    height: int | None = None,
    accountant: Accountant | None = None,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
) -> SpatialRelease:
    """NOISE DRAWING — private quadtree with geometric budget and OLS (ε-DP).

    Args:
        x: the true 2-D histogram.
        epsilon: total budget.
        height: levels below the root (None: down to single cells of the padded square).
        accountant: charged per level before its draw (None: a fresh one capped at ε).
        rng: noise source (None: the project's CSPRNG).
        discrete: exact discrete Laplace.
    """
    x = np.asarray(x, np.float64)
    if x.ndim != 2:
        raise InvalidParameterError(f"x must be a 2-D array, not {x.ndim}-D")
    epsilon = check_positive("epsilon", epsilon)
    acct = ledger(accountant, epsilon, "histogram-quadtree")
    full = max(0, math.ceil(math.log2(max(x.shape))))
    h = full if height is None else int(height)
    if not 0 <= h <= full:
        raise InvalidParameterError(f"height must be in [0, {full}], not {height!r}")
    side = 1 << full
    padded = np.zeros((side, side))
    padded[: x.shape[0], : x.shape[1]] = x
    known = np.zeros((side, side))  # 1 where a cell is padding (public, exactly 0)
    known[x.shape[0] :, :] = 1.0
    known[:, x.shape[1] :] = 1.0
    eps = geometric_budget(epsilon, h)
    truth = pyramid(padded, h)
    pad_frac = pyramid(known, h)
    y, var = [], []
    for i, (t, e) in enumerate(zip(truth, eps, strict=True)):
        is_pad = pad_frac[i] >= (side >> h) ** 2 * 4**i  # node entirely padding
        charge(
            acct,
            float(e),
            mechanism=f"quadtree:level{i}",
            n_values=int((~is_pad).sum()),
            discrete=discrete,
        )
        noise = laplace_noise(1.0 / e, t.shape, rng=rng, discrete=discrete)
        y.append(np.where(is_pad, 0.0, t + noise))
        var.append(np.where(is_pad, 0.0, 2.0 / (e * e)))
    leaves = tree_least_squares(y, var)
    f = side >> h
    real = _blocks(1.0 - known, f)  # real (non-padding) cells per leaf
    dens = np.where(real > 0, leaves / np.maximum(real, 1.0), 0.0)  # padding stays empty
    est = np.repeat(np.repeat(dens, f, 0), f, 1)[: x.shape[0], : x.shape[1]]
    parts = {f"level{i}": float(e) for i, e in enumerate(eps)}
    return SpatialRelease(est, "QuadTree", epsilon, (), parts, None)
