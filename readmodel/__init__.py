"""The Redis read model: its one writer and its one reader.

Layer 3 (docs/ARCHITECTURE.md): above the runtime, which reaches the writer only
through :class:`streams.runtime.ports.ReadModelSink`; below the dashboards.
"""
