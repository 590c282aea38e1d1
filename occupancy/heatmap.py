"""The ten-colour heatmap scale (docs/DESIGN.md "Heatmap colour") and colour utility.

Post-processing only: no ``rng``, no budget. Baselines μ, σ come from *released*
history, so colouring a released value costs nothing more.

Colour classes 1..10 per (location, tick): class 10 above μ+2σ, class 1 below μ−2σ,
and the range (μ−2σ, μ+2σ) split into 8 equal bins for classes 2..9. Boundary values
go to the upper class (a value exactly at μ+2σ is class 10; exactly at μ−2σ is class 2).
σ = 0 (a location that never changed): a value above μ is class 10, below μ class 1, and
exactly μ class 6 — the class μ has whenever σ > 0 (the boundary between the two middle
bins goes up): the usual value is coloured as usual (a room empty all week and empty now
is not "far above usual").
"""

from __future__ import annotations

import numpy as np

N_COLOURS = 10


def colour_class(values: np.ndarray, mu: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """Colour class (1..10) of each value given its location's baseline μ, σ (broadcasting)."""
    v = np.asarray(values, dtype=float)
    mu = np.asarray(mu, dtype=float)
    sigma = np.maximum(np.asarray(sigma, dtype=float), 0.0)
    lo = mu - 2 * sigma
    width = 4 * sigma
    with np.errstate(divide="ignore", invalid="ignore"):
        inner = np.floor((v - lo) / np.where(width > 0, width, 1.0) * 8).astype(np.int64) + 2
    flat = width <= 0
    inner = np.where(flat, N_COLOURS // 2 + 1, inner)  # σ = 0 and v = μ: μ's class
    top = np.where(flat, v > mu, v >= mu + 2 * sigma)
    cls = np.where(v < lo, 1, np.where(top, 10, np.clip(inner, 2, 9)))
    return cls.astype(np.int64)


def colour_utility(
    released: np.ndarray, true: np.ndarray, mu: np.ndarray, sigma: np.ndarray
) -> float:
    """Share of cells whose released colour equals the true count's colour."""
    r = colour_class(released, mu, sigma)
    t = colour_class(true, mu, sigma)
    return float(np.mean(r == t)) if r.size else float("nan")


def baselines(
    history: np.ndarray, slots: np.ndarray, n_slots: int
) -> tuple[np.ndarray, np.ndarray]:
    """μ, σ per (slot, location) from released history.

    Args:
        history: released values, shape (T, L).
        slots: time-of-day slot of each row, shape (T,), ints in [0, n_slots).
        n_slots: number of slots per day.

    Returns:
        (mu, sigma), each shape (n_slots, L); NaN where a slot has no history.
    """
    history = np.asarray(history, dtype=float)
    slots = np.asarray(slots, dtype=np.int64)
    n_loc = history.shape[1]
    s1 = np.zeros((n_slots, n_loc))
    s2 = np.zeros((n_slots, n_loc))
    n = np.zeros((n_slots, 1))
    np.add.at(s1, slots, history)
    np.add.at(s2, slots, history**2)
    np.add.at(n, slots, 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mu = s1 / n
        var = np.maximum(s2 / n - mu**2, 0.0)
    return mu, np.sqrt(var)
