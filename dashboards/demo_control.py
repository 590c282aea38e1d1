"""The demo's clock and speed control (``GET /api/demo``, ``POST /api/demo/speed``).

``occustream demo`` plays a simulated building at an accelerated pace. Its producer
reports its simulated "now" to the read model (``demo:clock``) and reads the pace the
page asks for (``demo:speed``); this module serves the first and writes the second
(:func:`readmodel.writer.queue_demo_speed`). The page's clock and buttons are in
``static/demo.js``.

Changing the pace is allowed only when the dashboard runs inside the demo
(``create_app(..., demo_control=True)``, which ``occustream dashboard`` sets when
``OCCUSTREAM_DEMO`` is true — the demo sets it for its children); then any signed-in
role may change it (it is the demo's play button, not a pipeline setting). Elsewhere
``POST /api/demo/speed`` answers 404 and ``GET /api/demo`` says ``enabled: false``.
"""

from __future__ import annotations

import math
from typing import Any

from aiohttp import web

from mechanisms.errors import InvalidParameterError
from readmodel.writer import queue_demo_speed

#: The paces the page offers (simulated seconds per wall second; 0 = paused).
SPEEDS = (0, 1, 10, 30, 120, 600)
#: The fastest pace accepted (one simulated hour per wall second).
MAX_SPEED = 3600.0

ENABLED: Any = (web.AppKey("demo_control", bool) if hasattr(web, "AppKey")
                else "occustream.demo_control")


def check_speed(value: Any) -> float:
    """A pace from a request body: a number in [0, :data:`MAX_SPEED`]."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
            value) or not 0 <= value <= MAX_SPEED:
        raise InvalidParameterError(
            f"speed must be a number in [0, {MAX_SPEED:g}] (0 = paused), not {value!r}")
    return float(value)


def register(app: web.Application, rm_key: Any, role_key: Any, *, enabled: bool) -> None:
    """Add the two routes to ``app`` (its read model under ``rm_key``)."""
    app[ENABLED] = bool(enabled)

    async def clock(request: web.Request) -> web.Response:
        """The demo's simulated now, pace and the pace asked for."""
        on = request.app[ENABLED]
        doc = await request.app[rm_key].demo_clock() if on else None
        return web.json_response({"enabled": on, "speeds": list(SPEEDS), "clock": doc})

    async def set_speed(request: web.Request) -> web.Response:
        """Ask the demo's producer for another pace."""
        if not request.app[ENABLED]:
            raise web.HTTPNotFound(reason="no demo is running with this dashboard")
        try:
            body = await request.json()
        except (ValueError, UnicodeDecodeError):
            raise InvalidParameterError("body must be JSON like {\"speed\": 30}") from None
        speed = check_speed(body.get("speed") if isinstance(body, dict) else body)
        pipe = request.app[rm_key].client.pipeline(transaction=False)
        queue_demo_speed(pipe, speed, role=request[role_key])
        await pipe.execute()
        return web.json_response({"requested": speed})

    app.router.add_get("/api/demo", clock)
    app.router.add_post("/api/demo/speed", set_speed)


def openapi_paths() -> dict[str, Any]:
    """The two routes' OpenAPI description (merged into ``dashboards.openapi.spec``)."""
    err = {"$ref": "#/components/schemas/Error"}
    errors = {"description": "bad body, auth failure, or no demo running",
              "content": {"application/json": {"schema": err}}}
    clock = {"type": "object", "nullable": True, "properties": {
        "sim_ts": {"type": "number", "nullable": True},
        "speed": {"type": "number", "nullable": True},
        "wall_ts": {"type": "number", "nullable": True},
        "requested": {"type": "number", "nullable": True}}}
    return {
        "/api/demo": {"get": {
            "summary": "the demo's clock: simulated now (epoch s), its pace (simulated s "
                       "per wall s) and the pace asked for; enabled false outside a demo",
            "responses": {"200": {"description": "OK", "content": {"application/json": {
                "schema": {"type": "object", "required": ["enabled", "speeds", "clock"],
                           "properties": {"enabled": {"type": "boolean"},
                                          "speeds": {"type": "array",
                                                     "items": {"type": "number"}},
                                          "clock": clock}}}}},
                          "401": errors}}},
        "/api/demo/speed": {"post": {
            "summary": "ask the demo's producer for another pace (0 = paused); only "
                       "inside occustream demo",
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["speed"], "properties": {
                    "speed": {"type": "number", "minimum": 0, "maximum": MAX_SPEED}}}}}},
            "responses": {"200": {"description": "OK", "content": {"application/json": {
                "schema": {"type": "object", "required": ["requested"],
                           "properties": {"requested": {"type": "number"}}}}}},
                "400": errors, "401": errors, "404": errors}}},
    }

