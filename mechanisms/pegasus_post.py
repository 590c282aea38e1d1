"""PeGaSus-post: the whole ε to the Perturber, the Grouper as post-processing.

Mechanism name ``pegasus-post``. A variant of PeGaSus (Chen, Machanavajjhala, Hay &
Miklau, CCS 2017, §4: Perturber → Grouper → Smoother) added because the paper's design
cannot reach the project's targets on occupancy streams (docs/pegasus.md, measured with
``bench/bench_pegasus.py``): the paper's Grouper reads the *true* counts and pays ε_g
for a sparse-vector test whose noise is Lap(8/ε_g) — with ε_g = 0.2ε that is a test noise
scale of 40/ε, against the Perturber's 1.25/ε. On a building's rooms (counts 0–200,
changes of a few people) the test sees almost nothing, groups end at random, and the
running mean over a group correlates the errors of consecutive ticks: the paper's
design is *worse* than Laplace on 1-hour window sums at every ε (1.1–2.6×) and below it
on event-detection AUC, whatever θ ∈ {5, 20, 100}/ε_g, ε_p/ε ∈ {0.5, 0.8, 0.9},
smoother or group cap.

Here the Grouper reads the Perturber's output instead. Per location and tick t:

1. **Perturber** (the only access to the data): c̃_t = c_t + Z, Z discrete Laplace of
   scale 1/ε (:func:`mechanisms.noise.discrete_laplace`) — exactly the Laplace release.
2. **Grouper** (post-processing of c̃, times ≤ t): the open group G (the last |G| noisy
   counts) gets t appended; for every split of G ∪ {t} into a prefix and a suffix of
   length j the two means are compared,
   z_j = |mean(suffix) − mean(prefix)| / (σ·√(1/j + 1/(n − j))), σ the standard deviation
   of the noise (public: a function of ε). If max_j z_j > ``z`` the group restarts as
   the suffix of the largest z_j (a change point; the suffix's past noisy values join
   the new group — they were released already, nothing is revised). A group is capped
   at ``max_group_len`` ticks by dropping its oldest value (bounded state).
3. **Smoother** (post-processing): the mean of the group — or, when max_j z_j exceeds the
   lower ``z_estimate`` (a suspected but not yet confirmed change), of that suffix only
   (the group itself stays whole until ``z`` confirms) — rounded to an integer and
   clipped at 0 (counts are non-negative integers; ``integer``/``nonnegative`` turn
   these off).

Privacy (event level, one device at one tick; a device is in one location per tick):
c̃ is ε-DP (one count changes by 1; parallel over locations and ticks). Grouper and
Smoother read only c̃ and public constants (ε, σ, ``z``, cap), so the release is
post-processing of an ε-DP release: ε per event, the same as Laplace at ε
(:attr:`PegasusPostConfig.spent_epsilon`). No budget goes to grouping.

Why hand-written: the state must be a small frozen array bundle serialised into the
occupancy stage's checkpoint, and the noise must come from the keyed per-tick ``rng``
(one discrete-Laplace draw per location per tick, in location order), so that
``keyed_rng(secret, "pegasus-post", tick, "all")`` reproduces a tick's release exactly.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from mechanisms.errors import InvalidParameterError, check_positive
from mechanisms.laplace import as_counts
from mechanisms.noise import discrete_laplace, resolve_rng

__all__ = ["PegasusPostConfig", "PegasusPostState", "initialize", "smooth_group", "update"]

_MAGIC = b"PGP1"
_HEADER = struct.Struct("<4sIHq")  # magic, n_locations, cap, last_tick


@dataclass(frozen=True)
class PegasusPostConfig:
    """PeGaSus-post parameters.

    Attributes:
        epsilon: event-level ε per tick, all of it for the Perturber.
        z: change threshold of the post-processing Grouper in noise standard deviations
            (default 4: tuned on simulated dbh weeks, seeds 101–102, docs/pegasus.md;
            3 detects changes sooner — better event AUC at ε = 0.1 — but splits more
            often, worse window sums).
        z_estimate: the Smoother uses only the suffix when max_j z_j exceeds this (≤ z;
            default 3: on the tuning seeds window-sum ratio 0.55, 0.61, 0.57, 0.61 and
            AUC ratio 0.98, 0.99, 1.00, 1.00 at ε = 0.1, 0.5, 1, 2, against 0.54, 0.66,
            0.65, 0.61 and 0.95, 0.97, 0.99, 1.00 with z_estimate = z).
        max_group_len: cap on a group in ticks (default 288 = one day of 5-min ticks; a
            night of empty rooms is one group).
        integer: round the released mean to an integer.
        nonnegative: clip the released value at 0.
        grouping: False turns the Grouper off (every tick its own group): the release is
            Laplace at ε, rounded/clipped as configured — the control that must lose.
    """

    epsilon: float
    z: float = 4.0
    z_estimate: float = 3.0
    max_group_len: int = 288
    integer: bool = True
    nonnegative: bool = True
    grouping: bool = True

    def __post_init__(self) -> None:
        check_positive("epsilon", self.epsilon)
        check_positive("z", self.z)
        check_positive("z_estimate", self.z_estimate)
        if self.z_estimate > self.z:
            raise InvalidParameterError(
                f"z_estimate must be <= z = {self.z!r}, not {self.z_estimate!r}")
        if not isinstance(self.max_group_len, int | np.integer) or not (
            2 <= int(self.max_group_len) <= 65535
        ):
            raise InvalidParameterError(
                f"max_group_len must be an integer in [2, 65535], not {self.max_group_len!r}"
            )

    @property
    def spent_epsilon(self) -> float:
        """ε spent per event: ε (grouping and smoothing are post-processing)."""
        return float(self.epsilon)

    @property
    def scale(self) -> float:
        """Perturber scale 1/ε (sensitivity 1)."""
        return 1.0 / float(self.epsilon)

    @property
    def noise_sd(self) -> float:
        """σ of discrete Laplace noise of scale 1/ε: √(2q)/(1 − q), q = e^(−ε)."""
        q = math.exp(-float(self.epsilon))
        return math.sqrt(2.0 * q) / (1.0 - q)


@dataclass(frozen=True)
class PegasusPostState:
    """Per-location state (``n_locations`` rows).

    Attributes:
        history: the last ``cap`` noisy counts, oldest first, newest in the last column
            (int32, zero before the first tick); only the last ``group_len`` belong to
            the open group.
        group_len: members of the open group (0: nothing released yet).
        last_tick: last tick processed (−1: none, or ticks not given).
    """

    history: np.ndarray
    group_len: np.ndarray
    last_tick: int = -1
    _fields: ClassVar[tuple[str, ...]] = ("history", "group_len")

    @property
    def n_locations(self) -> int:
        """Number of locations (rows)."""
        return int(self.group_len.shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes of array data."""
        return int(self.history.nbytes + self.group_len.nbytes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PegasusPostState):
            return NotImplemented
        return self.last_tick == other.last_tick and all(
            np.array_equal(getattr(self, f), getattr(other, f)) for f in self._fields
        )

    __hash__ = None  # type: ignore[assignment]

    def to_bytes(self) -> bytes:
        """Little-endian serialisation (header + raw arrays) for a table value."""
        n, cap = self.history.shape
        head = _HEADER.pack(_MAGIC, n, cap, self.last_tick)
        return (head + self.history.astype("<i4").tobytes()
                + self.group_len.astype("<u2").tobytes())

    @classmethod
    def from_bytes(cls, data: bytes) -> PegasusPostState:
        """Inverse of :meth:`to_bytes`.

        Raises:
            InvalidParameterError: not a PeGaSus-post state, or truncated.
        """
        if len(data) < _HEADER.size:
            raise InvalidParameterError(
                f"data must be a PeGaSus-post state, not {len(data)} bytes")
        magic, n, cap, last_tick = _HEADER.unpack_from(data)
        if magic != _MAGIC:
            raise InvalidParameterError(f"data must start with {_MAGIC!r}, not {magic!r}")
        need = _HEADER.size + 4 * n * cap + 2 * n
        if len(data) != need:
            raise InvalidParameterError(
                f"data must be {need} bytes for {n} locations, not {len(data)}")
        off = _HEADER.size
        hist = np.frombuffer(data, "<i4", n * cap, off).reshape(n, cap).astype(np.int32)
        glen = np.frombuffer(data, "<u2", n, off + 4 * n * cap).astype(np.uint16)
        return cls(history=hist, group_len=glen, last_tick=int(last_tick))


def initialize(n_locations: int, config: PegasusPostConfig) -> PegasusPostState:
    """Empty state for ``n_locations`` locations."""
    n = int(n_locations)
    if n < 0:
        raise InvalidParameterError(f"n_locations must be ≥ 0, not {n_locations!r}")
    return PegasusPostState(
        history=np.zeros((n, int(config.max_group_len)), dtype=np.int32),
        group_len=np.zeros(n, dtype=np.uint16),
    )


def smooth_group(
    history: np.ndarray, group_len: np.ndarray, config: PegasusPostConfig
) -> tuple[np.ndarray, np.ndarray]:
    """Grouper + Smoother (post-processing, no rng) on a history whose last column is new.

    Args:
        history: noisy counts, newest in the last column, shape (L, cap).
        group_len: members of the open group *before* the newest value, shape (L,).
        config: the parameters (z, cap, rounding).

    Returns:
        ``(new_group_len, released)``.
    """
    n_loc, cap = history.shape
    rows = np.arange(n_loc)
    n = np.minimum(group_len.astype(np.int64) + 1, cap)
    cs = np.cumsum(history[:, ::-1].astype(np.float64), axis=1)  # cs[:, j-1]: last j values
    j = np.arange(1, cap + 1, dtype=np.float64)[None, :]
    total = cs[rows, n - 1][:, None]
    rest = np.maximum(n[:, None] - j, 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        zs = np.abs(cs / j - (total - cs) / rest) / (
            config.noise_sd * np.sqrt(1.0 / j + 1.0 / rest))
    zs = np.where(j < n[:, None], zs, 0.0)
    best = zs.argmax(axis=1)
    if config.grouping:
        top = zs[rows, best]
        n_est = np.where(top > config.z_estimate, best + 1, n)
        n = np.where(top > config.z, best + 1, n)
    else:
        n = n_est = np.ones(n_loc, dtype=np.int64)
    out = cs[rows, n_est - 1] / n_est
    if config.integer:
        out = np.round(out)
    if config.nonnegative:
        out = np.maximum(out, 0.0)
    return n, out


def update(
    state: PegasusPostState,
    counts: np.ndarray | list[int],
    config: PegasusPostConfig,
    *,
    rng: np.random.Generator | None = None,
    tick: int | None = None,
) -> tuple[PegasusPostState, np.ndarray]:
    """Release one tick for every location (spends ``config.spent_epsilon`` per event).

    Args:
        state: state before the tick (from :func:`initialize` or a previous update).
        counts: true counts, shape (n_locations,), non-negative integers.
        config: the parameters (must match the state's cap).
        rng: generator, e.g. ``keyed_rng(secret, "pegasus-post", tick, "all")``; None →
            the project's CSPRNG-seeded generator.
        tick: optional tick index; must exceed ``state.last_tick`` (a replay re-emits
            the stored release, never draws again).

    Returns:
        ``(new_state, released)``: float64 values, shape (n_locations,).
    """
    c = as_counts(counts)
    if c.size != state.n_locations:
        raise InvalidParameterError(f"counts must have {state.n_locations} entries, not {c.size}")
    if state.history.shape[1] != int(config.max_group_len):
        raise InvalidParameterError(
            f"state must have max_group_len={config.max_group_len} columns, "
            f"not {state.history.shape[1]}")
    new_tick = state.last_tick
    if tick is not None:
        if int(tick) <= state.last_tick:
            raise InvalidParameterError(
                f"tick must be > the last processed tick {state.last_tick}, not {tick!r} "
                "(re-emit the stored release on replay instead of recomputing it)")
        new_tick = int(tick)
    noisy = c + discrete_laplace(config.scale, c.size, rng=resolve_rng(rng))
    hist = np.empty_like(state.history)
    hist[:, :-1] = state.history[:, 1:]
    hist[:, -1] = np.clip(noisy, np.iinfo(np.int32).min, np.iinfo(np.int32).max)
    glen, released = smooth_group(hist, state.group_len, config)
    return PegasusPostState(hist, glen.astype(np.uint16), new_tick), released
