"""MIDE mechanisms: β-FNR on adversarial inputs, naive LM violation, denial, ex-post ε."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from mechanisms.errors import InvalidParameterError
from mechanisms.mide import decide
from mechanisms.mide.mechanisms import _sum_laplace_cdf, plan_epsilons, tslm

# Statistical FNR checks: X = number of false negatives among N true positives is
# Binomial(N, p) with p ≤ β under the guarantee. Reject when X exceeds the (1 − ALPHA)
# quantile of Binomial(N, β): false-alarm rate ≤ ALPHA.
ALPHA = 1e-6
BETA = 0.05
# Power: to reject p = 1.3β (30 % off) with probability 0.99 we need
# N ≥ ((z_{1-ALPHA}·sqrt(β(1-β)) + z_{0.99}·sqrt(1.3β(1-1.3β))) / (0.3β))² ≈ 11_800
# for β = 0.05 (z = 4.75, 2.33); N = 20_000 leaves margin.
N = 20_000
CRIT = int(stats.binom.ppf(1 - ALPHA, N, BETA))
MIDE = ["tslm", "ppwlm", "dppwlm"]


def _inputs(kind, rng, alpha=1.0):
    """Adversarial inputs: thresholds c and values g (half-integers avoid ties)."""
    c = rng.integers(20, 400, N).astype(float)
    if kind == "above":  # every predicate just over its threshold
        g = c + 1e-3
    elif kind == "below":
        g = c - 1e-3
    else:  # mixed: just above, just below, deep in the uncertainty region, far away
        g = c + rng.choice([1e-3, -1e-3, -alpha, -2 * alpha, 5 * alpha, -50 * alpha], N)
    return g, c


def _fn(res, g, c):
    truth = g > c
    return int((truth & ~res.positive).sum()), int(truth.sum())


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", MIDE)
@pytest.mark.parametrize("kind", ["above", "mixed"])
def test_beta_fnr_holds_on_adversarial_inputs(algorithm, kind):
    rng = np.random.default_rng(11)
    g, c = _inputs(kind, rng)
    res = decide(g, c, algorithm=algorithm, beta=BETA, alpha=1.0, epsilon_max=4.0, rng=rng)
    fn, npos = _fn(res, g, c)
    crit = int(stats.binom.ppf(1 - ALPHA, npos, BETA))
    assert fn <= crit, f"{algorithm}: {fn} false negatives of {npos} (critical {crit})"


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", MIDE)
def test_not_everything_is_returned_far_below(algorithm):
    """β-FNR alone is met by returning everything; far below c must be rejected."""
    rng = np.random.default_rng(12)
    c = rng.integers(20, 400, N).astype(float)
    g = c - 10.0  # α = 1: far below the uncertainty region [c − 2α, c]
    res = decide(g, c, algorithm=algorithm, beta=BETA, alpha=1.0, epsilon_max=4.0, rng=rng)
    assert int(res.positive.sum()) <= CRIT


@pytest.mark.slow
def test_fnr_check_has_power_against_miscalibration():
    """A TSLM calibrated for 1.3β must fail the same check."""
    rng = np.random.default_rng(13)
    g, c = _inputs("above", rng)
    res = tslm(g, c, beta=1.3 * BETA, alpha=1.0, epsilon_max=4.0, rng=rng)
    fn, _ = _fn(res, g, c)
    assert fn > CRIT


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [1.0, 10.0, 100.0])
def test_naive_laplace_violates_beta_fnr_in_the_region_above_c(alpha):
    """Thesis §5.3.1: no guarantee for g in [c, c + α]; P[FN] = ½(2β)^(1/2) at c + α/2."""
    rng = np.random.default_rng(14)
    c = rng.integers(20, 400, N).astype(float)
    for g in (c + 1e-3, c + alpha / 2):
        res = decide(g, c, algorithm="naive", beta=BETA, alpha=alpha, epsilon_max=4.0,
                     rng=rng)
        fn, npos = _fn(res, g, c)
        assert fn > CRIT, (alpha, fn)


def test_below_threshold_has_no_false_negatives_and_runs():
    rng = np.random.default_rng(3)
    g, c = _inputs("below", rng)
    for alg in MIDE:
        res = decide(g[:500], c[:500], algorithm=alg, beta=BETA, alpha=1.0, epsilon_max=4.0,
                     rng=rng)
        assert res.positive.shape == (500,)


def test_denial_when_epsilon_max_is_too_small():
    g = np.array([10.0, 50.0])
    c = np.array([20.0, 20.0])
    # TSLM needs ln(10) = 2.30; PPWLM/DPPWLM need ln(4/0.1) = 3.69 (β/m per step)
    r = decide(g, c, algorithm="tslm", beta=BETA, alpha=1.0, epsilon_max=2.0)
    assert r.denied and r.epsilon_spent == 0.0 and not r.positive.any()
    assert not decide(g, c, algorithm="tslm", beta=BETA, alpha=1.0, epsilon_max=3.0).denied
    for alg in ("ppwlm", "dppwlm"):
        r = decide(g, c, algorithm=alg, beta=BETA, alpha=1.0, epsilon_max=3.0)
        assert r.denied and r.public()["denied"] and r.public()["positive"] == []
        assert not decide(g, c, algorithm=alg, beta=BETA, alpha=1.0, epsilon_max=3.7).denied


def test_ex_post_entries_match_theorems():
    rng = np.random.default_rng(4)
    c = np.full(2000, 100.0)
    g = c + rng.choice([-1e7, 1e7, 0.5, -0.5, -1.5], 2000)
    beta, alpha, m = BETA, 1.0, 4
    # Thm 5.4: TSLM costs ε = ln(1/(2β))/α for every predicate
    r = decide(g, c, algorithm="tslm", beta=beta, alpha=alpha, epsilon_max=4.0, rng=rng)
    eps = math.log(1 / (2 * beta)) / alpha
    assert r.epsilon_spent == pytest.approx(eps)
    np.testing.assert_allclose(r.ex_post, eps)
    # Thm 5.5: PPWLM ex-post ε_j from the plan, ≤ ε_m; far predicates stop at ε₁
    eps_m = math.log(m / (2 * beta)) / alpha
    plan = plan_epsilons(1e-5, eps_m, m)
    r = decide(g, c, algorithm="ppwlm", beta=beta, alpha=alpha, epsilon_max=4.0, rng=rng)
    assert r.epsilon_spent == pytest.approx(eps_m) == pytest.approx(plan[-1])
    assert np.all(np.isin(r.ex_post, plan))
    far = np.abs(g - c) > 1e6
    np.testing.assert_allclose(r.ex_post[far], plan[0])
    assert r.ex_post_dp == pytest.approx(eps_m)  # near ones reach the last step
    # Thm 5.6: DPPWLM ex-post ≤ ε_m, ex-post DP = max(E)
    r = decide(g, c, algorithm="dppwlm", beta=beta, alpha=alpha, epsilon_max=4.0, rng=rng)
    assert r.epsilon_spent == pytest.approx(eps_m)
    assert np.all(r.ex_post <= eps_m * (1 + 1e-12))
    np.testing.assert_allclose(r.ex_post[far], plan[0])
    assert r.ex_post_dp == pytest.approx(r.ex_post.max())


def test_public_view_carries_no_ex_post_or_values():
    r = decide(np.array([5.0, 30.0]), np.array([10.0, 10.0]), algorithm="dppwlm", beta=BETA,
               alpha=1.0, epsilon_max=4.0, rng=np.random.default_rng(0))
    pub = r.public()
    assert set(pub) == {"algorithm", "beta", "alpha", "denied", "epsilon", "positive"}
    assert "ex_post" not in repr(r)


def test_seeded_runs_reproduce():
    g = np.arange(100.0)
    for alg in ("naive", "tslm", "ppwlm", "dppwlm"):
        a = decide(g, 50.0, algorithm=alg, beta=BETA, alpha=1.0, epsilon_max=4.0,
                   rng=np.random.default_rng(9))
        b = decide(g, 50.0, algorithm=alg, beta=BETA, alpha=1.0, epsilon_max=4.0,
                   rng=np.random.default_rng(9))
        np.testing.assert_array_equal(a.positive, b.positive)
        np.testing.assert_array_equal(a.ex_post, b.ex_post)


def test_sensitivity_scales_epsilon():
    r1 = decide([1.0], [0.0], algorithm="tslm", beta=BETA, alpha=2.0, epsilon_max=9.0)
    r2 = decide([1.0], [0.0], algorithm="tslm", beta=BETA, alpha=2.0, epsilon_max=9.0,
                sensitivity=3.0)
    assert r2.epsilon_spent == pytest.approx(3 * r1.epsilon_spent)


@pytest.mark.parametrize(("a", "b"), [(0.5, 2.0), (1.0, 1.0), (0.01, 0.011), (3.0, 0.2)])
def test_sum_of_two_laplace_cdf_closed_form(a, b):
    def dens(w):  # numerical convolution, split at the kinks 0 and w
        def f(x):
            return 0.25 * a * b * math.exp(-a * abs(x) - b * abs(w - x))
        lo, hi = sorted((0.0, w))
        return sum(integrate.quad(f, s, e)[0]
                   for s, e in ((-np.inf, lo), (lo, hi), (hi, np.inf)))
    for x in (-3.0 / a, -0.4, 0.0, 0.7, 5.0 / b):
        num = integrate.quad(dens, -np.inf, min(x, 0.0), epsabs=1e-12)[0]
        if x > 0:
            num += integrate.quad(dens, 0.0, x, epsabs=1e-12)[0]
        assert float(_sum_laplace_cdf(np.array(x), a, b)) == pytest.approx(num, abs=1e-6)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"algorithm": "magic"}, "algorithm"),
    ({"algorithm": "tslm", "beta": 0.7}, "beta"),
    ({"algorithm": "tslm", "alpha": 0}, "alpha"),
    ({"algorithm": "tslm", "steps": 3}, "parameters"),
    ({"algorithm": "ppwlm", "epsilon_1": 10.0}, "epsilon_1"),
    ({"algorithm": "dppwlm", "fine_steps": 0}, "fine_steps"),
])
def test_bad_parameters_are_refused(kwargs, match):
    base = {"beta": BETA, "alpha": 1.0, "epsilon_max": 4.0}
    base.update(kwargs)
    with pytest.raises(InvalidParameterError, match=match):
        decide(np.ones(3), np.zeros(3), **base)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["above", "mixed"])
def test_beta_fnr_holds_for_dppwlm_with_public_range(kind):
    rng = np.random.default_rng(15)
    g, c = _inputs(kind, rng)
    res = decide(g, c, algorithm="dppwlm", beta=BETA, alpha=1.0, epsilon_max=4.0, rng=rng,
                 value_range=(0.0, 3 * c))
    fn, npos = _fn(res, g, c)
    assert fn <= int(stats.binom.ppf(1 - ALPHA, npos, BETA))


def test_truncated_estimate_matches_closed_form_when_range_is_irrelevant():
    from mechanisms.mide.mechanisms import _p_undecided

    rng = np.random.default_rng(0)
    noisy = rng.uniform(40, 60, 50)
    c = np.full(50, 50.0)
    # informative previous step (rate 2): a range ±40 around it changes nothing
    closed = _p_undecided(noisy, c, 3.0, 2.0, 5.0, None, None)
    trunc = _p_undecided(noisy, c, 3.0, 2.0, 5.0, noisy - 40, noisy + 40)
    np.testing.assert_allclose(trunc, closed, atol=1e-4)
    # uninformative previous step (rate 1e-5): uniform over [0, 100] → ≈ 2α/100
    flat = _p_undecided(noisy, c, 3.0, 1e-5, 50.0, np.zeros(50), np.full(50, 100.0))
    np.testing.assert_allclose(flat, 0.06, atol=2e-3)
    with pytest.raises(InvalidParameterError, match="value_range"):
        decide(np.ones(3), 0.0, algorithm="dppwlm", beta=BETA, alpha=1.0, epsilon_max=4.0,
               value_range=(1.0, 0.0))


@pytest.mark.parametrize(("mu", "r1", "r2", "lo", "hi", "t"), [
    (10.0, 0.5, 2.0, 8.0, 30.0, 9.0),  # range cuts through the peak
    (10.0, 0.5, 0.5, 12.0, 20.0, 15.0),  # equal rates, μ below the range
    (50.0, 1e-3, 3.0, 0.0, 30.0, 25.0),  # nearly flat, μ above the range
])
def test_truncated_joint_cdf_matches_numerical_integration(mu, r1, r2, lo, hi, t):
    from mechanisms.mide.mechanisms import _truncated_joint_cdf

    def f_x(x):
        return 0.5 * r1 * math.exp(-r1 * abs(x - mu))

    def f_y_cdf(y):
        return 0.5 * math.exp(r2 * y) if y < 0 else 1 - 0.5 * math.exp(-r2 * y)

    pts = sorted({lo, hi, min(max(mu, lo), hi), min(max(t, lo), hi)})
    num = sum(integrate.quad(lambda x: f_x(x) * f_y_cdf(t - x), a, b, epsabs=1e-13)[0]
              for a, b in zip(pts[:-1], pts[1:], strict=False))
    mass = sum(integrate.quad(f_x, a, b, epsabs=1e-13)[0]
               for a, b in zip(pts[:-1], pts[1:], strict=False))
    joint, m = _truncated_joint_cdf(*(np.array([v]) for v in (t, mu)), r1, r2,
                                    np.array([lo]), np.array([hi]))
    assert float(m[0]) == pytest.approx(mass, rel=1e-9, abs=1e-12)
    assert float(joint[0]) == pytest.approx(num, rel=1e-7, abs=1e-12)
