"""The worker's daily occupancy cube: yesterday's (room × 5-minute slot) release.

Under the device-day unit the release stage keeps the day's true room counts per tick
(state ``cube-day`` in the occupancy checkpoint, like the other true counts there;
never published) and, at the first final tick of a later UTC day — i.e. once the event
clock (:mod:`occupancy.clock`, quorum) has passed midnight and every tick of the day is
final — releases that day's cube once with :func:`mechanisms.histograms.cube.release_cube`:

1. charge the day's ``histogram`` share of its :class:`~mechanisms.accounting.DayBudget`
   **before** any noise, with the release id (day, ``histogram``, ``daily-cube:tree``,
   the day's start): a replayed tick or a restarted worker finds it charged (the day's
   records are restored from ``day-budget`` first) and charges nothing new;
2. draw the noise from ``keyed_rng(secret, "daily-cube", day, "all")``, so a replay
   releases identical values;
3. return the public document (read model ``hist:{day}:daily-cube`` through
   ``readmodel.writer.queue_histogram``; ``/api/histogram/{day}``).

Design, sensitivity and measured figures: :mod:`mechanisms.histograms.cube`,
docs/device-day.md "The daily cube".
"""

from __future__ import annotations

import logging
import struct
import time
import zlib
from typing import Any

import numpy as np

from mechanisms import gaussian, hierarchical
from mechanisms.accounting import DEVICE_DAY_UNIT, DayBudget, zcdp_to_epsilon
from mechanisms.errors import InvalidParameterError
from mechanisms.histograms import cube
from mechanisms.noise import keyed_rng

log = logging.getLogger(__name__)

STATE = "cube-day"
#: read-model algorithm key: ``hist:{day}:daily-cube``
ALGORITHM_KEY = cube.MECHANISM
_HEAD = struct.Struct("<qqq")  # day, slots observed, leaves


class DailyCube:
    """Accumulates a day's room counts and releases the finished day once.

    Args:
        paths: the site's hierarchy (``Site.hierarchy()``); leaves in location order.
        locations: location ids (the leaves' order).
        rho: the histogram share's ρ per day.
        delta: the day's δ (for the published ε).
        ticks_per_day: slots per day; ticks_per_hour: slots per hour.
        max_slots: B, slots per device per day.
        tick_s: slot length in seconds.
        secret: key of the replay-safe noise.
    """

    def __init__(self, paths: tuple[tuple[str, ...], ...], locations: list[str], *,
                 rho: float, delta: float, ticks_per_day: int, ticks_per_hour: int,
                 max_slots: int, tick_s: float, secret: bytes) -> None:
        self.tree = hierarchical.tree_from_paths(paths)
        self.locations = list(locations)
        self.config = cube.CubeConfig(rho=rho, max_slots=max_slots, slots_per_day=ticks_per_day,
                                      slots_per_hour=ticks_per_hour)
        self.delta = delta
        self.tick_s = tick_s
        self._secret = secret
        self.rho = self.config.spent_rho(self.tree.height)

    def prepare(self) -> None:
        """Build the sampler's tables for this release's σ (no draw; seconds, once).

        The worker runs it in a thread when the occupancy stage loads, so the first
        release after midnight does not hold its event loop (heartbeats) for seconds.
        """
        for s in self.config.sigmas(self.tree.height):
            gaussian.prepare(float(s))

    # ---- state -----------------------------------------------------------------------
    def _load(self, raw: bytes | None) -> tuple[int | None, int, np.ndarray]:
        n, t = len(self.locations), self.config.slots_per_day
        if not raw:
            return None, 0, np.zeros((t, n), dtype=np.int32)
        day, seen, leaves = _HEAD.unpack_from(raw)
        arr = np.frombuffer(zlib.decompress(raw[_HEAD.size:]), "<i4")
        if leaves != n or arr.size != t * n:
            raise InvalidParameterError(f"{STATE} must hold {t}×{n} counts, not {arr.size}")
        return int(day), int(seen), arr.reshape(t, n).copy()

    @staticmethod
    def _dump(day: int, seen: int, counts: np.ndarray) -> bytes:
        return _HEAD.pack(day, seen, counts.shape[1]) + zlib.compress(
            np.ascontiguousarray(counts, "<i4").tobytes(), 1)

    # ---- per tick ----------------------------------------------------------------------
    def step(self, k: int, counts: np.ndarray, state: bytes | None, budget: DayBudget
             ) -> tuple[bytes, dict[str, Any] | None, dict[str, Any] | None]:
        """Add tick ``k``'s room counts; release a finished earlier day first.

        Returns ``(new state, cube document or None, ledger record dict if charged now)``.
        """
        t = self.config.slots_per_day
        day, slot = divmod(int(k), t)
        held, seen, acc = self._load(state)
        doc = rec = None
        if held is not None and held < day:  # the clock passed the held day's midnight
            doc, rec = self.release(held, seen, acc, budget)
            seen, acc = 0, np.zeros_like(acc)
        elif held is not None and held > day:  # cannot happen: ticks are final in order
            return state or b"", None, None
        acc[slot] = np.asarray(counts, dtype=np.int64)
        return self._dump(day, seen + 1, acc), doc, rec

    def release(self, day: int, seen: int, acc: np.ndarray, budget: DayBudget
                ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """Charge the day (before noise, once per release id) and release its cube."""
        start = int(day * self.config.slots_per_day * self.tick_s)
        l1, l2 = cube.sensitivity(self.config.max_slots)
        n = len(budget.records)
        rec = budget.charge(
            day=day, share="histogram", mechanism=cube.ledger_label(self.config), rho=self.rho,
            tick=start,
            n_locations=int(acc.size), sensitivity=l2,
            note=(f"daily cube ({self.config.algorithm}) of day {day}, released once after "
                  f"its midnight: B={self.config.max_slots} slots per device-day, L1 {l1:g}, "
                  f"L2 {l2:.4g}"))
        charged = len(budget.records) > n
        log.info("daily cube: day %d %s (%d of %d slots observed)", day,
                 "charged" if charged else "already charged (replay)", seen,
                 self.config.slots_per_day)
        rel = cube.release_cube(acc, self.tree, self.config, day=day, budget=None,
                                rng=keyed_rng(self._secret, cube.MECHANISM, day, "all"))
        return self.document(day, seen, rel, rec.release_id), (rec.to_dict() if charged
                                                                else None)

    def document(self, day: int, seen: int, rel: cube.CubeRelease, release_id: str
                 ) -> dict[str, Any]:
        """The public release: hourly profiles with error bars, the cube, parameters."""
        names = list(self.tree.names)  # internal nodes: "building", "building/floor"
        for j, leaf in enumerate(self.tree.leaves):  # leaves: the location ids
            names[int(leaf)] = self.locations[j]
        l1, l2 = cube.sensitivity(self.config.max_slots)
        start = day * self.config.slots_per_day * self.tick_s
        return {
            "kind": "daily-cube", "algorithm": rel.algorithm,
            "day": time.strftime("%Y-%m-%d", time.gmtime(start)), "day_index": int(day),
            "unit": DEVICE_DAY_UNIT, "release_id": release_id,
            "slot_s": self.tick_s, "slots": self.config.slots_per_day,
            "slots_observed": int(seen), "hours": rel.hourly.shape[0],
            "locations": self.locations,
            "nodes": names, "depth": [int(d) for d in self.tree.depth],
            "hourly": {nm: [round(float(v), 2) for v in rel.hourly[:, i]]
                       for i, nm in enumerate(names)},
            "hourly_sd": {nm: round(float(rel.hourly_sd[i]), 3) for i, nm in enumerate(names)},
            "cube": [[round(float(v), 1) for v in row] for row in rel.cube],
            "sigma": [round(float(s), 4) for s in rel.sigmas],
            "level_weights": list(self.config.level_weights),
            "max_slots": self.config.max_slots, "sensitivity": {"l1": l1, "l2": l2},
            "rho": self.rho, "delta": self.delta,
            "epsilon_alone": zcdp_to_epsilon(self.rho, self.delta),
            "noise": "discrete Gaussian (exact), keyed per day",
            "values": "hourly: mean occupancy per hour and node, consistent, ≥ 0 "
                      "(hourly_sd: σ after least squares, before non-negativity); cube: "
                      "least-squares value per room and slot (unbiased, may be < 0)",
        }
