"""Repository hygiene the brief promises, checked on every `make test`.

* ruff is clean (Google docstrings, imports, pyupgrade, …);
* ``mechanisms/`` stays pure: no service client (Kafka, Redis, Faust) and none of the
  other packages imported;
* library code never uses ``assert`` for validation (stripped under ``-O``);
* ``print`` only in command-line modules (those defining ``main``), never in
  ``mechanisms/``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ("mechanisms", "occupancy", "infra", "simulator", "streams", "connectors", "readmodel",
           "dashboards", "research", "occustream")
FORBIDDEN_IN_MECHANISMS = {
    "faust", "redis", "kafka", "aiokafka", "aiohttp", "streams", "simulator", "dashboards"
}


def _modules(*packages: str) -> list[Path]:
    return sorted(p for pkg in packages for p in (ROOT / pkg).rglob("*.py"))


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def test_ruff_clean():
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "."],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


@pytest.mark.parametrize("path", _modules("mechanisms"), ids=lambda p: str(p.relative_to(ROOT)))
def test_mechanisms_are_pure(path):
    for node in ast.walk(_tree(path)):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            assert name.split(".")[0] not in FORBIDDEN_IN_MECHANISMS, (
                f"{path.relative_to(ROOT)}:{node.lineno} imports {name}"
            )


def test_no_assert_in_library_code():
    found = [
        f"{p.relative_to(ROOT)}:{n.lineno}"
        for p in _modules(*LIBRARY)
        for n in ast.walk(_tree(p))
        if isinstance(n, ast.Assert)
    ]
    assert found == []


def test_print_only_in_command_line_modules():
    offenders = []
    for p in _modules(*LIBRARY):
        tree = _tree(p)
        is_cli = any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body)
        prints = [
            n.lineno
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print"
        ]
        if prints and (not is_cli or p.is_relative_to(ROOT / "mechanisms")):
            offenders.append(f"{p.relative_to(ROOT)}:{prints[0]}")
    assert offenders == []


def test_test_module_basenames_are_unique():
    """pytest's default import mode needs unique basenames (tests/ has no __init__.py)."""
    names = [p.name for p in (ROOT / "tests").rglob("test_*.py")]
    assert sorted({n for n in names if names.count(n) > 1}) == []
