"""The reference occupancy function: what the streaming pipeline must compute, exactly.

Definition (docs/DESIGN.md "Flow"; thesis §4.1 occupancy data model):

1. **Validation.** Records are taken in arrival order and validated with
   :func:`occupancy.schema.validate` (same function as the observe stage, same
   :class:`~occupancy.schema.EventClock`): invalid, far-future and too-late records do
   not count.
2. **Identity.** A device is identified by ``identity(obs)`` — by default its MAC;
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
5. **Finality.** A tick ``t`` is final once the watermark (max event time −
   ``lateness_s``) is strictly greater than ``t``: any admissible later event has
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
from occupancy.schema import EventClock, Observation, validate

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


def valid_observations(
    events: Iterable[bytes | str | dict[str, Any]],
    ap_location: dict[str, str],
    *,
    lateness_s: float = DEFAULT_LATENESS_S,
    max_future_s: float = DEFAULT_MAX_FUTURE_S,
) -> tuple[list[Observation], EventClock]:
    """The observations that count, in arrival order, and the final event clock."""
    clock = EventClock(lateness_s, max_future_s)
    out = []
    for raw in events:
        obs = validate(raw, ap_location, clock)
        if isinstance(obs, Observation):
            out.append(obs)
    return out, clock


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
) -> OccupancyTable:
    """Occupancy per (tick, location) of a sequence of raw events (module docstring).

    Args:
        events: raw records (bytes/str JSON or dicts) in arrival order.
        ap_location: AP id → location id (``Site.ap_location``).
        locations: the locations to report, in column order (``Site.location_ids``).
        tick_s: tick period; ticks are the multiples of ``tick_s`` (epoch-aligned).
        validity_s: how long an observation keeps a device present.
        lateness_s: allowed lateness (defines too-late events and finality).
        max_future_s: how far ahead of the clock an event may be.
        ticks: explicit ticks to evaluate (multiples of ``tick_s``); default: all final.
        identity: maps an observation to the identity counted (default: the MAC).

    Returns:
        An :class:`OccupancyTable`.
    """
    tick_s = check_positive("tick_s", tick_s)
    validity_s = check_positive("validity_s", validity_s)
    if lateness_s < 0:
        raise InvalidParameterError(f"lateness_s must be >= 0, not {lateness_s!r}")
    obs, clock = valid_observations(
        events, ap_location, lateness_s=lateness_s, max_future_s=max_future_s
    )
    locations = tuple(locations)
    col = {loc: j for j, loc in enumerate(locations)}
    if ticks is None:
        if not obs or clock.watermark is None:
            return OccupancyTable(np.zeros(0), locations, np.zeros((0, len(locations)), np.int64))
        k_first = math.ceil(min(o.ts for o in obs) / tick_s)
        k_last = math.ceil(clock.watermark / tick_s) - 1
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
    _, codes = np.unique(np.array([ident(o) for o in obs], dtype=object), return_inverse=True)
    counts = presence_counts(
        codes,
        np.fromiter((o.ts for o in obs), np.float64, len(obs)),
        np.fromiter((col.get(o.location, -1) for o in obs), np.int64, len(obs)),
        tick_arr,
        validity_s=validity_s,
        n_locations=len(locations),
    )
    return OccupancyTable(tick_arr, locations, counts)
