"""MIDE mechanisms: β-FNR on adversarial inputs, naive LM violation, denial, ex-post ε."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from mechanisms.errors import InvalidParameterError
from mechanisms.mide import decide
from mechanisms.mide.mechanisms import _sum_laplace_cdf, plan_epsilons, tslm

# Statistical checks. Every count below is a sum of independent Bernoulli trials (one
# per predicate; decide() is vectorised, so one call is one sample of n trials) whose
# probabilities p_i are each ≤ a bound b_i derived from the thesis (see _steps and the
# bounds below). By Hoeffding (1956) such a sum is stochastically below
# Binomial(n, mean b_i) in the upper tail, so rejecting when the count exceeds the
# (1 − ALPHA) quantile of Binomial(n, mean b_i) has false-alarm rate ≤ ALPHA per group
# (≤ 3·ALPHA per test: at most three disjoint groups are checked).
ALPHA = 1e-6
BETA = 0.05
# Power: to reject a mechanism calibrated 30 % off (every β_j, hence every bound, ×1.3)
# with probability POWER at a bound p we need
# n ≥ ((z_{1-ALPHA}·sqrt(p(1-p)) + z_{POWER}·sqrt(1.3p(1-1.3p))) / (0.3p))²  (z = 4.75, 2.33):
# p = β = 0.05 → 11_800; p = 0.0275 (far-below bound of DPPWLM, the smallest testable
# one) → 21_500; a group that is a third of a mixed input → 3 × that.
# N = 20_000 for one-group inputs whose bound is ≈ β; N_WIDE = 100_000 for the far-below
# and mixed inputs. test_checks_reject_a_miscalibrated_mechanism recomputes the exact
# binomial power of every group and runs the 30 %-off mechanism against the same check.
POWER = 0.99
SCALE_OFF = 1.3
N = 20_000
N_WIDE = 100_000
CRIT = int(stats.binom.ppf(1 - ALPHA, N, BETA))
MIDE = ["tslm", "ppwlm", "dppwlm"]
M_STEPS = 4  # library default m for PPWLM/DPPWLM
EPS_1 = 1e-5  # library default ε₁ (thesis default)
FAR = 10.0  # far below: g = c − FAR·α, well outside the uncertainty region [c − 2α, c]


def _inputs(kind, rng, alpha=1.0, n=N):
    """Adversarial inputs: thresholds c and values g (offsets avoid ties)."""
    c = rng.integers(20, 400, n).astype(float)
    if kind == "above":  # every predicate just over its threshold
        g = c + 1e-3
    elif kind == "below":  # every predicate just under it (in the uncertainty region)
        g = c - 1e-3
    elif kind == "edge":  # just past the lower end of the uncertainty region
        g = c - 2 * alpha - 1e-3
    elif kind == "far":
        g = c - FAR * alpha
    else:  # mixed: just above, just below, deep in the uncertainty region, far away
        g = c + rng.choice([1e-3, -1e-3, -alpha, -2 * alpha, 5 * alpha, -50 * alpha], n)
    return g, c


def _fn(res, g, c):
    truth = g > c
    return int((truth & ~res.positive).sum()), int(truth.sum())


def _plan(beta, alpha, m=M_STEPS):
    """Alg. 2–3 line 3: ε_j = ε₁·ω^(j−1), ω = (ε_m/ε₁)^(1/(m−1)), ε_m = ln(m/(2β))/α."""
    eps_m = math.log(m / (2 * beta)) / alpha
    return EPS_1 * (eps_m / EPS_1) ** (np.arange(m) / (m - 1))


def _steps(res, algorithm, beta, alpha):
    """(ε_j, β_j) of the steps the mechanism ran, with ½e^(−ε_j·α_j) = β_j (Δ = 1).

    TSLM (Alg. 1): one step, β. PPWLM (Alg. 2): the plan, β/m per step (steps it did not
    run only loosen the bounds). DPPWLM (Alg. 3–4): the steps are data dependent; each ran
    at an ε where some predicates stopped (the distinct ex-post values, one per step for
    inputs this large), and a step whose ε lies in (B_{k−1}, B_k] of the remaining plan
    consumes the levels up to k: β_j = β·(levels consumed)/m, Σ β_j = β.
    """
    if algorithm == "tslm":
        return np.array([math.log(1 / (2 * beta)) / alpha]), np.array([beta])
    plan = _plan(beta, alpha)
    if algorithm == "ppwlm":
        return plan, np.full(M_STEPS, beta / M_STEPS)
    eps = np.unique(res.ex_post)
    assert eps.size == res.steps, "a DPPWLM step stopped no predicate: bound not derivable"
    top = np.searchsorted(plan * (1 + 1e-9), eps) + 1  # 1-based top plan level used
    levels = np.diff(np.concatenate([[0], top]))
    assert levels.min() >= 1 and top[-1] == M_STEPS
    # the last step runs at ε_m exactly (its width ≤ α); taking ε_m from the plan rather
    # than from the run keeps a miscalibrated mechanism from loosening its own bound
    return np.append(eps[:-1], plan[-1]), beta * levels / M_STEPS


def _miss_bound(eps, betas, x):
    """Upper bound on P[λ not returned] for g = c + x (union over steps).

    Step j eliminates λ iff g + η_j ≤ c − α_j, and P[η_j ≤ −α_j − x] = ½e^(−ε_j(α_j + x))
    = β_j·e^(−ε_j·x) (an upper bound also when α_j + x < 0, as cosh ≥ 1). x > 0 is β-FNR
    (Thm 5.4–5.6, ≤ Σβ_j = β); x = −δ just below c gives ≤ β·e^(ε_m·δ) ≈ β: a mechanism
    with β-FNR returns predicates just below c almost as surely as just above.
    """
    return np.minimum(np.exp(-np.outer(x, eps)) @ betas, 1.0)


def _return_bound(eps, betas, d):
    """Upper bound on P[λ returned] for g = c − d, d ≥ 2α (outside [c − 2α, c], Def. 5.5).

    A step j before the last decides λ positive iff g + η_j > c + α_j: probability
    ½e^(−ε_j(d + α_j)) = β_j·e^(−ε_j·d). The last step returns every λ with
    g + η > c − α_last (decided or last undecided, Alg. 1 line 4, Alg. 2 line 15):
    ½e^(−ε_last(d − α_last)) = e^(−ε_last·d)/(4β_last). At d = 2α this is ≤ β (TSLM: = β).
    """
    d = np.asarray(d, dtype=float)
    head = np.exp(-np.outer(d, eps[:-1])) @ betas[:-1]
    return np.minimum(head + np.exp(-eps[-1] * d) / (4 * betas[-1]), 1.0)


def _groups(res, algorithm, g, c, *, beta=BETA, alpha=1.0):
    """(what, count, n, mean bound) for the disjoint groups present in the input."""
    eps, betas = _steps(res, algorithm, beta, alpha)
    x = g - c
    out = []
    for what, sel, bad, bound in (
        ("false negatives", x > 0, ~res.positive, _miss_bound),
        ("just below c, not returned", (x <= 0) & (x >= -0.01 * alpha), ~res.positive,
         _miss_bound),
        ("below c − 2α, returned", x <= -2 * alpha, res.positive,
         lambda e, b, v: _return_bound(e, b, -v)),
    ):
        if sel.any():
            out.append((what, int(bad[sel].sum()), int(sel.sum()),
                        float(bound(eps, betas, x[sel]).mean())))
    return out


def _crit(n, bound):
    return int(stats.binom.ppf(1 - ALPHA, n, bound))


def _assert_within_bounds(res, algorithm, g, c, **kw):
    for what, count, n, bound in _groups(res, algorithm, g, c, **kw):
        crit = _crit(n, bound)
        assert count <= crit, (
            f"{algorithm}: {what}: {count} of {n} (bound {bound:.4g}, critical {crit})")


def _run(algorithm, kind, seed, n=N, **kw):
    rng = np.random.default_rng(seed)
    g, c = _inputs(kind, rng, n=n)
    params = {"beta": BETA, "alpha": 1.0, "epsilon_max": 4.0} | kw
    return decide(g, c, algorithm=algorithm, rng=rng, **params), g, c


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", MIDE)
@pytest.mark.parametrize(("kind", "n"), [("above", N), ("mixed", N_WIDE)])
def test_beta_fnr_holds_on_adversarial_inputs(algorithm, kind, n):
    """β-FNR per predicate; mixed also checks just below c and below c − 2α."""
    res, g, c = _run(algorithm, kind, 11, n)
    fn, npos = _fn(res, g, c)
    assert fn <= int(stats.binom.ppf(1 - ALPHA, npos, BETA))  # the guarantee itself
    _assert_within_bounds(res, algorithm, g, c)  # the exact per-predicate bounds


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", MIDE)
def test_not_everything_is_returned_far_below(algorithm):
    """β-FNR alone is met by returning everything; far below c must be rejected.

    g = c − 10α: TSLM returns with e^(−10ε)/(4β) = 5·10⁻¹⁰ (critical count 1 of 10⁵);
    PPWLM/DPPWLM keep the step-1 chance β_1·e^(−10ε₁) ≈ β/m of deciding positive at
    ε₁ = 10⁻⁵ (its α₁ ≈ 3.7·10⁵ dwarfs 10α), bounds ≈ 0.032 and ≈ 0.027 (_return_bound).
    """
    res, g, c = _run(algorithm, "far", 12, N_WIDE)
    [(_, count, n, bound)] = _groups(res, algorithm, g, c)
    assert count <= _crit(n, bound), (count, n, bound)


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", MIDE)
@pytest.mark.parametrize("kind", ["below", "edge"])
def test_below_threshold_is_bounded_by_the_uncertainty_region(algorithm, kind):
    """All counts just below c, or just below c − 2α (no false negatives by definition).

    Just below c (inside [c − 2α, c]) the thesis bounds no false positive, but β-FNR
    forces returns: P[not returned] ≤ Σβ_j·e^(ε_j·δ) ≈ β (a TSLM without the −α shift
    misses half). Just below c − 2α: P[returned] ≤ _return_bound(2α + δ) ≤ β.
    """
    res, g, c = _run(algorithm, kind, 3)
    assert not res.denied and _fn(res, g, c) == (0, 0)
    _assert_within_bounds(res, algorithm, g, c)


VARIANTS = {  # deliberately wrong mechanisms every check must reject
    "beta_30pct_off": {"beta": SCALE_OFF * BETA},
}


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", MIDE)
@pytest.mark.parametrize(("kind", "n"), [("above", N), ("below", N), ("edge", N),
                                         ("far", N_WIDE), ("mixed", N_WIDE)])
def test_checks_reject_a_miscalibrated_mechanism(algorithm, kind, n):
    """Power: the same checks, run on a mechanism calibrated for 1.3β, must fail.

    Far below c a 30 % error in TSLM's β is invisible (5·10⁻¹⁰ → 10⁻⁹); there the
    check is shown to reject an uncertainty width 3× too wide (return rate ≈ 2·10⁻³).
    """
    wrong = {"alpha": 3.0} if (algorithm, kind) == ("tslm", "far") else {"beta": SCALE_OFF * BETA}
    res, g, c = _run(algorithm, kind, 13, n, **wrong)
    groups = _groups(res, algorithm, g, c)
    if "beta" in wrong:  # design power against every bound ×1.3, from the binomial law
        power = max(stats.binom.sf(_crit(m, b), m, SCALE_OFF * b) for _, _, m, b in groups)
        assert power >= POWER, (groups, power)
    assert any(count > _crit(m, b) for _, count, m, b in groups), groups


@pytest.mark.slow
def test_fnr_check_has_power_against_miscalibration():
    """A TSLM calibrated for 1.3β must fail the plain Binomial(N, β) FNR check."""
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


def test_all_below_threshold_runs_and_denies_consistently():
    """On all-below inputs each mechanism denies exactly when ε_m > ε_max, else runs."""
    rng = np.random.default_rng(3)
    g, c = _inputs("below", rng, n=500)
    for alg, m in (("tslm", 1), ("ppwlm", M_STEPS), ("dppwlm", M_STEPS)):
        need = math.log(m / (2 * BETA))  # ε_m at α = 1, Δ = 1 (Alg. 1–3 line 2)
        r = decide(g, c, algorithm=alg, beta=BETA, alpha=1.0, epsilon_max=need * (1 - 1e-9),
                   rng=rng)
        assert r.denied and r.epsilon_spent == 0.0 and not r.positive.any(), alg
        r = decide(g, c, algorithm=alg, beta=BETA, alpha=1.0, epsilon_max=need * (1 + 1e-9),
                   rng=rng)
        assert not r.denied and r.epsilon_spent == pytest.approx(need), alg
        assert r.positive.shape == (500,) and r.ex_post.max() <= need * (1 + 1e-12), alg


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
@pytest.mark.parametrize(("kind", "n"), [("above", N), ("mixed", N_WIDE)])
def test_beta_fnr_holds_for_dppwlm_with_public_range(kind, n):
    rng = np.random.default_rng(15)
    g, c = _inputs(kind, rng, n=n)
    res = decide(g, c, algorithm="dppwlm", beta=BETA, alpha=1.0, epsilon_max=4.0, rng=rng,
                 value_range=(0.0, 3 * c))
    fn, npos = _fn(res, g, c)
    assert fn <= int(stats.binom.ppf(1 - ALPHA, npos, BETA))
    _assert_within_bounds(res, "dppwlm", g, c)  # per-predicate bounds of its own steps


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
