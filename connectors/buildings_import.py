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

import csv
import io
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
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


_ID_RULE = "is not an id (letters, digits, _ . : -)"
_AP_ONLY = ("ap_name", "aliases", "ap_x", "ap_y")


def _read_header(reader: Iterator[list[str]], source: str) -> list[str]:
    """The header's column names (stripped, lower case), each checked.

    Raises:
        CsvImportError: empty file, or every unknown, duplicate or missing column.
    """
    try:
        header = next(reader)
    except StopIteration:
        raise CsvImportError([f"{source}: row 1: empty file, expected a header row"]) from None
    cols = [h.strip().lower() for h in header]
    errors = []
    for i, c in enumerate(cols):
        if c not in COLUMNS:
            errors.append(_problem(source, 1, header[i],
                                   f"unknown column; expected some of {list(COLUMNS)}"))
        elif cols.index(c) != i:
            errors.append(_problem(source, 1, header[i], "duplicate column"))
    errors += [_problem(source, 1, c, "missing required column") for c in REQUIRED
               if c not in cols]
    if errors:
        raise CsvImportError(errors)
    return cols


def _problem(source: str, row: int, col: str, msg: str) -> str:
    """One error line: file, row (1 = header), column, message."""
    return f"{source}: row {row}, column {col!r}: {msg}"


@dataclass(frozen=True)
class _RoomCells:
    """The parsed room cells of a row (a ``level`` that did not parse is None)."""

    capacity: int
    level: int | None
    kind: str
    camera: bool


class _Collector:
    """Reads the data rows into buildings → floors → rooms → APs, collecting problems.

    Attributes:
        errors: one line per problem (see :func:`_problem`), in row order.
        buildings, floors, rooms, aps: id → entry (with ``_row``, its first row), in
            order of first appearance; a building lists its floor ids, a floor its room
            ids, a room its AP ids.
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.errors: list[str] = []
        self.buildings: dict[str, dict[str, Any]] = {}
        self.floors: dict[str, dict[str, Any]] = {}
        self.rooms: dict[str, dict[str, Any]] = {}
        self.aps: dict[str, dict[str, Any]] = {}
        self._macs: dict[str, int] = {}  # canonical MAC → row
        self._owner: dict[str, tuple[str, int]] = {}  # id → (kind of thing, row)

    def err(self, row: int, col: str, msg: str) -> None:
        """Record a problem of ``row`` in column ``col``."""
        self.errors.append(_problem(self.source, row, col, msg))

    def claim(self, ident: str, kind: str, row: int, col: str) -> bool:
        """Reserve ``ident`` for a ``kind`` (building, floor, room, ap); False if taken."""
        prev = self._owner.get(ident)
        if prev is None:
            self._owner[ident] = (kind, row)
            return True
        if prev[0] != kind:
            self.err(row, col, f"id {ident!r} is already the {prev[0]} of row {prev[1]}")
            return False
        return True

    def same(self, d: dict[str, Any], key: str, value: Any, row: int, col: str) -> None:
        """Set ``d[key]`` on first mention; a later, different value is a problem."""
        if value is None:
            return
        if d.get(key) is None:
            d[key] = value
        elif d[key] != value:
            self.err(row, col,
                     f"{value!r} contradicts {d[key]!r} given for it on row {d['_row']}")

    def add_row(self, rown: int, values: list[str], cols: list[str]) -> None:
        """Check one non-blank data row and add what it describes."""
        if len(values) > len(cols):
            self.err(rown, f"#{len(cols) + 1}", f"{len(values)} cells, the header has {len(cols)}")
            return
        r = {c: (values[i].strip() if i < len(values) else "") for i, c in enumerate(cols)}
        if not self._check_ids(rown, r):
            return
        cells = self._room_cells(rown, r)
        if cells is None:
            return
        room = self._add_room(rown, r, cells)
        if room is not None:
            self._add_ap(rown, r, room)

    def _check_ids(self, rown: int, r: dict[str, str]) -> bool:
        """The required cells are present and building / floor / room are ids."""
        ok = True
        for c in REQUIRED:
            if not r[c]:
                self.err(rown, c, "empty")
                ok = False
            elif c != "capacity" and not _ID.match(r[c]):
                self.err(rown, c, f"{r[c]!r} {_ID_RULE}")
                ok = False
        return ok

    def _room_cells(self, rown: int, r: dict[str, str]) -> _RoomCells | None:
        """Capacity, floor level, kind and camera of a row (None: the row is refused)."""
        try:
            cap = int(r["capacity"])
            if cap <= 0:
                raise ValueError
        except ValueError:
            self.err(rown, "capacity", f"must be a positive integer, not {r['capacity']!r}")
            return None
        level = None
        if r.get("floor_level"):
            try:
                level = int(r["floor_level"])
            except ValueError:  # reported; the row's other problems are still looked for
                self.err(rown, "floor_level", f"must be an integer, not {r['floor_level']!r}")
        kind = (r.get("kind") or "office").lower()
        if kind not in LOCATION_KINDS:
            self.err(rown, "kind", f"must be one of {sorted(LOCATION_KINDS)}, not {r['kind']!r}")
            return None
        camera_s = (r.get("camera") or "false").lower()
        if camera_s not in ("true", "false", "yes", "no", "1", "0"):
            self.err(rown, "camera", f"must be true or false, not {r['camera']!r}")
            return None
        return _RoomCells(cap, level, kind, camera_s in ("true", "yes", "1"))

    def _add_room(self, rown: int, r: dict[str, str],
                  cells: _RoomCells) -> dict[str, Any] | None:
        """Add (or check against earlier rows) the row's building, floor and room.

        Returns:
            The room's entry, or None if the row contradicts an earlier one.
        """
        bid, fid, rid = r["building"], r["floor"], r["room"]
        if not (self.claim(bid, "building", rown, "building")
                and self.claim(fid, "floor", rown, "floor")
                and self.claim(rid, "room", rown, "room")):
            return None
        b = self.buildings.setdefault(bid, {"_row": rown, "floors": []})
        self.same(b, "name", r.get("building_name") or None, rown, "building_name")
        f = self.floors.get(fid)
        if f is None:
            f = self.floors[fid] = {"_row": rown, "building": bid, "rooms": []}
            b["floors"].append(fid)
        elif f["building"] != bid:
            self.err(rown, "floor", f"floor {fid!r} is in building {f['building']!r} on row "
                                    f"{f['_row']}, not {bid!r}")
            return None
        self.same(f, "level", cells.level, rown, "floor_level")
        self.same(f, "name", r.get("floor_name") or None, rown, "floor_name")
        room = self.rooms.get(rid)
        if room is None:
            room = self.rooms[rid] = {"_row": rown, "floor": fid, "capacity": cells.capacity,
                                      "kind": cells.kind, "camera": cells.camera, "aps": []}
            f["rooms"].append(rid)
        elif room["floor"] != fid:
            self.err(rown, "floor", f"room {rid!r} is on floor {room['floor']!r} on row "
                                    f"{room['_row']}, not {fid!r}")
            return None
        else:
            self.same(room, "capacity", cells.capacity, rown, "capacity")
            self.same(room, "kind", cells.kind, rown, "kind")
            self.same(room, "camera", cells.camera, rown, "camera")
        self.same(room, "name", r.get("room_name") or None, rown, "room_name")
        return room

    def _add_ap(self, rown: int, r: dict[str, str], room: dict[str, Any]) -> None:
        """Add the row's AP (if any) to ``room``: MAC and id unique, position parsed."""
        if not r.get("ap_mac"):
            for c in _AP_ONLY:
                if r.get(c):
                    self.err(rown, c, "given without ap_mac")
            return
        mac = parse_mac(r["ap_mac"])
        if mac is None:
            self.err(rown, "ap_mac", f"{r['ap_mac']!r} is not a MAC address")
            return
        if mac in self._macs:
            self.err(rown, "ap_mac", f"{r['ap_mac']!r} is already the AP of row {self._macs[mac]}")
            return
        self._macs[mac] = rown
        aid = r.get("ap_name") or "ap-" + mac.replace(":", "")
        if not _ID.match(aid):
            self.err(rown, "ap_name", f"{aid!r} {_ID_RULE}")
            return
        if not self.claim(aid, "ap", rown, "ap_name"):
            return
        if aid in self.aps:
            self.err(rown, "ap_name", f"{aid!r} is already the AP of row {self.aps[aid]['_row']}")
            return
        xy = self._ap_xy(rown, r)
        if xy is None:
            return
        aliases = [a.strip() for a in (r.get("aliases") or "").split(";") if a.strip()]
        self.aps[aid] = {"_row": rown, "room": r["room"], "mac": mac, "aliases": aliases,
                         "xy": xy or None}
        room["aps"].append(aid)

    def _ap_xy(self, rown: int, r: dict[str, str]) -> list[float] | None:
        """``[x, y]`` in metres, ``[]`` if neither is given, None if refused."""
        given = [c for c in ("ap_x", "ap_y") if r.get(c)]
        if len(given) == 1:
            self.err(rown, "ap_y" if given == ["ap_x"] else "ap_x", "give both ap_x and ap_y")
            return None
        xy = []
        for c in given:
            try:
                fv = float(r[c])
                if not math.isfinite(fv):
                    raise ValueError
                xy.append(fv)
            except ValueError:
                self.err(rown, c, f"must be a number (metres), not {r[c]!r}")
        return xy if len(xy) == len(given) else None


def _room_polygon(x0: float, y0: float) -> list[list[float]]:
    """The room's grid cell with lower-left corner ``(x0, y0)``."""
    return [[x0, y0], [x0 + CELL_W, y0], [x0 + CELL_W, y0 + CELL_H], [x0, y0 + CELL_H]]


def _room_aps(room: dict[str, Any], rid: str, aps: dict[str, dict[str, Any]], x0: float,
              y0: float) -> list[dict[str, Any]]:
    """The AP entries of a room; an AP without position is spread across the room's cell."""
    out = []
    n_ap = len(room["aps"])
    for j, aid in enumerate(room["aps"]):
        a = aps[aid]
        if a["xy"]:
            x, y = a["xy"]
        else:
            x = x0 + CELL_W * (j + 1) / (n_ap + 1)
            y = y0 + CELL_H / 2
        entry: dict[str, Any] = {"id": aid, "location": rid, "x": x, "y": y, "mac": a["mac"]}
        if a["aliases"]:
            entry["aliases"] = a["aliases"]
        out.append(entry)
    return out


def _building_json(bid: str, model: _Collector) -> dict[str, Any]:
    """The building JSON of ``bid``: floors (levels filled in), rooms on a grid, APs.

    Raises:
        CsvImportError: the building has no access point.
    """
    b = model.buildings[bid]
    auto_level = 1
    fl_out, loc_out, ap_out = [], [], []
    for fid in b["floors"]:
        f = model.floors[fid]
        level = f.get("level")
        if level is None:
            level = auto_level
        auto_level = max(auto_level, level) + 1
        n = len(f["rooms"])
        fl_out.append({"id": fid, "level": level, "name": f.get("name") or f"Floor {level}",
                       "width": CELL_W * min(n, PER_ROW),
                       "height": CELL_H * math.ceil(n / PER_ROW)})
        for k, rid in enumerate(f["rooms"]):
            room = model.rooms[rid]
            x0, y0 = CELL_W * (k % PER_ROW), CELL_H * (k // PER_ROW)
            loc_out.append({
                "id": rid, "name": room.get("name") or rid, "floor": fid,
                "kind": room["kind"], "capacity": room["capacity"], "camera": room["camera"],
                "polygon": _room_polygon(x0, y0)})
            ap_out += _room_aps(room, rid, model.aps, x0, y0)
    if not ap_out:
        raise CsvImportError([_problem(model.source, b["_row"], "ap_mac",
                                       f"building {bid!r} has no access point")])
    return {"id": bid, "name": b.get("name") or bid, "floors": fl_out,
            "locations": loc_out, "aps": ap_out}


def import_csv(text: str, source: str = "<csv>", *, site_id: str | None = None,
               site_name: str | None = None) -> dict[str, Any]:
    """Building JSON (a dict) from the CSV text (columns: see the module docstring).

    Args:
        text: the CSV (a leading byte-order mark is ignored).
        source: the file name used in error lines.
        site_id: site id; given, or with several buildings, the result is a campus
            (default id ``site``).
        site_name: the campus' display name (default: its id).

    Returns:
        One building's JSON, or a campus of several, as :mod:`occupancy.buildings` reads
        it, validated with :func:`occupancy.buildings.parse_site`.

    Raises:
        CsvImportError: every problem of the file, one line each naming row and column.
    """
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")))
    cols = _read_header(reader, source)
    model = _Collector(source)
    n_rows = 0
    for rown, values in enumerate(reader, start=2):
        if any(v.strip() for v in values):
            n_rows += 1
            model.add_row(rown, values, cols)
    if n_rows == 0:
        model.errors.append(f"{source}: row 2: no data rows")
    if model.errors:
        raise CsvImportError(model.errors)
    out_buildings = [_building_json(bid, model) for bid in model.buildings]
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
