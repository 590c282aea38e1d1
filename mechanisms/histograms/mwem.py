"""MWEM: multiplicative weights + exponential mechanism (Hardt, Ligett & McSherry, NIPS 2012).

Algorithm 1 of the paper, for a workload of range queries over a 1-D histogram:

1. ``A₀`` is uniform with total ``N̂`` (the number of records; public or spent for).
2. For ``t = 1..T`` with ``ε_t = ε_rounds/T``:
   select a query with the exponential mechanism at ``ε_t/2`` and score
   ``|q(A_{t−1}) − q(x)|`` (sensitivity 1, so weights ``exp(ε_t·score/4)``, §2.1);
   measure it, ``m_t = q(x) + Lap(2/ε_t)``;
   update ``A_t ∝ A_{t−1}·exp(q·(m_t − q(A_{t−1}))/(2N̂))`` over all measurements so far
   (the paper's practical improvement, §3.2: several passes over the history).
3. Release the average of the ``A_t`` (the paper's output; the last iterate is an option).

Privacy: T rounds of (ε_t/2 + ε_t/2) compose to ε_rounds; with ``total=None`` a share
``total_share`` of ε first buys ``N̂ = ‖x‖₁ + Lap(1/(share·ε))`` (sensitivity 1).
Everything is charged to the accountant before the noise it pays for is drawn. The
exponential mechanism is drawn with the Gumbel-max trick (exactly the exponential
mechanism's distribution).
"""

from __future__ import annotations

import numpy as np

from mechanisms.accounting import Accountant, Budget
from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.histograms._noise import laplace_noise, resolve_rng

__all__ = ["mwem_release", "MWEM_ROUNDS", "MWEM_TOTAL_SHARE"]

#: default number of rounds T (DPBench's fixed-T MWEM uses 10)
MWEM_ROUNDS = 10
#: share of ε spent on the record count when it is not given
MWEM_TOTAL_SHARE = 0.05
#: multiplicative-weights passes over the measurement history per round (§3.2)
MW_PASSES = 10


def _answers(a: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    c = np.concatenate(([0.0], np.cumsum(a)))
    return c[hi] - c[lo]


def mwem_release(
    x: np.ndarray,
    epsilon: float,
    workload: tuple[np.ndarray, np.ndarray] | None = None,
    *,
    rounds: int = MWEM_ROUNDS,
    total: float | None = None,
    total_share: float = MWEM_TOTAL_SHARE,
    average: bool = True,
    accountant: Accountant | None = None,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """MWEM release (Hardt et al. 2012, Alg. 1) for range queries ``(lo, hi)``.

    Args:
        x: the true 1-D histogram.
        epsilon: total budget ε.
        workload: range queries (None: the identity workload).
        rounds: T.
        total: public record count N (None: estimate it with ``total_share``·ε).
        total_share: share of ε for the noisy count when ``total`` is None.
        average: release the average of the iterates (paper) instead of the last one.
        accountant: charged (None: a fresh accountant capped at ε).
        rng: noise source (None: the project's CSPRNG).
    """
    epsilon = check_positive("epsilon", epsilon)
    if int(rounds) < 1:
        raise InvalidParameterError(f"rounds must be >= 1, not {rounds!r}")
    gen = resolve_rng(rng)
    x = np.asarray(x, np.float64).ravel()
    n = len(x)
    if workload is None:
        lo, hi = np.arange(n), np.arange(1, n + 1)
    else:
        lo, hi = (np.asarray(v, np.int64) for v in workload)
    acct = accountant if accountant is not None else Accountant(Budget(epsilon), name="histogram")
    eps_rounds = epsilon
    if total is None:
        eps_n = total_share * epsilon
        eps_rounds = epsilon - eps_n
        acct.spend(eps_n, mechanism="histogram:MWEM:count", sampler="continuous laplace")
        total = float(x.sum() + laplace_noise(1.0 / eps_n, 1, rng=gen)[0])
    total = max(float(total), 1.0)
    eps_t = eps_rounds / rounds
    true = _answers(x, lo, hi)
    a = np.full(n, total / n)
    acc = np.zeros(n)
    hist_q: list[int] = []
    hist_m: list[float] = []
    for _ in range(int(rounds)):
        acct.spend(eps_t, mechanism="histogram:MWEM:round", sampler="gumbel-max + laplace")
        score = np.abs(_answers(a, lo, hi) - true)
        # exponential mechanism, ε_t/2 with sensitivity-1 score: P ∝ exp(ε_t·score/4)
        g = gen.gumbel(size=len(score))
        q = int(np.argmax(eps_t * score / 4.0 + g))
        hist_q.append(q)
        hist_m.append(float(true[q] + laplace_noise(2.0 / eps_t, 1, rng=gen)[0]))
        for _ in range(MW_PASSES):
            for qi, m in zip(hist_q, hist_m, strict=True):
                err = m - float(a[lo[qi] : hi[qi]].sum())
                a[lo[qi] : hi[qi]] *= np.exp(err / (2.0 * total))
                a *= total / a.sum()
        acc += a
    return acc / rounds if average else a
