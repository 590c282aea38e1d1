"""occupancy: sum the partials of every presence partition into final true counts.

Each presence partition emits, per tick it considers final, its partial count
vector and the first tick it reports (before that its devices are not present, so
its partials are implicitly zero). A tick ``t`` is final overall when every partition
has announced itself and each has either sent its partial for ``t`` or starts after
``t`` — i.e. when ``t`` is below the minimum of the partitions' watermarks. Ticks are
finalised in order, each exactly once; duplicate partials (replays) are ignored.

The state is small (pending partials of the few ticks not yet final) and is
checkpointed with the offset of ``occupancy.partial`` it incorporates, like
:class:`~streams.pipeline.presence.PartitionState`.
"""

from __future__ import annotations

import base64
import json
import math
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class FinalTick:
    """True occupancy at one final tick (internal: never published as is)."""

    tick: float
    counts: list[int]
    ttl: list[int]
    wall: float = 0.0  # wall time the last partition's watermark passed the tick


@dataclass
class OccupancyState:
    """State of the occupancy stage (JSON-serialisable).

    Attributes:
        offset: last ``occupancy.partial`` offset incorporated (−1: none).
        partitions: number of presence partitions (from the partials).
        first: partition → first tick it reports.
        pending: tick → partition → [counts, ttl counts].
        next_tick: the next tick to finalise (None until every partition announced).
        mech: opaque per-mechanism release state (base64 of its bytes).
        released: number of ticks finalised so far.
    """

    offset: int = -1
    partitions: int | None = None
    first: dict[str, float] = field(default_factory=dict)
    pending: dict[str, dict[str, list[list[int]]]] = field(default_factory=dict)
    next_tick: float | None = None
    mech: dict[str, str] = field(default_factory=dict)
    released: int = 0
    max_ts: dict[str, float] = field(default_factory=dict)
    wall: dict[str, float] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        """Compressed JSON snapshot."""
        return zlib.compress(json.dumps(self.__dict__, separators=(",", ":")).encode(), 1)

    @classmethod
    def from_bytes(cls, data: bytes) -> OccupancyState:
        """Inverse of :meth:`to_bytes`."""
        return cls(**json.loads(zlib.decompress(data)))

    def get_mech(self, name: str) -> bytes | None:
        """A release mechanism's stored state."""
        v = self.mech.get(name)
        return None if v is None else base64.b64decode(v)

    def set_mech(self, name: str, data: bytes) -> None:
        """Store a release mechanism's state."""
        self.mech[name] = base64.b64encode(data).decode()

    def process(self, records: Iterable[tuple[int, bytes]], tick_s: float) -> list[FinalTick]:
        """Incorporate ``(offset, value)`` partial records; return the ticks now final."""
        for off, raw in records:
            if off <= self.offset:
                continue
            self.offset = off
            parsed = _parse_partial(raw)
            if parsed is None:
                continue  # not ours; partials are produced only by the presence stage
            tick, p, n, first, counts, ttl, max_ts, wall = parsed
            if self.partitions is None:
                self.partitions = n
            self.max_ts[p] = max(self.max_ts.get(p, 0.0), max_ts)
            self.first.setdefault(p, first)
            if self.next_tick is not None and tick < self.next_tick:
                continue  # a replayed partial of a tick already final
            slot = self.pending.setdefault(_k(tick), {})
            slot.setdefault(p, [counts, ttl])  # first one wins (replays are identical)
            self.wall[_k(tick)] = max(self.wall.get(_k(tick), 0.0), wall)
        return self._finalise(tick_s)

    def blocking(self) -> list[int]:
        """Partitions the next tick waits for (none announced yet counts as waiting)."""
        if self.partitions is None:
            return []
        missing = [p for p in range(self.partitions) if str(p) not in self.first]
        if missing or self.next_tick is None:
            return missing
        slot = self.pending.get(_k(self.next_tick), {})
        return [int(p) for p, f in self.first.items() if self.next_tick >= f and p not in slot]

    def _finalise(self, tick_s: float) -> list[FinalTick]:
        if self.partitions is None or len(self.first) < self.partitions:
            return []
        if self.next_tick is None:
            self.next_tick = min(self.first.values())
        out = []
        while True:
            t = self.next_tick
            slot = self.pending.get(_k(t), {})
            parts = []
            for p, first in self.first.items():
                if t < first:
                    continue
                if p not in slot:
                    return out
                parts.append(slot[p])
            n_loc = max((len(c) for c, _ in parts), default=0)
            counts = [0] * n_loc
            ttl = [0] * n_loc
            for c, tt in parts:
                for i, v in enumerate(c):
                    counts[i] += v
                for i, v in enumerate(tt):
                    ttl[i] += v
            out.append(FinalTick(t, counts, ttl if any(len(tt) for _, tt in parts) else [],
                                 self.wall.pop(_k(t), 0.0)))
            self.pending.pop(_k(t), None)
            self.next_tick = t + tick_s
            self.released += 1


def _ints(v: Any) -> list[int] | None:
    if not isinstance(v, list) or not all(
            isinstance(x, int) and not isinstance(x, bool) for x in v):
        return None
    return v


def _parse_partial(
    raw: Any,
) -> tuple[float, str, int, float, list[int], list[int], float, float] | None:
    """The fields of a partial record, or None for anything malformed (never raises)."""
    try:  # no size limit here: a big site's partial may pass schema.MAX_RECORD_BYTES
        rec = json.loads(raw)
    except (ValueError, TypeError, RecursionError):
        return None
    if not isinstance(rec, dict):
        return None
    try:
        tick, first = float(rec["tick"]), float(rec["first_tick"])
        part, n = rec["partition"], rec["partitions"]
        max_ts, wall = float(rec.get("max_ts") or 0.0), float(rec.get("wall") or 0.0)
    except (KeyError, TypeError, ValueError, OverflowError):
        return None
    counts, ttl = _ints(rec.get("counts")), _ints(rec.get("ttl") or [])
    if (counts is None or ttl is None or isinstance(part, bool) or isinstance(n, bool)
            or not isinstance(part, int) or not isinstance(n, int) or not 0 <= part < n
            or not all(math.isfinite(x) for x in (tick, first, max_ts, wall))):
        return None
    return tick, str(part), n, first, counts, ttl, max_ts, wall


def _k(tick: float) -> str:
    return repr(float(tick))
