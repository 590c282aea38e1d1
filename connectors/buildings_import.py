"""``occustream buildings import`` — a building model from a CSV of APs and rooms.

One row per access point (a room without an AP may have one row with the AP columns
empty). Columns (header row, any order, case-insensitive):

=================  ========  ==========================================================
column             required  meaning
=================  ========  ==========================================================
``building``       yes       building id (``dbh``)
``floor``          yes       floor id, unique in the file (``dbh-f1``)
``room``           yes       room id, unique in the file (``dbh-1100``)
``capacity``       yes       fire-code capacity of the room, a positive integer
``ap_mac``         no        the AP's MAC (any spelling); empty for a room without AP
``ap_name``        no        the AP id used in observations (default ``ap-`` + MAC hex)
``aliases``        no        other names of the AP, ``;``-separated: its name on the
                             controller, radio BSSIDs, Cisco Spaces location ids
``building_name``  no        display name (default: the id)
``floor_level``    no        integer level (default: order of appearance, from 1)
``floor_name``     no        display name (default ``Floor <level>``)
``room_name``      no        display name (default: the id)
``kind``           no        one of occupancy.buildings.LOCATION_KINDS (default office)
``camera``         no        ``true``/``false``: camera-covered area (default false)
``ap_x``/``ap_y``  no        AP position on the floor plan in metres (default: room centre)
=================  ========  ==========================================================

Rooms are laid out as a grid of rectangles on their floor (the product needs a polygon
per room for its heatmap; replace them with real ones from the floor plan when you have
them). The output is the building JSON the product reads (``buildings/*.json``,
:mod:`occupancy.buildings`) — one building, or a campus of several — validated with
:func:`occupancy.buildings.parse_site` before it is written. AP entries carry two extra
fields the loader ignores and the connectors use (:class:`connectors.edge.ApResolver`):
``mac`` and ``aliases``.

Every problem is reported as one line naming the file, the row (1 = header) and the
column; all problems of the file are reported, not only the first.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from connectors.edge import parse_mac
from mechanisms.errors import BuildingModelError
from occupancy.buildings import LOCATION_KINDS, parse_site

REQUIRED = ("building", "floor", "room", "capacity")
OPTIONAL = ("ap_mac", "ap_name", "aliases", "building_name", "floor_level", "floor_name",
            "room_name", "kind", "camera", "ap_x", "ap_y")
COLUMNS = REQUIRED + OPTIONAL
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]*$")
CELL_W, CELL_H, PER_ROW = 10.0, 8.0, 8


class CsvImportError(BuildingModelError):
    """All problems of one CSV; ``errors`` holds one line per problem."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        super().__init__(errors[0] + more)


def import_csv(text: str, source: str = "<csv>", *, site_id: str | None = None,
               site_name: str | None = None) -> dict[str, Any]:
    """Building JSON (a dict) from the CSV text; raises :class:`CsvImportError`."""
    errors: list[str] = []

    def err(row: int, col: str, msg: str) -> None:
        errors.append(f"{source}: row {row}, column {col!r}: {msg}")

    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")))
    try:
        header = next(reader)
    except StopIteration:
        raise CsvImportError([f"{source}: row 1: empty file, expected a header row"]) from None
    cols = [h.strip().lower() for h in header]
    for i, c in enumerate(cols):
        if c not in COLUMNS:
            err(1, header[i], f"unknown column; expected some of {list(COLUMNS)}")
        elif cols.index(c) != i:
            err(1, header[i], "duplicate column")
    for c in REQUIRED:
        if c not in cols:
            err(1, c, "missing required column")
    if errors:
        raise CsvImportError(errors)

    buildings: dict[str, dict[str, Any]] = {}
    floors: dict[str, dict[str, Any]] = {}
    rooms: dict[str, dict[str, Any]] = {}
    aps: dict[str, dict[str, Any]] = {}
    macs: dict[str, int] = {}
    owner: dict[str, tuple[str, int]] = {}  # id → (kind, row)

    def claim(ident: str, kind: str, row: int, col: str) -> bool:
        prev = owner.get(ident)
        if prev is None:
            owner[ident] = (kind, row)
            return True
        if prev[0] != kind:
            err(row, col, f"id {ident!r} is already the {prev[0]} of row {prev[1]}")
            return False
        return True

    def same(d: dict[str, Any], key: str, value: Any, row: int, col: str) -> None:
        if value is None:
            return
        if d.get(key) is None:
            d[key] = value
        elif d[key] != value:
            err(row, col, f"{value!r} contradicts {d[key]!r} given for it on row {d['_row']}")

    n_rows = 0
    for rown, values in enumerate(reader, start=2):
        if not any(v.strip() for v in values):
            continue
        n_rows += 1
        if len(values) > len(cols):
            err(rown, f"#{len(cols) + 1}", f"{len(values)} cells, the header has {len(cols)}")
            continue
        r = {c: (values[i].strip() if i < len(values) else "") for i, c in enumerate(cols)}
        ok = True
        for c in REQUIRED:
            if not r[c]:
                err(rown, c, "empty")
                ok = False
            elif c != "capacity" and not _ID.match(r[c]):
                err(rown, c, f"{r[c]!r} is not an id (letters, digits, _ . : -)")
                ok = False
        if not ok:
            continue
        bid, fid, rid = r["building"], r["floor"], r["room"]
        try:
            cap = int(r["capacity"])
            if cap <= 0:
                raise ValueError
        except ValueError:
            err(rown, "capacity", f"must be a positive integer, not {r['capacity']!r}")
            continue
        level = None
        if r.get("floor_level"):
            try:
                level = int(r["floor_level"])
            except ValueError:
                err(rown, "floor_level", f"must be an integer, not {r['floor_level']!r}")
        kind = (r.get("kind") or "office").lower()
        if kind not in LOCATION_KINDS:
            err(rown, "kind", f"must be one of {sorted(LOCATION_KINDS)}, not {r['kind']!r}")
            continue
        camera_s = (r.get("camera") or "false").lower()
        if camera_s not in ("true", "false", "yes", "no", "1", "0"):
            err(rown, "camera", f"must be true or false, not {r['camera']!r}")
            continue
        camera = camera_s in ("true", "yes", "1")
        if not (claim(bid, "building", rown, "building") and claim(fid, "floor", rown, "floor")
                and claim(rid, "room", rown, "room")):
            continue
        b = buildings.setdefault(bid, {"_row": rown, "floors": []})
        same(b, "name", r.get("building_name") or None, rown, "building_name")
        f = floors.get(fid)
        if f is None:
            f = floors[fid] = {"_row": rown, "building": bid, "rooms": []}
            b["floors"].append(fid)
        elif f["building"] != bid:
            err(rown, "floor", f"floor {fid!r} is in building {f['building']!r} on row "
                               f"{f['_row']}, not {bid!r}")
            continue
        same(f, "level", level, rown, "floor_level")
        same(f, "name", r.get("floor_name") or None, rown, "floor_name")
        room = rooms.get(rid)
        if room is None:
            room = rooms[rid] = {"_row": rown, "floor": fid, "capacity": cap, "kind": kind,
                                 "camera": camera, "aps": []}
            f["rooms"].append(rid)
        elif room["floor"] != fid:
            err(rown, "floor", f"room {rid!r} is on floor {room['floor']!r} on row "
                               f"{room['_row']}, not {fid!r}")
            continue
        else:
            same(room, "capacity", cap, rown, "capacity")
            same(room, "kind", kind, rown, "kind")
            same(room, "camera", camera, rown, "camera")
        same(room, "name", r.get("room_name") or None, rown, "room_name")
        if not r.get("ap_mac"):
            for c in ("ap_name", "aliases", "ap_x", "ap_y"):
                if r.get(c):
                    err(rown, c, "given without ap_mac")
            continue
        mac = parse_mac(r["ap_mac"])
        if mac is None:
            err(rown, "ap_mac", f"{r['ap_mac']!r} is not a MAC address")
            continue
        if mac in macs:
            err(rown, "ap_mac", f"{r['ap_mac']!r} is already the AP of row {macs[mac]}")
            continue
        macs[mac] = rown
        aid = r.get("ap_name") or "ap-" + mac.replace(":", "")
        if not _ID.match(aid):
            err(rown, "ap_name", f"{aid!r} is not an id (letters, digits, _ . : -)")
            continue
        if not claim(aid, "ap", rown, "ap_name"):
            continue
        if aid in aps:
            err(rown, "ap_name", f"{aid!r} is already the AP of row {aps[aid]['_row']}")
            continue
        given = [c for c in ("ap_x", "ap_y") if r.get(c)]
        if len(given) == 1:
            err(rown, "ap_y" if given == ["ap_x"] else "ap_x", "give both ap_x and ap_y")
            continue
        xy = []
        for c in given:
            try:
                fv = float(r[c])
                if not math.isfinite(fv):
                    raise ValueError
                xy.append(fv)
            except ValueError:
                err(rown, c, f"must be a number (metres), not {r[c]!r}")
        if len(xy) != len(given):
            continue
        aliases = [a.strip() for a in (r.get("aliases") or "").split(";") if a.strip()]
        aps[aid] = {"_row": rown, "room": rid, "mac": mac, "aliases": aliases,
                    "xy": xy or None}
        room["aps"].append(aid)
    if n_rows == 0:
        errors.append(f"{source}: row 2: no data rows")
    if errors:
        raise CsvImportError(errors)

    out_buildings = []
    for bid, b in buildings.items():
        auto_level = 1
        fl_out, loc_out, ap_out = [], [], []
        for fid in b["floors"]:
            f = floors[fid]
            level = f.get("level")
            if level is None:
                level = auto_level
            auto_level = max(auto_level, level) + 1
            n = len(f["rooms"])
            width = CELL_W * min(n, PER_ROW)
            height = CELL_H * math.ceil(n / PER_ROW)
            fl_out.append({"id": fid, "level": level, "name": f.get("name") or f"Floor {level}",
                           "width": width, "height": height})
            for k, rid in enumerate(f["rooms"]):
                room = rooms[rid]
                x0, y0 = CELL_W * (k % PER_ROW), CELL_H * (k // PER_ROW)
                loc_out.append({
                    "id": rid, "name": room.get("name") or rid, "floor": fid,
                    "kind": room["kind"], "capacity": room["capacity"],
                    "camera": room["camera"],
                    "polygon": [[x0, y0], [x0 + CELL_W, y0], [x0 + CELL_W, y0 + CELL_H],
                                [x0, y0 + CELL_H]]})
                n_ap = len(room["aps"])
                for j, aid in enumerate(room["aps"]):
                    a = aps[aid]
                    if a["xy"]:
                        x, y = a["xy"]
                    else:
                        x = x0 + CELL_W * (j + 1) / (n_ap + 1)
                        y = y0 + CELL_H / 2
                    entry: dict[str, Any] = {"id": aid, "location": rid, "x": x, "y": y,
                                             "mac": a["mac"]}
                    if a["aliases"]:
                        entry["aliases"] = a["aliases"]
                    ap_out.append(entry)
        if not ap_out:
            raise CsvImportError([f"{source}: row {b['_row']}, column 'ap_mac': building "
                                f"{bid!r} has no access point"])
        out_buildings.append({"id": bid, "name": b.get("name") or bid, "floors": fl_out,
                              "locations": loc_out, "aps": ap_out})
    if len(out_buildings) == 1 and site_id is None:
        out: dict[str, Any] = out_buildings[0]
    else:
        sid = site_id or "site"
        out = {"id": sid, "name": site_name or sid, "buildings": out_buildings}
    parse_site(out, source)  # the product's own validation, before anything is written
    return out


def export_csv(raw: dict[str, Any]) -> str:
    """The CSV of a building JSON (inverse of :func:`import_csv` except polygons)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["building", "building_name", "floor", "floor_level", "floor_name", "room",
                "room_name", "kind", "capacity", "camera", "ap_mac", "ap_name", "aliases",
                "ap_x", "ap_y"])
    for b in raw.get("buildings", [raw]):
        floors = {f["id"]: f for f in b["floors"]}
        by_room: dict[str, list[dict[str, Any]]] = {}
        for a in b["aps"]:
            by_room.setdefault(a["location"], []).append(a)
        for loc in b["locations"]:
            f = floors[loc["floor"]]
            base = [b["id"], b.get("name", b["id"]), f["id"], f["level"], f.get("name", ""),
                    loc["id"], loc.get("name", loc["id"]), loc["kind"], loc["capacity"],
                    str(bool(loc.get("camera", False))).lower()]
            for a in by_room.get(loc["id"], []) or [None]:
                if a is None:
                    w.writerow(base + ["", "", "", "", ""])
                else:
                    w.writerow(base + [a.get("mac") or a["id"], a["id"],
                                       ";".join(a.get("aliases", [])), a["x"], a["y"]])
    return buf.getvalue()


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.\-]+", "-", text.strip()).strip("-").lower() or "x"


def skeleton_from_meraki_floorplans(plans: Any, building: str) -> str:
    """A CSV to complete from a Meraki floor-plan listing (``GET /networks/{id}/floorPlans``).

    The Dashboard API returns, per floor plan, ``floorPlanId``, ``name``, optionally
    ``floorNumber``, the corners (``bottomLeftCorner`` …: ``lat``/``lng``) and the
    ``devices`` placed on it (``name``, ``mac``, ``serial``, ``model``, ``lat``, ``lng``)
    (https://developer.cisco.com/meraki/api-v1/get-network-floor-plans/). Rooms and
    capacities are not in it: each AP becomes the only AP of a room named after it,
    with an empty ``capacity`` — the import refuses the file, naming each row, until
    the rooms are merged and the capacities filled in. AP positions are the devices'
    coordinates in metres east/north of the plan's bottom-left corner (no rotation).
    """
    if not isinstance(plans, list):
        raise CsvImportError(["meraki floor plans: expected a JSON list of floor plans"])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["building", "floor", "floor_level", "floor_name", "room", "room_name", "kind",
                "capacity", "ap_mac", "ap_name", "aliases", "ap_x", "ap_y"])
    b = _slug(building)
    for k, plan in enumerate(plans, start=1):
        if not isinstance(plan, dict):
            continue
        name = str(plan.get("name") or plan.get("floorPlanId") or f"floor {k}")
        fid = f"{b}-{_slug(name)}"
        level = plan.get("floorNumber") if isinstance(plan.get("floorNumber"), int) else k
        corner = plan.get("bottomLeftCorner") or {}
        lat0, lng0 = corner.get("lat"), corner.get("lng")
        for dev in plan.get("devices") or []:
            if not isinstance(dev, dict) or not parse_mac(dev.get("mac")):
                continue
            if str(dev.get("model", "MR")).upper()[:2] not in ("MR", "CW"):
                continue  # switches, cameras, sensors placed on the plan
            ap_name = str(dev.get("name") or dev.get("serial") or dev["mac"])
            aid = f"ap-{_slug(ap_name)}"
            x = y = ""
            if all(isinstance(v, int | float) for v in (lat0, lng0, dev.get("lat"),
                                                         dev.get("lng"))):
                x = round((dev["lng"] - lng0) * 111_320 * math.cos(math.radians(lat0)), 2)
                y = round((dev["lat"] - lat0) * 110_540, 2)
            aliases = ";".join(a for a in (ap_name, str(dev.get("serial") or "")) if a)
            w.writerow([b, fid, level, name, f"{fid}-{_slug(ap_name)}", f"Room of {ap_name}",
                        "office", "", dev["mac"], aid, aliases, x, y])
    return buf.getvalue()


def _write(out: dict[str, Any], path: str | None) -> None:
    text = json.dumps(out, indent=1) + "\n"
    if path in (None, "-"):
        sys.stdout.write(text)
    else:
        Path(path).write_text(text)


def main(argv: Iterable[str] | None = None) -> int:
    """``occustream buildings import CSV`` / ``skeleton --meraki-floorplans`` / ``export``."""
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
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.cmd == "skeleton":
        try:
            plans = json.loads(Path(args.meraki_floorplans).read_text())
        except (OSError, ValueError) as exc:
            print(f"occustream buildings skeleton: {args.meraki_floorplans}: {exc}",
                  file=sys.stderr)
            return 2
        text = skeleton_from_meraki_floorplans(plans, args.building)
        if args.output:
            Path(args.output).write_text(text)
        else:
            sys.stdout.write(text)
        return 0
    if args.cmd == "export":
        raw = json.loads(Path(args.json).read_text())
        text = export_csv(raw)
        if args.output:
            Path(args.output).write_text(text)
        else:
            sys.stdout.write(text)
        return 0
    src = args.csv
    try:
        text = sys.stdin.read() if src == "-" else Path(src).read_text(encoding="utf-8-sig")
    except OSError as exc:
        print(f"occustream buildings import: {src}: cannot read: {exc.strerror}",
              file=sys.stderr)
        return 2
    try:
        out = import_csv(text, src, site_id=args.id, site_name=args.name)
    except CsvImportError as exc:
        for line in exc.errors:
            print(line, file=sys.stderr)
        return 2
    _write(out, args.output)
    n_loc = sum(len(b["locations"]) for b in out.get("buildings", [out]))
    n_ap = sum(len(b["aps"]) for b in out.get("buildings", [out]))
    print(f"imported {n_loc} rooms and {n_ap} access points"
          + (f" → {args.output}" if args.output else ""), file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
