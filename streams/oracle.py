"""The reference occupancy function: what the streaming pipeline must compute, exactly.

Definition (DESIGN.md "Flow"; thesis §4.1 occupancy data model):

1. **Validation.** Records are taken in arrival order and validated with
   :func:`streams.schema.validate` (same function as the observe stage, same
   :class:`~streams.schema.EventClock`): invalid, far-future and too-late records do
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
from streams.schema import EventClock, Observation, validate

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
    counts = np.zeros((n_t + 1, len(locations)), dtype=np.int64)
    if n_t == 0 or not obs:
        return OccupancyTable(tick_arr, locations, counts[:n_t])

    ident = identity or (lambda o: o.device)
    ids = [ident(o) for o in obs]
    # Stable sort by (identity, ts): ties keep arrival order, so the later one wins.
    order = sorted(range(len(obs)), key=lambda i: (ids[i], obs[i].ts))
    for pos, i in enumerate(order):
        o = obs[i]
        j = col.get(o.location)
        if j is None:
            continue
        nxt = order[pos + 1] if pos + 1 < len(order) else None
        end = o.ts + validity_s
        if nxt is not None and ids[nxt] == ids[i]:
            end = min(end, obs[nxt].ts)
        # ticks t with o.ts <= t < end
        lo = int(np.searchsorted(tick_arr, o.ts, side="left"))
        hi = int(np.searchsorted(tick_arr, end, side="left"))
        if lo < hi:
            counts[lo, j] += 1
            counts[hi, j] -= 1
    counts = np.cumsum(counts, axis=0)[:n_t]
    return OccupancyTable(tick_arr, locations, counts)
