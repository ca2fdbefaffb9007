"""A validator for the structural OpenAPI v3 schemas of :mod:`pyvolcano.deploy.crds`.

It checks an object the way the API server treats a custom resource, for the keywords those
schemas use: ``type``, ``properties``, ``additionalProperties``, ``items``, ``required``,
``enum``, ``minimum``/``maximum``, ``minLength``/``maxLength``, ``minItems``, ``pattern``,
``format: date-time``, ``x-kubernetes-int-or-string`` and ``x-kubernetes-preserve-unknown-fields``
(``x-kubernetes-validations``, CEL rules, are not evaluated). A field the schema
does not declare is reported as an error: the API server would silently prune it, which for a
Volcano manifest means a setting lost, so "accepted" here means "stored exactly as written".

Invariant: :func:`validate` is pure and returns every violation, in document order, each as
``(path, message)`` with a path such as ``spec.tasks[1].replicas``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from typing import Any

__all__ = ["validate"]

_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _type_ok(value: Any, type_: str) -> bool:
    if type_ == "object":
        return isinstance(value, Mapping)
    if type_ == "array":
        return isinstance(value, list)
    if type_ == "string":
        return isinstance(value, str)
    if type_ == "boolean":
        return isinstance(value, bool)
    if type_ == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_ == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    raise ValueError(f"unsupported schema type {type_!r}")


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def validate(obj: Any, schema: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every way ``obj`` violates ``schema``; empty when the API server would store it unchanged."""
    errors: list[tuple[str, str]] = []
    _check(obj, schema, "", errors)
    return errors


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _check(value: Any, schema: Mapping[str, Any], path: str, errors: list[tuple[str, str]]) -> None:
    where = path or "<root>"
    if schema.get("x-kubernetes-int-or-string"):
        if not (_type_ok(value, "integer") or _type_ok(value, "string")):
            errors.append((where, f"got {_describe(value)}; expected an integer or a string"))
            return
    elif "type" in schema and not _type_ok(value, schema["type"]):
        errors.append((where, f"got {_describe(value)} {value!r}; expected {schema['type']}"))
        return
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(repr(v) for v in schema["enum"])
        errors.append((where, f"got {value!r}; expected one of {allowed}"))
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append((where, f"got {value}; expected at least {schema['minimum']}"))
        if "maximum" in schema and value > schema["maximum"]:
            errors.append((where, f"got {value}; expected at most {schema['maximum']}"))
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append((where, f"got {len(value)} characters; expected at least {schema['minLength']}"))
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append((where, f"got {len(value)} characters; expected at most {schema['maxLength']}"))
        if "pattern" in schema and not _compiled(schema["pattern"]).search(value):
            errors.append((where, f"got {value!r}; expected a match of {schema['pattern']}"))
        if schema.get("format") == "date-time" and not _DATE_TIME.match(value):
            errors.append((where, f"got {value!r}; expected an RFC 3339 date-time"))
    if isinstance(value, Mapping):
        _check_object(value, schema, path, errors)
    elif isinstance(value, list) and "items" in schema:
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append((where, f"got {len(value)} items; expected at least {schema['minItems']}"))
        for i, item in enumerate(value):
            _check(item, schema["items"], f"{path}[{i}]", errors)


def _check_object(value: Mapping[str, Any], schema: Mapping[str, Any], path: str,
                  errors: list[tuple[str, str]]) -> None:
    for name in schema.get("required", ()):
        if name not in value:
            errors.append((_join(path, name), "required field is missing"))
    props: Mapping[str, Any] = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    if path == "metadata":
        return  # ObjectMeta is the API server's own, validated by it, never pruned by the CRD schema
    for key, item in value.items():
        sub = _join(path, str(key))
        if key in props:
            _check(item, props[key], sub, errors)
        elif isinstance(extra, Mapping):
            _check(item, extra, sub, errors)
        elif not preserve:
            errors.append((sub, "unknown field (the API server would drop it)"))
