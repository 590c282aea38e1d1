"""The reference occupancy function: what the streaming pipeline must compute, exactly.

Definition (docs/DESIGN.md "Flow"; thesis §4.1 occupancy data model):

1. **Validation.** Records are taken in arrival order and checked with
   :func:`occupancy.schema.parse_observation` (same function as the observe stage);
   each valid one is offered to its partition's quorum clock
   (:class:`occupancy.clock.PartitionClock`, the clock the stream runs; its docstring
   states it): it is admitted, too late, or held until the clock comes within
   ``max_future_s`` of it (then admitted) or ``quorum`` further records of its
   partition pass without that (then far-future). Invalid, too-late, far-future and
   still-held records do not count. ``partition_of`` maps an observation to its input
   partition (default: one partition) and ``partitions`` is their number. After each
   record the global clock (:func:`occupancy.clock.global_clock`, the majority
   statistic) is the floor of every partition's clock — what the stream's signed idle
   markers deliver to the partitions a tick waits for (a quiet partition's held
   morning is released by it); busy partitions are at or above it anyway.
2. **Identity.** A device is identified by ``identity(obs)`` — by default its MAC —
   applied in arrival order to every valid record not too late (held ones included);
   the pipeline counts HMAC pseudonyms (a bijection of MACs, same counts) or TTL-salt
   pseudonyms (pass the same pseudonymizer to count them the same way).
3. **Presence.** At time ``t`` a device is at location ``L`` iff its *latest*
   observation with ``ts ≤ t`` is at ``L`` and ``t − ts < validity_s``. Ties (two
   observations of one device with the same ``ts``) go to the later one in arrival
   order. So a device is present at its latest location from the observation time
   (inclusive) for ``validity_s`` seconds (exclusive), or until it is observed
   elsewhere (exclusive).
4. **Occupancy.** At every tick ``t = k·tick_s`` the count at ``L`` is the number of
   distinct identities present at ``L``. Every location of the site appears in every
   tick, zeros included (releasing only the non-zero locations would itself leak).
5. **Finality.** A tick ``t`` is final once the watermark (the smallest partition
   clock − ``lateness_s``) is strictly greater than ``t``: any admissible later event has
   ``ts ≥ watermark > t`` and cannot change it. By default the oracle returns the
   ticks from the first one at or after the earliest valid event up to the last
   final tick at the end of the input.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mechanisms.errors import InvalidParameterError, check_positive
from occupancy.clock import ADMIT, DEFAULT_QUORUM, TOO_LATE, PartitionClock, global_clock
from occupancy.schema import Invalid, Observation, parse_observation

DEFAULT_TICK_S = 300.0
DEFAULT_VALIDITY_S = 600.0
DEFAULT_LATENESS_S = 60.0
DEFAULT_MAX_FUTURE_S = 3600.0


@dataclass(frozen=True)
class OccupancyTable:
    """Counts per (tick, location): ``counts[i, j]`` at ``ticks[i]`` for ``locations[j]``."""

    ticks: np.ndarray  # float64 epoch seconds, shape (T,)
    locations: tuple[str, ...]
    counts: np.ndarray  # int64, shape (T, L)

    def as_dict(self) -> dict[tuple[float, str], int]:
        """{(tick, location): count} for every cell."""
        return {
            (float(t), loc): int(self.counts[i, j])
            for i, t in enumerate(self.ticks)
            for j, loc in enumerate(self.locations)
        }

    def at(self, tick: float, location: str) -> int:
        """The count at one cell (KeyError if the tick or location is absent)."""
        i = int(np.searchsorted(self.ticks, tick))
        if i >= len(self.ticks) or self.ticks[i] != tick:
            raise KeyError(tick)
        return int(self.counts[i, self.locations.index(location)])


def presence_counts(
    device: np.ndarray,
    ts: np.ndarray,
    location: np.ndarray,
    ticks: np.ndarray,
    *,
    validity_s: float,
    n_locations: int,
) -> np.ndarray:
    """Steps 3–4 of the definition on valid observations, vectorised.

    Args:
        device: identity code of each observation (any sortable integers), arrival order.
        ts: event time of each observation.
        location: column index of each observation's location; −1 = not reported (the
            observation still ends the device's previous presence).
        ticks: the ticks to count at, strictly increasing.
        validity_s: how long an observation keeps a device present.
        n_locations: number of columns.

    Returns:
        int64 counts, shape (len(ticks), n_locations).
    """
    n_t = len(ticks)
    # by device, then time; ties keep arrival order, so the later observation wins
    order = np.lexsort((np.arange(len(ts)), ts, device))
    t_o, dev_o, loc_o = ts[order], device[order], location[order]
    end = t_o + validity_s  # present on [ts, min(ts + validity, next ts of the device))
    same_next = dev_o[1:] == dev_o[:-1]
    end[:-1] = np.where(same_next, np.minimum(end[:-1], t_o[1:]), end[:-1])
    lo = np.searchsorted(ticks, t_o, side="left")
    hi = np.searchsorted(ticks, end, side="left")
    m = (lo < hi) & (loc_o >= 0)
    size = (n_t + 1) * n_locations
    diff = np.bincount(lo[m] * n_locations + loc_o[m], minlength=size)
    diff -= np.bincount(hi[m] * n_locations + loc_o[m], minlength=size)
    return np.cumsum(diff.reshape(n_t + 1, n_locations), axis=0)[:n_t].astype(np.int64)


def _clocked(
    events: Iterable[bytes | str | dict[str, Any]],
    ap_location: dict[str, str],
    lateness_s: float,
    max_future_s: float,
    quorum: int,
    partition_of: Callable[[Observation], int] | None,
    partitions: int = 1,
) -> tuple[list[Observation], list[int], dict[int, PartitionClock]]:
    """Records offered to the clocks, the admitted among them, the final clocks.

    Returns the valid records not too late (arrival order), the indices of those
    admitted (held ones that were released included), and each partition's clock.
    """
    clocks: dict[int, PartitionClock] = {}
    offered: list[Observation] = []
    admitted: list[int] = []
    g_last: float | None = None
    for raw in events:
        obs = parse_observation(raw, ap_location)
        if isinstance(obs, Invalid):
            continue
        p = 0 if partition_of is None else partition_of(obs)
        clock = clocks.get(p)
        if clock is None:
            clock = clocks[p] = PartitionClock(lateness_s, max_future_s, quorum)
        decision, released, _ = clock.offer(obs.ts, len(offered))
        if decision == TOO_LATE:
            continue
        if decision == ADMIT:
            admitted.append(len(offered))
        admitted.extend(h[2] for h in released)
        offered.append(obs)
        if partitions > 1:
            g = global_clock([c.value for c in clocks.values()], partitions)
            if g is not None and (g_last is None or g > g_last):
                g_last = g
                for other in clocks.values():
                    admitted.extend(h[2] for h in other.raise_floor(g))
    admitted.sort()
    return offered, admitted, clocks


def valid_observations(
    events: Iterable[bytes | str | dict[str, Any]],
    ap_location: dict[str, str],
    *,
    lateness_s: float = DEFAULT_LATENESS_S,
    max_future_s: float = DEFAULT_MAX_FUTURE_S,
    quorum: int = DEFAULT_QUORUM,
    partition_of: Callable[[Observation], int] | None = None,
    partitions: int = 1,
) -> tuple[list[Observation], dict[int, PartitionClock]]:
    """The observations that count, in arrival order, and each partition's final clock."""
    offered, admitted, clocks = _clocked(events, ap_location, lateness_s, max_future_s,
                                         quorum, partition_of, partitions)
    return [offered[i] for i in admitted], clocks


def occupancy_oracle(
    events: Iterable[bytes | str | dict[str, Any]],
    ap_location: dict[str, str],
    locations: Sequence[str],
    *,
    tick_s: float = DEFAULT_TICK_S,
    validity_s: float = DEFAULT_VALIDITY_S,
    lateness_s: float = DEFAULT_LATENESS_S,
    max_future_s: float = DEFAULT_MAX_FUTURE_S,
    ticks: Sequence[float] | np.ndarray | None = None,
    identity: Callable[[Observation], str] | None = None,
    quorum: int = DEFAULT_QUORUM,
    partition_of: Callable[[Observation], int] | None = None,
    partitions: int = 1,
) -> OccupancyTable:
    """Occupancy per (tick, location) of a sequence of raw events (module docstring).

    Args:
        events: raw records (bytes/str JSON or dicts) in arrival order.
        ap_location: AP id → location id (``Site.ap_location``).
        locations: the locations to report, in column order (``Site.location_ids``).
        tick_s: tick period; ticks are the multiples of ``tick_s`` (epoch-aligned).
        validity_s: how long an observation keeps a device present.
        lateness_s: allowed lateness (defines too-late events and finality).
        max_future_s: how far ahead of the clock an event is admitted at once.
        ticks: explicit ticks to evaluate (multiples of ``tick_s``); default: all final.
        identity: maps an observation to the identity counted (default: the MAC).
        quorum: records that move a partition's clock (:mod:`occupancy.clock`).
        partition_of: an observation's input partition (default: all in one).
        partitions: the number of input partitions (for the global clock).

    Returns:
        An :class:`OccupancyTable`.
    """
    tick_s = check_positive("tick_s", tick_s)
    validity_s = check_positive("validity_s", validity_s)
    if lateness_s < 0:
        raise InvalidParameterError(f"lateness_s must be >= 0, not {lateness_s!r}")
    offered, admitted, clocks = _clocked(events, ap_location, lateness_s, max_future_s,
                                         quorum, partition_of, partitions)
    obs = [offered[i] for i in admitted]
    wms = [c.watermark for c in clocks.values()]
    watermark = None if not wms or None in wms else min(w for w in wms if w is not None)
    locations = tuple(locations)
    col = {loc: j for j, loc in enumerate(locations)}
    if ticks is None:
        if not obs or watermark is None:
            return OccupancyTable(np.zeros(0), locations, np.zeros((0, len(locations)), np.int64))
        k_first = math.ceil(min(o.ts for o in obs) / tick_s)
        k_last = math.ceil(watermark / tick_s) - 1
        tick_arr = np.arange(k_first, k_last + 1, dtype=np.float64) * tick_s
    else:
        tick_arr = np.asarray(ticks, dtype=np.float64)
        k = tick_arr / tick_s
        if np.any(k != np.round(k)):
            raise InvalidParameterError("ticks must be multiples of tick_s")
        if np.any(np.diff(tick_arr) <= 0):
            raise InvalidParameterError("ticks must be strictly increasing")
    n_t = len(tick_arr)
    if n_t == 0 or not obs:
        return OccupancyTable(tick_arr, locations, np.zeros((n_t, len(locations)), np.int64))

    ident = identity or (lambda o: o.device)
    # identities in arrival order of every record not too late, held ones included: the
    # stream assigns them on arrival (a TTL salt needs the raw MAC, which it never keeps)
    idents = [ident(o) for o in offered]
    _, codes = np.unique(np.array([idents[i] for i in admitted], dtype=object),
                         return_inverse=True)
    counts = presence_counts(
        codes,
        np.fromiter((o.ts for o in obs), np.float64, len(obs)),
        np.fromiter((col.get(o.location, -1) for o in obs), np.int64, len(obs)),
        tick_arr,
        validity_s=validity_s,
        n_locations=len(locations),
    )
    return OccupancyTable(tick_arr, locations, counts)
