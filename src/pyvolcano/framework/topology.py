"""The session's view of the network topology (upstream framework/session.go, HyperNode parts).

At session open (:meth:`SessionTopology.open`), as upstream's ``OpenSession``:

1. the HyperNode tree of the cache is taken as it is, with its virtual root
   ``<cluster-top-hypernode>`` (tier = highest real tier + 1) already in place; ``tiers`` are
   every tier with a HyperNode, ascending, the root's last;
2. every job with a topology gets its effective constraint (``adjustNetworkTopologySpec``): a
   ``highestTierName`` is resolved through the HyperNodes' ``tierName`` (an unknown name leaves
   the constraint without a tier, so the job is not hard-mode); a ``soft`` job becomes hard with
   the root's tier; a ``soft`` sub-job becomes hard with the job's effective tier (the root's
   when the job has none);
3. when the topology is ready, allocated HyperNodes that no longer exist or hold no allocated
   task are dropped, and missing ones are recovered from where the tasks run: per sub-job with
   a topology, the lowest-tier HyperNode holding the nodes of all its allocated tasks; per job,
   the lowest common ancestor of its sub-jobs'.

The constraint as written stays on the PodGroup; the effective one lives in
``JobTopology.hard_tier`` / ``SubJobInfo.hard_tier`` and is recomputed every session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from pyvolcano.api.hypernode_tree import CLUSTER_TOP_HYPERNODE, HyperNodeTree
from pyvolcano.api.network_topology import NetworkTopology
from pyvolcano.api.sub_job import JobTopology, SubJobInfo
from pyvolcano.api.task import ALLOCATED_STATUS

if TYPE_CHECKING:
    from pyvolcano.api.job import JobInfo

__all__ = ["CLUSTER_TOP_HYPERNODE", "PURPOSE_ALLOCATE", "PURPOSE_EVICT", "SessionTopology"]

PURPOSE_ALLOCATE = "allocate"
PURPOSE_EVICT = "evict"


def _tier_of(nt: NetworkTopology | None, names: dict[str, int]) -> int | None:
    if nt is None:
        return None
    if nt.highest_tier_allowed is not None:
        return nt.highest_tier_allowed
    if nt.highest_tier_name:
        return names.get(nt.highest_tier_name)
    return None


class SessionTopology:
    """HyperNode queries for one session; every name is a HyperNode of :attr:`tree`."""

    def __init__(self, tree: HyperNodeTree):
        self.tree = tree
        self.tiers: tuple[int, ...] = tree.tiers()
        self.ready = tree.ready
        self.min_tier = self.tiers[0] if self.tiers else 1
        self.max_tier = self.tiers[-1] if self.tiers else 1
        self.top_tier = tree.tier(CLUSTER_TOP_HYPERNODE)
        # The current allocated HyperNode of each task allocate is placing (upstream
        # ``TaskInfo.JobAllocatedHyperNode``), read by network-topology-aware's node order.
        self.task_hypernode: dict[str, str] = {}

    # ------------------------------------------------------------------ open
    def open(self, jobs: list[JobInfo]) -> None:
        names = self.tree.tier_names()
        for job in jobs:
            topo = job.topology
            if topo is None:
                continue
            self._adjust(topo, names)
            if self.ready:
                self._drop_invalid(topo)
                self._recover(topo)

    def _adjust(self, topo: JobTopology, names: dict[str, int]) -> None:
        nt = topo.network_topology
        topo.hard_tier = None
        if nt is not None:
            topo.hard_tier = self.top_tier if nt.mode == "soft" else _tier_of(nt, names)
        sub_max = topo.hard_tier if topo.hard_tier is not None else self.top_tier
        for sj in topo.sub_jobs.values():
            snt = sj.network_topology
            if snt is None:
                sj.hard_tier = None
            elif snt.mode == "soft":
                sj.hard_tier = sub_max
            else:
                sj.hard_tier = _tier_of(snt, names)

    def _drop_invalid(self, topo: JobTopology) -> None:
        if topo.allocated_hypernode and (topo.allocated_hypernode not in self.tree
                                         or not any(sj.allocated_task_num() for sj in topo.sub_jobs.values())):
            topo.allocated_hypernode = ""
        for sj in topo.sub_jobs.values():
            if sj.allocated_hypernode and (sj.allocated_hypernode not in self.tree or not sj.allocated_task_num()):
                sj.allocated_hypernode = ""

    def _recover(self, topo: JobTopology) -> None:
        updated = False
        for sj in topo.sub_jobs.values():
            if not sj.with_network_topology or sj.allocated_hypernode:
                continue
            found: set[str] | None = None
            for t in sj.tasks.values():
                if not (t.status & ALLOCATED_STATUS) or not t.node_name:
                    continue
                holding = set(self.tree.hypernodes_of(t.node_name))
                found = holding if found is None else found & holding
                if not found:
                    break
            lowest = min(found, key=lambda h: (self.tree.tier(h), h)) if found else ""
            if lowest != sj.allocated_hypernode:
                sj.allocated_hypernode = lowest
                updated = True
        if not topo.allocated_hypernode or updated:
            lca = ""
            for sj in topo.sub_jobs.values():
                if not sj.allocated_hypernode:
                    continue
                lca = self.lca(lca, sj.allocated_hypernode)
                if not lca:
                    break
            topo.allocated_hypernode = lca

    # ------------------------------------------------------------------ queries
    def lca(self, a: str, b: str) -> str:
        """Upstream ``GetLCAHyperNode``: "" stands for "none yet" and gives the other."""
        if not a:
            return b
        if not b:
            return a
        if a not in self.tree or b not in self.tree:
            return ""
        return self.tree.lca(a, b) or ""

    def rows(self, hypernode: str) -> np.ndarray:
        return self.tree.rows(hypernode) if hypernode in self.tree else np.zeros(0, dtype=np.int64)

    def tier(self, hypernode: str) -> int:
        return self.tree.tier(hypernode)

    def lowest_hypernode_of(self, node: str) -> str:
        """Upstream ``FindHyperNodeForNode``: the HyperNode of the lowest tier holding ``node``, or ""."""
        return self.tree.ancestor(node, self.min_tier) or ""

    def ancestors(self, hypernode: str) -> tuple[str, ...]:
        return self.tree.ancestors(hypernode)

    def children(self, hypernode: str) -> frozenset[str]:
        return self.tree.children(hypernode)

    def highest_allowed(self, allocated: str, tier: int) -> str:
        """The highest ancestor of ``allocated`` (itself included) whose tier is ≤ ``tier``, or ""."""
        best = ""
        for a in self.tree.ancestors(allocated):
            if self.tree.tier(a) > tier:
                break
            best = a
        return best


def sub_job_needs_search(job: JobInfo) -> bool:
    """Upstream ``ContainsHardTopology() || ContainsSubJobPolicy()``: allocate's HyperNode path."""
    topo = job.topology
    return topo is not None and (topo.has_policies or topo.contains_hard_topology())


def task_sub_job(job: JobInfo, uid: str) -> SubJobInfo | None:
    topo = job.topology
    if topo is None:
        return None
    sid = topo.task_to_sub_job.get(uid)
    return topo.sub_jobs.get(sid) if sid is not None else None
