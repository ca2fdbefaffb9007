"""Topology figures of a simulation: where each job's pods ran in the HyperNode tree, and the
idle GPUs the topology strands. Computed only when the cluster has HyperNodes.

A **domain** is a HyperNode of the tree's lowest tier (tier 1: a rack of the Lingjun fabric).

**Job span** (:class:`SpanTracker`), from the nodes the job's pods were bound to during the run
(every pod, those of restarts included; binds made before the first HyperNode existed are not
seen):

* ``span_nodes``: distinct nodes;
* ``span_domains``: distinct domains among them (a node in no domain adds none);
* ``span_hypernode``: the lowest HyperNode holding all of them (the tree's lowest common
  ancestor; the virtual ``<cluster-top-hypernode>`` when no real HyperNode does);
* ``span_tier``: its tier (the virtual top's is one above the highest real tier).

A job whose pods never bound has 0, 0, None, None.

**Topology fragmentation** (:func:`topology_fragmentation`), at every metrics sample: the idle
GPUs of the domains whose idle GPUs no pending job can use, summed over those domains, and the
number of such domains. A domain's idle GPUs are Σ (allocatable − requested) ``nvidia.com/gpu``
over its nodes. A *pending job* is a job with pending pods that request GPUs, its *gang* those
pods; or a PodGroup not yet enqueued whose pods do not exist yet (a vcjob waits so), its gang
``minMember`` pods sharing the GPUs of ``minResources`` evenly. A pending job **can use** domain ``D`` when both hold:

1. one of its pods fits on a node of ``D`` (its GPU request ≤ that node's idle GPUs), and
2. its whole gang fits inside the HyperNode it may span from ``D``: with a ``hard``
   ``networkTopology`` of ``highestTierAllowed`` ``t`` (or a ``highestTierName`` naming tier
   ``t``), ``D``'s ancestor of the highest tier ≤ ``t`` (none if ``t`` is below ``D``'s tier);
   in ``soft`` mode or without a constraint, the whole cluster. "Fits" is first-fit decreasing
   of the pods' GPU requests onto the idle GPUs of that HyperNode's nodes.

Only GPUs are counted (CPU and memory are assumed not to bind, as in the shipped traces). With
no pending GPU job the value is 0: idle GPUs nobody waits for are not fragmented. For a workload
without constraints the figure is node-level stranding (nodes with too few idle GPUs for any
pending pod, or gangs larger than the cluster's idle GPUs); a hard tier-1 constraint adds the
racks whose idle GPUs are too few for every pending hard gang even though the cluster as a whole
has room: the cost a platform engineer pays for the constraint.

Invariants: both figures are functions of the cache's state at the sample (nodes, tasks,
PodGroups, HyperNode tree), not of history; a value is recomputed only when the node table,
the tree or the set of pending gangs changed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from pyvolcano.api.hypernode_tree import CLUSTER_TOP_HYPERNODE, HyperNodeTree
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import TaskStatus

if TYPE_CHECKING:
    from pyvolcano.api.job import JobInfo
    from pyvolcano.cache.cache import SchedulerCache

__all__ = ["Gang", "SpanTracker", "TopologyFragmentation", "has_topology", "pending_gangs", "topology_fragmentation"]

GPU = "nvidia.com/gpu"


def has_topology(tree: HyperNodeTree) -> bool:
    """The tree holds a real HyperNode (not only the virtual top)."""
    return len(tree) > 1


def domain_tier(tree: HyperNodeTree) -> int | None:
    """The lowest real tier, or None without HyperNodes."""
    tiers = tree.tiers()
    return tiers[0] if len(tiers) > 1 else None


# --------------------------------------------------------------------------------------- spans
@dataclass(slots=True)
class _Span:
    nodes: set[str] = field(default_factory=set)
    domains: set[str] = field(default_factory=set)
    lowest: str | None = None


class SpanTracker:
    """Per job, the nodes its pods were bound to and the HyperNodes they span (module docstring)."""

    def __init__(self, cache: SchedulerCache) -> None:
        self.cache = cache
        self._spans: dict[str, _Span] = {}

    def bound(self, job: str, node: str) -> None:
        """A pod of ``job`` is bound to ``node``."""
        span = self._spans.get(job)
        if span is None:
            span = self._spans[job] = _Span()
        if node in span.nodes:
            return
        span.nodes.add(node)
        tree = self.cache.hypernode_tree
        holders = tree.hypernodes_of(node)
        if not holders:
            return
        span.lowest = tree.lca(span.lowest, holders[0])
        tier = domain_tier(tree)
        if tier is not None:
            domain = next((h for h in holders if tree.tier(h) == tier), None)
            if domain is not None:
                span.domains.add(domain)

    def span(self, job: str) -> tuple[int, int, str | None, int | None]:
        """``(span_nodes, span_domains, span_hypernode, span_tier)`` of ``job``."""
        span = self._spans.get(job)
        if span is None:
            return 0, 0, None, None
        tree = self.cache.hypernode_tree
        tier = None
        if span.lowest is not None and span.lowest in tree:
            tier = tree.tier(span.lowest)
        return len(span.nodes), len(span.domains), span.lowest, tier


# --------------------------------------------------------------------------------- fragmentation
@dataclass(frozen=True, slots=True)
class Gang:
    """A pending job's GPU pods (milli-GPUs, largest first) and the highest tier it may span
    (None: the whole cluster)."""

    requests: tuple[int, ...]
    tier: int | None


def _allowed_tier(job: JobInfo, tree: HyperNodeTree) -> int | None:
    pg = job.podgroup
    nt = pg.network_topology if pg is not None else None
    if nt is None or nt.mode != "hard":
        return None
    if nt.highest_tier_allowed is not None:
        return int(nt.highest_tier_allowed)
    if nt.highest_tier_name:
        return tree.tier_names().get(nt.highest_tier_name)
    return None


def _unborn_gang(job: JobInfo) -> list[int]:
    """The gang of a PodGroup whose pods do not exist yet (not enqueued): ``minMember`` pods
    sharing ``minResources``' GPUs evenly."""
    pg = job.podgroup
    if pg is None or job.tasks or pg.phase not in ("", "Pending", "Inqueue") or pg.min_member <= 0:
        return []
    if not pg.min_resources or GPU not in pg.min_resources:
        return []
    total = Resource.from_list({GPU: pg.min_resources[GPU]}).scalars.get(GPU, 0.0)
    return [round(total / pg.min_member)] * pg.min_member


def pending_gangs(jobs: Iterable[JobInfo], tree: HyperNodeTree) -> frozenset[Gang]:
    """The distinct gangs of the pending jobs (module docstring)."""
    out: set[Gang] = set()
    for job in jobs:
        pending = job.tasks_in(TaskStatus.Pending)
        if pending:
            reqs = [round(t.resreq.scalars.get(GPU, 0.0)) for t in pending.values()]
        else:
            reqs = _unborn_gang(job)
        reqs = sorted((r for r in reqs if r > 0), reverse=True)
        if reqs:
            out.add(Gang(tuple(reqs), _allowed_tier(job, tree)))
    return frozenset(out)


def _fits(requests: tuple[int, ...], idle: np.ndarray) -> bool:
    """First-fit decreasing of ``requests`` (sorted, largest first) onto ``idle``."""
    if not len(idle):
        return False
    first = requests[0]
    if first == requests[-1]:  # one size: count the slots
        return int((idle // first).sum()) >= len(requests)
    if sum(requests) > int(idle.sum()):
        return False
    left = idle.copy()
    for r in requests:
        hits = np.flatnonzero(left >= r)
        if not len(hits):
            return False
        left[hits[0]] -= r
    return True


def topology_fragmentation(tree: HyperNodeTree, idle_milli: np.ndarray, gangs: Iterable[Gang]) -> tuple[float, int]:
    """``(GPUs, domains)``: the idle GPUs of the domains no gang can use, and how many domains.

    ``idle_milli`` holds each NodeTable row's idle milli-GPUs (rows as :meth:`HyperNodeTree.rows`)."""
    tier = domain_tier(tree)
    gangs = list(gangs)
    if tier is None or not gangs:
        return 0.0, 0
    idle = np.floor(np.maximum(idle_milli, 0.0)).astype(np.int64)
    fit_memo: dict[tuple[Gang, str], bool] = {}

    def fits_in(g: Gang, hn: str) -> bool:
        key = (g, hn)
        got = fit_memo.get(key)
        if got is None:
            got = fit_memo[key] = _fits(g.requests, idle[tree.rows(hn)])
        return got

    total = 0
    domains = 0
    for d in sorted(tree.hypernodes_at(tier)):
        free = idle[tree.rows(d)]
        free_sum = int(free.sum())
        if free_sum <= 0:
            continue
        best = int(free.max())
        chain = tree.ancestors(d)
        usable = False
        for g in gangs:
            if g.requests[-1] > best:
                continue
            if g.tier is None:
                scope: str | None = CLUSTER_TOP_HYPERNODE
            else:
                scope = next((h for h in reversed(chain) if tree.tier(h) <= g.tier), None)
            if scope is not None and fits_in(g, scope):
                usable = True
                break
        if not usable:
            total += free_sum
            domains += 1
    return total / 1000.0, domains


class TopologyFragmentation:
    """:func:`topology_fragmentation` of a scheduler cache, recomputed only after a change."""

    def __init__(self, cache: SchedulerCache):
        self.cache = cache
        self._last: tuple[int, int, frozenset[Gang], tuple[float, int]] | None = None

    def value(self) -> tuple[float, int]:
        cache = self.cache
        tree = cache.hypernode_tree
        table = cache.node_table
        d = table.dim_index.get(GPU)
        if d is None or not has_topology(tree):
            return 0.0, 0
        gangs = pending_gangs(cache.pg_jobs.values(), tree)
        last = self._last
        key = (table.change_position, tree.generation, gangs)
        if last is not None and last[:3] == key:
            return last[3]
        value = topology_fragmentation(tree, table.idle[d][:table.n], gangs)
        self._last = (*key, value)
        return value
