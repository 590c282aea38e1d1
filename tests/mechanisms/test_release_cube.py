"""The daily occupancy cube under device-day (mechanisms.histograms.cube)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from mechanisms import hierarchical
from mechanisms.accounting import DayBudget, epsilon_to_zcdp
from mechanisms.errors import BudgetExhaustedError, InvalidParameterError
from mechanisms.histograms import cube
from mechanisms.noise import keyed_rng
from occupancy.buildings import load_site

KEY = b"cube-test-secret-0123456789abcdef"
T = 288
RHO_H = 0.05 * epsilon_to_zcdp(4.0, 1e-6)
#: the noisy tests run at 20-minute slots (72 a day, B = 72, 3 an hour): the sampler's
#: exact tables are built once per σ and test_release_cube_stage.py uses the same σ
S = 72


def _cfg(algorithm: str = "tree") -> cube.CubeConfig:
    return cube.CubeConfig(rho=RHO_H, max_slots=S, slots_per_day=S, slots_per_hour=3,
                           algorithm=algorithm)

# Statistical design (docs/STYLE.md): the noise-scale test compares n·s²/σ² (s² the
# mean square of n noise draws with known mean 0) with χ²_n, two-sided, false-alarm
# rate ALPHA (critical values ≈ 1 ± 3.3·√(2/n)). The smallest sample is the tree's root
# level, n = 4 days × 72 slots = 288: √(2/n) = 8.3 %, so a σ 30 % off (variance ×1.69
# or ×0.49, sd 14 % / 4 % of it) lies ≥ 5.7 sd beyond a critical value: power > 0.999
# (and the same test on noise 30 % too large and too small must reject, below).
ALPHA = 1e-3
REPEATS = 4


def _tree() -> hierarchical.Tree:
    return hierarchical.tree_from_paths(load_site("dbh").hierarchy())


def _scale_ok(z: np.ndarray, sigma: float) -> bool:
    """Two-sided χ² test at ALPHA that draws z (mean 0) have standard deviation sigma."""
    n = z.size
    q = float(np.sum(np.asarray(z, float) ** 2)) / sigma**2
    return bool(stats.chi2.ppf(ALPHA / 2, n) <= q <= stats.chi2.ppf(1 - ALPHA / 2, n))


def _device_cube(tree: hierarchical.Tree, slots: np.ndarray, locs: np.ndarray) -> np.ndarray:
    """One device's contribution: 1 at (slot, location) for its slots (one location each)."""
    c = np.zeros((T, tree.leaves.size), dtype=np.int64)
    c[slots, locs] = 1
    return c


def test_sensitivity_is_attained_and_never_exceeded_under_the_bound() -> None:
    tree = _tree()
    rng = np.random.default_rng(3)
    l1, l2 = cube.sensitivity(T)
    assert (l1, l2) == (288.0, pytest.approx(np.sqrt(288)))
    # the worst case: a device counted in every slot of the day (bound (b) with B = 288)
    worst = _device_cube(tree, np.arange(T), rng.integers(0, tree.leaves.size, T))
    assert worst.sum() == l1 and np.sqrt((worst**2).sum()) == pytest.approx(l2)
    for _ in range(60):  # random devices: any slots, one location per slot
        k = int(rng.integers(1, T + 1))
        a = _device_cube(tree, rng.choice(T, k, replace=False),
                         rng.integers(0, tree.leaves.size, k))
        assert np.abs(a).sum() <= l1 and np.sqrt((a**2).sum()) <= l2 + 1e-12
        nodes = np.stack([tree.aggregate(r) for r in a])
        for d in range(tree.height):  # each level of the location tree: L2 ≤ √B too
            assert np.sqrt((nodes[:, tree.nodes_at_depth(d)] ** 2).sum()) <= l2 + 1e-12
    # time aggregation is NOT free: one location's hour sums reach √(12·B)
    one_room = _device_cube(tree, np.arange(T), np.zeros(T, dtype=np.int64))
    hours = one_room.reshape(24, 12, -1).sum(axis=1)
    assert np.sqrt((hours**2).sum()) == pytest.approx(np.sqrt(12 * T))


@pytest.mark.parametrize("algorithm", cube.ALGORITHMS)
def test_every_algorithm_spends_exactly_its_rho(algorithm: str) -> None:
    cfg = cube.CubeConfig(rho=RHO_H, algorithm=algorithm)
    assert cfg.spent_rho(3) == pytest.approx(RHO_H, rel=1e-12)
    assert cfg.sigma_identity == pytest.approx(np.sqrt(T / (2 * RHO_H)))
    if algorithm == "tree":
        s = cfg.sigmas(3)
        assert np.sum(T / (2 * s * s)) == pytest.approx(RHO_H)


def test_bad_configs_are_refused() -> None:
    with pytest.raises(InvalidParameterError, match="algorithm"):
        cube.CubeConfig(rho=0.1, algorithm="dawa")
    with pytest.raises(InvalidParameterError, match="level_weights"):
        cube.CubeConfig(rho=0.1, level_weights=(0.5, 0.6))
    with pytest.raises(InvalidParameterError, match="max_slots"):
        cube.CubeConfig(rho=0.1, max_slots=289)
    with pytest.raises(InvalidParameterError, match="leaf_cube"):
        cube.release_cube(np.zeros((T, 3), dtype=int), _tree(), cube.CubeConfig(rho=0.1),
                          day=0, budget=None, rng=np.random.default_rng(0))


class _Watch(np.random.Generator):
    """A generator that records whether anything was drawn."""

    def __init__(self) -> None:
        super().__init__(np.random.PCG64(0))
        self.used = False

    def __getattribute__(self, name: str):  # noqa: ANN204
        if name not in ("used", "__class__", "__dict__") and not name.startswith("_"):
            object.__setattr__(self, "used", True)
        return super().__getattribute__(name)


def test_charged_before_noise_once_per_release_id_and_refused_over_the_share() -> None:
    tree = _tree()
    x = np.zeros((S, tree.leaves.size), dtype=np.int64)
    cfg = _cfg()
    budget = DayBudget(4.0, 1e-6, shares={"heatmap": 0.85, "alerts": 0.10, "histogram": 0.05})
    rel = cube.release_cube(x, tree, cfg, day=7, budget=budget,
                            rng=keyed_rng(KEY, "daily-cube", 7, "all"))
    assert rel.record is not None and rel.record.mechanism == "daily-cube:tree"
    assert rel.record.scope.endswith("/day:7/histogram")
    assert budget.spent_rho(7, "histogram") == pytest.approx(RHO_H)
    assert rel.record.sensitivity == pytest.approx(np.sqrt(S))
    # the same release again (a replay): same record, nothing charged, same values
    again = cube.release_cube(x, tree, cfg, day=7, budget=budget,
                              rng=keyed_rng(KEY, "daily-cube", 7, "all"))
    assert again.record == rel.record and len(budget.records) == 1
    assert np.array_equal(again.cube, rel.cube) and np.array_equal(again.hourly, rel.hourly)
    # a second, different cube the same day exceeds the share: refused before any draw
    watch = _Watch()
    with pytest.raises(BudgetExhaustedError):
        cube.release_cube(x, tree, _cfg("identity"), day=7, budget=budget, rng=watch)
    assert not watch.used and len(budget.records) == 1
    # the budget's shares leave no room when the heatmap and alerts took theirs (ε_day)
    full = DayBudget(4.0, 1e-6, shares={"heatmap": 0.85, "alerts": 0.10, "histogram": 0.05})
    full.charge(day=1, share="heatmap", mechanism="device-day", rho=0.85 * full.rho_day, tick=0)
    full.charge(day=1, share="alerts", mechanism="alerts", rho=0.10 * full.rho_day, tick=0)
    ok = cube.release_cube(x, tree, cfg, day=1, budget=full, rng=np.random.default_rng(1))
    assert full.spent(1).epsilon <= 4.0 + 1e-9 and ok.record is not None


@pytest.mark.parametrize("factor", [1.0, 0.7, 1.3])
def test_noise_scale_matches_the_claimed_sigma(factor: float) -> None:
    """Identity cells and every tree level carry N_ℤ(0, σ²) with the claimed σ.

    ``factor`` 1.0 must pass; 0.7 and 1.3 (noise 30 % off the claim) must be rejected.
    """
    tree = _tree()
    x = np.random.default_rng(11).integers(0, 30, (S, tree.leaves.size))
    ident = _cfg("identity")
    z = np.concatenate([
        cube.release_cube(x, tree, ident, day=3, budget=None,
                          rng=keyed_rng(KEY, "cube-scale", r)).cube.T - x  # cell − truth
        for r in range(REPEATS)])
    assert _scale_ok(z * factor, ident.sigma_identity) == (factor == 1.0)
    cfg = _cfg()
    nodes = np.stack([tree.aggregate(r) for r in x])
    noisy = [cube.measure_tree(x, tree, cfg, rng=keyed_rng(KEY, "cube-scale-tree", r)) - nodes
             for r in range(REPEATS)]
    for d, sigma in enumerate(cfg.sigmas(tree.height)):
        at = tree.nodes_at_depth(d)
        z = np.concatenate([e[:, at].ravel() for e in noisy])
        assert z.size >= REPEATS * S  # the design's smallest n (the root level)
        assert _scale_ok(z * factor, float(sigma)) == (factor == 1.0), (d, factor)


def test_tree_beats_identity_on_floors_and_building_at_equal_rho() -> None:
    """Measured, not assumed: floors and building (sums of rooms) gain most from the tree."""
    from simulator import simulate

    sim = simulate("dbh", days=2, seed=1)  # tuning seed of the bench, not a reported one
    occ = sim.occupancy()
    tree = hierarchical.tree_from_paths(sim.site.hierarchy())
    x = occ.counts[287:287 + T][::4]  # the second day, one 5-minute tick per 20 minutes
    nodes = np.stack([tree.aggregate(r) for r in x]).reshape(24, 3, -1).mean(axis=1)
    err = {}
    for alg in ("identity", "tree"):
        rel = cube.release_cube(x, tree, _cfg(alg), day=0,
                                budget=None, rng=keyed_rng(KEY, "cube-utility", alg))
        err[alg] = [float(np.abs(rel.hourly[:, tree.nodes_at_depth(d)]
                                 - nodes[:, tree.nodes_at_depth(d)]).mean()) for d in (0, 1)]
    assert err["tree"][0] < err["identity"][0] and err["tree"][1] < err["identity"][1]
    # published profiles are consistent (building = Σ floors = Σ rooms) and ≥ 0
    rel = cube.release_cube(x, tree, _cfg(), day=0, budget=None,
                            rng=keyed_rng(KEY, "cube-utility", "c"))
    assert rel.hourly.min() >= 0
    leaves_sum = rel.hourly[:, tree.leaves].sum(axis=1)
    assert np.allclose(rel.hourly[:, tree.nodes_at_depth(0)].sum(axis=1), leaves_sum)


@pytest.mark.parametrize("factor", [1.0, 0.7, 1.3])
def test_error_bars_are_the_least_squares_posterior(factor: float) -> None:
    """hourly_sd's variance (posterior_variance) matches least squares' empirical variance.

    N Gaussian repeats per node: the empirical variance's relative sd is √(2/N) = 2.2 %
    at N = 4,000; a node fails beyond 5 of them (false alarm ≤ 6·10⁻⁷ per node, ≤ 4·10⁻⁵
    over the 60 nodes). A σ 30 % off (variance ×0.49 / ×1.69) is > 20 sd away: rejected.
    """
    from mechanisms import consistency

    n = 4000
    tree = _tree()
    cfg = cube.CubeConfig(rho=RHO_H)
    sig = cfg.sigmas(tree.height)[tree.depth]
    post = cube.posterior_variance(tree, sig * sig) * factor**2
    y = np.random.default_rng(5).normal(size=(n, tree.n_nodes)) * sig
    emp = consistency.least_squares(y, sig * sig, tree.plan).var(axis=0)
    ok = bool(np.all(np.abs(emp / post - 1) <= 5 * np.sqrt(2 / n)))
    assert ok == (factor == 1.0)
    # the published bar: σ/√12 of the hour's mean; narrower than before least squares
    rel = cube.release_cube(np.zeros((S, tree.leaves.size), dtype=np.int64), tree, _cfg(),
                            day=0, budget=None, rng=keyed_rng(KEY, "cube-sd"))
    pre = _cfg().sigmas(tree.height)[tree.depth] / np.sqrt(3)
    assert np.all(rel.hourly_sd <= pre + 1e-12) and np.all(rel.hourly_sd > 0)
