"""The event clock of one input partition and the global clock (issue 14 B, C).

One design, used by the presence stage (:mod:`streams.pipeline.presence`), the idle
markers (:mod:`streams.runtime.occupancy`) and the reference oracle
(:mod:`occupancy.oracle`):

* **Quorum clock per partition.** A partition's clock is the largest value so far of
  the largest T such that ``quorum`` of its last 2 × ``quorum`` *observed* records
  (every record that passed the stateless checks, admitted or held) lie in
  [T, T + ``max_future_s``], raised to the latest authentic watermark marker (the
  *floor*). Fewer than ``quorum`` records of any 2 × ``quorum`` in a row can never move
  it, however far ahead they are (issue 14 B: a first event +2 days in an idle
  partition), records spread out in time (a chain, each ``max_future_s`` after the
  last) never form a quorum, and scattered bad timestamps never add up.
* **Hold, don't reject, the future.** A record more than ``max_future_s`` ahead of the
  clock (or any record before the clock exists) is *held*: neither admitted nor
  dead-lettered, and it moves the clock only as one vote of the quorum. It is admitted
  as soon as the clock comes within ``max_future_s`` of it — ``quorum`` records of a
  quiet partition's morning outvote last night's clock, or a marker brings the global
  clock (issue 14 C) — and dead-lettered as ``far_future`` once ``quorum`` further
  records were observed without that happening (so at most ``quorum`` records are
  ever held). A held record released by a clock move is admitted without the
  too-late check: it was ahead of the clock when it arrived, so its ticks are not final.
* **Too late** is a record more than ``lateness_s`` behind the clock; the partition's
  watermark is clock − ``lateness_s``; a tick is final when every partition's watermark
  is past it (the occupancy stage takes the minimum).
* **Global clock.** :func:`global_clock` is the ⌈N/2⌉-th largest of the N partitions'
  clocks, capped at wall time + ``max_future_s`` when given: one partition (of N ≥ 2)
  pushed ahead cannot move it. The occupancy stage sends it, in signed markers, to
  partitions that hold back a tick (idle at night), bounded by ``max_marker_jump_s``.

Determinism: everything is a function of the partition's records and markers in
offset order, so a replay from a checkpoint reproduces the same decisions.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections.abc import Sequence
from typing import Any

from mechanisms.errors import InvalidParameterError

#: Default quorum: records (of any 2 × quorum in a row) needed to move a partition's
#: clock. The trade-off: a partition's clock lags its newest records by about this many
#: records (at night, and at the end of a replayed file, finality waits for them or for
#: a marker); a burst of this many valid records within ``max_future_s`` moves one
#: partition by at most ``max_future_s`` (never the global clock, which needs a majority
#: of partitions). On the 1-day e2e replay, 12 finalises 282 of 288 ticks (32: 273).
DEFAULT_QUORUM = 12

ADMIT = "admit"
HOLD = "hold"
TOO_LATE = "too_late"
FAR_FUTURE = "far_future"


class PartitionClock:
    """The quorum clock of one partition (module docstring), with its held records.

    Args:
        lateness_s: allowed lateness.
        max_future_s: how far ahead of the clock a record is admitted at once.
        quorum: records whose event times move the clock (≥ 1; 1 = the maximum).
        window: the last 2 × ``quorum`` observed event times (checkpoint state).
        own: the clock from the records alone (largest window statistic so far).
        floor: the latest marker's event time.
        seen: records observed so far.
        held: ``[ts, seen index, payload]`` of held records in arrival order.
    """

    __slots__ = ("_sorted", "floor", "held", "lateness_s", "max_future_s", "own", "quorum",
                 "seen", "window")

    def __init__(self, lateness_s: float, max_future_s: float, quorum: int = DEFAULT_QUORUM,
                 *, window: list[float] | None = None, own: float | None = None,
                 floor: float | None = None, seen: int = 0,
                 held: list[list[Any]] | None = None) -> None:
        if isinstance(quorum, bool) or not isinstance(quorum, int) or quorum < 1:
            raise InvalidParameterError(f"quorum must be an integer >= 1, not {quorum!r}")
        self.lateness_s = float(lateness_s)
        self.max_future_s = float(max_future_s)
        self.quorum = quorum
        self.window = list(window or [])
        self._sorted = sorted(self.window)
        self.own = own
        self.floor = floor
        self.seen = seen
        self.held = [list(h) for h in held or []]

    @property
    def value(self) -> float | None:
        """The clock: max(floor, own); None before either exists."""
        own = self.own
        if own is None:
            return self.floor
        return own if self.floor is None or own > self.floor else self.floor

    @property
    def reference(self) -> float | None:
        """What a marker's jump is measured from: the clock, else the largest time seen."""
        v = self.value
        if v is None and self.window:
            return max(self.window)
        return v

    @property
    def watermark(self) -> float | None:
        """Clock − allowed lateness (None before the clock exists)."""
        v = self.value
        return None if v is None else v - self.lateness_s

    def offer(self, ts: float, payload: Any) -> tuple[str, list[list[Any]], list[list[Any]]]:
        """Observe one record; return (its decision, held records now admitted, now expired).

        The decision is :data:`ADMIT`, :data:`HOLD` or :data:`TOO_LATE`; records in the
        returned lists are ``[ts, seen index, payload]``; the expired ones are
        ``far_future``.
        """
        own, floor = self.own, self.floor  # c0 = self.value, inlined (the hot path)
        c0 = floor if own is None else own if floor is None or own > floor else floor
        if c0 is not None and ts < c0 - self.lateness_s:
            return TOO_LATE, [], []
        self.seen += 1
        q, win, srt = self.quorum, self.window, self._sorted
        win.append(ts)
        insort(srt, ts)
        if len(win) > 2 * q:
            del srt[bisect_left(srt, win.pop(0))]
        # only a record above ``own`` can raise the statistic above it
        if len(win) >= q and (own is None or ts > own):
            s = self._quorum_time()
            if s is not None and (own is None or s > own):
                self.own = own = s
        c = floor if own is None else own if floor is None or own > floor else floor
        held = self.held
        if c is not None and ts <= c + self.max_future_s:
            decision = ADMIT
        else:
            decision = HOLD
            held.append([ts, self.seen, payload])
        if not held:
            return decision, [], []
        released = self._release() if c != c0 else []
        expired = []
        while self.held and self.seen - self.held[0][1] >= q:
            expired.append(self.held.pop(0))
        return decision, released, expired

    def _quorum_time(self) -> float | None:
        """The largest T with ``quorum`` window records in [T, T + max_future_s], or None."""
        srt, q, span = self._sorted, self.quorum, self.max_future_s
        for i in range(len(srt) - q, -1, -1):
            if srt[i + q - 1] - srt[i] <= span:
                return srt[i]
        return None

    def raise_floor(self, ts: float) -> list[list[Any]]:
        """Apply a marker: the clock is at least ``ts``; return held records now admitted."""
        if self.floor is None or ts > self.floor:
            self.floor = ts
        return self._release()

    def _release(self) -> list[list[Any]]:
        c = self.value
        if c is None or not self.held:
            return []
        lim = c + self.max_future_s
        out = [h for h in self.held if h[0] <= lim]
        if out:
            self.held = [h for h in self.held if h[0] > lim]
        return out

    def to_json(self) -> dict[str, Any]:
        """Checkpoint state (the parameters come from the configuration)."""
        return {"window": list(self.window), "own": self.own, "floor": self.floor,
                "seen": self.seen, "held": self.held}


def global_clock(clocks: Sequence[float | None], partitions: int, *,
                 wall: float | None = None, max_future_s: float = math.inf) -> float | None:
    """The global clock: the ⌈N/2⌉-th largest partition clock (N = ``partitions``).

    Partitions without a clock (missing or None) count as behind every other, so the
    value exists only once ⌈N/2⌉ partitions have one. With ``wall`` (live), it is
    capped at ``wall + max_future_s``.
    """
    if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
        raise InvalidParameterError(f"partitions must be an integer >= 1, not {partitions!r}")
    vals = sorted((float(c) for c in clocks if c is not None), reverse=True)
    k = (partitions + 1) // 2
    if len(vals) < k:
        return None
    g = vals[k - 1]
    if wall is not None:
        g = min(g, wall + max_future_s)
    return g
