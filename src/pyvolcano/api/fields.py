"""Strict field validation: every field of an object must be a known one.

``kubectl apply`` validates strictly by default (``--validate=strict``): the API server refuses
an object with a field its schema does not have (``strict decoding error: unknown field
"spec.minAvailble"``) instead of silently dropping it. This module does the same for the kinds
pyvolcano validates, against the field tree in ``fields.yaml`` (derived from upstream's CRDs
and the core API; the format is described at its top), and adds a "did you mean" for a close
known name.

Only field *names* are checked here; types and values are the business of admission. A value
of the wrong shape (a list where an object belongs) is not descended into. The tree is loaded
on first use and cached.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Mapping
from importlib import resources
from typing import Any

import yaml

__all__ = ["FieldTree", "field_tree", "unknown_fields"]

TypeRef = str | list[str] | dict[None, str] | None


class FieldTree:
    """The parsed ``fields.yaml``: object types by name and the root type of each kind."""

    def __init__(self, data: Mapping[str, Any]):
        self.kinds: dict[str, str] = dict(data["kinds"])
        self.types: dict[str, dict[str, TypeRef]] = {name: dict(fields) for name, fields in data["types"].items()}
        for name, fields in self.types.items():
            for fname, ref in fields.items():
                target = ref[0] if isinstance(ref, list) else ref[None] if isinstance(ref, dict) else ref
                if target is not None and target not in self.types:
                    raise ValueError(f"fields.yaml: {name}.{fname} refers to unknown type {target!r}")

    def root(self, api_version: str, kind: str) -> str | None:
        return self.kinds.get(f"{api_version} {kind}")


@functools.cache
def field_tree() -> FieldTree:
    text = resources.files("pyvolcano.api").joinpath("fields.yaml").read_text(encoding="utf-8")
    return FieldTree(yaml.safe_load(text))


def unknown_fields(obj: Mapping[str, Any], api_version: str, kind: str) -> list[tuple[str, str]]:
    """``(field path, message)`` for every unknown field of ``obj``; empty for unchecked kinds."""
    tree = field_tree()
    root = tree.root(api_version, kind)
    out: list[tuple[str, str]] = []
    if root is not None:
        _walk(tree, obj, root, "", out)
    return out


def _walk(tree: FieldTree, value: Any, type_name: str, path: str, out: list[tuple[str, str]]) -> None:
    if not isinstance(value, Mapping):
        return
    fields = tree.types[type_name]
    for key, sub in value.items():
        fp = f"{path}.{key}" if path else str(key)
        if key not in fields:
            out.append((fp, f'unknown field "{key}"' + _did_you_mean(str(key), fields)))
            continue
        ref = fields[key]
        if ref is None:
            continue
        if isinstance(ref, list):
            if isinstance(sub, list):
                for i, item in enumerate(sub):
                    _walk(tree, item, ref[0], f"{fp}[{i}]", out)
            continue
        if isinstance(ref, dict):
            if isinstance(sub, Mapping):
                for k, item in sub.items():
                    _walk(tree, item, ref[None], f"{fp}.{k}", out)
            continue
        _walk(tree, sub, ref, fp, out)


def _did_you_mean(word: str, known: Mapping[str, Any]) -> str:
    lowered = {k.lower(): k for k in known}
    if word.lower() in lowered:
        return f'; did you mean "{lowered[word.lower()]}"? (field names are case-sensitive)'
    close = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.75)
    return f'; did you mean "{lowered[close[0]]}"?' if close else ""
