"""Min-entropy privacy metric γ(Θ) of predicate-wise DP (thesis §5.2.2, Def. 5.4, §5.4).

For predicates with ε vector Θ the adversary's posterior p̂ over "which predicate does
the record satisfy" is confined to a box (Lemma 5.1, eq. 5.7; Lemma A.1, eq. A.2 for
non-uniform priors q)::

    l_i = e^(−ε_i)·q_i / Σ_j q_j e^(ε_j)   ≤   p̂_i   ≤   u_i = e^(ε_i)·q_i / Σ_j q_j e^(−ε_j)

and γ(Θ) = min Σ −p̂_i ln p̂_i over that box intersected with the simplex (natural log,
nats). A high γ means a low privacy loss.

Exact algorithms (:func:`min_entropy_solution`). Thesis Algorithm 5 recurses twice per
level (2^k calls); its Algorithm 8 only trims cases. Write f(p) = −p ln p, s = 1 − Σ l_i
(the slack), Δ_i = u_i − l_i, w_i = f(u_i) − f(l_i) (cost of moving i from l_i to u_i).

*Lemma 1 (vertices; proven).* The objective is concave and the feasible set a polytope,
so the minimum is attained at a vertex; a vertex of {l ≤ p ≤ u, Σp = 1} has k − 1
linearly independent active bounds, i.e. every coordinate at a bound except at most
one "free" coordinate φ. Its cost is Σ f(l) + Σ_{i∈U} w_i + f(l_φ + x) − f(l_φ) with
U the set at the upper bound and x = s − Σ_U Δ_i ∈ [0, Δ_φ].

*Lemma 2 (ties; proven).* Predicates with the same (l, u) pair — the same ε (and prior)
— are interchangeable, so with G distinct pairs ("levels", c_g members each) a vertex
class is a count vector n (0 ≤ n_g ≤ c_g members of level g up) plus the level φ of
the free member (n_φ < c_φ).

*Lemma 3 (one count is solved; proven).* Fix φ and every count but n_{g*}. Then the
cost is a·n_{g*} + f(l_φ + R − n_{g*}Δ_{g*}) + const — affine plus concave of an affine
map, hence concave in n_{g*} — over the integer interval where 0 ≤ x ≤ Δ_φ; a concave
function on an interval is minimised at an end point. So the minimum is among
2·G·Π_{g≠g*}(c_g + 1) candidates (g* = the largest level): **polynomial,
O(G·(k/(G−1) + 1)^(G−1)), for a fixed number G of distinct ε** — O(1) for TSLM (G = 1),
O(k) for G = 2, O(k²) for G = 3. This "level enumeration" is used directly when it
needs ≤ :data:`LEVEL_ENUM_FIRST` candidates.

*Branch-and-bound (exact when it finishes).* On [l_i, u_i] the concave f lies above its
chord, so replacing every term by its chord gives a linear program (a fractional
knapsack: fill levels by increasing chord slope) whose optimum is a valid lower bound,
tight except for the free coordinate. Depth-first search over the counts in chord-slope
order, pruning every branch whose bound is not below the best vertex found
(:data:`REL_TOL`), returns the exact minimum; a MIDE output (a handful of distinct ε)
takes tens of nodes (≈ 10 ms for 10,000 predicates). When the level enumeration fits
in :data:`LEVEL_ENUM_LIMIT` candidates the search stops after
:data:`LEVEL_FALLBACK_NODES` and the enumeration runs, its rows pruned by the chord-LP
bound against the search's best vertex (three near-equal levels of 3,333 members:
≈ 1 s, exact); otherwise, at :data:`MAX_NODES`, the result is the certified chord-LP
lower bound with ``exact=False`` (conservative for a privacy metric).

*Why not polynomial for every Θ.* For many distinct ε the vertex problem is a 0-1
knapsack with an exact-fit condition (choose U with s − Δ_φ ≤ Σ_U Δ_i ≤ s) and a
concave last term; the chord-LP bound is tight exactly when some U fills the slack. The
"prefix by ε" hint fails (``test_upper_bound_set_is_not_a_prefix_by_epsilon``), and
:mod:`mechanisms.mide.hardness` shows why no rule of that kind can work: on nested
boxes exact γ decides SUBSET-SUM (Theorem 1, proved: weakly NP-hard), and on
uniform-prior Θ with near-equal ε it decides K-SUBSET-SUM (Theorem 2, proved for every
instance the builder returns by a certificate the code checks; that the certificate
always succeeds for a polynomially small η is argued, not proven) — so a polynomial
algorithm exact for every Θ is not to be expected unless P = NP. What is delivered instead:
exact answers (verified against brute force), polynomial for a bounded number G of
distinct ε (every MIDE output: G ≤ steps per query), tens of nodes on MIDE outputs,
and on adversarial inputs (10,000 near-equal distinct ε, or those reductions beyond
~30 predicates) a stop at :data:`MAX_NODES` with ``exact=False`` and the certified
interval [value, upper] (LP bound, best vertex; within ~1e-5–2e-3 nats on dense ε).

Verification: :func:`min_entropy_bruteforce` enumerates every vertex (k ≤ 16) and is
the test oracle for both methods (thousands of random instances, k ≤ 10, ties, extreme
and zero ε, non-uniform priors) — ``tests/mechanisms/mide/test_mide_entropy.py``.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import math
from dataclasses import dataclass

import numpy as np

from mechanisms.errors import InvalidParameterError, OccustreamError

logger = logging.getLogger(__name__)

__all__ = [
    "LEVEL_ENUM_FIRST",
    "LEVEL_ENUM_LIMIT",
    "LEVEL_FALLBACK_NODES",
    "MAX_NODES",
    "REL_TOL",
    "MinEntropySolution",
    "check_priors",
    "entropy",
    "min_entropy",
    "min_entropy_bruteforce",
    "min_entropy_solution",
    "posterior_bounds",
]

#: relative tolerance of the exact search (prune when bound ≥ best·(1 − REL_TOL)).
REL_TOL = 1e-12
#: search nodes after which :func:`min_entropy_solution` stops the branch-and-bound and
#: returns the certified chord-LP lower bound with ``exact=False``.
MAX_NODES = 200_000
#: search budget when the exact level enumeration fits in :data:`LEVEL_ENUM_LIMIT`: the
#: search then only supplies an incumbent that prunes the enumeration's rows.
LEVEL_FALLBACK_NODES = 60_000
#: largest number of candidate vertices (G · Π_{g≠g*} (c_g + 1)) the polynomial level
#: enumeration evaluates; above it the branch-and-bound runs instead.
LEVEL_ENUM_LIMIT = 40_000_000
_CHUNK = 1 << 20  # rows of the level enumeration evaluated at once (memory bound)
#: "auto" runs the level enumeration first when it needs at most this many candidates
#: (cheaper than the search); otherwise the search, then the enumeration only if the
#: search hits :data:`MAX_NODES`.
LEVEL_ENUM_FIRST = 20_000


def _xlogx(p: np.ndarray | float) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    if p.size and p.min() > 0:  # the common case: no masking needed
        return -p * np.log(p)
    out = np.zeros_like(p)
    pos = p > 0
    out[pos] = -p[pos] * np.log(p[pos])
    return out


def _h(p: float) -> float:
    return -p * math.log(p) if p > 0 else 0.0


def entropy(p: np.ndarray) -> float:
    """Shannon entropy Σ −p_i ln p_i (nats) of a probability vector."""
    return float(_xlogx(p).sum())


def check_priors(priors: np.ndarray, size: int) -> np.ndarray:
    """Adversary prior weights (Lemma A.1) as a float vector: ``size`` finite values > 0.

    Raises:
        InvalidParameterError: naming the type, the shape, or the first bad value.
    """
    try:
        q = np.asarray(priors, dtype=float)
    except (TypeError, ValueError):
        raise InvalidParameterError(
            f"priors must be real numbers, not a {type(priors).__name__}") from None
    if q.size != size:
        raise InvalidParameterError(
            f"priors must have one weight per predicate ({size}), not shape {q.shape}")
    q = q.ravel()
    for rule, bad in (("finite", ~np.isfinite(q)), ("> 0", q <= 0)):
        i = np.flatnonzero(bad)
        if i.size:
            raise InvalidParameterError(
                f"priors must be {rule}, not {float(q[i[0]])!r} at index {int(i[0])}")
    return q


def posterior_bounds(
    epsilons: np.ndarray, priors: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Bounds (l, u) on the adversary's posterior per predicate (eq. 5.7 / A.2).

    Args:
        epsilons: per-predicate ε_i ≥ 0 (finite).
        priors: optional prior weights q_i > 0 (any scale); None → uniform (Lemma 5.1).

    Returns:
        Arrays l, u with 0 < l ≤ u, u additionally tightened to 1 − Σ_{j≠i} l_j (the same
        feasible set, a tighter box).
    """
    eps = np.asarray(epsilons, dtype=float).ravel()
    if eps.size == 0:
        raise InvalidParameterError("epsilons must be a non-empty vector, not an empty one")
    if not np.all(np.isfinite(eps)) or np.any(eps < 0):
        raise InvalidParameterError(f"epsilons must be finite and >= 0, not {eps!r}")
    q = np.ones_like(eps) if priors is None else check_priors(priors, eps.size)
    # Both ratios are scale-free: multiply numerator and denominator by e^(−ε_max) so
    # no exponential overflows (ε up to ~700 above the others is fine).
    emax = eps.max()
    lo = q * np.exp(-eps - emax) / np.sum(q * np.exp(eps - emax))
    hi = q * np.exp(eps - emax) / np.sum(q * np.exp(-eps - emax))
    total_lo = lo.sum()
    hi = np.minimum(hi, 1.0 - (total_lo - lo))
    hi = np.maximum(hi, lo)
    return lo, hi


@dataclass(frozen=True)
class MinEntropySolution:
    """Result of the exact search.

    Attributes:
        value: γ, the minimum entropy in nats.
        p: a minimising posterior vector (original predicate order).
        nodes: search nodes explored, or candidate vertices evaluated by the level
            enumeration (a cost figure for benchmarks).
        exact: False when the search hit :data:`MAX_NODES`; ``value`` is then the
            chord-LP lower bound — conservative for a privacy metric (it understates the
            adversary's remaining uncertainty) — and ``p`` the best vertex found.
        method: "levels" (polynomial level enumeration) or "search" (branch-and-bound).
        upper: entropy of ``p`` — equal to ``value`` when ``exact``; otherwise
            γ ∈ [value, upper] (the certified interval).
    """

    value: float
    p: np.ndarray
    nodes: int
    exact: bool = True
    method: str = "search"
    upper: float = math.nan

    def __post_init__(self) -> None:
        if math.isnan(self.upper):
            object.__setattr__(self, "upper", self.value)


def _level_rows(
    rest: list[int], n_g: list[int], d_g: list[float], w_g: list[float], slack: float,
    cap_s: float, r_s: float, r_abs: float, d_abs: float, prune_at: float, tol: float,
):
    """Yield blocks of count vectors (rows × len(rest)) that may host a better vertex.

    A row leaves slack rem0 for the solved level (capacity ``cap_s``, chord slope
    ``r_s``) and one free member (relaxed: slope ``r_abs``, width ``d_abs``). It is kept
    iff 0 ≤ rem0 ≤ cap_s + d_abs and its chord-LP bound is below ``prune_at``. For fixed
    counts of all enumerated levels but the last, rem0 is affine and the bound convex
    (linear + the convex LP value of an affine map) in the last count, so the kept last
    counts form an interval, computed per row in closed form — only kept rows are built.
    The interval is widened by one on each side against rounding (a superset is safe:
    every kept row is evaluated exactly).
    """
    if not rest:
        yield np.zeros((1, 0))
        return
    outer = rest[:-1]
    last = rest[-1]
    d_l, w_l, c_l = d_g[last], w_g[last], n_g[last]
    shape = tuple(n_g[t] + 1 for t in outer)
    size = math.prod(shape)
    d_out = np.array([d_g[t] for t in outer], dtype=float)
    w_out = np.array([w_g[t] for t in outer], dtype=float)
    # the LP value of r ≥ 0 fills the cheaper slope first, up to the break point bp
    s1, s2, bp = (r_abs, r_s, d_abs) if r_abs <= r_s else (r_s, r_abs, cap_s)
    step = max(1, _CHUNK // (c_l + 1))
    for start in range(0, size, step):
        flat = np.arange(start, min(size, start + step))
        cnt = (np.stack(np.unravel_index(flat, shape), axis=1).astype(float) if outer
               else np.zeros((1, 0)))
        big_r = slack - cnt @ d_out
        cost = cnt @ w_out
        # feasibility: 0 <= R − n·d_l <= cap_s + d_abs
        lo_n = np.ceil((big_r - cap_s - d_abs) / d_l) - 1
        hi_n = np.floor(big_r / d_l) + 1
        if math.isfinite(prune_at):
            # s1 <= s2, so the LP value of r >= 0 is max(s1·r, s1·bp + s2·(r − bp)) and the
            # bound B(n) = max of two lines in n: B < prune_at on both half-lines' overlap
            for a0, slope in ((cost + s1 * big_r, w_l - s1 * d_l),
                              (cost + s1 * bp + s2 * (big_r - bp), w_l - s2 * d_l)):
                if slope > 0:
                    hi_n = np.minimum(hi_n, np.ceil((prune_at - a0) / slope) + 1)
                elif slope < 0:
                    lo_n = np.maximum(lo_n, np.floor((prune_at - a0) / slope) - 1)
                else:
                    hi_n = np.where(a0 < prune_at, hi_n, -1.0)
        lo_n = np.maximum(lo_n, 0.0)
        hi_n = np.minimum(hi_n, float(c_l))
        length = np.maximum(hi_n - lo_n + 1, 0).astype(np.int64)
        total = int(length.sum())
        if total == 0:
            continue
        rows = np.repeat(np.arange(cnt.shape[0]), length)
        offsets = np.arange(total) - np.repeat(np.cumsum(length) - length, length)
        n_last = np.repeat(lo_n, length) + offsets
        yield np.column_stack([cnt[rows], n_last])


def _levels_search(
    n_g: list[int], d_g: list[float], w_g: list[float], lo_g: list[float], slack: float,
    limit: int, incumbent: float = math.inf,
) -> tuple[float, list[int] | None, tuple[int, float] | None, int] | None:
    """Exact minimum by enumerating count vectors of all levels but one (Lemma 3).

    Levels t = 0..G−1 have n_g[t] members with bounds [lo_g[t], lo_g[t] + d_g[t]],
    d_g[t] > 0, and cost w_g[t] of moving one member up. Rows (count vectors of the
    enumerated levels) that cannot host a vertex, or whose chord-LP bound (the solved
    level plus one free member of the cheapest, widest kind) is not below
    ``incumbent``, are dropped before the exact evaluation.

    Returns:
        (cost above the all-lower base, counts at the upper bound per level, free
        (level, x) or None, candidates evaluated) — with counts None when no vertex
        beats ``incumbent`` — or None when G · Π_{g≠g*} (c_g + 1) exceeds ``limit``.
    """
    big_g = len(n_g)
    star = int(np.argmax(n_g))  # the level whose count is solved, not enumerated
    rest = [t for t in range(big_g) if t != star]
    shape = tuple(n_g[t] + 1 for t in rest)
    size = math.prod(shape)
    if size * big_g > limit:
        return None
    tol = 1e-12
    d_rest = np.array([d_g[t] for t in rest], dtype=float)
    w_rest = np.array([w_g[t] for t in rest], dtype=float)
    n_rest = np.array([n_g[t] for t in rest], dtype=float)
    d_s, w_s, c_s = d_g[star], w_g[star], n_g[star]
    r_s = w_s / d_s
    # the free member's chord relaxation: cheapest slope, widest width of any level
    r_abs = min(w / d for w, d in zip(w_g, d_g, strict=True))
    d_abs = max(d_g)
    prune_at = incumbent + tol * max(1.0, abs(incumbent)) if math.isfinite(incumbent) else (
        math.inf)
    best: tuple[float, list[int], int, int, float] | None = None  # value, rest, n*, φ, x
    candidates = 0
    for cnt in _level_rows(rest, n_g, d_g, w_g, slack, c_s * d_s, r_s, r_abs, d_abs,
                           prune_at, tol):
        rem0 = slack - cnt @ d_rest  # slack left for level star and the free member
        cost0 = cnt @ w_rest
        candidates += 2 * big_g * cnt.shape[0]
        for phi in range(big_g):
            if phi == star:
                cap_s = c_s - 1
                ok = np.ones(cnt.shape[0], dtype=bool)
            else:
                cap_s = c_s
                j = rest.index(phi)
                ok = cnt[:, j] < n_rest[j]
            # 0 <= rem0 − n·d_s <= d_phi  ⇔  (rem0 − d_phi)/d_s <= n <= rem0/d_s
            n_min = np.maximum(np.ceil((rem0 - d_g[phi]) / d_s - tol), 0.0)
            n_max = np.minimum(np.floor(rem0 / d_s + tol), float(cap_s))
            ok &= n_min <= n_max
            # concave in n: an end point is optimal (the second only where it differs)
            for n_cand, need in ((n_min, ok), (n_max, ok & (n_max > n_min))):
                x = rem0 - n_cand * d_s
                idx = np.flatnonzero(need & (x >= -tol) & (x <= d_g[phi] + tol))
                if idx.size == 0:
                    continue
                x = np.clip(x[idx], 0.0, d_g[phi])
                val = cost0[idx] + n_cand[idx] * w_s + _xlogx(lo_g[phi] + x) - _h(lo_g[phi])
                j = int(np.argmin(val))
                if best is None or val[j] < best[0]:
                    row = int(idx[j])
                    best = (float(val[j]), [int(c) for c in cnt[row]], int(n_cand[row]),
                            phi, float(x[j]))
    # every member at its upper bound (no free member): only if Σ u = 1
    full_rem = slack - float(np.dot(n_g, d_g))
    full_cost = float(np.dot(n_g, w_g))
    if abs(full_rem) <= tol and full_cost < min(incumbent, best[0] if best else math.inf):
        return full_cost, list(n_g), None, candidates
    if best is None or best[0] >= incumbent:
        if math.isfinite(incumbent):
            return math.inf, None, None, candidates
        raise OccustreamError(  # pragma: no cover - feasibility was checked by the caller
            "min-entropy level search found no vertex (numerical trouble)")
    value, rest_counts, n_star, phi, x = best
    counts_up = [0] * big_g
    for j, t in enumerate(rest):
        counts_up[t] = rest_counts[j]
    counts_up[star] = n_star
    return value, counts_up, (phi, x), candidates


def min_entropy_solution(
    lower: np.ndarray, upper: np.ndarray, *, method: str = "auto"
) -> MinEntropySolution:
    """Exact minimum of Σ −p_i ln p_i subject to lower ≤ p ≤ upper, Σ p = 1.

    Args:
        lower: lower bounds l_i ≥ 0.
        upper: upper bounds u_i ≥ l_i, with Σ l ≤ 1 ≤ Σ u.
        method: "levels" (polynomial level enumeration, Lemma 3; raises if it would
            exceed :data:`LEVEL_ENUM_LIMIT` candidates), "search" (branch-and-bound only)
            or "auto" (levels if within :data:`LEVEL_ENUM_FIRST`, else search, falling
            back to levels within :data:`LEVEL_ENUM_LIMIT` if the search hits
            :data:`MAX_NODES`).

    Returns:
        The minimum, a minimiser and the number of nodes explored.

    Raises:
        InvalidParameterError: if the bounds are malformed or infeasible.
    """
    if method not in ("auto", "levels", "search"):
        raise InvalidParameterError(
            f"method must be one of 'auto', 'levels', 'search', not {method!r}"
        )
    lo = np.asarray(lower, dtype=float).ravel()
    hi = np.asarray(upper, dtype=float).ravel()
    if lo.shape != hi.shape or lo.size == 0:
        raise InvalidParameterError(
            f"lower and upper must be non-empty vectors of one shape, not {lo.shape} and "
            f"{hi.shape}"
        )
    if np.any(lo < 0) or np.any(hi < lo) or not np.all(np.isfinite(hi)):
        raise InvalidParameterError("bounds must satisfy 0 <= lower <= upper < inf")
    slack = 1.0 - float(lo.sum())
    tol = 1e-12
    if slack < -tol or float(hi.sum()) < 1.0 - tol:
        raise InvalidParameterError(
            f"bounds must admit a probability vector (sum(lower) <= 1 <= sum(upper)), "
            f"not sum(lower)={lo.sum()!r}, sum(upper)={hi.sum()!r}"
        )
    slack = max(slack, 0.0)
    # --- group identical bound pairs --------------------------------------------------
    pairs = np.stack([lo, hi], axis=1)
    uniq, inverse, counts = np.unique(pairs, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    g_lo, g_hi = uniq[:, 0], uniq[:, 1]
    g_d = g_hi - g_lo
    g_w = _xlogx(g_hi) - _xlogx(g_lo)  # cost of moving one member from l to u
    base = float(np.dot(counts, _xlogx(g_lo)))
    movable = g_d > 0
    idx = np.flatnonzero(movable)
    slope = g_w[idx] / g_d[idx]
    order = idx[np.argsort(slope, kind="stable")]
    groups = [int(g) for g in order]
    n_g = [int(counts[g]) for g in groups]
    d_g = [float(g_d[g]) for g in groups]
    w_g = [float(g_w[g]) for g in groups]
    r_g = [w / d for w, d in zip(w_g, d_g, strict=True)]
    lo_g = [float(g_lo[g]) for g in groups]
    big_g = len(groups)
    cap = [n * d for n, d in zip(n_g, d_g, strict=True)]
    cc = [0.0] + list(itertools.accumulate(cap))  # cumulative capacity
    cw = [0.0] + list(itertools.accumulate(n * w for n, w in zip(n_g, w_g, strict=True)))

    def lp_bound(t: int, rem: float, abs_slope: float, abs_cap: float) -> float:
        """Chord-LP lower bound for spreading ``rem`` over groups t.. plus an absorber."""
        total = 0.0
        if abs_cap > 0 and (t >= big_g or abs_slope <= r_g[t]):
            take = min(rem, abs_cap)
            total += abs_slope * take
            rem -= take
        if rem <= tol:
            return total
        need = cc[t] + rem
        j = bisect.bisect_left(cc, need - tol, lo=t + 1) - 1  # cc[j] < need <= cc[j+1]
        if j >= big_g:
            return math.inf  # cannot place the slack
        return total + (cw[j] - cw[t]) + r_g[j] * (need - cc[j])

    best_val = math.inf
    best_counts: list[int] | None = None
    best_free: tuple[int, float] | None = None
    nodes = 0
    counts_path = [0] * big_g

    def leaf(rem: float) -> tuple[float, tuple[int, float] | None]:
        if rem <= tol:
            return 0.0, None
        best = (math.inf, None)
        for t in range(big_g):
            if counts_path[t] < n_g[t] and d_g[t] >= rem - tol:
                x = min(rem, d_g[t])
                v = _h(lo_g[t] + x) - _h(lo_g[t])
                if v < best[0]:
                    best = (v, (t, x))
        return best  # type: ignore[return-value]

    # iterative DFS: frame = (t, rem, cost, abs_slope, abs_cap, next_count, stop_count)
    stack: list[list[float]] = []

    def push(t: int, rem: float, cost: float, abs_slope: float, abs_cap: float) -> None:
        cmax = min(n_g[t], int(math.floor((rem + tol) / d_g[t])))
        stack.append([t, rem, cost, abs_slope, abs_cap, cmax])

    if big_g == 0:
        value = base
        return MinEntropySolution(float(value), lo.copy(), 0)
    root_bound = lp_bound(0, slack, math.inf, 0.0)
    exact = True
    level_sol = None
    if method != "search":
        limit = LEVEL_ENUM_LIMIT if method == "levels" else LEVEL_ENUM_FIRST
        level_sol = _levels_search(n_g, d_g, w_g, lo_g, slack, limit)
    if level_sol is None and method == "levels":
        raise InvalidParameterError(
            f"method must be 'auto' or 'search' for {big_g} distinct bound pairs with "
            f"counts {sorted(n_g)[:8]}..., not 'levels' (over LEVEL_ENUM_LIMIT candidates)"
        )
    used = "search"
    budget = MAX_NODES
    if method == "auto" and level_sol is None:
        levels_fit = big_g * math.prod(n + 1 for n in n_g) // (max(n_g) + 1)
        if levels_fit <= LEVEL_ENUM_LIMIT:
            budget = min(MAX_NODES, LEVEL_FALLBACK_NODES)
    if level_sol is not None:
        best_val, best_counts, best_free, nodes = level_sol
        used = "levels"
    else:
        push(0, slack, 0.0, math.inf, 0.0)
    while stack:
        nodes += 1
        if nodes > budget and best_counts is not None:
            exact = False
            break
        frame = stack[-1]
        t, rem, cost, a_slope, a_cap, c = (
            int(frame[0]), frame[1], frame[2], frame[3], frame[4], int(frame[5])
        )
        if c < 0:
            stack.pop()
            continue
        frame[5] = c - 1
        counts_path[t] = c
        new_rem = rem - c * d_g[t]
        if new_rem < -tol:
            continue
        new_rem = max(new_rem, 0.0)
        new_cost = cost + c * w_g[t]
        if c < n_g[t]:  # group t can still host the free member
            n_slope, n_cap = min(a_slope, r_g[t]), max(a_cap, d_g[t])
        else:
            n_slope, n_cap = a_slope, a_cap
        bound = new_cost + lp_bound(t + 1, new_rem, n_slope, n_cap)
        threshold = best_val - REL_TOL * max(1.0, abs(best_val + base))
        if bound >= threshold:
            # Once the absorber is saturated (new_rem >= its capacity) every further unit
            # of slack goes to groups with chord slope >= r_t, so lower counts only raise
            # the bound: stop. Before that the bound need not be monotone: keep scanning.
            if c < n_g[t] and new_rem >= n_cap - tol:
                stack.pop()
            continue
        if t + 1 == big_g:
            v, free = leaf(new_rem)
            if new_cost + v < best_val:
                best_val = new_cost + v
                best_counts = counts_path.copy()
                best_free = free
            continue
        push(t + 1, new_rem, new_cost, n_slope, n_cap)
    if not exact and method == "auto":  # budget hit: the polynomial enumeration, if small
        level_sol = _levels_search(n_g, d_g, w_g, lo_g, slack, LEVEL_ENUM_LIMIT,
                                   incumbent=best_val)
        if level_sol is not None:  # exact: either a better vertex or none exists
            if level_sol[1] is not None:
                best_val, best_counts, best_free, _ = level_sol
            nodes += level_sol[3]
            exact, used = True, "levels"
    if best_counts is None:  # pragma: no cover - feasibility was checked above
        raise OccustreamError("min-entropy search found no vertex (numerical trouble)")
    # --- reconstruct a minimiser -----------------------------------------------------
    p = lo.copy()
    members = [np.flatnonzero(inverse == g) for g in range(len(uniq))]
    for t, g in enumerate(groups):
        m = members[g]
        k_up = best_counts[t]
        p[m[:k_up]] = hi[m[:k_up]]
        if best_free is not None and best_free[0] == t:
            p[m[k_up]] = lo[m[k_up]] + best_free[1]
    if not exact:
        logger.warning(
            "min-entropy search stopped after %d nodes (%d predicates, %d distinct bounds); "
            "reporting the conservative LP lower bound", nodes, lo.size, big_g
        )
        return MinEntropySolution(float(base + root_bound), p, nodes, exact=False, method=used,
                                  upper=float(base + best_val))
    return MinEntropySolution(float(base + best_val), p, nodes, method=used)


def min_entropy(
    epsilons: np.ndarray, priors: np.ndarray | None = None, *, require_exact: bool = False
) -> float:
    """γ(Θ) (Def. 5.4) of a predicate-wise ε vector, in nats.

    Exact whenever the search finishes — always for a bounded number of distinct ε,
    e.g. every MIDE output. When it stops at :data:`MAX_NODES` (adversarial inputs,
    :mod:`mechanisms.mide.hardness`) the value is the certified lower bound (logged as a
    warning); use :func:`min_entropy_solution` for the interval [value, upper], or
    ``require_exact=True`` to get an error instead.

    Args:
        epsilons: per-predicate ε.
        priors: optional adversary prior weights (Lemma A.1); None → uniform.
        require_exact: raise instead of returning a lower bound.

    Returns:
        The minimum posterior entropy the bounds allow (≤ ln k; ln k when all ε = 0).

    Raises:
        OccustreamError: ``require_exact`` and the search stopped before certifying
            the minimum.
    """
    lo, hi = posterior_bounds(epsilons, priors)
    sol = min_entropy_solution(lo, hi)
    if require_exact and not sol.exact:
        raise OccustreamError(
            f"min-entropy of {lo.size} predicates is only bracketed, not exact: "
            f"[{sol.value:.6g}, {sol.upper:.6g}] nats; use min_entropy_solution for the "
            "certified interval"
        )
    return sol.value


def min_entropy_bruteforce(lower: np.ndarray, upper: np.ndarray) -> float:
    """Exact γ by enumerating every vertex (k·2^(k−1) candidates; k ≤ 16). Test oracle."""
    lo = np.asarray(lower, dtype=float).ravel()
    hi = np.asarray(upper, dtype=float).ravel()
    k = lo.size
    if k == 1:
        return 0.0
    if k > 16:
        raise InvalidParameterError(f"brute force needs k <= 16 predicates, not {k}")
    best = math.inf
    masks = np.array(list(itertools.product([0, 1], repeat=k - 1)), dtype=bool).reshape(-1, k - 1)
    tol = 1e-12
    for f in range(k):
        others = np.array([i for i in range(k) if i != f], dtype=int)
        vals = np.where(masks, hi[others], lo[others])  # (2^(k-1), k-1)
        pf = 1.0 - vals.sum(axis=1)
        ok = (pf >= lo[f] - tol) & (pf <= hi[f] + tol)
        if not ok.any():
            continue
        pf = np.clip(pf[ok], lo[f], hi[f])
        tot = _xlogx(vals[ok]).sum(axis=1) + _xlogx(pf)
        best = min(best, float(tot.min()))
    return best
