"""Event clock (issue 14 B, C): valid events lost on a multi-day dbh replay with nights,
old clock (maximum event time per partition, ``occupancy.schema.EventClock``) against
the quorum clock (``occupancy.clock``, what the stream and the oracle run), and the
quorum clock's cost per record.

Partitions as the producer assigns them (murmur2 of the device key, 4 partitions).
"Lost" = valid events (the simulator's count) that do not count; for the quorum clock
the few still held at the end of the input (after the last final tick) are reported
separately. Seeds are stated; no timing is asserted anywhere.
"""

from __future__ import annotations

import collections
import time
from typing import Any

from aiokafka.partitioner import murmur2

from occupancy.buildings import load_site
from occupancy.clock import DEFAULT_QUORUM, PartitionClock
from occupancy.oracle import valid_observations
from occupancy.schema import EventClock, Observation, validate

N = 4


def _part(key: bytes | None) -> int:
    return (murmur2(key or b"") & 0x7FFFFFFF) % N


def run(quick: bool = False) -> dict[str, Any]:
    """Loss before/after per seed and the clock's per-record time."""
    from simulator import simulate

    site = load_site("dbh")
    out: dict[str, Any] = {"partitions": N, "quorum": DEFAULT_QUORUM, "days": 2, "seeds": {}}
    for seed in (3,) if quick else (3, 4, 5):
        sim = simulate("dbh", days=2, seed=seed)
        recs = list(sim.records())
        clocks = [EventClock(60.0, 3600.0) for _ in range(N)]
        reasons: collections.Counter[str] = collections.Counter()
        old_ok = 0
        for key, value, _ in recs:
            got = validate(value, site.ap_location, clocks[_part(key)])
            if isinstance(got, Observation):
                old_ok += 1
            else:
                reasons[got.reason] += 1
        obs, qclocks = valid_observations(
            [v for _, v, _ in recs], site.ap_location,
            partition_of=lambda o: _part(o.device.encode()), partitions=N)
        held = sum(len(c.held) for c in qclocks.values())
        out["seeds"][seed] = {"valid": sim.n_valid, "old_lost": sim.n_valid - old_ok,
                              "old_reasons": dict(reasons),
                              "quorum_lost": sim.n_valid - len(obs) - held,
                              "quorum_held_at_end": held}
        print(f"seed {seed}: valid {sim.n_valid}, old clock lost {sim.n_valid - old_ok} "
              f"{dict(reasons)}, quorum clock lost {sim.n_valid - len(obs) - held} "
              f"(held at end {held})")
    ts = [float(o.ts) for o in obs]
    per = []
    for _ in range(3 if quick else 7):
        c = PartitionClock(60.0, 3600.0)
        e = EventClock(60.0, 3600.0)
        t0 = time.perf_counter()
        for x in ts:
            c.offer(x, None)
        t1 = time.perf_counter()
        for x in ts:
            e.admit(x)
        t2 = time.perf_counter()
        per.append(((t1 - t0) / len(ts) * 1e6, (t2 - t1) / len(ts) * 1e6))
    per.sort()
    q_us, old_us = per[len(per) // 2]
    out["us_per_record"] = {"quorum": q_us, "old": old_us}
    print(f"per record (median of {len(per)}): quorum clock {q_us:.2f} µs, "
          f"old clock {old_us:.2f} µs")
    return out
