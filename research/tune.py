"""``occustream tune`` — the ε (or TTL) a utility target needs (thesis §4.6.2, Table 4.2).

The search and the table are in :mod:`research.tuning`; the data and the evaluators
in :mod:`research.evaluate`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mechanisms.errors import InvalidParameterError
from research import evaluate as ev
from research.evaluate import add_data_arguments
from research.report import write_table
from research.tuning import rows_table


def build_parser() -> argparse.ArgumentParser:
    """CLI of ``occustream tune``."""
    p = argparse.ArgumentParser(
        prog="occustream tune",
        description="Find the ε (or TTL) each mechanism needs for a utility target, day and "
        "night separately, over repeated runs on simulated data (thesis Table 4.2).",
    )
    add_data_arguments(p)
    p.add_argument(
        "--mechanisms",
        default="laplace,pegasus,ttl",
        help="comma list from laplace, pegasus, pegasus-median, pegasus-js, pegasus-post, "
        "pegasus-filter, hierarchical, hpegasus-filter, ttl (default laplace,pegasus,ttl)",
    )
    p.add_argument("--targets", default="0.75,0.9", help="utility targets (default 0.75,0.9)")
    p.add_argument(
        "--utility",
        default="colour",
        help="colour (heatmap colour agreement, default) or a task: exceed, "
        "night_region, broken_sensor, weekly_event",
    )
    p.add_argument("--runs", type=int, default=5, help="runs per parameter (default 5)")
    p.add_argument("--out", type=Path, default=Path("out/tune"), help="output folder")
    p.add_argument("--format", choices=("html", "md"), default="html", help="report format")
    return p


def main(argv: list[str]) -> int:
    """Entry point of ``occustream tune``."""
    args = build_parser().parse_args(argv)
    targets = [float(t) for t in args.targets.split(",") if t]
    for t in targets:
        if not 0 < t <= 1:
            raise InvalidParameterError(f"targets must be in (0, 1], not {t!r}")
    mechs = ev.parse_mechanisms(args.mechanisms)
    ev.check_utility(args.utility)  # before the simulation
    data = ev.data_from_args(args)
    rows = ev.tune_table(data, mechs, targets, runs=args.runs, utility=args.utility)
    path = ev.write_tune_report(rows, data, args.out, args.format, utility=args.utility)
    headers, body = rows_table(rows)
    write_table(headers, body, f"report: {path}")
    return 0
