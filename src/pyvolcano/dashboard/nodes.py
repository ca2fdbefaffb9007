"""The Nodes view: a GPU map of every node, grouped by HyperNode, with the fragmentation figures.

Per node: its GPUs one by one (``used`` milli-GPUs, GPU memory used, how many pods hold it) as
the GPU plugins' ledger accounts them (:func:`pyvolcano.plugins.gpu_session.build_ledger`: a pod's
GPU-index annotation, else the default choice), whole-GPU ``allocated`` and ``free`` counts,
``shared`` when a GPU is held by GPU memory, by a fraction or by several pods, and cpu / memory allocatable
and used. Nodes without GPUs are listed too (``gpu_count`` 0). ``reservations`` (only when
there are any) lists the ``reservation`` plugin's reservations (:meth:`Analysis.reservations`):
the job, its nodes, the time it starts by and the resources claimed per node, which the GPU map
marks.

With HyperNodes in the cluster, ``groups`` holds one entry per HyperNode of the lowest tier
(its ``path`` of ancestors, lowest first, the virtual root left out) with its nodes; nodes in
no such HyperNode form a last group named None. Without HyperNodes ``groups`` is empty.

``fragmentation`` holds the figures the simulator samples, computed by the same functions:
``gpu_fragmentation`` (:func:`pyvolcano.simulator.collector.fragmentation`: idle GPUs a typical
pending pod cannot use) and, with HyperNodes, ``topology_fragmentation`` and
``fragmented_domains`` (:class:`pyvolcano.simulator.topology_metrics.TopologyFragmentation`).
"""

from __future__ import annotations

from typing import Any

from pyvolcano.api.hypernode_tree import CLUSTER_TOP_HYPERNODE
from pyvolcano.api.task import TaskInfo
from pyvolcano.dashboard.analysis import Analysis, user_amount
from pyvolcano.gpu.devices import MILLI, NO_GPU, DemandKind, GpuDemand, node_gpus, pod_demand
from pyvolcano.plugins.gpu_session import build_ledger
from pyvolcano.simulator.collector import fragmentation
from pyvolcano.simulator.topology_metrics import TopologyFragmentation, has_topology

__all__ = ["group_nodes", "nodes_view"]


def _demand(task: TaskInfo) -> GpuDemand:
    d = pod_demand(task.pod)
    return d if d.kind is not DemandKind.INVALID else NO_GPU


def group_nodes(names: list[str], paths: dict[str, list[str]], tiers: dict[str, int]) -> list[dict[str, Any]]:
    """Groups of ``names`` by their lowest HyperNode (``paths[node]``, lowest first)."""
    groups: dict[str | None, dict[str, Any]] = {}
    for name in names:
        path = paths.get(name) or []
        domain = path[0] if path else None
        g = groups.get(domain)
        if g is None:
            g = groups[domain] = {"name": domain, "tier": tiers.get(domain) if domain else None, "path": path,
                                  "nodes": []}
        g["nodes"].append(name)
    return sorted(groups.values(), key=lambda g: (g["name"] is None, list(reversed(g["path"]))))


def nodes_view(analysis: Analysis) -> dict[str, Any]:
    """``{"nodes": [...], "groups": [...], "fragmentation": {...}}``."""
    cache = analysis.cache()
    nodes = cache.node_list
    ledger = build_ledger(nodes, _demand)
    tree = cache.hypernode_tree
    topology = has_topology(tree)
    reservations = [{"job": key, "nodes": r["nodes"], "start": r["start"], "claims": r["claims"]}
                    for key, r in analysis.reservations().items()]
    rows: list[dict[str, Any]] = []
    paths: dict[str, list[str]] = {}
    tiers: dict[str, int] = {}
    for i, n in enumerate(nodes):
        inv = node_gpus(n.node)
        gpus = [{"index": g, "used": int(ledger.used[i, g]), "memory_used": int(ledger.mem_used[i, g]),
                 "holders": int(ledger.holders[i, g]), "healthy": g not in inv.unhealthy}
                for g in range(inv.count)]
        used = sum(g["used"] for g in gpus)
        alloc, busy = n.allocatable, n.used
        if topology:
            paths[n.name] = [h for h in tree.hypernodes_of(n.name) if h != CLUSTER_TOP_HYPERNODE]
            tiers.update((h, tree.tier(h)) for h in paths[n.name])
        rows.append({
            "name": n.name, "gpu_model": inv.model or None, "gpu_count": inv.count, "gpu_memory": inv.memory or None,
            "gpus": gpus, "gpu_allocated": round(used / MILLI, 3), "gpu_free": round(inv.count - used / MILLI, 3),
            "gpu_free_whole": int(ledger.full[i]),
            "shared": any(g["memory_used"] > 0 or 0 < g["used"] < MILLI or g["holders"] > 1 for g in gpus),
            "cpu": {"allocatable": user_amount("cpu", alloc.milli_cpu), "used": user_amount("cpu", busy.milli_cpu)},
            "memory": {"allocatable": alloc.memory, "used": busy.memory},
            "pods": len(n.tasks), "unschedulable": bool(n.unschedulable),
            "hypernodes": paths.get(n.name, []),
        })
    frag: dict[str, Any] = {
        "gpu_capacity": round(ledger.capacity_milli / MILLI, 3),
        "gpu_allocated": round(ledger.allocated_milli / MILLI, 3),
        "gpu_idle": round(int(ledger.total_free.sum()) / MILLI, 3),
        "gpu_fragmentation": round(fragmentation(cache), 3),
        "topology_fragmentation": None, "fragmented_domains": None,
    }
    if topology:
        value, domains = TopologyFragmentation(cache).value()
        frag["topology_fragmentation"], frag["fragmented_domains"] = round(value, 3), domains
    groups = group_nodes([r["name"] for r in rows], paths, tiers) if topology else []
    out: dict[str, Any] = {"nodes": rows, "groups": groups, "fragmentation": frag}
    if reservations:
        out["reservations"] = reservations
    return out
