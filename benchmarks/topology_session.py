"""Benchmark: one scheduling session with network-topology constraints on a 10,000-node, 3-tier tree.

The cluster is ``_synthetic``'s (96 CPU, 768Gi, 8 GPUs per node) arranged in racks of 8 nodes
(tier 1), aggregation blocks of 10 racks (tier 2) and spines of 10 blocks (tier 3), each
HyperNode listing its members with ``exactMatch``. A part of the cluster is already busy
(every ``--busy``-th rack is full) so that the search meets HyperNodes that cannot take a gang.
The workload is ``--gangs`` gangs of whole-node GPU pods (8 GPUs each; 4, 8 or 16 pods) with
``minResources`` as the vcjob controller writes it, placed under four constraints in turn:
none (the replica-batch path), ``hard`` with ``highestTierAllowed`` 1 and 2, and ``soft``.
Upstream's default configuration plus ``network-topology-aware``.

Prints, per constraint: seconds of one session, pods placed, pods per second, CPU seconds,
and the tiers the placed gangs span. Not a test: it never fails on timing.

``--exhaustive`` adds, per constraint, the same session with the exhaustive HyperNode search
(``SchedulerOptions.bounded_hypernode_search=False``: every candidate dry-run, as upstream).

    python benchmarks/topology_session.py [--nodes N] [--gangs G] [--busy K] [--exhaustive]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from _synthetic import GPU

from pyvolcano.api.hypernode import HyperNode, HyperNodeMember, MemberSelector, SelectorKind
from pyvolcano.api.manifest import ClusterObjects
from pyvolcano.api.network_topology import NetworkTopology
from pyvolcano.api.objects import Container, Node, Pod, PodGroup, Queue
from pyvolcano.cache.cache import SchedulerCache, SchedulerOptions
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.conf.defaults import DEFAULT_SCHEDULER_CONF
from pyvolcano.runtime.cycle import run_once
from pyvolcano.runtime.registry import default_registry

CONF = DEFAULT_SCHEDULER_CONF + "  - name: network-topology-aware\n"
RACK, BLOCK, SPINE = 8, 10, 10
ALLOC = {"cpu": "96", "memory": "768Gi", GPU: "8", "pods": "110"}
POD = {"cpu": "64", "memory": "512Gi", GPU: "8"}


def _exact(kind: str, name: str) -> HyperNodeMember:
    return HyperNodeMember(kind, MemberSelector(SelectorKind.EXACT, name=name))


def cluster(n_nodes: int, n_gangs: int, busy: int, mode: str | None, tier: int | None) -> ClusterObjects:
    objs = ClusterObjects()
    objs.queues.append(Queue(name="q0", weight=1))
    names = [f"r{i // RACK:04d}-n{i % RACK}" for i in range(n_nodes)]
    for name in names:
        objs.nodes.append(Node(name=name, capacity=dict(ALLOC), allocatable=dict(ALLOC)))
    racks = -(-n_nodes // RACK)
    for r in range(racks):
        members = [_exact("Node", n) for n in names[r * RACK:(r + 1) * RACK]]
        objs.hypernodes.append(HyperNode(name=f"rack{r:04d}", tier=1, members=members))
    blocks = -(-racks // BLOCK)
    for b in range(blocks):
        objs.hypernodes.append(HyperNode(name=f"block{b:03d}", tier=2, members=[
            _exact("HyperNode", f"rack{r:04d}") for r in range(b * BLOCK, min((b + 1) * BLOCK, racks))]))
    for s in range(-(-blocks // SPINE)):
        objs.hypernodes.append(HyperNode(name=f"spine{s:02d}", tier=3, members=[
            _exact("HyperNode", f"block{b:03d}") for b in range(s * SPINE, min((s + 1) * SPINE, blocks))]))
    # Busy racks: one running whole-node pod per node of every busy-th rack.
    objs.podgroups.append(PodGroup(namespace="bench", name="busy", uid="bench/busy", min_member=1, queue="q0",
                                   phase="Running"))
    for r in range(0, racks, busy):
        for name in names[r * RACK:(r + 1) * RACK]:
            objs.pods.append(Pod(namespace="bench", name=f"busy-{name}", uid=f"busy-{name}", node_name=name,
                                 phase="Running", annotations={"scheduling.k8s.io/group-name": "busy"},
                                 scheduler_name="volcano", containers=[Container(name="main", requests=dict(POD))]))
    sizes = (4, 8, 16)
    for j in range(n_gangs):
        size = sizes[j % len(sizes)]
        name = f"gang-{j:04d}"
        nt = NetworkTopology(mode=mode, highest_tier_allowed=tier) if mode else None
        min_res = {"cpu": str(64 * size), "memory": f"{512 * size}Gi", GPU: str(8 * size)}
        objs.podgroups.append(PodGroup(namespace="bench", name=name, uid=f"bench/{name}", min_member=size,
                                       queue="q0", phase="Inqueue", creation_timestamp=float(j),
                                       min_resources=min_res, network_topology=nt))
        for k in range(size):
            pname = f"{name}-{k}"
            objs.pods.append(Pod(namespace="bench", name=pname, uid=f"bench-{pname}",
                                 labels={"volcano.sh/task-spec": "worker"},
                                 annotations={"scheduling.k8s.io/group-name": name}, scheduler_name="volcano",
                                 containers=[Container(name="main", requests=dict(POD))],
                                 creation_timestamp=float(j)))
    return objs


def spans(cache: SchedulerCache, binds: dict[str, str]) -> collections.Counter[int]:
    tree = cache.hypernode_tree
    by_gang: dict[str, list[str]] = collections.defaultdict(list)
    for pod, node in binds.items():
        by_gang[pod.rsplit("-", 1)[0]].append(node)
    out: collections.Counter[int] = collections.Counter()
    for nodes in by_gang.values():
        lca = tree.lca_of_nodes(nodes)
        out[tree.tier(lca) if lca else -1] += 1
    return out


def run(n_nodes: int, n_gangs: int, busy: int, mode: str | None, tier: int | None, *, exhaustive: bool = False) -> None:
    objs = cluster(n_nodes, n_gangs, busy, mode, tier)
    cache = SchedulerCache.from_objects(objs, SchedulerOptions(bounded_hypernode_search=not exhaustive))
    registry = default_registry()
    config = load_scheduler_conf(CONF)
    plugins = registry.plugin_factories(config.plugin_names())
    actions = registry.action_factories(config.actions)
    t0, c0 = time.perf_counter(), time.process_time()
    res = run_once(cache, config, plugins, actions, now=0.0, rng=np.random.default_rng(0))
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    binds = {b.name: b.node for b in res.bind_requests}
    label = "none" if mode is None else f"{mode}" + (f" tier<={tier}" if mode == "hard" else "")
    if exhaustive and mode is not None:
        label += " (exhaustive)"
    span = ", ".join(f"tier {t}: {c}" for t, c in sorted(spans(cache, binds).items()))
    print(f"{label:<14} session {secs:7.2f}s  placed {len(binds):>6}  {len(binds) / secs if secs else 0:>7.0f} pods/s  "
          f"cpu {cpu:7.2f}s  gangs spanning {span}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--gangs", type=int, default=600)
    ap.add_argument("--busy", type=int, default=3, help="every K-th rack starts full")
    ap.add_argument("--exhaustive", action="store_true",
                    help="also run each constraint with the exhaustive HyperNode search (every candidate dry-run)")
    a = ap.parse_args()
    print(f"{a.nodes} nodes in racks of {RACK}, blocks of {BLOCK} racks, spines of {SPINE} blocks; "
          f"{a.gangs} whole-node GPU gangs of 4/8/16 pods", flush=True)
    for mode, tier in ((None, None), ("hard", 1), ("hard", 2), ("soft", None)):
        run(a.nodes, a.gangs, a.busy, mode, tier)
        if a.exhaustive and mode is not None:
            run(a.nodes, a.gangs, a.busy, mode, tier, exhaustive=True)


if __name__ == "__main__":
    main()
