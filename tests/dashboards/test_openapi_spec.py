"""The OpenAPI document is assembled from small builders; it must stay what it was.

``openapi_spec_snapshot.json`` is ``dashboards.openapi.spec()`` (for two server URLs) and
``allowed_query_parameters()`` as the single 127-line ``_spec`` literal produced them
(commit f8a02df) before it was split into per-path builders; regenerated when the cube,
demo, game and health routes were documented (only their paths added). The comparison is by value
(dicts, lists, strings), so any change of the API description — a renamed field, a lost
response, a parameter schema — fails here; a deliberate API change regenerates the
snapshot in the same commit (``spec()`` dumped with ``json.dumps(..., sort_keys=True)``).
"""

from __future__ import annotations

import json
from pathlib import Path

from dashboards.openapi import allowed_query_parameters, spec

SNAPSHOT = Path(__file__).with_name("openapi_spec_snapshot.json")


def _plain(doc: object) -> object:
    return json.loads(json.dumps(doc))  # shared sub-dicts and tuples as plain JSON values


def test_spec_equals_the_snapshot_by_value() -> None:
    want = json.loads(SNAPSHOT.read_text())
    assert _plain(spec("/")) == want["spec"]
    assert _plain(spec("http://example.test:8080/")) == want["spec_other_server"]


def test_allowed_query_parameters_equal_the_snapshot() -> None:
    want = json.loads(SNAPSHOT.read_text())["allowed_query_parameters"]
    assert {k: sorted(v) for k, v in allowed_query_parameters().items()} == want


def test_spec_is_a_fresh_document_each_call() -> None:
    """Callers may mutate what they get (``spec`` itself fills in 400/503 responses)."""
    a = spec("/")
    a["paths"]["/api/site"]["get"]["responses"]["200"]["description"] = "changed"
    a["paths"]["/api/site"]["get"]["responses"].pop("400")
    assert spec("/") == json.loads(SNAPSHOT.read_text())["spec"]


def test_every_api_route_is_documented(campus) -> None:
    """Each ``/api`` route the dashboard serves (demo control on) is in the document, with
    the same methods — the game's routes were served undocumented until this test."""
    from dash_support import TOKENS

    from dashboards.app import create_app

    app = create_app(campus, "redis://127.0.0.1:1/0", TOKENS, demo_control=True)
    served: dict[str, set[str]] = {}
    for route in app.router.routes():
        path = route.resource.canonical if route.resource is not None else ""
        if path.startswith("/api/") and route.method != "HEAD":
            served.setdefault(path, set()).add(route.method.lower())
    documented = {p: set(ops) for p, ops in spec()["paths"].items()}
    assert served, "no /api routes found"
    for path, methods in served.items():
        assert path in documented, f"{path} is served but not in the OpenAPI document"
        assert methods <= documented[path], f"{path}: {methods} vs {documented[path]}"
