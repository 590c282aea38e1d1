"""Privelet: Haar-wavelet noise for range counts (Xiao, Wang & Gehrke, ICDE 2010, §4).

The histogram is zero-padded to ``N = 2^h`` cells and Haar-transformed (§4.1): the base
coefficient ``c₀`` is the mean of all cells and every internal node v of the binary tree
has ``c_v = (mean(left) − mean(right))/2``. With the weights ``W(c₀) = N`` and
``W(c_v) = |v|`` (cells under v), one record changes ``c₀`` by ``1/N`` and the
coefficient of each of the h nodes on its path by ``1/|v|`` (and no other), so the
*generalised sensitivity* ``Σ_c W(c)·|Δc|`` is ``ρ = 1 + h`` (§4.2, Lemma 3). Adding
``Lap(ρ/(ε·W(c)))`` to every coefficient is then ε-DP (Theorem 1: the log-ratio of the
densities is at most ``Σ_c |Δc|·ε·W(c)/ρ = ε``). The inverse transform of the noisy
coefficients (post-processing) gives the release; a range query's noise variance is
O(h³/ε²) (Theorem 3), against O(|range|/ε²) for per-cell noise.

Privacy: the release charges ε to the accountant before drawing noise; it is ε-DP as
above. Continuous Laplace only (the coefficients are not integers).
"""

from __future__ import annotations

import numpy as np

from mechanisms.accounting import Accountant
from mechanisms.errors import check_positive
from mechanisms.histograms._noise import laplace_noise
from mechanisms.histograms.greedyh import charge

__all__ = ["haar", "inverse_haar", "privelet_release"]


def haar(x: np.ndarray) -> tuple[float, list[np.ndarray]]:
    """Haar coefficients of ``x`` (length 2^h): ``(c₀, [level arrays, root level first])``."""
    a = np.asarray(x, np.float64).ravel()
    levels = []
    while len(a) > 1:
        levels.append((a[0::2] - a[1::2]) / 2.0)
        a = (a[0::2] + a[1::2]) / 2.0
    return float(a[0]), levels[::-1]


def inverse_haar(c0: float, levels: list[np.ndarray]) -> np.ndarray:
    """Inverse of :func:`haar` (post-processing)."""
    a = np.array([c0], np.float64)
    for c in levels:
        out = np.empty(2 * len(a))
        out[0::2] = a + c
        out[1::2] = a - c
        a = out
    return a


def privelet_release(
    x: np.ndarray,
    epsilon: float,
    *,
    accountant: Accountant | None = None,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Privelet release: ε-DP estimate of the 1-D histogram ``x`` (Xiao et al. 2010).

    Args:
        x: the true histogram.
        epsilon: budget ε, charged to ``accountant`` before the noise is drawn.
        accountant: charged ε (None: a fresh accountant capped at ε).
        rng: noise source (None: the project's CSPRNG).
    """
    epsilon = check_positive("epsilon", epsilon)
    x = np.asarray(x, np.float64).ravel()
    n = len(x)
    h = max(int(np.ceil(np.log2(n))), 0) if n > 1 else 0
    big = 1 << h
    padded = np.zeros(big)
    padded[:n] = x
    c0, levels = haar(padded)
    rho = 1.0 + h
    charge(accountant, epsilon, "histogram:Privelet")
    c0 = c0 + float(laplace_noise(rho / (epsilon * big), 1, rng=rng)[0])
    noisy = []
    for c in levels:
        size = big // len(c)  # cells under each node of this level
        noisy.append(c + laplace_noise(rho / (epsilon * size), len(c), rng=rng))
    return inverse_haar(c0, noisy)[:n]
