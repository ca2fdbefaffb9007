"""The HyperNode tree: HyperNodes resolved against the nodes (upstream pkg/scheduler/api/hyper_node_info.go).

:class:`HyperNodeTree` turns :class:`~pyvolcano.api.hypernode.HyperNode` objects and the nodes
(name, labels, ``NodeTable`` row) into the structure a session's network-topology logic reads,
with the virtual root upstream's session adds (``framework/session.go``
``addClusterTopHyperNode``) already in place.

Membership, as upstream resolves it (``pkg/util/hypernode/member_selector.go`` ``GetMembers``
and ``HyperNodesInfo.BuildHyperNodeCache``):

* a ``Node`` member selects nodes: ``exactMatch`` the node of that name, ``regexMatch`` every
  node whose name the pattern matches anywhere (Go's ``MatchString``: an unanchored search;
  a pattern Python cannot compile selects nothing), ``labelMatch`` every node whose labels the
  selector matches (a selector with neither ``matchLabels`` nor ``matchExpressions``, or one
  that does not compile, selects nothing);
* a ``HyperNode`` member names a child with ``exactMatch`` only: upstream's scheduler ignores
  ``regexMatch`` and ``labelMatch`` HyperNode members, and so does this tree;
* only nodes that exist count (upstream's session drops the names that are not nodes), and a
  claimed child that does not exist is not in the tree until it is created.

Structure. A HyperNode's parent is the HyperNode that claims it. The topology is **ready**
(upstream ``HyperNodesInfo.Ready``) unless some name is claimed by two different HyperNodes
or the claims form a cycle (a HyperNode claiming itself included); upstream then refuses the
update that makes it so. Upstream's flag follows the last update; here it is a function of the
current objects, the state upstream reaches once the offending update is retried. So that
every query stays defined when the topology is not ready, a name claimed twice gets the
claimant whose name sorts first as its parent, and every cycle is cut above the member whose
name sorts first.

The virtual root :data:`CLUSTER_TOP_HYPERNODE` is the parent of every parentless HyperNode; its
tier is the highest real tier + 1 (1 when there is none, or when every tier is below 1), and
its node set is every node.

Node sets are kept as sorted ``int64`` arrays of ``NodeTable`` rows (:meth:`HyperNodeTree.rows`)
so that allocate can restrict the columnar table to a HyperNode with one fancy index; they and
the name sets (:meth:`HyperNodeTree.nodes`) are computed on first use and cached until a change
touches the HyperNode or one of its descendants.

API (names are HyperNode names, the virtual root included; an unknown name raises ``KeyError``):

* inputs: :meth:`~HyperNodeTree.set_node`, :meth:`~HyperNodeTree.remove_node`,
  :meth:`~HyperNodeTree.set_hypernode`, :meth:`~HyperNodeTree.remove_hypernode`, or
  :meth:`~HyperNodeTree.build` from scratch;
* :attr:`~HyperNodeTree.ready`, :attr:`~HyperNodeTree.generation` (bumped by every change of
  structure or membership), :meth:`~HyperNodeTree.names`, ``name in tree``,
  :meth:`~HyperNodeTree.has_node`, :meth:`~HyperNodeTree.hypernode` (the object as written);
* structure: :meth:`~HyperNodeTree.tier`, :meth:`~HyperNodeTree.parent`,
  :meth:`~HyperNodeTree.children`, :meth:`~HyperNodeTree.ancestors`,
  :meth:`~HyperNodeTree.tiers` (ascending, the root's included),
  :meth:`~HyperNodeTree.hypernodes_at` (upstream ``HyperNodesSetByTier``),
  :meth:`~HyperNodeTree.tier_names` (upstream ``HyperNodeTierNameMap``);
* node sets: :meth:`~HyperNodeTree.nodes`, :meth:`~HyperNodeTree.rows`;
* per node: :meth:`~HyperNodeTree.hypernodes_of`, :meth:`~HyperNodeTree.ancestor`;
* :meth:`~HyperNodeTree.lca` (upstream ``GetLCAHyperNode``), :meth:`~HyperNodeTree.lca_of_nodes`
  (the lowest HyperNode holding all of the nodes, as upstream's ``recoverAllocatedHyperNode``).

Invariants: the parent relation is a forest under the root; ``nodes(h)`` is the union of ``h``'s
selected nodes and its children's ``nodes``; updating incrementally gives the same answers as
:meth:`~HyperNodeTree.build` on the resulting objects.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from pyvolcano.api.hypernode import HyperNode, SelectorKind
from pyvolcano.api.matching.errors import SelectorError
from pyvolcano.api.matching.labels import NOTHING, LabelSelector, compile_label_selector

__all__ = ["CLUSTER_TOP_HYPERNODE", "HyperNodeTree"]

CLUSTER_TOP_HYPERNODE: Final = "<cluster-top-hypernode>"

_NO_ROWS: Final = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True, slots=True)
class _LabelMember:
    selector: LabelSelector
    # Label pairs every selected node has (matchLabels, or one In requirement's values):
    # candidates come from the label index instead of a scan over every node.
    required: tuple[tuple[str, str], ...]
    any_of: tuple[tuple[str, str], ...]


@dataclass(slots=True)
class _Spec:
    """One HyperNode's members, compiled."""

    hypernode: HyperNode
    exact_nodes: frozenset[str]
    patterns: tuple[re.Pattern[str], ...]
    label_members: tuple[_LabelMember, ...]
    children: frozenset[str]  # claimed HyperNode names


class HyperNodeTree:
    """HyperNodes and nodes, resolved into a tree under :data:`CLUSTER_TOP_HYPERNODE`."""

    def __init__(self) -> None:
        self._specs: dict[str, _Spec] = {}
        self._labels: dict[str, Mapping[str, str]] = {}
        self._row: dict[str, int] = {}
        self._by_label: dict[tuple[str, str], set[str]] | None = None
        # Node name -> HyperNodes selecting it by exactMatch; HyperNodes with regex / label members.
        self._exact_claims: dict[str, set[str]] = {}
        self._regex_hns: set[str] = set()
        # HyperNodes with labelMatch members: by a label pair every node they select has (or,
        # for an In requirement, each pair one of them has), and those without such a pair.
        self._label_hns_by_pair: dict[tuple[str, str], set[str]] = {}
        self._label_hns_scan: set[str] = set()
        # Direct (selected) node members, both ways.
        self._direct: dict[str, set[str]] = {}
        self._direct_of: dict[str, set[str]] = {}
        # Structure, recomputed from the specs on every HyperNode change.
        self._parent: dict[str, str] = {}
        self._children: dict[str, frozenset[str]] = {CLUSTER_TOP_HYPERNODE: frozenset()}
        self._by_tier: dict[int, frozenset[str]] = {}
        self._tiers: tuple[int, ...] = (1,)
        self._top_tier = 1
        self._ready = True
        self._chains: dict[str, tuple[str, ...]] = {}
        # Lazily computed node sets, dropped when the HyperNode or a descendant changes.
        self._rows_cache: dict[str, np.ndarray] = {}
        self._nodes_cache: dict[str, frozenset[str]] = {}
        self.generation = 0

    @classmethod
    def build(cls, hypernodes: Iterable[HyperNode],
              nodes: Iterable[tuple[str, Mapping[str, str], int]]) -> HyperNodeTree:
        """A tree from scratch: ``nodes`` as ``(name, labels, row)``."""
        tree = cls()
        listed = list(nodes)
        tree._labels = {name: labels for name, labels, _row in listed}
        tree._row = {name: row for name, _labels, row in listed}
        for hn in hypernodes:
            tree._specs[hn.name] = _compile(hn)
        for name, spec in tree._specs.items():
            tree._index_spec(name, spec)
            tree._resolve(name, spec)
        tree._restructure(None)
        return tree

    # ------------------------------------------------------------------ inputs: nodes
    def set_node(self, name: str, labels: Mapping[str, str], row: int) -> bool:
        """Add a node or update its labels and row; returns whether a node set changed.

        The tree keeps ``labels``: replace a node's labels, do not change them in place."""
        old_row = self._row.get(name)
        if old_row is None and not self._specs:  # the common case of a cluster without HyperNodes
            self._add_node_data(name, labels, row)
            self._rows_cache.pop(CLUSTER_TOP_HYPERNODE, None)
            self._nodes_cache.pop(CLUSTER_TOP_HYPERNODE, None)
            self.generation += 1
            return True
        if old_row is not None:
            self._drop_node_data(name)
        self._add_node_data(name, labels, row)
        matched = self._matching_hypernodes(name) if self._specs else set()
        old = self._direct_of.get(name, set())
        if old_row == row and matched == old:
            return False
        for h in old - matched:
            self._direct[h].discard(name)
        for h in matched - old:
            self._direct[h].add(name)
        if matched:
            self._direct_of[name] = matched
        else:
            self._direct_of.pop(name, None)
        self._invalidate_up(old | matched)
        self._invalidate(CLUSTER_TOP_HYPERNODE)
        self.generation += 1
        return True

    def remove_node(self, name: str) -> bool:
        """Forget a node; returns whether it was known."""
        if name not in self._row:
            return False
        self._drop_node_data(name)
        old = self._direct_of.pop(name, set())
        for h in old:
            self._direct[h].discard(name)
        self._invalidate_up(old)
        self._invalidate(CLUSTER_TOP_HYPERNODE)
        self.generation += 1
        return True

    def has_node(self, name: str) -> bool:
        return name in self._row

    # ------------------------------------------------------------------ inputs: HyperNodes
    def set_hypernode(self, hn: HyperNode) -> None:
        """Add or replace a HyperNode (its members are resolved against the current nodes)."""
        old = self._specs.get(hn.name)
        if old is not None:
            self._unindex_spec(hn.name, old)
        spec = _compile(hn)
        self._specs[hn.name] = spec
        self._index_spec(hn.name, spec)
        self._resolve(hn.name, spec)
        self._restructure(hn.name)

    def remove_hypernode(self, name: str) -> bool:
        """Forget a HyperNode; returns whether it was known."""
        spec = self._specs.pop(name, None)
        if spec is None:
            return False
        self._unindex_spec(name, spec)
        for node in self._direct.pop(name, set()):
            hns = self._direct_of[node]
            hns.discard(name)
            if not hns:
                del self._direct_of[node]
        self._restructure(name)
        return True

    def hypernode(self, name: str) -> HyperNode:
        """The object a real HyperNode was built from."""
        return self._specs[name].hypernode

    # ------------------------------------------------------------------ structure
    @property
    def ready(self) -> bool:
        """No name claimed by two HyperNodes, no cycle of claims."""
        return self._ready

    def __contains__(self, name: object) -> bool:
        return name == CLUSTER_TOP_HYPERNODE or name in self._specs

    def __len__(self) -> int:
        """HyperNodes in the tree, the virtual root included."""
        return len(self._specs) + 1

    def names(self) -> list[str]:
        """Every HyperNode name, the virtual root last, the others sorted."""
        return [*sorted(self._specs), CLUSTER_TOP_HYPERNODE]

    def tier(self, name: str) -> int:
        if name == CLUSTER_TOP_HYPERNODE:
            return self._top_tier
        return self._specs[name].hypernode.tier

    def parent(self, name: str) -> str | None:
        """The parent HyperNode (the virtual root for a top-level one); None for the root."""
        if name == CLUSTER_TOP_HYPERNODE:
            return None
        if name not in self._specs:
            raise KeyError(name)
        return self._parent.get(name, CLUSTER_TOP_HYPERNODE)

    def children(self, name: str) -> frozenset[str]:
        if name not in self:
            raise KeyError(name)
        return self._children.get(name, frozenset())

    def ancestors(self, name: str) -> tuple[str, ...]:
        """``name``, its parent, ..., the virtual root."""
        chain = self._chains.get(name)
        if chain is None:
            if name not in self:
                raise KeyError(name)
            out = [name]
            while out[-1] != CLUSTER_TOP_HYPERNODE:
                out.append(self._parent.get(out[-1], CLUSTER_TOP_HYPERNODE))
            chain = self._chains[name] = tuple(out)
        return chain

    def tiers(self) -> tuple[int, ...]:
        """Every tier with a HyperNode, ascending; the last is the virtual root's."""
        return self._tiers

    def hypernodes_at(self, tier: int) -> frozenset[str]:
        return self._by_tier.get(tier, frozenset())

    def tier_names(self) -> dict[str, int]:
        """``spec.tierName`` -> tier. Two tiers under one name: the lower wins (upstream: either)."""
        out: dict[str, int] = {}
        for spec in self._specs.values():
            hn = spec.hypernode
            if hn.tier_name and (hn.tier_name not in out or hn.tier < out[hn.tier_name]):
                out[hn.tier_name] = hn.tier
        return out

    # ------------------------------------------------------------------ node sets
    def nodes(self, name: str) -> frozenset[str]:
        """The names of the nodes under ``name`` (upstream's real node set)."""
        got = self._nodes_cache.get(name)
        if got is None:
            if name == CLUSTER_TOP_HYPERNODE:
                got = frozenset(self._row)
            else:
                acc = set(self._direct.get(name, ()))
                for c in self.children(name):
                    acc |= self.nodes(c)
                got = frozenset(acc)
            self._nodes_cache[name] = got
        return got

    def rows(self, name: str) -> np.ndarray:
        """The ``NodeTable`` rows of :meth:`nodes`, sorted, unique (read-only)."""
        got = self._rows_cache.get(name)
        if got is None:
            if name == CLUSTER_TOP_HYPERNODE:
                got = np.fromiter(self._row.values(), dtype=np.int64, count=len(self._row))
            else:
                direct = self._direct.get(name, ())
                parts = [np.fromiter((self._row[n] for n in direct), dtype=np.int64, count=len(direct))]
                parts.extend(self.rows(c) for c in self.children(name))
                got = np.concatenate(parts) if len(parts) > 1 else parts[0]
            got = np.unique(got) if len(got) else _NO_ROWS
            got.flags.writeable = False
            self._rows_cache[name] = got
        return got

    # ------------------------------------------------------------------ per node
    def hypernodes_of(self, node: str) -> tuple[str, ...]:
        """Every HyperNode holding ``node``, lowest tier first (then by name); the root last.

        Empty for an unknown node."""
        if node not in self._row:
            return ()
        found: set[str] = set()
        for h in self._direct_of.get(node, ()):
            found.update(self.ancestors(h))
        found.discard(CLUSTER_TOP_HYPERNODE)
        return (*sorted(found, key=lambda h: (self._specs[h].hypernode.tier, h)), CLUSTER_TOP_HYPERNODE)

    def ancestor(self, node: str, tier: int) -> str | None:
        """The HyperNode of ``tier`` holding ``node`` (the first by name if several do), or None."""
        for h in self.hypernodes_of(node):
            if self.tier(h) == tier:
                return h
        return None

    # ------------------------------------------------------------------ common ancestors
    def lca(self, a: str | None, b: str | None) -> str | None:
        """The lowest common ancestor of two HyperNodes; None stands for "none yet" and gives the other."""
        if a is None:
            return b
        if b is None:
            return a
        mine = set(self.ancestors(a))
        for h in self.ancestors(b):
            if h in mine:
                return h
        return None  # unreachable: both chains end at the root

    def lca_of_nodes(self, nodes: Iterable[str]) -> str | None:
        """The lowest-tier HyperNode holding every one of ``nodes`` (the first by name on a tie),
        the root if only it does; None for no nodes or an unknown node."""
        it = iter(nodes)
        first = next(it, None)
        if first is None:
            return None
        candidates = list(self.hypernodes_of(first))
        if not candidates:
            return None
        for n in it:
            if n not in self._row:
                return None
            candidates = [h for h in candidates if n in self.nodes(h)]
        return candidates[0]

    # ------------------------------------------------------------------ internals: nodes
    def _add_node_data(self, name: str, labels: Mapping[str, str], row: int) -> None:
        self._labels[name] = labels
        self._row[name] = row
        if self._by_label is not None:
            for kv in labels.items():
                self._by_label.setdefault(kv, set()).add(name)

    def _drop_node_data(self, name: str) -> None:
        labels = self._labels.pop(name)
        del self._row[name]
        if self._by_label is not None:
            for kv in labels.items():
                holders = self._by_label.get(kv)
                if holders is not None:
                    holders.discard(name)
                    if not holders:
                        del self._by_label[kv]

    def _label_index(self) -> dict[tuple[str, str], set[str]]:
        """Label pair -> nodes, built when a labelMatch member first needs it, then kept."""
        if self._by_label is None:
            self._by_label = {}
            for name, labels in self._labels.items():
                for kv in labels.items():
                    self._by_label.setdefault(kv, set()).add(name)
        return self._by_label

    def _matching_hypernodes(self, node: str) -> set[str]:
        out = set(self._exact_claims.get(node, ()))
        labels = self._labels[node]
        for h in self._regex_hns:
            if any(p.search(node) for p in self._specs[h].patterns):
                out.add(h)
        candidates = set(self._label_hns_scan)
        for kv in labels.items():
            candidates.update(self._label_hns_by_pair.get(kv, ()))
        for h in candidates:
            if any(m.selector.matches(labels) for m in self._specs[h].label_members):
                out.add(h)
        return out

    # ------------------------------------------------------------------ internals: HyperNodes
    def _index_spec(self, name: str, spec: _Spec) -> None:
        for n in spec.exact_nodes:
            self._exact_claims.setdefault(n, set()).add(name)
        if spec.patterns:
            self._regex_hns.add(name)
        for m in spec.label_members:
            pairs = m.required[:1] or m.any_of
            if not pairs:
                self._label_hns_scan.add(name)
            for kv in pairs:
                self._label_hns_by_pair.setdefault(kv, set()).add(name)

    def _unindex_spec(self, name: str, spec: _Spec) -> None:
        for n in spec.exact_nodes:
            claims = self._exact_claims[n]
            claims.discard(name)
            if not claims:
                del self._exact_claims[n]
        self._regex_hns.discard(name)
        self._label_hns_scan.discard(name)
        for m in spec.label_members:
            for kv in m.required[:1] or m.any_of:
                holders = self._label_hns_by_pair.get(kv)
                if holders is not None:
                    holders.discard(name)
                    if not holders:
                        del self._label_hns_by_pair[kv]

    def _resolve(self, name: str, spec: _Spec) -> None:
        """Resolve ``name``'s node members against the current nodes."""
        found = {n for n in spec.exact_nodes if n in self._row}
        for p in spec.patterns:
            found.update(filter(p.search, self._row))
        for m in spec.label_members:
            found.update(n for n in self._label_candidates(m) if m.selector.matches(self._labels[n]))
        old = self._direct.get(name, set())
        for n in old - found:
            hns = self._direct_of[n]
            hns.discard(name)
            if not hns:
                del self._direct_of[n]
        for n in found - old:
            self._direct_of.setdefault(n, set()).add(name)
        self._direct[name] = found

    def _label_candidates(self, m: _LabelMember) -> Iterable[str]:
        index = self._label_index()
        if m.required:
            sets = [index.get(kv, set()) for kv in m.required]
            sets.sort(key=len)
            return sets[0].intersection(*sets[1:])
        if m.any_of:
            out: set[str] = set()
            for kv in m.any_of:
                out |= index.get(kv, set())
            return out
        return self._row.keys()

    def _restructure(self, changed: str | None) -> None:
        """Recompute parents, children, tiers and readiness from the specs (O(HyperNodes))."""
        claimants: dict[str, list[str]] = {}
        for name in sorted(self._specs):
            for child in self._specs[name].children:
                claimants.setdefault(child, []).append(name)
        ready = all(len(c) == 1 for c in claimants.values())
        parent = {child: c[0] for child, c in claimants.items() if child in self._specs}
        # Cut cycles: walk up from every HyperNode; a walk that meets itself is a cycle.
        state: dict[str, int] = {}  # 1: on the current walk, 2: done
        for start in sorted(self._specs):
            walk: list[str] = []
            h: str | None = start
            while h is not None and h not in state:
                state[h] = 1
                walk.append(h)
                h = parent.get(h)
            if h is not None and state[h] == 1:
                cycle = walk[walk.index(h):]
                del parent[min(cycle)]
                ready = False
            for w in walk:
                state[w] = 2
        children: dict[str, set[str]] = {CLUSTER_TOP_HYPERNODE: set()}
        for name in self._specs:
            children.setdefault(parent.get(name, CLUSTER_TOP_HYPERNODE), set()).add(name)
        by_tier: dict[int, set[str]] = {}
        for name, spec in self._specs.items():
            by_tier.setdefault(spec.hypernode.tier, set()).add(name)
        top = max(1, max(by_tier, default=0) + 1)
        by_tier_frozen = {t: frozenset(s) for t, s in by_tier.items()}
        by_tier_frozen[top] = frozenset((CLUSTER_TOP_HYPERNODE,))

        new_children = {k: frozenset(v) for k, v in children.items()}
        # The node sets that may change: ``changed``'s, those of HyperNodes whose children
        # changed, and everything above them in the new tree. (Above the highest HyperNode on
        # an old path whose children changed, the old path and the new one are the same.)
        stale = {changed} if changed is not None else set()
        stale |= {h for h in new_children.keys() | self._children.keys()
                  if new_children.get(h) != self._children.get(h)}
        self._parent = parent
        self._children = new_children
        self._chains = {}
        self._invalidate_up(stale)
        self._by_tier = by_tier_frozen
        self._top_tier = top
        self._tiers = tuple(sorted(by_tier_frozen))
        self._ready = ready
        self.generation += 1

    def _invalidate(self, name: str) -> None:
        self._rows_cache.pop(name, None)
        self._nodes_cache.pop(name, None)

    def _invalidate_up(self, names: Iterable[str]) -> None:
        """Drop the cached node sets of ``names`` and of their ancestors."""
        for h in names:
            self._invalidate(h)
            if h in self._specs:
                for a in self.ancestors(h):
                    self._invalidate(a)


def _compile(hn: HyperNode) -> _Spec:
    exact: set[str] = set()
    patterns: list[re.Pattern[str]] = []
    label_members: list[_LabelMember] = []
    children: set[str] = set()
    for m in hn.members:
        sel = m.selector
        if m.type == "HyperNode":
            if sel.kind is SelectorKind.EXACT and sel.name:
                children.add(sel.name)
            continue
        if sel.kind is SelectorKind.EXACT:
            if sel.name:
                exact.add(sel.name)
        elif sel.kind is SelectorKind.REGEX:
            with contextlib.suppress(re.error):  # upstream: a pattern that does not compile selects nothing
                patterns.append(re.compile(sel.pattern))
        else:
            member = _label_member(sel.label_selector)
            if member is not None:
                label_members.append(member)
    return _Spec(hn, frozenset(exact), tuple(patterns), tuple(label_members), frozenset(children))


def _label_member(raw: dict[str, Any] | None) -> _LabelMember | None:
    """A compiled ``labelMatch``, or None when it selects nothing (empty, or not a valid selector)."""
    if not raw or not (raw.get("matchLabels") or raw.get("matchExpressions")):
        return None
    try:
        selector = compile_label_selector(raw)
    except SelectorError:
        return None
    if selector is NOTHING:
        return None
    required = tuple(sorted((raw.get("matchLabels") or {}).items()))
    any_of: tuple[tuple[str, str], ...] = ()
    for e in raw.get("matchExpressions") or ():
        if e.get("operator") == "In":
            any_of = tuple((e["key"], v) for v in e.get("values") or ())
            break
    return _LabelMember(selector, required, any_of)
