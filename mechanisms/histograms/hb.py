"""HB: hierarchical histogram with optimal branching (Qardaji, Yang & Li, VLDB 2013).

Qardaji et al. (§3–4) show that the average range-query variance of a hierarchy of
branching b and height h over N cells, with the budget split equally over the h levels
below the root and constrained inference, is proportional to
``V(b) = (b − 1)·h³ − 2(b + 1)·h²/3`` with ``h = ⌈log_b N⌉`` (their eq. 3 as used by
the DPBench implementation); HB picks the b ∈ [2, N] minimising it. Every node below
the root is then measured with ``Lap(h/ε)`` (weights 1: a cell lies in at most h
measured nodes) and the estimate is the consistent least-squares fit (Hay et al. VLDB
2010, :func:`~mechanisms.histograms._tree.least_squares`).

Privacy: the tree depends only on N (public); the release charges ε to the accountant
and is the Laplace mechanism on the node sums with L1 sensitivity h: ε-DP.
"""

from __future__ import annotations

import math

import numpy as np

from mechanisms.accounting import Accountant
from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.histograms import _tree
from mechanisms.histograms.greedyh import charge

__all__ = ["hb_variance", "hb_branching", "hb_tree", "hb_release"]


def hb_variance(n: int, b: int) -> float:
    """Qardaji et al.'s variance proxy ``(b − 1)h³ − 2(b + 1)h²/3``, ``h = ⌈log_b n⌉``."""
    h = max(math.ceil(math.log(n, b) - 1e-12), 1)
    return (b - 1) * h**3 - 2.0 * (b + 1) * h**2 / 3.0


def hb_branching(n: int) -> int:
    """The branching b ∈ [2, n] minimising :func:`hb_variance` (smallest on ties)."""
    if n < 2:
        raise InvalidParameterError(f"n must be >= 2, not {n!r}")
    return min(range(2, n + 1), key=lambda b: (hb_variance(n, b), b))


def hb_tree(n: int) -> _tree.Tree:
    """HB's strategy: the b-ary tree over n cells, every node but the root with weight 1."""
    tree = _tree.build_tree(n, hb_branching(n))
    w = np.ones(tree.size)
    w[0] = 0.0
    tree.weight = w
    return tree


def hb_release(
    x: np.ndarray,
    epsilon: float,
    *,
    accountant: Accountant | None = None,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
) -> np.ndarray:
    """HB release (Qardaji et al. 2013): ε-DP estimate of the 1-D histogram ``x``.

    Args:
        x: the true histogram (n ≥ 2 cells).
        epsilon: budget ε, charged to ``accountant`` before the noise is drawn.
        accountant: charged ε (None: a fresh accountant capped at ε).
        rng: noise source (None: the project's CSPRNG).
        discrete: exact discrete Laplace (integer counts).
    """
    epsilon = check_positive("epsilon", epsilon)
    x = np.asarray(x, np.float64).ravel()
    tree = hb_tree(len(x))
    charge(accountant, epsilon, "histogram:HB")
    y = _tree.measure(x, tree, epsilon, rng=rng, discrete=discrete)
    return _tree.least_squares(tree, y, epsilon)
