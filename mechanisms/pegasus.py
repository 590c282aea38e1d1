"""PeGaSus: Perturber, deviation Grouper, Smoother — a state machine over locations.

Chen, Machanavajjhala, Hay & Miklau, "PeGaSus: Data-Adaptive Differentially Private
Stream Processing", CCS 2017 (§4: Perturber, Grouper (Algorithm 2, deviation
function), Smoother (§4.3)); used for TIPPERS occupancy in thesis §3.1.2 and §4.2.2.
Specification followed: docs/MECHANISMS.md "PeGaSus"; measured departures in docs/pegasus.md.

Per location and tick t, with ε = ε_p + ε_g (ε_p = ``perturb_share``·ε, default 0.8ε),
base threshold θ (default :data:`DEFAULT_THETA_TIMES_EPS_G`/ε_g = 20/ε_g):

Parameters and their source (issue 16). docs/MECHANISMS.md's defaults (θ = 5/ε_g,
ε_p/ε_g = 0.8/0.2) were recorded there as a guess. The paper's parameter section could
not be retrieved here (the stored copies of the paper give its abstract only), so no
value below is claimed to be the paper's; they are tuned on simulated dbh weeks (seeds
101–102, ε ∈ {0.1, 0.5, 1, 2}; bench/bench_pegasus.py reports on seeds 1–3). Over
θ ∈ {5, 20, 100}/ε_g × ε_p/ε ∈ {0.5, 0.8, 0.9} × smoother × cap {48, 288} (seed 101):
θ = 20/ε_g with ε_p = 0.8ε gives the best per-tick MAE (median smoother: 0.43, 0.58, 0.70,
1.14 × Laplace at ε = 0.1, 0.5, 1, 2; θ = 5/ε_g: 0.79, 0.86, 0.93, 1.16) and colour
utility (1.48, 1.80, 1.59, 1.18 × vs 1.25, 1.22, 1.14, 1.02), but NO setting of the
paper's design reaches Laplace on 1-hour window sums (best 0.96×, mostly 1.1–2.6×) or
on event-detection AUC (≤ 0.99×): the Grouper's test noise Lap(8/ε_g) = 40/ε at the
0.2 share is 32× the Perturber's 1.25/ε, so on room counts it splits at random, and the
running mean correlates the errors of consecutive ticks inside a window. The variant
that moves the Grouper to post-processing is :mod:`mechanisms.pegasus_post`
(``pegasus-post``).

1. **Perturber**: c̃_t = c_t + Z, Z discrete Laplace of scale 1/ε_p (exact integer
   sampler, :func:`mechanisms.noise.discrete_laplace`; the only value derived from
   the counts that leaves the system).
2. **Grouper** (sparse-vector test on TRUE counts): dev(X) = Σ_{x∈X}|x − mean(X)|,
   sensitivity 2. No group yet or last group closed → new open group {t} with a fresh
   threshold θ̃ = θ + Lap(4/ε_g) (always from the base θ). Open group G →
   if dev(c[G ∪ {t}]) + Lap(8/ε_g) < θ̃: t joins G, else G closes and t forms a new
   closed singleton {t}. Each count is tested under exactly one threshold draw.
3. **Smoother** (post-processing of c̃ over the group G_t containing t, times ≤ t
   only): ``"average"`` mean, ``"median"`` median, ``"js"`` shrinkage
   ĉ_t = m̄ + (c̃_t − m̄)/|G_t| with m̄ the group mean. A singleton gives c̃_t.
   A value once released is never revised.

Privacy argument (event level: one device, one tick; a device is counted in at most
one location per tick, so one count changes by 1):
    * Perturber: each c̃_t is ε_p-DP in its own count; an event touches one count, so
      the perturbed stream is ε_p-DP (parallel over ticks and locations).
    * Grouper: an event at tick s changes c_s by 1, hence dev of any set containing s
      by at most 2. c_s takes part only in tests of the group that contains s (its
      own test and the later tests of that open group, all under one threshold draw
      θ̃; a closed group is never tested again). That sequence is one sparse-vector
      run stopped at its first "above" answer: the threshold noise Lap(4/ε_g) costs
      ε_g/2 and the single above answer with Lap(8/ε_g) costs ε_g/2 (Lyu, Su & Li
      2017, Alg. 1 with Δ = 2) → ε_g.
    * The Smoother reads only c̃ and the group boundaries (outputs of the two parts).
    Total ε_p + ε_g = ε per event. With ``grouping=False`` only ε_p is spent and the
    release is exactly the Laplace mechanism at ε_p (:attr:`PegasusConfig.spent_epsilon`).

Grouper noise is continuous Laplace (``rng.laplace``): it never leaves the system;
only one comparison bit per test does, and a floating-point sample can shift the
probability of a bit only by rounding-level amounts (no output set that reveals the
input, unlike a released float — Mironov 2012). The released values are
post-processing of the exact integer perturber output.

Bounded state (for a stream table): the Grouper needs every true count of the open
group (dev is not a function of running sums) and the median smoother every noisy
count. A group is therefore capped at ``max_group_len`` ticks (default 48 = 4 h of
5-minute ticks): when it reaches the cap it is closed and the next tick starts a new
group with a fresh threshold. Closing is a function of the group length only
(previous outputs), so it costs no budget and each count is still tested under at
most one threshold. Average and JS smoothers keep only a running sum of c̃.

Accuracy note (measured, bench/bench_mechanisms.py): with θ = 5/ε_g the test on a
constant stream passes with probability P[Lap(8) < 5 + Lap(4)] ≈ 0.69 whatever ε
(θ and both noises scale with 1/ε_g), so groups average ≈ 6 ticks and, since the
perturber alone (ε_p = 0.8ε) is 1.33× noisier than Laplace at ε, the gain on
piecewise-constant streams at equal total ε is moderate: MAE ratio vs Laplace ≈ 0.93
(average), ≈ 0.82 (median), ≈ 0.96 (js). The default θ = 20/ε_g lengthens groups
(≈ 0.60 / 0.40 on the same streams).

Replay safety: all noise of one tick comes from the ``rng`` argument in a fixed order
(perturber for every location, then, with grouping, threshold noise for every location,
then test noise for every location), so ``keyed_rng(secret, "pegasus", tick, "all")``
reproduces a tick's release exactly.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np

from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.laplace import as_counts
from mechanisms.noise import discrete_laplace, resolve_rng

__all__ = [
    "DEFAULT_THETA_TIMES_EPS_G",
    "SMOOTHERS",
    "PegasusConfig",
    "PegasusState",
    "initialize",
    "smooth",
    "step",
    "update",
]

Smoother = Literal["average", "median", "js"]
SMOOTHERS: tuple[str, ...] = ("average", "median", "js")
#: θ·ε_g of the default threshold (tuned, see the module docstring; was 5, a guess).
DEFAULT_THETA_TIMES_EPS_G = 20.0

_MAGIC = b"PGS2"
_SENTINEL = np.iinfo(np.int32).max  # fills unused columns of the sorted noisy history
_HEADER = struct.Struct("<4sIHBq")  # magic, n_locations, cap, flags, last_tick


@dataclass(frozen=True)
class PegasusConfig:
    """PeGaSus parameters.

    Attributes:
        epsilon: total event-level ε per tick (ε_p + ε_g).
        perturb_share: ε_p / ε (default 0.8, as in the paper's experiments).
        theta: base grouper threshold θ; None → 20/ε_g (:data:`DEFAULT_THETA_TIMES_EPS_G`).
        smoother: ``"average"``, ``"median"`` or ``"js"``.
        grouping: False turns the Grouper off: every tick is a singleton, the release is
            Laplace at ε_p, and only ε_p is spent.
        max_group_len: cap on a group's length in ticks (bounds the state; see module).
    """

    epsilon: float
    perturb_share: float = 0.8
    theta: float | None = None
    smoother: Smoother = "average"
    grouping: bool = True
    max_group_len: int = 48

    def __post_init__(self) -> None:
        check_positive("epsilon", self.epsilon)
        share = float(self.perturb_share)
        upper_ok = share < 1 or (share == 1 and not self.grouping)
        if not (share > 0 and upper_ok):
            raise InvalidParameterError(
                "perturb_share must be in (0, 1) (or exactly 1 with grouping=False), "
                f"not {self.perturb_share!r}"
            )
        if self.theta is not None:
            check_positive("theta", self.theta)
        if self.smoother not in SMOOTHERS:
            raise InvalidParameterError(
                f"smoother must be one of {SMOOTHERS}, not {self.smoother!r}"
            )
        if not isinstance(self.max_group_len, int | np.integer) or not (
            1 <= int(self.max_group_len) <= 65535
        ):
            raise InvalidParameterError(
                f"max_group_len must be an integer in [1, 65535], not {self.max_group_len!r}"
            )

    @property
    def epsilon_p(self) -> float:
        """Perturber budget ε_p."""
        return self.perturb_share * self.epsilon

    @property
    def epsilon_g(self) -> float:
        """Grouper budget ε_g (0 when grouping is off)."""
        return (1 - self.perturb_share) * self.epsilon if self.grouping else 0.0

    @property
    def spent_epsilon(self) -> float:
        """ε actually spent per event: ε_p + ε_g (ε_p alone with grouping off)."""
        return self.epsilon_p + self.epsilon_g

    @property
    def theta_value(self) -> float:
        """The base threshold θ in use (20/ε_g by default)."""
        if self.theta is not None:
            return float(self.theta)
        return DEFAULT_THETA_TIMES_EPS_G / self.epsilon_g if self.grouping else float("inf")

    @property
    def threshold_noise_scale(self) -> float:
        """Scale of the fresh threshold noise, 4/ε_g (sensitivity 2, budget ε_g/2)."""
        return 4.0 / self.epsilon_g

    @property
    def test_noise_scale(self) -> float:
        """Scale of the per-test noise, 8/ε_g (sensitivity 2, budget ε_g/2)."""
        return 8.0 / self.epsilon_g

    @property
    def history_len(self) -> int:
        """Columns of true-count history kept per location (0 without grouping)."""
        return int(self.max_group_len) if self.grouping else 0

    @property
    def noisy_history_len(self) -> int:
        """Columns of noisy history kept per location (median smoother only)."""
        return int(self.max_group_len) if self.smoother == "median" else 0


@dataclass(frozen=True)
class PegasusState:
    """Per-location PeGaSus state (all arrays have ``n_locations`` rows).

    Attributes:
        group_len: members of the current group (0: no group yet).
        group_open: whether the current group is open.
        threshold: θ̃ of the open group (meaningless when closed).
        true_hist: true counts of the current group in its first ``group_len`` columns,
            zeros after them, shape (L, cap) (or (L, 0) without grouping).
        true_sum: Σ of the true counts of the current group.
        noisy_sum: Σ c̃ over the current group.
        noisy_hist: c̃ of the current group **sorted ascending**, padded with int32 max,
            for the median smoother, shape (L, cap) (or (L, 0) for other smoothers).
        last_tick: last tick processed (−1: none, or ticks not given).
    """

    group_len: np.ndarray
    group_open: np.ndarray
    threshold: np.ndarray
    true_hist: np.ndarray
    true_sum: np.ndarray
    noisy_sum: np.ndarray
    noisy_hist: np.ndarray
    last_tick: int = -1
    _fields: ClassVar[tuple[str, ...]] = (
        "group_len", "group_open", "threshold", "true_hist", "true_sum", "noisy_sum",
        "noisy_hist",
    )

    @property
    def n_locations(self) -> int:
        """Number of locations (rows)."""
        return int(self.group_len.shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes of array data (:meth:`to_bytes` adds a 19-byte header)."""
        return int(sum(getattr(self, f).nbytes for f in self._fields))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PegasusState):
            return NotImplemented
        return self.last_tick == other.last_tick and all(
            np.array_equal(getattr(self, f), getattr(other, f)) for f in self._fields
        )

    __hash__ = None  # type: ignore[assignment]

    def to_bytes(self) -> bytes:
        """Compact little-endian serialisation (header + raw arrays) for a table value."""
        cap = max(self.true_hist.shape[1], self.noisy_hist.shape[1])
        flags = (1 if self.true_hist.shape[1] else 0) | (2 if self.noisy_hist.shape[1] else 0)
        head = _HEADER.pack(_MAGIC, self.n_locations, cap, flags, self.last_tick)
        return head + b"".join(
            np.ascontiguousarray(getattr(self, f)).astype(getattr(self, f).dtype.newbyteorder("<"))
            .tobytes()
            for f in self._fields
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> PegasusState:
        """Inverse of :meth:`to_bytes`.

        Raises:
            InvalidParameterError: not a PeGaSus state or truncated.
        """
        if len(data) < _HEADER.size:
            raise InvalidParameterError(f"data must be a PeGaSus state, not {len(data)} bytes")
        magic, n, cap, flags, last_tick = _HEADER.unpack_from(data)
        if magic != _MAGIC:
            raise InvalidParameterError(f"data must start with {_MAGIC!r}, not {magic!r}")
        th = cap if flags & 1 else 0
        nh = cap if flags & 2 else 0
        layout = [
            ("group_len", "<u2", (n,)),
            ("group_open", "?", (n,)),
            ("threshold", "<f8", (n,)),
            ("true_hist", "<i4", (n, th)),
            ("true_sum", "<i8", (n,)),
            ("noisy_sum", "<i8", (n,)),
            ("noisy_hist", "<i4", (n, nh)),
        ]
        need = _HEADER.size + sum(np.dtype(dt).itemsize * int(np.prod(sh)) for _, dt, sh in layout)
        if len(data) != need:
            raise InvalidParameterError(
                f"data must be {need} bytes for {n} locations, not {len(data)}"
            )
        off = _HEADER.size
        arrays = {}
        for name, dt, shape in layout:
            cnt = int(np.prod(shape))
            a = np.frombuffer(data, dtype=dt, count=cnt, offset=off).reshape(shape)
            arrays[name] = a.astype(np.dtype(dt).newbyteorder("="))
            off += a.nbytes
        return cls(last_tick=int(last_tick), **arrays)

    def take(self, rows: np.ndarray | list[int]) -> PegasusState:
        """The state of a subset of locations (e.g. one partition's share)."""
        idx = np.asarray(rows, dtype=np.int64)
        return PegasusState(
            last_tick=self.last_tick,
            **{f: getattr(self, f)[idx] for f in self._fields},
        )

    @classmethod
    def concatenate(cls, states: list[PegasusState]) -> PegasusState:
        """Stack states of disjoint location sets (inverse of :meth:`take` on a split)."""
        if not states:
            raise InvalidParameterError("states must be a non-empty list, not []")
        fields = states[0]._fields
        return cls(
            last_tick=max(s.last_tick for s in states),
            **{f: np.concatenate([getattr(s, f) for s in states]) for f in fields},
        )


def initialize(n_locations: int, config: PegasusConfig) -> PegasusState:
    """Empty state (no groups yet) for ``n_locations`` locations."""
    n = int(n_locations)
    if n < 0:
        raise InvalidParameterError(f"n_locations must be ≥ 0, not {n_locations!r}")
    return PegasusState(
        group_len=np.zeros(n, dtype=np.uint16),
        group_open=np.zeros(n, dtype=bool),
        threshold=np.zeros(n, dtype=np.float64),
        true_hist=np.zeros((n, config.history_len), dtype=np.int32),
        true_sum=np.zeros(n, dtype=np.int64),
        noisy_sum=np.zeros(n, dtype=np.int64),
        noisy_hist=np.full((n, config.noisy_history_len), _SENTINEL, dtype=np.int32),
    )


def _candidate_deviation(
    true_hist: np.ndarray, glen: np.ndarray, true_sum: np.ndarray, counts: np.ndarray, k: int
) -> np.ndarray:
    """dev(G ∪ {t}) per row: Σ|x − mean| over the group's counts and this tick's count.

    Exact integer arithmetic with n = |G| + 1 and S = Σ(G) + c_t: n·dev = Σ|n·x − S|.
    The history is zero-padded after ``glen`` columns, so over the first ``k`` columns
    each padding entry adds |0 − S| = S, which is subtracted again (valid for rows with
    glen ≤ k; other rows are not open and their value is unused).
    """
    n = glen + 1
    total_s = true_sum + counts
    acc = np.abs(n * counts - total_s)
    if k:
        y = true_hist[:, :k].astype(np.int64)
        y *= n[:, None]
        y -= total_s[:, None]
        np.abs(y, out=y)
        acc += y.sum(axis=1) - (k - glen) * total_s
    return acc / n


def _insert_sorted(hist: np.ndarray, values: np.ndarray, rows: np.ndarray, k: int) -> None:
    """In place: insert ``values[i]`` into sorted, sentinel-padded ``hist[i]`` where ``rows``.

    Only the first k+1 columns can change (every joining row has at most k members).
    """
    sub = hist[:, : k + 1]
    v = values.astype(np.int32)[:, None]
    pos = np.count_nonzero(sub < v, axis=1)
    pos[~rows] = k + 1  # no change
    shifted = np.empty_like(sub)
    shifted[:, 1:] = sub[:, :-1]
    shifted[:, 0] = _SENTINEL
    cols = np.arange(k + 1)[None, :]
    np.copyto(sub, shifted, where=cols > pos[:, None])
    np.copyto(sub, np.broadcast_to(v, sub.shape), where=cols == pos[:, None])


def smooth(
    noisy: np.ndarray,
    group_len: np.ndarray,
    noisy_sum: np.ndarray,
    noisy_hist: np.ndarray,
    smoother: Smoother,
) -> np.ndarray:
    """Smoother (post-processing, no rng): the released value for each location.

    Args:
        noisy: this tick's perturbed counts c̃_t.
        group_len: |G_t| including t (≥ 1).
        noisy_sum: Σ c̃ over G_t including t.
        noisy_hist: c̃ over G_t sorted ascending in its first ``group_len`` columns
            (median only).
        smoother: ``"average"``, ``"median"`` or ``"js"``.
    """
    n = group_len.astype(np.float64)
    mean = noisy_sum / np.maximum(n, 1.0)
    if smoother == "average":
        out = mean
    elif smoother == "js":
        out = mean + (noisy - mean) / np.maximum(n, 1.0)
    elif smoother == "median":
        if noisy_hist.shape[1] == 0:
            raise InvalidParameterError("noisy_hist must have columns for the median smoother")
        last = noisy_hist.shape[1] - 1
        lo = np.clip((group_len.astype(np.int64) - 1) // 2, 0, last)
        hi = np.clip(group_len.astype(np.int64) // 2, 0, last)
        rows = np.arange(noisy_hist.shape[0])
        out = (noisy_hist[rows, lo].astype(np.float64) + noisy_hist[rows, hi]) / 2
    else:
        raise InvalidParameterError(f"smoother must be one of {SMOOTHERS}, not {smoother!r}")
    return np.where(group_len <= 1, noisy.astype(np.float64), out)


def _check_state(state: PegasusState, config: PegasusConfig, n: int) -> None:
    if state.n_locations != n:
        raise InvalidParameterError(f"counts must have {state.n_locations} entries, not {n}")
    if (
        state.true_hist.shape[1] != config.history_len
        or state.noisy_hist.shape[1] != config.noisy_history_len
    ):
        raise InvalidParameterError(
            "state must come from initialize() with the same grouping, smoother and "
            f"max_group_len, not history widths {state.true_hist.shape[1]}/"
            f"{state.noisy_hist.shape[1]}"
        )


def step(
    state: PegasusState,
    counts: np.ndarray,
    config: PegasusConfig,
    *,
    perturb_scale: np.ndarray | float,
    active: np.ndarray | None = None,
    rng: np.random.Generator | None = None,
    tick: int | None = None,
) -> tuple[PegasusState, np.ndarray]:
    """One PeGaSus tick with per-row perturber scale and an optional active mask.

    The building block of :func:`update` and of the hierarchical mechanism. Rows with
    ``active`` False release 0, spend nothing, and have their group closed (the next
    active tick starts a new group with a fresh threshold). Noise is drawn for every
    row whatever ``active`` says, so the draw order never depends on the data.

    Args:
        state: state before the tick.
        counts: true counts (validated by the caller).
        config: grouper/smoother parameters (ε_g, θ, smoother, cap).
        perturb_scale: discrete Laplace scale per row (1/ε_p for plain PeGaSus).
        active: rows to process; None = all.
        rng: generator for this tick.
        tick: the tick's index; must increase if given.
    """
    n = counts.size
    _check_state(state, config, n)
    if tick is not None:
        if int(tick) <= state.last_tick:
            raise InvalidParameterError(
                f"tick must be > the last processed tick {state.last_tick}, not {tick!r} "
                "(re-emit the stored release on replay instead of recomputing it)"
            )
        new_tick = int(tick)
    else:
        new_tick = state.last_tick
    rng = resolve_rng(rng)
    noisy = counts + discrete_laplace(perturb_scale, n, rng=rng)
    act = np.ones(n, dtype=bool) if active is None else np.asarray(active, dtype=bool)

    cap = int(config.max_group_len)
    glen = state.group_len.astype(np.int64)
    gopen = state.group_open
    threshold = state.threshold

    if config.grouping:
        theta_draw = config.theta_value + rng.laplace(0.0, config.threshold_noise_scale, n)
        test_noise = rng.laplace(0.0, config.test_noise_scale, n)
        is_open = gopen & (glen > 0)
        k = int(glen[is_open].max()) if is_open.any() else 0
        dev = _candidate_deviation(state.true_hist, glen, state.true_sum, counts, k)
        join = is_open & (dev + test_noise < threshold)
        close = is_open & ~join
        start = ~is_open
    else:
        join = np.zeros(n, dtype=bool)
        close = np.ones(n, dtype=bool)  # every tick a closed singleton
        start = np.zeros(n, dtype=bool)
        theta_draw = threshold
    join &= act
    close &= act
    start &= act
    single = start | close
    reset = ~join  # rows whose history restarts (singletons) or empties (inactive)

    new_len = np.where(join, glen + 1, np.where(single, 1, 0))
    new_open = np.where(join, new_len < cap, np.where(start, cap > 1, False))
    new_threshold = np.where(start, theta_draw, threshold)
    new_sum = np.where(join, state.noisy_sum + noisy, np.where(single, noisy, 0))

    true_hist = state.true_hist
    true_sum = np.where(join, state.true_sum + counts, np.where(single, counts, 0))
    if true_hist.shape[1]:
        true_hist = true_hist.copy()
        r = np.flatnonzero(join)
        true_hist[r, glen[r]] = counts[r]
        r = np.flatnonzero(reset)
        true_hist[r] = 0
        r = np.flatnonzero(single)
        true_hist[r, 0] = counts[r]
    noisy_hist = state.noisy_hist
    if noisy_hist.shape[1]:
        noisy_hist = noisy_hist.copy()
        if join.any():
            _insert_sorted(noisy_hist, noisy, join, int(glen[join].max()))
        r = np.flatnonzero(reset)
        noisy_hist[r] = _SENTINEL
        r = np.flatnonzero(single)
        noisy_hist[r, 0] = noisy[r]

    released = smooth(noisy, new_len, new_sum, noisy_hist, config.smoother)
    released = np.where(act, released, 0.0)
    new_state = PegasusState(
        group_len=new_len.astype(np.uint16),
        group_open=new_open.astype(bool),
        threshold=new_threshold.astype(np.float64),
        true_hist=true_hist,
        true_sum=true_sum.astype(np.int64),
        noisy_sum=new_sum.astype(np.int64),
        noisy_hist=noisy_hist,
        last_tick=new_tick,
    )
    return new_state, released


def update(
    state: PegasusState,
    counts: np.ndarray | list[int],
    config: PegasusConfig,
    *,
    rng: np.random.Generator | None = None,
    tick: int | None = None,
) -> tuple[PegasusState, np.ndarray]:
    """Release one tick of PeGaSus for every location (spends ``config.spent_epsilon``).

    Args:
        state: state before the tick (from :func:`initialize` or a previous update).
        counts: true counts, shape (n_locations,), non-negative integers.
        config: the mechanism's parameters (must match the state's).
        rng: generator, e.g. ``keyed_rng(secret, "pegasus", tick, "all")``; None → the
            project's CSPRNG-seeded generator.
        tick: optional tick index; if given it must exceed ``state.last_tick`` (a replay
            must re-emit the stored release, never draw again).

    Returns:
        ``(new_state, released)``: released float64 values, shape (n_locations,).
    """
    c = as_counts(counts)
    return step(state, c, config, perturb_scale=1.0 / config.epsilon_p, rng=rng, tick=tick)
