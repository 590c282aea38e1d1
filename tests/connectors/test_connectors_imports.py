"""Connectors run at the network edge: no Faust runtime, no dashboards, no pipeline stage.

They may use mechanisms (pseudonyms), the domain modules (occupancy.schema,
occupancy.buildings), aiohttp and aiokafka; the project's own imports are at module level
(the lead rewrites the paths when the domain modules move)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = ("faust", "dashboards", "streams.app", "streams.pipeline", "occustream.worker",
             "occustream.demo", "readmodel.writer", "redis")
PROJECT = ("mechanisms", "streams", "simulator", "dashboards", "connectors")


@pytest.mark.parametrize("path", sorted((ROOT / "connectors").glob("*.py")),
                         ids=lambda p: p.name)
def test_connector_imports(path: Path) -> None:
    tree = ast.parse(path.read_text())
    top = set(tree.body)
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            assert not any(name == f or name.startswith(f + ".") for f in FORBIDDEN), (
                f"{path.name}:{node.lineno} imports {name}")
            if name.split(".")[0] in PROJECT:
                assert node in top, f"{path.name}:{node.lineno}: {name} imported inside a function"
