#!/usr/bin/env python3
"""Generate the shipped building models ``buildings/dbh.json`` and ``buildings/campus.json``.

Deterministic: running it twice writes byte-identical files (fixed seed, sorted
output, no timestamps). Usage::

    .venv/bin/python scripts/make_buildings.py            # writes buildings/*.json
    .venv/bin/python scripts/make_buildings.py --check    # exit 1 if the files differ

Floor plans are a double-loaded corridor: a corridor along the middle of each floor,
rooms side by side along its south (``y`` from 0 to the corridor) and north side.
Rooms are rectangles that tile each side without overlap.

Fire-code capacity = floor area / occupant-load factor (m² per person), after the
International Building Code table 1004.5 (classroom 20 ft² net, office 150 ft²
gross, lab 50 ft², assembly without fixed seats 15 ft², lecture halls with fixed
seating counted by seats ≈ 1.4 m² per seat; corridors as standing space). ``dbh``
is modelled on the thesis building (thesis §4.2: Donald Bren Hall, 6 floors,
64 WiFi access points).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "buildings"

#: occupant-load factor, m² per person, by kind (IBC table 1004.5, rounded).
LOAD_FACTOR_M2 = {
    "classroom": 1.9,
    "office": 14.0,
    "lab": 4.6,
    "meeting": 1.9,
    "lounge": 1.4,
    "corridor": 0.65,  # standing space while classes change (IBC: 5 ft² net)
    "public": 1.4,
    "restroom": 4.6,
}
LECTURE_HALL_M2 = 1.4  # fixed seating

FLOOR_H = 24.0  # plan depth (m)
CORR_Y0, CORR_Y1 = 10.5, 13.5  # corridor band (3 m wide)

# (suffix, name, kind, width_m, n_aps, camera, lecture_hall)
Room = tuple[str, str, str, float, int, bool, bool]

#: dbh: six floors, 100 m × 24 m; per floor the south side, then the north side.
DBH_FLOORS: list[tuple[list[Room], list[Room], int]] = [
    (  # floor 1: lobby, café, lecture halls
        [
            ("100", "Main lobby", "public", 45, 2, True, False),
            ("140", "Classroom 1140", "classroom", 30, 1, False, False),
            ("170", "Classroom 1170", "classroom", 25, 1, False, False),
        ],
        [
            ("110", "Lecture hall 1110", "classroom", 40, 2, False, True),
            ("150", "Lecture hall 1150", "classroom", 35, 2, False, True),
            ("185", "Café", "public", 15, 1, True, False),
            ("195", "Restrooms 1", "restroom", 10, 1, False, False),
        ],
        1,
    ),
    (  # floor 2: classrooms
        [
            ("200", "Lecture hall 2200", "classroom", 30, 2, False, True),
            ("230", "Classroom 2230", "classroom", 20, 1, False, False),
            ("250", "Classroom 2250", "classroom", 20, 1, False, False),
            ("270", "Student lounge 2", "lounge", 30, 1, False, False),
        ],
        [
            ("210", "Classroom 2210", "classroom", 22, 1, False, False),
            ("232", "Classroom 2232", "classroom", 22, 1, False, False),
            ("254", "Classroom 2254", "classroom", 23, 1, False, False),
            ("277", "Classroom 2277", "classroom", 23, 1, False, False),
            ("295", "Restrooms 2", "restroom", 10, 1, False, False),
        ],
        2,
    ),
    (  # floor 3: classrooms
        [
            ("300", "Classroom 3300", "classroom", 25, 1, False, False),
            ("325", "Classroom 3325", "classroom", 25, 1, False, False),
            ("350", "Classroom 3350", "classroom", 25, 1, False, False),
            ("375", "Seminar room 3375", "classroom", 25, 1, False, False),
        ],
        [
            ("310", "Classroom 3310", "classroom", 25, 1, False, False),
            ("335", "Classroom 3335", "classroom", 25, 1, False, False),
            ("360", "Classroom 3360", "classroom", 20, 1, False, False),
            ("380", "Classroom 3380", "classroom", 20, 1, False, False),
            ("395", "Restrooms 3", "restroom", 10, 1, False, False),
        ],
        2,
    ),
    (  # floor 4: labs and offices
        [
            ("400", "Offices 4400-4439", "office", 40, 2, False, False),
            ("440", "Meeting room 4440", "meeting", 15, 1, False, False),
            ("455", "Lounge 4", "lounge", 20, 1, False, False),
            ("475", "Lab 4475", "lab", 25, 1, True, False),
        ],
        [
            ("410", "Lab 4410", "lab", 30, 1, True, False),
            ("440n", "Lab 4441", "lab", 30, 1, True, False),
            ("470", "Lab 4470", "lab", 30, 1, False, False),
            ("495", "Restrooms 4", "restroom", 10, 1, False, False),
        ],
        2,
    ),
    (  # floor 5: labs, offices, one classroom
        [
            ("500", "Offices 5500-5549", "office", 50, 2, False, False),
            ("550", "Meeting room 5550", "meeting", 20, 1, False, False),
            ("570", "Classroom 5570", "classroom", 30, 1, False, False),
        ],
        [
            ("510", "Lab 5510", "lab", 35, 2, True, False),
            ("545", "Lab 5545", "lab", 35, 1, False, False),
            ("580", "Offices 5580-5599", "office", 20, 1, False, False),
            ("595", "Restrooms 5", "restroom", 10, 1, False, False),
        ],
        1,
    ),
    (  # floor 6: faculty offices, conference room, lounge
        [
            ("600", "Conference room 6600", "meeting", 30, 1, False, False),
            ("630", "Faculty lounge", "lounge", 30, 1, False, False),
            ("660", "Offices 6660-6699", "office", 40, 1, False, False),
        ],
        [
            ("610", "Offices 6610-6649", "office", 40, 2, False, False),
            ("650", "Offices 6650-6679", "office", 30, 1, False, False),
            ("680", "Meeting room 6680", "meeting", 20, 1, False, False),
            ("695", "Restrooms 6", "restroom", 10, 1, False, False),
        ],
        1,
    ),
]


def capacity(kind: str, area_m2: float, lecture_hall: bool = False) -> int:
    """Fire-code capacity of a room of ``kind`` and floor area ``area_m2``."""
    factor = LECTURE_HALL_M2 if lecture_hall else LOAD_FACTOR_M2[kind]
    return max(1, int(area_m2 // factor))


def rect(x0: float, y0: float, x1: float, y1: float) -> list[list[float]]:
    """A rectangle polygon, counter-clockwise from its south-west corner."""
    return [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]


def ap_points(x0: float, y0: float, x1: float, y1: float, n: int) -> list[tuple[float, float]]:
    """``n`` AP positions spread evenly along the long axis of a rectangle."""
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    if x1 - x0 >= y1 - y0:
        return [(round(x0 + (x1 - x0) * (i + 0.5) / n, 2), round(cy, 2)) for i in range(n)]
    return [(round(cx, 2), round(y0 + (y1 - y0) * (i + 0.5) / n, 2)) for i in range(n)]


class _Builder:
    """Accumulates floors, locations and APs of one building."""

    def __init__(self, bid: str, name: str) -> None:
        self.bid = bid
        self.b: dict = {"id": bid, "name": name, "floors": [], "locations": [], "aps": []}

    def add_ap(self, loc_id: str, x: float, y: float) -> None:
        n = len(self.b["aps"]) + 1
        self.b["aps"].append({"id": f"ap-{self.bid}-{n:03d}", "location": loc_id, "x": x, "y": y})

    def add_loc(
        self, floor_id: str, lid: str, name: str, kind: str,
        box: tuple[float, float, float, float], n_aps: int, camera: bool, lecture: bool,
    ) -> None:
        x0, y0, x1, y1 = box
        self.b["locations"].append(
            {
                "id": lid,
                "name": name,
                "floor": floor_id,
                "kind": kind,
                "capacity": capacity(kind, (x1 - x0) * (y1 - y0), lecture),
                "camera": camera,
                "polygon": rect(x0, y0, x1, y1),
            }
        )
        for x, y in ap_points(x0, y0, x1, y1, n_aps):
            self.add_ap(lid, x, y)

    def add_floor(
        self, level: int, width: float, south: list[Room], north: list[Room], corridor_aps: int
    ) -> None:
        fid = f"{self.bid}-f{level}"
        self.b["floors"].append(
            {"id": fid, "level": level, "name": f"Floor {level}", "width": width,
             "height": FLOOR_H}
        )
        for side, (y0, y1) in ((south, (0.0, CORR_Y0)), (north, (CORR_Y1, FLOOR_H))):
            total = sum(r[3] for r in side)
            if abs(total - width) > 1e-9:
                raise SystemExit(f"{self.bid} floor {level}: rooms span {total} m, not {width} m")
            x = 0.0
            for suffix, name, kind, w, n_aps, cam, lecture in side:
                self.add_loc(fid, f"{self.bid}-{level}{suffix[1:]}", name, kind,
                             (x, y0, x + w, y1), n_aps, cam, lecture)
                x += w
        self.add_loc(fid, f"{self.bid}-{level}cor", f"Corridor {level}", "corridor",
                     (0.0, CORR_Y0, width, CORR_Y1), corridor_aps, True, False)


def make_dbh(bid: str = "dbh", name: str = "Donald Bren Hall") -> dict:
    """The 6-floor, 64-AP university building (thesis' DBH)."""
    bld = _Builder(bid, name)
    for level, (south, north, corridor_aps) in enumerate(DBH_FLOORS, start=1):
        bld.add_floor(level, 100.0, south, north, corridor_aps)
    return bld.b


#: Campus building types: (type name, kind weights for upper floors).
CAMPUS_TYPES = {
    "teaching": {"classroom": 6, "meeting": 1, "lounge": 1, "office": 1},
    "research": {"lab": 5, "office": 3, "meeting": 1, "lounge": 1},
    "admin": {"office": 6, "meeting": 2, "lounge": 1},
    "library": {"lounge": 4, "meeting": 2, "classroom": 1, "office": 1},
}
KIND_NAMES = {
    "classroom": "Classroom", "office": "Offices", "lab": "Lab", "meeting": "Meeting room",
    "lounge": "Lounge", "public": "Lobby", "restroom": "Restrooms",
}
#: Room width ranges (m) by kind.
WIDTHS = {
    "classroom": (12, 26), "office": (15, 40), "lab": (15, 35), "meeting": (8, 16),
    "lounge": (12, 30), "public": (20, 40), "restroom": (8, 10),
}


def _side(rng: np.random.Generator, width: float, weights: dict[str, int],
          ground: bool, base: int) -> list[Room]:
    """Random rooms tiling one side of a corridor of ``width`` metres."""
    kinds, w = zip(*sorted(weights.items()), strict=True)
    p = np.array(w, float) / sum(w)
    rooms: list[Room] = []
    x = 0.0
    first = [("public", True)] if ground else []
    while x < width - 1e-9:
        if first:
            kind, cam = first.pop()
        else:
            kind = str(kinds[rng.choice(len(kinds), p=p)])
            cam = kind == "lab" and bool(rng.random() < 0.3)
        lo, hi = WIDTHS[kind]
        wd = float(rng.integers(lo, hi + 1))
        if width - (x + wd) < 8:  # last room absorbs the rest
            wd = width - x
        n_aps = max(1, math.ceil(wd * CORR_Y0 / 200.0))
        idx = len(rooms) * 2 + base
        rooms.append((f"x{idx:02d}", f"{KIND_NAMES[kind]} {idx}", kind, wd, n_aps, cam, False))
        x += wd
    return rooms


def make_campus(seed: int = 20260105) -> dict:
    """24 buildings: dbh plus 23 procedurally generated ones (>= 1,500 APs in all)."""
    rng = np.random.default_rng(seed)
    buildings = [make_dbh()]
    types = sorted(CAMPUS_TYPES)
    for i in range(1, 24):
        btype = types[i % len(types)]
        bid = f"b{i:02d}"
        bld = _Builder(bid, f"{btype.capitalize()} building {i:02d}")
        n_floors = int(rng.integers(3, 8))
        width = float(rng.integers(8, 15) * 10)
        for level in range(1, n_floors + 1):
            south = _side(rng, width - 10, CAMPUS_TYPES[btype], ground=level == 1,
                          base=10)
            south.append(("x99", f"Restrooms {level}", "restroom", 10.0, 1, False, False))
            north = _side(rng, width, CAMPUS_TYPES[btype], ground=False, base=50)
            bld.add_floor(level, width, south, north, max(1, int(width // 60)))
        buildings.append(bld.b)
    return {"id": "campus", "name": "University campus (24 buildings)", "buildings": buildings}


def render(obj: dict) -> str:
    """Stable JSON text (the committed form)."""
    return json.dumps(obj, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write (or with --check, verify) buildings/dbh.json and buildings/campus.json."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only compare with the files on disk")
    ap.add_argument("--out", type=Path, default=OUT, help="output folder (default: buildings/)")
    args = ap.parse_args(argv)
    dbh, campus = make_dbh(), make_campus()
    n_dbh = len(dbh["aps"])
    n_campus = sum(len(b["aps"]) for b in campus["buildings"])
    if n_dbh != 64 or n_campus < 1500:
        print(f"error: dbh has {n_dbh} APs (want 64), campus {n_campus} (want >= 1500)",
              file=sys.stderr)
        return 1
    files = {"dbh.json": render(dbh), "campus.json": render(campus)}
    status = 0
    for name, text in files.items():
        path = args.out / name
        if args.check:
            if not path.is_file() or path.read_text() != text:
                print(f"{path}: out of date; run scripts/make_buildings.py", file=sys.stderr)
                status = 1
        else:
            args.out.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    print(f"dbh: {len(dbh['locations'])} locations, {n_dbh} APs; campus: "
          f"{sum(len(b['locations']) for b in campus['buildings'])} locations, {n_campus} APs")
    return status


if __name__ == "__main__":
    sys.exit(main())
