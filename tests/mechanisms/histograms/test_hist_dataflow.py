"""Data flow of the histogram partitions (issue 14, item 8): every partition depends on
the data only through noisy measurements.

Written against the public entry points (``release_histogram`` / ``run_config`` and
``partitioners.dawa_partition``); the initializer is replaced through its public name
``sortaki.basic_initializer`` so its output can be held fixed while ``x`` changes.
"""

from __future__ import annotations

import numpy as np
import pytest

from mechanisms.histograms import partitioners as part
from mechanisms.histograms import sortaki

#: Configurations whose partition is post-processing of the initializer's noisy output
#: (greedy, DP, DPCube partitioners; with and without sorting / thresholding).
NOISY_DATA_PARTITIONERS = ("AHP", "GAHP", "sGAHP", "stGAHP", "sDAHP", "sDWF", "DPC", "sDPC")
N = 64


@pytest.mark.parametrize("name", NOISY_DATA_PARTITIONERS)
def test_partition_and_order_read_only_the_initializer_output(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fix the initializer's output, change x completely: the bins (and, for sorting
    configurations, the order) must not change. Reading the true counts in the sorter or
    the partitioner (a privacy leak: they are not charged) changes them."""
    y0 = np.random.default_rng(7).gamma(2.0, 20.0, N)  # a fixed "noisy" histogram
    calls: list[int] = []

    def fixed_initializer(x, eps_in, *, rng=None, discrete=False):  # noqa: ANN001, ANN202
        calls.append(len(np.ravel(x)))
        return y0.copy()

    monkeypatch.setattr(sortaki, "basic_initializer", fixed_initializer)
    xs = [np.random.default_rng(1).poisson(30, N).astype(float),
          np.arange(N, dtype=float)[::-1] * 9,  # opposite ranking of the cells
          np.where(np.arange(N) % 2 == 0, 500.0, 0.0)]
    parts = [sortaki.release_histogram(name, x, 1.0, rng=np.random.default_rng(3)).partition
             for x in xs]
    assert calls == [N] * len(xs), "the initializer is no longer sortaki.basic_initializer"
    for p in parts[1:]:
        assert np.array_equal(p.labels, parts[0].labels), name
        assert np.array_equal(p.order, parts[0].order), name
    assert parts[0].n_bins < N  # a real partition, not the trivial singletons


#: DAWA's noisy-cost test: K independent partitions of one x at an exact cost tie.
#: With the noisy cost each is one bin or two with probability 1/2 each, so all K equal
#: has probability 2·2^-K (false-alarm rate 1.8e-12 for K = 40); a cost without noise is
#: a deterministic function of x and gives K equal partitions always (power 1).
K_DAWA = 40


def test_dawa_partition_costs_are_noisy() -> None:
    eps_p, eps_f = 0.25, 0.75
    d = 1.0 / eps_f  # dev([0,2)) = d: merging costs d + 1/eps_f = 2/eps_f = two singletons
    x = np.array([0.0, d])
    seen = {tuple(part.dawa_partition(x, eps_p, eps_f, rng=np.random.default_rng(s)))
            for s in range(K_DAWA)}
    assert seen == {(0,), (0, 1)}


def test_dawa_release_partition_is_random_given_x() -> None:
    """The same through the public release: DAWA spends ε/4 on its partition."""
    rel = sortaki.release_histogram("DAWA", np.zeros(2), 1.0, rng=np.random.default_rng(0))
    d = 1.0 / rel.eps_f
    n_bins = {sortaki.release_histogram("DAWA", np.array([0.0, d]), 1.0,
                                        rng=np.random.default_rng(s)).n_bins
              for s in range(K_DAWA)}
    assert n_bins == {1, 2}
