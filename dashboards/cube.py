"""The daily cube's API: ``/api/histogram`` (released days) and ``/api/histogram/{day}``.

The worker releases each finished UTC day's (room × 5-minute slot) cube under the
device-day unit (streams/pipeline/cube.py, docs/device-day.md "The daily cube"); the
read model keeps it as ``hist:{day}:daily-cube``. Released values only: the analyst
token may read it. The page ``/static/cube.html`` plots the hourly profiles.
"""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web

from mechanisms.errors import InvalidParameterError

_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_BOOL = {"true": True, "1": True, "false": False, "0": False}


def _err() -> dict[str, Any]:
    return {"description": "bad parameter, auth failure or no release",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


#: the OpenAPI entries of the two routes (merged into dashboards.openapi.spec)
OPENAPI_PATHS: dict[str, Any] = {
    "/api/histogram": {"get": {
        "summary": "days with a released daily cube (device-day histogram share)",
        "responses": {"200": {"description": "OK", "content": {"application/json": {
            "schema": {"type": "object", "required": ["days"],
                       "properties": {"days": {"type": "array",
                                               "items": {"type": "string"}}}}}}},
                      "401": _err()}}},
    "/api/histogram/{day}": {"get": {
        "summary": "a day's released cube: hourly profile per room, floor and building "
                   "(consistent, ≥ 0) with error bars, the (room × 5-min slot) cube, the "
                   "release's ρ, ε, δ, sensitivity and release id",
        "parameters": [
            {"name": "day", "in": "path", "required": True,
             "schema": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"}},
            {"name": "cube", "in": "query", "required": False,
             "description": "include the (room × slot) cube (default true)",
             "schema": {"type": "string", "enum": ["true", "false"]}}],
        "responses": {"200": {"description": "OK", "content": {"application/json": {
            "schema": {"type": "object",
                       "required": ["day", "algorithm", "hourly", "hourly_sd", "nodes"]}}}},
                      "401": _err(), "404": _err()}}},
}


async def days(request: web.Request, rm: Any) -> web.Response:
    """Days with a released cube."""
    return web.json_response({"days": await rm.daily_cube_days()})


async def day(request: web.Request, rm: Any) -> web.Response:
    """One day's released cube (404 when none was released)."""
    d = request.match_info["day"]
    if not _DAY.match(d):
        raise InvalidParameterError(f"day must be YYYY-MM-DD, not {d!r}")
    flag = request.query.get("cube", "true").lower()
    if flag not in _BOOL:
        raise InvalidParameterError(f"cube must be true or false, not {flag!r}")
    doc = await rm.daily_cube(d)
    if doc is None:
        raise web.HTTPNotFound(reason=f"no daily cube released for {d} (the worker releases "
                                      "a day once the event clock has passed its midnight)")
    if not _BOOL[flag]:
        doc.pop("cube", None)
    return web.json_response(doc)


def register(router: web.UrlDispatcher, rm_key: Any) -> None:
    """Add the routes to the dashboard's router (``rm_key``: the app's ReadModel key)."""

    async def _days(request: web.Request) -> web.Response:
        return await days(request, request.app[rm_key])

    async def _day(request: web.Request) -> web.Response:
        return await day(request, request.app[rm_key])

    router.add_get("/api/histogram", _days)
    router.add_get("/api/histogram/{day}", _day)
