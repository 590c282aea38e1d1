"""The pipeline's stages as plain, Kafka-free state machines; :mod:`streams.runtime` runs them.

* :mod:`streams.pipeline.presence` — observe + presence for one input partition:
  validation, pseudonyms, per-device presence, partial counts per final tick.
* :mod:`streams.pipeline.occupancy` — sums the partials of all partitions per tick,
  finalises ticks and drives the release agents.
* :mod:`streams.pipeline.release` — the release mechanisms and MIDE alerts per tick.
* :mod:`streams.pipeline.checkpoint` — the state snapshots that make the stages
  exactly-once on an at-least-once log.
"""
