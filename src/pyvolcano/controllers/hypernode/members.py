"""The nodes under a HyperNode: its members' selectors resolved against Nodes and HyperNodes.

A HyperNode's node set is the union over its members:

* a ``Node`` member selects Nodes that exist: ``exactMatch`` the one of that name,
  ``regexMatch`` every Node whose name the pattern matches anywhere (Go's ``MatchString``,
  here ``re.search``), ``labelMatch`` every Node whose labels the selector matches (an empty
  selector selects nothing, as upstream's ``GetMembers``);
* a ``HyperNode`` member selects HyperNodes by ``exactMatch`` or ``regexMatch`` and adds each
  one's own node set (a ``labelMatch`` on a HyperNode member selects nothing).

A selector that does not compile selects nothing. A HyperNode reached again while its own set
is being resolved (a cycle, which admission does not forbid) adds nothing the second time, so
every HyperNode of a cycle counts the Nodes of the whole cycle.
:class:`NodeSets` memoises each HyperNode's set for one resolution pass; build a new one when
Nodes or HyperNodes change.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from pyvolcano.api import matching
from pyvolcano.controllers._common import spec

__all__ = ["NodeSets"]

_EMPTY: frozenset[str] = frozenset()


class NodeSets:
    """Resolve HyperNodes to the names of the Nodes under them.

    Args:
        node_labels: every Node's name and labels.
        hypernodes: every HyperNode manifest by name.
    """

    def __init__(self, node_labels: Mapping[str, Mapping[str, str]], hypernodes: Mapping[str, Mapping[str, Any]]):
        self._nodes = node_labels
        self._hypernodes = hypernodes
        self._sets: dict[str, frozenset[str]] = {}
        self._resolving: set[str] = set()
        self._cuts = 0  # cycles cut so far: a set resolved across a cut is complete only at the top

    def node_count(self, name: str) -> int:
        return len(self.nodes_of(name))

    def nodes_of(self, name: str) -> frozenset[str]:
        """The names of the Nodes under HyperNode ``name`` (empty when it does not exist)."""
        known = self._sets.get(name)
        if known is not None:
            return known
        hn = self._hypernodes.get(name)
        if hn is None:
            return _EMPTY
        if name in self._resolving:
            self._cuts += 1
            return _EMPTY
        cuts = self._cuts
        self._resolving.add(name)
        try:
            out: set[str] = set()
            for member in spec(hn).get("members") or []:
                if isinstance(member, Mapping):
                    out.update(self._member_nodes(member))
        finally:
            self._resolving.discard(name)
        result = frozenset(out)
        if cuts == self._cuts or not self._resolving:
            self._sets[name] = result
        return result

    def _member_nodes(self, member: Mapping[str, Any]) -> Iterable[str]:
        selector = member.get("selector")
        if not isinstance(selector, Mapping):
            return ()
        if member.get("type") == "Node":
            return _select(selector, self._nodes, self._nodes)
        if member.get("type") == "HyperNode":
            names = _select(selector, self._hypernodes, None)
            return {n for child in names for n in self.nodes_of(child)}
        return ()


def _select(selector: Mapping[str, Any], candidates: Mapping[str, Any],
            labels: Mapping[str, Mapping[str, str]] | None) -> set[str]:
    """The names in ``candidates`` one selector picks; ``labels`` is None where labelMatch selects nothing."""
    exact = selector.get("exactMatch")
    if isinstance(exact, Mapping):
        name = exact.get("name")
        return {name} if isinstance(name, str) and name in candidates else set()
    regex = selector.get("regexMatch")
    if isinstance(regex, Mapping):
        pattern = regex.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            return set()
        try:
            compiled = re.compile(pattern)
        except re.error:
            return set()
        return {n for n in candidates if compiled.search(n)}
    match = selector.get("labelMatch")
    if isinstance(match, Mapping) and labels is not None:
        if not match.get("matchLabels") and not match.get("matchExpressions"):
            return set()
        try:
            compiled_selector = matching.compile_label_selector(match)
        except matching.SelectorError:
            return set()
        return {n for n, node_labels in labels.items() if compiled_selector.matches(node_labels)}
    return set()
