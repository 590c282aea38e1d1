"""Simulator benchmarks: generation rate (to a JSONL file), delivery rate to the embedded
Tansu broker (aiokafka send_batch vs kafka-python send() as the baseline), and one
simulated week of dbh (event count, peak occupancy, wall time).

Figures are medians over repeats; ``quick`` uses smaller inputs and fewer repeats.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from infra.services import EmbeddedKafka, create_topics
from simulator import Scenarios, simulate
from simulator.kafka import produce


def _median_rate(fn, repeats: int) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    rates, n = [], 0
    for i in range(repeats):
        t0 = time.perf_counter()
        n = fn(i)
        rates.append(n / (time.perf_counter() - t0))
    return statistics.median(rates), n


def run(quick: bool = False) -> dict:
    repeats = 3 if quick else 5
    days = 0.5 if quick else 2.0
    out: dict = {}
    scen = Scenarios(malformed_rate=0.001)

    with tempfile.TemporaryDirectory() as tmp:
        def to_file(i: int) -> int:
            sim = simulate("dbh", days=days, seed=100 + i, scenarios=scen)
            sim.write_jsonl(Path(tmp) / f"b{i}.jsonl", presence=False)
            return len(sim)

        rate, n = _median_rate(to_file, repeats)
        out["file_events"] = n
        out["file_events_per_s"] = round(rate)

    def generate(i: int) -> int:
        return len(simulate("dbh", days=days, seed=200 + i, scenarios=scen))

    rate, _ = _median_rate(generate, repeats)
    out["generate_only_events_per_s"] = round(rate)


    records = list(simulate("dbh", days=days, seed=7, scenarios=scen).records())
    out["broker_events"] = len(records)
    broker = EmbeddedKafka().start()
    try:
        for engine, reps in (("aiokafka", repeats), ("kafka-python", 1 if quick else 3)):
            def deliver(i: int, engine: str = engine) -> int:
                topic = f"bench.{engine}.{i}"
                create_topics(broker.bootstrap, {topic: 4})
                return produce(records, broker.bootstrap, topic, engine=engine)

            rate, _ = _median_rate(deliver, reps)
            out[f"broker_events_per_s_{engine}"] = round(rate)
    finally:
        broker.stop()
    out["broker_speedup_vs_kafka_python"] = round(
        out["broker_events_per_s_aiokafka"] / out["broker_events_per_s_kafka-python"], 1)

    # one simulated week of dbh (one day in quick mode)
    week_days = 1 if quick else 7
    t0 = time.perf_counter()
    sim = simulate("dbh", days=week_days, seed=7, scenarios=scen)
    out["week_days"] = week_days
    out["week_wall_s"] = round(time.perf_counter() - t0, 2)
    out["week_events"] = len(sim)
    out["week_devices"] = sim.truth["n_devices"]
    t0 = time.perf_counter()
    occ = sim.occupancy(300)  # the vectorised path (equal to the oracle; tested)
    out["week_occupancy_fast_wall_s"] = round(time.perf_counter() - t0, 2)
    if not quick:
        t0 = time.perf_counter()
        sim.occupancy(300, method="oracle")
        out["week_occupancy_oracle_wall_s"] = round(time.perf_counter() - t0, 2)
    total = occ.counts.sum(axis=1)
    out["week_peak_building_occupancy"] = int(total.max())
    out["week_peak_location_occupancy"] = int(occ.counts.max())
    cap = np.array(sim.site.capacities)
    out["week_peak_location_ratio_to_capacity"] = round(float((occ.counts / cap).max()), 2)
    ts = np.array([e["ts"] for e in sim.events() if isinstance(e.get("ts"), float)])
    day = ((ts - sim.start_ts) // 86_400).astype(int)
    per_day = np.bincount(day[(day >= 0) & (day < week_days)], minlength=week_days)
    out["week_events_per_day"] = per_day.tolist()

    if not quick:
        t0 = time.perf_counter()
        campus = simulate("campus", days=1, seed=7, scenarios=scen)
        dt = time.perf_counter() - t0
        out["campus_day_events"] = len(campus)
        out["campus_day_wall_s"] = round(dt, 2)
        out["campus_day_events_per_s"] = round(len(campus) / dt)
    return out
