"""The daily occupancy cube (location × 5-minute slot) under the device-day unit.

Unit of privacy (:data:`mechanisms.accounting.DEVICE_DAY_UNIT`): neighbouring days
differ in one device's whole UTC day. The cube of a day is the matrix x[ℓ, t] of the
true count of leaf location ℓ (a room) at 5-minute slot t = 0 … T − 1 (T = 288).

Contribution bound and sensitivity (the argument of :mod:`mechanisms.device_day`)
    (a) at one slot a device is counted in at most one location (the oracle's presence
    model); (b) it is counted in at most B slots of the day (default B = T = 288,
    implied by (a)). Hence one device changes at most B cells of the cube, each by 1:
    **L1 sensitivity B, L2 sensitivity √B** (Σ a² = Σ a ≤ B for a ∈ {0, 1}).
    Aggregating *locations* at one slot keeps this: a floor's count at slot t moves by
    at most 1, so each level of the building → floor → room tree also has L2
    sensitivity √B over the day. Aggregating *time* does not: a node summing w slots of
    one location moves by up to w, and a level of such nodes has L2 sensitivity √(w·B)
    (Σ n_j² ≤ w Σ n_j ≤ w·B for n_j ≤ w).

Why Gaussian and not the histogram tool's Laplace algorithms
    The histogram tool (``occustream histogram release``, :mod:`research.histogram`)
    releases at event level with pure ε-DP noise scaled to an L1 sensitivity. Under the
    device-day unit the L1 sensitivity is B = 288 while L2 is √B ≈ 17: at the
    histogram's share ρ_h of the day (ρ_h = 0.05 · 0.311 = 0.0156 at ε_day = 4,
    δ = 10⁻⁶) the best pure-ε Laplace release (ε = √(2ρ_h) = 0.18 by Bun & Steinke
    2016 Prop. 1.4) has per-cell scale B/ε ≈ 1,600 people against the Gaussian's
    σ = √(B/(2ρ_h)) ≈ 96. So every algorithm here is a (discrete) Gaussian mechanism
    charged as ρ-zCDP, ρ = Δ₂²/(2σ²) per measured level (Canonne, Kamath & Steinke 2020
    Thm 4; levels compose additively, Bun & Steinke 2016 Lemma 2.3).

Algorithms (``ALGORITHMS``; the default is chosen by ``python -m bench cube``)
    ``identity``   every cell x + N_ℤ(0, σ²), σ² = B/(2ρ_h): the Gaussian identity
                   baseline (DPBench's Identity, Hay et al. SIGMOD 2016 §5, with
                   Gaussian noise at L2 sensitivity √B).
    ``tree``       the hierarchical release over the *locations* (Hay, Rastogi, Miklau
                   & Suciu VLDB 2010 §4; HB, Qardaji, Yang & Li VLDB 2013, with the
                   levels a building's floors and rooms instead of a b-ary split):
                   every node at depth d and slot t gets N_ℤ(0, σ_d²) with
                   σ_d² = B/(2 w_d ρ_h) (Σ w_d = 1, so ρ = Σ_d B/(2σ_d²) = ρ_h), then
                   weighted least squares per slot (:mod:`mechanisms.consistency`).
                   A floor's count costs no more than a room's (same √B), so its
                   measurement is a second, independent estimate of a sum of rooms —
                   the gain the histogram tool's hierarchical methods seek.
    ``hb-time``    the histogram tool's hierarchical method applied to the *time*
                   axis (one location's day as a 1-D histogram: hours over slots),
                   with the level sensitivity scaled correctly, √(12·B) for the hour
                   sums. It is a control: under this unit the hour level measures
                   nothing the slots do not (an hour sum with σ_h² = 12B/(2 w_h ρ)
                   has the variance of 12 summed slots at weight w_h), so least
                   squares returns the identity's accuracy — the bench shows it.
    Partition-based methods (DAWA, AHP: Zhang et al. SIGMOD 2014; Zhang, Chen, Xu,
    Meng & Xie 2014) gain by measuring a bucket of w cells with the noise of one cell
    — true at event level (L1 sensitivity 1 per bucket) but not here: a bucket of w
    slots of a location has sensitivity √(w·B) (above), so measuring it is the same as
    averaging w identity cells, and their partition step would spend budget for
    nothing. Buckets across locations at one slot do keep sensitivity √B — that is
    exactly what the ``tree``'s floor and building nodes are, with a public partition
    (the building plan), so no budget goes to choosing it.

Post-processing (free: reads only released values)
    The published cube is the least-squares (unbiased, may be < 0) value per cell; the
    hourly profile of every node (24 means per room, floor, building) is the mean of
    12 slots, made consistent and non-negative at the hour; its error bar is the
    least-squares posterior σ/√12 (:func:`posterior_variance`). The whole day is
    charged once, before any noise (``release_cube`` with a
    :class:`~mechanisms.accounting.DayBudget`), or by the caller before the call.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mechanisms import consistency
from mechanisms.accounting import DayBudget, LedgerRecord
from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.gaussian import discrete_gaussian
from mechanisms.hierarchical import Tree
from mechanisms.laplace import as_counts
from mechanisms.noise import resolve_rng

__all__ = [
    "ALGORITHMS",
    "DEFAULT_ALGORITHM",
    "DEFAULT_LEVEL_WEIGHTS",
    "MECHANISM",
    "CubeConfig",
    "CubeRelease",
    "hourly_profile",
    "ledger_label",
    "measure_tree",
    "posterior_variance",
    "release_cube",
    "sensitivity",
]

#: the release's ledger label
MECHANISM = "daily-cube"
ALGORITHMS = ("identity", "tree", "hb-time")
#: chosen by measured hourly-profile MAE on seeds 1–2 (``python -m bench cube``,
#: docs/device-day.md "The daily cube")
DEFAULT_ALGORITHM = "tree"
#: share of the cube's ρ per depth (building, floors, rooms); tuned on seeds 1–2
DEFAULT_LEVEL_WEIGHTS = (0.1, 0.2, 0.7)
#: share of ``hb-time``'s ρ on the hour level (the rest on the slots)
HB_HOUR_WEIGHT = 0.5


def ledger_label(config: CubeConfig) -> str:
    """The release's ledger label, ``daily-cube:{algorithm}``.

    The algorithm is part of the release id, so a second release of the same day by
    another algorithm is a new charge (refused over the share), never a "replay".
    """
    return f"{MECHANISM}:{config.algorithm}"


def sensitivity(max_slots: int) -> tuple[float, float]:
    """(L1, L2) sensitivity of a day's cube (or of one level of the location tree).

    One device is counted in ≤ 1 location per slot and ≤ ``max_slots`` slots per day,
    so it changes ≤ B cells by 1 each: L1 = B, L2 = √B.
    """
    b = int(max_slots)
    if b < 1:
        raise InvalidParameterError(f"max_slots must be a positive integer, not {max_slots!r}")
    return float(b), float(np.sqrt(b))


@dataclass(frozen=True)
class CubeConfig:
    """Parameters of the daily cube release.

    Attributes:
        rho: ρ of the whole release (the ``histogram`` share of the day's ρ).
        max_slots: B, slots a device may be counted in per day.
        slots_per_day: T (288 five-minute slots).
        slots_per_hour: slots per hour of the hourly profile (12).
        algorithm: one of :data:`ALGORITHMS`.
        level_weights: ``tree``: share of ρ per depth (root first), adding up to 1.
    """

    rho: float
    max_slots: int = 288
    slots_per_day: int = 288
    slots_per_hour: int = 12
    algorithm: str = DEFAULT_ALGORITHM
    level_weights: tuple[float, ...] = DEFAULT_LEVEL_WEIGHTS
    _w: tuple[float, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_positive("rho", self.rho)
        for name in ("max_slots", "slots_per_day", "slots_per_hour"):
            v = getattr(self, name)
            if not isinstance(v, int | np.integer) or v < 1:
                raise InvalidParameterError(f"{name} must be a positive integer, not {v!r}")
        if self.max_slots > self.slots_per_day or self.slots_per_day % self.slots_per_hour:
            raise InvalidParameterError(
                f"max_slots must be ≤ slots_per_day and slots_per_hour divide slots_per_day, "
                f"not {self.max_slots!r}, {self.slots_per_day!r}, {self.slots_per_hour!r}")
        if self.algorithm not in ALGORITHMS:
            raise InvalidParameterError(
                f"algorithm must be one of {list(ALGORITHMS)}, not {self.algorithm!r}")
        w = tuple(float(x) for x in self.level_weights)
        if not w or any(not (x > 0) for x in w) or abs(sum(w) - 1) > 1e-9:
            raise InvalidParameterError(
                f"level_weights must be positive fractions adding up to 1, not {w!r}")
        object.__setattr__(self, "level_weights", w)

    @property
    def sigma_identity(self) -> float:
        """σ per cell of ``identity``: √(B/(2ρ))."""
        return float(np.sqrt(self.max_slots / (2 * self.rho)))

    def sigmas(self, height: int) -> np.ndarray:
        """σ per measured level: ``tree``: per depth; else (cells,) or (hours, cells)."""
        b = self.max_slots
        if self.algorithm == "tree":
            if len(self.level_weights) != height:
                raise InvalidParameterError(
                    f"level_weights must have {height} entries (one per tree level), not "
                    f"{len(self.level_weights)}")
            return np.sqrt(b / (2 * np.asarray(self.level_weights) * self.rho))
        if self.algorithm == "hb-time":
            wh = HB_HOUR_WEIGHT
            return np.array([np.sqrt(self.slots_per_hour * b / (2 * wh * self.rho)),
                             np.sqrt(b / (2 * (1 - wh) * self.rho))])
        return np.array([self.sigma_identity])

    def spent_rho(self, height: int) -> float:
        """ρ of the release: Σ over measured levels of Δ₂²/(2σ²) (= ``rho``)."""
        s = self.sigmas(height)
        b = self.max_slots
        if self.algorithm == "hb-time":
            d2 = np.array([self.slots_per_hour * b, b], dtype=float)
            return float(np.sum(d2 / (2 * s * s)))
        return float(np.sum(b / (2 * s * s)))


@dataclass(frozen=True)
class CubeRelease:
    """A released day (public values only).

    Attributes:
        algorithm: the algorithm used.
        cube: (leaves, T) least-squares values per cell (unbiased; may be < 0).
        hourly: (hours, nodes) mean occupancy per hour and tree node (leaves first in
            tree order), consistent and ≥ 0.
        hourly_sd: (nodes,) σ of one hourly mean after least squares, before
            non-negativity (:func:`posterior_variance`; error bars).
        sigmas: σ per measured level.
        record: the ledger record when this call charged the budget, else None.
    """

    algorithm: str
    cube: np.ndarray
    hourly: np.ndarray
    hourly_sd: np.ndarray
    sigmas: np.ndarray
    record: LedgerRecord | None = None


def hourly_profile(values: np.ndarray, variances: np.ndarray, plan: consistency.TreePlan,
                   slots_per_hour: int) -> np.ndarray:
    """Hourly means of (T, nodes) slot values, consistent and ≥ 0 (post-processing)."""
    h = consistency.aggregate_time(values, slots_per_hour)
    return consistency.consistent_nonnegative(h, np.asarray(variances) / slots_per_hour, plan)


def _node_sigma(tree: Tree, config: CubeConfig) -> np.ndarray:
    """σ of one slot's value per node before least squares (∞: not measured)."""
    if config.algorithm == "tree":
        return config.sigmas(tree.height)[tree.depth]
    sig = np.full(tree.n_nodes, np.inf)
    if config.algorithm == "identity":
        sig[tree.leaves] = config.sigma_identity
    else:  # hb-time: the slots' σ combined with the hour's (per slot of an hour mean)
        sh, ss = config.sigmas(2)
        k = config.slots_per_hour
        sig[tree.leaves] = np.sqrt(1 / (1 / (ss * ss) + 1 / (sh * sh / k)))
    return sig


def _hb_time(noisy_slots: np.ndarray, noisy_hours: np.ndarray, ss: float, sh: float,
             k: int) -> np.ndarray:
    """Least squares of a two-level time tree (hour sums over k slots) per location.

    For one hour: slots y_i (variance ss²) and the hour sum z (variance sh²). The
    consistent estimate moves the slot sum S toward z by the inverse-variance weights
    and spreads the correction equally (Hay et al. 2010 §4 for one level).
    """
    t, n = noisy_slots.shape
    y = noisy_slots.reshape(t // k, k, n)
    s = y.sum(axis=1)
    vs, vz = k * ss * ss, sh * sh
    total = (s / vs + noisy_hours / vz) / (1 / vs + 1 / vz)
    return (y + ((total - s) / k)[:, None, :]).reshape(t, n)


def release_cube(
    leaf_cube: np.ndarray,
    tree: Tree,
    config: CubeConfig,
    *,
    day: int,
    budget: DayBudget | None,
    rng: np.random.Generator | None = None,
) -> CubeRelease:
    """Release one day's cube (NOISE DRAWING; charges the budget first).

    Args:
        leaf_cube: true counts, shape (T, leaves) in ``tree.leaves`` order (slot-major,
            as a stream of ticks arrives), under the contribution bound.
        tree: the location tree (:func:`mechanisms.hierarchical.tree_from_paths`).
        config: the release.
        day: the day released (ledger).
        budget: the device-day budget charged ``config.spent_rho`` in share
            ``histogram`` before any noise, with the release id (day, share,
            :func:`ledger_label`, tick = the day's first slot index): a second call for the same
            day charges nothing. None: the caller charged it already.
        rng: e.g. ``keyed_rng(secret, "daily-cube", day, "all")`` (replay-safe); None →
            the project's CSPRNG-seeded generator.

    Raises:
        BudgetExhaustedError: the share or the day cannot take ρ (nothing drawn).
        InvalidParameterError: malformed counts.
    """
    arr = np.asarray(leaf_cube)
    n_leaves = int(tree.leaves.size)
    t = config.slots_per_day
    x = as_counts(arr.reshape(-1), "leaf_cube").reshape(arr.shape)
    if x.shape != (t, n_leaves):
        raise InvalidParameterError(f"leaf_cube must have shape {(t, n_leaves)}, not {x.shape}")
    h = tree.height
    rho = config.spent_rho(h)
    record = None
    if budget is not None:
        l1, l2 = sensitivity(config.max_slots)
        record = budget.charge(
            day=int(day), share="histogram", mechanism=ledger_label(config), rho=rho,
            tick=int(day) * t, n_locations=int(x.size), sensitivity=l2,
            note=(f"{config.algorithm}: B={config.max_slots} slots per device-day, "
                  f"L1 {l1:g}, L2 {l2:.4g}; σ {np.round(config.sigmas(h), 2).tolist()}"))
    rng = resolve_rng(rng)
    sig_node = _node_sigma(tree, config)
    if config.algorithm == "tree":
        noisy = measure_tree(x, tree, config, rng=rng)
        var = sig_node * sig_node
        slots = consistency.least_squares(noisy.astype(float), var, tree.plan)
    else:
        if config.algorithm == "identity":
            leaf = (x + discrete_gaussian(config.sigma_identity, size=x.shape, rng=rng)
                    ).astype(float)
        else:
            sh, ss = config.sigmas(2)
            k = config.slots_per_hour
            ys = x + discrete_gaussian(ss, size=x.shape, rng=rng)
            hours = x.reshape(t // k, k, n_leaves).sum(axis=1)
            yh = hours + discrete_gaussian(sh, size=hours.shape, rng=rng)
            leaf = _hb_time(ys.astype(float), yh.astype(float), ss, sh, k)
        slots = np.zeros((t, tree.n_nodes))
        slots[:, tree.leaves] = leaf
        for d in range(h - 1, 0, -1):  # internal nodes: sums of the released leaves
            ch = tree.nodes_at_depth(d)
            np.add.at(slots.T, tree.parent[ch], slots.T[ch])
        var = np.where(np.isinf(sig_node), np.inf, sig_node * sig_node)
    sd = _sum_sd(tree, sig_node)
    hourly = hourly_profile(slots, np.where(np.isinf(var), sd * sd, var), tree.plan,
                            config.slots_per_hour)
    post = np.sqrt(posterior_variance(tree, np.where(np.isinf(sig_node), np.inf,
                                                     sig_node * sig_node)))
    return CubeRelease(algorithm=config.algorithm, cube=slots[:, tree.leaves].T.copy(),
                       hourly=hourly, hourly_sd=post / np.sqrt(config.slots_per_hour),
                       sigmas=config.sigmas(h), record=record)


def posterior_variance(tree: Tree, var: np.ndarray) -> np.ndarray:
    """Variance of each node's least-squares value of one slot (data-independent).

    ``var``: each node's measurement variance (∞: not measured; leaves must be
    measured). Bottom-up, a node combines its own measurement with the sum of its
    children's (inverse-variance weights: v_z); top-down, a child's value is its
    bottom-up estimate moved by v_z,c / v_s of its parent's correction (Hay et al. 2010
    §4, the estimator of :func:`mechanisms.consistency.least_squares`), so
    Var = v_z,c − v_z,c²/v_s + (v_z,c/v_s)²·Var(parent) (the Gaussian conditional given
    the children's sum, plus the parent's uncertainty). Non-negativity is not included
    (it narrows the error further on empty rooms).
    """
    v = np.asarray(var, dtype=float)
    vz = np.where(np.isinf(v), 0.0, v)
    vs = np.zeros(tree.n_nodes)
    for d in range(tree.height - 1, 0, -1):  # bottom-up
        ch = tree.nodes_at_depth(d)
        np.add.at(vs, tree.parent[ch], vz[ch])
        par = np.unique(tree.parent[ch])
        own = v[par]
        vz[par] = np.where(np.isinf(own), vs[par], 1 / (1 / own + 1 / vs[par]))
    post = vz.copy()
    for d in range(1, tree.height):  # top-down
        ch = tree.nodes_at_depth(d)
        p_ = tree.parent[ch]
        k = vz[ch] / vs[p_]
        post[ch] = vz[ch] - k * vz[ch] + k * k * post[p_]
    return post


def measure_tree(leaf_cube: np.ndarray, tree: Tree, config: CubeConfig, *,
                 rng: np.random.Generator | None = None) -> np.ndarray:
    """The ``tree``'s raw measurements: every node and slot + N_ℤ(0, σ_d²) (NOISE DRAWING).

    No charging here: :func:`release_cube` charges first; call this only after the
    day's ρ (``config.spent_rho``) is charged. Returns int64 (T, nodes).
    """
    x = np.asarray(leaf_cube, dtype=np.int64)
    nodes = np.stack([tree.aggregate(row) for row in x])  # (T, nodes)
    rng = resolve_rng(rng)
    for d, sd in enumerate(config.sigmas(tree.height)):  # one scalar σ per depth: fast
        at = tree.nodes_at_depth(d)
        nodes[:, at] += discrete_gaussian(float(sd), size=(x.shape[0], at.size), rng=rng)
    return nodes


def _sum_sd(tree: Tree, sig_node: np.ndarray) -> np.ndarray:
    """σ per node of one slot: measured nodes their own, others the sum of their leaves'."""
    var = np.where(np.isinf(sig_node), 0.0, sig_node * sig_node)
    leaf_var = np.zeros(tree.n_nodes)
    leaf_var[tree.leaves] = var[tree.leaves]
    for d in range(tree.height - 1, 0, -1):
        ch = tree.nodes_at_depth(d)
        np.add.at(leaf_var, tree.parent[ch], leaf_var[ch])
    return np.sqrt(np.where(np.isinf(sig_node), leaf_var, var))
