"""HyperNode (``topology.volcano.sh/v1alpha1``): one network performance domain.

A HyperNode is cluster-scoped. ``spec.tier`` ranks it (lower = closer, e.g. tier 1 a
top-of-rack switch); ``spec.tierName`` optionally names the tier; ``spec.members[]`` lists
what it contains, each a ``Node`` or another ``HyperNode``, chosen by exactly one selector:

* ``exactMatch: {name}``: the one Node or HyperNode of that name;
* ``regexMatch: {pattern}``: every Node or HyperNode whose name the (unanchored) pattern matches;
* ``labelMatch``: a ``metav1.LabelSelector`` over Node labels (``Node`` members only).

The HyperNode members make a tree: its node set is the union of its Node members and of its
HyperNode members' node sets. Building that tree is the scheduler's business; these values
carry the objects exactly as written (``status.nodeCount`` and ``status.conditions`` are what
the controller reported, not recomputed). The parser of manifests is
:func:`pyvolcano.api.manifest.parse_objects`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "MEMBER_TYPES",
    "HyperNode",
    "HyperNodeMember",
    "MemberSelector",
    "SelectorKind",
]

MEMBER_TYPES: Final = ("Node", "HyperNode")


class SelectorKind(enum.Enum):
    EXACT = "exactMatch"
    REGEX = "regexMatch"
    LABEL = "labelMatch"


@dataclass(frozen=True, slots=True)
class MemberSelector:
    """Exactly one selector: an exact name, a regular expression on names, or a label selector."""

    kind: SelectorKind
    name: str = ""  # exactMatch.name
    pattern: str = ""  # regexMatch.pattern
    label_selector: dict[str, Any] | None = field(default=None, compare=False)  # labelMatch, as written


@dataclass(frozen=True, slots=True)
class HyperNodeMember:
    type: str  # one of MEMBER_TYPES
    selector: MemberSelector


@dataclass(slots=True)
class HyperNode:
    name: str
    uid: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    creation_timestamp: float = 0.0
    tier: int = 0
    tier_name: str = ""
    members: list[HyperNodeMember] = field(default_factory=list)
    node_count: int = 0
    conditions: list[dict[str, Any]] = field(default_factory=list)
