"""Learned noise densities (thesis §4.5.2)."""

from __future__ import annotations

import numpy as np
import pytest

from mechanisms.errors import InvalidParameterError
from research.attacker import LaplaceLikelihood, fit_conditional_kde, noisy_posterior

EPS = 0.7


def _l1_to_laplace(n: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 5, size=n)
    y = z + rng.laplace(0, 1 / EPS, size=n)
    kde = fit_conditional_kde(z, y)
    grid = np.linspace(-15, 20, 3501)
    dx = grid[1] - grid[0]
    err = 0.0
    for zz in range(5):
        f_true = np.exp(LaplaceLikelihood(EPS).logpdf(grid, zz))
        err += np.abs(kde.pdf(grid, zz) - f_true).sum() * dx
    return err / 5


def test_kde_converges_to_laplace_density() -> None:
    errs = [np.mean([_l1_to_laplace(n, s) for s in range(3)]) for n in (200, 5_000, 100_000)]
    assert errs[0] > errs[1] > errs[2]
    assert errs[2] < 0.12


def test_kde_is_a_density_and_learns_a_multiplicative_bias() -> None:
    rng = np.random.default_rng(3)
    z = rng.integers(0, 30, size=20_000)
    y = np.round(z * 1.5 + rng.normal(0, 1, size=z.size))  # TTL-like over-counting
    kde = fit_conditional_kde(z, y)
    grid = np.linspace(-20, 80, 10001)
    mass = kde.pdf(grid, 20).sum() * (grid[1] - grid[0])
    assert mass == pytest.approx(1.0, abs=0.02)
    # The density for z = 20 peaks near 30, not near 20.
    assert abs(grid[np.argmax(kde.pdf(grid, 20))] - 30) < 2
    # Unseen z falls back to the pooled residual density (finite, positive).
    assert np.all(kde.pdf(np.array([100.0]), 200) > 0)


def test_kde_posterior_close_to_known_density_posterior() -> None:
    rng = np.random.default_rng(5)
    n_l, m = 8, 60
    p = rng.dirichlet(np.ones(n_l) * 2)
    z_train = rng.multinomial(m, p, size=4000)
    y_train = z_train + rng.laplace(0, 1 / EPS, size=z_train.shape)
    kde = fit_conditional_kde(z_train, y_train)
    c = rng.multinomial(m, p, size=50)
    y = c + rng.laplace(0, 1 / EPS, size=c.shape)
    pr = np.broadcast_to(p, c.shape)
    known = noisy_posterior(y, pr, np.full(50, m), LaplaceLikelihood(EPS))
    learned = noisy_posterior(y, pr, np.full(50, m), kde)
    assert np.abs(known - learned).mean() < 0.02


def test_kde_rejects_bad_input() -> None:
    with pytest.raises(InvalidParameterError):
        fit_conditional_kde([1.5, 2.0], [1.0, 2.0])
    with pytest.raises(InvalidParameterError):
        fit_conditional_kde([1, 2], [1.0, 2.0], bandwidth_scale=0)


def test_fast_z_grid_path_matches_generic_evaluation() -> None:
    rng = np.random.default_rng(0)
    z = rng.integers(0, 40, 5000)
    kde = fit_conditional_kde(z, z + rng.laplace(0, 2, z.size))
    y = rng.uniform(-10, 60, (50, 3, 1))
    grid = np.arange(80)
    fast = np.exp(kde.logpdf(y, grid))
    slow = kde.pdf(y, grid[None, None, :])
    big = slow > 1e-9
    assert big.mean() > 0.3
    np.testing.assert_allclose(fast[big], slow[big], rtol=1e-6)
    assert np.abs(fast - slow).max() < 1e-9
