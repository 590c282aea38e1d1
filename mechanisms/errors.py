"""The project's one exception hierarchy.

It lives at the root of the dependency graph (``mechanisms`` is imported by every
other package and imports none of them), so every package raises these.
Each class mixes the project base into the matching builtin, so callers can catch
either ``OccustreamError`` or the builtin they already expect.
"""

from __future__ import annotations


class OccustreamError(Exception):
    """Base class of every error occustream raises on purpose."""


class InvalidParameterError(OccustreamError, ValueError):
    """A parameter or input value is out of its allowed range or of the wrong type."""


class ConfigError(OccustreamError, ValueError):
    """Configuration (env, CLI or config file) is invalid; the message says what to fix."""


class BuildingModelError(OccustreamError, ValueError):
    """A building description file is invalid; the message names the file and the field."""


class ServiceError(OccustreamError, RuntimeError):
    """An embedded or external service (Kafka, Redis) could not be started or reached."""


class BudgetExhaustedError(OccustreamError, RuntimeError):
    """A release would spend more privacy budget than remains.

    Attributes:
        requested: the ε the release asked for.
        remaining: the ε left in the scope.
        scope: the budget scope that refused.
    """

    def __init__(self, requested: float, remaining: float, scope: str = "") -> None:
        self.requested = float(requested)
        self.remaining = float(remaining)
        self.scope = scope
        where = f" in scope {scope!r}" if scope else ""
        super().__init__(
            f"privacy budget exhausted{where}: requested ε={self.requested:g}, "
            f"remaining ε={self.remaining:g}"
        )


def check_positive(name: str, value: float) -> float:
    """Return ``value`` as float if it is finite and > 0, else raise InvalidParameterError."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"{name} must be a positive number, not {value!r}") from None
    if not (v > 0 and v < float("inf")):
        raise InvalidParameterError(f"{name} must be a positive finite number, not {value!r}")
    return v


def check_probability(name: str, value: float, *, open_interval: bool = True) -> float:
    """Return ``value`` as float if it lies in (0, 1) (or [0, 1]), else raise."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"{name} must be a probability, not {value!r}") from None
    ok = (0 < v < 1) if open_interval else (0 <= v <= 1)
    if not ok:
        rng = "(0, 1)" if open_interval else "[0, 1]"
        raise InvalidParameterError(f"{name} must be in {rng}, not {value!r}")
    return v
