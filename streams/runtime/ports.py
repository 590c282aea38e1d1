"""What the runtime writes to the layers above it, as protocols (dependency inversion).

The runtime sits below the read model (docs/ARCHITECTURE.md): it releases ticks but
must not import the code that stores them for analysts. The worker's composition
root (:mod:`occustream.worker`) passes a :class:`ReadModelSink` factory in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from occupancy.buildings import Site
from streams.pipeline.release import TickOutput
from streams.settings import Settings


class ReadModelSink(Protocol):
    """The analysts' read model as the runtime sees it (idempotent writes)."""

    async def write_meta(self, metas: Mapping[str, Mapping[str, Any]]) -> None:
        """Publish each mechanism's public parameters."""

    async def write_tick(self, out: TickOutput, true_counts: Sequence[int] | None = None) -> None:
        """Write one final tick (releases, baselines, ledger, alerts) exactly once."""

    async def write_dlq_counts(self, app_id: str, partition: int,
                               counts: Mapping[str, int]) -> None:
        """Absolute dead-letter counters of one input partition."""

    async def write_health(self, app_id: str, worker: str, health: Mapping[str, Any]) -> None:
        """One worker's health line."""

    async def aclose(self) -> None:
        """Release the connection."""


#: Builds the read-model sink of a worker from its settings and site.
SinkFactory = Callable[[Settings, Site], ReadModelSink]
