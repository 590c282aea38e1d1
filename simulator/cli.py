"""``occustream simulate`` — simulate WiFi connectivity events of a building.

Examples::

    occustream simulate --building dbh --days 1 --seed 7 --out x.jsonl
    occustream simulate --building campus --days 1 --out campus.jsonl
    occustream simulate --kafka localhost:9092 --speed 600        # 10 sim-min per second
    occustream simulate --days 7 --max-rate 5000                  # embedded broker, paced

Without ``--out`` the events go to Kafka (``--kafka``, else ``$KAFKA_BOOTSTRAP``, else
an embedded broker started for the run).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from mechanisms.errors import InvalidParameterError, check_positive
from simulator.kafka import add_kafka_arguments, kafka_target, produce, quiet_kafka_logs
from simulator.simulation import SCENARIO_NAMES, Scenarios, simulate


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows defaults, except empty ones and those the help text already states."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.default is None or action.default is False or "default" in text:
            return text
        return super()._get_help_string(action)


def check_pacing(args: argparse.Namespace) -> None:
    """Reject a bad ``--speed``/``--max-rate`` before any simulation or Kafka connection."""
    for option, value in (("--speed", args.speed), ("--max-rate", args.max_rate)):
        if value is not None:
            check_positive(option, value)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also used by the docs)."""
    ap = argparse.ArgumentParser(
        prog="occustream simulate",
        description=(
            "Simulate the WiFi connectivity events (SNMP-trap-like: association, periodic "
            "re-association, roaming) of a building's population — students, faculty, "
            "staff, visitors — over simulated days, with injectable scenarios. "
            "Write them to a JSONL file (plus a ground-truth sidecar) or send them to Kafka."
        ),
        epilog=(
            "Same seed and arguments give byte-identical output. Scenarios: "
            "overcapacity (crowds above fire-code capacity at known times), broken_ap "
            "(an AP stops reporting), weekly_meeting (same people every Tuesday 10:00), "
            "malformed (bad records for the dead-letter topic, at --malformed-rate). "
            "Where and when each happened is in the truth sidecar."
        ),
        formatter_class=HelpFormatter,
    )
    ap.add_argument("--building", default="dbh",
                    help="building name (dbh, campus) or path to a buildings/*.json file")
    ap.add_argument("--days", type=float, default=7.0, help="simulated days (fractions allowed)")
    ap.add_argument("--seed", type=int, default=0, help="random seed")
    ap.add_argument("--start", default="2026-01-05T00:00",
                    help="first simulated instant (ISO; building local time = UTC; "
                         "2026-01-05 is a Monday)")
    ap.add_argument("--scale", type=float, default=1.0, help="population multiplier")
    ap.add_argument("--scenarios", default="all",
                    help=f"comma-separated from {','.join(SCENARIO_NAMES)}, or all / none")
    ap.add_argument("--malformed-rate", type=float, default=0.001,
                    help="share of extra malformed records (with the malformed scenario)")
    out = ap.add_argument_group("output (a file, or else Kafka)")
    out.add_argument("--out", help="write JSONL here (truth in <name>.truth.json)")
    out.add_argument("--no-presence", action="store_true",
                     help="leave the per-stay presence intervals out of the truth sidecar")
    add_kafka_arguments(out)
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    return ap


def main(argv: list[str] | None = None) -> int:
    """Run ``occustream simulate``; return the exit code."""
    args = build_parser().parse_args(argv)
    quiet_kafka_logs()
    check_pacing(args)
    if args.out and (args.kafka or args.speed or args.max_rate):
        raise InvalidParameterError("--out writes a file; --kafka/--speed/--max-rate are for "
                                    "Kafka output (use occustream replay to send a file)")
    if args.out and not Path(args.out).resolve().parent.is_dir():
        raise InvalidParameterError(f"--out must be in an existing folder, not {args.out!r}")
    names = [n for n in args.scenarios.split(",") if n.strip() not in ("", "none")]
    scen = Scenarios.from_names(names, malformed_rate=args.malformed_rate)
    progress = not args.quiet
    t0 = time.perf_counter()
    sim = simulate(args.building, days=args.days, seed=args.seed, start=args.start,
                   scenarios=scen, scale=args.scale, progress=progress)
    n_mal = len(sim.truth["malformed"])
    if args.out:
        truth = sim.write_jsonl(args.out, presence=not args.no_presence, progress=progress)
        print(f"wrote {len(sim)} events ({n_mal} malformed) from {sim.truth['n_devices']} "
              f"devices to {args.out}; ground truth in {truth} "
              f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
        return 0
    with kafka_target(args.kafka, args.topic) as bootstrap:
        n = produce(sim.records(), bootstrap, args.topic, speed=args.speed,
                    max_rate=args.max_rate, engine=args.engine, progress=progress,
                    total=len(sim))
    print(f"sent {n} events ({n_mal} malformed) to {args.topic} at {bootstrap} "
          f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    return 0
