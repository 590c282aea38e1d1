"""Device-day private occupancy: a live heatmap under one (ε_day, δ) per device per day.

Unit of privacy (:data:`mechanisms.accounting.DEVICE_DAY_UNIT`): neighbouring inputs
differ in **one device's whole day** — every tick of one calendar day (UTC days of
``ticks_per_day`` ticks), at whatever locations it was counted.

Contribution bound (exactly what the privacy argument uses)
    (a) Per tick, a device is counted in at most one location (the presence model of
        the occupancy oracle, ``streams/oracle.py``: a device's latest valid observation
        places it in one location), so at one tick it adds at most 1 to one room, 1 to that room's
        floor and 1 to its building.
    (b) Per day, a device is counted in at most B = ``max_ticks_per_device`` ticks.
        The default B = ``ticks_per_day`` (288 five-minute ticks) is implied by (a)
        and needs no per-device state. A smaller B (e.g. 120: ten hours) is enforced
        before counting by :class:`ContributionBounder` (a device's ticks beyond its
        first B of the day are not counted) and buys less noise for some bias.

Release (every tick; the live view updates every 5 minutes)
    For every node v of the tree (rooms, floors, buildings: depth d) the tick's count
    c_v is released as y_v = c_v + N_ℤ(0, σ_d²) (:func:`mechanisms.gaussian.
    discrete_gaussian`, keyed and replay-safe with ``keyed_rng(secret, "device-day",
    tick, "all")``). Everything else is post-processing (:mod:`mechanisms.consistency`):
    the tick's values made consistent (building = Σ floors = Σ rooms, weighted least
    squares, Hay et al. VLDB 2010 §4) and non-negative (``live``); at the end of each
    15-minute window and each hour the window's noisy sums are averaged, made
    consistent and non-negative (``quarter``, ``hour``: mean occupancy over the window).

Sensitivity and privacy argument
    Fix a depth d. Let a_{v,t} ∈ {0, 1} be one device's contribution to node v at tick
    t; by (a) Σ_v a_{v,t} ≤ 1 over the nodes of depth d, and by (b) the device has at
    most B ticks with a contribution. The whole day's depth-d release is one Gaussian
    mechanism on the vector (c_{v,t})_{v,t} whose L2 sensitivity is
    Δ₂,d = √(Σ_{v,t} a_{v,t}²) ≤ √B. With independent N_ℤ(0, σ_d²) noise on every
    coordinate it is ρ_d-zCDP with ρ_d = B/(2σ_d²) (Canonne, Kamath & Steinke 2020
    Thm 4, coordinatewise); the h depths compose to ρ = Σ_d B/(2σ_d²) (Bun & Steinke
    2016 Lemma 2.3). The σ_d are set from the heatmap's share of the day's ρ and the
    ``level_weights``: σ_d² = B/(2 w_d ρ_heatmap). Because one device may reach its
    whole B ticks by any time of the day, the **whole day's ρ is charged at the first
    tick of the day**, before any of its noise is drawn (charging pro rata per tick would
    understate the loss of a device seen early). The 15-minute and hourly views, the
    consistency step and non-negativity read only released values: free.

Budget split (of ε_day = 4, δ = 10⁻⁶ → ρ_day ≈ 0.311 by dp-accounting's conversion)
    ``heatmap`` 0.85 (this mechanism), ``alerts`` 0.10 (MIDE fire-code decisions per
    room per hour: a statistic reading one tick per hour has L2² ≤ 24 per device-day,
    hence σ_alert = √(24/(2·0.1·ρ_day))), ``histogram`` 0.05 (the daily room × slot
    cube the worker releases after each midnight, L2 sensitivity √B:
    :mod:`mechanisms.histograms.cube`; ``histogram_sigma`` is the σ of a histogram in
    which each device-day falls in one bin instead). The shares are checked by
    :class:`mechanisms.accounting.DayBudget`.

Level weights (0.2, 0.7, 0.1 of the heatmap's ρ to building, floors, rooms) were
tuned on simulated dbh weeks with seeds 1 and 2 (the benchmark reports seeds 101–103):
rooms ≥ 100 seats have the most slack against their target (≈ 3 % of capacity vs 8 %),
the smallest floor the least, so the floors get most of the budget; the building
gains from the floors through the least squares.

Hourly accuracy (why the 5-minute release costs nothing): an hour's mean is the sum of
12 tick values over 12, with noise variance 12σ_d²/144 = σ_d²/12 = B/(24 w_d ρ) — exactly
what releasing hourly means directly would give under the same bound. Gaussian noise on
a finer resolution averages back without loss, so the live view is free of charge
relative to the hourly heatmap.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from mechanisms import consistency
from mechanisms.accounting import DayBudget, LedgerRecord
from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.gaussian import discrete_gaussian
from mechanisms.laplace import as_counts
from mechanisms.noise import resolve_rng

__all__ = [
    "AlertDecision",
    "ContributionBounder",
    "DeviceDayConfig",
    "DeviceDayRelease",
    "DeviceDayState",
    "alert_alpha",
    "initialize",
    "state_size",
    "threshold_alerts",
    "update",
]

MECHANISM = "device-day-heatmap"

_MAGIC = b"DDAY1"
#: magic, n_nodes, day (−1: none), last_tick, quarter_n, hour_n
_HEADER = struct.Struct("<5sqqqqq")


@dataclass(frozen=True)
class DeviceDayConfig:
    """Parameters of the device-day heatmap (defaults: the design of issue 15).

    Attributes:
        epsilon_day: ε per device-day for every default release together.
        delta: δ per device-day.
        heatmap_share: fraction of the day's ρ for this mechanism.
        alert_share: fraction reserved for MIDE fire-code alerts per room per hour.
        histogram_share: fraction reserved for the daily histogram.
        level_weights: fraction of the heatmap's ρ per depth (root first: building,
            floor, room); one entry per tree level.
        ticks_per_day: ticks in a day (288 five-minute ticks).
        max_ticks_per_device: B, ticks a device may be counted in per day (≤ ticks_per_day).
        quarter_ticks: ticks per live-view window (3: 15 minutes).
        hour_ticks: ticks per hour (12).
    """

    epsilon_day: float = 4.0
    delta: float = 1e-6
    heatmap_share: float = 0.85
    alert_share: float = 0.10
    histogram_share: float = 0.05
    level_weights: tuple[float, ...] = (0.2, 0.7, 0.1)
    ticks_per_day: int = 288
    max_ticks_per_device: int = 288
    quarter_ticks: int = 3
    hour_ticks: int = 12
    _rho_day: float = field(default=0.0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_positive("epsilon_day", self.epsilon_day)
        if not 0 < self.delta < 1:
            raise InvalidParameterError(f"delta must be in (0, 1), not {self.delta!r}")
        shares = (self.heatmap_share, self.alert_share, self.histogram_share)
        if any(not (0 < s <= 1) for s in shares) or sum(shares) > 1 + 1e-9:
            raise InvalidParameterError(
                f"heatmap/alert/histogram shares must be in (0, 1] and add up to ≤ 1, "
                f"not {shares!r}"
            )
        w = tuple(float(x) for x in self.level_weights)
        if not w or any(not (x > 0) for x in w) or sum(w) > 1 + 1e-9:
            raise InvalidParameterError(
                f"level_weights must be positive fractions adding up to ≤ 1, not {w!r}"
            )
        object.__setattr__(self, "level_weights", w)
        for name in ("ticks_per_day", "quarter_ticks", "hour_ticks", "max_ticks_per_device"):
            v = getattr(self, name)
            if not isinstance(v, int | np.integer) or v < 1:
                raise InvalidParameterError(f"{name} must be a positive integer, not {v!r}")
        if self.max_ticks_per_device > self.ticks_per_day:
            raise InvalidParameterError(
                f"max_ticks_per_device must be ≤ ticks_per_day={self.ticks_per_day}, not "
                f"{self.max_ticks_per_device!r}"
            )
        if self.ticks_per_day % self.hour_ticks or self.hour_ticks % self.quarter_ticks:
            raise InvalidParameterError(
                "hour_ticks must divide ticks_per_day and quarter_ticks divide hour_ticks, "
                f"not {self.hour_ticks!r}, {self.quarter_ticks!r}"
            )

    def budget(self) -> DayBudget:
        """A fresh :class:`DayBudget` with this design's shares."""
        return DayBudget(
            self.epsilon_day,
            self.delta,
            shares={
                "heatmap": self.heatmap_share,
                "alerts": self.alert_share,
                "histogram": self.histogram_share,
            },
        )

    @property
    def rho_day(self) -> float:
        """ρ of the whole day (dp-accounting conversion of ε_day at δ)."""
        if not self._rho_day:
            object.__setattr__(self, "_rho_day", self.budget().rho_day)
        return self._rho_day

    @property
    def rho_heatmap(self) -> float:
        """ρ this mechanism charges per day: the heatmap share of ρ_day."""
        return self.heatmap_share * self.rho_day

    def sigmas(self, height: int) -> np.ndarray:
        """σ_d per depth: σ_d² = B/(2 w_d ρ_heatmap) (see the module's argument)."""
        if len(self.level_weights) != height:
            raise InvalidParameterError(
                f"level_weights must have {height} entries (one per tree level), not "
                f"{len(self.level_weights)}"
            )
        w = np.asarray(self.level_weights)
        return np.sqrt(self.max_ticks_per_device / (2 * w * self.rho_heatmap))

    def spent_rho(self, height: int) -> float:
        """ρ of one day of releases: Σ_d B/(2σ_d²) (= w-weighted ρ_heatmap)."""
        s = self.sigmas(height)
        return float(np.sum(self.max_ticks_per_device / (2 * s * s)))

    @property
    def alert_sigma(self) -> float:
        """σ of a per-room-per-hour alert statistic reading one tick per hour (L2² ≤ 24)."""
        hours = self.ticks_per_day // self.hour_ticks
        return float(np.sqrt(hours / (2 * self.alert_share * self.rho_day)))

    @property
    def histogram_sigma(self) -> float:
        """σ per bin of a daily histogram with one bin per device-day (L2 = 1)."""
        return float(np.sqrt(1 / (2 * self.histogram_share * self.rho_day)))


@dataclass(frozen=True)
class DeviceDayState:
    """State between ticks (frozen; no true counts are kept, only released values).

    Attributes:
        n_nodes: number of tree nodes.
        day: day of the last tick (None before the first), charged to the budget.
        last_tick: last tick processed (−1 before the first).
        quarter_sum: Σ of the noisy node values of the current 15-minute window.
        quarter_n: ticks in it.
        hour_sum: Σ of the noisy node values of the current hour.
        hour_n: ticks in it.
    """

    n_nodes: int
    day: int | None = None
    last_tick: int = -1
    quarter_sum: np.ndarray = field(default_factory=lambda: np.zeros(0))
    quarter_n: int = 0
    hour_sum: np.ndarray = field(default_factory=lambda: np.zeros(0))
    hour_n: int = 0

    def to_bytes(self) -> bytes:
        """Little-endian header + the two float64 window sums (for a state table)."""
        head = _HEADER.pack(_MAGIC, self.n_nodes, -1 if self.day is None else self.day,
                            self.last_tick, self.quarter_n, self.hour_n)
        return head + np.asarray(self.quarter_sum, "<f8").tobytes() + np.asarray(
            self.hour_sum, "<f8").tobytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> DeviceDayState:
        """Inverse of :meth:`to_bytes`.

        Raises:
            InvalidParameterError: not a device-day state, or truncated.
        """
        if len(data) < _HEADER.size or data[:5] != _MAGIC:
            raise InvalidParameterError(
                f"data must be a device-day state starting with {_MAGIC!r}, not {data[:5]!r}"
            )
        _, n, day, last, qn, hn = _HEADER.unpack_from(data)
        if len(data) != _HEADER.size + 16 * n:
            raise InvalidParameterError(
                f"data must have {_HEADER.size + 16 * n} bytes, not {len(data)}"
            )
        arr = np.frombuffer(data, "<f8", offset=_HEADER.size).astype(float)
        return cls(n_nodes=n, day=None if day < 0 else day, last_tick=last,
                   quarter_sum=arr[:n].copy(), quarter_n=qn, hour_sum=arr[n:].copy(), hour_n=hn)


@dataclass(frozen=True)
class DeviceDayRelease:
    """One tick's release (all values: mean occupancy per node, consistent, ≥ 0).

    Attributes:
        tick: the tick.
        live: this tick's consistent non-negative values per node.
        quarter: mean over the 15-minute window ending at this tick, or None.
        hour: mean over the hour ending at this tick, or None.
        noisy: the raw noisy integers (the only noisy draw; everything else derives).
        record: the ledger record when this tick charged the day, else None.
    """

    tick: int
    live: np.ndarray
    quarter: np.ndarray | None
    hour: np.ndarray | None
    noisy: np.ndarray
    record: LedgerRecord | None = None


def state_size(n_nodes: int) -> int:
    """Bytes of :meth:`DeviceDayState.to_bytes` for ``n_nodes`` nodes."""
    return _HEADER.size + 16 * int(n_nodes)


def initialize(plan: consistency.TreePlan, config: DeviceDayConfig) -> DeviceDayState:
    """Empty state for the nodes of ``plan`` (checks the level weights fit the tree)."""
    config.sigmas(len(plan.levels) + 1)
    n = plan.n_nodes
    return DeviceDayState(n_nodes=n, quarter_sum=np.zeros(n), hour_sum=np.zeros(n))


def _window_mean(
    total: np.ndarray, n: int, var: np.ndarray, plan: consistency.TreePlan
) -> np.ndarray:
    """Consistent non-negative mean of n summed ticks (noise variance n·σ² → /n²)."""
    return consistency.consistent_nonnegative(total / n, var / n, plan)


def update(
    state: DeviceDayState,
    node_counts: np.ndarray | list[int],
    plan: consistency.TreePlan,
    config: DeviceDayConfig,
    *,
    tick: int,
    budget: DayBudget | None,
    rng: np.random.Generator | None = None,
) -> tuple[DeviceDayState, DeviceDayRelease]:
    """Release one tick for every node (charges the whole day at its first tick).

    Args:
        state: state before the tick.
        node_counts: true counts of every node (leaves' counts under the contribution
            bound, internal nodes their sums, e.g. ``Tree.aggregate``), tree order.
        plan: the tree (:class:`mechanisms.consistency.TreePlan`).
        config: the design.
        tick: absolute tick index (time // tick length), increasing; its day is
            ``tick // ticks_per_day``.
        budget: the device-day budget; the day's ρ is charged here, before noise.
            None: the caller has already charged this day's ρ (``spent_rho``) to its
            own :class:`DayBudget` before calling (the release stage does, once per
            day, replay-safe by release id); nothing is charged here then.
        rng: generator for this tick, e.g. ``keyed_rng(secret, "device-day", tick,
            "all")``; None → the project's CSPRNG-seeded generator.

    Returns:
        ``(new_state, release)``.

    Raises:
        BudgetExhaustedError: the day's budget cannot take the heatmap's ρ (nothing is
            released, nothing is drawn).
        InvalidParameterError: malformed counts or a non-increasing tick.
    """
    c = as_counts(np.asarray(node_counts), "node_counts")
    if c.size != state.n_nodes:
        raise InvalidParameterError(f"node_counts must have {state.n_nodes} entries, not {c.size}")
    t = int(tick)
    if t <= state.last_tick:
        raise InvalidParameterError(
            f"tick must be > the last processed tick {state.last_tick}, not {tick!r} "
            "(re-emit the stored release on replay instead of recomputing it)"
        )
    height = len(plan.levels) + 1
    sig = config.sigmas(height)[plan.depth]
    day, tod = divmod(t, config.ticks_per_day)
    record = None
    if state.day != day and budget is not None:
        record = budget.charge(
            day=day,
            share="heatmap",
            mechanism=MECHANISM,
            rho=config.spent_rho(height),
            tick=t,
            n_locations=state.n_nodes,
            sensitivity=float(np.sqrt(config.max_ticks_per_device)),
            note=(
                f"whole day charged at its first tick: B={config.max_ticks_per_device} "
                f"ticks per device, σ per depth {np.round(config.sigmas(height), 3).tolist()}"
            ),
        )
    rng = resolve_rng(rng)
    noisy = c + discrete_gaussian(sig, rng=rng)
    var = sig * sig
    live = consistency.consistent_nonnegative(noisy.astype(float), var, plan)
    new_day = state.day != day
    q_sum = (np.zeros(state.n_nodes) if new_day else state.quarter_sum) + noisy
    h_sum = (np.zeros(state.n_nodes) if new_day else state.hour_sum) + noisy
    q_n = (0 if new_day else state.quarter_n) + 1
    h_n = (0 if new_day else state.hour_n) + 1
    quarter = hour = None
    if tod % config.quarter_ticks == config.quarter_ticks - 1:
        quarter = _window_mean(q_sum, q_n, var, plan)
        q_sum, q_n = np.zeros(state.n_nodes), 0
    if tod % config.hour_ticks == config.hour_ticks - 1:
        hour = _window_mean(h_sum, h_n, var, plan)
        h_sum, h_n = np.zeros(state.n_nodes), 0
    new_state = DeviceDayState(
        n_nodes=state.n_nodes, day=day, last_tick=t,
        quarter_sum=q_sum, quarter_n=q_n, hour_sum=h_sum, hour_n=h_n,
    )
    return new_state, DeviceDayRelease(
        tick=t, live=live, quarter=quarter, hour=hour, noisy=noisy, record=record
    )


class ContributionBounder:
    """Enforces bound (b): a device is counted in at most B ticks per day.

    Pure bookkeeping before counting (no noise): ``counts(devices, locations, tick)``
    takes the tick's present devices (any hashable ids, e.g. keyed pseudonyms) with
    their one location index each (bound (a)) and returns the leaf counts in which
    only devices with fewer than B counted ticks today are counted. State: a counter
    per device seen today, dropped at the day boundary.

    Args:
        n_locations: number of leaves.
        max_ticks_per_device: B.
        ticks_per_day: ticks in a day.
    """

    def __init__(self, n_locations: int, max_ticks_per_device: int, ticks_per_day: int = 288):
        if int(n_locations) < 1 or int(max_ticks_per_device) < 1 or int(ticks_per_day) < 1:
            raise InvalidParameterError(
                "n_locations, max_ticks_per_device and ticks_per_day must be ≥ 1, not "
                f"{n_locations!r}, {max_ticks_per_device!r}, {ticks_per_day!r}"
            )
        self.n_locations = int(n_locations)
        self.max_ticks = int(max_ticks_per_device)
        self.ticks_per_day = int(ticks_per_day)
        self._day: int | None = None
        self._used: dict[object, int] = {}

    def counts(self, devices: list[object], locations: np.ndarray, tick: int) -> np.ndarray:
        """Bounded leaf counts of one tick (each device at most once: its first location)."""
        day = int(tick) // self.ticks_per_day
        if day != self._day:
            self._day, self._used = day, {}
        loc = np.asarray(locations, dtype=np.int64)
        if loc.shape != (len(devices),):
            raise InvalidParameterError(
                f"locations must have one entry per device ({len(devices)}), not {loc.shape!r}"
            )
        out = np.zeros(self.n_locations, dtype=np.int64)
        seen: set[object] = set()
        for dev, li in zip(devices, loc.tolist(), strict=True):
            if dev in seen:
                continue  # bound (a): one location per tick
            seen.add(dev)
            used = self._used.get(dev, 0)
            if used < self.max_ticks:
                self._used[dev] = used + 1
                out[li] += 1
        return out


@dataclass(frozen=True)
class AlertDecision:
    """Fire-code decisions of one hour (public).

    Attributes:
        positive: per location, whether the alert fires.
        noisy: the noisy counts the decisions read.
        sigma: σ of the noise.
        alpha: uncertainty width (people): an alert may be raised for a room up to
            ``alpha`` below its threshold with probability above β (beyond it: ≤ β).
        shift: how far below the threshold the noisy count must reach (z_{1−β}·σ).
    """

    positive: np.ndarray
    noisy: np.ndarray
    sigma: float
    alpha: float
    shift: float


def _z(beta: float) -> float:
    from scipy.stats import norm

    if not 0 < beta < 0.5:
        raise InvalidParameterError(f"beta must be in (0, 0.5), not {beta!r}")
    return float(norm.isf(beta))


def alert_alpha(sigma: float, beta: float) -> float:
    """α = 2·z_{1−β}·σ: the gap below the threshold beyond which P[false alarm] ≤ β.

    With a decision ``c + Z ≥ T − z_{1−β}σ`` (Z ~ N(0, σ²), see :func:`threshold_alerts`),
    a room at c ≤ T − α fires only when Z ≥ z_{1−β}σ, probability ≤ β; between T − α and
    T the alert may be raised (at T − α/2 it fires half the time). The discrete Gaussian
    has tails no heavier than the continuous one at integer points (CKS 2020 Prop. 25,
    sub-Gaussian with the same σ), so the bound is kept.
    """
    return 2.0 * _z(beta) * check_positive("sigma", sigma)


def monitorable(thresholds: np.ndarray | list[float], sigma: float, beta: float) -> np.ndarray:
    """Which locations the hourly test can watch usefully: threshold T ≥ α (public).

    With the decision of :func:`threshold_alerts` an EMPTY location fires with
    probability P[Z ≥ T − z_{1−β}σ], which is ≤ β only when T ≥ α = 2·z_{1−β}·σ
    (:func:`alert_alpha`). Below that the test is mostly noise: a 22-seat room under
    the default day budget (σ ≈ 20, α ≈ 65) fires in ~3 of 4 empty hours, so a
    facility manager would get an incident almost every hour. Such rooms are reported
    as not monitored at this budget instead of alerting (the released noisy counts are
    unchanged; this is post-processing of public T, σ, β). For the watched rooms
    both rates hold: FNR ≤ β at c ≥ T, false alarms ≤ β at c ≤ T − α (so also empty).

    Args:
        thresholds: public thresholds (capacity × factor) per location.
        sigma: σ of the alert noise.
        beta: false-negative-rate bound, in (0, 0.5).
    """
    return np.asarray(thresholds, dtype=float) >= alert_alpha(sigma, beta)


def threshold_alerts(
    counts: np.ndarray | list[int],
    thresholds: np.ndarray | list[float],
    sigma: float,
    beta: float,
    *,
    rng: np.random.Generator | None = None,
) -> AlertDecision:
    """Gaussian-noise fire-code test per location with FNR ≤ β (NOISE DRAWING).

    The one-sided test of docs/device-day.md: release y = c + N_ℤ(0, σ²) and fire when
    y ≥ T − z_{1−β}σ. A room at or above its threshold (c ≥ T) is missed only when
    Z < −z_{1−β}σ, probability ≤ β (the discrete Gaussian is sub-Gaussian with
    parameter σ: P[Z ≤ −t] ≤ e^{−t²/2σ²}; the exact tail at z_{1−β}σ is checked by
    ``tests/mechanisms/test_device_day_alerts.py``). Each location's reading is one
    discrete Gaussian draw: with one reading per room per hour and one location per
    device per tick, a device-day has L2² ≤ 24 over the day's readings, so the day costs
    ρ = 24/(2σ²) (``DeviceDayConfig.alert_sigma`` is set from the alert share); the
    caller charges that ρ before the first draw of the day. The decisions are
    post-processing of y.

    Args:
        counts: true counts per location at the hour's reading.
        thresholds: public thresholds (capacity × factor).
        sigma: σ of the noise.
        beta: false-negative-rate bound, in (0, 0.5).
        rng: generator (keyed for replay safety); None → the CSPRNG-seeded generator.
    """
    c = as_counts(np.asarray(counts), "counts")
    t = np.asarray(thresholds, dtype=float)
    if t.shape != c.shape:
        raise InvalidParameterError(f"thresholds must have shape {c.shape}, not {t.shape}")
    z = _z(beta)
    s = check_positive("sigma", sigma)
    y = c + discrete_gaussian(s, size=c.shape, rng=resolve_rng(rng))
    shift = z * s
    return AlertDecision(positive=y >= t - shift, noisy=y, sigma=s, alpha=2 * shift,
                         shift=shift)
