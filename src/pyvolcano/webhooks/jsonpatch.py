"""RFC 6902 JSON Patch from two JSON documents: what a mutating webhook answers.

:func:`diff` walks both documents together. Mappings are compared key by key (``remove`` for
keys gone, ``add`` for new keys, recursion into values present in both); lists of equal length
element by element; a list whose length changed, or a value whose JSON type changed, is one
``replace``. Keys are visited in sorted order, so the same two documents always give the same
patch. Paths escape ``~`` as ``~0`` and ``/`` as ``~1`` (RFC 6901).

Invariant: applying ``diff(a, b)`` to ``a`` gives ``b``; ``diff(a, a)`` is empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["diff", "escape"]


def escape(token: str) -> str:
    """One reference token of a JSON Pointer (RFC 6901 §3)."""
    return token.replace("~", "~0").replace("/", "~1")


def diff(before: Any, after: Any) -> list[dict[str, Any]]:
    """The operations that turn ``before`` into ``after``."""
    ops: list[dict[str, Any]] = []
    _diff(before, after, "", ops)
    return ops


def _same_type(a: Any, b: Any) -> bool:
    # bool is an int in Python but not in JSON; 1 and 1.0 are the same JSON number.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b)
    if isinstance(a, int | float) and isinstance(b, int | float):
        return True
    return type(a) is type(b)


def _diff(a: Any, b: Any, path: str, ops: list[dict[str, Any]]) -> None:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in sorted(set(a) | set(b), key=str):
            child = f"{path}/{escape(str(key))}"
            if key not in b:
                ops.append({"op": "remove", "path": child})
            elif key not in a:
                ops.append({"op": "add", "path": child, "value": b[key]})
            else:
                _diff(a[key], b[key], child, ops)
        return
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _diff(x, y, f"{path}/{i}", ops)
        return
    if _same_type(a, b) and a == b:
        return
    ops.append({"op": "replace", "path": path, "value": b})
