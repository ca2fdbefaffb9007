"""Network topology files → Node and HyperNode manifests (:func:`load_topology`).

A topology file lists hosts and the switches above them; the result is one Node per host and
one ``topology.volcano.sh/v1alpha1`` HyperNode per switch, tier 1 the lowest, each HyperNode's
members named with ``exactMatch`` (tier 1: its Nodes; higher tiers: the HyperNodes below), as
upstream's user guide writes them. Two formats, recognised by the header:

=============================  ===============================================================
file (header)                  mapping
=============================  ===============================================================
Lingjun ``topo.csv``           ``ip,DSW,PSW,ASW``: tier 1 = rack, the pair (PSW, ASW), since
(``ip,DSW,PSW,ASW``)           ASW names repeat under different PSWs (``rack-p10-s14``); tier 2
                               = PSW (``agg-p10``); tier 3 = DSW (``spine-g6``). A host is
                               ``lingjun-`` + the first 10 hex digits of its hashed IP.
generic (``node,T1[,T2...]``)  one row per node; the columns after ``node`` name its HyperNode
                               at tier 1, 2, … (the header gives the tier names). A HyperNode
                               name must be the same for every node under it and lie under one
                               parent.
=============================  ===============================================================

``load_topology("lingjun")`` (a name that is not an existing path) loads the shipped Lingjun
file (847 hosts, 119 racks, 3 aggregation switches, 1 spine). The files carry no host sizes:
every node gets ``gpus`` GPUs, ``cpu`` cores and ``memory`` (defaults: 8, 128, ``1Ti``), and
the labels ``kubernetes.io/hostname`` and ``pyvolcano.io/topology-<tier name>`` per tier.
The output is sorted (nodes by name, HyperNodes by tier, then name), so it does not depend on
row order.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pyvolcano.api.names import TOPOLOGY_API_VERSION, is_dns1123_label
from pyvolcano.simulator.traces._common import (
    TraceError,
    display_name,
    dns_label,
    node_manifest,
    open_rows,
    packaged,
)

__all__ = ["TOPOLOGIES", "Topology", "load_topology"]

TOPOLOGY_LABEL_PREFIX: Final = "pyvolcano.io/topology-"

TOPOLOGIES: Final = {"lingjun": ("alibaba-lingjun-2023-topology", "topo.csv")}
"""Topology files shipped with the package, by name."""

_LINGJUN_HEADER: Final = ["ip", "dsw", "psw", "asw"]


@dataclass(frozen=True)
class Topology:
    """Nodes and HyperNodes of a topology file, and the tier names from lowest to highest."""

    nodes: list[dict[str, Any]]
    hypernodes: list[dict[str, Any]]
    tier_names: tuple[str, ...]
    notes: list[str] = field(default_factory=list)

    def objects(self) -> list[dict[str, Any]]:
        return [*self.nodes, *self.hypernodes]


def load_topology(path: str | os.PathLike[str] | Any, *, gpus: int = 8, cpu: str = "128",
                  memory: str = "1Ti") -> Topology:
    """Read a topology file (see the module docstring); ``path`` may name a shipped topology."""
    if isinstance(path, str) and path in TOPOLOGIES and not os.path.exists(path):
        path = packaged(*TOPOLOGIES[path])
    with open_rows(path) as (fname, cols, rows):
        low = [c.strip().lower() for c in cols]
        if low == _LINGJUN_HEADER:
            tier_names: tuple[str, ...] = ("rack", "agg", "spine")
            paths = _lingjun_paths(rows)
        elif len(low) >= 2 and low[0] == "node":
            tier_names = tuple(dns_label(c) for c in cols[1:])
            paths = _generic_paths(fname, rows, len(cols))
        else:
            raise TraceError(f"header {','.join(cols)!r}", file=fname, line=1,
                             expected="ip,DSW,PSW,ASW (Lingjun) or node,TIER1[,TIER2...]")
    return _build(display_name(path), paths, tier_names, gpus=gpus, cpu=cpu, memory=memory)


def _lingjun_paths(rows: Any) -> list[tuple[str, tuple[str, ...]]]:
    out: list[tuple[str, tuple[str, ...]]] = []
    for _line, cells in rows:
        ip, dsw, psw, asw = (c.strip() for c in cells[:4])
        out.append((f"lingjun-{ip[:10].lower()}",
                    (f"rack-{dns_label(psw)}-{dns_label(asw)}", f"agg-{dns_label(psw)}", f"spine-{dns_label(dsw)}")))
    return out


def _generic_paths(fname: str, rows: Any, width: int) -> list[tuple[str, tuple[str, ...]]]:
    out = []
    for line, cells in rows:
        if len(cells) != width:
            raise TraceError(f"got {len(cells)} columns", file=fname, line=line, expected=f"{width}")
        names = [c.strip() for c in cells]
        for name in names:
            if not is_dns1123_label(name):
                raise TraceError(f"got {name!r}", file=fname, line=line, expected="a DNS-1123 label (lower-case "
                                 "letters, digits and '-', at most 63 characters)")
        out.append((names[0], tuple(names[1:])))
    return out


def _build(source: str, paths: Sequence[tuple[str, tuple[str, ...]]], tier_names: tuple[str, ...], *,
           gpus: int, cpu: str, memory: str) -> Topology:
    if not paths:
        raise TraceError("no hosts", file=source)
    parent: dict[str, str] = {}
    tier_of: dict[str, int] = {}
    members: dict[str, set[str]] = {}
    seen: set[str] = set()
    nodes = []
    for node, chain in paths:
        if node in seen:
            raise TraceError(f"node {node!r} is listed twice", file=source)
        seen.add(node)
        child = node
        for tier, hn in enumerate(chain, start=1):
            if tier_of.setdefault(hn, tier) != tier:
                raise TraceError(f"HyperNode {hn!r} is at tier {tier_of[hn]} and at tier {tier}", file=source)
            if child in parent and parent[child] != hn:
                raise TraceError(f"{child!r} lies under both {parent[child]!r} and {hn!r}", file=source)
            parent[child] = hn
            members.setdefault(hn, set()).add(child)
            child = hn
        labels = {f"{TOPOLOGY_LABEL_PREFIX}{tier_names[i]}": hn for i, hn in enumerate(chain)}
        nodes.append(node_manifest(node, cpu=cpu, memory=memory, gpus=gpus, labels=labels))
    hypernodes = []
    for hn in sorted(members, key=lambda h: (tier_of[h], h)):
        tier = tier_of[hn]
        kind = "Node" if tier == 1 else "HyperNode"
        hypernodes.append({
            "apiVersion": TOPOLOGY_API_VERSION, "kind": "HyperNode", "metadata": {"name": hn},
            "spec": {"tier": tier, "tierName": tier_names[tier - 1],
                     "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}}
                                 for m in sorted(members[hn])]},
        })
    nodes.sort(key=lambda n: n["metadata"]["name"])
    per_tier = [sum(1 for h in members if tier_of[h] == t) for t in range(1, len(tier_names) + 1)]
    notes = [f"{source}: {len(nodes)} nodes; " + ", ".join(
        f"{count} tier-{t} ({tier_names[t - 1]})" for t, count in enumerate(per_tier, start=1))
        + f" HyperNodes; every node: {gpus} GPUs, {cpu} CPUs, {memory} memory (the file gives no sizes)"]
    return Topology(nodes, hypernodes, tier_names, notes)
