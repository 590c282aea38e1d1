"""``occustream buildings import``: CSV → the product's building JSON, round trip, errors."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from connect_support import FIX

from connectors.buildings_import import CsvImportError, export_csv, import_csv
from connectors.edge import ApResolver
from occupancy.buildings import load_site, parse_site
from occustream.buildings_cli import main

CSV = (FIX / "building.csv").read_text()


def test_import_reads_as_the_product_reads_it(tmp_path: Path) -> None:
    out = tmp_path / "lab.json"
    assert main(["import", str(FIX / "building.csv"), "-o", str(out)]) == 0
    site = load_site(out)  # the product's loader
    rows = list(csv.DictReader(io.StringIO(CSV)))
    assert site.location_ids == tuple(dict.fromkeys(r["room"] for r in rows))
    caps = {r["room"]: int(r["capacity"]) for r in rows}
    assert dict(zip(site.location_ids, site.capacities, strict=True)) == caps
    assert {(f.id, f.level) for f in site.floors} == {
        (r["floor"], int(r["floor_level"])) for r in rows}
    resolver = ApResolver.load(str(out))[1]
    for r in rows:
        if r["ap_mac"]:  # every AP MAC spelling and alias resolves to the row's room
            for ident in [r["ap_mac"], r["ap_name"], *filter(None, r["aliases"].split(";"))]:
                assert site.ap_location[resolver.resolve(ident)] == r["room"], ident


def test_round_trip_csv_json_csv_json() -> None:
    first = import_csv(CSV, "a.csv")
    again = import_csv(export_csv(first), "b.csv")
    assert again == first
    assert parse_site(again).location_ids == parse_site(first).location_ids


def test_campus_of_two_buildings() -> None:
    extra = "\nannex,Annex,annex-f1,1,annex-1,Hall,public,200,02:00:00:00:00:01,ap-annex-1,\n"
    out = import_csv(CSV.rstrip("\n") + extra, "c.csv", site_id="campus2")
    site = parse_site(out)
    assert out["id"] == "campus2" and [b.id for b in site.buildings] == ["lab", "annex"]


def _replace(row: int, col: str, value: str) -> str:
    rows = list(csv.reader(io.StringIO(CSV)))
    rows[row - 1][rows[0].index(col)] = value
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


@pytest.mark.parametrize(("row", "col", "value", "says"), [
    (2, "capacity", "-3", "positive integer"),
    (3, "capacity", "50", "contradicts"),
    (2, "ap_mac", "00:18:0a:13:dd", "not a MAC"),
    (3, "ap_mac", "00:18:0a:13:dd:b0", "already the AP of row 2"),
    (4, "kind", "ballroom", "must be one of"),
    (5, "floor_level", "two", "integer"),
    (2, "room", "", "empty"),
    (4, "room", "lab-f1", "already the floor"),
    (3, "floor", "lab-f2", "is on floor"),
    (7, "ap_name", "x", "given without ap_mac"),
])
def test_errors_name_row_and_column(row: int, col: str, value: str, says: str) -> None:
    with pytest.raises(CsvImportError) as exc:
        import_csv(_replace(row, col, value), "lab.csv")
    first = exc.value.errors[0]
    assert first.startswith(f"lab.csv: row {row}, column {col!r}: "), first
    assert says in first
    assert "\n" not in first


def test_header_errors_and_all_errors_reported(capsys: pytest.CaptureFixture[str],
                                               tmp_path: Path) -> None:
    with pytest.raises(CsvImportError) as exc:
        import_csv("building,floor,rooms,capacity\nx,y,z,1\n", "h.csv")
    assert exc.value.errors == [
        "h.csv: row 1, column 'rooms': unknown column; expected some of "
        + str(list(__import__("connectors.buildings_import", fromlist=["COLUMNS"]).COLUMNS)),
        "h.csv: row 1, column 'room': missing required column"]
    bad = _replace(2, "capacity", "0")
    bad = bad.replace("lounge", "ballroom")
    path = tmp_path / "bad.csv"
    path.write_text(bad)
    assert main(["import", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "row 2, column 'capacity'" in err[0] and "column 'kind'" in err[1]
    assert json.dumps(err)  # one line each


def test_meraki_floorplan_skeleton_until_completed() -> None:
    from connectors.buildings_import import skeleton_from_meraki_floorplans

    plans = json.loads((FIX / "meraki_floorplans.json").read_text())["plans"]
    text = skeleton_from_meraki_floorplans(plans, "hq")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["ap_mac"] for r in rows] == ["00:18:0a:13:dd:b0", "00:18:0a:13:dd:c0"]  # no switch
    assert float(rows[0]["ap_x"]) > 0 and float(rows[0]["ap_y"]) > 0
    with pytest.raises(CsvImportError) as exc:  # capacities are not in the export
        import_csv(text, "hq.csv")
    assert [e.split(":")[1].strip() for e in exc.value.errors] == [
        "row 2, column 'capacity'", "row 3, column 'capacity'"]
    filled = text.replace(",office,,", ",office,25,")
    site = parse_site(import_csv(filled, "hq.csv"))
    resolver = ApResolver(site, import_csv(filled, "hq.csv"))
    assert site.capacities == (25, 25)
    assert site.ap_location[resolver.resolve("HQ-AP-201")] == site.location_ids[1]
