"""Learned noise densities ``f_Y(y | z)`` by Gaussian KDE (thesis §4.5.2, §4.6.2).

For mechanisms whose noise has no closed form (PeGaSus, TTL) the attacker learns the
conditional density of the released value ``y`` given the true count ``z`` from
training pairs (thesis: "a separate kernel for each true count z", d = 1, scaled
bandwidth 0.1).

Bandwidth rule: per true count ``z`` with ``n_z`` training values of standard
deviation ``s_z``, ``h_z = bandwidth_scale · s_z · n_z^{-1/5}`` — scipy's default
(Scott) bandwidth multiplied by ``bandwidth_scale`` (0.1 in the thesis), so the
kernels narrow as training grows and the estimate converges to the true density.
``h_z`` is floored at ``2·dy`` (the grid step) so a constant sample still has a
proper density.

True counts with few samples borrow strength from a pooled *residual* density
``g(y − z)`` learned from all pairs: ``f(y|z) = (n_z f_z(y) + κ g(y − z)) / (n_z + κ)``
with ``κ = prior_weight`` (1 by default); an unseen ``z`` gets ``g(y − z)``.

Speed: every per-``z`` density is evaluated once on a regular grid by linear binning
and an FFT convolution with the Gaussian (its Fourier transform is analytic), then
queries are linear interpolations — vectorised over any array of (y, z).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mechanisms.errors import InvalidParameterError, check_positive

#: Smallest density returned (keeps logs finite; far below any real density value).
DENSITY_FLOOR = 1e-300


@dataclass(frozen=True)
class _GridDensity:
    """Densities of several rows on one regular grid ``y0 + k·dy``, shape (rows, G)."""

    y0: float
    dy: float
    values: np.ndarray

    def at(self, rows: np.ndarray, y: np.ndarray) -> np.ndarray:
        pos = (np.asarray(y, dtype=float) - self.y0) / self.dy
        n_g = self.values.shape[1]
        inside = (pos >= 0) & (pos <= n_g - 1)
        pos = np.clip(pos, 0, n_g - 1)
        i0 = np.minimum(np.floor(pos).astype(np.int64), n_g - 2)
        frac = pos - i0
        v = self.values[rows, i0] * (1 - frac) + self.values[rows, i0 + 1] * frac
        return np.where(inside, v, 0.0)


def _fit_grid(
    groups: np.ndarray,
    values: np.ndarray,
    n_groups: int,
    bandwidth_scale: float,
    max_grid: int,
    *,
    unit_fraction: bool = False,
) -> tuple[_GridDensity, np.ndarray, np.ndarray]:
    """Per-group Gaussian KDE on a shared grid; returns (grid, counts, bandwidths).

    ``unit_fraction``: make the grid step 1/k for an integer k, so shifting by an
    integer moves by whole grid steps (fast evaluation of ``g(y − z)`` on integer z).
    """
    n = np.bincount(groups, minlength=n_groups).astype(float)
    s1 = np.bincount(groups, weights=values, minlength=n_groups)
    s2 = np.bincount(groups, weights=values**2, minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s1 / np.maximum(n, 1)
        std = np.sqrt(np.maximum(s2 / np.maximum(n, 1) - mean**2, 0.0) * n / np.maximum(n - 1, 1))
        h = bandwidth_scale * std * np.maximum(n, 1) ** (-0.2)
    lo, hi = float(values.min()), float(values.max())
    span = max(hi - lo, 1.0)
    pad = 8 * max(float(np.nanmax(h)) if h.size else 0.0, span / max_grid * 4)
    span_total = hi - lo + 2 * pad
    n_g = int(min(max_grid, max(64, 2 ** int(np.ceil(np.log2(span_total / 1e-3 + 2))))))
    dy = span_total / (n_g - 1)
    if unit_fraction:
        dy = 1.0 / math.ceil(1.0 / dy) if dy < 1 else float(math.ceil(dy))
        n_g = int(math.ceil(span_total / dy)) + 1
    # Floor the bandwidth at two grid steps (and pad again if it grew).
    h = np.maximum(np.nan_to_num(h), 2 * dy)
    y0 = lo - pad
    pos = (values - y0) / dy
    i0 = np.clip(np.floor(pos).astype(np.int64), 0, n_g - 2)
    frac = pos - i0
    hist = np.zeros((n_groups, n_g))
    np.add.at(hist, (groups, i0), 1 - frac)
    np.add.at(hist, (groups, i0 + 1), frac)
    hist /= np.maximum(n, 1)[:, None] * dy
    n_fft = 2 * n_g  # zero padding: no wrap-around
    freq = np.fft.rfftfreq(n_fft, d=dy)
    kernel_ft = np.exp(-2 * (np.pi * freq[None, :] * h[:, None]) ** 2)
    dens = np.fft.irfft(np.fft.rfft(hist, n=n_fft, axis=1) * kernel_ft, n=n_fft, axis=1)
    dens = np.maximum(dens[:, :n_g], 0.0)
    return _GridDensity(y0, dy, dens), n, h


@dataclass(frozen=True)
class ConditionalKDE:
    """A fitted conditional density ``f(y | z)`` for integer true counts ``z``.

    Build with :func:`fit_conditional_kde`; evaluate with :meth:`pdf` / :meth:`logpdf`
    (satisfies :class:`research.attacker.posterior.Likelihood`).
    """

    per_z: _GridDensity
    n_per_z: np.ndarray
    bandwidths: np.ndarray
    residual: _GridDensity
    prior_weight: float

    @property
    def max_logpdf(self) -> float:
        """Upper bound of :meth:`logpdf` (a mixture never exceeds its components' max)."""
        top = max(float(self.per_z.values.max(initial=0.0)), float(self.residual.values.max()))
        return float(np.log(max(top, DENSITY_FLOOR)))

    def pdf(self, y: np.ndarray, z: np.ndarray) -> np.ndarray:
        """Density of ``y`` given true count ``z`` (broadcasting; non-integer z rounded)."""
        y = np.asarray(y, dtype=float)
        zi = np.rint(np.asarray(z, dtype=float)).astype(np.int64)
        y, zi = np.broadcast_arrays(y, zi)
        n_rows = self.n_per_z.shape[0]
        known = (zi >= 0) & (zi < n_rows)
        rows = np.where(known, zi, 0)
        n_z = np.where(known, self.n_per_z[rows], 0.0)
        f_z = np.where(n_z > 0, self.per_z.at(rows, y), 0.0)
        g = self.residual.at(np.zeros_like(zi), y - zi)
        k = self.prior_weight
        return np.maximum((n_z * f_z + k * g) / (n_z + k), DENSITY_FLOOR)

    def logpdf(self, y: np.ndarray, z: np.ndarray) -> np.ndarray:
        """Log of :meth:`pdf` (fast path for ``y`` of shape (..., 1) and a z grid 0..Z)."""
        y = np.asarray(y, dtype=float)
        z = np.asarray(z)
        if (
            z.ndim == 1
            and y.ndim >= 1
            and y.shape[-1] == 1
            and z.size
            and np.array_equal(z, np.arange(z.size))
            and self.residual.dy <= 1
        ):
            return np.log(self._pdf_zgrid(y[..., 0], z.size))
        return np.log(self.pdf(y, z))

    def _pdf_zgrid(self, y: np.ndarray, n_z: int) -> np.ndarray:
        """``pdf(y[..., None], arange(n_z))`` with index arithmetic shared across z."""
        k = self.prior_weight
        # Residual g(y − z): the grid step is 1/s, so z shifts the index by s·z exactly.
        res = self.residual
        s = int(round(1.0 / res.dy))
        vals = np.concatenate([[0.0, 0.0], res.values[0], [0.0, 0.0]])  # outside → 0
        n_g = vals.size
        pos = (y - res.y0) / res.dy
        base = np.floor(pos)
        frac = (pos - base)[..., None]
        idx = (base.astype(np.int64) + 2)[..., None] - s * np.arange(n_z)
        np.clip(idx, 0, n_g - 2, out=idx)
        g = vals.take(idx)
        g += (vals.take(idx + 1) - g) * frac
        n_rows = min(n_z, self.n_per_z.shape[0])
        n = np.zeros(n_z)
        n[:n_rows] = self.n_per_z[:n_rows]
        out = g * (k / (n + k))
        rows = np.flatnonzero(n > 0)
        if rows.size:
            # Per-z part: the grid position depends on y only, gather all rows at once.
            f_z = self.per_z.at(rows[:, None], y.reshape(1, -1))  # (R, N)
            f_z = np.moveaxis(f_z.reshape(rows.size, *y.shape), 0, -1)
            out[..., rows] += f_z * (n[rows] / (n[rows] + k))
        return np.maximum(out, DENSITY_FLOOR)


def fit_conditional_kde(
    true_counts: np.ndarray,
    released: np.ndarray,
    *,
    bandwidth_scale: float = 0.1,
    prior_weight: float = 1.0,
    max_grid: int = 8192,
) -> ConditionalKDE:
    """Learn ``f(y | z)`` from training pairs (thesis §4.5.2; module docstring).

    Args:
        true_counts: true counts ``z`` (non-negative integers), any shape.
        released: released values ``y``, same shape.
        bandwidth_scale: multiplier of Scott's bandwidth (thesis: 0.1).
        prior_weight: weight κ of the pooled residual density.
        max_grid: grid points per density (accuracy/memory trade-off).

    Returns:
        A :class:`ConditionalKDE`.
    """
    bandwidth_scale = check_positive("bandwidth_scale", bandwidth_scale)
    prior_weight = check_positive("prior_weight", prior_weight)
    z = np.asarray(true_counts).ravel()
    y = np.asarray(released, dtype=float).ravel()
    if z.shape != y.shape or z.size < 2:
        raise InvalidParameterError(
            f"true_counts and released must have the same size >= 2, not {z.size} and {y.size}"
        )
    if not np.all(np.isfinite(y)):
        raise InvalidParameterError("released values must be finite")
    zi = np.rint(z).astype(np.int64)
    if np.any(zi < 0) or np.any(np.abs(z - zi) > 1e-9):
        raise InvalidParameterError("true_counts must be non-negative integers")
    per_z, n, h = _fit_grid(zi, y, int(zi.max()) + 1, bandwidth_scale, max_grid)
    residual, _, _ = _fit_grid(
        np.zeros_like(zi), y - zi, 1, bandwidth_scale, max_grid, unit_fraction=True
    )
    return ConditionalKDE(per_z, n, h, residual, prior_weight)
