"""The shipped building models validate, look like buildings, and broken variants fail
with one line naming the file and the field."""

from __future__ import annotations

import copy
import importlib.util
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from mechanisms.errors import BuildingModelError
from occupancy.buildings import LOCATION_KINDS, REPO_ROOT, available_buildings, load_site

BUILDINGS = REPO_ROOT / "buildings"


def test_every_shipped_file_validates() -> None:
    files = available_buildings()
    assert {p.name for p in files} >= {"dbh.json", "campus.json"}
    for path in files:
        site = load_site(path)
        assert site.locations and site.aps


def test_dbh_is_the_thesis_building() -> None:
    site = load_site("dbh")
    assert len(site.aps) == 64
    assert sorted(f.level for f in site.floors) == [1, 2, 3, 4, 5, 6]
    assert set(Counter(loc.kind for loc in site.locations)) == LOCATION_KINDS
    per_loc = Counter(ap.location for ap in site.aps)
    assert set(per_loc) == set(site.location_ids)  # every location has an AP
    assert max(per_loc.values()) >= 2  # big rooms have several
    cams = {loc.kind for loc in site.locations if loc.camera}
    assert {"corridor", "public", "lab"} <= cams
    halls = [loc for loc in site.locations if loc.kind == "classroom" and loc.capacity >= 200]
    assert len(halls) >= 3


def test_campus_scale() -> None:
    site = load_site("campus")
    assert len(site.buildings) == 24 and len(site.aps) >= 1500
    assert len(set(site.location_ids)) == len(site.location_ids)


def _rect(poly: tuple[tuple[float, float], ...]) -> tuple[float, float, float, float]:
    xs, ys = [p[0] for p in poly], [p[1] for p in poly]
    return min(xs), min(ys), max(xs), max(ys)


@pytest.mark.parametrize("name", ["dbh", "campus"])
def test_plans_fit_their_floors_without_overlap(name: str) -> None:
    site = load_site(name)
    floors = {f.id: f for f in site.floors}
    by_floor: dict[str, list[tuple[float, float, float, float]]] = {}
    for loc in site.locations:
        x0, y0, x1, y1 = _rect(loc.polygon)
        f = floors[loc.floor]
        assert 0 <= x0 < x1 <= f.width and 0 <= y0 < y1 <= f.height, loc.id
        by_floor.setdefault(loc.floor, []).append((x0, y0, x1, y1))
    for rects in by_floor.values():
        for i, a in enumerate(rects):
            for b in rects[i + 1:]:
                assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)
    for ap in site.aps:
        x0, y0, x1, y1 = _rect(site.location_by_id[ap.location].polygon)
        assert x0 <= ap.x <= x1 and y0 <= ap.y <= y1, ap.id


def test_generator_is_deterministic_and_files_are_current() -> None:
    spec = importlib.util.spec_from_file_location("make_buildings",
                                                  REPO_ROOT / "scripts" / "make_buildings.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.render(mod.make_campus()) == mod.render(mod.make_campus())
    assert mod.main(["--check"]) == 0


def _set(path: list[Any], value: Any) -> Any:
    def mutate(raw: dict[str, Any]) -> None:
        obj: Any = raw
        for key in path[:-1]:
            obj = obj[key]
        if value is _DELETE:
            del obj[path[-1]]
        else:
            obj[path[-1]] = value
    return mutate


_DELETE = object()


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (_set(["aps", 0, "location"], "dbh-nowhere"), "ap 'ap-dbh-001'.location"),
        (_set(["locations", 0, "capacity"], 0), "location 'dbh-100'.capacity"),
        (_set(["locations", 1, "capacity"], "ten"), "location 'dbh-140'.capacity"),
        (_set(["locations", 0, "polygon"], [[0, 0], [1, 1]]), "location 'dbh-100'.polygon"),
        (_set(["locations", 0, "polygon"], _DELETE), "location 'dbh-100'.polygon"),
        (_set(["locations", 2, "id"], "dbh-100"), "location 'dbh-100'"),
        (_set(["locations", 0, "kind"], "ballroom"), "location 'dbh-100'.kind"),
        (_set(["locations", 0, "floor"], "dbh-f9"), "location 'dbh-100'.floor"),
        (_set(["floors", 0, "width"], -3), "floor 'dbh-f1'.width"),
        (_set(["aps", 1, "id"], "ap-dbh-001"), "ap 'ap-dbh-001'"),
    ],
)
def test_broken_variants_name_file_and_field(tmp_path: Path, mutate: Any, field: str) -> None:
    raw = json.loads((BUILDINGS / "dbh.json").read_text())
    bad = copy.deepcopy(raw)
    mutate(bad)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(BuildingModelError) as exc:
        load_site(path)
    msg = str(exc.value)
    assert "\n" not in msg and str(path) in msg and field in msg, msg


def test_not_json_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "torn.json"
    path.write_text('{"id": "x", ')
    with pytest.raises(BuildingModelError, match="torn.json: not valid JSON"):
        load_site(path)
