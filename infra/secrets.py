"""The pipeline's secret (keyed pseudonyms and replay-safe noise): where it comes from.

One rule for every process that pseudonymises or draws keyed noise — the worker, the
network connectors — so that the same device gets the same pseudonym on every path:
``--secret-file`` / ``OCCUSTREAM_SECRET_FILE`` or ``OCCUSTREAM_SECRET`` (≥ 16 bytes);
only demo mode falls back to the built-in development secret, loudly.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

from mechanisms.errors import ConfigError

log = logging.getLogger(__name__)

#: The built-in development secret of demo mode. Anyone with the source has it.
DEV_SECRET = b"occustream-dev-secret-NOT-FOR-PRODUCTION"


def load_secret(secret_file: str | None = None, *, demo: bool = False,
                env: Mapping[str, str] | None = None,
                hint: str = "(or run `occustream demo`)") -> bytes:
    """The secret, from a file, the environment, or (demo mode only) :data:`DEV_SECRET`.

    Raises:
        ConfigError: an unreadable or short secret, or none outside demo mode (the
            message ends with ``hint``).
    """
    env = os.environ if env is None else env
    path = secret_file or env.get("OCCUSTREAM_SECRET_FILE", "")
    if path:
        try:
            secret = Path(path).read_bytes().strip()
        except OSError as exc:
            raise ConfigError(f"secret file {path}: cannot read: {exc.strerror}") from None
        if len(secret) < 16:
            raise ConfigError(f"secret file {path}: the secret must have >= 16 bytes")
        return secret
    value = env.get("OCCUSTREAM_SECRET", "")
    if value:
        if len(value) < 16:
            raise ConfigError("OCCUSTREAM_SECRET must have >= 16 characters")
        return value.encode()
    if demo:
        log.warning(
            "!!! DEMO MODE: using the built-in development secret for pseudonyms and noise. "
            "Anyone with this source code can re-identify devices. Set OCCUSTREAM_SECRET "
            "or OCCUSTREAM_SECRET_FILE for real data. !!!"
        )
        return DEV_SECRET
    raise ConfigError(f"no secret: set OCCUSTREAM_SECRET or OCCUSTREAM_SECRET_FILE {hint}")
