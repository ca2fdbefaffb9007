"""HyperNodes in a simulated cluster: ``pyvolcano simulate --topology NAME|FILE``.

A cluster file may hold HyperNode documents of its own (they are created with the Nodes, at
time 0, and reach the scheduler cache's HyperNode tree like any other HyperNode). ``--topology``
adds the HyperNodes of a topology instead:

* a shipped topology by name (``lingjun``: :data:`~pyvolcano.simulator.traces.topology.TOPOLOGIES`);
* a topology CSV (Lingjun ``topo.csv`` or the generic ``node,TIER1[,TIER2...]`` form, see
  :mod:`pyvolcano.simulator.traces.topology`): its hosts and switches;
* a YAML or JSON file (``.yaml``, ``.yml``, ``.json``) of HyperNode documents, optionally with
  the Node documents of its hosts; nothing else.

Which nodes the run has (:func:`apply_topology`):

* **The run gives no nodes of its own** (no Node in ``--cluster``/``--workload``; a trace or the
  built-in scenario without ``--nodes``): the topology's hosts are the cluster. They replace a
  trace's machines, each host then taking the size of the trace's largest GPU machine (its
  capacity and GPU product label: topology files carry no sizes); otherwise they keep the
  topology's own sizes (8 GPUs, 128 cores, 1 TiB for a CSV). A topology without hosts (a YAML
  of HyperNodes only) is then an error.
* **The run gives its nodes** (Nodes in ``--cluster``, ``--nodes`` with ``--trace``): the
  topology's hosts are not used; its HyperNodes group the given nodes. Every HyperNode must
  select at least one of them (directly or through the HyperNodes below it), or the run stops
  with an error naming the HyperNode (exit 2): a topology that describes other machines is a
  mistake, not a topology. Members naming absent nodes are otherwise kept (upstream ignores
  them) and a note counts them; nodes under no HyperNode belong only to the cluster's virtual
  top HyperNode.
* A HyperNode defined both in the cluster file and in the topology is an error.

The HyperNodes are created at time 0, after admission like every object; a HyperNode the
webhook refuses stops the run (exit 2), as a bad cluster file does.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pyvolcano.api.hypernode import HyperNode
from pyvolcano.api.hypernode_tree import HyperNodeTree
from pyvolcano.api.manifest import ManifestError, parse_object
from pyvolcano.api.objects import Node
from pyvolcano.simulator.traces._common import GPU_PRODUCT_LABEL, HOSTNAME_LABEL, NVIDIA_GPU
from pyvolcano.simulator.traces.topology import TOPOLOGIES, load_topology
from pyvolcano.simulator.workload import Submission, load_workload

__all__ = ["ClusterTopology", "apply_topology", "load_cluster_topology"]

_YAML_SUFFIXES: Final = (".yaml", ".yml", ".json")
_NAMED_MISSING: Final = 3


@dataclass(frozen=True)
class ClusterTopology:
    """The HyperNodes (and hosts, if the source has them) of one ``--topology`` source."""

    source: str
    hypernodes: list[dict[str, Any]]
    hosts: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)


def load_cluster_topology(spec: str | os.PathLike[str]) -> ClusterTopology:
    """Read ``--topology``: a shipped name, a topology CSV or a YAML/JSON of HyperNodes.

    Raises :class:`ManifestError` (YAML) or :class:`~pyvolcano.simulator.traces.TraceError` (CSV)."""
    text = os.fspath(spec)
    if text.lower().endswith(_YAML_SUFFIXES):
        subs, _ = load_workload(text, cluster=True)
        others = [s for s in subs if s.kind not in ("HyperNode", "Node")]
        if others:
            s = others[0]
            raise ManifestError(f"{text}: document {s.document} ({s.kind} {s.key}): kind {s.kind} is not allowed "
                                "in a topology file; expected HyperNode (and the Nodes it groups)")
        hypernodes = [s.obj for s in subs if s.kind == "HyperNode"]
        if not hypernodes:
            raise ManifestError(f"{text}: no HyperNode documents; a topology file needs at least one")
        return ClusterTopology(text, hypernodes, [s.obj for s in subs if s.kind == "Node"])
    if text not in TOPOLOGIES and not os.path.exists(text):
        raise ManifestError(f"--topology: {text!r} is neither a file nor a shipped topology; expected one of "
                            f"{', '.join(sorted(TOPOLOGIES))}, a topology CSV or a YAML file of HyperNodes")
    topo = load_topology(text)
    source = f"topology:{text}" if text in TOPOLOGIES and not os.path.exists(text) else text
    return ClusterTopology(source, topo.hypernodes, topo.nodes, list(topo.notes))


def apply_topology(subs: Sequence[Submission], topo: ClusterTopology, *, own_nodes: bool,
                   replace_nodes: bool = False,
                   other_nodes: Sequence[Submission] = ()) -> tuple[list[Submission], list[str]]:
    """``subs`` (the cluster's submissions) with the topology's HyperNodes, and notes.

    ``own_nodes``: the user gave the nodes (see the module docstring); ``replace_nodes``: the
    Node submissions in ``subs`` are a trace's default machines, replaced by the hosts;
    ``other_nodes``: Nodes the run creates besides those in ``subs`` (a workload file's).
    Raises :class:`ManifestError` naming the topology and the HyperNode at fault.
    """
    out = list(subs)
    notes = list(topo.notes)
    defined = {s.key for s in out if s.kind == "HyperNode"}
    clash = sorted(defined & {h["metadata"]["name"] for h in topo.hypernodes})
    if clash:
        raise ManifestError(f"{topo.source}: HyperNode {clash[0]} is also defined in the cluster file; "
                            "expected each HyperNode in one place")
    if own_nodes:
        nodes = [s.obj for s in (*out, *other_nodes) if s.kind == "Node"]
        notes += _check_groups(topo, nodes)
    else:
        if not topo.hosts:
            raise ManifestError(f"{topo.source}: the topology lists no Nodes and the run gives none; expected "
                                "Node documents in the topology file, or the nodes in --cluster (or --nodes)")
        hosts = topo.hosts
        if replace_nodes:
            machines = [s.obj for s in out if s.kind == "Node"]
            out = [s for s in out if s.kind != "Node"]
            template = _largest_gpu_machine(machines)
            if template is not None:
                hosts = [_sized_like(h, template) for h in hosts]
                notes.append(f"{topo.source}: {len(hosts)} hosts replace the {len(machines)} machines of the run, "
                             f"each sized as {template['metadata']['name']} "
                             f"({_size_text(template)}), the largest GPU machine")
        out += [Submission(0.0, i, topo.source, h) for i, h in enumerate(hosts)]
    base = len(topo.hosts)
    out += [Submission(0.0, base + i, topo.source, h) for i, h in enumerate(topo.hypernodes)]
    return out, notes


def _check_groups(topo: ClusterTopology, nodes: Sequence[dict[str, Any]]) -> list[str]:
    """Every HyperNode selects a given node; returns a note on hosts that are not nodes."""
    typed_nodes = [parse_object(n) for n in nodes]
    rows = [(n.name, dict(n.labels), i) for i, n in enumerate(typed_nodes) if isinstance(n, Node)]
    hns: list[HyperNode] = []
    for doc in topo.hypernodes:
        hn = parse_object(doc, topo.source)
        if isinstance(hn, HyperNode):
            hns.append(hn)
    tree = HyperNodeTree.build(hns, rows)
    for hn in sorted(hns, key=lambda h: (h.tier, h.name)):
        if not tree.nodes(hn.name):
            named = [m.selector.name for m in hn.members if m.type == "Node" and m.selector.name]
            example = f" (its members name {', '.join(named[:_NAMED_MISSING])}{', ...' if len(named) > 3 else ''})"
            raise ManifestError(
                f"{topo.source}: HyperNode {hn.name} (tier {hn.tier}) selects no node of the cluster"
                f"{example if named else ''}; expected the topology to group the nodes given in --cluster or "
                "--nodes (give no nodes to run on the topology's own hosts)")
    if not topo.hosts:
        return []
    given = {name for name, _labels, _row in rows}
    missing = [h["metadata"]["name"] for h in topo.hosts if h["metadata"]["name"] not in given]
    if not missing:
        return []
    return [f"{topo.source}: {len(missing)} of its {len(topo.hosts)} hosts are not nodes of the cluster "
            f"(e.g. {', '.join(missing[:_NAMED_MISSING])}); their HyperNodes group the nodes that are"]


def _gpus(node: dict[str, Any]) -> float:
    alloc = (node.get("status") or {}).get("allocatable") or {}
    try:
        return float(alloc.get(NVIDIA_GPU, 0) or 0)
    except (TypeError, ValueError):
        return 0.0


def _largest_gpu_machine(machines: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The machine with the most GPUs, the first listed on a tie; None without machines."""
    best: dict[str, Any] | None = None
    for m in machines:
        if best is None or _gpus(m) > _gpus(best):
            best = m
    return best


def _sized_like(host: dict[str, Any], template: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(host)
    status = template.get("status") or {}
    out["status"] = {"capacity": dict(status.get("capacity") or {}),
                     "allocatable": dict(status.get("allocatable") or status.get("capacity") or {})}
    labels = out["metadata"].setdefault("labels", {})
    product = ((template.get("metadata") or {}).get("labels") or {}).get(GPU_PRODUCT_LABEL)
    if product:
        labels[GPU_PRODUCT_LABEL] = product
    labels[HOSTNAME_LABEL] = out["metadata"]["name"]
    return out


def _size_text(node: dict[str, Any]) -> str:
    alloc = (node.get("status") or {}).get("allocatable") or {}
    return (f"{alloc.get(NVIDIA_GPU, 0)} GPUs, {alloc.get('cpu', '?')} CPUs, "
            f"{alloc.get('memory', '?')} memory")
