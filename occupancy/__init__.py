"""The shared occupancy domain: buildings, schema, clock, oracle, key layout, colours.

Layer 1 (docs/ARCHITECTURE.md): pure Python/numpy, imports only :mod:`mechanisms`. The
simulator, the streaming runtime, the read model, the dashboards and the research
tools all share it.
"""
