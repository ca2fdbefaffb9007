"""The package's layers, as docs/architecture.md states them, checked on the import graph.

Every ``import`` in ``src/pyvolcano`` counts, function-level ones included; imports under
``if TYPE_CHECKING:`` do not (they never run). A module importing ``a.b.c`` depends on
``a.b.c`` only, not on the packages above it.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "pyvolcano"

CORE = ("api", "conf", "framework", "actions", "plugins", "cache", "diagnosis")
"""Packages that decide: pure, no I/O, nothing of the layers above them."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def graph() -> dict[str, frozenset[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, frozenset[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and _is_type_checking(node.test)
                       for stmt in node.body for n in ast.walk(stmt)}
        targets: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                targets.update(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names)
        edges[name] = frozenset(r for t in targets if t.startswith("pyvolcano")
                                and (r := resolve(t)) is not None and r != name)
    return edges


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _in(module: str, *packages: str) -> bool:
    return any(module == f"pyvolcano.{p}" or module.startswith(f"pyvolcano.{p}.") for p in packages)


def _cycles(edges: dict[str, frozenset[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_import_graph_has_no_cycle() -> None:
    assert _cycles(graph()) == []


def test_only_the_command_lines_import_the_cli() -> None:
    offenders = sorted(m for m, deps in graph().items() if not _in(m, "cli", "vcctl", "__main__")
                       and any(_in(d, "cli") for d in deps))
    assert offenders == []


def test_the_cache_imports_nothing_of_the_framework() -> None:
    offenders = sorted((m, d) for m, deps in graph().items() if _in(m, "cache") for d in deps if _in(d, "framework"))
    assert offenders == []


def test_the_core_imports_nothing_of_the_layers_above_it() -> None:
    above = ("runtime", "simulator", "cli", "vcctl", "kube", "controllers", "webhooks", "deploy", "forecast",
             "metrics", "admission", "dashboard")
    offenders = sorted((m, d) for m, deps in graph().items() if _in(m, *CORE) for d in deps if _in(d, *above))
    assert offenders == []


def test_only_the_cycle_opens_and_closes_sessions_outside_the_framework() -> None:
    """A session is opened with ``framework.session.open_session`` (or by calling ``Session``)
    and closed with ``Session.close``; outside the framework only ``runtime/cycle.py`` may
    import the opener, call the constructor or name ``close_session``."""
    openers: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        module = _module_name(path)
        if _in(module, "framework"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.ImportFrom) and node.module == "pyvolcano.framework.session"
                    and any(a.name == "open_session" for a in node.names)) or (
                    isinstance(node, ast.Attribute) and node.attr in ("open_session", "close_session")) or (
                    isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Session"):
                openers.add(module)
    assert openers <= {"pyvolcano.runtime.cycle"}
