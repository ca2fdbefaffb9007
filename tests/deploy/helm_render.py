"""A minimal Helm template renderer: only what the pyvolcano chart uses.

Supported: ``{{ .Release.Namespace }}``, ``{{ .Values.a.b }}``, ``{{ if .Values.a.b }}`` ...
``{{ end }}`` (not nested), and the ``{{-`` / ``-}}`` whitespace trimming of Go templates. Any
other action is an error, so the chart cannot start depending on more without this failing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

_ACTION = re.compile(r"\{\{(-?)\s*(.*?)\s*(-?)\}\}", re.DOTALL)


def _lookup(expr: str, values: dict[str, Any], namespace: str) -> Any:
    if expr == ".Release.Namespace":
        return namespace
    if not expr.startswith(".Values."):
        raise ValueError(f"unsupported template expression {expr!r}")
    value: Any = values
    for part in expr.removeprefix(".Values.").split("."):
        value = value[part]
    return value


def render(text: str, values: dict[str, Any], namespace: str) -> str:
    out: list[str] = []
    pos = 0
    skipping = False
    in_if = False
    trim_next = False
    for m in _ACTION.finditer(text):
        chunk = text[pos:m.start()]
        if trim_next:
            chunk = chunk.lstrip()
        if m.group(1):
            chunk = chunk.rstrip()
        if not skipping:
            out.append(chunk)
        action = m.group(2)
        if action.startswith("if "):
            if in_if:
                raise ValueError("nested if is not supported")
            in_if, skipping = True, not _lookup(action[3:].strip(), values, namespace)
        elif action == "end":
            if not in_if:
                raise ValueError("end without if")
            in_if = skipping = False
        elif not skipping:
            out.append(str(_lookup(action, values, namespace)))
        trim_next = bool(m.group(3))
        pos = m.end()
    if in_if:
        raise ValueError("if without end")
    tail = text[pos:]
    out.append(tail.lstrip() if trim_next else tail)
    return "".join(out)


def render_chart(chart: Path, namespace: str, overrides: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every object ``helm template --namespace NAMESPACE`` would print: crds/ then templates/."""
    values = yaml.safe_load((chart / "values.yaml").read_text(encoding="utf-8"))
    for key, value in (overrides or {}).items():
        target = values
        *parents, last = key.split(".")
        for p in parents:
            target = target[p]
        target[last] = value
    texts = [p.read_text(encoding="utf-8") for p in sorted((chart / "crds").glob("*.yaml"))]
    texts += [render(p.read_text(encoding="utf-8"), values, namespace)
              for p in sorted((chart / "templates").glob("*.yaml"))]
    return [d for t in texts for d in yaml.safe_load_all(t) if d is not None]
