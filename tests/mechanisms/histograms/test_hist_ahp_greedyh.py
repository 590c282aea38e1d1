"""AHP's published merge rule and DAWA's GreedyH measurement (issue 17, step 1)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from scipy import stats

from mechanisms.errors import InvalidParameterError
from mechanisms.histograms import _tree, parse_config, run_config
from mechanisms.histograms import finalizers as fin
from mechanisms.histograms import sortaki as sk
from mechanisms.histograms.ahp import ahp_cluster
from mechanisms.histograms.greedyh import (
    GRAM_MAX,
    greedyh_release,
    greedyh_tree,
    range_gram,
    reduce_gram,
    reduced_range_gram,
)

# KS tests of standardised noise against Laplace(0, 1): false alarm α = 1e-3 per test;
# with N = 20 000 draws the KS critical distance is ≈ 1.95/√N ≈ 0.014, while a 30 %
# wrong scale moves the CDF by ≈ 0.07 at its widest, so power is ≈ 1 (checked below).
ALPHA = 1e-3
N_DRAWS = 20_000


def _ahp_reference(y: np.ndarray, eps2: float) -> list[int]:
    """The merge rule written out literally (full look-ahead scan, paper p. 6)."""
    n = len(y)
    p = np.cumsum(y)
    pp = np.cumsum(y * y)

    def err(i: int, j: int) -> float:
        length = j - i + 1
        s = p[j] - (p[i - 1] if i else 0.0)
        ss = pp[j] - (pp[i - 1] if i else 0.0)
        return ss - s * s / length + 2 / (length * eps2**2)

    def err_star(j: int) -> float:
        best, last1, last2 = np.inf, None, None
        for l_ in range(j, n):
            length = l_ - j + 1
            c = (p[l_] - (p[j - 1] if j else 0.0)) / length
            e1, e2 = (y[j] - c) ** 2, 2 / (length**2 * eps2**2)
            if l_ != j and e1 - last1 >= last2 - 2 / ((n - j + 1) ** 2 * eps2**2):
                break
            best, last1, last2 = min(best, e1 + e2), e1, e2
        return best

    starts, i = [0], 0
    for j in range(1, n):
        if err(i, j) >= err(i, j - 1) + err_star(j):
            starts.append(j)
            i = j
    return starts


@pytest.mark.parametrize("seed", range(6))
def test_ahp_cluster_matches_the_literal_rule(seed: int) -> None:
    rng = np.random.default_rng(seed)
    y = np.sort(np.concatenate([np.zeros(40), rng.gamma(0.5, 30.0, 160)]))
    for eps2 in (0.05, 0.5, 5.0):
        assert ahp_cluster(y, eps2).tolist() == _ahp_reference(y, eps2)


def test_ahp_cluster_separates_levels_and_merges_equal_values() -> None:
    y = np.array([0.0] * 5 + [100.0] * 5 + [1000.0] * 5)
    assert ahp_cluster(y, 1.0).tolist() == [0, 5, 10]


def test_ahp_partition_depends_on_data_only_through_the_noisy_histogram(monkeypatch) -> None:
    rng = np.random.default_rng(3)
    x1 = rng.poisson(20, 256).astype(float)
    x2 = rng.poisson(5, 256).astype(float)
    fixed = rng.normal(10, 5, 256)
    monkeypatch.setattr(sk, "basic_initializer", lambda x, e, **kw: fixed.copy())
    cfg = parse_config("AHP")
    p1 = run_config(cfg, x1, 1.0, rng=np.random.default_rng(0)).partition
    p2 = run_config(cfg, x2, 1.0, rng=np.random.default_rng(0)).partition
    assert np.array_equal(p1.labels, p2.labels)


def _ranges(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    r = np.random.default_rng(seed)
    a, b = r.integers(0, n, m), r.integers(0, n, m)
    return np.minimum(a, b), np.maximum(a, b) + 1


def _dense(n: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    w = np.zeros((len(lo), n))
    for i, (a, b) in enumerate(zip(lo, hi, strict=True)):
        w[i, a:b] = 1.0
    return w


def test_range_gram_and_bucket_reduction_are_exact() -> None:
    n = 37
    lo, hi = _ranges(n, 60, 1)
    w = _dense(n, lo, hi)
    assert np.allclose(range_gram(n, lo, hi), w.T @ w)
    starts = np.array([0, 4, 5, 20, 31])
    pbar = np.zeros((n, len(starts)))
    ends = np.append(starts[1:], n)
    for j, (s, e) in enumerate(zip(starts, ends, strict=True)):
        pbar[s:e, j] = 1.0 / (e - s)
    assert np.allclose(reduce_gram(w.T @ w, starts), pbar.T @ w.T @ w @ pbar)
    assert np.allclose(reduced_range_gram(n, lo, hi, starts), pbar.T @ w.T @ w @ pbar)


def _reduced_dense(n: int, lo: np.ndarray, hi: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """W̄ written out bucket by bucket (overlap / size), never the n-cell matrix."""
    ends = np.append(starts[1:], n)
    over = np.clip(np.minimum(hi[:, None], ends) - np.maximum(lo[:, None], starts), 0, None)
    wbar = over / (ends - starts)
    return wbar.T @ wbar


@pytest.mark.parametrize("seed", range(4))
def test_reduced_range_gram_covers_every_query_shape(seed: int) -> None:
    """Queries inside one bucket, over two adjacent ones, over runs; singleton buckets."""
    r = np.random.default_rng(seed)
    n = 200
    starts = np.concatenate(([0], np.sort(r.choice(np.arange(1, n), 30, replace=False))))
    lo, hi = _ranges(n, 400, seed)
    short = r.integers(0, n - 3, 100)  # many ranges of 1-3 cells: within or across one edge
    lo = np.concatenate((lo, short))
    hi = np.concatenate((hi, short + r.integers(1, 4, 100)))
    assert np.allclose(reduced_range_gram(n, lo, hi, starts), _reduced_dense(n, lo, hi, starts))
    single = np.arange(n)
    assert np.allclose(reduced_range_gram(n, lo, hi, single), range_gram(n, lo, hi))


def test_reduced_range_gram_never_forms_the_cells_gram() -> None:
    """A million cells in 50 buckets: k × k work (the n × n Gram would need 8 TiB)."""
    n = 1 << 20
    r = np.random.default_rng(5)
    starts = np.concatenate(([0], np.sort(r.choice(np.arange(1, n), 49, replace=False))))
    lo, hi = _ranges(n, 2000, 5)
    assert np.allclose(reduced_range_gram(n, lo, hi, starts), _reduced_dense(n, lo, hi, starts))
    with pytest.raises(InvalidParameterError, match="buckets"):
        reduced_range_gram(n, lo, hi, np.arange(GRAM_MAX + 1))


def test_greedyh_alone_refuses_a_domain_past_its_dense_gram() -> None:
    with pytest.raises(InvalidParameterError, match=r"at most 8192 cells \(use HB"):
        greedyh_release(np.ones(GRAM_MAX + 1), 1.0, (np.array([0]), np.array([5])))


def _range_rmse(x: np.ndarray, est: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    c, ce = np.cumsum(np.append(0.0, x)), np.cumsum(np.append(0.0, est))
    return float(np.sqrt(np.mean((c[hi] - c[lo] - (ce[hi] - ce[lo])) ** 2)))


def test_dawa_measures_too_many_buckets_in_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past GRAM_MAX buckets DAWA measures them in contiguous blocks of ~DAWA_BLOCK (the
    limits scaled down here: 256 and 64 on 1,024 cells). The release says so, keeps the
    total, and answers the ranges as well as one strategy over all the buckets: mean
    RMSE over 20 seeds each, blocked / whole ≈ 1.02 measured (s.e. of the ratio ≈ 0.08),
    while blocks of 16 — too small, a long range then sums dozens of block roots — give
    2.2; the bound 1.5 is ~6 s.e. from the first and far below the second."""
    n = 1024
    x = np.random.default_rng(9).poisson(100.0, n).astype(float)
    lo, hi = _ranges(n, 500, 9)

    def mean_rmse(gram_max: int) -> tuple[float, set]:
        monkeypatch.setattr(sk, "GRAM_MAX", gram_max)
        monkeypatch.setattr(sk, "DAWA_BLOCK", 64)
        errs, blocks = [], set()
        for seed in range(20):
            rel = run_config(
                parse_config("DAWA"), x, 5.0, workload=(lo, hi),
                rng=np.random.default_rng(seed),
            )
            assert rel.n_bins > 256
            blocks.add(rel.params.get("measurement_blocks") == -(-rel.n_bins // 64))
            assert abs(rel.estimate.sum() - x.sum()) < 0.01 * x.sum()
            errs.append(_range_rmse(x, rel.estimate, lo, hi))
        return float(np.mean(errs)), blocks

    blocked, said = mean_rmse(256)
    whole, said_whole = mean_rmse(GRAM_MAX)
    assert said == {True} and said_whole == {False}
    assert blocked < 1.5 * whole


@pytest.mark.parametrize("seed", range(3))
def test_greedyh_weights_have_sensitivity_one_and_gls_is_least_squares(seed: int) -> None:
    n = 45
    lo, hi = _ranges(n, 70, seed)
    tree = greedyh_tree(range_gram(n, lo, hi))
    assert _tree.sensitivity(tree) == pytest.approx(1.0)
    x = np.random.default_rng(seed).poisson(8, n).astype(float)
    y = _tree.measure(x, tree, 1.0, rng=np.random.default_rng(seed))
    est = _tree.least_squares(tree, y, 1.0)
    on = tree.weight > 0
    a = np.zeros((int(on.sum()), n))
    for k, v in enumerate(np.flatnonzero(on)):
        a[k, tree.lo[v] : tree.hi[v]] = tree.weight[v]
    sol = np.linalg.lstsq(a, y[on] * tree.weight[on], rcond=None)[0]
    w = _dense(n, lo, hi)
    assert np.allclose(w @ est, w @ sol, atol=1e-8)


def test_greedyh_identity_workload_measures_the_leaves_only() -> None:
    tree = greedyh_tree(np.eye(16))
    leaves = [v for v in range(tree.size) if tree.hi[v] - tree.lo[v] == 1]
    assert np.allclose(tree.weight[leaves], 1.0)
    assert np.count_nonzero(tree.weight) == 16


@pytest.mark.parametrize("discrete", [False, True])
def test_dawa_identity_release_equals_the_greedyh_tree_path(discrete: bool, monkeypatch) -> None:
    """DAWA on the identity workload measures the buckets directly (no k × k Gram): the
    same release, draw for draw, as GreedyH's tree on diag(1/|B|) — which weights every
    bucket 1 and no inner node, for unequal bucket sizes too."""
    rng = np.random.default_rng(4)
    x = np.repeat(rng.poisson(30, 12).astype(float), rng.integers(1, 9, 12))
    seen = {}
    draw = sk.laplace_noise

    def spy(scale, size, *, rng=None, discrete=False):  # the generator before the draw
        seen["state"] = copy.deepcopy(rng.bit_generator.state)
        return draw(scale, size, rng=rng, discrete=discrete)

    monkeypatch.setattr(sk, "laplace_noise", spy)
    rel = run_config(parse_config("DAWA"), x, 0.5, rng=np.random.default_rng(9), discrete=discrete)
    sizes = rel.partition.sizes().astype(float)
    tree = greedyh_tree(np.diag(1.0 / sizes))
    leaves = [v for v in range(tree.size) if not tree.children[v]]
    assert np.allclose(np.asarray(tree.weight)[leaves], 1.0)
    assert np.count_nonzero(tree.weight) == len(sizes)
    gen = np.random.default_rng()
    gen.bit_generator.state = seen["state"]
    y = _tree.measure(rel.partition.bin_sums(x), tree, rel.eps_f, rng=gen, discrete=discrete)
    expected = fin.ahp_finalize(rel.partition, _tree.least_squares(tree, y, rel.eps_f))
    np.testing.assert_array_equal(rel.estimate, expected)


def test_greedyh_prefers_upper_nodes_for_prefix_queries() -> None:
    n = 64
    tree = greedyh_tree(range_gram(n, np.zeros(n, np.int64), np.arange(1, n + 1)))
    assert tree.weight[0] + sum(tree.weight[c] for c in tree.children[0]) > 0


def test_greedyh_strategy_ignores_the_data() -> None:
    n = 40
    lo, hi = _ranges(n, 50, 7)
    e1 = greedyh_release(np.zeros(n), 1.0, (lo, hi), rng=np.random.default_rng(0))
    e2 = greedyh_release(np.full(n, 5.0), 1.0, (lo, hi), rng=np.random.default_rng(0))
    # same strategy + same noise ⇒ the releases differ by exactly the data (linear LS)
    assert np.allclose(e2 - e1, 5.0)


def test_dawa_uses_greedyh_on_the_bucket_workload() -> None:
    x = np.repeat([5.0, 50.0, 0.0, 20.0], 64)
    lo = np.zeros(256, np.int64)
    hi = np.arange(1, 257)
    rel = run_config(parse_config("DAWA"), x, 1.0, workload=(lo, hi), rng=np.random.default_rng(1))
    assert rel.params["greedyh_nodes"] >= 1
    assert rel.estimate.shape == x.shape
    big = run_config(parse_config("DAWA"), x, 1e6, workload=(lo, hi), rng=np.random.default_rng(1))
    assert np.allclose(big.estimate, x, atol=0.05)


def _ks_laplace(z: np.ndarray) -> float:
    return float(stats.kstest(z, stats.laplace.cdf).pvalue)


def test_tree_measure_noise_scale() -> None:
    n = 8
    tree = greedyh_tree(range_gram(n, np.zeros(n, np.int64), np.arange(1, n + 1)))
    x = np.arange(n, dtype=float)
    eps = 0.7
    on = np.flatnonzero(tree.weight > 0)
    reps = N_DRAWS // len(on) + 1
    rng = np.random.default_rng(11)
    sums = np.array([x[tree.lo[v] : tree.hi[v]].sum() for v in on])
    draws = np.array([_tree.measure(x, tree, eps, rng=rng)[on] for _ in range(reps)])
    z = ((draws - sums) * tree.weight[on] * eps / _tree.sensitivity(tree)).ravel()
    assert _ks_laplace(z) > ALPHA
    assert _ks_laplace(z * 1.3) < ALPHA  # power: a 30 % too-large scale is rejected
    assert _ks_laplace(z / 1.3) < ALPHA


@pytest.mark.parametrize("kind", ["prefix", "ranges"])
def test_greedyh_strategy_beats_identity_on_range_workloads(kind: str) -> None:
    """Expected total squared error ∝ Δ²·tr(WᵀW (AᵀA)⁺) must drop below Identity's tr(WᵀW)."""
    n = 64
    if kind == "prefix":
        lo, hi = np.zeros(n, np.int64), np.arange(1, n + 1)
    else:
        lo, hi = _ranges(n, 300, 2)
    g = range_gram(n, lo, hi)
    tree = greedyh_tree(g)
    on = np.flatnonzero(tree.weight > 0)
    a = np.zeros((len(on), n))
    for k, v in enumerate(on):
        a[k, tree.lo[v] : tree.hi[v]] = tree.weight[v]
    err = _tree.sensitivity(tree) ** 2 * np.trace(g @ np.linalg.pinv(a.T @ a))
    # measured 0.56 (prefix) and 0.89 (300 random ranges); the leaves-only strategy is 1
    assert err < (0.6 if kind == "prefix" else 0.95) * np.trace(g)
