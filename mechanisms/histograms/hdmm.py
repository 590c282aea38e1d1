"""HDMM's OPT₀ (p-Identity strategies) for 1-D linear workloads (McKenna et al., VLDB 2018).

The matrix mechanism (Li et al. 2010) answers a workload W by measuring a strategy A
with the Laplace mechanism, ``y = A·x + Lap(‖A‖₁/ε)``, and reconstructing
``x̂ = (AᵀA)⁻¹Aᵀy``; its expected total squared error is
``(2/ε²)·‖A‖₁²·tr(WᵀW (AᵀA)⁻¹)``. HDMM §5.1 (OPT₀) restricts A to the *p-Identity*
family ``A(Θ) = [I; Θ]·D``, Θ ∈ ℝ₊^{p×n}, ``D = diag(1/(1 + 1ᵀΘ))`` (every column has
L1 norm 1, so ‖A‖₁ = 1), and minimises ``f(Θ) = tr(WᵀW (AᵀA)⁻¹)`` with L-BFGS-B
(bounds Θ ≥ 0), the gradient in closed form (§5.1, Prop. 5.2 in our notation below).

Computation (our derivation, with ``s = 1 + Θᵀ1``, ``S = diag(s)``, ``R = I_p + ΘΘᵀ``,
``V = R⁻¹Θ``): ``AᵀA = D(I + ΘᵀΘ)D`` and, by Woodbury, ``(I + ΘᵀΘ)⁻¹ = I − ΘᵀV``, so
``f = Σ_i G_ii s_i² − Σ_ij s_i (G S Θᵀ)_ij V_ji`` with ``G = WᵀW``; the gradient is
``−2(T − TΘᵀV) + 1·g_sᵀ`` with ``T = (S G S Vᵀ)ᵀ`` and
``g_s = 2(diag(G)∘s − rowsum((G S Θᵀ)∘Vᵀ))``. Only products ``G·M`` with n×p matrices
are needed: for range workloads they cost O((n + q)·p) through prefix sums. Our
default p = n/64 and 60 L-BFGS-B iterations (the paper uses p = n/16, §5.1) keep n = 4096
near a minute on a loaded 2-core machine (bench ``hist_1d`` reports the time); the
error ratio to Identity is then ≈ 0.1 on prefix and 2000 random ranges.

Privacy: the strategy depends only on the workload (public). :func:`hdmm_release`
charges ε to the accountant, then releases the Laplace mechanism on ``A·x`` (L1
sensitivity 1): ε-DP; the least-squares reconstruction is post-processing.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import numpy as np
from scipy import optimize, sparse

from mechanisms.accounting import Accountant
from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.histograms._noise import laplace_noise, resolve_rng
from mechanisms.histograms.greedyh import charge

__all__ = ["RangeGram", "DenseGram", "opt0", "strategy_error", "hdmm_release"]

_CACHE: OrderedDict[tuple, np.ndarray] = OrderedDict()


class RangeGram:
    """``G = WᵀW`` of range queries ``[lo, hi)`` as an operator (never formed)."""

    def __init__(self, n: int, lo: np.ndarray, hi: np.ndarray) -> None:
        self.n = int(n)
        self.lo = np.asarray(lo, np.int64)
        self.hi = np.asarray(hi, np.int64)
        m = len(self.lo)
        cols = np.arange(m)
        ones = np.ones(m)
        self._d = (
            sparse.csr_matrix((ones, (self.lo, cols)), shape=(n + 1, m))
            - sparse.csr_matrix((ones, (self.hi, cols)), shape=(n + 1, m))
        ).tocsr()
        cnt = np.bincount(self.lo, minlength=n + 1) - np.bincount(self.hi, minlength=n + 1)
        self.diag = np.cumsum(cnt)[:n].astype(np.float64)
        self.key = ("ranges", n, self.lo.tobytes(), self.hi.tobytes())

    def matmul(self, m: np.ndarray) -> np.ndarray:
        """``G @ m`` for an n×p matrix."""
        c = np.vstack([np.zeros((1, m.shape[1])), np.cumsum(m, axis=0)])
        wm = c[self.hi] - c[self.lo]  # W m
        return np.cumsum(self._d @ wm, axis=0)[: self.n]  # Wᵀ (W m)


class DenseGram:
    """An explicit ``G = WᵀW`` (any linear workload)."""

    def __init__(self, gram: np.ndarray) -> None:
        self.g = np.asarray(gram, np.float64)
        self.n = self.g.shape[0]
        if self.g.shape != (self.n, self.n):
            raise InvalidParameterError(f"gram must be square, not {self.g.shape}")
        self.diag = np.diag(self.g).copy()
        self.key = ("dense", self.n, self.g.tobytes())

    def matmul(self, m: np.ndarray) -> np.ndarray:
        """``G @ m``."""
        return self.g @ m


def _objective(gram: RangeGram | DenseGram, p: int) -> Callable:
    n = gram.n

    def f(theta_flat: np.ndarray) -> tuple[float, np.ndarray]:
        th = theta_flat.reshape(p, n)
        s = 1.0 + th.sum(axis=0)
        r = np.eye(p) + th @ th.T
        v = np.linalg.solve(r, th)  # R⁻¹Θ
        gb = gram.matmul(s[:, None] * th.T)  # G S Θᵀ
        gu = gram.matmul(s[:, None] * v.T)  # G S Vᵀ
        cross = np.einsum("ij,ji->i", gb, v)  # rowsum((G S Θᵀ)∘Vᵀ)
        val = float(gram.diag @ (s * s) - s @ cross)
        t = (s[:, None] * gu).T  # V X
        grad = -2.0 * (t - (t @ th.T) @ v)
        gs = 2.0 * (gram.diag * s - cross)
        grad += gs[None, :]
        return val, grad.ravel()

    return f


def strategy_error(gram: RangeGram | DenseGram, theta: np.ndarray) -> float:
    """``tr(WᵀW (AᵀA)⁻¹)`` of the p-Identity strategy Θ (× 2/ε² = expected total sq. error)."""
    th = np.asarray(theta, np.float64)
    return _objective(gram, th.shape[0])(th.ravel())[0]


def opt0(
    gram: RangeGram | DenseGram,
    p: int | None = None,
    *,
    restarts: int = 1,
    maxiter: int = 60,
    seed: int = 0,
) -> np.ndarray:
    """HDMM OPT₀: the p-Identity Θ (p×n) minimising the workload error (no data read).

    The random initialisation is a public seed (the strategy is data-independent).
    Results are cached per (workload, p).
    """
    n = gram.n
    p = max(1, n // 64) if p is None else int(p)
    key = (gram.key, p, restarts, maxiter, seed)
    if key in _CACHE:
        return _CACHE[key]
    f = _objective(gram, p)
    init = np.random.default_rng(seed)
    best, best_val = np.zeros((p, n)), f(np.zeros(p * n))[0]  # Θ = 0 is the identity
    for _ in range(restarts):
        x0 = init.random(p * n)
        res = optimize.minimize(
            f, x0, jac=True, method="L-BFGS-B", bounds=[(0.0, None)] * (p * n),
            options={"maxiter": maxiter},
        )
        if res.fun < best_val:
            best, best_val = res.x.reshape(p, n), float(res.fun)
    _CACHE[key] = best
    while len(_CACHE) > 8:
        _CACHE.popitem(last=False)
    return best


def hdmm_release(
    x: np.ndarray,
    epsilon: float,
    workload: tuple[np.ndarray, np.ndarray] | None = None,
    *,
    gram: np.ndarray | None = None,
    p: int | None = None,
    accountant: Accountant | None = None,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """HDMM (OPT₀, p-Identity) release with least-squares reconstruction.

    Args:
        x: the true 1-D histogram.
        epsilon: budget ε, charged to ``accountant`` before the noise is drawn.
        workload: range queries ``(lo, hi)`` (None with ``gram`` None: identity).
        gram: explicit ``WᵀW`` of any linear workload (overrides ``workload``).
        p: rows of Θ (default n/64).
        accountant: charged ε (None: a fresh accountant capped at ε).
        rng: noise source (None: the project's CSPRNG).
    """
    epsilon = check_positive("epsilon", epsilon)
    x = np.asarray(x, np.float64).ravel()
    n = len(x)
    if gram is not None:
        op: RangeGram | DenseGram = DenseGram(gram)
    elif workload is not None:
        op = RangeGram(n, *workload)
    else:
        op = RangeGram(n, np.arange(n), np.arange(1, n + 1))
    th = opt0(op, p)
    s = 1.0 + th.sum(axis=0)
    charge(accountant, epsilon, "histogram:HDMM")
    gen = resolve_rng(rng)
    # A x = [x; Θx] / s (columns scaled by D = 1/s); each column of A has L1 norm 1
    ax = np.concatenate([x / s, th @ (x / s)])
    y = ax + laplace_noise(1.0 / epsilon, len(ax), rng=gen)
    # x̂ = (AᵀA)⁻¹Aᵀy = S (I + ΘᵀΘ)⁻¹ (y₁ + Θᵀy₂), Woodbury for the inverse
    b = y[:n] + th.T @ y[n:]
    r = np.eye(th.shape[0]) + th @ th.T
    cinv_b = b - th.T @ np.linalg.solve(r, th @ b)
    return s * cinv_b
