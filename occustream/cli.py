"""``occustream`` — the one command-line entry point.

Each sub-command lives in the package that owns it and is imported only when run,
so ``occustream --help`` is fast and one broken extra never breaks the others.
A sub-command module exposes ``main(argv: list[str]) -> int``.
Errors the project raises on purpose (:class:`~mechanisms.errors.OccustreamError`)
end the program with exit code 2 and one line on stderr that says what to fix.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from typing import NoReturn

from mechanisms.errors import OccustreamError

#: sub-command → (module, one-line summary)
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("occustream.demo", "simulator → pipeline → live dashboard on embedded services"),
    "worker": ("occustream.worker", "run one pipeline worker (several share the partitions)"),
    "simulate": ("simulator.cli", "simulate WiFi connectivity events for a building"),
    "replay": ("simulator.replay", "send a JSONL event file to Kafka"),
    "ingest": ("connectors.cli", "receive a network's events (Meraki, Spaces, syslog, RADIUS)"),
    "buildings": ("occustream.buildings_cli", "import a building model from a CSV of APs"),
    "services": ("occustream.services_cli",
                 "start the embedded Kafka and Redis and print their URLs"),
    "dashboard": ("dashboards.app", "serve the live heatmap, alerts and privacy views"),
    "alerts": ("dashboards.subscribers", "follow fire-code alerts in the terminal"),
    "evaluate": ("research.evaluate", "compare release mechanisms on simulated data"),
    "mide-eval": ("research.mide_eval", "MIDE threshold-query experiments (thesis ch. 5-6)"),
    "device-day-eval": ("research.device_day_eval",
                        "compare device-day, event-level and w-event releases at equal (ε, δ)"),
    "histogram": ("research.histogram", "DP histogram release and evaluation (SORTaki)"),
    "audit": ("research.audit", "what an attacker learns from each mechanism"),
    "tune": ("research.tune", "find the ε (or TTL) a utility target needs"),
    "game-report": ("research.game_report",
                    "IoT-DETECTIVE: accuracy per task and ε from the traces of play"),
    "reproduce": ("research.reproduce", "thesis / SORTaki tables and figures: paper vs ours"),
    "bench": ("bench.__main__", "run the benchmarks and print their figures"),
}


def _usage() -> str:
    width = max(len(c) for c in COMMANDS)
    lines = [
        "usage: occustream COMMAND [options]   (occustream COMMAND --help for details)",
        "",
        "Streaming occupancy analytics for smart buildings under differential privacy.",
        "",
        "commands:",
    ]
    lines += [f"  {name:<{width}}  {summary}" for name, (_, summary) in COMMANDS.items()]
    return "\n".join(lines)


def _one_line_error(self: argparse.ArgumentParser, message: str) -> NoReturn:
    """Print an argparse error as one line on stderr (the usage is in ``--help``), exit code 2."""
    self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def main(argv: list[str] | None = None) -> int:
    """Dispatch to a sub-command; return its exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in {"-h", "--help", "help"}:
        print(_usage(), file=sys.stdout if argv else sys.stderr)  # no command: a usage error
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"occustream: unknown command {name!r}; try one of: {', '.join(COMMANDS)}",
              file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    module_name = COMMANDS[name][0]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            print(f"occustream: {name} is not available in this build ({module_name} missing)",
                  file=sys.stderr)
            return 2
        raise
    default_error = argparse.ArgumentParser.error
    argparse.ArgumentParser.error = _one_line_error  # type: ignore[method-assign]
    try:
        return int(module.main(rest) or 0)
    except OccustreamError as exc:
        print(f"occustream {name}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"occustream {name}: interrupted", file=sys.stderr)
        return 130
    finally:
        argparse.ArgumentParser.error = default_error  # type: ignore[method-assign]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
