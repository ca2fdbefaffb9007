"""Label selectors (``metav1.LabelSelector``) and node-selector requirements, compiled once
and matched many times.

Reproduces the behaviour of:

* ``k8s.io/apimachinery/pkg/apis/meta/v1/helpers.go`` (``LabelSelectorAsSelector``): a null
  selector selects nothing, a selector with neither ``matchLabels`` nor ``matchExpressions``
  selects everything; operators ``In``/``NotIn``/``Exists``/``DoesNotExist``.
* ``k8s.io/apimachinery/pkg/labels/selector.go`` (``NewRequirement`` / ``Requirement.Matches``):
  ``In``/``NotIn`` need at least one value, ``Exists``/``DoesNotExist`` none, ``Gt``/``Lt``
  exactly one value that parses as a base-10 int64; ``NotIn`` and ``DoesNotExist`` match when
  the key is absent; ``Gt``/``Lt`` never match an absent or non-integer label.
* ``k8s.io/apimachinery/pkg/util/validation/validation.go`` for the syntax of label keys
  (qualified names) and label values, which ``NewRequirement`` also enforces.

Design: :class:`LabelSelector` is an immutable compiled form (equality pairs + requirement
tuple + a "nothing" flag) whose :meth:`LabelSelector.matches` does no allocation, so callers
compile a selector once per pod and evaluate it against thousands of label maps.

Invariants: every compile error is a :class:`SelectorError` naming the field path; a compiled
selector never raises while matching.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pyvolcano.api.matching.errors import fail, show
from pyvolcano.api.names import (
    QUALIFIED_NAME_MAX_LENGTH,
    is_dns1123_subdomain,
    is_label_value,
    qualified_name_part_matches,
)

__all__ = [
    "EMPTY_LABELS",
    "EVERYTHING",
    "LABEL_SELECTOR_OPERATORS",
    "NODE_SELECTOR_OPERATORS",
    "NOTHING",
    "LabelSelector",
    "Requirement",
    "compile_label_selector",
    "compile_requirement",
    "label_selector_matches",
    "label_value_problem",
    "parse_go_int64",
    "qualified_name_problem",
]

EMPTY_LABELS: Final[Mapping[str, str]] = {}

LABEL_SELECTOR_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist")
NODE_SELECTOR_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")

_IN, _NOT_IN, _EXISTS, _DOES_NOT_EXIST, _GT, _LT = range(6)
_OP_CODES: Final = {"In": _IN, "NotIn": _NOT_IN, "Exists": _EXISTS, "DoesNotExist": _DOES_NOT_EXIST,
                    "Gt": _GT, "Lt": _LT}

_INT_RE: Final = re.compile(r"[+-]?[0-9]+")
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


# ----------------------------------------------------------------------------- syntax helpers


def qualified_name_problem(key: object) -> str | None:
    """Why ``key`` is not a valid label key (``[prefix/]name``), or ``None`` if it is."""
    if not isinstance(key, str):
        return f"got {show(key)}; expected a string"
    if not key:
        return "must not be empty"
    parts = key.split("/")
    if len(parts) > 2:
        return f"got {key!r}; a qualified name has at most one '/'"
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            return f"got {key!r}; the prefix before '/' must not be empty"
        if not is_dns1123_subdomain(prefix):
            return f"got {key!r}; the prefix must be a DNS subdomain (lower-case alphanumerics, '-', '.')"
    if not name or len(name) > QUALIFIED_NAME_MAX_LENGTH or not qualified_name_part_matches(name):
        return (f"got {key!r}; the name part must be 1-63 alphanumerics, '-', '_' or '.', "
                "starting and ending with an alphanumeric")
    return None


def label_value_problem(value: object) -> str | None:
    """Why ``value`` is not a valid label value (may be empty), or ``None`` if it is."""
    if not isinstance(value, str):
        return f"got {show(value)}; expected a string"
    if not is_label_value(value):
        return (f"got {value!r}; a label value must be at most 63 alphanumerics, '-', '_' or '.', "
                "starting and ending with an alphanumeric")
    return None


def parse_go_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``: optional sign, ASCII digits, int64 range; else None."""
    if not _INT_RE.fullmatch(text):
        return None
    n = int(text)
    if n < _INT64_MIN or n > _INT64_MAX:
        return None
    return n


def _as_list(value: Any, path: str, what: str) -> Sequence[Any]:
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise fail(path, f"got {show(value)}; expected a list of {what}")
    return value


def _as_mapping(value: Any, path: str, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise fail(path, f"got {show(value)}; expected {what}")
    return value


# ----------------------------------------------------------------------------- compiled forms


class Requirement:
    """One compiled ``key <op> values`` requirement."""

    __slots__ = ("key", "number", "op", "operator", "values")

    def __init__(self, key: str, operator: str, values: frozenset[str], number: int | None = None) -> None:
        self.key = key
        self.operator = operator
        self.op = _OP_CODES[operator]
        self.values = values
        self.number = number

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.op
        if op == _IN:
            v = labels.get(self.key)
            return v is not None and v in self.values
        if op == _NOT_IN:
            v = labels.get(self.key)
            return v is None or v not in self.values
        if op == _EXISTS:
            return self.key in labels
        if op == _DOES_NOT_EXIST:
            return self.key not in labels
        v = labels.get(self.key)
        if v is None or self.number is None:
            return False
        n = parse_go_int64(v)
        if n is None:
            return False
        return n > self.number if op == _GT else n < self.number

    def __repr__(self) -> str:
        shown = str(self.number) if self.number is not None else ",".join(sorted(self.values))
        return f"Requirement({self.key} {self.operator} [{shown}])"


class LabelSelector:
    """A compiled label selector: AND of equality pairs and requirements, or *nothing*."""

    __slots__ = ("_equals", "_nothing", "_reqs")

    def __init__(self, equals: Sequence[tuple[str, str]] = (), requirements: Sequence[Requirement] = (),
                 *, nothing: bool = False) -> None:
        self._equals: tuple[tuple[str, str], ...] = tuple(equals)
        self._reqs: tuple[Requirement, ...] = tuple(requirements)
        self._nothing = nothing

    @property
    def is_nothing(self) -> bool:
        """True for the compiled form of a null selector (matches no label set)."""
        return self._nothing

    @property
    def is_everything(self) -> bool:
        """True when the selector places no restriction (``labels.Selector.Empty()``)."""
        return not self._nothing and not self._equals and not self._reqs

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self._nothing:
            return False
        for k, v in self._equals:
            if labels.get(k) != v:
                return False
        for r in self._reqs:  # noqa: SIM110 - explicit loop: hot path, avoids a generator
            if not r.matches(labels):
                return False
        return True

    def merged(self, equals: Mapping[str, str] | None = None,
               not_equals: Mapping[str, str] | None = None) -> LabelSelector:
        """AND extra ``key = value`` / ``key notin (value)`` requirements into this selector.

        A *nothing* selector stays *nothing* (matching the ``matchLabelKeys`` merge rules of
        both the API server for pod affinity and ``mergeLabelSetWithSelector`` for spread).
        """
        if self._nothing or (not equals and not not_equals):
            return self
        extra_eq = tuple(equals.items()) if equals else ()
        extra_ne = tuple(Requirement(k, "NotIn", frozenset((v,))) for k, v in not_equals.items()) \
            if not_equals else ()
        return LabelSelector(self._equals + extra_eq, self._reqs + extra_ne)

    def __repr__(self) -> str:
        if self._nothing:
            return "LabelSelector(<nothing>)"
        if self.is_everything:
            return "LabelSelector(<everything>)"
        return f"LabelSelector(equals={dict(self._equals)!r}, requirements={list(self._reqs)!r})"


NOTHING: Final = LabelSelector(nothing=True)
EVERYTHING: Final = LabelSelector()


def compile_requirement(expr: Any, path: str, *, node_selector: bool) -> Requirement:
    """Compile one ``matchExpressions`` entry (label selector or node selector flavour)."""
    e = _as_mapping(expr, path, "a {key, operator, values} mapping")
    key = e.get("key")
    problem = qualified_name_problem(key)
    if problem is not None:
        raise fail(f"{path}.key", problem)
    assert isinstance(key, str)
    allowed = NODE_SELECTOR_OPERATORS if node_selector else LABEL_SELECTOR_OPERATORS
    op = e.get("operator")
    if op not in allowed:
        raise fail(f"{path}.operator", f"got {show(op)}; expected one of {', '.join(allowed)}")
    assert isinstance(op, str)
    raw_values = _as_list(e.get("values"), f"{path}.values", "strings")
    values: list[str] = []
    for j, v in enumerate(raw_values):
        problem = label_value_problem(v)
        if problem is not None:
            raise fail(f"{path}.values[{j}]", problem)
        values.append(v)
    if op in ("In", "NotIn"):
        if not values:
            raise fail(f"{path}.values", f"must be non-empty when operator is {op}")
        return Requirement(key, op, frozenset(values))
    if op in ("Exists", "DoesNotExist"):
        if values:
            raise fail(f"{path}.values", f"must be empty when operator is {op}")
        return Requirement(key, op, frozenset())
    if len(values) != 1:
        raise fail(f"{path}.values", f"must have exactly one value when operator is {op}")
    number = parse_go_int64(values[0])
    if number is None:
        raise fail(f"{path}.values[0]", f"got {values[0]!r}; expected an integer when operator is {op}")
    return Requirement(key, op, frozenset(values), number)


def compile_label_selector(selector: Any, path: str = "labelSelector") -> LabelSelector:
    """Compile a ``metav1.LabelSelector`` mapping; ``None`` compiles to :data:`NOTHING`.

    Raises :class:`SelectorError` for anything ``LabelSelectorAsSelector`` would reject.
    """
    if selector is None:
        return NOTHING
    sel = _as_mapping(selector, path, "a label selector mapping (matchLabels / matchExpressions)")
    raw_ml = sel.get("matchLabels")
    ml = _as_mapping(raw_ml, f"{path}.matchLabels", "a mapping of label keys to values") \
        if raw_ml is not None else EMPTY_LABELS
    equals: list[tuple[str, str]] = []
    for k, v in ml.items():
        problem = qualified_name_problem(k)
        if problem is not None:
            raise fail(f"{path}.matchLabels", f"key {problem}")
        problem = label_value_problem(v)
        if problem is not None:
            raise fail(f"{path}.matchLabels.{k}", problem)
        equals.append((k, v))
    exprs = _as_list(sel.get("matchExpressions"), f"{path}.matchExpressions", "requirements")
    reqs = [compile_requirement(e, f"{path}.matchExpressions[{i}]", node_selector=False)
            for i, e in enumerate(exprs)]
    if not equals and not reqs:
        return EVERYTHING
    return LabelSelector(equals, reqs)


def label_selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Does ``labels`` satisfy the ``metav1.LabelSelector`` ``selector``?

    ``None`` matches nothing, ``{}`` matches everything. Raises :class:`SelectorError` for a
    malformed selector.
    """
    return compile_label_selector(selector).matches(labels)
