"""Generator resolution for MIDE: ``rng=None`` means the project's CSPRNG-seeded generator."""

from __future__ import annotations

import secrets

import numpy as np

try:  # the project's generator (mechanisms/noise.py); fallback keeps MIDE importable alone
    from mechanisms.noise import default_rng as _project_default_rng
except ImportError:  # pragma: no cover - only while noise.py is not in the tree

    def _project_default_rng() -> np.random.Generator:
        return np.random.Generator(
            np.random.PCG64(np.random.SeedSequence(secrets.randbits(256)))
        )


def resolve_rng(rng: np.random.Generator | None) -> np.random.Generator:
    """Return ``rng``, or a fresh CSPRNG-seeded generator when it is None."""
    return _project_default_rng() if rng is None else rng
