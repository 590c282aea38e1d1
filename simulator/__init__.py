"""Access-point simulator: building population model, event generator, Kafka producer, replay.

Python API (see :mod:`simulator.simulation`)::

    from simulator import simulate, Scenarios
    sim = simulate("dbh", days=7, seed=7)
    sim.events()        # iterator of {"device", "ap", "ts", "rssi"} dicts, arrival order
    sim.truth           # injected scenarios, malformed record indices, parameters
    sim.occupancy(300)  # true occupancy (occupancy.oracle.occupancy_oracle)

    from simulator.kafka import produce
    produce(sim.records(), bootstrap, topic="wifi.observations", speed=None, max_rate=None)
"""

from simulator.simulation import (
    DEFAULT_START,
    SCENARIO_NAMES,
    Scenarios,
    Simulation,
    simulate,
    truth_path_for,
)

__all__ = [
    "DEFAULT_START",
    "SCENARIO_NAMES",
    "Scenarios",
    "Simulation",
    "simulate",
    "truth_path_for",
]
