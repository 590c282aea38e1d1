"""``occustream buildings``: import / export the building model, Meraki skeleton (the CLI).

The conversion itself (CSV → building JSON, export, Meraki floor-plan skeleton) is
:mod:`connectors.buildings_import`; this module reads files, writes results and reports
problems on stderr with an exit code.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from connectors.buildings_import import (
    CsvImportError,
    export_csv,
    import_csv,
    skeleton_from_meraki_floorplans,
)


def _write(out: dict[str, Any], path: str | None) -> None:
    text = json.dumps(out, indent=1) + "\n"
    if path in (None, "-"):
        sys.stdout.write(text)
    else:
        Path(path).write_text(text)


def _build_parser() -> argparse.ArgumentParser:
    """The ``occustream buildings`` parser: ``import``, ``skeleton`` and ``export``."""
    parser = argparse.ArgumentParser(prog="occustream buildings",
                                     description="Import or export the building model.")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("import", help="building JSON from a CSV of APs and rooms")
    p.add_argument("csv", help="the CSV file (- for stdin); columns in docs/CONNECT.md")
    p.add_argument("-o", "--output", help="output JSON (default: stdout); put it in "
                                          "buildings/ or $OCCUSTREAM_BUILDINGS")
    p.add_argument("--id", help="site id (several buildings: campus id, default 'site')")
    p.add_argument("--name", help="site display name")
    p = sub.add_parser("skeleton", help="a CSV to complete from a Meraki floor-plan listing")
    p.add_argument("--meraki-floorplans", required=True,
                   help="JSON saved from GET /networks/{networkId}/floorPlans")
    p.add_argument("--building", required=True, help="building id for the rows")
    p.add_argument("-o", "--output", help="output CSV (default: stdout)")
    p = sub.add_parser("export", help="the CSV of a building JSON (to edit and re-import)")
    p.add_argument("json", help="a building JSON file")
    p.add_argument("-o", "--output", help="output CSV (default: stdout)")
    return parser


def _write_text(text: str, path: str | None) -> None:
    """``text`` to ``path``, or to stdout when no path is given."""
    if path:
        Path(path).write_text(text)
    else:
        sys.stdout.write(text)


#: a subcommand's result: exit code and the lines for stderr (printed by :func:`main`)
Outcome = tuple[int, list[str]]


def _skeleton(args: argparse.Namespace) -> Outcome:
    """``occustream buildings skeleton``."""
    try:
        plans = json.loads(Path(args.meraki_floorplans).read_text())
    except (OSError, ValueError) as exc:
        return 2, [f"occustream buildings skeleton: {args.meraki_floorplans}: {exc}"]
    _write_text(skeleton_from_meraki_floorplans(plans, args.building), args.output)
    return 0, []


def _export(args: argparse.Namespace) -> Outcome:
    """``occustream buildings export``."""
    _write_text(export_csv(json.loads(Path(args.json).read_text())), args.output)
    return 0, []


def _import(args: argparse.Namespace) -> Outcome:
    """``occustream buildings import`` (exit 2 with one stderr line per problem)."""
    src = args.csv
    try:
        text = sys.stdin.read() if src == "-" else Path(src).read_text(encoding="utf-8-sig")
    except OSError as exc:
        return 2, [f"occustream buildings import: {src}: cannot read: {exc.strerror}"]
    try:
        out = import_csv(text, src, site_id=args.id, site_name=args.name)
    except CsvImportError as exc:
        return 2, list(exc.errors)
    _write(out, args.output)
    n_loc = sum(len(b["locations"]) for b in out.get("buildings", [out]))
    n_ap = sum(len(b["aps"]) for b in out.get("buildings", [out]))
    return 0, [f"imported {n_loc} rooms and {n_ap} access points"
               + (f" → {args.output}" if args.output else "")]


def main(argv: Iterable[str] | None = None) -> int:
    """``occustream buildings import CSV`` / ``skeleton --meraki-floorplans`` / ``export``."""
    args = _build_parser().parse_args(list(argv) if argv is not None else None)
    command = {"skeleton": _skeleton, "export": _export, "import": _import}[args.cmd]
    code, report = command(args)
    for line in report:
        print(line, file=sys.stderr)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
