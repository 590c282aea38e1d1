"""Exact discrete Gaussian noise, keyed and replay-safe, vectorised over locations.

The discrete Gaussian N_ℤ(0, σ²) has P[Z = z] ∝ exp(−z²/(2σ²)) on the integers
(Canonne, Kamath & Steinke, NeurIPS 2020, "The Discrete Gaussian for Differential
Privacy", Def. 1). Adding it to an integer query with L2 sensitivity Δ₂ gives
ρ-zCDP with ρ = Δ₂²/(2σ²) (their Thm 4 for one coordinate, and the paper's
multivariate extension for a vector of independent coordinates — the same ρ as the
continuous Gaussian), which is what the day budget
(:class:`mechanisms.accounting.DayBudget`) composes.

Sampler (CKS 2020, Algorithm 3, with the proposal's rate made explicit)
    Repeat: draw Y from the discrete Laplace with rate r (P[Y = y] ∝ e^(−r|y|)) and
    accept it with probability exp(−(|Y| − σ²r)²/(2σ²)). The accepted Y has law
    N_ℤ(0, σ²) for any r > 0 (the acceptance ratio is the target over the proposal,
    divided by its maximum e^(σ²r²/2)); CKS take r = 1/t with t = ⌊σ⌋ + 1, which
    accepts with probability ≥ ≈ 0.6. Here r = ⌊2²⁰/t⌋/2²⁰ is the rate the project's
    exact discrete Laplace (:func:`mechanisms.noise.discrete_laplace`) actually samples
    with scale t, so the proposal is *exactly* the one assumed.

    CKS Algorithm 1 draws the Bernoulli(exp(−γ)) coin with a loop of Bernoulli(1/k)
    draws, one sample at a time. It is hand-written here instead (the reason this is
    not a library call): (1) replay safety needs every coin to come from the keyed
    counter-based generator of :func:`mechanisms.noise.keyed_rng`, and (2) a 1,392-
    location tick must stay well under 50 ms, which needs numpy vectorisation. The
    coin compares a uniform R ∈ [0, 1) — its first 64 bits a word U from the generator
    — with the binary expansion of exp(−γ_y), γ_y = (y − σ²r)²/(2σ²), tabulated once
    per σ with correctly rounded decimal arithmetic: U below the threshold's first word
    accepts, above rejects, equal (probability 2⁻⁶⁴) draws further words, compared
    lazily with further words of exp(−γ_y) (exact: γ_y is rational, so exp(−γ_y) is
    irrational unless γ_y = 0, which accepts outright). No floating-point value enters
    the sampling path (Mironov, CCS 2012), the output is an integer, and every
    probability is exactly the discrete Gaussian's for σ² as stored.

    σ² is stored as a rational n/2²⁰ rounded **up** from the requested σ² (a larger
    variance: the release is at least as private as the ρ computed from the requested
    σ). The words drawn are a deterministic function of the generator, so a keyed
    generator ``keyed_rng(secret, mechanism, tick, "all")`` reproduces a tick's noise
    after a crash.
"""

from __future__ import annotations

import decimal
import functools
import math
from fractions import Fraction

import numpy as np

from mechanisms.errors import InvalidParameterError, check_positive, check_probability
from mechanisms.noise import RATE_DENOMINATOR, discrete_laplace, resolve_rng

__all__ = [
    "SIGMA2_DENOMINATOR",
    "discrete_gaussian",
    "discrete_gaussian_mae",
    "discrete_gaussian_pmf",
    "discrete_gaussian_variance",
    "gaussian_interval",
    "prepare",
    "stored_sigma2",
    "zcdp_rho",
]

#: σ² is stored as a rational with this denominator (rounded up).
SIGMA2_DENOMINATOR = 1 << 20

_WORD = 1 << 64
#: Largest σ accepted (the proposal's scale t must be ≤ 2²⁰ for the exact Laplace).
_SIGMA_MAX = 1.0e5
#: Tabulate the acceptance thresholds for |y| ≤ _TAIL·t (P[|Y| > 40t] < e^(−40)).
_TAIL = 40


def stored_sigma2(sigma: float) -> Fraction:
    """σ² as the sampler stores it: ⌈σ²·2²⁰⌉/2²⁰ (never below the requested σ²).

    Raises:
        InvalidParameterError: σ not positive and finite, or above 10⁵.
    """
    s = check_positive("sigma", sigma)
    if s > _SIGMA_MAX:
        raise InvalidParameterError(f"sigma must be at most {_SIGMA_MAX:g}, not {sigma!r}")
    exact = Fraction(s) * Fraction(s)
    return Fraction(math.ceil(exact * SIGMA2_DENOMINATOR), SIGMA2_DENOMINATOR)


def _proposal(sigma2: Fraction) -> tuple[int, Fraction]:
    """(t, r): the proposal's scale t = ⌊σ⌋ + 1 and the exact rate r it is sampled with."""
    t = math.isqrt(sigma2.numerator // sigma2.denominator) + 1
    num = math.floor(Fraction(RATE_DENOMINATOR) / Fraction(t))
    return t, Fraction(num, RATE_DENOMINATOR)


def _gamma(y: int, sigma2: Fraction, rate: Fraction) -> Fraction:
    """γ_y = (y − σ²r)²/(2σ²), exactly."""
    d = y - sigma2 * rate
    return d * d / (2 * sigma2)


def _exp_word(gamma: Fraction, word: int) -> int:
    """Word ``word`` (0 = most significant) of the binary expansion of exp(−γ), γ > 0.

    ⌊exp(−γ)·2^(64(word+1))⌋ mod 2⁶⁴, at a decimal precision raised until the floor is
    certain (exp(−γ) is irrational for rational γ ≠ 0, so this terminates).
    """
    bits = 64 * (word + 1)
    prec = bits // 3 + 40
    while True:
        ctx = decimal.Context(prec=prec, rounding=decimal.ROUND_HALF_EVEN)
        g = ctx.divide(decimal.Decimal(gamma.numerator), decimal.Decimal(gamma.denominator))
        x = ctx.multiply(ctx.exp(-g), 1 << bits)
        f = int(x.to_integral_value(rounding=decimal.ROUND_FLOOR))
        err = x.scaleb(10 - prec)  # ≫ the rounding errors of divide, exp and multiply
        if err < x - f < 1 - err:
            return f % _WORD
        prec += 40


def _first_word(gamma: Fraction) -> int:
    """⌊exp(−γ)·2⁶⁴⌋, with 2⁶⁴ standing for exp(0) = 1 (always accept)."""
    return _WORD if gamma == 0 else _exp_word(gamma, 0)


@functools.lru_cache(maxsize=32)
def _table(sigma2: Fraction) -> tuple[int, Fraction, np.ndarray, np.ndarray]:
    """(t, r, first words as uint64 with 2⁶⁴ clipped, flags "exactly 1") for |y| ≤ 40t."""
    t, rate = _proposal(sigma2)
    n = _TAIL * t + 1
    words = [_first_word(_gamma(y, sigma2, rate)) for y in range(n)]
    one = np.array([w == _WORD for w in words], dtype=bool)
    arr = np.array([min(w, _WORD - 1) for w in words], dtype=np.uint64)
    return t, rate, arr, one


def _accept(
    y: np.ndarray, sigma2: Fraction, rng: np.random.Generator
) -> np.ndarray:
    """Exact Bernoulli(exp(−γ_|y|)) coins, one 64-bit word each (more on a tie)."""
    t, rate, table, one = _table(sigma2)
    a = np.abs(y)
    u = np.asarray(rng.bit_generator.random_raw(a.size), dtype=np.uint64)
    inside = a < table.size
    idx = np.where(inside, a, 0)
    c = table[idx]
    acc = inside & (one[idx] | (u < c))
    tie = inside & ~one[idx] & (u == c)
    for i in np.flatnonzero(tie):  # R's first word equals exp(−γ)'s: compare further words
        acc[i] = _resolve(_gamma(int(a[i]), sigma2, rate), rng)
    for i in np.flatnonzero(~inside):  # beyond the table (probability < e^(−40))
        g = _gamma(int(a[i]), sigma2, rate)
        w = _first_word(g)
        ui = int(u[i])
        acc[i] = True if w == _WORD else (ui < w or (ui == w and _resolve(g, rng)))
    return acc


def _resolve(gamma: Fraction, rng: np.random.Generator) -> bool:
    """R < exp(−γ) given that R's first word equals the threshold's first word."""
    w = 1
    while True:
        u = int(np.asarray(rng.bit_generator.random_raw(1), dtype=np.uint64)[0])
        c = _exp_word(gamma, w)
        if u != c:
            return u < c
        w += 1


def _draw(sigma2: Fraction, n: int, rng: np.random.Generator) -> np.ndarray:
    """Draw n iid N_ℤ(0, σ²) by rejection from the exact discrete Laplace (see the module)."""
    t, _, _, _ = _table(sigma2)
    out = np.empty(n, dtype=np.int64)
    pending = np.arange(n)
    while pending.size:
        y = discrete_laplace(float(t), pending.size, rng=rng)
        ok = _accept(y, sigma2, rng)
        out[pending[ok]] = y[ok]
        pending = pending[~ok]
    return out


def discrete_gaussian(
    sigma: float | np.ndarray,
    size: int | tuple[int, ...] | None = None,
    *,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Exact discrete Gaussian noise N_ℤ(0, σ²) (CKS 2020, Alg. 3; see the module).

    Args:
        sigma: σ > 0 (≤ 10⁵), a scalar or an array broadcast to ``size``; σ² is
            rounded up to a multiple of 2⁻²⁰ (:func:`stored_sigma2`).
        size: output shape; default the shape of ``sigma``.
        rng: generator, e.g. ``keyed_rng(secret, "device-day", tick, "all")``; None →
            the project's CSPRNG-seeded generator.

    Returns:
        int64 array of the requested shape (an int64 scalar for scalar output).

    Raises:
        InvalidParameterError: σ not positive and finite, or above 10⁵.
    """
    rng = resolve_rng(rng)
    shape: tuple[int, ...]
    if size is None:
        shape = np.shape(sigma)
    elif isinstance(size, int | np.integer):
        shape = (int(size),)
    else:
        shape = tuple(int(s) for s in size)
    n = int(np.prod(shape)) if shape else 1
    sig = np.broadcast_to(np.asarray(sigma, dtype=float), (n,))
    out = np.empty(n, dtype=np.int64)
    if n:
        uniq, inv = np.unique(sig, return_inverse=True)
        inv = inv.reshape(-1)
        for j, s in enumerate(uniq):
            rows = np.flatnonzero(inv == j) if uniq.size > 1 else np.arange(n)
            out[rows] = _draw(stored_sigma2(float(s)), rows.size, rng)
    return out.reshape(shape) if shape else out[0]


def prepare(sigma: float) -> None:
    """Build the exact sampler's table for σ now, without drawing anything.

    The table (one exact word of exp(−γ) per |y| ≤ 40t, t ≈ σ) costs about a second per
    100 of σ on a shared core the first time a process draws at that σ. A caller with
    a deadline (a worker's event loop) runs this ahead, in a thread; the draws are
    unchanged.

    Raises:
        InvalidParameterError: σ not positive and finite, or above 10⁵.
    """
    _table(stored_sigma2(sigma))


# --------------------------------------------------------------------------- analysis


@functools.lru_cache(maxsize=256)
def _support(sigma: float) -> tuple[np.ndarray, np.ndarray]:
    s2 = float(stored_sigma2(sigma))
    k = int(math.ceil(40 * math.sqrt(s2))) + 2
    z = np.arange(-k, k + 1)
    w = np.exp(-(z.astype(float) ** 2) / (2 * s2))
    return z, w / w.sum()


def discrete_gaussian_pmf(z: np.ndarray | int, sigma: float) -> np.ndarray:
    """P[Z = z] of N_ℤ(0, σ²) as sampled (σ² rounded up; mass beyond 40σ neglected)."""
    zs, p = _support(float(sigma))
    zz = np.asarray(z, dtype=np.int64)
    idx = zz - zs[0]
    inside = (idx >= 0) & (idx < zs.size)
    return np.where(inside, p[np.clip(idx, 0, zs.size - 1)], 0.0)


def discrete_gaussian_variance(sigma: float) -> float:
    """Var Z of N_ℤ(0, σ²) as sampled (≤ σ², CKS 2020 Prop. 19)."""
    zs, p = _support(float(sigma))
    return float((zs.astype(float) ** 2 * p).sum())


def discrete_gaussian_mae(sigma: float) -> float:
    """E|Z| of N_ℤ(0, σ²) as sampled (≈ σ·√(2/π) for σ ≳ 1)."""
    zs, p = _support(float(sigma))
    return float((np.abs(zs) * p).sum())


def gaussian_interval(sigma: float, confidence: float = 0.95) -> float:
    """Smallest integer k with P[|Z| ≤ k] ≥ confidence (public: data independent)."""
    conf = check_probability("confidence", confidence)
    zs, p = _support(float(sigma))
    mid = zs.size // 2
    cum = p[mid] + 2 * np.cumsum(p[mid + 1 :])
    cum = np.concatenate([[p[mid]], cum])
    return float(int(np.searchsorted(cum, conf - 1e-15)))


def zcdp_rho(sigma: float, l2_sensitivity: float = 1.0) -> float:
    """ρ = Δ₂²/(2σ²) of the (discrete) Gaussian mechanism (CKS 2020 Thm 4; BS 2016 Prop. 1.6).

    Uses the requested σ; the sampler's stored σ² is never smaller, so this bounds the
    shipped mechanism's ρ.
    """
    s = check_positive("sigma", sigma)
    d = check_positive("l2_sensitivity", l2_sensitivity)
    return d * d / (2 * s * s)
