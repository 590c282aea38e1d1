"""The default 2-D rule with the DP concentration feature (issue 17), and HB-2D /
Privelet-2D / MWEM-2D: data reach the choice only through charged DP estimates, the
feature spends are accounted, the feature's noise is what its ε implies."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from mechanisms.accounting import Accountant, Budget
from mechanisms.histograms import hier2d
from mechanisms.histograms import select2d as s2

# KS test of the feature's noise against Laplace(0, 1/ε): false alarm α = 1e-3; with
# N = 5 000 draws the KS critical distance is ≈ 1.95/√N ≈ 0.028, while a 30 % wrong
# scale moves the Laplace CDF by ≈ 0.07 at its widest, so power is ≈ 1 (checked below).
ALPHA = 1e-3
N_DRAWS = 5_000


def _spiky(seed: int) -> np.ndarray:
    """64 × 64, N = 10 000: 16 spikes of 600 (γ = 0.96) and 400 single records."""
    rng = np.random.default_rng(seed)
    x = np.zeros(64 * 64)
    cells = rng.permutation(x.size)
    x[cells[:16]] = 600.0
    x[cells[16:416]] = 1.0
    return x.reshape(64, 64)


def _spread(seed: int) -> np.ndarray:
    """64 × 64, N = 10 000 records spread evenly (γ ≈ 0.01)."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(10_000, np.full(4096, 1 / 4096)).reshape(64, 64).astype(float)



def _conc(x: np.ndarray) -> s2.SpatialRelease:
    """The concentration rule (no longer the default for rectangles), seed 7."""
    return s2.release_2d(x, 1.0, features="concentration", rng=np.random.default_rng(7))

def test_choice_invariant_to_data_beyond_the_dp_features(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, c = _spiky(0), _spiky(1), _spread(2)
    assert a.sum() == b.sum() == c.sum() == 10_000
    rels = [_conc(x) for x in (a, b, c)]
    # a and b differ everywhere but share N and the top-16 mass: same N̂, same choice
    assert rels[0].scale == rels[1].scale
    assert rels[0].algorithm == rels[1].algorithm == "auto:kd-tree"
    assert rels[2].algorithm == "auto:AG"  # the choice is data-dependent …
    monkeypatch.setattr(s2, "noisy_total", lambda *a, **k: 10_000.0)
    monkeypatch.setattr(s2, "noisy_top_mass", lambda *a, **k: 100.0)
    fixed = [_conc(x).algorithm for x in (a, c)]
    assert fixed == ["auto:AG", "auto:AG"]  # … only through N̂ and T̂
    monkeypatch.setattr(s2, "noisy_top_mass", lambda *a, **k: 9_000.0)
    fixed = [_conc(x).algorithm for x in (a, c)]
    assert fixed == ["auto:kd-tree", "auto:kd-tree"]


def test_rule_thresholds() -> None:
    n = 256 * 256
    at = s2.CONC_DENSITY * n  # ψ exactly at the threshold for ε = 1
    assert s2.select_2d_concentration((256, 256), 1.0, at * 1.01, 0.71 * at) == "kd-tree"
    assert s2.select_2d_concentration((256, 256), 1.0, at * 1.01, 0.69 * at) == "AG"
    assert s2.select_2d_concentration((256, 256), 1.0, at * 0.99, 0.99 * at) == "AG"
    assert s2.select_2d_concentration((256, 256), 1.0, at * 2, None) == "AG"
    assert s2.select_2d_concentration((256, 256), 0.1, 10.0, None, "identity") == "kd-tree"


@pytest.mark.parametrize(("x", "bought"), [(_spiky(3), True), (_spiky(3) / 100, False)])
def test_feature_spends_are_accounted(x: np.ndarray, bought: bool) -> None:
    acct = Accountant(Budget(1.0), name="t")
    rel = s2.release_2d(
        x, 0.8, features="concentration", accountant=acct, rng=np.random.default_rng(1)
    )
    recs = acct.records
    assert recs[0].mechanism == "select2d:scale"
    assert recs[0].epsilon == pytest.approx(s2.AUTO_SCALE_SHARE * 0.8)
    conc = [r for r in recs if r.mechanism == "select2d:concentration"]
    if bought:  # ψ ≥ CONC_DENSITY: the top-k mass is bought second, before the algorithm
        assert recs[1] is conc[0] and conc[0].epsilon == pytest.approx(s2.CONC_SHARE * 0.8)
        assert rel.parts["concentration"] == pytest.approx(s2.CONC_SHARE * 0.8)
    else:  # N̂·ε/n below the threshold: nothing bought, the algorithm gets (1 − ρ)ε
        assert conc == [] and "concentration" not in rel.parts
    assert acct.spent().epsilon == pytest.approx(0.8)
    assert sum(rel.parts.values()) == pytest.approx(0.8)


def test_top_mass_sensitivity_is_one() -> None:
    rng = np.random.default_rng(5)
    for _ in range(300):
        x = rng.poisson(rng.choice([0.1, 3.0, 50.0]), 200).astype(float)
        top = np.sort(x)[-16:].sum()
        i = rng.integers(200)
        for d in (1.0, -1.0):
            y = x.copy()
            y[i] = max(y[i] + d, 0.0)
            assert abs(np.sort(y)[-16:].sum() - top) <= 1.0


def _ks_laplace(z: np.ndarray, scale: float) -> float:
    return float(stats.kstest(z, stats.laplace(scale=scale).cdf).pvalue)


def test_top_mass_noise_is_laplace_of_its_epsilon() -> None:
    x = _spiky(4)
    truth = np.sort(x.ravel())[-16:].sum()
    eps = 0.3
    rng = np.random.default_rng(9)
    accts = [Accountant(Budget(eps), name="t") for _ in range(N_DRAWS)]
    z = np.array([s2.noisy_top_mass(x, eps, 16, accountant=a, rng=rng) for a in accts]) - truth
    assert all(a.spent().epsilon == pytest.approx(eps) for a in accts)  # charged each time
    assert _ks_laplace(z, 1 / eps) > ALPHA
    assert _ks_laplace(z, 1.3 / eps) < ALPHA  # power: a 30 %-off scale is rejected
    assert _ks_laplace(z, 0.7 / eps) < ALPHA


def test_hb2d_and_privelet2d_exact_without_noise_and_charged() -> None:
    x = np.random.default_rng(0).poisson(3.0, (37, 50)).astype(float)
    for fn in (hier2d.hb2d_release, hier2d.privelet2d_release):
        acct = Accountant(Budget(1e9), name="t")
        rel = fn(x, 1e9, accountant=acct, rng=np.random.default_rng(1))
        assert np.abs(rel.estimate - x).max() < 1e-3
        assert acct.spent().epsilon == pytest.approx(1e9)
        assert sum(rel.parts.values()) == pytest.approx(1e9)
    assert hier2d.hb2d_branching(256) == 7  # §5.1's proxy b·(n − 1)·⌈log_b n⌉² at n = 256


def test_privelet2d_generalised_sensitivity() -> None:
    h, w = hier2d.haar_matrix(16)
    per_axis = (np.abs(h) * w[:, None]).sum(axis=0)  # Σ_i W(i)|H[i, a]| for every cell a
    assert np.allclose(per_axis, 1 + 4)  # 1 + log2(16): the 2-D product is (1 + k)²


def test_mwem2d_spends_epsilon_and_learns() -> None:
    x = _spiky(6)
    boxes = np.array([[[0, 32], [0, 64]], [[32, 64], [0, 64]], [[0, 64], [0, 32]]])
    acct = Accountant(Budget(5.0), name="t")
    rel = hier2d.mwem2d_release(x, 5.0, boxes, accountant=acct, rng=np.random.default_rng(2))
    assert acct.spent().epsilon == pytest.approx(5.0)
    assert rel.estimate.sum() == pytest.approx(rel.scale)
    ans = [rel.estimate[r0:r1, c0:c1].sum() for (r0, r1), (c0, c1) in boxes]
    true = [x[r0:r1, c0:c1].sum() for (r0, r1), (c0, c1) in boxes]
    assert np.abs(np.subtract(ans, true)).max() < 0.1 * x.sum()


# Noise scale of HB-2D and Privelet-2D: standardised residuals s (mean 0, variance 1
# under H0), z = (mean(s²) − 1)/sqrt((κ − 1)/n) with κ ≤ 6 for (sums of) Laplace
# noise, |z| > Z_CRIT = 3.29 → false alarm ≤ 1e-3 (two-sided normal, n ≥ 1000). A 30 %
# off scale moves E[s²] to 1.69 or 0.49: |E z| ≥ 0.51·sqrt(n/5) ≥ 10 at n ≥ 2000 —
# rejected (checked).
Z_CRIT = 3.29
KURTOSIS_MAX = 6.0


def _z(s: np.ndarray) -> float:
    s2 = np.asarray(s, np.float64) ** 2
    return float((s2.mean() - 1.0) / np.sqrt((KURTOSIS_MAX - 1.0) / s2.size))


def _check(residuals: np.ndarray, sigma: np.ndarray | float) -> None:
    s = np.asarray(residuals, np.float64) / sigma
    assert s.size >= 2000
    assert abs(_z(s)) < Z_CRIT, _z(s)
    for off in (1.3, 0.7):
        assert abs(_z(s * off)) > Z_CRIT


def test_hb2d_block_sums_have_the_least_squares_variance() -> None:
    # b = 2 on 4 × 4: h = 2 levels below the unmeasured root, ε/2 each, Lap(2/ε) per
    # node (variance σ² = 2(2/ε)²). A 2 × 2 block's estimate is the inverse-variance
    # mean of its own count (σ²) and its 4 children's sum (4σ²): variance 0.8·σ².
    x = np.random.default_rng(0).poisson(20.0, (4, 4)).astype(float)
    eps = 0.8
    rng = np.random.default_rng(3)
    blocks = x.reshape(2, 2, 2, 2).sum(axis=(1, 3))
    res = [
        hier2d.hb2d_release(x, eps, branching=2, rng=rng).estimate.reshape(2, 2, 2, 2).sum(
            axis=(1, 3)
        )
        - blocks
        for _ in range(600)
    ]
    _check(np.ravel(res), np.sqrt(0.8 * 2.0 * (2.0 / eps) ** 2))


def test_privelet2d_coefficient_noise_scale() -> None:
    # on a 16 × 16 cube (no padding) the noisy coefficients are H·x̂·Hᵀ; their residual
    # at (i, j) is Laplace((1 + 4)²/(ε·W(i)W(j))), variance 2·scale².
    x = np.random.default_rng(1).poisson(5.0, (16, 16)).astype(float)
    eps = 0.5
    h, w = hier2d.haar_matrix(16)
    scale = 25.0 / (eps * np.outer(w, w))
    true = h @ x @ h.T
    rng = np.random.default_rng(4)
    res = [h @ hier2d.privelet2d_release(x, eps, rng=rng).estimate @ h.T - true for _ in range(10)]
    _check(np.ravel(res), np.ravel(np.broadcast_to(np.sqrt(2.0) * scale, (10, 16, 16))))
