"""Property-based checks (Hypothesis): budget composition and the sorter's inverse mapping."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanisms.histograms import TABLE_II, Partition, parse_config
from mechanisms.histograms.bins import sort_order


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(TABLE_II),
    gamma=st.floats(0.01, 0.99),
    eps=st.floats(1e-3, 10.0),
)
def test_budget_split_never_exceeds_the_total(name: str, gamma: float, eps: float) -> None:
    shares = parse_config(name).shares(gamma)
    parts = shares.split(eps)
    assert min(parts) >= 0
    assert abs(sum(parts) - eps) <= 1e-12 * eps


@settings(max_examples=60, deadline=None)
@given(
    noisy=st.lists(st.floats(-50, 50), min_size=1, max_size=40),
    data=st.data(),
)
def test_sorted_bins_map_back_to_the_original_domain(noisy: list[float], data) -> None:  # type: ignore[no-untyped-def]
    n = len(noisy)
    order = sort_order(np.array(noisy))
    cuts = data.draw(st.sets(st.integers(1, max(n - 1, 1)), max_size=n)) if n > 1 else set()
    starts = np.array(sorted({0} | {c for c in cuts if c < n}))
    p = Partition.from_boundaries(order, starts)
    # every value lands in exactly one bin; the bin of the p-th sorted value is the number
    # of starts at or before p minus one; bin sizes match the boundaries
    ends = np.append(starts[1:], n)
    assert p.sizes().tolist() == (ends - starts).tolist()
    for pos in range(n):
        assert p.labels[order[pos]] == np.searchsorted(starts, pos, side="right") - 1
    # sorted order is by non-increasing noisy value
    assert np.all(np.diff(np.array(noisy)[order]) <= 0)
