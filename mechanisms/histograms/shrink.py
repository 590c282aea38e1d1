"""Wavelet shrinkage of a noisy histogram (SureShrink, cycle-spun): post-processing only.

Identity (Laplace noise of scale ``b = 1/ε`` on every cell) is unbiased, but on data that
is smooth or piecewise constant at the noise level it spends its whole error on noise
that neighbouring cells could average away — the reason DAWA (Li et al. VLDB 2014)
beats it there. Shrinking the noisy histogram's Haar wavelet coefficients removes most
of that noise without a second look at the data: the input is the released histogram
and the noise level ``σ = √2·b`` (public: it follows from ε), so the result is
post-processing of an ε-DP release and ε-DP with no further charge.

The estimator is Donoho & Johnstone's SureShrink ("Adapting to unknown smoothness via
wavelet shrinkage", JASA 90(432), 1995, §2.3–2.4): per resolution level, soft
thresholding of the detail coefficients ``d`` at the threshold that minimises Stein's
unbiased risk estimate (Stein, Ann. Stat. 9(6), 1981)

    ``SURE(t; d/σ) = m − 2·#{i : |d_i|/σ ≤ t} + Σ min(|d_i|/σ, t)²``

over ``t ∈ {0} ∪ {|d_i|/σ}``, with their *hybrid* rule: on a level whose coefficients are
sparse (``(Σ (d_i/σ)² − m)/m ≤ log₂(m)^{3/2}/√m``) the universal threshold
``σ·√(2 ln m)`` instead, where SURE is known to be noisy. The orthonormal Haar transform
keeps white noise white with the same σ (Privelet's unnormalised transform is used, with
σ scaled per level: :func:`_shrink_once`). SURE assumes Gaussian noise; a Haar
coefficient at level j sums 2^j Laplace draws, close to Gaussian beyond the finest
level, and the measured figures (docs/histograms-1d.md "Identity-SURE") are what
justify it, not the assumption. Cycle spinning (Coifman & Donoho, "Translation-
invariant de-noising", Wavelets and Statistics, 1995) averages the estimate over
:data:`SHIFTS` circular shifts, which removes most of the Haar basis' block artefacts.

Hand-written (no wavelet library is among the project's dependencies): the Haar
transform is Privelet's (:func:`~mechanisms.histograms.privelet.haar`), and SURE's
minimiser is a sort and a cumulative sum.
"""

from __future__ import annotations

import math

import numpy as np

from mechanisms.errors import check_positive
from mechanisms.histograms.privelet import haar, inverse_haar

__all__ = ["SHIFTS", "sure_threshold", "sure_shrink"]

#: circular shifts averaged by :func:`sure_shrink` (on the 11 DPBench training files,
#: identity workload, 5 scales, 3 trials, geo-mean error / best of Identity, DAWA, HB,
#: DPC: one shift 1.134 (hybrid rule 1.047), 8 shifts 1.086 (hybrid **1.015**); docs/
#: histograms-1d.md "Identity-SURE")
SHIFTS = 8


def sure_threshold(d: np.ndarray, sigma: float) -> float:
    """SureShrink's hybrid threshold for the coefficients ``d`` with noise sd ``sigma``.

    The minimiser of SURE over ``{0} ∪ {|d_i|}`` (ties: the smallest), or the universal
    threshold ``σ·√(2 ln m)`` when the level is sparse (module docstring).
    """
    sigma = check_positive("sigma", sigma)
    z = np.abs(np.asarray(d, np.float64)) / sigma
    m = len(z)
    if m > 1 and (np.sum(z * z) - m) / m <= math.log2(m) ** 1.5 / math.sqrt(m):
        return sigma * math.sqrt(2.0 * math.log(m))
    zs = np.sort(z)
    k = np.arange(m + 1)
    t = np.concatenate(([0.0], zs))
    below = np.concatenate(([0.0], np.cumsum(zs * zs)))
    risk = m - 2.0 * k + below + (m - k) * t * t
    return float(t[int(np.argmin(risk))] * sigma)


def _shrink_once(y: np.ndarray, sigma: float) -> np.ndarray:
    """One SureShrink pass over Privelet's Haar coefficients (length 2^k).

    :func:`~mechanisms.histograms.privelet.haar` halves differences of block means, so a
    level with ``m`` coefficients is the orthonormal level scaled by ``√(m/N)``; white
    noise of sd σ has sd ``σ·√(m/N)`` there. Soft thresholding and SURE are equivariant
    under that scaling, so this is SureShrink in the orthonormal basis.
    """
    c0, levels = haar(y)
    size = len(y)
    kept = []
    for c in levels:
        t = sure_threshold(c, sigma * math.sqrt(len(c) / size))
        kept.append(np.sign(c) * np.maximum(np.abs(c) - t, 0.0))
    return inverse_haar(c0, kept)


def sure_shrink(y: np.ndarray, sigma: float, shifts: int = SHIFTS) -> np.ndarray:
    """The cycle-spun SureShrink estimate of the histogram under ``y`` (white noise, sd σ).

    Any length: the vector is extended by reflection to the next power of two and the
    estimate cut back to ``len(y)``.
    """
    sigma = check_positive("sigma", sigma)
    y = np.asarray(y, np.float64).ravel()
    n = len(y)
    if n <= 1:
        return y.copy()
    size = 1 << (n - 1).bit_length()
    ext = np.pad(y, (0, size - n), mode="symmetric")
    acc = np.zeros(size)
    shifts = max(1, min(int(shifts), size))
    for s in range(shifts):
        acc += np.roll(_shrink_once(np.roll(ext, -s), sigma), s)
    return acc[:n] / shifts
