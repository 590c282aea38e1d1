"""The layer order of docs/ARCHITECTURE.md, enforced from the imports (every import, at
module level or inside a function).

A package may import its own modules and the packages of lower layers only; packages
of the same layer never import each other. A test below adds an upward import to a
copy of the tree and shows that the check fails.
"""

from __future__ import annotations

import ast
import importlib
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: package → layer (higher may import lower; equal layers are independent).
LAYERS: dict[str, int] = {
    "mechanisms": 0,   # the privacy library (pure numpy/scipy)
    "occupancy": 1,    # the shared occupancy domain: buildings, schema, oracle, key layout
    "infra": 1,        # embedded services (Tansu, Redis), topic creation, service URLs
    "simulator": 2,    # population model, events, producers, replay
    "streams": 2,      # the streaming runtime (Faust host, stages, checkpoints, health)
    "connectors": 2,   # ingest from real WiFi controllers
    "readmodel": 3,    # the one writer and the one reader of the Redis read model
    "dashboards": 4,   # web app, API, subscribers, webhooks
    "research": 5,     # evaluate, tune, audit, mide-eval, histogram evaluation, reports
    "occustream": 6,   # the command line and the demo: the composition root
    "bench": 6,        # benchmarks
}


def _project_imports(path: Path) -> list[tuple[int, str]]:
    """(line, top-level package) of every import of a project package in ``path``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        out += [(node.lineno, n.split(".")[0]) for n in names if n.split(".")[0] in LAYERS]
    return out


def violations(root: Path) -> list[str]:
    """Every import that goes up a layer or sideways into another package of its layer."""
    bad = []
    for pkg, layer in LAYERS.items():
        for path in sorted((root / pkg).rglob("*.py")):
            for line, target in _project_imports(path):
                if target != pkg and LAYERS[target] >= layer:
                    bad.append(f"{path.relative_to(root)}:{line} ({pkg}, layer {layer}) "
                               f"imports {target} (layer {LAYERS[target]})")
    return bad


def test_every_package_has_a_layer():
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    assert packages - set(LAYERS) == set(), "add the new package to LAYERS (and ARCHITECTURE.md)"


def test_imports_only_go_down():
    assert violations(ROOT) == []


def test_no_import_cycle_between_modules():
    """No two modules of the project import each other (directly or through a cycle)."""
    graph: dict[str, set[str]] = {}
    modules = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
               for pkg in LAYERS for p in (ROOT / pkg).rglob("*.py")}
    for mod, path in modules.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                cands = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                cands = [a.name for a in node.names]
            else:
                continue
            deps |= {c for c in cands if c in modules and c != mod}
        graph[mod] = deps
    # packages' __init__ re-exports are edges too, but a package importing its own
    # submodules is not a cycle with them; drop parent → child edges
    for mod in graph:
        graph[mod] = {d for d in graph[mod] if not d.startswith(mod + ".")}
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert cycles == []


def test_the_check_fails_on_an_upward_import(tmp_path):
    """Add ``from dashboards import app`` to a copy of a simulator module: one violation."""
    for pkg in LAYERS:
        if (ROOT / pkg).is_dir():
            shutil.copytree(ROOT / pkg, tmp_path / pkg,
                            ignore=shutil.ignore_patterns("__pycache__", "results", "static"))
    assert violations(tmp_path) == []
    target = tmp_path / "simulator" / "model.py"
    target.write_text(target.read_text() + "\n\ndef _leak():\n    from dashboards import app\n")
    found = violations(tmp_path)
    assert len(found) == 1 and "simulator/model.py" in found[0] and "imports dashboards" in found[0]


@pytest.mark.parametrize("pkg", sorted(p for p in LAYERS if (ROOT / p).is_dir()))
def test_package_docstring_names_no_stale_module(pkg):
    init = ROOT / pkg / "__init__.py"
    if not init.exists():
        pytest.skip(f"{pkg} has no __init__.py")
    doc = ast.get_docstring(ast.parse(init.read_text())) or ""
    assert "streams.tools" not in doc and "streams/tools" not in doc


def _mechanism_names() -> set[str]:
    from mechanisms.registry import REGISTRY

    return set(REGISTRY)


def _names_in(node: ast.AST, names: set[str]) -> list[str]:
    found = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            v = sub.value
            if v in names:
                found.append(v)
    return found


#: Modules that compare names as *labels*, not as meaning, and why.
LABEL_MODULES = {
    "research/reproduce.py": "matches result rows to the thesis' tables, keyed by name",
}


def name_branches(root: Path) -> list[str]:
    """Comparisons (``==``, ``!=``, ``in``) and ``startswith`` on a mechanism's name.

    What a mechanism is and does belongs to :mod:`mechanisms.registry`; anywhere else a
    test of a name means that meaning was restated. Tables of names (dict literals,
    defaults) are not branches and are allowed.
    """
    names = _mechanism_names()
    bad = []
    for pkg in LAYERS:
        for path in sorted((root / pkg).rglob("*.py")):
            rel = path.relative_to(root)
            if rel.parts[0] == "mechanisms" or rel.as_posix() in LABEL_MODULES:
                continue  # the library that defines the mechanisms and the registry
            tree = ast.parse(path.read_text(), filename=str(path))
            for node in ast.walk(tree):
                hit: list[str] = []
                if isinstance(node, ast.Compare):
                    hit = _names_in(node, names)
                elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                      and node.func.attr in ("startswith", "endswith")):
                    hit = _names_in(ast.Tuple(elts=node.args, ctx=ast.Load()), names)
                if hit:
                    bad.append(f"{rel}:{node.lineno} branches on {sorted(set(hit))}")
    return bad


def test_no_branch_on_a_mechanism_name_outside_the_registry():
    assert name_branches(ROOT) == []


def test_the_name_check_fails_on_a_branch(tmp_path):
    (tmp_path / "readmodel").mkdir()
    (tmp_path / "readmodel" / "x.py").write_text(
        "def f(mech):\n    return 1 if mech == 'pegasus' else 2\n")
    assert name_branches(tmp_path) == ["readmodel/x.py:2 branches on ['pegasus']"]


def _all_modules() -> list[str]:
    out = []
    for pkg in LAYERS:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if "results" in parts:
                continue
            out.append(".".join(parts).removesuffix(".__init__"))
    return out


@pytest.mark.parametrize("module", _all_modules())
def test_every_module_imports(module):
    """A module that imports a moved or renamed module fails here, not in a user's hands."""
    importlib.import_module(module)
