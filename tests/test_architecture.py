"""The package's layers, as docs/architecture.md states them, checked on the import graph.

The layer table is read from docs/architecture.md itself (its ``| layer | packages |`` table),
so the document and the check cannot drift apart: every package of ``src/pyvolcano`` is in
exactly one layer; no package imports a package of a later layer; no two packages import each
other (within a layer too), nor reach themselves through others; the import graph of modules
has no cycle. The document's picture of the layers shows the table's packages and exactly the
imports within a layer, and every module it names exists.

Every ``import`` in ``src/pyvolcano`` counts, function-level ones included; imports under
``if TYPE_CHECKING:`` do not (they never run). A module importing ``a.b.c`` depends on
``a.b.c`` only, not on the packages above it.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "pyvolcano"
DOC = ROOT / "docs" / "architecture.md"

OUTSIDE_THE_LAYERS = ("__main__",)
"""``python -m pyvolcano``: the command line's entry point, above every layer."""

KNOWN_VIOLATIONS: frozenset[tuple[str, str]] = frozenset()
"""(importing package, imported package): imports that break the table, each listed until the
change that fixes it. The checks fail on a violation not listed here and on a listed one that
no longer occurs."""


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


@cache
def layers() -> list[tuple[str, tuple[str, ...]]]:
    """docs/architecture.md's layer table: (layer, its packages) in order, lowest first."""
    rows: list[tuple[str, tuple[str, ...]]] = []
    in_table = False
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if cells[:2] == ["layer", "packages"]:
            in_table = True
            continue
        if not in_table:
            continue
        if not cells:
            break
        if set(cells[0]) <= set("-: "):
            continue
        rows.append((cells[0], tuple(re.findall(r"`(\w+)/`", cells[1]))))
    return rows


def picture() -> dict[str, tuple[list[str], set[tuple[str, str]]]]:
    """docs/architecture.md's picture of the layers: per layer, the packages it shows and its
    ``a → b`` arrows (a row continues on the lines below it that start with spaces; a package
    may be named twice in a row to draw another arrow)."""
    text = DOC.read_text(encoding="utf-8")
    block = text.split("<!-- layers picture")[1].split("<!-- end of layers picture -->")[0]
    names = sorted((name for name, _packages in layers()), key=len, reverse=True)
    rows: dict[str, tuple[list[str], set[tuple[str, str]]]] = {}
    current = ""
    for raw in block.splitlines()[2:]:
        line = re.split(r"[│┌└]", raw)[0].strip()
        if not line or line.startswith("```"):
            continue
        name = next((n for n in names if line.startswith(n + " ")), None)
        if name is not None:
            current, line = name, line[len(name):]
        packages, arrows = rows.setdefault(current, ([], set()))
        tokens = line.replace(",", " , ").split()
        last = ""
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            if tok in ("→", "←"):
                i += 1
                while True:
                    target = tokens[i]
                    if target not in packages:  # named again to draw one more arrow
                        packages.append(target)
                    arrows.add((last, target) if tok == "→" else (target, last))
                    if i + 1 < len(tokens) and tokens[i + 1] == ",":
                        i += 2
                        continue
                    break
                last = target if tok == "→" else last
            elif tok != ",":
                if tok not in packages:
                    packages.append(tok)
                last = tok
            i += 1
    return rows


def layer_of() -> dict[str, int]:
    return {package: i for i, (_name, packages) in enumerate(layers()) for package in packages}


def _package(module: str) -> str:
    """``pyvolcano.a.b`` → ``a``."""
    return module.split(".")[1] if "." in module else ""


def package_edges() -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(importing package, imported package) → the module imports that make the edge."""
    out: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for module, deps in graph().items():
        for dep in deps:
            a, b = _package(module), _package(dep)
            if a and b and a != b:
                out.setdefault((a, b), []).append((module, dep))
    return {k: sorted(v) for k, v in sorted(out.items())}


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


def test_the_layer_table_names_every_package_once() -> None:
    table = [p for _name, packages in layers() for p in packages]
    assert len(layers()) >= 5 and len(table) == len(set(table))
    present = sorted(p.name for p in PACKAGE.iterdir()
                     if p.is_dir() and any(p.rglob("*.py")) and p.name not in OUTSIDE_THE_LAYERS)
    assert sorted(table) == present


def test_the_picture_shows_the_table_and_every_import_within_a_layer() -> None:
    drawn = picture()
    assert {name: sorted(pkgs) for name, (pkgs, _arrows) in drawn.items()} == {
        name: sorted(packages) for name, packages in layers()}
    rank = layer_of()
    within = {edge for edge in package_edges() if edge[0] in rank and rank[edge[0]] == rank.get(edge[1])}
    assert set().union(*(arrows for _pkgs, arrows in drawn.values())) == within


def test_the_document_names_only_modules_that_exist() -> None:
    """Every ``pkg/module.py``, ``pkg/module.name`` and ``pkg/`` the document names in
    backticks exists (upstream's paths, ``pkg/...``, ``cmd/...``, ``installer/...``, aside)."""
    missing = []
    for ref in re.findall(r"`([a-z_]+/[\w/.<>-]*)`", DOC.read_text(encoding="utf-8")):
        if ref.split("/")[0] in ("pkg", "cmd", "installer", "docs") or "<" in ref:
            continue
        base = ROOT if ref.startswith("tests/") else PACKAGE
        if ref.endswith("/"):
            ok = (base / ref).is_dir()
        elif ref.endswith(".py"):
            ok = (base / ref).is_file()
        else:
            module, _, attr = ref.rpartition(".")
            candidates = [base / f"{module}.py", base / module / "__init__.py"]
            found = [c for c in candidates if c.is_file()]
            ok = bool(found) and re.search(rf"\b{re.escape(attr.split('.')[0])}\b", found[0].read_text()) is not None
        if not ok:
            missing.append(ref)
    assert missing == []


def _upward() -> dict[tuple[str, str], list[tuple[str, str]]]:
    rank = layer_of()
    return {edge: imports for edge, imports in package_edges().items()
            if edge[0] in rank and edge[1] in rank and rank[edge[1]] > rank[edge[0]]}


def _mutual() -> dict[tuple[str, str], list[tuple[str, str]]]:
    edges = package_edges()
    return {edge: imports for edge, imports in edges.items() if edge[::-1] in edges}


def test_no_package_imports_a_package_of_a_later_layer() -> None:
    assert {edge: imports for edge, imports in _upward().items() if edge not in KNOWN_VIOLATIONS} == {}


def test_no_two_packages_import_each_other() -> None:
    assert {edge: imports for edge, imports in _mutual().items() if edge not in KNOWN_VIOLATIONS} == {}


def test_every_known_violation_still_occurs() -> None:
    """A violation fixed is taken off :data:`KNOWN_VIOLATIONS`."""
    assert KNOWN_VIOLATIONS - _upward().keys() - _mutual().keys() == set()


def test_the_packages_import_each_other_without_a_cycle() -> None:
    """Stronger than no two packages importing each other: no package reaches itself through
    others (within a layer, where the table allows either direction)."""
    edges: dict[str, set[str]] = {}
    for a, b in package_edges():
        edges.setdefault(a, set()).add(b)
        edges.setdefault(b, set())
    assert _cycles({k: frozenset(v) for k, v in edges.items()}) == []


def test_no_action_imports_a_plugin() -> None:
    """What an action needs from plugins is a session export (framework/interfaces.py), never
    a concrete plugin."""
    assert package_edges().get(("actions", "plugins"), []) == []


def test_the_import_graph_has_no_cycle() -> None:
    assert _cycles(graph()) == []


def test_only_the_command_lines_import_the_cli() -> None:
    offenders = sorted(m for m, deps in graph().items() if not _in(m, "cli", "vcctl", "__main__")
                       and any(_in(d, "cli") for d in deps))
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
