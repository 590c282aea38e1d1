"""The REST API's OpenAPI 3.0 description (served at ``/openapi.json``)."""

from __future__ import annotations

from typing import Any

from dashboards.cube import OPENAPI_PATHS as CUBE_PATHS
from dashboards.game import PLAYER_RE, ROUND_TTL_S

_ERR = {"description": "bad parameter or auth failure",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
_UNAVAILABLE = {"description": "the read model (Redis) is unavailable, or (events) too many "
                               "live-update clients; retry after Retry-After seconds",
                "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/Error"}}}}


def _q(name: str, desc: str, schema: dict[str, Any], required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": required, "description": desc,
            "schema": schema}


_MECH = _q("mech", "mechanism (one of GET /api/mechanisms); default: the first",
           {"type": "string"})
_JSON = "application/json"


def _ok(schema: dict[str, Any], desc: str = "OK") -> dict[str, Any]:
    return {"description": desc, "content": {_JSON: {"schema": schema}}}


def allowed_query_parameters() -> dict[str, frozenset[str]]:
    """Path → the query parameters its GET/POST accepts (plus ``access_token``)."""
    out = {}
    for path, ops in spec()["paths"].items():
        names = {p["name"] for op in ops.values() for p in op.get("parameters", [])
                 if p["in"] == "query"}
        out[path] = frozenset(names | {"access_token"})
    return out


def _demo_paths() -> dict[str, Any]:
    from dashboards.demo_control import openapi_paths

    return openapi_paths()


def spec(server_url: str = "/") -> dict[str, Any]:
    """The OpenAPI document.

    Every operation documents 400 (bad or unknown parameters), every ``/api`` one 503
    (Redis outage; for the event stream also the client cap).
    """
    doc = _spec(server_url)
    doc["paths"].update(CUBE_PATHS)
    doc["paths"].update(_game_paths())
    for path, ops in doc["paths"].items():
        for op in ops.values():
            op["responses"].setdefault("400", _ERR)
            if path.startswith("/api/"):
                op["responses"].setdefault("503", _UNAVAILABLE)
    return doc


_REF = "#/components/schemas/"
_FORMAT = _q("format", "json (default) or csv", {"type": "string", "enum": ["json", "csv"]})
_CSV = {"text/csv": {"schema": {"type": "string"}}}
_DESCRIPTION = (
    "Released (differentially private) occupancy, over-capacity incidents, "
    "fire-code alerts (MIDE decisions) and, for "
    "admins, the privacy ledger. Send `Authorization: Bearer <token>` (or "
    "`?access_token=`). The analyst token reads everything except the ledger; "
    "the admin token also reads the ledger and acknowledges incidents. True "
    "counts are never served."
)


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": _REF + name}


def _obj(required: list[str], **properties: Any) -> dict[str, Any]:
    """An object schema; ``properties`` omitted when none are given."""
    out: dict[str, Any] = {"type": "object", "required": required}
    if properties:
        out["properties"] = properties
    return out


def _nullable(kind: str) -> dict[str, Any]:
    return {"type": kind, "nullable": True}


def _op(summary: str, ok: dict[str, Any], *, parameters: list[dict[str, Any]] | None = None,
        errors: tuple[str, ...] = ("401",), method: str = "get") -> dict[str, Any]:
    """One path item with one operation: ``ok`` as 200, ``_ERR`` for each of ``errors``."""
    op: dict[str, Any] = {"summary": summary}
    if parameters is not None:
        op["parameters"] = parameters
    op["responses"] = {"200": ok, **{code: _ERR for code in errors}}
    return {method: op}


def _json_or_csv(schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": "OK", "content": {_JSON: {"schema": schema}, **_CSV}}


def _limit(desc: str, maximum: int) -> dict[str, Any]:
    return _q("limit", desc, {"type": "integer", "minimum": 1, "maximum": maximum})


def _ack(kind: str, summary: str) -> dict[str, Any]:
    param = {"name": f"{kind}_id", "in": "path", "required": True,
             "schema": {"type": "string"}}
    return _op(summary, _ok({"type": "object"}), parameters=[param],
               errors=("400", "401", "403"), method="post")


def _list(kind: str, summary: str, item: str) -> dict[str, Any]:
    """``/api/alerts`` and ``/api/incidents``: newest first, JSON or CSV."""
    schema = _obj([kind], **{kind: {"type": "array", "items": _ref(item)}})
    return _op(summary, _json_or_csv(schema),
               parameters=[_limit(f"max {kind}", 1000), _FORMAT], errors=("400", "401"))


def _read_paths() -> dict[str, Any]:
    """The paths of who and what: role, site, mechanisms, ticks, snapshot."""
    day = _q("day", "UTC day YYYY-MM-DD", {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"})
    return {
        "/api/health": {"get": {
            "summary": "liveness: the read model (Redis) is reachable (no token needed)",
            "security": [], "responses": {"200": _ok(_obj(["ok"], ok={"type": "boolean"}))}}},
        "/api/whoami": _op("the caller's role", _ok(_obj(["role"], role={
            "type": "string", "enum": ["analyst", "admin"]}))),
        "/api/site": _op("building plans: floors and location polygons", _ok(_ref("Site"))),
        "/api/mechanisms": _op("mechanisms with data and their public parameters", _ok(_obj(
            ["mechanisms"], mechanisms={"type": "array", "items": _ref("Mechanism")}))),
        "/api/ticks": _op("ticks released for a mechanism (optionally one UTC day)", _ok(_obj(
            ["mech", "ticks"], mech={"type": "string"},
            ticks={"type": "array", "items": {"type": "number"}})),
            parameters=[_MECH, day], errors=("400", "401")),
        "/api/snapshot": _op(
            "every location's released value at a tick (default latest)", _ok(_ref("Snapshot")),
            parameters=[_MECH, _q("tick", "epoch seconds", {"type": "number"})],
            errors=("400", "401")),
    }


def _history_path() -> dict[str, Any]:
    params = [
        _MECH,
        _q("location", "location id", {"type": "string"}, required=True),
        _q("start", "epoch seconds (inclusive)", {"type": "number"}),
        _q("end", "epoch seconds (inclusive)", {"type": "number"}),
        _limit("max rows", 100000),
        _FORMAT,
    ]
    return {"/api/history": _op("released values of one location over time (JSON or CSV)",
                                _json_or_csv(_ref("History")), parameters=params,
                                errors=("400", "401"))}


def _alert_paths() -> dict[str, Any]:
    """Alerts, incidents and their acknowledgements."""
    return {
        "/api/alerts": _list("alerts", "fire-code alerts, newest first", "Alert"),
        "/api/alerts/{alert_id}/ack": _ack("alert", "acknowledge an alert (admin)"),
        "/api/incidents": _list("incidents", "over-capacity incidents (one per location and "
                                "episode), the open ones first", "Incident"),
        "/api/incidents/{incident_id}/ack": _ack(
            "incident", "acknowledge an incident (admin; once: later calls return the "
                        "first acknowledgement)"),
    }


def _privacy_and_event_paths() -> dict[str, Any]:
    events = {"description": "event stream",
              "content": {"text/event-stream": {"schema": {"type": "string"}}}}
    return {
        "/api/ledger": _op(
            "privacy ledger: ε per mechanism and day, device-day loss (admin)",
            _ok(_obj(["unit", "rows"])), errors=("401", "403")),
        "/api/privacy": _op(
            "unit of privacy, ε_day and δ, ε spent today and the day's projection; the "
            "header text", _ok(_obj(["unit", "protected", "headline"]))),
        "/api/events": _op(
            "Server-Sent Events: `tick` (a snapshot), `alert` (one MIDE decision) and "
            "`incident` (a lifecycle event: open, update, resolve)", events,
            parameters=[_MECH]),
    }


def _read_schemas() -> dict[str, Any]:
    """Error, Mechanism, Site, Snapshot, History."""
    number, string = {"type": "number"}, {"type": "string"}
    point = {"type": "object", "properties": {"tick": number, "value": number}}
    return {
        "Error": _obj(["error", "status"], error=string, status={"type": "integer"}),
        "Mechanism": _obj(["name", "meta"], name=string, meta={"type": "object"},
                          latest_tick=_nullable("number")),
        "Site": _obj(["id", "name", "buildings"]),
        "Snapshot": _obj(["mech", "tick", "values"], mech=string, tick=_nullable("number"),
                         values={"type": "object"}),
        "History": _obj(["mech", "location", "points"], mech=string, location=string,
                        points={"type": "array", "items": point}),
    }


def _alert_schemas() -> dict[str, Any]:
    """Alert and Incident."""
    number, string = {"type": "number"}, {"type": "string"}
    peak = {**_nullable("number"), "description": "largest released (noisy) value while open"}
    decisions = {"type": "object", "properties": {"tick": {"type": "integer"},
                                                  "hour": {"type": "integer"}}}
    return {
        "Alert": _obj(["id", "tick", "location"], id=string, tick=number, location=string,
                      capacity=_nullable("number"), algorithm=_nullable("string"),
                      beta=_nullable("number"), acknowledged=_nullable("object")),
        "Incident": _obj(
            ["id", "location", "state", "opened", "last_seen"], id=string, location=string,
            state={"type": "string", "enum": ["open", "resolved"]}, opened=number,
            last_seen=number, resolved=_nullable("number"), capacity=_nullable("number"),
            algorithm=_nullable("string"), beta=_nullable("number"), peak=peak,
            peak_tick=_nullable("number"), peak_mechanism=_nullable("string"),
            decisions=decisions, opened_by=_nullable("string"), guarantee=_nullable("string"),
            version=_nullable("integer"), acknowledged=_nullable("object")),
    }


def _spec(server_url: str) -> dict[str, Any]:
    return {
        "openapi": "3.0.3",
        "info": {"title": "occustream dashboard API", "version": "1.0",
                 "description": _DESCRIPTION},
        "servers": [{"url": server_url}],
        "security": [{"bearer": []}, {"query_token": []}],
        "paths": {**_read_paths(), **_history_path(), **_alert_paths(),
                  **_privacy_and_event_paths(), **_demo_paths()},
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "query_token": {"type": "apiKey", "in": "query", "name": "access_token"},
            },
            "schemas": {**_read_schemas(), **_alert_schemas()},
        },
    }


def _error(desc: str) -> dict[str, Any]:
    """``_ERR`` with an endpoint-specific description."""
    return {**_ERR, "description": desc}


def _json_body(required: list[str], **properties: Any) -> dict[str, Any]:
    return {"required": True, "content": {_JSON: {"schema": _obj(required, **properties)}}}


def _game_paths() -> dict[str, Any]:
    """IoT-DETECTIVE (``dashboards.game``): start a round, answer it, the leaderboard."""
    player = {"type": "string", "pattern": PLAYER_RE.pattern,
              "description": "1 to 24 letters, digits, spaces, '.', '_' or '-'"}
    rounds = _op("IoT-DETECTIVE: a new round — a released day and its questions (no truth)",
                 _ok(_obj(["id", "day", "mechanism", "epsilon", "ticks", "locations",
                           "released", "tasks", "time_limit_s", "player", "rounds_played",
                           "bonus"])), method="post")
    rounds["post"]["requestBody"] = _json_body(["player"], player=player, mechanism={
        "type": "string", "description": "default: a random one with a guarantee"},
        epsilon={"type": "number",
                 "description": "one of the mechanism's game grid; default: random"})
    rounds["post"]["responses"]["503"] = _error(
        "too many rounds are being prepared (2 generating, 8 waiting); retry after "
        "Retry-After seconds")
    answer = _op("IoT-DETECTIVE: score a round's answers and reveal the truth",
                 _ok(_obj(["points", "time_factor", "bonus", "late", "elapsed_s", "tasks",
                           "round", "player", "total", "leaderboard"])),
                 parameters=[{"name": "round_id", "in": "path", "required": True,
                              "schema": {"type": "string"}}], method="post")
    answer["post"]["requestBody"] = _json_body(["answers"], answers={
        "type": "object", "description": "task id → the player's estimate"})
    answer["post"]["responses"].update({
        "404": _error(f"the round is unknown or expired (rounds last {ROUND_TTL_S:g} s)"),
        "409": _error("the round has already been answered")})
    board = _op("IoT-DETECTIVE: the best players", _ok(_obj(["players"], players={
        "type": "array", "items": _obj(["name", "points", "rounds"])})),
        parameters=[{"name": "limit", "in": "query", "required": False,
                     "description": "players to return (1–100, default 10)",
                     "schema": {"type": "integer", "minimum": 1, "maximum": 100}}])
    return {"/api/game/rounds": rounds, "/api/game/rounds/{round_id}/answer": answer,
            "/api/game/leaderboard": board}
