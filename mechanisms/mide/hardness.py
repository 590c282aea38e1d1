"""Why no polynomial exact algorithm for γ(Θ) is claimed: subset-sum reductions.

Issue 4 asks for an exact, polynomial algorithm for the min-entropy metric γ(Θ)
(thesis Def. 5.4, eq. 5.8) and ALGORITHMS.md suggests one from the nesting of the
posterior intervals (l_i falls and u_i rises with ε_i). This module shows that nesting
cannot be enough, and that the ε-shaped instances carry the same combinatorics.

Notation as in :mod:`mechanisms.mide.entropy`: f(p) = −p ln p (concave), box
l ≤ p ≤ u, Σ p = 1, slack s = 1 − Σ l, width Δ_i = u_i − l_i, y_i = p_i − l_i,
g_i(y) = f(l_i + y) − f(l_i) and the chord slope σ_i = g_i(Δ_i)/Δ_i.

**Theorem 1 (nested boxes; proof).** Deciding "γ(l, u) ≤ B" is NP-hard for nested
intervals, by reduction from SUBSET-SUM (integers a_1..a_n, target τ).

*Construction* (:func:`nested_subset_sum_instance`). Fix m = 1/(8(n+1)) and
σ = f′(m) = −ln m − 1, so e^(−σ) = e·m. For l ∈ (0, m) there is exactly one u(l) ∈ (m, e·m)
with chord slope S(l, u) = σ (g rises then falls below its chord's slope); the width
W(l) = u(l) − l falls continuously from e·m to 0 as l rises from 0 to m, so the
intervals are nested, and for ω = 0.9·e·m / max a every number item i gets the
interval with width a_i·ω (bisection). A container item B gets l_B = ½ min l_i and
u_B = 1 − Σ l_i − τω; u_B > 0.5 > e·m, so B contains every other interval (nesting
holds), and its chord slope σ_B ≤ S(0, u_B) = −ln u_B < σ. The slack left after B is
full is exactly τω.

*Proof.* g_i is strictly concave with g_i(0) = 0, so g_i(y) ≥ σ_i·y on [0, Δ_i] with
equality only at y ∈ {0, Δ_i}. Hence for every feasible p

    Σ f(p) − Σ f(l) = Σ g_i(y_i) ≥ σ_B y_B + σ(s − y_B) ≥ σ_B Δ_B + σ·τω =: B − Σ f(l)

(σ_B < σ, y_B ≤ Δ_B). Equality needs y_B = Δ_B and every number item at 0 or at its
full width, i.e. a subset of the a_i summing to τ: γ = B iff the instance is a
YES-instance. For a NO-instance take a minimising vertex (Lemma 1 of
:mod:`~mechanisms.mide.entropy`: at most one free coordinate). If B is free, the
numbers at their upper bound overshoot by a non-zero multiple of ω, so
y_B ≤ Δ_B − ω and the excess is ≥ (σ − σ_B)·ω; if B is at its lower bound the excess is
≥ (σ − σ_B)·Δ_B ≥ (σ − σ_B)·ω; if B is full, the free number item φ takes
x = (τ − Σ_U a)·ω ∉ {0, Δ_φ}, a multiple of ω, so x ∈ [ω, Δ_φ − ω] and the excess is
≥ min(g_φ(ω) − σω, g_φ(Δ_φ − ω) − σ(Δ_φ − ω)) > 0 (a concave function vanishing at
both ends is smallest at the ends of a sub-interval). The minimum of these bounds is
the certified ``gap``: YES ⇒ γ = B, NO ⇒ γ ≥ B + gap, with gap ≈ 1e-4 on small
instances — far above floating-point error. Every quantity is computed in time
polynomial in n and the bit length of the a_i (bisection to machine precision), so a
polynomial algorithm for γ on nested boxes would decide SUBSET-SUM. ∎

Because the prefix hint fails already on Θ-shaped boxes
(``test_upper_bound_set_is_not_a_prefix_by_epsilon``), the question is whether the
one-parameter family l_i = e^(−ε_i)/Z₁, u_i = e^(ε_i)/Z₂ (uniform priors) is easier.

**Theorem 2 (uniform-prior Θ; perturbation argument, checked numerically).** The
instances Θ of :func:`epsilon_subset_sum_instance` decide K-SUBSET-SUM (is there a
K-element subset of the a_i summing to τ? NP-hard): with ε_i = ε₀ + η·a_i the boxes
are those of eq. 5.7 exactly. For fixed normalisers Z the chord cost C(ε) =
f(u) − f(l) and width W(ε) satisfy dC/dε = f′(u)u + f′(l)l and dW/dε = u + l, so to
first order in η every item costs C₀ + r·(W_i − W₀) with r = (f′(u)u + f′(l)l)/(u + l)
strictly between f′(u) and f′(l). ε₀ is chosen (root finding) so that K items whose
a-values sum to τ fill the slack up to O(η²). A K-subset U with free item φ then has
excess h_φ(x) = g_φ(x) − r·x over the first-order value
B₁ = Σ f(l) + K·C(ε₀) + ητ·C′(ε₀), where x = (τ − Σ_U a)·W′η + O(η²) (or the mirror
case with φ almost full); h_φ is concave with h_φ′(0) = f′(l_φ) − r > 0 and the
mirror slope r − f′(u_φ) > 0, so a NO-instance costs ≥ B₁ + c₁η (c₁ = W′·min of the
two slopes, ``first_order_gap``) while a YES-instance costs B₁ + O(η²). Choosing
η small enough separates them: (γ − B₁)/η ≈ 0 for YES and ≥ c₁ for NO. This is an
argument about leading orders, not a formal proof (the η² constants are not bounded
here); ``tests/mechanisms/mide/test_mide_entropy_hardness.py`` checks the separation
against brute force on hundreds of random instances.

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

import numpy as np
from scipy.optimize import brentq

from mechanisms.errors import InvalidParameterError

__all__ = [
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


def _f(p: float) -> float:
    return -p * math.log(p) if p > 0 else 0.0


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
        threshold: B — γ equals it for a YES-instance.
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
        The boxes, the threshold B and the certified NO-gap.

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
    """A uniform-prior Θ instance of Theorem 2.

    Attributes:
        epsilons: ε_i = ε₀ + η·a_i (feed to :func:`~mechanisms.mide.entropy.posterior_bounds`).
        first_order_value: B₁ — γ ≈ B₁ + O(η²) for a YES-instance.
        first_order_gap: c₁ — γ ≳ B₁ + c₁·η for a NO-instance.
        eta: η.
    """

    epsilons: np.ndarray
    first_order_value: float
    first_order_gap: float
    eta: float


def _bounds(eps: np.ndarray) -> tuple[float, float]:
    return float(np.sum(np.exp(eps))), float(np.sum(np.exp(-eps)))


def epsilon_subset_sum_instance(
    weights, size: int, target: int, *, eta: float = 1e-6
) -> EpsilonInstance:
    """A uniform-prior ε vector whose min-entropy decides K-SUBSET-SUM (Theorem 2).

    Args:
        weights: positive integers a_1..a_n.
        size: K, the subset size, 2 ≤ K < n/2.
        target: τ, 0 < τ < Σ a.
        eta: η, the ε step per unit of weight (small: the separation is first order
            in η, the error second order).

    Returns:
        The ε vector with the first-order threshold B₁ and gap c₁.

    Raises:
        InvalidParameterError: on out-of-range arguments.
    """
    a = _check_weights(weights, target)
    n = len(a)
    if not (int(size) >= 2 and 2 * int(size) < n):
        raise InvalidParameterError(
            f"size must be an integer with 2 <= size < {n}/2, not {size!r}"
        )
    if not 0 < eta <= 1e-3:
        raise InvalidParameterError(f"eta must be in (0, 1e-3], not {eta!r}")
    k = int(size)
    steps = np.array(a, dtype=float) * eta

    def parts(e0: float) -> tuple[float, float, float, float]:
        z1, z2 = _bounds(e0 + steps)
        lo, hi = math.exp(-e0) / z1, math.exp(e0) / z2
        slack = 1.0 - float(np.sum(np.exp(-(e0 + steps)))) / z1
        return lo, hi, slack, (hi - lo)

    def fill(e0: float) -> float:
        lo, hi, slack, width = parts(e0)
        return slack - k * width - target * eta * (hi + lo)

    guess = 0.5 * math.log(n / k - 1.0)
    e0 = brentq(fill, guess - 0.5 * guess, guess + 0.5 * guess, xtol=_XTOL,
                rtol=4 * np.finfo(float).eps)
    eps = e0 + steps
    lo, hi, _, _ = parts(e0)
    z1, _ = _bounds(eps)
    base = float(sum(_f(x) for x in np.exp(-eps) / z1))
    c0 = _f(hi) - _f(lo)
    dc = _df(hi) * hi + _df(lo) * lo
    value = base + k * c0 + target * eta * dc
    r = dc / (hi + lo)
    gap = (hi + lo) * min(_df(lo) - r, r - _df(hi))
    return EpsilonInstance(eps, float(value), float(gap), float(eta))
