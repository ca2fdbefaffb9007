"""Shared pieces of the admission package: configuration, the error collector, and typed access
to JSON-shaped objects that reports wrong types instead of crashing.

Messages follow Kubernetes' ``field.Error`` bodies (``Required value``, ``Invalid value: "x": …``,
``Unsupported value: …``, ``Duplicate value: …``, ``Not found: …``) or, for Volcano's own rules,
the upstream webhook's text; the field path is carried separately and printed in front.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pyvolcano.store.base import Invalid, object_key

__all__ = [
    "DEFAULT_JOB_PLUGINS",
    "INT32_MAX",
    "AdmissionConfig",
    "Problems",
    "ShapeChecker",
    "describe_key",
    "quote",
    "sub",
]

INT32_MAX: Final = 2**31 - 1

DEFAULT_JOB_PLUGINS: Final = frozenset({"env", "svc", "ssh", "pytorch", "mpi", "tensorflow", "ray", "hcclrank"})
"""Job plugins the job controller implements: every one upstream registers."""


@dataclass(frozen=True)
class AdmissionConfig:
    """Options of upstream's ``vc-webhook-manager`` that change admission results."""

    scheduler_names: tuple[str, ...] = ("volcano",)  # --scheduler-name; the first one is the default
    max_queue_depth: int = 5  # --max-queue-depth
    enable_queue_allocated_pods_check: bool = False  # --enable-queue-allocated-pods-check
    enable_root_queue_protection: bool = True  # --enable-root-queue-protection
    job_plugins: frozenset[str] = field(default=DEFAULT_JOB_PLUGINS)


def quote(value: Any) -> str:
    """Go's ``%q`` for strings, plain text for numbers (how ``field.Invalid`` prints values)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    text = json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


def sub(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``obj[key]`` if it is a mapping, else an empty mapping."""
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def describe_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    """``(kind, key)`` of an object for error messages, tolerating missing metadata."""
    kind = obj.get("kind")
    kind_s = kind if isinstance(kind, str) and kind else "object"
    md = obj.get("metadata")
    md = md if isinstance(md, Mapping) else {}
    raw_name = md.get("name")
    name = raw_name if isinstance(raw_name, str) and raw_name else "?"
    ns = md.get("namespace") if isinstance(md.get("namespace"), str) else None
    return kind_s, object_key(kind_s, ns, name)


class Problems:
    """Collects ``(field, message)`` pairs for one object and raises them as one :class:`Invalid`."""

    def __init__(self, obj: Mapping[str, Any]):
        self.kind, self.key = describe_key(obj)
        self.items: list[tuple[str, str]] = []

    def add(self, field_path: str, message: str) -> None:
        self.items.append((field_path, message))

    def __bool__(self) -> bool:
        return bool(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def raise_if_any(self) -> None:
        if self.items:
            f, m = self.items[0]
            raise Invalid(self.kind, self.key, f, m, self.items)


class ShapeChecker:
    """Typed reads of a JSON-shaped object. A value of the wrong type is recorded as a problem
    (the analogue of the API server failing to decode the request) and read as absent."""

    def __init__(self, problems: Problems):
        self.p = problems

    def _bad(self, path: str, value: Any, expected: str) -> None:
        self.p.add(path, f"Invalid value: {quote(value)}: expected {expected}")

    def mapping(self, parent: Mapping[str, Any], key: str, path: str) -> dict[str, Any] | None:
        v = parent.get(key)
        if v is None:
            return None
        if not isinstance(v, dict):
            self._bad(path, v, "a mapping")
            return None
        return v

    def seq(self, parent: Mapping[str, Any], key: str, path: str) -> list[Any] | None:
        v = parent.get(key)
        if v is None:
            return None
        if not isinstance(v, list):
            self._bad(path, v, "a list")
            return None
        return v

    def mappings(self, parent: Mapping[str, Any], key: str, path: str) -> list[dict[str, Any]]:
        """A list whose items must all be mappings; bad items are reported and skipped."""
        items = self.seq(parent, key, path)
        out = []
        for i, item in enumerate(items or []):
            if isinstance(item, dict):
                out.append(item)
            else:
                self._bad(f"{path}[{i}]", item, "a mapping")
        return out

    def integer(self, parent: Mapping[str, Any], key: str, path: str, *, int32: bool = True) -> int | None:
        v = parent.get(key)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int):
            self._bad(path, v, "an integer")
            return None
        if int32 and not -INT32_MAX - 1 <= v <= INT32_MAX:
            self._bad(path, v, "a 32-bit integer")
            return None
        return v

    def string(self, parent: Mapping[str, Any], key: str, path: str) -> str | None:
        v = parent.get(key)
        if v is None:
            return None
        if not isinstance(v, str):
            self._bad(path, v, "a string")
            return None
        return v

    def boolean(self, parent: Mapping[str, Any], key: str, path: str) -> bool | None:
        v = parent.get(key)
        if v is None:
            return None
        if not isinstance(v, bool):
            self._bad(path, v, "true or false")
            return None
        return v

    def strings(self, parent: Mapping[str, Any], key: str, path: str) -> list[str] | None:
        items = self.seq(parent, key, path)
        if items is None:
            return None
        ok = True
        for i, item in enumerate(items):
            if not isinstance(item, str):
                self._bad(f"{path}[{i}]", item, "a string")
                ok = False
        return items if ok else None

    def string_map(self, parent: Mapping[str, Any], key: str, path: str) -> dict[str, str] | None:
        m = self.mapping(parent, key, path)
        if m is None:
            return None
        ok = True
        for k, v in m.items():
            if not isinstance(k, str) or not isinstance(v, str):
                self._bad(f"{path}[{k}]", v, "a string")
                ok = False
        return m if ok else None
