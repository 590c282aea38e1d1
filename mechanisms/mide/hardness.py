"""Why no polynomial exact algorithm for γ(Θ) is claimed: subset-sum reductions.

Issue 4 asks for an exact, polynomial algorithm for the min-entropy metric γ(Θ)
(thesis Def. 5.4, eq. 5.8) and docs/MECHANISMS.md suggests one from the nesting of the
posterior intervals (l_i falls and u_i rises with ε_i). This module shows that nesting
cannot be enough (Theorem 1, a proof: exact γ on nested boxes is weakly NP-hard), and
that the ε-shaped boxes carry the same combinatorics (Theorem 2, a proof whose
hypotheses are checked per instance by an exact-arithmetic certificate).

Notation as in :mod:`mechanisms.mide.entropy`: f(p) = −p ln p (concave), box
l ≤ p ≤ u, Σ p = 1, slack s = 1 − Σ l, width Δ_i = u_i − l_i, y_i = p_i − l_i,
g_i(y) = f(l_i + y) − f(l_i), chord slope S(l, u) = (f(u) − f(l))/(u − l) and
σ_i = S(l_i, u_i). For a concave f, S decreases in both end points.

**Theorem 1 (nested boxes; proof).** Deciding "γ(l, u) ≤ T" for nested intervals is
NP-hard (weakly), by reduction from SUBSET-SUM (integers a_1..a_n, target τ).

*Construction* (:func:`nested_subset_sum_instance`). Fix m = 1/(8(n+1)) and
σ = f′(m) = −ln m − 1, so e^(−σ) = e·m. For l ∈ (0, m): S(l, ·) is strictly decreasing,
S(l, m) > f′(m) = σ and S(l, e·m) < S(0, e·m) = −ln(e·m) = σ, so exactly one
u(l) ∈ (m, e·m) has S(l, u(l)) = σ. As S decreases in both end points, u(l) is strictly
decreasing: l < l′ ⇒ [l′, u(l′)] ⊂ [l, u(l)] (nested), and W(l) = u(l) − l falls
continuously from e·m to 0. With ω = 0.9·e·m / max a, number item i gets the interval
of width a_i·ω. A container item 𝔅 gets l_𝔅 = ½ min l_i and u_𝔅 = 1 − Σ l_i − τω;
u_𝔅 > 0.56 > e·m, so 𝔅 contains every other interval (nesting holds), and
σ_𝔅 ≤ S(0, u_𝔅) = −ln u_𝔅 < σ. The slack left once 𝔅 is full is exactly τω.

*Proof.* g_i is strictly concave with g_i(0) = 0, so g_i(y) ≥ σ_i·y on [0, Δ_i] with
equality only at y ∈ {0, Δ_i}. Hence for every feasible p

    Σ f(p) − Σ f(l) = Σ g_i(y_i) ≥ σ_𝔅 y_𝔅 + σ(s − y_𝔅) ≥ σ_𝔅 Δ_𝔅 + σ·τω =: T − Σ f(l)

(σ_𝔅 < σ, y_𝔅 ≤ Δ_𝔅). Equality needs y_𝔅 = Δ_𝔅 and every number item at 0 or at its
full width, i.e. a subset of the a_i summing to τ: γ = T iff the instance is a
YES-instance. For a NO-instance take a minimising vertex (Lemma 1 of
:mod:`~mechanisms.mide.entropy`: at most one free coordinate). If 𝔅 is free, the
numbers at their upper bound can only overshoot τω (undershooting needs y_𝔅 > Δ_𝔅),
by a non-zero multiple of ω, so y_𝔅 ≤ Δ_𝔅 − ω and the excess is ≥ (σ − σ_𝔅)·ω; if 𝔅 is
at its lower bound the excess is ≥ (σ − σ_𝔅)·Δ_𝔅 ≥ (σ − σ_𝔅)·ω; if 𝔅 is full with every
number at a bound, the numbers sum to τ (impossible); if 𝔅 is full and a number item
φ is free, it takes x = (τ − Σ_U a)·ω ∉ {0, Δ_φ}, a multiple of ω, so x ∈ [ω, Δ_φ − ω]
(impossible when a_φ = 1) and the excess is ≥ min(g_φ(ω) − σω,
g_φ(Δ_φ − ω) − σ(Δ_φ − ω)) > 0 (a concave function vanishing at both ends is smallest
at the ends of a sub-interval). The minimum of these bounds is the certified
``gap`` (≥ ω²/(2e·m) ≈ 1.1·m/(max a)², from |f″| ≥ 1/(e·m)): YES ⇒ γ = T,
NO ⇒ γ ≥ T + gap. For a Karp reduction the instance must be finite: compute rationals
l̃, ũ within δ = gap/(C·n·log n) of l, u (O(L + log n) bits for weights of bit length
L); the feasible set moves by O(nδ) and f is O(log n)-Lipschitz on p ≥ l_𝔅, so
|γ(l̃, ũ) − γ(l, u)| < gap/3 (nesting is kept for small δ), and "γ ≤ T + gap/2" holds
iff YES. So exact γ on nested boxes is NP-hard; since the gap is 2^(−Θ(L)) this is
weak NP-hardness and says nothing against approximating γ to an additive 1/poly(n). ∎

Theorem 1's boxes are not posterior boxes: for any Θ and prior, eq. 5.7 / A.2 give
Σ l · Σ u = 1, while here Σ u ≈ 1 and Σ l < 1/8. So it shows that *nesting* is not
enough; for Θ itself the question is whether the one-parameter family
l_i = e^(−ε_i)/Z₁, u_i = e^(ε_i)/Z₂ (uniform priors) is easier. The prefix hint
already fails there (``test_upper_bound_set_is_not_a_prefix_by_epsilon``).

**Theorem 2 (uniform-prior Θ; a proof with a per-instance certificate).** Let
a_1..a_n be positive integers, 2 ≤ K < n/2, τ an integer, η > 0, ε₀ > 0 and
ε_i = ε₀ + t_i with t_i = η·a_i (the boxes of eq. 5.7 with uniform priors). If the
hypotheses (H1)–(H6) below hold and E_yes < G_no (both explicit functions of
n, K, τ, a, η, ε₀ defined below), then

    a K-subset of the a_i sums to τ  ⇒  γ(Θ) − B₁ ≤ E_yes,
    no K-subset sums to τ            ⇒  γ(Θ) − B₁ ≥ G_no,

so "γ(Θ) ≤ B₁ + (E_yes + G_no)/2" decides K-SUBSET-SUM (NP-hard for K < n/2: pad with
items of weight τ + 1).

*Notation.* Z₁ = Σ e^(ε_j), Z₂ = Σ e^(−ε_j) are fixed by the instance, and
l₀ = e^(−ε₀)/Z₁, u₀ = e^(ε₀)/Z₂, so l_i = l₀e^(−t_i), u_i = u₀e^(t_i). For real t put
L(t) = l₀e^(−t), U(t) = u₀e^t, W(t) = U − L, C(t) = f(U) − f(L); then W′ = U + L,
W″ = W > 0, C′ = f′(U)U + f′(L)L and C″ = q(U) − q(L) with q(p) = p(−ln p − 2)
(concave, maximal at p = e^(−3)). Write W₀, W′₀, C₀, C′₀ for the values at t = 0,
r = C′₀/W′₀, ψ = C″ − r·W″, T = η·max a, s = 1 − Σ l_i, and

    R₀ = s − K·W₀ − ητ·W′₀,          B₁ = Σ f(l_i) + K·C₀ + ητ·C′₀.

ε₀ is fitted so that R₀ ≈ 0. Taylor's formula with the integral remainder gives, for
0 ≤ t ≤ T, C(t) = C₀ + tC′₀ + ∫₀ᵗ(t − v)C″(v)dv and the same for W with W″; since the
kernel (t − v) ≥ 0 is shared, ρ_C(t) − r·ρ_W(t) = ∫₀ᵗ(t − v)ψ(v)dv lies in
[½t²·ψ_min, ½t²·ψ_max], and 0 ≤ ρ_W(t) ≤ ½t²·W(T). Bounds on [0, T] used (all evaluated
from the end points and q's peak, exact by concavity and monotonicity):
ψ ≥ min q(U) − max q(L) − max(r·W₀, r·W(T)) ≥ −ψ₋ with ψ₋ the positive part of
minus that bound, and C″ ≤ max q(U) − min q(L) =: C″₊. Let A_K = sum of the K largest
a_i², A_Y = min(A_K, τ·max a), S_K = sum of the K largest a_i, Q_K = ½η²A_K·W(T),
Q_Y = ½η²A_Y·W(T).

*Vertices (Lemma 1 of :mod:`~mechanisms.mide.entropy`).* γ is attained at a vertex:
a set U at the upper bound, one item φ ∉ U holding x = s − Σ_U W(t_i) ∈ [0, W(t_φ)],
the rest at the lower bound (a vertex with every coordinate at a bound is the case
x = 0 with any φ at its lower bound; U = all items is excluded by (H1)). Its cost is
Σ f(l) + Σ_U C(t_i) + g_φ(x), g_φ(x) = f(l_φ + x) − f(l_φ) concave, g_φ(0) = 0,
g_φ(W(t_φ)) = C(t_φ). (:func:`~mechanisms.mide.entropy.posterior_bounds` also trims u
to 1 − Σ_{j≠i} l_j: the same feasible set, the same γ.)

*Hypotheses* (checked by the builder): (H1) s < (K+1)·W₀; (H2) s > (K−1)·W(T);
(H3) R₀ < η·W′₀; (H4) Q_K − R₀ < η·W′₀; (H5) x_lo := R₀ + ηW′₀ − Q_K > 0,
y_lo := ηW′₀ − R₀ > 0 and y_hi := −R₀ + η(S_K − τ)W′₀ + Q_K < W₀; (H6) R₀ < W₀ and
Q_Y − R₀ < W₀.

*Cardinality.* W is increasing, so W₀ < W(t_i) ≤ W(T). If |U| ≥ K + 1, Σ_U W > (K+1)W₀
> s by (H1): x < 0. If |U| ≤ K − 2, x ≥ s − (K−2)W(T) > W(T) ≥ W(t_φ) by (H2). Only
|U| ∈ {K, K − 1} host a vertex.

*|U| = K, S = Σ_U a.* Expanding, x = R₀ + η(τ − S)W′₀ − Σ_U ρ_W(t_i) and, eliminating
η(S − τ)C′₀ = r·η(S − τ)W′₀,

    cost − B₁ = h_φ(x) + r·R₀ + Σ_U [ρ_C − rρ_W](t_i),   h_φ(x) = g_φ(x) − r·x,

with Σ_U [ρ_C − rρ_W] ≥ −½η²A_K·ψ₋. If S ≥ τ + 1 then x ≤ R₀ − ηW′₀ < 0 by (H3):
infeasible. If S ≤ τ − 1 (NO-instances: S ≠ τ) then x ∈ [x_lo, W(t_φ)]; h_φ is concave,
so h_φ(x) ≥ min(h_φ(x_lo), h_φ(W(t_φ))). ∂/∂l [f(l + x) − f(l)] = f′(l + x) − f′(l) < 0
and l_φ < l₀ give h_φ(x_lo) ≥ f(l₀ + x_lo) − f(l₀) − r·x_lo; and h_φ(W(t_φ)) =
C(t_φ) − rW(t_φ) = C₀ − rW₀ + t_φ(C′₀ − rW′₀) + ∫(t_φ − v)ψ ≥ C₀ − rW₀ − ½T²ψ₋ (the
linear term vanishes by the choice of r).

*|U| = K − 1.* Put U⁺ = U ∪ {φ}, S⁺ = Σ_{U⁺} a, y = W(t_φ) − x ∈ [0, W(t_φ)]. Then
y = −R₀ + η(S⁺ − τ)W′₀ + Σ_{U⁺} ρ_W and, as above,

    cost − B₁ = m_φ(y) + r·R₀ + Σ_{U⁺} [ρ_C − rρ_W],   m_φ(y) = f(u_φ − y) − f(u_φ) + r·y,

m_φ concave. If S⁺ ≤ τ − 1, y ≤ −R₀ − ηW′₀ + Q_K < 0 by (H4): infeasible. If
S⁺ ≥ τ + 1 (possible only when S_K ≥ τ + 1), y ∈ [y_lo, y_hi] ⊂ (0, W₀) by (H5), so
m_φ(y) ≥ min(m_φ(y_lo), m_φ(y_hi)), and ∂/∂u [f(u − y) − f(u)] > 0 with u_φ > u₀ gives
m_φ(y) ≥ f(u₀ − y) − f(u₀) + r·y at both ends.

*NO bound.* Hence every vertex of a NO-instance costs at least B₁ + G_no with

    G_no = min(f(l₀ + x_lo) − f(l₀) − r·x_lo,  C₀ − rW₀ − ½T²ψ₋,
               [if S_K ≥ τ + 1] f(u₀ − y_lo) − f(u₀) + r·y_lo,
               [if S_K ≥ τ + 1] f(u₀ − y_hi) − f(u₀) + r·y_hi)
           + r·R₀ − ½η²A_K·ψ₋.

*YES bound.* Let U be a witness (|U| = K, Σ_U a = τ, so Σ_U a² ≤ A_Y). Then
Σ_U C(t_i) = K·C₀ + ητC′₀ + Σρ_C ≤ B₁ − Σ f(l) + ½η²A_Y·max(C″₊, 0) and
x = R₀ − Σρ_W ∈ [R₀ − Q_Y, R₀]. If x ≥ 0, (U, φ ∉ U, x) is a vertex (x ≤ R₀ < W₀ by
(H6)) and g_φ(x) ≤ g_φ′(0)·x = f′(l_φ)·x ≤ max(f′(L(T)), 0)·max(R₀, 0). If x < 0, take
φ ∈ U, U′ = U ∖ {φ}: x′ = W(t_φ) + x ∈ [0, W(t_φ)] by (H6) and the cost is
Σ_U C + g_φ(W(t_φ) + x) − g_φ(W(t_φ)) ≤ Σ_U C + f′(u_φ)·x ≤ Σ_U C + max(−f′(U(T)), 0)·
(Q_Y − R₀). So

    E_yes = ½η²A_Y·max(C″₊, 0) + max(f′(L(T)), 0)·max(R₀, 0)
            + max(−f′(U(T)), 0)·max(Q_Y − R₀, 0).                                   ∎

*The certificate* (:func:`epsilon_subset_sum_instance`, field ``certified``). η is a
power of two; ε₀ solves R₀ = 0, a quadratic in v = e^(2ε₀) (``_fit_epsilon0``), to 60
digits and is rounded to the float grid of max ε, so every ε_i = ε₀ + η·a_i is a float
computed exactly (re-checked) and |R₀| ≈ 10⁻¹⁶; the returned floats are the exact real
instance.
B₁, E_yes, G_no and (H1)–(H6) are then evaluated in :mod:`decimal` arithmetic with
:data:`CERT_DIGITS` = 60 digits (exp and ln correctly rounded): a forward error estimate
(≈ 10n + 100 operations on quantities ≤ 10² in size; not interval arithmetic) puts
their error below 10⁻⁵⁰ for n ≤ 10⁴, and 10⁻⁴⁵ is added to E_yes and subtracted
from G_no. The builder returns only instances with (H1)–(H6), E_yes < G_no and
(G_no − E_yes)/2 > 2·ulp(threshold), halving η (at most :data:`MAX_HALVINGS` times)
otherwise, and raises InvalidParameterError naming the failed hypothesis.

**What is proven.** In exact real arithmetic, the certificate's inequalities imply,
for the returned ε (exact floats), "exact γ ≤ ``threshold`` (the float) ⇔ YES". The
code evaluates them to 60 digits; that this evaluation is within 10⁻⁵⁰ rests on the
forward error estimate above (not on interval arithmetic), and the margins it must
resolve are ≥ 10⁻¹¹, so the estimate has ~40 orders to spare. Floating-point γ
(:func:`~mechanisms.mide.entropy.min_entropy_bruteforce`, error ≈ 10⁻¹⁴) is separated
as well whenever the margin G_no − E_yes exceeds that: on the test instances
(max a ≤ 1000) G_no ≥ 2.5·10⁻¹¹ and G_no/E_yes ≥ 2.9·10³
(``tests/mechanisms/mide/test_mide_entropy_hardness.py`` checks the bracket against
brute force in float on 400 instances and in exact 40-digit arithmetic on 40).

*What is not proven (the remaining gap for a Karp reduction).* That the certificate
*always* succeeds for some η = 2^(−O(L + log n)). To leading order, G_no ≈ c₁·η with
c₁ = W′₀·min(f′(l₀) − r, r − f′(u₀)) ≈ 2l₀·ln((n − K)/K) = Ω(1/n²) (at η = 0,
u₀ = 1/K − 1/n, l₀ = K/(n(n − K))) and the subtracted terms are of order η²·n²·(max a)²,
so η ≲ 1/(n⁴(max a)²) should do; but these constants are not bounded here in closed
form. And float64 ε are a hard limit: |R₀| ≈ 10⁻¹⁶ (ε₀ on the float grid) and the
resolution of a float γ (≈ 10⁻¹⁵) must both stay below G_no ≈ c₁η, so large inputs
raise instead of returning an uncertified instance — measured: n = 60, max a = 1000
and n = 200, max a = 10⁴ with K ∈ {2, 66} certify; n = 200 with K = 99, and n ≥ 1000
(K ∈ {2, n/3, n/2 − 1}), raise (an exact reduction would carry rational ε with
O(L + log n) bits). Observed: the default
η = 2^⌊log₂ min(10⁻⁶, 10⁻³/(max a)²)⌋ is certified at once on every test instance,
and so is η·(max a)² = :data:`MAX_ETA_WEIGHT2`.

Consequence for the product: :func:`mechanisms.mide.entropy.min_entropy_solution`
stays exact (branch-and-bound, verified against brute force) and is polynomial for a
bounded number of distinct ε — every MIDE output has at most ``steps`` distinct
values per query — and on instances built like these (many near-equal ε) it can stop
at its node budget with ``exact=False`` and a certified interval
[value, upper] instead of running for exponential time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, localcontext

import numpy as np
from scipy.optimize import brentq

from mechanisms.errors import InvalidParameterError
from mechanisms.mide.entropy import _h as _f  # f(p) = −p ln p

__all__ = [
    "CERT_DIGITS",
    "MAX_ETA_WEIGHT2",
    "MAX_HALVINGS",
    "MAX_WEIGHT",
    "EpsilonInstance",
    "NestedInstance",
    "epsilon_subset_sum_instance",
    "nested_subset_sum_instance",
]

_XTOL = 1e-17
#: largest weight: the narrowest interval (width ω) must stay well inside (0, m) for the
#: bisection (width of the interval whose left end is m·(1 − 1e-4) is ≈ 2e-4·m).
MAX_WEIGHT = 10_000
#: largest η·(max a)² accepted by :func:`epsilon_subset_sum_instance` (a sanity bound:
#: the certificate of Theorem 2, not this constant, decides whether η is small enough).
MAX_ETA_WEIGHT2 = 0.01


def _df(p: float) -> float:
    return -math.log(p) - 1.0


def _check_weights(weights, target: int) -> list[int]:
    a = [int(w) for w in weights]
    if not a or any(not 0 < w <= MAX_WEIGHT for w in a) or any(
        w != x for w, x in zip(a, weights, strict=True)
    ):
        raise InvalidParameterError(
            f"weights must be integers in [1, {MAX_WEIGHT}], not {weights!r}"
        )
    if not 0 < int(target) < sum(a):
        raise InvalidParameterError(
            f"target must be an integer in (0, {sum(a)}) for these weights, not {target!r}"
        )
    return a


@dataclass(frozen=True)
class NestedInstance:
    """A nested box instance of Theorem 1.

    Attributes:
        lower: lower bounds (number items first, the container B last).
        upper: upper bounds.
        threshold: T — γ equals it for a YES-instance.
        gap: certified lower bound on γ − B for a NO-instance.
    """

    lower: np.ndarray
    upper: np.ndarray
    threshold: float
    gap: float


def nested_subset_sum_instance(weights, target: int) -> NestedInstance:
    """Nested posterior boxes whose min-entropy decides SUBSET-SUM (Theorem 1).

    Args:
        weights: positive integers a_1..a_n.
        target: integer τ with 0 < τ < Σ a.

    Returns:
        The boxes, the threshold T and the certified NO-gap.

    Raises:
        InvalidParameterError: on non-integer or non-positive weights or a target out
            of range.
    """
    a = _check_weights(weights, target)
    n = len(a)
    m = 1.0 / (8 * (n + 1))
    sigma = _df(m)
    top = math.e * m
    omega = 0.9 * top / max(a)

    def upper_of(lo: float) -> float:
        # chord slope from lo equals sigma: f(u) − f(lo) − σ(u − lo) = 0 for u in (m, e·m)
        return brentq(lambda u: _f(u) - _f(lo) - sigma * (u - lo), m, top, xtol=_XTOL,
                      rtol=4 * np.finfo(float).eps)

    def lower_for(width: float) -> float:
        return brentq(lambda lo: upper_of(lo) - lo - width, 1e-12 * m, m * (1 - 1e-4),
                      xtol=_XTOL, rtol=4 * np.finfo(float).eps)

    lows = [lower_for(w * omega) for w in a]
    lo_num = np.array(lows)
    hi_num = lo_num + np.array(a, dtype=float) * omega
    l_b = 0.5 * float(lo_num.min())
    u_b = 1.0 - float(lo_num.sum()) - target * omega
    lower = np.append(lo_num, l_b)
    upper = np.append(hi_num, u_b)
    sigma_b = (_f(u_b) - _f(l_b)) / (u_b - l_b)
    base = float(sum(_f(x) for x in lower))
    threshold = base + sigma_b * (u_b - l_b) + sigma * target * omega
    gaps = [(sigma - sigma_b) * omega]
    for lo_i, w in zip(lows, a, strict=True):
        if w >= 2:
            for x in (omega, (w - 1) * omega):
                gaps.append(_f(lo_i + x) - _f(lo_i) - sigma * x)
    return NestedInstance(lower, upper, threshold, float(min(gaps)))


@dataclass(frozen=True)
class EpsilonInstance:
    """A uniform-prior Θ instance of Theorem 2, with its certificate.

    Attributes:
        epsilons: ε_i = ε₀ + η·a_i, exactly (feed to
            :func:`~mechanisms.mide.entropy.posterior_bounds`).
        first_order_value: B₁ (rounded to float) — the reference value of Theorem 2.
        first_order_gap: c₁ = W′₀·min(f′(l₀) − r, r − f′(u₀)) — γ ≈ B₁ + c₁·η to first
            order for a NO-instance (informative; the certificate uses ``no_bound``).
        eta: η (a power of two).
        yes_bound: E_yes — proven: γ − B₁ ≤ E_yes for a YES-instance.
        no_bound: G_no — proven: γ − B₁ ≥ G_no for a NO-instance.
        threshold: B₁ + (E_yes + G_no)/2: γ ≤ threshold ⇔ YES when ``certified``.
        certified: every hypothesis of Theorem 2 was checked and E_yes < G_no with room
            for the float rounding of ``threshold`` (the builder only returns certified
            instances).
    """

    epsilons: np.ndarray
    first_order_value: float
    first_order_gap: float
    eta: float
    yes_bound: float = math.nan
    no_bound: float = math.nan
    threshold: float = math.nan
    certified: bool = False


#: decimal digits of the certificate arithmetic (:mod:`decimal`, correctly rounded
#: exp/ln): its rounding error is < 10^(−50) on every certificate quantity.
CERT_DIGITS = 60
#: absolute allowance added to E_yes and subtracted from G_no for that rounding.
_CERT_ROUND = Decimal("1e-45")
#: halvings of η the builder tries before giving up on a certificate.
MAX_HALVINGS = 24


@dataclass(frozen=True)
class _Certificate:
    value: Decimal  # B₁
    gap: Decimal  # c₁
    yes: Decimal  # E_yes
    no: Decimal  # G_no
    failed: str  # "" when every hypothesis holds


def _certify(eps: np.ndarray, e0: float, eta: float, a: list[int], k: int,
             target: int) -> _Certificate:
    """Evaluate B₁, E_yes, G_no and the hypotheses (H1)–(H6) of Theorem 2 exactly.

    The floats ε_i, ε₀, η are exact rationals; every quantity below is evaluated with
    :data:`CERT_DIGITS` significant digits.
    """
    with localcontext() as ctx:
        ctx.prec = CERT_DIGITS
        one, two = Decimal(1), Decimal(2)

        def f(p: Decimal) -> Decimal:
            return -p * p.ln()

        def df(p: Decimal) -> Decimal:
            return -p.ln() - one

        def q(p: Decimal) -> Decimal:  # d²/dt² f(p₀e^{±t}) = q(p), q concave
            return p * (-p.ln() - two)

        peak = Decimal(-3).exp()  # argmax of q

        def q_range(lo: Decimal, hi: Decimal) -> tuple[Decimal, Decimal]:
            top = q(peak) if lo <= peak <= hi else max(q(lo), q(hi))
            return min(q(lo), q(hi)), top

        e = [Decimal(float(x)) for x in eps]
        d0, h = Decimal(e0), Decimal(eta)
        if any(ei - d0 != h * ai for ei, ai in zip(e, a, strict=True)):
            return _Certificate(*(Decimal(0),) * 4, "ε_i − ε₀ ≠ η·a_i exactly")
        z1 = sum(x.exp() for x in e)
        z2 = sum((-x).exp() for x in e)
        lows = [(-x).exp() / z1 for x in e]
        l0, u0 = (-d0).exp() / z1, d0.exp() / z2
        big_t = h * max(a)
        l_t, u_t = l0 * (-big_t).exp(), u0 * big_t.exp()
        slack = one - sum(lows)
        w0, w_t, dw = u0 - l0, u_t - l_t, u0 + l0
        c0 = f(u0) - f(l0)
        dc = df(u0) * u0 + df(l0) * l0
        r = dc / dw
        value = sum(f(x) for x in lows) + k * c0 + target * h * dc
        gap = dw * min(df(l0) - r, r - df(u0))
        rest = slack - k * w0 - target * h * dw  # R₀
        # second derivatives on t ∈ [0, T]: C″ = q(u) − q(l), W″ = W, ψ = C″ − r·W″
        qu_min, qu_max = q_range(u0, u_t)
        ql_min, ql_max = q_range(l_t, l0)
        c2_max = qu_max - ql_min
        psi_neg = max(Decimal(0), -(qu_min - ql_max - max(r * w0, r * w_t)))
        squares = sorted((ai * ai for ai in a), reverse=True)
        a2_k = Decimal(sum(squares[:k]))
        a2_yes = min(a2_k, Decimal(target * max(a)))
        sum_k = sum(sorted(a, reverse=True)[:k])
        qw_k = h * h * a2_k * w_t / two
        qw_yes = h * h * a2_yes * w_t / two
        # ---- YES: the witness vertex (|U| = K, or K − 1 with φ ∈ U nearly full) ----
        yes = (h * h * a2_yes * max(c2_max, Decimal(0)) / two
               + max(df(l_t), Decimal(0)) * max(rest, Decimal(0))
               + max(-df(u_t), Decimal(0)) * max(qw_yes - rest, Decimal(0)))
        # ---- NO: every vertex ----
        tail = r * rest - h * h * a2_k * psi_neg / two
        x_lo = rest + h * dw - qw_k  # |U| = K, Σ_U a ≤ τ − 1
        y_lo = -rest + h * dw  # |U| = K − 1, Σ_{U+φ} a ≥ τ + 1
        y_hi = -rest + h * (sum_k - target) * dw + qw_k
        checks = {
            "(H1) s < (K+1)·W(0)": slack < (k + 1) * w0,
            "(H2) s > (K−1)·W(T)": slack > (k - 1) * w_t,
            "(H3) R0 < η·W′(0)": rest < h * dw,
            "(H4) η·W′(0) > QW_K − R0": -rest - h * dw + qw_k < 0,
            "(H5) x_lo > 0, y_lo > 0, y_hi < W(0)": x_lo > 0 and y_lo > 0 and y_hi < w0,
            "(H6) |R0|, QW − R0 < W(0)": rest < w0 and qw_yes - rest < w0,
        }
        failed = ", ".join(name for name, ok in checks.items() if not ok)
        if failed:
            return _Certificate(value, gap, yes, Decimal(0), failed)
        h_lo = f(l0 + x_lo) - f(l0) - r * x_lo
        h_full = c0 - r * w0 - big_t * big_t * psi_neg / two
        no = min(h_lo, h_full)
        if sum_k >= target + 1:
            no = min(no, f(u0 - y_lo) - f(u0) + r * y_lo, f(u0 - y_hi) - f(u0) + r * y_hi)
        return _Certificate(value, gap, yes + _CERT_ROUND, no + tail - _CERT_ROUND, "")


def epsilon_subset_sum_instance(
    weights, size: int, target: int, *, eta: float | None = None
) -> EpsilonInstance:
    """A uniform-prior ε vector whose min-entropy decides K-SUBSET-SUM (Theorem 2).

    Args:
        weights: positive integers a_1..a_n.
        size: K, the subset size, 2 ≤ K < n/2.
        target: τ, 0 < τ < Σ a.
        eta: η, the ε step per unit of weight; None → min(1e-6, 0.001/(max a)²). It is
            rounded down to a power of two (so every ε_i = ε₀ + η·a_i is exact) and
            halved, at most :data:`MAX_HALVINGS` times, until the certificate holds;
            η·(max a)² must be ≤ :data:`MAX_ETA_WEIGHT2`.

    Returns:
        The ε vector with B₁, the proven bounds E_yes, G_no and the threshold.

    Raises:
        InvalidParameterError: on out-of-range arguments, or when no η down to
            2^(−MAX_HALVINGS)·η gives a certificate (the failed hypothesis is named).
    """
    a = _check_weights(weights, target)
    n = len(a)
    if not (int(size) >= 2 and 2 * int(size) < n):
        raise InvalidParameterError(
            f"size must be an integer with 2 <= size < {n}/2, not {size!r}"
        )
    top = max(a) ** 2
    if eta is None:
        eta = min(1e-6, 0.1 * MAX_ETA_WEIGHT2 / top)
    if not 0 < eta <= MAX_ETA_WEIGHT2 / top:
        raise InvalidParameterError(
            f"eta must be in (0, {MAX_ETA_WEIGHT2}/max(weights)**2 = {MAX_ETA_WEIGHT2 / top:.3g}]"
            f" (larger steps blur YES and NO), not {eta!r}"
        )
    k = int(size)
    step = 2.0 ** math.floor(math.log2(eta))
    reasons: list[str] = []
    guess = 0.5 * math.log(n / k - 1.0)  # ε₀ at η = 0
    for _ in range(MAX_HALVINGS + 1):
        steps = np.array(a, dtype=float) * step  # exact: step is a power of two
        if step < 2.0 ** (math.frexp(guess)[1] - 52):  # η·a_i below the grid of ε
            break
        e0 = _fit_epsilon0(a, k, target, step)
        if e0 is None:
            reasons.append(f"η = {step:.3g}: no ε₀ fits {k} items of total weight {target}")
            step /= 2
            continue
        eps = e0 + steps
        cert = _certify(eps, e0, step, a, k, target)
        threshold = float(cert.value + (cert.yes + cert.no) / 2)
        resolution = 4 * abs(threshold) * np.finfo(float).eps
        if not cert.failed and cert.no - cert.yes > resolution:
            return EpsilonInstance(
                eps, float(cert.value), float(cert.gap), step, float(cert.yes),
                float(cert.no), threshold, True,
            )
        if cert.failed:
            reasons.append(f"η = {step:.3g}: {cert.failed} fails")
        else:
            reasons.append(
                f"η = {step:.3g}: G_no − E_yes = {float(cert.no - cert.yes):.3g} is not above"
                f" the float64 resolution {resolution:.3g} of γ"
            )
        step /= 2
    shown = reasons[:1] + (["…"] if len(reasons) > 2 else []) + reasons[1:][-1:]
    raise InvalidParameterError(
        f"eta must be small enough for a certificate of Theorem 2, but {len(reasons)} values"
        f" failed ({'; '.join(shown)}): the instance is too large for float64 ε"
    )


def _fit_epsilon0(a: list[int], k: int, target: int, eta: float) -> float | None:
    """ε₀ nearest to the root of R₀ = 0 on the float grid of max ε, or None if none.

    With P = Σ e^(η·a_j), N = Σ e^(−η·a_j) and v = e^(2ε₀): l₀ = 1/(P·v), u₀ = v/N and
    Σ l_i = N/(P·v), so v·R₀ = −(K + ητ)/N·v² + v − (N − K + ητ)/P — a quadratic. Its
    larger root (v = n/K − 1 > 1 at η = 0) is solved in :data:`CERT_DIGITS`-digit
    arithmetic, so |R₀| is left at the grid's floor ≈ ½·grid·|dR₀/dε₀|.
    """
    with localcontext() as ctx:
        ctx.prec = CERT_DIGITS
        h = Decimal(eta)
        pos = sum((h * ai).exp() for ai in a)
        neg = sum((-h * ai).exp() for ai in a)
        quad, lin = (k + h * target) / neg, (neg - k + h * target) / pos
        disc = 1 - 4 * quad * lin
        if disc <= 0:
            return None
        v = (1 + disc.sqrt()) / (2 * quad)
        if v <= 1:
            return None
        e0 = v.ln() / 2
        # the grid of max ε (a power of two ≥ ulp of every ε_i): every ε₀ + η·a_i exact
        grid = Decimal(2.0 ** (math.frexp(float(e0) + eta * max(a))[1] - 53))
        return float((e0 / grid).to_integral_value() * grid)
