"""kubectl's label selectors (``-l/--selector``), parsed once and matched on label maps.

The grammar is apimachinery's ``labels.Parse``: requirements separated by commas, each one of
``key``, ``!key``, ``key=value``, ``key==value``, ``key!=value``, ``key in (v1,v2)`` and
``key notin (v1,v2)``. ``!=`` and ``notin`` match objects without the key, as upstream.
Each one is a :class:`pyvolcano.api.matching.labels.Requirement` (``key=value`` is ``In``,
``key!=value`` ``NotIn``, ``!key`` ``DoesNotExist``), the requirement of label selectors in
manifests.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from pyvolcano.api.matching.labels import Requirement
from pyvolcano.api.names import label_value_matches

__all__ = ["Selector", "SelectorError", "parse_selector"]


class SelectorError(ValueError):
    pass


_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_SET = re.compile(rf"^(?P<key>{_KEY})\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_EQ = re.compile(rf"^(?P<key>{_KEY})\s*(?P<op>==|=|!=)\s*(?P<value>{_VALUE})$")
_EXISTS = re.compile(rf"^(?P<neg>!)?\s*(?P<key>{_KEY})$")


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
            bad = [v for v in values if not label_value_matches(v)]
            if bad or values == [""]:
                raise SelectorError(f"got {part!r}: expected values in (a,b,...) made of letters, digits, '-', "
                                    "'_' and '.'")
            reqs.append(Requirement(m["key"], "In" if m["op"] == "in" else "NotIn", frozenset(values)))
        elif m := _EQ.match(part):
            op = "NotIn" if m["op"] == "!=" else "In"
            reqs.append(Requirement(m["key"], op, frozenset({m["value"]})))
        elif m := _EXISTS.match(part):
            reqs.append(Requirement(m["key"], "DoesNotExist" if m["neg"] else "Exists", frozenset()))
        else:
            raise SelectorError(f"got {part!r}; expected key, !key, key=value, key!=value, key in (a,b) or "
                                "key notin (a,b)")
    return Selector(text, tuple(reqs))
