"""PrivRelax / NoiseDown: gradual release of Laplace noise (Koufogiannis, Han & Pappas 2015).

Given noise ``η ~ Lap(Δ/ε₁)`` already used for ``y₁ = x + η``, :func:`privrelax` draws
``η′ ~ Lap(Δ/ε₂)`` (ε₂ > ε₁) *correlated* with η so that the pair (y₁, y₂) is
ε₂-DP in total rather than (ε₁ + ε₂). This is the step between the iterations of
PPWLM and DPPWLM (thesis Alg. 2 line 11, Alg. 3 line 14, thesis ref. [30]).

Exact conditional sampler (docs/MECHANISMS.md, "Gradual release"), in rate units
e₁ = ε₁/Δ, e₂ = ε₂/Δ, with a = |η|, s = sign(η), δ = e₂ − e₁, σ = e₁ + e₂:

=================  =============================  ===================================
case               probability                    η′
=================  =============================  ===================================
keep               (e₁/e₂)·e^(−δa)                η
other side of 0    δ/(2e₂)                        −s·Exp(rate σ)
between 0 and η    (σ/(2e₂))·(1 − e^(−δa))        s·Z, Z ~ Exp(rate δ) truncated [0, a]
beyond η           (δ/(2e₂))·e^(−δa)              s·(a + Exp(rate σ))
=================  =============================  ===================================

One uniform picks the case and a **fresh** uniform draws the value inside it (the
public APEx ``noise_down`` reuses one uniform and ignores the sign of η, which biases
the output; another public version uses ``min(Exp, a)`` instead of a truncated
exponential — both wrong). Properties checked by the tests: η′ ~ Lap(Δ/ε₂); η − η′ is
0 with probability (ε₁/ε₂)², otherwise Lap(Δ/ε₁), independently of η′.

Privacy: η′ is a randomised function of η only (no further access to the data), and
the joint law of (η, η′) is that of (η′ + D, η′) with D independent of η′, so
(y₁, y₂) is post-processing of y₂ plus independent noise: ε₂-DP in total.
"""

from __future__ import annotations

import numpy as np

from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.noise import resolve_rng

__all__ = ["privrelax"]


def privrelax(
    noise: np.ndarray,
    epsilon_from: float,
    epsilon_to: float,
    *,
    sensitivity: float = 1.0,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Relax Laplace noise drawn at ``epsilon_from`` to noise at ``epsilon_to`` (vectorised).

    Args:
        noise: the noise values η (any shape), each ~ Lap(sensitivity/epsilon_from).
        epsilon_from: ε₁ the noise was drawn at.
        epsilon_to: ε₂ ≥ ε₁ of the new noise.
        sensitivity: Δ of the query the noise protects (scale = Δ/ε).
        rng: generator; None → the project's CSPRNG-seeded generator.

    Returns:
        New noise η′ ~ Lap(sensitivity/epsilon_to), same shape as ``noise``; the pair
        (x + η, x + η′) costs ε₂ in total.

    Raises:
        InvalidParameterError: if ε₂ < ε₁ or a parameter is not positive/finite.
    """
    e1 = check_positive("epsilon_from", epsilon_from)
    e2 = check_positive("epsilon_to", epsilon_to)
    delta_s = check_positive("sensitivity", sensitivity)
    if e2 < e1:
        raise InvalidParameterError(
            f"epsilon_to must be >= epsilon_from ({e1!r}), not {epsilon_to!r}"
        )
    eta = np.asarray(noise, dtype=float)
    if e2 == e1 or eta.size == 0:
        return eta.copy()
    gen = resolve_rng(rng)
    r1, r2 = e1 / delta_s, e2 / delta_s  # rates
    d, sig = r2 - r1, r1 + r2
    a = np.abs(eta)
    s = np.where(eta < 0, -1.0, 1.0)
    decay = np.exp(-d * a)
    p_keep = (r1 / r2) * decay
    p_other = np.full_like(a, d / (2 * r2))
    p_between = (sig / (2 * r2)) * (-np.expm1(-d * a))
    u_case = gen.random(eta.shape)  # picks the case
    u_val = gen.random(eta.shape)  # fresh uniform for the value inside the case
    c1 = p_keep
    c2 = c1 + p_other
    c3 = c2 + p_between
    exp_sig = -np.log1p(-u_val) / sig  # Exp(rate σ) from the fresh uniform
    # Exp(rate δ) truncated to [0, a] by inversion: −log(1 − U(1 − e^(−δa)))/δ
    trunc = -np.log1p(u_val * np.expm1(-d * a)) / d
    out = np.where(
        u_case < c1,
        eta,
        np.where(
            u_case < c2,
            -s * exp_sig,
            np.where(u_case < c3, s * np.minimum(trunc, a), s * (a + exp_sig)),
        ),
    )
    return out
