"""kubectl's label selectors (``-l/--selector``), parsed once and matched on label maps.

The grammar is apimachinery's ``labels.Parse``: requirements separated by commas, each one of
``key``, ``!key``, ``key=value``, ``key==value``, ``key!=value``, ``key in (v1,v2)`` and
``key notin (v1,v2)``. ``!=`` and ``notin`` match objects without the key, as upstream.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Requirement", "Selector", "SelectorError", "parse_selector"]


class SelectorError(ValueError):
    pass


_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_SET = re.compile(rf"^(?P<key>{_KEY})\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_EQ = re.compile(rf"^(?P<key>{_KEY})\s*(?P<op>==|=|!=)\s*(?P<value>{_VALUE})$")
_EXISTS = re.compile(rf"^(?P<neg>!)?\s*(?P<key>{_KEY})$")
_VALUE_RE = re.compile(rf"^{_VALUE}$")


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str  # "exists", "!exists", "in", "notin"
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.op == "exists":
            return self.key in labels
        if self.op == "!exists":
            return self.key not in labels
        if self.op == "in":
            return labels.get(self.key) in self.values
        return self.key not in labels or labels[self.key] not in self.values


@dataclass(frozen=True, slots=True)
class Selector:
    text: str
    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        return all(r.matches(labels or {}) for r in self.requirements)


def _split(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts]


def parse_selector(text: str) -> Selector:
    """The selector ``text``; :class:`SelectorError` names the requirement that is wrong."""
    reqs: list[Requirement] = []
    if not text.strip():
        return Selector(text, ())
    for part in _split(text):
        if m := _SET.match(part):
            values = [v.strip() for v in m["values"].split(",")]
            bad = [v for v in values if not _VALUE_RE.match(v)]
            if bad or values == [""]:
                raise SelectorError(f"got {part!r}: expected values in (a,b,...) made of letters, digits, '-', "
                                    "'_' and '.'")
            reqs.append(Requirement(m["key"], m["op"], frozenset(values)))
        elif m := _EQ.match(part):
            op = "notin" if m["op"] == "!=" else "in"
            reqs.append(Requirement(m["key"], op, frozenset({m["value"]})))
        elif m := _EXISTS.match(part):
            reqs.append(Requirement(m["key"], "!exists" if m["neg"] else "exists"))
        else:
            raise SelectorError(f"got {part!r}; expected key, !key, key=value, key!=value, key in (a,b) or "
                                "key notin (a,b)")
    return Selector(text, tuple(reqs))
