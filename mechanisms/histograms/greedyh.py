"""GreedyH: workload-aware weights on a binary tree (Li, Hay, Miklau & Wang, VLDB 2014, §5).

GreedyH is DAWA's measurement step (§4–5): given the workload's Gram matrix
``G = WᵀW`` over the domain (for DAWA, the domain reduced to the partition's buckets,
each query counting the covered *fraction* of a bucket, §4), it chooses a weight ``w_v``
for every node of a binary tree over the domain, bottom-up: at a node with children
whose strategies are already fixed, it keeps a share ``p`` of the path budget for the
children's strategies and gives ``1 − p`` to the node itself; ``p`` is chosen on a grid of
100 values to minimise the node's workload error, computed in closed form by the
Sherman–Morrison update of ``(AᵀA)⁻¹`` (only the vector ``u = (AᵀA)⁻¹·1`` and the scalar
``k = 1ᵀu`` per subtree are needed, so no n×n inverse is formed). A node whose Gram
columns are all equal (the workload cannot tell its cells apart) is measured as one
query and not split. Weights on every root-to-leaf path add up to 1, so the L1
sensitivity is 1 (checked by :func:`~mechanisms.histograms._tree.sensitivity`).

Reference behaviour (DPBench / DAWA authors' code, ``greedyH``): the node error uses the
squared norms ``‖G[:, v]·u‖²`` (the error of the workload ``G`` itself, not the trace
``uᵀG u``) and damps the cross-children term and the node's share by
``b^(−depth/2)``; both are reproduced here because the reference behaviour is what
DPBench measures (the DAWA paper gives the greedy scheme, §5, not these constants).

Estimation is the exact least-squares fit on the tree
(:func:`~mechanisms.histograms._tree.least_squares`), post-processing.

Privacy: :func:`greedyh_release` charges ε to its accountant, then releases the Laplace
mechanism on the weighted node queries (sensitivity ≤ 1): ε-DP. The weights depend only
on the workload (public), never on the data.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from mechanisms.accounting import Accountant, Budget
from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.histograms import _tree
from mechanisms.histograms._noise import resolve_rng

__all__ = [
    "GRANULARITY",
    "GRAM_MAX",
    "range_gram",
    "reduce_gram",
    "reduced_range_gram",
    "greedyh_tree",
    "greedyh_release",
    "charge",
]

#: grid size for the node's budget share p (reference: 100)
GRANULARITY = 100
#: the most cells (or buckets) whose dense Gram GreedyH builds: 8,192² floats are 0.5 GiB
#: a copy; past it DAWA measures its buckets in blocks
#: (:data:`~mechanisms.histograms.sortaki.DAWA_BLOCK`) and GreedyH alone refuses
GRAM_MAX = 8192

#: workload-only (public) artefacts: Gram matrices, their prefix sums, GreedyH trees
_GRAM_CACHE: OrderedDict[tuple, object] = OrderedDict()


def charge(
    accountant: Accountant | None, epsilon: float, mechanism: str, **kw: object
) -> Accountant:
    """Charge ε to ``accountant`` (a fresh one capped at ε when None) before any noise."""
    acct = accountant if accountant is not None else Accountant(Budget(epsilon), name="histogram")
    acct.spend(
        epsilon,
        mechanism=mechanism,
        sampler="continuous laplace (float)",
        note=str(kw) if kw else "",
    )
    return acct


def range_gram(n: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``G = WᵀW`` of the range queries ``[lo, hi)`` over n cells, in O(n² + q).

    ``G[i, j]`` (i ≤ j) counts the queries with ``lo ≤ i`` and ``hi > j``: a 2-D suffix /
    prefix sum of the (lo, hi) histogram. The last three workloads are cached.
    """
    lo = np.asarray(lo, np.int64)
    hi = np.asarray(hi, np.int64)
    if np.any(lo < 0) or np.any(hi > n) or np.any(lo >= hi):
        raise InvalidParameterError("ranges must satisfy 0 <= lo < hi <= n")
    return _cached(("gram", n, lo.tobytes(), hi.tobytes()), lambda: _range_gram(n, lo, hi))


def _range_gram(n: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    h = np.zeros((n, n + 1))
    np.add.at(h, (lo, hi), 1.0)
    t = np.cumsum(h[:, ::-1], axis=1)[:, ::-1]  # t[a, c] = #queries lo = a, hi >= c
    c = np.cumsum(t, axis=0)  # c[i, c] = #queries lo <= i, hi >= c
    del h, t
    up = c[:, 1:]  # up[i, j] = #queries lo <= i, hi > j  (valid for i <= j)
    g = np.triu(up)
    return g + np.triu(g, 1).T


def _cached(key: tuple, make: object) -> object:
    if key in _GRAM_CACHE:
        _GRAM_CACHE.move_to_end(key)
        return _GRAM_CACHE[key]
    val = make()  # type: ignore[operator]
    _GRAM_CACHE[key] = val
    while len(_GRAM_CACHE) > 12:
        _GRAM_CACHE.popitem(last=False)
    return val


def reduce_gram(gram: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Gram matrix over contiguous buckets (DAWA §4): ``P̄ᵀ G P̄``, P̄ = bucket averaging.

    Block sums from the 2-D prefix sums of ``gram`` (any workload's; for ranges
    :func:`reduced_range_gram` never forms the n × n Gram).
    """
    g = np.asarray(gram, np.float64)
    n = g.shape[0]
    cg = np.zeros((n + 1, n + 1))
    cg[1:, 1:] = g.cumsum(axis=0).cumsum(axis=1)
    s_ = np.asarray(starts, np.int64)
    e_ = np.concatenate((s_[1:], [n]))
    sizes = (e_ - s_).astype(np.float64)
    rows = cg[e_] - cg[s_]
    r = rows[:, e_] - rows[:, s_]
    return r / np.outer(sizes, sizes)


def reduced_range_gram(
    n: int, lo: np.ndarray, hi: np.ndarray, starts: np.ndarray
) -> np.ndarray:
    """``W̄ᵀW̄`` of the range queries ``[lo, hi)`` reduced to contiguous buckets (DAWA §4).

    ``W̄[q, b] = |[lo_q, hi_q) ∩ B_b| / |B_b|``: a query covers a run of whole buckets
    (weight 1) and at most two partial end buckets, so the k × k Gram is the range Gram
    of the runs (:func:`range_gram` over the bucket ids) plus each query's end terms,
    added through a difference array — O(k² + q + n) time and memory. (Reducing the
    n × n Gram, :func:`reduce_gram`, needs 32 GiB at n = 65,536.) At most
    :data:`GRAM_MAX` buckets.
    """
    lo = np.asarray(lo, np.int64)
    hi = np.asarray(hi, np.int64)
    s_ = np.asarray(starts, np.int64)
    if np.any(lo < 0) or np.any(hi > n) or np.any(lo >= hi):
        raise InvalidParameterError("ranges must satisfy 0 <= lo < hi <= n")
    k = len(s_)
    if k > GRAM_MAX:
        raise InvalidParameterError(
            f"{k} buckets: the dense k x k workload Gram is built for at most {GRAM_MAX}"
        )
    e_ = np.append(s_[1:], n)
    size = (e_ - s_).astype(np.float64)
    bl = np.searchsorted(s_, lo, side="right") - 1  # bucket of the first cell
    bh = np.searchsorted(s_, hi - 1, side="right") - 1  # bucket of the last cell
    one = bl == bh
    alpha = np.where(one, hi - lo, e_[bl] - lo) / size[bl]
    beta = np.where(one, 0.0, (hi - s_[bh]) / size[bh])
    run = bh > bl + 1  # queries with whole buckets strictly between their ends
    a, b = bl[run] + 1, bh[run]
    g = _range_gram(k, a, b) if run.any() else np.zeros((k, k))
    # end bucket × run: row bl gets α over the run's columns, row bh gets β
    diff = np.zeros((k, k + 1))
    for rows, w in ((bl[run], alpha[run]), (bh[run], beta[run])):
        np.add.at(diff, (rows, a), w)
        np.add.at(diff, (rows, b), -w)
    cross = np.cumsum(diff, axis=1)[:, :k]
    del diff
    g += cross
    g += cross.T
    del cross
    # end × end
    np.add.at(g, (bl, bl), alpha**2)
    two = ~one
    np.add.at(g, (bh[two], bh[two]), beta[two] ** 2)
    np.add.at(g, (bl[two], bh[two]), alpha[two] * beta[two])
    np.add.at(g, (bh[two], bl[two]), alpha[two] * beta[two])
    return g


def greedyh_tree(gram: np.ndarray, branch: int = 2) -> _tree.Tree:
    """GreedyH's weighted tree for the workload with Gram matrix ``gram`` (no data read)."""
    g = np.asarray(gram, np.float64)
    n = g.shape[0]
    if g.shape != (n, n):
        raise InvalidParameterError(f"gram must be square, not {g.shape}")
    tree = _tree.build_tree(n, branch)
    share = np.ones(tree.size)  # p of each node (share kept for the children)
    terminal = np.zeros(tree.size, bool)
    u: dict[int, np.ndarray] = {}
    kk = np.zeros(tree.size)
    own = np.zeros(tree.size)  # ‖G[:, v]·u_v‖² of every finished node
    err = np.zeros(tree.size)
    grid = np.arange(GRANULARITY, dtype=np.float64)
    err1 = (GRANULARITY - grid) ** 2
    for v in range(tree.size - 1, -1, -1):
        lo, hi = tree.lo[v], tree.hi[v]
        size = hi - lo
        block = g[:, lo:hi]
        if size == 1:
            err[v] = float(block[:, 0] @ block[:, 0])
            u[v], kk[v], terminal[v] = np.ones(1), 1.0, True
            own[v] = err[v]
            continue
        # uniform node (all columns equal); the first/last column test rejects cheaply
        if np.array_equal(block[:, 0], block[:, -1]) and np.all(
            block.min(axis=1) == block.max(axis=1)
        ):
            err[v] = float(block[:, 0] @ block[:, 0])
            u[v], kk[v], terminal[v] = np.full(size, 1.0 / size), 1.0, True
            own[v] = err[v]  # G[:, v]·(1/size)·1 = the (common) column
            continue
        ch = tree.children[v]
        ub = np.concatenate([u[c] for c in ch])
        kb = float(kk[ch].sum())
        bm = block @ ub
        m = float(bm @ bm)
        m1 = float(sum(own[c] for c in ch))
        sumerr = float(err[ch].sum())
        decay = 1.0 / branch ** (tree.depth[v] / 2.0)
        err2 = grid**2 * decay
        tot = (sumerr - ((m - m1) * decay + m1) * err2 / (err1 + err2 * kb)) / err1
        i = int(np.argmin(tot))
        err[v] = float(tot[i]) * GRANULARITY**2
        p = 1.0 - i / GRANULARITY
        share[v] = p
        c_sm = (1.0 - p) ** 2 / (p**2 + kb * (1.0 - p) ** 2)
        u[v] = ub * (1.0 - c_sm * kb) / p**2
        kk[v] = float(u[v].sum())
        own[v] = m * ((1.0 - c_sm * kb) / p**2) ** 2  # ‖G[:, v]·u_v‖², u_v ∝ u_B
        for c in ch:
            u.pop(c, None)
    # weights top-down: a node gets (1 − p)·(path share), its children p·(path share)
    mult = np.zeros(tree.size)
    mult[0] = 1.0
    w = np.zeros(tree.size)
    for v in range(tree.size):
        if terminal[v]:
            w[v] = mult[v]
            continue
        w[v] = mult[v] * (1.0 - share[v])
        for c in tree.children[v]:
            mult[c] = mult[v] * share[v]
    tree.weight = w
    return _tree.prune(tree, terminal)


def greedyh_release(
    x: np.ndarray,
    epsilon: float,
    workload: tuple[np.ndarray, np.ndarray] | None = None,
    *,
    gram: np.ndarray | None = None,
    accountant: Accountant | None = None,
    rng: np.random.Generator | None = None,
    discrete: bool = False,
) -> np.ndarray:
    """GreedyH stand-alone (Li et al. 2014 §5 on the full domain): ε-DP estimate of x.

    Args:
        x: the true 1-D histogram.
        epsilon: budget ε (charged to ``accountant`` before the noise is drawn).
        workload: range queries ``(lo, hi)`` (None: the identity workload).
        gram: precomputed ``WᵀW`` (any linear workload; overrides ``workload``).
        accountant: charged ε (None: a fresh accountant capped at ε).
        rng: noise source (None: the project's CSPRNG).
        discrete: exact discrete Laplace (integer counts).
    """
    epsilon = check_positive("epsilon", epsilon)
    x = np.asarray(x, np.float64).ravel()
    n = len(x)
    if gram is not None:
        tree = greedyh_tree(gram)
    else:
        if n > GRAM_MAX:
            raise InvalidParameterError(
                f"GreedyH builds the {n} x {n} workload Gram; at most {GRAM_MAX} cells "
                "(use HB, Privelet or HDMM on larger domains)"
            )
        if workload is None:
            workload = (np.arange(n), np.arange(1, n + 1))
        lo, hi = (np.asarray(v, np.int64) for v in workload)
        key = ("tree", n, lo.tobytes(), hi.tobytes())
        tree = _cached(key, lambda: greedyh_tree(range_gram(n, lo, hi)))  # type: ignore[assignment]
    charge(accountant, epsilon, "histogram:GreedyH")
    y = _tree.measure(x, tree, epsilon, rng=resolve_rng(rng), discrete=discrete)
    return _tree.least_squares(tree, y, epsilon)
