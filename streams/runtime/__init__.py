"""The streaming runtime's parts, each small; :mod:`streams.app` hosts them in Faust.

* :mod:`~streams.runtime.ports` — what the runtime needs from the layers above it (the
  read-model sink), as a protocol: the runtime never imports them.
* :mod:`~streams.runtime.checkpoint` — the internal state store: stage checkpoints
  (compare-and-set, never backwards) and the internal ex-post ledger.
* :mod:`~streams.runtime.output` — the output producer (send, then wait for the broker).
* :mod:`~streams.runtime.presence` — observe + presence per input partition.
* :mod:`~streams.runtime.ingest` — the batched consumer group feeding presence.
* :mod:`~streams.runtime.occupancy` — final ticks, releases, idle-partition markers.
* :mod:`~streams.runtime.health` — the health line and its Prometheus text.
* :mod:`~streams.runtime.pipeline` — one worker's runtime: the parts above, composed.
"""
