"""REST API against a real Redis read model: contract, auth, bad parameters, privacy."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import numpy as np
import pytest
from dash_support import TOKENS, call, get_json

from dashboards.synthetic import seed, write_alert
from occupancy import redis_layout as rl
from occupancy.heatmap import colour_class

pytestmark = pytest.mark.e2e


@pytest.fixture
def seeded(served: Any, redis_client: Any, campus: Any) -> dict[str, Any]:
    w = seed(redis_client, campus, days=3, last_day_ticks=40)
    return {"url": served.url, "written": w, "site": campus}


def test_auth_required_and_roles(seeded: dict[str, Any]) -> None:
    url = seeded["url"]
    status, body = get_json(f"{url}/api/snapshot", token=None)
    assert status == 401 and "token" in body["error"]
    status, body = get_json(f"{url}/api/snapshot", token="wrong")
    assert status == 401
    assert get_json(f"{url}/api/whoami", token=TOKENS.analyst) == (200, {"role": "analyst"})
    assert get_json(f"{url}/api/whoami", token=TOKENS.admin) == (200, {"role": "admin"})
    # the analyst reads released values but never the ledger
    assert get_json(f"{url}/api/snapshot", token=TOKENS.analyst)[0] == 200
    status, body = get_json(f"{url}/api/ledger", token=TOKENS.analyst)
    assert status == 403 and "admin" in body["error"]
    assert get_json(f"{url}/api/ledger", token=TOKENS.admin)[0] == 200
    # ?access_token= works too (EventSource cannot send headers)
    assert get_json(f"{url}/api/whoami?access_token={TOKENS.analyst}", token=None)[0] == 200
    # docs are public
    assert call(f"{url}/openapi.json", token=None)[0] == 200
    assert call(f"{url}/docs", token=None)[0] == 200


BAD = [
    ("/api/snapshot?mech=nope", "mech must be one of"),
    ("/api/snapshot?tick=abc", "tick must be a number"),
    ("/api/snapshot?tick=inf", "finite"),
    ("/api/history?mech=laplace", "location must be"),
    ("/api/history?mech=laplace&location=nowhere", "location must be"),
    ("/api/history?mech=laplace&location=hall-101&start=10&end=5", "start must be <= end"),
    ("/api/history?mech=laplace&location=hall-101&limit=0", "limit must be in"),
    ("/api/history?mech=laplace&location=hall-101&format=xml", "format must be"),
    ("/api/ticks?mech=laplace&day=2026-13-45", "day must be a real date"),
    ("/api/ticks?mech=laplace&day=yesterday", "day must be YYYY-MM-DD"),
    ("/api/alerts?limit=-3", "limit must be in"),
]


def test_bad_parameters_are_400_with_a_message(seeded: dict[str, Any]) -> None:
    for query, fragment in BAD:
        status, body = get_json(seeded["url"] + query, token=TOKENS.analyst)
        assert status == 400, query
        assert fragment in body["error"] and body["status"] == 400, (query, body)


def test_snapshot_colours_follow_the_baselines(seeded: dict[str, Any], redis_client: Any) -> None:
    url, site = seeded["url"], seeded["site"]
    status, snap = get_json(f"{url}/api/snapshot?mech=laplace", token=TOKENS.analyst)
    assert status == 200
    last = seeded["written"]["ticks"][-1]
    assert snap["tick"] == int(last)
    released = seeded["written"]["values"]["laplace"][-1]
    slot = rl.slot_of(last, 300)
    for j, loc in enumerate(site.location_ids):
        v = snap["values"][loc]
        assert v["value"] == pytest.approx(released[j])
        b = json.loads(redis_client.hget(rl.baseline("laplace"), rl.baseline_field(loc, slot)))
        # σ is never below the release's own noise (Laplace ε = 0.5: √2 · 2)
        sigma = max(b["sigma"], np.sqrt(2) / 0.5)
        assert v["sigma"] == pytest.approx(sigma)
        assert v["class"] == int(colour_class(np.array(released[j]), b["mu"], sigma))
        # 90 % Laplace interval from public ε only: ± ln(10)/ε
        half = np.log(10) / 0.5
        assert v["interval"]["low"] == pytest.approx(released[j] - half)
        assert v["interval"]["high"] == pytest.approx(released[j] + half)
    ttl = get_json(f"{url}/api/snapshot?mech=ttl", token=TOKENS.analyst)[1]
    first = next(iter(ttl["values"].values()))
    assert first["interval"]["low"] is None and first["interval"]["note"] == "no formal guarantee"


def test_snapshot_at_a_past_tick_and_ticks_of_a_day(seeded: dict[str, Any]) -> None:
    url, ticks = seeded["url"], seeded["written"]["ticks"]
    t = int(ticks[-10])
    snap = get_json(f"{url}/api/snapshot?mech=pegasus&tick={t}")[1]
    assert snap["tick"] == t
    col = seeded["written"]["values"]["pegasus"][-10]
    assert [snap["values"][loc]["value"] for loc in seeded["site"].location_ids] == \
        pytest.approx(col)
    from readmodel.reader import day_of

    day_ticks = get_json(f"{url}/api/ticks?mech=pegasus&day={day_of(t)}")[1]["ticks"]
    assert day_ticks == [float(x) for x in ticks[-40:]]


def test_history_json_and_csv(seeded: dict[str, Any]) -> None:
    url, ticks = seeded["url"], seeded["written"]["ticks"]
    loc = "hall-103"
    j = seeded["site"].location_index[loc]
    start, end = int(ticks[5]), int(ticks[24])
    status, body = get_json(
        f"{url}/api/history?mech=laplace&location={loc}&start={start}&end={end}",
        token=TOKENS.analyst)
    assert status == 200
    assert [p["tick"] for p in body["points"]] == [int(t) for t in ticks[5:25]]
    assert [p["value"] for p in body["points"]] == \
        pytest.approx(seeded["written"]["values"]["laplace"][5:25, j])
    status, headers, raw = call(f"{url}/api/history?mech=laplace&location={loc}&format=csv",
                                token=TOKENS.analyst)
    assert status == 200 and headers["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(raw.decode())))
    assert len(rows) == len(ticks) and rows[0].keys() == {"mechanism", "location", "tick",
                                                          "value"}


def test_true_counts_and_ex_post_epsilon_are_never_served(seeded: dict[str, Any],
                                                          redis_client: Any) -> None:
    url = seeded["url"]
    marker = 987654.321
    t = int(seeded["written"]["ticks"][-1])
    redis_client.zadd(rl.eval_true("hall-101"), {json.dumps({"tick": t, "value": marker}): t})
    aid = write_alert(redis_client, {"tick": t, "location": "hall-110", "capacity": 150,
                                     "algorithm": "PPWLM", "beta": 0.05,
                                     "ex_post_epsilon": 0.777, "epsilon_vector": [1, 2]})
    bodies = [call(f"{url}{p}")[2] for p in (
        "/api/snapshot?mech=laplace", "/api/history?mech=laplace&location=hall-101",
        "/api/history?mech=laplace&location=hall-101&format=csv", "/api/alerts",
        "/api/alerts?format=csv", "/api/mechanisms", "/api/ledger", "/api/site")]
    for b in bodies:
        assert b"987654" not in b and b"0.777" not in b and b"ex_post" not in b
        assert b"eval" not in b
    alert = get_json(f"{url}/api/alerts")[1]["alerts"][0]
    assert alert["id"] == aid
    assert set(alert) == {"id", "tick", "location", "capacity", "algorithm", "beta",
                          "acknowledged"}


def test_acknowledge_is_admin_only_and_stored(seeded: dict[str, Any], redis_client: Any) -> None:
    url = seeded["url"]
    aid = write_alert(redis_client, {"tick": 1, "location": "hall-110", "capacity": 150,
                                     "algorithm": "TSLM", "beta": 0.1})
    status, body = get_json(f"{url}/api/alerts/{aid}/ack", token=TOKENS.analyst, method="POST")
    assert status == 403
    status, body = get_json(f"{url}/api/alerts/{aid}/ack", token=TOKENS.admin, method="POST")
    assert status == 200 and body["acknowledged"]["role"] == "admin"
    assert redis_client.hexists(rl.ALERTS_ACKS, aid)
    assert get_json(f"{url}/api/alerts")[1]["alerts"][0]["acknowledged"]["role"] == "admin"
    status, body = get_json(f"{url}/api/alerts/0-1/ack", method="POST")
    assert status == 400 and "existing alert" in body["error"]
    status, body = get_json(f"{url}/api/alerts/garbage/ack", method="POST")
    assert status == 400


def test_ledger_reports_spending_and_device_day_loss(seeded: dict[str, Any]) -> None:
    led = get_json(f"{seeded['url']}/api/ledger")[1]
    assert led["unit"].startswith("event-level")
    rows = {(r["day"], r["mechanism"]): r for r in led["rows"]}
    ticks = seeded["written"]["ticks"]
    from readmodel.reader import day_of

    first_day = day_of(ticks[0])
    lap = rows[(first_day, "laplace")]
    n = sum(1 for t in ticks if day_of(t) == first_day)
    assert lap["ticks_released"] == n
    # ε = 0.5 per tick: a device present every tick of the day loses 0.5 · n
    assert lap["device_day_worst_case_epsilon"] == pytest.approx(0.5 * n)
    assert lap["epsilon_spent"] == pytest.approx(0.5 * n)
    assert lap["epsilon_per_hour_present"] == pytest.approx(0.5 * 12)
    ttl = rows[(first_day, "ttl")]
    assert ttl["guarantee"] == "no formal guarantee" and ttl["epsilon_spent"] is None


def test_empty_read_model(served: Any) -> None:
    status, body = get_json(f"{served.url}/api/mechanisms")
    assert status == 200 and body == {"mechanisms": []}
    status, body = get_json(f"{served.url}/api/snapshot")
    assert status == 400 and "no mechanism has data yet" in body["error"]


def test_mechanism_allow_list(campus: Any, redis_url: str, redis_client: Any) -> None:
    from dash_support import Served

    seed(redis_client, campus, days=1, last_day_ticks=2, mechs=("laplace", "ttl"))
    s = Served(campus, redis_url, mechanisms_allowed=["ttl", "pegasus"])
    try:
        body = get_json(f"{s.url}/api/mechanisms")[1]
        assert [m["name"] for m in body["mechanisms"]] == ["ttl"]  # pegasus has no data
        status, err = get_json(f"{s.url}/api/snapshot?mech=laplace")
        assert status == 400 and "['ttl']" in err["error"]
    finally:
        s.close()
