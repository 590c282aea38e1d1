"""MIDE threshold mechanisms with β-FNR (thesis ch. 5, §5.3; appendix A.1.2).

An aggregate threshold query Q(Λ, g, C) returns the predicates λ_i (mutually exclusive:
locations × time windows) whose aggregate g(D_λi) exceeds c_i (eq. 5.1). Every mechanism
here satisfies β-false-negative rate (Def. 5.1): P[λ_i ∉ M(D) | g(D_λi) > c_i] ≤ β for
each predicate, except the naive baseline which does not. All are vectorised over
predicates (one numpy call per step).

With sensitivity Δ (1 for counts: one device is in one location per tick) and
uncertainty width α (in aggregate units), the single-step budget is
ε = Δ·ln(1/(2β))/α, because P[Lap(Δ/ε) < −α] = ½e^(−εα/Δ) = β.

* :func:`naive_lm` — noisy value > c at that ε. No FNR guarantee (the region
  [c, c + α] has none; thesis §5.3.1, Fig. 5.2(i)). Baseline only.
* :func:`tslm` — Threshold-Shift Laplace, Alg. 1: noisy value > c − α.
  FNR ≤ β (Thm 5.4); false positives possible for values in [c − 2α, c] (Def. 5.5).
* :func:`ppwlm` — Progressive Predicate-wise Laplace, Alg. 2: m steps with β/m each,
  ε_j = ε₁ω^(j−1), ω = (ε_m/ε₁)^(1/(m−1)), α_j = Δ·ln(m/(2β))/ε_j. Step j decides
  positive when noisy > c + α_j, eliminates when noisy < c − α_j, else leaves undecided;
  between steps the undecided predicates' noise is relaxed with PrivRelax, so a predicate
  stopped at step j has spent ε_j, not Σε. Returns decided ∪ last-undecided (Thm 5.5).
* :func:`dppwlm` — Data-dependent PPWLM, Alg. 3 + 4: the next ε is chosen from the plan
  (refined by m_f sub-steps) to maximise the min-entropy of the estimated predicate-wise
  ε vector; the estimate of how many undecided predicates stay undecided uses the noisy
  values of the previous step and the closed-form law of the sum of two Laplace
  variables (eq. 5.9 / A.4–A.5, :func:`_sum_laplace_cdf`); β for the step is β·r/m for
  the r plan levels it uses (Thm 5.6). Correction: a step that uses the last plan level
  runs at ε_m exactly, so the final uncertainty width never exceeds α.

Privacy argument (Thm 5.4–5.6). Every noisy value is the true aggregate plus Laplace
noise of scale Δ/ε_j with ε_j ≤ ε_m ≤ ε_max; across steps PrivRelax makes the sequence of
noisy values of a predicate cost its last ε_j (gradual release). Predicates are
mutually exclusive, so by parallel composition (Thm 5.1, 5.3) the whole answer is
ε_m-DP — that is the public, data-independent :attr:`MideResult.epsilon_spent`. The
per-predicate ex-post vector (:attr:`MideResult.ex_post`, Def. 5.3) depends on the data:
publishing it would break the ε_max-DP guarantee, so it goes to the internal ledger only
(:class:`~mechanisms.mide.accounting.PredicateLedger`). Denial depends only on public
parameters (α, β, m, ε_max) and leaks nothing.

Sampler. The noisy values never leave the mechanism — only the comparison bits do — so
the analysis uses continuous Laplace noise (``rng.laplace``), consistent with PrivRelax.
The shipped guarantee is that of the ideal continuous mechanism; floating-point
sampling perturbs each bit's probability by far less than 2⁻⁴⁰ relative, and no noisy
value is exposed to the precision attack of Mironov (2012).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mechanisms.errors import InvalidParameterError, check_positive, check_probability
from mechanisms.mide.entropy import check_priors, min_entropy
from mechanisms.mide.privrelax import privrelax
from mechanisms.noise import resolve_rng

__all__ = [
    "ALGORITHMS",
    "MideResult",
    "decide",
    "dppwlm",
    "naive_lm",
    "plan_epsilons",
    "ppwlm",
    "single_step_epsilon",
    "tslm",
]

#: algorithm names accepted by :func:`decide`.
ALGORITHMS = ("naive", "tslm", "ppwlm", "dppwlm")


@dataclass(frozen=True)
class MideResult:
    """Answer of one aggregate threshold query.

    Attributes:
        positive: bool per predicate — returned as over threshold (the answer).
        denied: True when the needed ε exceeds ε_max (then nothing is returned, nothing
            spent).
        epsilon_spent: worst-case (ex-ante) ε charged for the query; public.
        algorithm: the mechanism's name.
        beta: the FNR bound requested.
        alpha: the uncertainty width requested (aggregate units).
        ex_post: **INTERNAL — never publish.** Per-predicate ex-post ε (Def. 5.3); it is
            data-dependent and releasing it breaks ε_max-DP. For the internal ledger only.
        steps: steps actually run (1 for single-step mechanisms).
    """

    positive: np.ndarray
    denied: bool
    epsilon_spent: float
    algorithm: str
    beta: float
    alpha: float
    ex_post: np.ndarray = field(repr=False)
    steps: int = 1

    @property
    def ex_post_dp(self) -> float:
        """INTERNAL: ex-post DP cost max_i ex_post[i] (Thm 5.3). Never publish."""
        return float(self.ex_post.max()) if self.ex_post.size else 0.0

    def public(self) -> dict[str, Any]:
        """What may leave the system: the answer and data-independent parameters.

        Contains no ex-post ε, no noisy values, no true counts.
        """
        return {
            "algorithm": self.algorithm,
            "beta": self.beta,
            "alpha": self.alpha,
            "denied": self.denied,
            "epsilon": self.epsilon_spent,
            "positive": [int(i) for i in np.flatnonzero(self.positive)],
        }


def _numeric(name: str, value: Any) -> np.ndarray:
    """``value`` as a float array, or InvalidParameterError naming its type/dtype."""
    try:
        arr = np.asarray(value)
        if arr.dtype.kind in "biufO":  # object: numbers stored as Python objects are fine
            return arr.astype(float, copy=False)
    except (TypeError, ValueError):
        pass
    if isinstance(value, np.ndarray):
        what = f"an array of dtype {value.dtype} and shape {value.shape}"
    else:
        what = f"a {type(value).__name__}"
    raise InvalidParameterError(f"{name} must be real numbers, not {what}")


def _check_finite(name: str, arr: np.ndarray) -> None:
    """InvalidParameterError naming the first non-finite entry of ``arr``, if any."""
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        i = np.unravel_index(int(bad[0]), arr.shape) if arr.ndim else ()
        raise InvalidParameterError(
            f"{name} must be finite numbers, not {float(arr[i])!r} at index "
            f"{tuple(int(k) for k in i)} ({bad.size} non-finite)"
        )


def _broadcast(name: str, value: Any, like: str, shape: tuple[int, ...]) -> np.ndarray:
    """``value`` (numeric, finite) broadcast to ``shape`` (the shape of ``like``)."""
    arr = _numeric(name, value)
    try:
        out = np.broadcast_to(arr, shape)
    except ValueError:
        raise InvalidParameterError(
            f"{name} must be a scalar or have the shape {shape} of {like}, not shape "
            f"{arr.shape}"
        ) from None
    _check_finite(name, out)
    return out


def _check_inputs(
    values: np.ndarray, thresholds: np.ndarray, beta: float, alpha: float,
    epsilon_max: float, sensitivity: float,
) -> tuple[np.ndarray, np.ndarray, float, float, float, float]:
    raw = _numeric("counts", values)
    _check_finite("counts", raw)
    c = _broadcast("thresholds", thresholds, "counts", raw.shape).ravel()
    g = raw.ravel()
    b = check_probability("beta", beta)
    if b >= 0.5:
        raise InvalidParameterError(f"beta must be in (0, 0.5), not {beta!r}")
    a = check_positive("alpha", alpha)
    emax = check_positive("epsilon_max", epsilon_max)
    d = check_positive("sensitivity", sensitivity)
    return g, c, b, a, emax, d


def single_step_epsilon(beta: float, alpha: float, sensitivity: float = 1.0) -> float:
    """ε = Δ·ln(1/(2β))/α: the budget for β-FNR at uncertainty width α (Alg. 1 line 2)."""
    return sensitivity * math.log(1.0 / (2.0 * beta)) / alpha


def plan_epsilons(epsilon_1: float, epsilon_m: float, steps: int) -> np.ndarray:
    """Geometric plan ε_j = ε₁·ω^(j−1), ω = (ε_m/ε₁)^(1/(m−1)) (Alg. 2 line 3, Alg. 3 line 3)."""
    if steps == 1:
        return np.array([epsilon_m])
    return epsilon_1 * (epsilon_m / epsilon_1) ** (np.arange(steps) / (steps - 1))


def _denied(n: int, algorithm: str, beta: float, alpha: float) -> MideResult:
    return MideResult(np.zeros(n, dtype=bool), True, 0.0, algorithm, beta, alpha,
                      np.zeros(n), 0)


def _single_step(
    name: str, shifted: bool, values: np.ndarray, thresholds: np.ndarray, beta: float,
    alpha: float, epsilon_max: float, sensitivity: float, rng: np.random.Generator | None,
) -> MideResult:
    g, c, b, a, emax, d = _check_inputs(values, thresholds, beta, alpha, epsilon_max,
                                        sensitivity)
    eps = single_step_epsilon(b, a, d)
    if eps > emax:
        return _denied(g.size, name, b, a)
    noisy = g + resolve_rng(rng).laplace(0.0, d / eps, g.size)
    cut = c - a if shifted else c
    return MideResult(noisy > cut, False, eps, name, b, a, np.full(g.size, eps))


def naive_lm(
    values: np.ndarray, thresholds: np.ndarray, *, beta: float, alpha: float,
    epsilon_max: float, sensitivity: float = 1.0, rng: np.random.Generator | None = None,
) -> MideResult:
    """Naive Laplace baseline: return λ iff g + Lap(Δ/ε) > c, ε as TSLM. No β-FNR."""
    return _single_step("naive", False, values, thresholds, beta, alpha, epsilon_max,
                        sensitivity, rng)


def tslm(
    values: np.ndarray, thresholds: np.ndarray, *, beta: float, alpha: float,
    epsilon_max: float, sensitivity: float = 1.0, rng: np.random.Generator | None = None,
) -> MideResult:
    """Threshold-Shift Laplace Mechanism (thesis Alg. 1, Thm 5.4).

    Returns λ iff g + Lap(Δ/ε) > c − α with ε = Δ·ln(1/(2β))/α; denied if ε > ε_max.
    FNR ≤ β: P[g + η ≤ c − α | g > c] ≤ P[η < −α] = β.
    """
    return _single_step("tslm", True, values, thresholds, beta, alpha, epsilon_max,
                        sensitivity, rng)


def _multi_setup(
    values: np.ndarray, thresholds: np.ndarray, beta: float, alpha: float,
    epsilon_max: float, sensitivity: float, epsilon_1: float, steps: int,
) -> tuple[np.ndarray, np.ndarray, float, float, float, float, float, int]:
    g, c, b, a, emax, d = _check_inputs(values, thresholds, beta, alpha, epsilon_max,
                                        sensitivity)
    if not isinstance(steps, (int, np.integer)) or steps < 1:
        raise InvalidParameterError(f"steps must be an integer >= 1, not {steps!r}")
    e1 = check_positive("epsilon_1", epsilon_1)
    eps_m = single_step_epsilon(b / steps, a, d)
    if steps > 1 and e1 >= eps_m:
        raise InvalidParameterError(
            f"epsilon_1 must be below the final ε_m={eps_m:.6g} of the plan, not {epsilon_1!r}"
        )
    return g, c, b, a, emax, d, e1, int(steps)


def ppwlm(
    values: np.ndarray, thresholds: np.ndarray, *, beta: float, alpha: float,
    epsilon_max: float, sensitivity: float = 1.0, epsilon_1: float = 1e-5, steps: int = 4,
    rng: np.random.Generator | None = None,
) -> MideResult:
    """Progressive Predicate-wise Laplace Mechanism (thesis Alg. 2, Thm 5.5).

    Args:
        values: true aggregates g(D_λ) per predicate.
        thresholds: c per predicate (broadcast).
        beta: FNR bound β ∈ (0, 0.5).
        alpha: uncertainty width of the last step (aggregate units).
        epsilon_max: the query is denied if ε_m > ε_max.
        sensitivity: Δ of the aggregate.
        epsilon_1: first-step ε (thesis default 10⁻⁵).
        steps: m (thesis default 4).
        rng: generator; None → the project's CSPRNG-seeded generator.

    Returns:
        The answer; ``epsilon_spent`` = ε_m, ``ex_post[i]`` = ε of the step where λ_i
        stopped (internal).
    """
    g, c, b, a, emax, d, e1, m = _multi_setup(values, thresholds, beta, alpha, epsilon_max,
                                              sensitivity, epsilon_1, steps)
    eps_plan = plan_epsilons(e1, single_step_epsilon(b / m, a, d), m)
    eps_m = float(eps_plan[-1])
    if eps_m > emax:
        return _denied(g.size, "ppwlm", b, a)
    gen = resolve_rng(rng)
    shift = d * math.log(m / (2.0 * b))  # α_j·ε_j
    eta = gen.laplace(0.0, d / eps_plan[0], g.size)
    ex_post = np.full(g.size, eps_plan[0])
    alpha_j = shift / eps_plan[0]
    noisy = g + eta
    decided = noisy > c + alpha_j
    und = np.flatnonzero(~decided & (noisy > c - alpha_j))
    step = 1
    for j in range(1, m):
        if und.size == 0:
            break
        step = j + 1
        eta_u = privrelax(eta[und], eps_plan[j - 1], eps_plan[j], sensitivity=d, rng=gen)
        eta[und] = eta_u
        ex_post[und] = eps_plan[j]
        alpha_j = shift / eps_plan[j]
        noisy_u = g[und] + eta_u
        pos = noisy_u > c[und] + alpha_j
        decided[und[pos]] = True
        und = und[~pos & (noisy_u > c[und] - alpha_j)]
    positive = decided.copy()
    positive[und] = True  # last undecided are returned (Alg. 2 line 15)
    return MideResult(positive, False, eps_m, "ppwlm", b, a, ex_post, step)


def _laplace_cdf(x: np.ndarray, rate: float) -> np.ndarray:
    return np.where(x < 0, 0.5 * np.exp(rate * np.minimum(x, 0)),
                    1.0 - 0.5 * np.exp(-rate * np.maximum(x, 0)))


def _sum_laplace_cdf(x: np.ndarray, rate_a: float, rate_b: float) -> np.ndarray:
    """CDF of Lap(1/a) + Lap(1/b), independent (closed form of eq. 5.9 / A.4).

    For a ≠ b the characteristic function a²b²/((a²+t²)(b²+t²)) splits into
    b²/(b²−a²)·Lap_a − a²/(b²−a²)·Lap_b, so F = (b²F_a − a²F_b)/(b² − a²). For a = b the
    density is (a/4)(1 + a|x|)e^(−a|x|), tail ½e^(−ax)(1 + ax/2).
    """
    a, b = float(rate_a), float(rate_b)
    x = np.asarray(x, dtype=float)
    if abs(b - a) <= 1e-6 * (a + b):
        ax = a * np.abs(x)
        tail = 0.5 * np.exp(-ax) * (1.0 + ax / 2.0)
        return np.where(x < 0, tail, 1.0 - tail)
    return (b * b * _laplace_cdf(x, a) - a * a * _laplace_cdf(x, b)) / (b * b - a * a)


def _exp_integral(e1: np.ndarray, k: np.ndarray, width: np.ndarray) -> np.ndarray:
    """∫ e^(E(x)) dx over a piece of ``width`` where E is linear with slope k, E(x1) = e1.

    (e^(E2) − e^(E1))/k evaluated without overflow (E ≤ 0 on the piece).
    """
    e2 = e1 + k * width
    safe_k = np.where(k == 0, 1.0, k)
    pos = np.exp(np.minimum(e2, 0.0)) * (-np.expm1(-np.abs(k) * width)) / np.abs(safe_k)
    neg = np.exp(np.minimum(e1, 0.0)) * (-np.expm1(-np.abs(k) * width)) / np.abs(safe_k)
    return np.where(k == 0, np.exp(np.minimum(e1, 0.0)) * width, np.where(k > 0, pos, neg))


def _truncated_joint_cdf(t: np.ndarray, mu: np.ndarray, r1: float, r2: float, lo: np.ndarray,
                         hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(P[X + Y ≤ t, X ∈ [lo, hi]], P[X ∈ [lo, hi]]), X ~ Lap(μ, 1/r1), Y ~ Lap(0, 1/r2).

    Closed form: [lo, hi] is cut at μ and t into three pieces on which both densities are
    single exponentials.
    """
    a, b = np.minimum(mu, t), np.maximum(mu, t)
    pts = [lo, np.clip(a, lo, hi), np.clip(b, lo, hi), hi]
    joint = np.zeros_like(mu)
    mass = np.zeros_like(mu)
    for x1, x2 in zip(pts[:-1], pts[1:], strict=True):
        width = np.maximum(x2 - x1, 0.0)
        mid = 0.5 * (x1 + x2)
        s_x = np.where(mid <= mu, 1.0, -1.0)
        s_y = np.where(mid <= t, 1.0, -1.0)
        ex1 = s_x * r1 * (x1 - mu)
        ex2 = s_x * r1 * (x2 - mu)
        piece_mass = 0.5 * s_x * (np.expm1(np.minimum(ex2, 0.0)) - np.expm1(np.minimum(ex1, 0.0)))
        prod = 0.25 * r1 * _exp_integral(ex1 + s_y * r2 * (x1 - t), s_x * r1 + s_y * r2, width)
        # x ≤ t: F_Y(t − x) = 1 − ½e^(−r2(t−x)); x ≥ t: F_Y(t − x) = ½e^(r2(t−x))
        joint += np.where(width > 0, np.where(s_y > 0, piece_mass - prod, prod), 0.0)
        mass += np.where(width > 0, piece_mass, 0.0)
    return joint, mass


def _p_undecided(
    noisy_u: np.ndarray, c_u: np.ndarray, alpha_c: float, rate_prev: float, rate_c: float,
    lo_u: np.ndarray | None, hi_u: np.ndarray | None,
) -> np.ndarray:
    """P(next noisy value ∈ [c − α, c + α]) per undecided predicate (eq. 5.9).

    Without a range: the true value is taken ~ Laplace(G, 1/ε_prev) (thesis A.1.2) and
    the closed form :func:`_sum_laplace_cdf` applies. With a public range [lo, hi] the
    same law is truncated to it (closed form, :func:`_truncated_joint_cdf`) — when ε_prev
    is tiny (ε₁ = 10⁻⁵) G says nothing and the untruncated law spreads over ±10⁵.
    """
    if lo_u is None or hi_u is None:
        return (_sum_laplace_cdf(c_u + alpha_c - noisy_u, rate_prev, rate_c)
                - _sum_laplace_cdf(c_u - alpha_c - noisy_u, rate_prev, rate_c))
    up, mass = _truncated_joint_cdf(c_u + alpha_c, noisy_u, rate_prev, rate_c, lo_u, hi_u)
    down, _ = _truncated_joint_cdf(c_u - alpha_c, noisy_u, rate_prev, rate_c, lo_u, hi_u)
    x0 = np.clip(noisy_u, lo_u, hi_u)  # no representable mass: the nearest end of the range
    point = (_laplace_cdf(c_u + alpha_c - x0, rate_c) - _laplace_cdf(c_u - alpha_c - x0, rate_c))
    ok = mass > 1e-250
    return np.clip(np.where(ok, (up - down) / np.where(ok, mass, 1.0), point), 0.0, 1.0)


def dppwlm(
    values: np.ndarray, thresholds: np.ndarray, *, beta: float, alpha: float,
    epsilon_max: float, sensitivity: float = 1.0, epsilon_1: float = 1e-5, steps: int = 4,
    fine_steps: int = 3, priors: np.ndarray | None = None,
    value_range: tuple[np.ndarray | float, np.ndarray | float] | None = None,
    rng: np.random.Generator | None = None,
) -> MideResult:
    """Data-Dependent PPWLM (thesis Alg. 3 + Alg. 4, Thm 5.6).

    Args:
        values: true aggregates per predicate.
        thresholds: c per predicate (broadcast).
        beta: FNR bound.
        alpha: uncertainty width at ε_m.
        epsilon_max: denial bound on ε_m.
        sensitivity: Δ of the aggregate.
        epsilon_1: first-step ε.
        steps: m, the number of plan levels.
        fine_steps: m_f, sub-steps between plan levels searched by Alg. 4.
        priors: adversary prior weights for the min-entropy objective (Lemma A.1).
        value_range: optional *public* bounds (lo, hi) on each true aggregate (e.g.
            0 and a physical maximum from the capacity). None: the thesis' estimate
            (eq. 5.9, unbounded); given: the estimate's law of the true value is
            truncated to the range, which keeps it informative when ε₁ is tiny. Must not
            depend on the data (it is used like a parameter).
        rng: generator; None → the project's CSPRNG-seeded generator.

    Returns:
        The answer; ``epsilon_spent`` = ε_m (worst case), ``ex_post`` internal.
    """
    g, c, b, a, emax, d, e1, m = _multi_setup(values, thresholds, beta, alpha, epsilon_max,
                                              sensitivity, epsilon_1, steps)
    if not isinstance(fine_steps, (int, np.integer)) or fine_steps < 1:
        raise InvalidParameterError(f"fine_steps must be an integer >= 1, not {fine_steps!r}")
    lo_all = hi_all = None
    if value_range is not None:
        if not isinstance(value_range, (tuple, list, np.ndarray)) or len(value_range) != 2:
            raise InvalidParameterError(
                f"value_range must be a pair (lo, hi), not {type(value_range).__name__}")
        lo_all = _broadcast("value_range lo", value_range[0], "counts", g.shape)
        hi_all = _broadcast("value_range hi", value_range[1], "counts", g.shape)
        if not np.all(hi_all > lo_all):
            i = int(np.flatnonzero(~(hi_all > lo_all))[0])
            lo_i, hi_i = float(lo_all[i]), float(hi_all[i])
            raise InvalidParameterError(
                f"value_range must have hi > lo, not lo={lo_i!r} >= hi={hi_i!r} at predicate {i}")
    if priors is not None:
        priors = check_priors(priors, g.size)
    plan = [float(e) for e in plan_epsilons(e1, single_step_epsilon(b / m, a, d), m)]
    eps_m = plan[-1]
    if eps_m > emax:
        return _denied(g.size, "dppwlm", b, a)
    gen = resolve_rng(rng)
    # step 1 at ε₁ with β/m
    eps_prev = plan[0]
    alpha_1 = d * math.log(m / (2.0 * b)) / eps_prev
    eta = gen.laplace(0.0, d / eps_prev, g.size)
    noisy = g + eta
    decided = noisy > c + alpha_1
    und = np.flatnonzero(~decided & (noisy > c - alpha_1))
    ex_post = np.full(g.size, eps_prev)
    estimate = np.full(g.size, eps_prev)  # E of Alg. 3: undecided temporarily at ε_m
    estimate[und] = eps_m
    remaining = plan  # B: remaining[0] is the current level
    step = 1
    while und.size and len(remaining) > 1:
        step += 1
        bounds = None if lo_all is None or hi_all is None else (lo_all[und], hi_all[und])
        eps_next, levels = _next_step(estimate, noisy[und], c[und], und, remaining, eps_prev,
                                      b, m, fine_steps, d, priors, bounds)
        beta_j = b * levels / m
        remaining = [eps_next] + remaining[levels + 1:]
        eta_u = privrelax(eta[und], eps_prev, eps_next, sensitivity=d, rng=gen)
        eta[und] = eta_u
        ex_post[und] = eps_next
        alpha_j = d * math.log(1.0 / (2.0 * beta_j)) / eps_next
        noisy_u = g[und] + eta_u
        noisy[und] = noisy_u
        pos = noisy_u > c[und] + alpha_j
        decided[und[pos]] = True
        keep = ~pos & (noisy_u > c[und] - alpha_j)
        estimate[und[~keep]] = eps_next
        und = und[keep]
        eps_prev = eps_next
    positive = decided.copy()
    positive[und] = True
    return MideResult(positive, False, eps_m, "dppwlm", b, a, ex_post, step)


def _next_step(
    estimate: np.ndarray, noisy_u: np.ndarray, c_u: np.ndarray, und: np.ndarray,
    remaining: list[float], eps_prev: float, beta: float, m: int, fine_steps: int,
    sensitivity: float, priors: np.ndarray | None,
    bounds: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[float, int]:
    """Alg. 4 NEXTSTEPPARAMS: the ε for the next step and the plan levels it uses.

    Candidates lie between consecutive remaining plan levels, m_f per interval; using
    the interval ending at level r consumes r levels (β_j = β·r/m). A candidate that
    consumes the last level must be ε_m itself (keeps the final width ≤ α). For each
    candidate the expected number of predicates still undecided,
    n_u = Σ P(noisy′ ∈ [c − α_j, c + α_j]) with noisy′ ~ G + Lap + Lap (eq. 5.9), gives
    the estimated ε vector E′ whose min-entropy is maximised (ties → larger ε).
    Uses only noisy values already drawn: post-processing, no extra budget.
    """
    best: tuple[float, float, int] | None = None  # (entropy, eps, levels)
    last = len(remaining) - 1
    rate_prev = eps_prev / sensitivity
    n_und = und.size
    for r in range(1, last + 1):
        lo_e, hi_e = remaining[r - 1], remaining[r]
        subs = [fine_steps] if r == last else range(1, fine_steps + 1)
        for s in subs:
            eps_c = lo_e + s * (hi_e - lo_e) / fine_steps
            beta_j = beta * r / m
            alpha_c = sensitivity * math.log(1.0 / (2.0 * beta_j)) / eps_c
            rate_c = eps_c / sensitivity
            p_und = _p_undecided(noisy_u, c_u, alpha_c, rate_prev, rate_c,
                                 *(bounds if bounds is not None else (None, None)))
            n_u = int(round(float(np.clip(p_und, 0.0, 1.0).sum())))
            est = estimate.copy()
            est[und[: n_und - n_u]] = eps_c  # which ones is immaterial: equal intervals
            ent = min_entropy(est, priors)
            if best is None or ent >= best[0]:
                best = (ent, eps_c, r)
    assert_best = best  # for type checkers; loop always runs (last >= 1)
    if assert_best is None:  # pragma: no cover
        raise InvalidParameterError("no remaining plan level")
    return assert_best[1], assert_best[2]


def decide(
    counts: np.ndarray,
    thresholds: np.ndarray,
    *,
    algorithm: str,
    beta: float,
    alpha: float,
    epsilon_max: float,
    rng: np.random.Generator | None = None,
    **params: Any,
) -> MideResult:
    """Answer an aggregate threshold query with the named MIDE mechanism (stable API).

    Args:
        counts: true aggregate per predicate (counts, or sums with ``sensitivity=``).
        thresholds: threshold per predicate (or a scalar).
        algorithm: "tslm" | "ppwlm" | "dppwlm" | "naive" (baseline, no β-FNR).
        beta: FNR bound β ∈ (0, 0.5).
        alpha: uncertainty width α > 0 in aggregate units.
        epsilon_max: deny when the (worst-case) ε needed exceeds this.
        rng: generator; None → the project's CSPRNG-seeded generator.
        **params: ``sensitivity`` (all), ``epsilon_1``/``steps`` (ppwlm, dppwlm),
            ``fine_steps``/``priors``/``value_range`` (dppwlm).

    Returns:
        A :class:`MideResult`; publish only :meth:`MideResult.public`.

    Raises:
        InvalidParameterError: unknown algorithm or parameter, or a bad value.
    """
    funcs = {"naive": naive_lm, "tslm": tslm, "ppwlm": ppwlm, "dppwlm": dppwlm}
    allowed = {
        "naive": {"sensitivity"},
        "tslm": {"sensitivity"},
        "ppwlm": {"sensitivity", "epsilon_1", "steps"},
        "dppwlm": {"sensitivity", "epsilon_1", "steps", "fine_steps", "priors", "value_range"},
    }
    if algorithm not in funcs:
        raise InvalidParameterError(
            f"algorithm must be one of {', '.join(ALGORITHMS)}, not {algorithm!r}"
        )
    unknown = set(params) - allowed[algorithm]
    if unknown:
        raise InvalidParameterError(
            f"parameters for {algorithm} must be among {sorted(allowed[algorithm])}, "
            f"not {sorted(unknown)!r}"
        )
    return funcs[algorithm](counts, thresholds, beta=beta, alpha=alpha,
                            epsilon_max=epsilon_max, rng=rng, **params)
