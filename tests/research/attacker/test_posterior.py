"""Posterior formulas against brute-force enumeration over partitions (thesis §4.4, app. B)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mechanisms.errors import InvalidParameterError
from research.attacker import (
    LaplaceLikelihood,
    condition_prior,
    confidence_class,
    dp_worst_case_bound,
    localized_by_class,
    noisy_posterior,
    open_regions,
    priors,
    true_count_posterior,
)


def _assignments(n_users: int, n_rooms: int):
    return itertools.product(range(n_rooms), repeat=n_users)


def brute_true_posterior(p: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Pr[user 0 in l | C = counts] by enumerating every assignment (eq. 4.1)."""
    n_users = int(counts.sum())
    num = np.zeros(len(p))
    for a in _assignments(n_users, len(p)):
        if np.array_equal(np.bincount(a, minlength=len(p)), counts):
            num[a[0]] += np.prod(p[list(a)])
    return num / num.sum()


def brute_noisy_posterior(p: np.ndarray, m: int, room: int, y: float, eps: float) -> float:
    """Pr[user 0 in room | Y_room = y] by enumeration, Laplace density on that room's count."""
    num = den = 0.0
    for a in _assignments(m, len(p)):
        z = np.bincount(a, minlength=len(p))[room]
        w = np.prod(p[list(a)]) * eps / 2 * np.exp(-eps * abs(y - z))
        den += w
        num += w * (a[0] == room)
    return num / den


@pytest.mark.parametrize(
    ("p", "counts"),
    [
        (np.array([0.5, 0.3, 0.2]), np.array([2, 1, 1])),
        (np.array([0.1, 0.9]), np.array([1, 3])),
        (np.array([0.2, 0.2, 0.6]), np.array([0, 3, 2])),
    ],
)
def test_eq_4_3_matches_enumeration(p: np.ndarray, counts: np.ndarray) -> None:
    ours = true_count_posterior(counts[None, :])[0]
    np.testing.assert_allclose(ours, brute_true_posterior(p, counts), atol=1e-12)


def test_eq_4_3_open_regions_use_closed_total() -> None:
    counts = np.array([[3, 1, 4, 2]])
    open_mask = np.array([True, False, False, True])
    post = true_count_posterior(counts, open_mask)[0]
    np.testing.assert_allclose(post, [0, 1 / 5, 4 / 5, 0])


@pytest.mark.parametrize("eps", [0.3, 1.0, 4.0])
@pytest.mark.parametrize("y", [-0.7, 1.0, 2.6])
def test_eq_4_4_matches_enumeration(eps: float, y: float) -> None:
    p = np.array([0.5, 0.3, 0.2])
    m = 4
    lik = LaplaceLikelihood(eps)
    released = np.full((1, 3), y)
    ours = noisy_posterior(released, p[None, :], np.array([m]), lik)[0]
    expected = [brute_noisy_posterior(p, m, room, y, eps) for room in range(3)]
    np.testing.assert_allclose(ours, expected, rtol=1e-10)


def test_eq_4_4_with_open_region_matches_enumeration_over_closed() -> None:
    p = np.array([0.4, 0.35, 0.25])
    open_mask = np.array([False, True, False])
    pc = condition_prior(p, open_mask)
    np.testing.assert_allclose(pc, [0.4 / 0.65, 0, 0.25 / 0.65])
    m = 3  # people in the closed rooms 0 and 2
    post = noisy_posterior(np.array([[1.2, 9.0, 0.4]]), pc[None, :], np.array([m]),
                           LaplaceLikelihood(1.0))[0]
    closed_p = np.array([0.4, 0.25]) / 0.65
    np.testing.assert_allclose(post[0], brute_noisy_posterior(closed_p, m, 0, 1.2, 1.0))
    np.testing.assert_allclose(post[2], brute_noisy_posterior(closed_p, m, 1, 0.4, 1.0))
    assert post[1] == 0


def test_posterior_between_prior_and_true_count_posterior() -> None:
    """App. B.2: ε → 0 gives the prior, ε → ∞ gives c/m; in between it moves monotonically."""
    rng = np.random.default_rng(1)
    n_l, m = 6, 40
    p = rng.dirichlet(np.ones(n_l))
    c = rng.multinomial(m, p)
    truth = c / m
    posts = []
    for eps in [1e-4, 0.05, 0.3, 1.0, 3.0, 30.0]:
        post = noisy_posterior(c[None, :].astype(float), p[None, :], np.array([m]),
                               LaplaceLikelihood(eps))[0]
        lo, hi = np.minimum(p, truth), np.maximum(p, truth)
        assert np.all(post >= lo - 1e-9) and np.all(post <= hi + 1e-9)
        posts.append(post)
    np.testing.assert_allclose(posts[0], p, atol=1e-3)
    np.testing.assert_allclose(posts[-1], truth, atol=1e-6)
    # Distance to the true-count posterior shrinks as ε grows.
    d = [np.abs(q - truth).sum() for q in posts]
    assert all(a >= b - 1e-12 for a, b in zip(d, d[1:], strict=False))


def test_worst_case_bound() -> None:
    p = np.array([0.0, 0.1, 0.5])
    b = dp_worst_case_bound(p, 1.0)
    np.testing.assert_allclose(b, [0, 1 / (1 + np.exp(-1) * 9), 1 / (1 + np.exp(-1))])
    assert np.all(dp_worst_case_bound(p[1:], 0.01) >= p[1:])
    with pytest.raises(InvalidParameterError):
        dp_worst_case_bound(p, 0)


def test_priors_per_slot() -> None:
    hist = np.array([[1, 3], [0, 0], [3, 1], [2, 2]])
    pr = priors(hist, np.array([0, 1, 0, 1]), 3)
    np.testing.assert_allclose(pr, [[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]])
    pr = priors(np.array([[1, 3]]), np.array([2]), 3)
    np.testing.assert_allclose(pr[2], [0.25, 0.75])
    with pytest.raises(InvalidParameterError):
        priors(hist, np.array([0, 1, 0, 5]), 3)


def test_confidence_classes_and_localized_counts() -> None:
    assert confidence_class(np.array([0, 0.05, 0.1, 0.11, 0.3, 0.6, 0.8, 0.95, 1.0])).tolist() == [
        -1, 0, 0, 1, 2, 3, 4, 5, 5]
    post = np.array([[0.6, 0.3, 0.1, 0.0]])
    counts = np.array([[6, 3, 1, 5]])
    prior = np.array([[0.3, 0.3, 0.05, 0.35]])
    open_mask = np.array([False, False, False, True])
    all_ = localized_by_class(post, counts, prior, open_mask, guess="all")[0]
    # room 0: class 3 > prior class 2 → 6 people; room 1: same class as prior → excluded;
    # room 2: class 0 vs prior class 0 → excluded; room 3: open → excluded.
    assert all_.tolist() == [0, 0, 0, 6, 0, 0]
    best = localized_by_class(np.array([[0.3, 0.6, 0.1, 0]]), counts, prior * 0 + 0.01, open_mask)
    assert best[0].tolist() == [0, 0, 0, 3, 0, 0]


def test_open_regions_per_attacker() -> None:
    kinds = ["classroom", "office", "corridor", "lab", "public"]
    camera = [False, False, True, True, True]
    assert not open_regions("external", kinds, camera).any()
    assert open_regions("student", kinds, camera).tolist() == [True, False, True, False, True]
    assert open_regions("administrator", kinds, camera).tolist() == camera
    with pytest.raises(InvalidParameterError):
        open_regions("janitor", kinds, camera)


class _NoBound:
    """A likelihood without max_logpdf: forces the unpruned full sum."""

    def __init__(self, inner: LaplaceLikelihood) -> None:
        self.inner = inner

    def logpdf(self, y: np.ndarray, z: np.ndarray) -> np.ndarray:
        return self.inner.logpdf(y, z)


@pytest.mark.parametrize("eps", [0.05, 1.0, 8.0])
def test_pruned_sum_equals_full_sum(eps: float) -> None:
    rng = np.random.default_rng(7)
    n_t, n_l = 30, 20
    m = rng.integers(0, 400, n_t)
    p = rng.dirichlet(np.full(n_l, 0.5), size=n_t)
    c = np.array([rng.multinomial(k, q) for k, q in zip(m, p, strict=True)])
    y = c + rng.laplace(0, 1 / eps, c.shape)
    y[0, 0] = m[0]  # a far-from-prior observation: everyone in one room
    p[1, 0], p[2, 1] = 0.0, 1.0
    lik = LaplaceLikelihood(eps)
    pruned = noisy_posterior(y, p, m, lik)
    full = noisy_posterior(y, p, m, _NoBound(lik))
    np.testing.assert_allclose(pruned, full, rtol=1e-9, atol=1e-12)
