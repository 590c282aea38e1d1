"""The REST API's OpenAPI 3.0 description (served at ``/openapi.json``)."""

from __future__ import annotations

from typing import Any

from dashboards.cube import OPENAPI_PATHS as CUBE_PATHS

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
    for path, ops in doc["paths"].items():
        for op in ops.values():
            op["responses"].setdefault("400", _ERR)
            if path.startswith("/api/"):
                op["responses"].setdefault("503", _UNAVAILABLE)
    return doc


def _spec(server_url: str) -> dict[str, Any]:
    ref = "#/components/schemas/"
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "occustream dashboard API",
            "version": "1.0",
            "description": (
                "Released (differentially private) occupancy, over-capacity incidents, "
                "fire-code alerts (MIDE decisions) and, for "
                "admins, the privacy ledger. Send `Authorization: Bearer <token>` (or "
                "`?access_token=`). The analyst token reads everything except the ledger; "
                "the admin token also reads the ledger and acknowledges incidents. True "
                "counts are never served."
            ),
        },
        "servers": [{"url": server_url}],
        "security": [{"bearer": []}, {"query_token": []}],
        "paths": {
            "/api/whoami": {"get": {"summary": "the caller's role", "responses": {
                "200": _ok({"type": "object", "required": ["role"], "properties": {
                    "role": {"type": "string", "enum": ["analyst", "admin"]}}}),
                "401": _ERR}}},
            "/api/site": {"get": {"summary": "building plans: floors and location polygons",
                                  "responses": {"200": _ok({"$ref": ref + "Site"}),
                                                "401": _ERR}}},
            "/api/mechanisms": {"get": {
                "summary": "mechanisms with data and their public parameters",
                "responses": {"200": _ok({"type": "object", "required": ["mechanisms"],
                                          "properties": {"mechanisms": {
                                              "type": "array", "items": {
                                                  "$ref": ref + "Mechanism"}}}}),
                              "401": _ERR}}},
            "/api/ticks": {"get": {
                "summary": "ticks released for a mechanism (optionally one UTC day)",
                "parameters": [_MECH, _q("day", "UTC day YYYY-MM-DD", {
                    "type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"})],
                "responses": {"200": _ok({"type": "object", "required": ["mech", "ticks"],
                                          "properties": {"mech": {"type": "string"},
                                                         "ticks": {"type": "array", "items": {
                                                             "type": "number"}}}}),
                              "400": _ERR, "401": _ERR}}},
            "/api/snapshot": {"get": {
                "summary": "every location's released value at a tick (default latest)",
                "parameters": [_MECH, _q("tick", "epoch seconds", {"type": "number"})],
                "responses": {"200": _ok({"$ref": ref + "Snapshot"}), "400": _ERR,
                              "401": _ERR}}},
            "/api/history": {"get": {
                "summary": "released values of one location over time (JSON or CSV)",
                "parameters": [
                    _MECH,
                    _q("location", "location id", {"type": "string"}, required=True),
                    _q("start", "epoch seconds (inclusive)", {"type": "number"}),
                    _q("end", "epoch seconds (inclusive)", {"type": "number"}),
                    _q("limit", "max rows", {"type": "integer", "minimum": 1,
                                             "maximum": 100000}),
                    _q("format", "json (default) or csv", {"type": "string",
                                                           "enum": ["json", "csv"]}),
                ],
                "responses": {
                    "200": {"description": "OK", "content": {
                        _JSON: {"schema": {"$ref": ref + "History"}},
                        "text/csv": {"schema": {"type": "string"}}}},
                    "400": _ERR, "401": _ERR}}},
            "/api/alerts": {"get": {
                "summary": "fire-code alerts, newest first",
                "parameters": [_q("limit", "max alerts", {"type": "integer", "minimum": 1,
                                                          "maximum": 1000}),
                               _q("format", "json (default) or csv",
                                  {"type": "string", "enum": ["json", "csv"]})],
                "responses": {"200": {"description": "OK", "content": {
                    _JSON: {"schema": {"type": "object", "required": ["alerts"], "properties": {
                        "alerts": {"type": "array", "items": {"$ref": ref + "Alert"}}}}},
                    "text/csv": {"schema": {"type": "string"}}}},
                    "400": _ERR, "401": _ERR}}},
            "/api/alerts/{alert_id}/ack": {"post": {
                "summary": "acknowledge an alert (admin)",
                "parameters": [{"name": "alert_id", "in": "path", "required": True,
                                "schema": {"type": "string"}}],
                "responses": {"200": _ok({"type": "object"}), "400": _ERR, "401": _ERR,
                              "403": _ERR}}},
            "/api/incidents": {"get": {
                "summary": "over-capacity incidents (one per location and episode), the open "
                           "ones first",
                "parameters": [_q("limit", "max incidents", {"type": "integer", "minimum": 1,
                                                             "maximum": 1000}),
                               _q("format", "json (default) or csv",
                                  {"type": "string", "enum": ["json", "csv"]})],
                "responses": {"200": {"description": "OK", "content": {
                    _JSON: {"schema": {"type": "object", "required": ["incidents"],
                                       "properties": {"incidents": {
                                           "type": "array",
                                           "items": {"$ref": ref + "Incident"}}}}},
                    "text/csv": {"schema": {"type": "string"}}}},
                    "400": _ERR, "401": _ERR}}},
            "/api/incidents/{incident_id}/ack": {"post": {
                "summary": "acknowledge an incident (admin; once: later calls return the "
                           "first acknowledgement)",
                "parameters": [{"name": "incident_id", "in": "path", "required": True,
                                "schema": {"type": "string"}}],
                "responses": {"200": _ok({"type": "object"}), "400": _ERR, "401": _ERR,
                              "403": _ERR}}},
            "/api/ledger": {"get": {
                "summary": "privacy ledger: ε per mechanism and day, device-day loss (admin)",
                "responses": {"200": _ok({"type": "object", "required": ["unit", "rows"]}),
                              "401": _ERR, "403": _ERR}}},
            "/api/privacy": {"get": {
                "summary": "unit of privacy, ε_day and δ, ε spent today and the day's "
                           "projection; the header text",
                "responses": {"200": _ok({"type": "object",
                                          "required": ["unit", "protected", "headline"]}),
                              "401": _ERR}}},
            "/api/events": {"get": {
                "summary": "Server-Sent Events: `tick` (a snapshot), `alert` (one MIDE "
                           "decision) and `incident` (a lifecycle event: open, update, "
                           "resolve)",
                "parameters": [_MECH],
                "responses": {"200": {"description": "event stream",
                                      "content": {"text/event-stream": {
                                          "schema": {"type": "string"}}}},
                              "401": _ERR}}},
            **_demo_paths(),
        },
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "query_token": {"type": "apiKey", "in": "query", "name": "access_token"},
            },
            "schemas": {
                "Error": {"type": "object", "required": ["error", "status"], "properties": {
                    "error": {"type": "string"}, "status": {"type": "integer"}}},
                "Mechanism": {"type": "object", "required": ["name", "meta"], "properties": {
                    "name": {"type": "string"}, "meta": {"type": "object"},
                    "latest_tick": {"type": "number", "nullable": True}}},
                "Site": {"type": "object", "required": ["id", "name", "buildings"]},
                "Snapshot": {"type": "object", "required": ["mech", "tick", "values"],
                             "properties": {"mech": {"type": "string"},
                                            "tick": {"type": "number", "nullable": True},
                                            "values": {"type": "object"}}},
                "History": {"type": "object", "required": ["mech", "location", "points"],
                            "properties": {"mech": {"type": "string"},
                                           "location": {"type": "string"},
                                           "points": {"type": "array", "items": {
                                               "type": "object",
                                               "properties": {"tick": {"type": "number"},
                                                              "value": {"type": "number"}}}}}},
                "Alert": {"type": "object", "required": ["id", "tick", "location"],
                          "properties": {"id": {"type": "string"},
                                         "tick": {"type": "number"},
                                         "location": {"type": "string"},
                                         "capacity": {"type": "number", "nullable": True},
                                         "algorithm": {"type": "string", "nullable": True},
                                         "beta": {"type": "number", "nullable": True},
                                         "acknowledged": {"type": "object",
                                                          "nullable": True}}},
                "Incident": {"type": "object",
                             "required": ["id", "location", "state", "opened", "last_seen"],
                             "properties": {
                                 "id": {"type": "string"},
                                 "location": {"type": "string"},
                                 "state": {"type": "string", "enum": ["open", "resolved"]},
                                 "opened": {"type": "number"},
                                 "last_seen": {"type": "number"},
                                 "resolved": {"type": "number", "nullable": True},
                                 "capacity": {"type": "number", "nullable": True},
                                 "algorithm": {"type": "string", "nullable": True},
                                 "beta": {"type": "number", "nullable": True},
                                 "peak": {"type": "number", "nullable": True,
                                          "description": "largest released (noisy) value "
                                                         "while open"},
                                 "peak_tick": {"type": "number", "nullable": True},
                                 "peak_mechanism": {"type": "string", "nullable": True},
                                 "decisions": {"type": "object", "properties": {
                                     "tick": {"type": "integer"},
                                     "hour": {"type": "integer"}}},
                                 "opened_by": {"type": "string", "nullable": True},
                                 "guarantee": {"type": "string", "nullable": True},
                                 "version": {"type": "integer", "nullable": True},
                                 "acknowledged": {"type": "object", "nullable": True}}},
            },
        },
    }
