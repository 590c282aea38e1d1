"""Building registry: load and validate building descriptions from ``buildings/*.json``.

File format (one building, or a campus of several)::

    {
      "id": "dbh", "name": "…",
      "floors":    [{"id": "dbh-f1", "level": 1, "name": "Floor 1",
                     "width": 120.0, "height": 40.0}],
      "locations": [{"id": "dbh-1100", "name": "Classroom 1100", "floor": "dbh-f1",
                     "kind": "classroom", "capacity": 120, "camera": false,
                     "polygon": [[0, 0], [20, 0], [20, 15], [0, 15]]}],
      "aps":       [{"id": "ap-dbh-001", "location": "dbh-1100", "x": 10.0, "y": 7.5}]
    }

A campus file is ``{"id": …, "name": …, "buildings": [<building>, …]}``.

Location kinds: ``classroom``, ``office``, ``lab``, ``meeting``, ``lounge``,
``corridor``, ``public`` (lobbies, cafeterias), ``restroom``. ``camera: true`` marks a
camera-covered area (an open region for the administrator attacker, thesis §4.6.2).
Ids are unique across the whole file; every AP maps to a known location; capacities
are positive integers (fire-code capacity); every location has a polygon of at least
three points on its floor's plan. Any violation raises
:class:`~mechanisms.errors.BuildingModelError` naming the file and the field.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from mechanisms.errors import BuildingModelError

LOCATION_KINDS = frozenset(
    {"classroom", "office", "lab", "meeting", "lounge", "corridor", "public", "restroom"}
)

#: Repository root (for the bundled ``buildings/`` folder in a source checkout).
REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Floor:
    """One floor of a building, with the size of its plan (metres)."""

    id: str
    building: str
    level: int
    name: str
    width: float
    height: float


@dataclass(frozen=True)
class Location:
    """A room or area: the unit occupancy is counted for."""

    id: str
    name: str
    building: str
    floor: str
    kind: str
    capacity: int
    polygon: tuple[tuple[float, float], ...]
    camera: bool = False


@dataclass(frozen=True)
class AccessPoint:
    """A WiFi access point; its observations place a device at ``location``."""

    id: str
    location: str
    x: float
    y: float


@dataclass(frozen=True)
class Building:
    """A building: floors, locations and access points."""

    id: str
    name: str
    floors: tuple[Floor, ...]
    locations: tuple[Location, ...]
    aps: tuple[AccessPoint, ...]


@dataclass(frozen=True)
class Site:
    """Everything one building file describes (a building or a campus).

    ``location_ids`` fixes the order used by vectorised mechanisms: index ``i`` of a
    count vector is location ``location_ids[i]``.
    """

    id: str
    name: str
    buildings: tuple[Building, ...]
    source: str = ""
    _extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @cached_property
    def locations(self) -> tuple[Location, ...]:
        """All locations, in file order."""
        return tuple(loc for b in self.buildings for loc in b.locations)

    @cached_property
    def floors(self) -> tuple[Floor, ...]:
        """All floors, in file order."""
        return tuple(f for b in self.buildings for f in b.floors)

    @cached_property
    def aps(self) -> tuple[AccessPoint, ...]:
        """All access points, in file order."""
        return tuple(ap for b in self.buildings for ap in b.aps)

    @cached_property
    def location_ids(self) -> tuple[str, ...]:
        """Location ids in vector order."""
        return tuple(loc.id for loc in self.locations)

    @cached_property
    def location_index(self) -> dict[str, int]:
        """Location id → index into count vectors."""
        return {lid: i for i, lid in enumerate(self.location_ids)}

    @cached_property
    def location_by_id(self) -> dict[str, Location]:
        """Location id → Location."""
        return {loc.id: loc for loc in self.locations}

    @cached_property
    def ap_location(self) -> dict[str, str]:
        """AP id → location id (the mapping the observe stage applies)."""
        return {ap.id: ap.location for ap in self.aps}

    @cached_property
    def capacities(self) -> tuple[int, ...]:
        """Fire-code capacities in vector order."""
        return tuple(loc.capacity for loc in self.locations)

    def hierarchy(self) -> list[tuple[str, str, str]]:
        """(building, floor, location) for every location, in vector order."""
        return [(loc.building, loc.floor, loc.id) for loc in self.locations]


def _fail(source: str, where: str, msg: str) -> BuildingModelError:
    return BuildingModelError(f"{source}: {where}: {msg}")


def _get(obj: Any, key: str, source: str, where: str) -> Any:
    if not isinstance(obj, dict):
        raise _fail(source, where, f"must be an object, not {type(obj).__name__}")
    if key not in obj:
        raise _fail(source, f"{where}.{key}", "missing")
    return obj[key]


def _str(obj: Any, key: str, source: str, where: str) -> str:
    v = _get(obj, key, source, where)
    if not isinstance(v, str) or not v:
        raise _fail(source, f"{where}.{key}", f"must be a non-empty string, not {v!r}")
    return v


def _num(obj: Any, key: str, source: str, where: str, *, positive: bool = False) -> float:
    v = _get(obj, key, source, where)
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise _fail(source, f"{where}.{key}", f"must be a number, not {v!r}")
    if positive and not v > 0:
        raise _fail(source, f"{where}.{key}", f"must be > 0, not {v!r}")
    return float(v)


def _list(obj: Any, key: str, source: str, where: str) -> list[Any]:
    v = _get(obj, key, source, where)
    if not isinstance(v, list) or not v:
        raise _fail(source, f"{where}.{key}", "must be a non-empty list")
    return v


def _parse_building(raw: Any, source: str, where: str, seen: set[str]) -> Building:
    bid = _str(raw, "id", source, where)
    where = f"building {bid!r}"

    def claim(kind: str, ident: str) -> None:
        if ident in seen:
            raise _fail(source, f"{kind} {ident!r}", "duplicate id")
        seen.add(ident)

    claim("building", bid)
    floors = []
    for i, f in enumerate(_list(raw, "floors", source, where)):
        fw = f"{where}.floors[{i}]"
        fid = _str(f, "id", source, fw)
        claim("floor", fid)
        level = _get(f, "level", source, fw)
        if isinstance(level, bool) or not isinstance(level, int):
            raise _fail(source, f"floor {fid!r}.level", f"must be an integer, not {level!r}")
        floors.append(
            Floor(
                id=fid,
                building=bid,
                level=level,
                name=str(f.get("name", fid)),
                width=_num(f, "width", source, f"floor {fid!r}", positive=True),
                height=_num(f, "height", source, f"floor {fid!r}", positive=True),
            )
        )
    floor_ids = {f.id for f in floors}
    locations = []
    for i, loc in enumerate(_list(raw, "locations", source, where)):
        lid = _str(loc, "id", source, f"{where}.locations[{i}]")
        lw = f"location {lid!r}"
        claim("location", lid)
        floor = _str(loc, "floor", source, lw)
        if floor not in floor_ids:
            raise _fail(source, f"{lw}.floor", f"unknown floor {floor!r}")
        kind = _str(loc, "kind", source, lw)
        if kind not in LOCATION_KINDS:
            allowed = sorted(LOCATION_KINDS)
            raise _fail(source, f"{lw}.kind", f"must be one of {allowed}, not {kind!r}")
        cap = _get(loc, "capacity", source, lw)
        if isinstance(cap, bool) or not isinstance(cap, int) or cap <= 0:
            raise _fail(source, f"{lw}.capacity", f"must be a positive integer, not {cap!r}")
        poly = _get(loc, "polygon", source, lw)
        if (
            not isinstance(poly, list)
            or len(poly) < 3
            or not all(
                isinstance(p, list)
                and len(p) == 2
                and all(isinstance(c, int | float) and not isinstance(c, bool) for c in p)
                for p in poly
            )
        ):
            raise _fail(source, f"{lw}.polygon", "must be a list of >= 3 [x, y] points")
        camera = loc.get("camera", False)
        if not isinstance(camera, bool):
            raise _fail(source, f"{lw}.camera", f"must be true or false, not {camera!r}")
        locations.append(
            Location(
                id=lid,
                name=str(loc.get("name", lid)),
                building=bid,
                floor=floor,
                kind=kind,
                capacity=cap,
                polygon=tuple((float(x), float(y)) for x, y in poly),
                camera=camera,
            )
        )
    loc_ids = {loc.id for loc in locations}
    aps = []
    for i, ap in enumerate(_list(raw, "aps", source, where)):
        aid = _str(ap, "id", source, f"{where}.aps[{i}]")
        aw = f"ap {aid!r}"
        claim("ap", aid)
        target = _str(ap, "location", source, aw)
        if target not in loc_ids:
            raise _fail(source, f"{aw}.location", f"unknown location {target!r}")
        aps.append(
            AccessPoint(
                id=aid,
                location=target,
                x=_num(ap, "x", source, aw),
                y=_num(ap, "y", source, aw),
            )
        )
    return Building(
        id=bid,
        name=str(raw.get("name", bid)),
        floors=tuple(floors),
        locations=tuple(locations),
        aps=tuple(aps),
    )


def parse_site(raw: Any, source: str = "<memory>") -> Site:
    """Validate a decoded building/campus description and return a :class:`Site`."""
    if not isinstance(raw, dict):
        raise _fail(source, "top level", "must be a JSON object")
    seen: set[str] = set()
    if "buildings" in raw:
        sid = _str(raw, "id", source, "top level")
        buildings = tuple(
            _parse_building(b, source, f"buildings[{i}]", seen)
            for i, b in enumerate(_list(raw, "buildings", source, "top level"))
        )
        return Site(id=sid, name=str(raw.get("name", sid)), buildings=buildings, source=source)
    b = _parse_building(raw, source, "top level", seen)
    return Site(id=b.id, name=b.name, buildings=(b,), source=source)


def resolve_building_path(name_or_path: str | os.PathLike[str]) -> Path:
    """Find a building file by path, or by short name (``dbh`` → ``buildings/dbh.json``).

    Searched: the path as given; ``$OCCUSTREAM_BUILDINGS``; ``./buildings``; the
    repository's ``buildings/``.
    """
    p = Path(name_or_path)
    if p.is_file():
        return p
    names = [p.name] if p.suffix == ".json" else [f"{p.name}.json", p.name]
    dirs: list[Path] = []
    if os.environ.get("OCCUSTREAM_BUILDINGS"):
        dirs.append(Path(os.environ["OCCUSTREAM_BUILDINGS"]))
    dirs += [Path.cwd() / "buildings", REPO_ROOT / "buildings"]
    dirs = list(dict.fromkeys(d.resolve() for d in dirs))
    for d in dirs:
        for n in names:
            if (d / n).is_file():
                return d / n
    raise BuildingModelError(
        f"{name_or_path}: no such building file (looked in {', '.join(str(d) for d in dirs)}); "
        "pass a path to a buildings/*.json file"
    )


def load_site(name_or_path: str | os.PathLike[str]) -> Site:
    """Load and validate a building or campus file (see the module docstring)."""
    path = resolve_building_path(name_or_path)
    try:
        raw = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise BuildingModelError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}"
        ) from None
    except OSError as exc:
        raise BuildingModelError(f"{path}: cannot read: {exc.strerror}") from None
    return parse_site(raw, str(path))


def available_buildings(dirs: Iterable[Path] | None = None) -> list[Path]:
    """Building files shipped with the repository."""
    dirs = list(dirs) if dirs is not None else [REPO_ROOT / "buildings"]
    return sorted(p for d in dirs if d.is_dir() for p in d.glob("*.json"))
