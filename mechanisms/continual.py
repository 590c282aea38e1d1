"""Continual counting with the binary-tree mechanism (discrete Gaussian), and when not to.

Binary mechanism (Dwork, Naor, Pitassi & Rothblum, STOC 2010; Chan, Shi & Song, TISSEC
2011, Alg. 2), vectorised over series (e.g. locations): at tick t = 1, 2, … with
binary digits b_i(t), the partial sum α_i of the dyadic block ending at t with length
2^i (i = lowest set bit of t) is formed from the lower blocks plus x_t and released once
with noise N_ℤ(0, σ²); the prefix sum Σ_{s ≤ t} x_s is estimated by the sum of the noisy
blocks of t's set bits: error variance popcount(t)·σ² ≤ L·σ², L = ⌊log₂ T⌋ + 1.

Privacy (zCDP, device-day unit): a contribution x_t enters one block per level, so a
device whose contributions over the day form the vector a has L2² sensitivity
Σ_levels Σ_blocks (Σ_{t ∈ block} a_t)². For a **one-shot** counter (each device adds 1
once per day, e.g. "devices arrived today") this is L: ρ = L/(2σ²), against ρ = 1/(2σ²)
for flat per-tick noise whose prefix sums have variance t·σ² — the tree wins by
≈ t/(L·popcount(t)) (≈ 3× at the end of a 288-tick day).

For **occupancy** (levels, not events) the tree loses: a device present for B
consecutive ticks contributes 2^i to each level-i block it covers, so the L2² is
≈ Σ_i B·2^i ≫ B (218,848 vs 288 for a whole day on 512 leaves; see
:func:`tree_l2sq`), and both its hourly means and day totals are noisier than flat
release at equal ρ (``bench/bench_device_day.py``). The device-day heatmap therefore
uses flat per-tick discrete Gaussian noise (:mod:`mechanisms.device_day`); this module
serves one-shot counters of the live view.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.gaussian import discrete_gaussian
from mechanisms.noise import resolve_rng

__all__ = ["TreeCounterState", "initialize", "levels_for", "tree_l2sq", "update"]


def levels_for(horizon: int) -> int:
    """L = ⌊log₂ T⌋ + 1: the levels a horizon of T ticks uses."""
    t = int(horizon)
    if t < 1:
        raise InvalidParameterError(f"horizon must be ≥ 1, not {horizon!r}")
    return t.bit_length()


def tree_l2sq(contribution: np.ndarray) -> float:
    """Exact Σ_levels Σ_blocks (block sum)² of one device's per-tick contribution vector."""
    a = np.asarray(contribution, dtype=float)
    if a.ndim != 1 or a.size == 0:
        raise InvalidParameterError(f"contribution must be a non-empty 1-D array, not {a.shape}")
    size = 1 << (a.size - 1).bit_length()
    x = np.zeros(size)
    x[: a.size] = a
    tot = 0.0
    while True:
        tot += float(np.sum(x * x))
        if x.size == 1:
            return tot
        x = x.reshape(-1, 2).sum(axis=1)


@dataclass(frozen=True)
class TreeCounterState:
    """Binary-mechanism state (released noisy blocks only, plus the true open blocks).

    Attributes:
        t: ticks processed.
        alpha: true block sums per level (levels, n), the open blocks.
        noisy: released noisy block sums per level (levels, n).
        sigma: noise σ per block.
        horizon: T, the most ticks the state serves (the day).
    """

    t: int
    alpha: np.ndarray
    noisy: np.ndarray
    sigma: float
    horizon: int

    @property
    def rho_one_shot(self) -> float:
        """ρ per device-day when each device adds 1 once: L/(2σ²)."""
        return self.alpha.shape[0] / (2 * self.sigma**2)


def initialize(n_series: int, horizon: int, sigma: float) -> TreeCounterState:
    """Empty counter for ``n_series`` series over ``horizon`` ticks with block noise σ."""
    n = int(n_series)
    if n < 1:
        raise InvalidParameterError(f"n_series must be ≥ 1, not {n_series!r}")
    lv = levels_for(horizon)
    check_positive("sigma", sigma)
    z = np.zeros((lv, n))
    return TreeCounterState(t=0, alpha=z, noisy=z.copy(), sigma=float(sigma),
                            horizon=int(horizon))


def update(
    state: TreeCounterState, x: np.ndarray, *, rng: np.random.Generator | None = None
) -> tuple[TreeCounterState, np.ndarray]:
    """Add tick t's counts x (≥ 0 integers); return the noisy prefix sums (CSS Alg. 2)."""
    xs = np.asarray(x)
    if xs.shape != (state.alpha.shape[1],):
        raise InvalidParameterError(
            f"x must have shape ({state.alpha.shape[1]},), not {xs.shape!r}"
        )
    t = state.t + 1
    if t > state.horizon:
        raise InvalidParameterError(f"tick must be ≤ horizon {state.horizon}, not {t}")
    i = (t & -t).bit_length() - 1  # lowest set bit
    alpha = state.alpha.copy()
    noisy = state.noisy.copy()
    alpha[i] = alpha[:i].sum(axis=0) + xs
    alpha[:i] = 0
    noisy[:i] = 0
    noisy[i] = alpha[i] + discrete_gaussian(state.sigma, xs.size, rng=resolve_rng(rng))
    bits = [j for j in range(alpha.shape[0]) if (t >> j) & 1]
    return (TreeCounterState(t=t, alpha=alpha, noisy=noisy, sigma=state.sigma,
                             horizon=state.horizon), noisy[bits].sum(axis=0))
