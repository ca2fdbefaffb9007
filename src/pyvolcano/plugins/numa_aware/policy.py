"""Topology-manager policies of numa-aware (upstream ``numaaware/policy``).

Each hint provider answers, per resource, a list of :class:`TopologyHint` (``None``: no
preference). :func:`merge` takes one hint per resource in every combination, ANDs their NUMA
masks with the node's (a ``None`` mask is the whole node) and keeps the best: a preferred merge
beats a non-preferred one, then the narrower mask (fewer NUMA nodes, then the lower mask
value). The node's ``TopologyManagerPolicy`` then decides:

* ``none`` (and any unknown value): admit, with no hint;
* ``best-effort``: admit, with the best hint;
* ``restricted``: admit only a preferred best hint;
* ``single-numa-node``: keep only preferred hints of one NUMA node (or no preference) per
  resource, then admit only a preferred best hint.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import product

from pyvolcano.plugins.numa_aware.cpumanager import TopologyHint, mask_of

__all__ = ["POLICIES", "predicate"]

ProviderHints = Mapping[str, list[TopologyHint] | None] | None


def _filter(providers: Iterable[ProviderHints]) -> list[list[TopologyHint]]:
    """``filterProvidersHints``: one list per resource; no answer is one no-preference hint, an
    empty answer one impossible hint."""
    out: list[list[TopologyHint]] = []
    for hints in providers:
        if not hints:
            out.append([TopologyHint(None, True)])
            continue
        for resource_hints in hints.values():
            if resource_hints is None:
                out.append([TopologyHint(None, True)])
            elif not resource_hints:
                out.append([TopologyHint(None, False)])
            else:
                out.append(list(resource_hints))
    return out


def _narrower(a: int, b: int) -> bool:
    """``bitmask.IsNarrowerThan``: fewer bits, then the lower value."""
    ca, cb = a.bit_count(), b.bit_count()
    return a < b if ca == cb else ca < cb


def merge(numa_nodes: Sequence[int], filtered: list[list[TopologyHint]]) -> TopologyHint:
    """``mergeFilteredHints``: the best merge of one hint per resource (see the module doc)."""
    default = mask_of(list(numa_nodes))
    best = TopologyHint(default, False)
    for permutation in product(*filtered):
        mask = default
        preferred = True
        for h in permutation:
            mask &= default if h.affinity is None else h.affinity
            if not h.preferred:
                preferred = False
        if mask == 0:
            continue
        if preferred and not best.preferred:
            best = TopologyHint(mask, preferred)
            continue
        if not preferred and best.preferred:
            continue
        if not _narrower(mask, best.affinity or 0):
            continue
        best = TopologyHint(mask, preferred)
    return best


def _single_numa(filtered: list[list[TopologyHint]]) -> list[list[TopologyHint]]:
    return [[h for h in hints if h.preferred and (h.affinity is None or h.count() == 1)] for hints in filtered]


POLICIES = ("none", "best-effort", "restricted", "single-numa-node")


def predicate(policy: str, numa_nodes: Sequence[int], providers: Iterable[ProviderHints]) -> tuple[TopologyHint, bool]:
    """The best hint for a container on a node whose topology manager runs ``policy``, and
    whether the policy admits it."""
    if policy == "best-effort":
        return merge(numa_nodes, _filter(providers)), True
    if policy == "restricted":
        best = merge(numa_nodes, _filter(providers))
        return best, best.preferred
    if policy == "single-numa-node":
        best = merge(numa_nodes, _single_numa(_filter(providers)))
        return best, best.preferred
    return TopologyHint(None, False), True
