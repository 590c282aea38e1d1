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
default p = n/64 and 60 L-BFGS-B iterations (the paper uses p = n/16, §5.1) take
25–40 s at n = 4096 on a loaded 2-core machine.

HDMM proper (§6) keeps the best of several strategy families; next to OPT₀ this module
optimises a weighted b-ary hierarchy (:class:`Hierarchy`, :func:`opt_hierarchy`) whose
objective is closed-form (O(h) per evaluation after O(q·h) set-up), so n = 4096 takes
well under a second; :func:`hdmm_release` runs OPT₀ too only for small n or an explicit
p. Figures: docs/histograms-1d.md.

Privacy: the strategy depends only on the workload (public). :func:`hdmm_release`
charges ε to the accountant, then releases the Laplace mechanism on ``A·x`` (L1
sensitivity 1): ε-DP; the least-squares reconstruction is post-processing.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable

import numpy as np
from scipy import optimize, sparse

from mechanisms.accounting import Accountant
from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.histograms._noise import laplace_noise, resolve_rng
from mechanisms.histograms.greedyh import charge

__all__ = [
    "RangeGram",
    "DenseGram",
    "Hierarchy",
    "opt0",
    "opt_hierarchy",
    "strategy_error",
    "hdmm_release",
]

_CACHE: OrderedDict[tuple, object] = OrderedDict()
#: branchings tried by :func:`opt_hierarchy`
#: largest n at which ``strategy="auto"`` also runs OPT₀
OPT0_AUTO_MAX_N = 256
HIER_BRANCHES = (2, 3, 4, 5, 6, 8, 12, 16, 32, 64)


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
        # a digest, not the bytes: the strategy cache keeps up to 16 keys, and a Gram of
        # DAWA's buckets can be 16,384² doubles (2 GB)
        digest = hashlib.sha256(memoryview(np.ascontiguousarray(self.g))).hexdigest()
        self.key = ("dense", self.n, digest)
        self._sat: np.ndarray | None = None

    def matmul(self, m: np.ndarray) -> np.ndarray:
        """``G @ m``."""
        return self.g @ m

    def summed_area(self) -> np.ndarray:
        """``S[i, j] = Σ_{a<i, b<j} G[a, b]``, (n + 1) × (n + 1).

        Computed once: every branching factor the strategy search tries reads it.
        """
        if self._sat is None:
            sat = np.zeros((self.n + 1, self.n + 1))
            np.cumsum(self.g, axis=0, out=sat[1:, 1:])
            np.cumsum(sat[1:, 1:], axis=1, out=sat[1:, 1:])
            self._sat = sat
        return self._sat


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


# --- the weighted hierarchical family (fast; used at large n) ------------------------


class Hierarchy:
    """A weighted b-ary hierarchy strategy over ``N = b^h ≥ n`` cells (zero-padded).

    Level ``l = 0 … h`` has ``b^l`` blocks of ``s_l = b^(h−l)`` cells; the strategy
    measures every block sum of level l with weight ``w_l`` (Σ w_l = 1, so ‖A‖₁ = 1).
    With ``E_l`` the block-averaging projector of level l, the blocks' indicator Gram is
    ``B_l = s_l·E_l``, the E_l are nested, and ``D_k = E_k − E_{k−1}`` are orthogonal
    projectors; hence ``AᵀA = Σ_k c_k D_k`` with ``c_k = Σ_{l≥k} w_l² s_l`` and
    ``tr(WᵀW (AᵀA)⁻¹) = Σ_k t_k / c_k``, ``t_k = tr(WᵀW D_k)`` — closed form, O(h)
    per evaluation once the t_k are known (our derivation; HB is the special case
    ``w_0 = 0``, ``w_l = 1/h``).
    """

    def __init__(self, n: int, branch: int, weights: np.ndarray) -> None:
        self.n = int(n)
        self.b = int(branch)
        self.h = _height(self.n, self.b)
        self.big_n = self.b**self.h
        self.w = np.asarray(weights, np.float64)
        self.sizes = self.b ** (self.h - np.arange(self.h + 1))

    def coeffs(self) -> np.ndarray:
        """``c_k = Σ_{l≥k} w_l² s_l`` (the eigenvalues of AᵀA on D_k)."""
        return np.cumsum((self.w**2 * self.sizes)[::-1])[::-1]

    def measure(self, x: np.ndarray) -> list[np.ndarray]:
        """Noise-free ``A·x``: per level with w_l > 0, ``w_l ×`` block sums."""
        xp = np.zeros(self.big_n)
        xp[: self.n] = x
        return [
            wl * xp.reshape(-1, s).sum(axis=1) if wl > 0 else np.zeros(0)
            for wl, s in zip(self.w, self.sizes, strict=True)
        ]

    def reconstruct(self, y: list[np.ndarray]) -> np.ndarray:
        """Least squares ``x̂ = (AᵀA)⁻¹Aᵀy = Σ_k D_k Aᵀy / c_k`` (post-processing)."""
        aty = np.zeros(self.big_n)
        for wl, s, yl in zip(self.w, self.sizes, y, strict=True):
            if wl > 0:
                aty += wl * np.repeat(yl, s)
        c = self.coeffs()
        out = np.zeros(self.big_n)
        prev = np.zeros(self.big_n)
        for k, s in enumerate(self.sizes):
            cur = np.repeat(aty.reshape(-1, s).mean(axis=1), s) if s > 1 else aty
            out += (cur - prev) / c[k]
            prev = cur
        return out[: self.n]


def _height(n: int, b: int) -> int:
    h = 0
    while b**h < n:
        h += 1
    return max(h, 1)


def _level_traces(gram: RangeGram | DenseGram, b: int, h: int) -> np.ndarray:
    """``τ_l = tr(WᵀW E_l) = Σ_blocks ‖W 1_β‖² / s_l`` for l = 0 … h (τ_h = tr WᵀW).

    For a dense Gram ``‖W 1_β‖² = 1ᵀ G_ββ 1``, the sum of G over the diagonal block β,
    read off G's summed-area table (O(n²) once, O(n/s_l) per level; the padding to b^h
    cells is zero and adds nothing).
    """
    tau = np.zeros(h + 1)
    sat = gram.summed_area() if isinstance(gram, DenseGram) else None
    for lev in range(h + 1):
        s = b ** (h - lev)
        if isinstance(gram, RangeGram):
            lo, hi = gram.lo, gram.hi
            f, g = lo // s, (hi - 1) // s
            same = f == g
            left = (f + 1) * s - lo
            right = hi - g * s
            val = np.where(
                same, (hi - lo) ** 2 / s, (left**2 + right**2) / s + (g - f - 1) * s
            )
            tau[lev] = float(val.sum())
        else:
            lo = np.arange(0, gram.n, s)
            hi = np.minimum(lo + s, gram.n)
            blocks = sat[hi, hi] - sat[lo, hi] - sat[hi, lo] + sat[lo, lo]
            tau[lev] = float(blocks.sum()) / s
    return tau


def _hier_objective(t: np.ndarray, sizes: np.ndarray) -> Callable:
    """``f(w) = (Σw)²·Σ_k t_k/c_k(w)`` and its gradient (scale-free in w)."""

    def f(w: np.ndarray) -> tuple[float, np.ndarray]:
        c = np.cumsum((w**2 * sizes)[::-1])[::-1]
        phi = float(np.sum(t / c))
        tot = float(w.sum())
        # ∂c_k/∂w_l = 2 w_l s_l for k ≤ l  ⇒  ∂Φ/∂w_l = −2 w_l s_l Σ_{k≤l} t_k/c_k²
        dphi = -2.0 * w * sizes * np.cumsum(t / c**2)
        return tot * tot * phi, 2.0 * tot * phi + tot * tot * dphi

    return f


def opt_hierarchy(
    gram: RangeGram | DenseGram, branches: tuple[int, ...] = HIER_BRANCHES
) -> tuple[Hierarchy, float]:
    """The weighted hierarchy (branching and level weights) minimising the workload error.

    For each branching b the h + 1 level weights are found by L-BFGS-B (bounds w ≥ 0,
    started from HB's uniform weights); returns the best hierarchy and its
    ``tr(WᵀW (AᵀA)⁻¹)``. Data-independent; cached per workload.
    """
    key = ("hier", gram.key, branches)
    if key in _CACHE:
        return _CACHE[key]
    best: tuple[Hierarchy, float] | None = None
    for b in branches:
        if b > max(gram.n, 2):
            continue
        h = _height(gram.n, b)
        tau = _level_traces(gram, b, h)
        t = np.diff(np.concatenate(([0.0], tau)))
        sizes = (b ** (h - np.arange(h + 1))).astype(np.float64)
        f = _hier_objective(np.maximum(t, 0.0), sizes)
        w0 = np.full(h + 1, 1.0 / h)
        w0[0] = 1e-3
        res = optimize.minimize(
            f, w0, jac=True, method="L-BFGS-B", bounds=[(1e-9, None)] * (h + 1),
            options={"maxiter": 500},
        )
        w = res.x / res.x.sum()
        w[w < 1e-7] = 0.0
        w /= w.sum()
        if w[-1] <= 0:
            continue
        val = f(w)[0]
        if best is None or val < best[1]:
            best = (Hierarchy(gram.n, b, w), val)
    if best is None:
        raise InvalidParameterError(f"branches must contain a value in [2, n], not {branches!r}")
    _CACHE[key] = best
    while len(_CACHE) > 16:
        _CACHE.popitem(last=False)
    return best


def hdmm_release(
    x: np.ndarray,
    epsilon: float,
    workload: tuple[np.ndarray, np.ndarray] | None = None,
    *,
    gram: np.ndarray | None = None,
    p: int | None = None,
    strategy: str = "auto",
    accountant: Accountant | None = None,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """HDMM release: the optimised strategy, Laplace measurement, least squares.

    HDMM (McKenna et al. 2018, §6) optimises over several strategy families and keeps
    the one with the smallest expected error. Here the families are OPT₀'s p-Identity
    (§5.1) and the weighted hierarchy (:func:`opt_hierarchy`, closed-form objective);
    ``strategy="auto"`` optimises the hierarchy always and OPT₀ too when ``p`` is given
    or n ≤ :data:`OPT0_AUTO_MAX_N` (OPT₀ at n = 4096 takes ~30 s; the hierarchy
    milliseconds), and measures the better of the two.

    Args:
        x: the true 1-D histogram.
        epsilon: budget ε, charged to ``accountant`` before the noise is drawn.
        workload: range queries ``(lo, hi)`` (None with ``gram`` None: identity).
        gram: explicit ``WᵀW`` of any linear workload (overrides ``workload``).
        p: rows of Θ for OPT₀ (default n/64).
        strategy: "auto", "hierarchical" or "p-identity".
        accountant: charged ε (None: a fresh accountant capped at ε).
        rng: noise source (None: the project's CSPRNG).
    """
    epsilon = check_positive("epsilon", epsilon)
    if strategy not in {"auto", "hierarchical", "p-identity"}:
        raise InvalidParameterError(
            f"strategy must be auto, hierarchical or p-identity, not {strategy!r}"
        )
    x = np.asarray(x, np.float64).ravel()
    n = len(x)
    if gram is not None:
        op: RangeGram | DenseGram = DenseGram(gram)
    elif workload is not None:
        op = RangeGram(n, *workload)
    else:
        op = RangeGram(n, np.arange(n), np.arange(1, n + 1))
    hier: tuple[Hierarchy, float] | None = None
    th: np.ndarray | None = None
    if strategy != "p-identity" and n >= 2:
        hier = opt_hierarchy(op)
    if strategy == "p-identity" or (
        strategy == "auto" and (p is not None or n <= OPT0_AUTO_MAX_N or hier is None)
    ):
        th = opt0(op, p)
        if hier is not None and strategy_error(op, th) >= hier[1]:
            th = None
        else:
            hier = None
    charge(accountant, epsilon, "histogram:HDMM")
    gen = resolve_rng(rng)
    if hier is not None:
        # each column of A has L1 norm Σ w_l = 1: sensitivity 1
        h = hier[0]
        y = [
            yl + laplace_noise(1.0 / epsilon, len(yl), rng=gen) if len(yl) else yl
            for yl in h.measure(x)
        ]
        return h.reconstruct(y)
    if th is None:  # pragma: no cover - one of the two families is always chosen
        raise InvalidParameterError(f"strategy {strategy!r} found no strategy")
    s = 1.0 + th.sum(axis=0)
    # A x = [x; Θx] / s (columns scaled by D = 1/s); each column of A has L1 norm 1
    ax = np.concatenate([x / s, th @ (x / s)])
    y = ax + laplace_noise(1.0 / epsilon, len(ax), rng=gen)
    # x̂ = (AᵀA)⁻¹Aᵀy = S (I + ΘᵀΘ)⁻¹ (y₁ + Θᵀy₂), Woodbury for the inverse
    b = y[:n] + th.T @ y[n:]
    r = np.eye(th.shape[0]) + th @ th.T
    cinv_b = b - th.T @ np.linalg.solve(r, th @ b)
    return s * cinv_b
