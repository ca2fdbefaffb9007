"""network-topology-aware plugin (upstream pkg/scheduler/plugins/network-topology-aware/network_topology_aware.go).

Registers, for jobs and sub-jobs with a network topology:

* **HyperNodeGradient** (job and sub-job): for a hard constraint of tier ``T``, the HyperNodes
  to try, grouped by tier, lowest first. The search starts at the given HyperNode, narrowed to
  the highest ancestor (tier ≤ ``T``) of the already allocated HyperNode if there is one (no
  candidate when the two do not nest); a breadth-first walk keeps HyperNodes of tier ≤ ``T``
  that pass the resource pre-filter (skipped once something is allocated): for allocation the
  minimum resources (the PodGroup's ``minResources`` for a job, the pending requests for a
  sub-job) must fit the HyperNode's idle or future-idle sum; for eviction its allocatable sum,
  and the tiers are then reversed (widest first) and capped at
  ``hypernode.gradient.evict.max-hypernodes`` HyperNodes. Without a hard constraint:
  ``[[given]]``.
* **HyperNodeOrder** (a sub-job's candidates): bin-packing score
  ``Σ_r w_r (used_r + request_r) / allocatable_r / Σ w_r`` over the weighted resources the
  sub-job's tasks (all of them) request, 0 if any would overflow; when several candidates share
  the top score each gets + the fraction of the sub-job's tasks already on its nodes; × 100 ×
  ``weight``.
* **BatchNodeOrder**: a task of a sub-job with a topology scores a node by the tier of the
  lowest common ancestor of the node's lowest-tier HyperNode and the task's current allocated
  HyperNode (set by allocate before scoring): 1 when equal, else
  ``(maxTier − tier) / (maxTier − minTier)``, 0 without one; ties at the top get + the fraction
  of the sub-job's tasks in that HyperNode. Other tasks (``hypernode.binpack.normal-pod.enable``)
  score the weighted mean over the tiers ``minTier..maxTier`` (weight ``fading^(tier−1)``) of the
  bin-packing score of the HyperNode of that tier holding the node (1 where none does).
  × 100 × ``weight``.

The per-HyperNode sums (allocatable, used, idle, future idle) are taken once at session open as
``[HyperNode, dimension]`` matrices (one ``bincount`` per tier and column); allocate and
deallocate events move ``used`` of every HyperNode holding the task's node. As upstream, idle
and future idle are not updated during the session.

**Fragmentation-aware placement** (``hypernode.fragmentation-aware.enable``, off by default;
beyond upstream): a best-node chooser (upstream's BestNodeFn extension point) for the tasks of a
sub-job with a network topology. Among the nodes sharing the top score (where upstream picks at
random) it prefers, by the lowest-tier HyperNode (the rack) holding the node, with ``f`` the
copies of the task the rack's idle resources hold and ``r`` the sub-job's pending tasks:

1. the smallest ``max(f − r, 0)``: a rack the sub-job will fill leaves no remnant, otherwise the
   tightest fit (FGD's idea at rack level: the free capacity left stays in whole racks);
2. a rack already in use over a rack entirely free, so that whole racks stay whole for the
   rack-bound jobs that need them;
3. the smaller ``f``: the fullest rack first (bin packing at rack level: the remnants are used
   up and the larger free blocks stay; the sub-job may span more racks than at random).

Equal keys are broken at random as before; nodes in no rack rank as a rack the sub-job fills.
The same option orders candidate HyperNodes of equal HyperNodeOrder score
(:meth:`NetworkTopologyAware.hypernode_tie_keys`, through ``Session.add_hypernode_tie_break_fn``):
among racks the tightest fit, among wider HyperNodes the one whose racks in use hold the most of
the job.
Scores are not changed, so every decision that was not a tie stays as upstream makes it.

Arguments (upstream keys and defaults): ``weight`` (1), ``hypernode.binpack.cpu`` (1),
``hypernode.binpack.memory`` (1), ``hypernode.binpack.resources`` (comma-separated extra names),
``hypernode.binpack.resources.<name>`` (1), ``hypernode.binpack.normal-pod.enable`` (true),
``hypernode.binpack.normal-pod.fading`` (0.8), ``hypernode.gradient.evict.max-hypernodes`` (8).
Negative weights, fading or a non-positive maximum fall back to the default, as upstream.
``hypernode.fragmentation-aware.enable`` (false) is pyvolcano's own.

Differences: candidates of a tier are returned sorted by name (upstream: map order, which only
shows in random tie-breaks). When the cluster has no HyperNode, the normal-pod score is the same
for every node and cannot change a decision, so it is not computed and such tasks keep the
cached, batched placement path.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from pyvolcano.api.hypernode_tree import CLUSTER_TOP_HYPERNODE
from pyvolcano.api.resource import CPU, MEMORY, MIN_RESOURCE, Resource
from pyvolcano.api.sub_job import SubJobInfo
from pyvolcano.api.task import TaskInfo, TaskStatus
from pyvolcano.framework.argument_keys import ArgumentKeys, honoured
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.interfaces import Event, EventHandler
from pyvolcano.framework.topology import PURPOSE_EVICT
from pyvolcano.plugins._scoring import MAX_NODE_SCORE

if TYPE_CHECKING:
    from pyvolcano.api.job import JobInfo
    from pyvolcano.framework.session import Session

__all__ = ["ARGUMENTS", "FRAGMENTATION_AWARE", "NAME", "NetworkTopologyAware", "new"]

NAME: Final = "network-topology-aware"
_WEIGHT: Final = "weight"
_CPU: Final = "hypernode.binpack.cpu"
_MEMORY: Final = "hypernode.binpack.memory"
_RESOURCES: Final = "hypernode.binpack.resources"
_NORMAL_POD_ENABLE: Final = "hypernode.binpack.normal-pod.enable"
_NORMAL_POD_FADING: Final = "hypernode.binpack.normal-pod.fading"
_EVICT_MAX_HYPERNODES: Final = "hypernode.gradient.evict.max-hypernodes"
FRAGMENTATION_AWARE: Final = "hypernode.fragmentation-aware.enable"
ARGUMENTS: Final = ArgumentKeys(f"plugin {NAME}", (
    honoured(_WEIGHT), honoured(_CPU), honoured(_MEMORY), honoured(_RESOURCES),
    honoured(f"{_RESOURCES}.", prefix=True), honoured(_NORMAL_POD_ENABLE), honoured(_NORMAL_POD_FADING),
    honoured(_EVICT_MAX_HYPERNODES),
    honoured(FRAGMENTATION_AWARE, note="pyvolcano's own: among equal-score nodes, keep racks whole (off by default)"),
))
_ZERO_KEY: Final = ("network-topology-aware", "none")


class NetworkTopologyAware:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        args = Arguments(arguments, keys=ARGUMENTS)

        def weight(key: str) -> int:
            w = args.get_int(key, 1)
            return 1 if w < 0 else w

        self.weight = weight(_WEIGHT)
        self.binpack: dict[str, int] = {CPU: weight(_CPU), MEMORY: weight(_MEMORY)}
        for name in args.get_str(_RESOURCES, "").split(","):
            name = name.strip()
            if name and name not in (CPU, MEMORY):
                self.binpack[name] = weight(f"{_RESOURCES}.{name}")
        self.normal_pod_enable = args.get_bool(_NORMAL_POD_ENABLE, True)
        fading = args.get_float(_NORMAL_POD_FADING, 0.8)
        self.fading = 0.8 if fading < 0 else fading
        max_evict = args.get_int(_EVICT_MAX_HYPERNODES, 8)
        self.max_evict = 8 if max_evict <= 0 else max_evict
        self.fragmentation_aware = args.get_bool(FRAGMENTATION_AWARE, False)
        self.ssn: Session | None = None

    # ------------------------------------------------------------------ session
    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        topo = ssn.topology
        tree = topo.tree
        table = ssn.node_table
        n = table.n
        self.dims = {name: d for d, name in enumerate(table.dims)}
        ndim = len(table.dims)
        self.names: list[str] = [CLUSTER_TOP_HYPERNODE]
        # Per real tier: the HyperNode index (into self.names) of each node row, -1 for none.
        self.tier_rows: dict[int, np.ndarray] = {}
        for tier in topo.tiers:
            members = sorted(tree.hypernodes_at(tier))
            if not members:
                continue
            lab = np.full(n, -1, dtype=np.int64)
            for name in members:
                lab[tree.rows(name)] = len(self.names)
                self.names.append(name)
            self.tier_rows[tier] = lab
        self.index = {name: i for i, name in enumerate(self.names)}
        h = len(self.names)
        self.alloc = np.zeros((h, ndim))
        self.used = np.zeros((h, ndim))
        self.idle = np.zeros((h, ndim))
        self.future = np.zeros((h, ndim))
        for mat, cols in ((self.alloc, table.allocatable), (self.used, table.used),
                          (self.idle, table.idle), (self.future, table.future)):
            for d in range(ndim):
                col = cols[d][:n]
                mat[0, d] = col.sum()
                for lab in self.tier_rows.values():
                    ok = lab >= 0
                    mat[:, d] += np.bincount(lab[ok], weights=col[ok], minlength=h)
        self.has_hypernodes = h > 1
        self._holding_cache: dict[str, np.ndarray] = {}
        self._subtrees: dict[str, tuple[list[str], np.ndarray, np.ndarray]] = {}
        self._vectors: dict[str, np.ndarray] = {}
        ssn.add_hypernode_order_fn(NAME, self.hypernode_order, bounds=self)
        ssn.add_hypernode_gradient_for_job_fn(NAME, self.gradient_for_job)
        ssn.add_hypernode_gradient_for_sub_job_fn(NAME, self.gradient_for_sub_job)
        ssn.add_node_order_fn(NAME, self.batch_node_order, cache_key=self._cache_key,
                              projectable=lambda t: self._cache_key(t) is not None)
        ssn.add_event_handler(EventHandler(allocate=self._on_allocate, deallocate=self._on_deallocate))
        if self.fragmentation_aware and topo.min_tier in self.tier_rows:
            ssn.add_best_node_fn(NAME, self.best_node)
            ssn.add_hypernode_tie_break_fn(NAME, self.hypernode_tie_keys)

    def on_session_close(self, ssn: Session) -> None:
        self.ssn = None

    # ------------------------------------------------------------------ events
    def _holding(self, node: str) -> np.ndarray | None:
        """Indices of the HyperNodes holding ``node`` (the root included), cached per node."""
        if self.ssn is None:
            # Session close discards the statements left open (pipelined gangs) after the
            # plugins closed: the sums are no longer read.
            return None
        got = self._holding_cache.get(node)
        if got is None:
            info = self.ssn.nodes.get(node)
            if info is None:
                return None
            row = info.index
            out = [0]
            for lab in self.tier_rows.values():
                if row < len(lab) and lab[row] >= 0:
                    out.append(int(lab[row]))
            got = self._holding_cache[node] = np.array(out, dtype=np.int64)
        return got

    def _move_used(self, task: TaskInfo, sign: float) -> None:
        hs = self._holding(task.node_name)
        if hs is None:
            return
        vec = self._vectors.get(task.uid)
        if vec is None:
            vec = np.zeros(len(self.dims))
            for name, value in _resource_items(task.resreq):
                d = self.dims.get(name)
                if d is not None:
                    vec[d] = value
            self._vectors[task.uid] = vec
        if sign > 0:
            self.used[hs] += vec
        else:
            self.used[hs] -= vec

    def _on_allocate(self, event: Event) -> None:
        self._move_used(event.task, 1.0)

    def _on_deallocate(self, event: Event) -> None:
        self._move_used(event.task, -1.0)

    # ------------------------------------------------------------------ gradients
    def gradient_for_job(self, job: JobInfo, hypernode: str, purpose: str) -> list[list[str]]:
        topo = job.topology
        if topo is None or topo.hard_tier is None:
            return [[hypernode]]
        return self._gradient(hypernode, topo.hard_tier, topo.allocated_hypernode, job.min_resources(), purpose)

    def gradient_for_sub_job(self, sub_job: SubJobInfo, hypernode: str, purpose: str) -> list[list[str]]:
        if sub_job.hard_tier is None:
            return [[hypernode]]
        return self._gradient(hypernode, sub_job.hard_tier, sub_job.allocated_hypernode, sub_job.min_resources(),
                              purpose)

    def _gradient(self, given: str, tier: int, allocated: str, minimum: Resource, purpose: str) -> list[list[str]]:
        root = self._search_root(given, tier, allocated)
        if root is None:
            return []
        names, tiers, index = self._subtree(root)
        keep = tiers <= tier
        if not allocated:
            fits = self._fitting(minimum, purpose)
            keep &= (index < 0) | fits[np.maximum(index, 0)]
        by_tier: dict[int, list[str]] = {}
        for k in np.flatnonzero(keep):
            by_tier.setdefault(int(tiers[k]), []).append(names[k])
        result = [sorted(by_tier[t]) for t in sorted(by_tier)]
        if purpose != PURPOSE_EVICT:
            return result
        return self._reverse_and_cap(result)

    def _subtree(self, root: str) -> tuple[list[str], np.ndarray, np.ndarray]:
        """``root`` and its descendants in breadth-first order (children by name), with their tiers
        and HyperNode indices (-1 for a name without one); cached for the session."""
        got = self._subtrees.get(root)
        if got is None:
            assert self.ssn is not None
            topo = self.ssn.topology
            order = [root]
            pos = 0
            while pos < len(order):
                order.extend(sorted(topo.children(order[pos])))
                pos += 1
            got = (order, np.array([topo.tier(h) for h in order], dtype=np.int64),
                   np.array([self.index.get(h, -1) for h in order], dtype=np.int64))
            self._subtrees[root] = got
        return got

    def _search_root(self, given: str, tier: int, allocated: str) -> str | None:
        assert self.ssn is not None
        topo = self.ssn.topology
        if not allocated:
            return given
        if allocated not in topo.tree:
            return None
        highest = topo.highest_allowed(allocated, tier)
        if not highest:
            return None
        lca = topo.lca(given, highest)
        if lca == highest:
            return given
        if lca == given:
            return highest
        return None

    def _fitting(self, minimum: Resource, purpose: str) -> np.ndarray:
        """Per HyperNode index, whether ``minimum`` fits its allocatable (eviction) or its idle
        or future-idle sums (allocation): the gradient's resource pre-filter."""
        need = np.zeros(len(self.dims))
        for name, value in _resource_items(minimum, keep_zero=True):
            d = self.dims.get(name)
            if d is None:
                if value > MIN_RESOURCE:
                    return np.zeros(len(self.names), dtype=bool)
                continue
            need[d] = value
        if purpose == PURPOSE_EVICT:
            return np.asarray((need <= self.alloc + MIN_RESOURCE).all(axis=1))
        return np.asarray((need <= self.idle + MIN_RESOURCE).all(axis=1)
                          | (need <= self.future + MIN_RESOURCE).all(axis=1))

    def _reverse_and_cap(self, gradients: list[list[str]]) -> list[list[str]]:
        remaining = self.max_evict
        out: list[list[str]] = []
        for gradient in reversed(gradients):
            if remaining == 0:
                break
            if len(gradient) <= remaining:
                out.append(gradient)
                remaining -= len(gradient)
            else:
                out.append(gradient[len(gradient) - remaining:])
                remaining = 0
        return out

    # ------------------------------------------------------------------ HyperNode order
    def _binpack_score(self, hn: str, request: dict[str, float]) -> float:
        i = self.index.get(hn)
        total = 0.0
        weights = 0
        for name, req in request.items():
            w = self.binpack.get(name)
            if w is None or i is None:
                continue
            d = self.dims.get(name)
            alloc = float(self.alloc[i, d]) if d is not None else 0.0
            used = float(self.used[i, d]) if d is not None else 0.0
            if used + req > alloc:
                return 0.0
            total += w * (used + req) / alloc
            weights += w
        return total / weights if weights > 0 else 0.0

    def _sub_job_request(self, sub_job: SubJobInfo) -> dict[str, float]:
        request: dict[str, float] = {}
        for t in sub_job.tasks.values():
            for name, value in _resource_items(t.resreq):
                if name in self.binpack:
                    request[name] = request.get(name, 0.0) + value
        return request

    def base_scores(self, sub_job: SubJobInfo, candidates: list[str]) -> dict[str, float]:
        """:meth:`hypernode_order` without the tie bonus, scaled: for each candidate the score it
        gets when no other candidate shares its score, and a lower bound otherwise (the bonus
        adds at most ``100 × weight``)."""
        request = self._sub_job_request(sub_job)
        idx = np.array([self.index.get(h, -1) for h in candidates], dtype=np.int64)
        known = idx >= 0
        rows = np.maximum(idx, 0)
        total = np.zeros(len(candidates))
        weights = 0
        over = np.zeros(len(candidates), dtype=bool)
        for name, req in request.items():
            w = self.binpack.get(name)
            if w is None:
                continue
            d = self.dims.get(name)
            alloc = self.alloc[rows, d] if d is not None else np.zeros(len(candidates))
            used = self.used[rows, d] if d is not None else np.zeros(len(candidates))
            over |= used + req > alloc
            with np.errstate(divide="ignore", invalid="ignore"):
                total += w * np.where(alloc > 0, (used + req) / np.where(alloc > 0, alloc, 1.0), 0.0)
            weights += w
        score = total / weights if weights > 0 else np.zeros(len(candidates))
        score = np.where(over | ~known, 0.0, score)
        scale = MAX_NODE_SCORE * self.weight
        return {h: scale * float(v) for h, v in zip(candidates, score, strict=True)}

    def tie_bonus(self, sub_job: SubJobInfo, hn: str) -> float:
        """The unscaled bonus ``hn`` gets when it shares the top score (see :meth:`hypernode_order`)."""
        return self._task_fraction(hn, sub_job)

    @property
    def tie_bonus_bound(self) -> float:
        return float(MAX_NODE_SCORE * self.weight)

    def hypernode_order(self, sub_job: SubJobInfo, candidates: list[str]) -> dict[str, float]:
        request = self._sub_job_request(sub_job)
        scores = {hn: self._binpack_score(hn, request) for hn in candidates}
        if scores:
            top = max(scores.values())
            best = [hn for hn, s in scores.items() if s == top]
            if len(best) > 1:
                for hn in best:
                    scores[hn] += self._task_fraction(hn, sub_job)
        return {hn: MAX_NODE_SCORE * self.weight * s for hn, s in scores.items()}

    def _task_fraction(self, hn: str, sub_job: SubJobInfo) -> float:
        if not sub_job.tasks:
            return 0.0
        assert self.ssn is not None
        nodes = self.ssn.topology.tree.nodes(hn) if hn in self.ssn.topology.tree else frozenset()
        inside = sum(1 for t in sub_job.tasks.values() if t.node_name in nodes)
        return inside / len(sub_job.tasks)

    # ------------------------------------------------------------------ node order
    def _sub_job(self, task: TaskInfo) -> SubJobInfo | None:
        assert self.ssn is not None
        job = self.ssn.jobs.get(task.job)
        if job is None or job.topology is None:
            return None
        sid = job.topology.task_to_sub_job.get(task.uid)
        return job.topology.sub_jobs.get(sid) if sid is not None else None

    def _cache_key(self, task: TaskInfo) -> tuple[str, str] | None:
        """Non-None when this plugin scores ``task`` 0 everywhere (a node-local verdict)."""
        sj = self._sub_job(task)
        if sj is not None and sj.with_network_topology:
            return None
        if self.normal_pod_enable and self.has_hypernodes:
            return None
        return _ZERO_KEY

    def batch_node_order(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        assert self.ssn is not None
        sj = self._sub_job(task)
        if sj is not None and sj.with_network_topology:
            scores = self._network_aware_scores(task, sj, idx)
        elif self.normal_pod_enable and self.has_hypernodes:
            scores = self._normal_pod_scores(task, idx)
        else:
            return np.zeros(len(idx))
        return MAX_NODE_SCORE * self.weight * scores

    def _tier_score(self, tier: int) -> float:
        topo = self.ssn.topology  # type: ignore[union-attr]
        if topo.min_tier == topo.max_tier:
            return 1.0
        if topo.min_tier <= tier <= topo.max_tier:
            return (topo.max_tier - tier) / (topo.max_tier - topo.min_tier)
        return 0.0

    def _network_aware_scores(self, task: TaskInfo, sj: SubJobInfo, idx: np.ndarray) -> np.ndarray:
        assert self.ssn is not None
        topo = self.ssn.topology
        allocated = topo.task_hypernode.get(task.uid, "")
        scores = np.zeros(len(idx))
        if not allocated:
            return scores
        lab = self.tier_rows.get(topo.min_tier)
        if lab is None:
            # Only the virtual root: every node's lowest-tier HyperNode is the root.
            own = np.zeros(len(idx), dtype=np.int64)
        else:
            own = lab[idx]
        uniq, inv = np.unique(own, return_inverse=True)
        per = np.zeros(len(uniq))
        for k, h in enumerate(uniq):
            hi = int(h)
            if hi < 0:
                continue
            name = self.names[hi]
            if name == allocated:
                per[k] = 1.0
                continue
            lca = topo.lca(name, allocated)
            per[k] = self._tier_score(topo.tier(lca)) if lca else 0.0
        scores = per[inv]
        if len(scores):
            top = scores.max()
            best = np.flatnonzero(scores == top)
            if len(best) > 1:
                frac: dict[int, float] = {}
                for b in best:
                    hi = int(own[b])
                    if hi not in frac:
                        frac[hi] = self._task_fraction(self.names[hi], sj) if hi >= 0 else 0.0
                    scores[b] += frac[hi]
        return scores

    # ------------------------------------------------------------------ best node
    def best_node(self, task: TaskInfo, idx: np.ndarray, scores: np.ndarray) -> int | None:
        """The fragmentation-aware choice among the nodes sharing the top score (module doc);
        None for a task without a network topology or when no rack tells the ties apart."""
        sj = self._sub_job(task)
        if sj is None or not sj.with_network_topology or len(idx) < 2:
            return None
        ties = idx[scores == scores.max()]
        if len(ties) < 2:
            return None
        state = self._rack_state(task)
        if state is None:
            return None
        _free, racks, rack_free, rack_whole = state
        remaining = sum(1 for t in sj.tasks.values() if t.status == TaskStatus.Pending)
        own = racks[ties]
        in_rack = own >= 0
        f = np.where(in_rack, rack_free[np.maximum(own, 0)], 0.0)
        leftover = np.where(in_rack, np.maximum(f - remaining, 0.0), 0.0)
        untouched = in_rack & (f >= rack_whole[np.maximum(own, 0)])
        order = np.lexsort((f, untouched, leftover))
        first = order[0]
        best = order[(leftover[order] == leftover[first]) & (untouched[order] == untouched[first])
                     & (f[order] == f[first])]
        if len(best) == len(ties):
            return None  # the racks do not tell the ties apart: upstream's random pick
        assert self.ssn is not None
        pick = best[0] if len(best) == 1 else best[int(self.ssn.rng.integers(len(best)))]
        return int(ties[pick])

    def _rack_state(self, task: TaskInfo) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """Per node, the copies of ``task`` its idle resources hold and its rack (the index of its
        lowest-tier HyperNode, -1 for none); per HyperNode index, the copies its nodes hold idle
        and empty. None for a task that requests nothing."""
        assert self.ssn is not None
        table = self.ssn.node_table
        n = table.n
        free = np.full(n, np.inf)
        whole = np.full(n, np.inf)
        for d, v in table.task_vector(task):
            if v < MIN_RESOURCE:
                continue
            free = np.minimum(free, np.floor((table.idle[d][:n] + MIN_RESOURCE) / v))
            whole = np.minimum(whole, np.floor((table.allocatable[d][:n] + MIN_RESOURCE) / v))
        if not np.isfinite(free).any():
            return None  # a request of nothing: every node holds any number of copies
        free = np.maximum(free, 0.0)
        whole = np.maximum(whole, 0.0)
        racks = self.tier_rows[self.ssn.topology.min_tier][:n]
        inside = racks >= 0
        size = len(self.names)
        rack_free = np.bincount(racks[inside], weights=free[inside], minlength=size)
        rack_whole = np.bincount(racks[inside], weights=whole[inside], minlength=size)
        return free, racks, rack_free, rack_whole

    def hypernode_tie_keys(self, job: JobInfo, candidates: list[str]) -> dict[str, float] | None:
        """For candidate HyperNodes of equal score, lower is better: for a rack (a lowest-tier
        HyperNode), the room it has left once the job's pending pods are in it (the tightest fit
        keeps the larger free racks); for a wider HyperNode, how many of those pods the room in
        its racks already in use (and on its nodes in no rack) cannot hold, the pods that would
        break a whole rack. None when it cannot tell."""
        pending = sorted((t for t in job.tasks_in(TaskStatus.Pending).values() if not t.resreq.is_empty()),
                         key=lambda t: t.uid)
        if not pending or len(candidates) < 2:
            return None
        state = self._rack_state(pending[0])
        if state is None:
            return None
        free, racks, rack_free, rack_whole = state
        assert self.ssn is not None
        topo = self.ssn.topology
        need = float(len(pending))
        lowest = topo.min_tier
        remnant = np.where(racks >= 0, rack_free[np.maximum(racks, 0)] < rack_whole[np.maximum(racks, 0)], True)
        keys: dict[str, float] = {}
        for hn in candidates:
            i = self.index.get(hn)
            if i is not None and topo.tier(hn) == lowest:
                keys[hn] = max(float(rack_free[i]) - need, 0.0)
            else:
                rows = topo.rows(hn)
                keys[hn] = max(need - float(free[rows][remnant[rows]].sum()), 0.0)
        return keys

    def _normal_pod_scores(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        assert self.ssn is not None
        topo = self.ssn.topology
        request = dict(_resource_items(task.resreq))
        total_w = 0.0
        acc = np.zeros(len(idx))
        for tier in range(topo.min_tier, topo.max_tier + 1):
            w = math.pow(self.fading, tier - 1)
            total_w += w
            if tier == topo.top_tier:
                acc += w * self._binpack_score(CLUSTER_TOP_HYPERNODE, request)
                continue
            lab = self.tier_rows.get(tier)
            if lab is None:
                acc += w
                continue
            uniq, inv = np.unique(lab[idx], return_inverse=True)
            per = np.array([1.0 if h < 0 else self._binpack_score(self.names[int(h)], request) for h in uniq])
            vals = per[inv]
            acc += w * vals
        if total_w <= 0:
            return np.zeros(len(idx))
        return acc / total_w


def _resource_items(res: Resource, *, keep_zero: bool = False) -> list[tuple[str, float]]:
    out = []
    if keep_zero or res.milli_cpu >= MIN_RESOURCE:
        out.append((CPU, res.milli_cpu))
    if keep_zero or res.memory >= MIN_RESOURCE:
        out.append((MEMORY, res.memory))
    out.extend((n, v) for n, v in res.scalars.items() if keep_zero or v >= MIN_RESOURCE)
    return out


def new(arguments: Mapping[str, Any] | None = None) -> NetworkTopologyAware:
    return NetworkTopologyAware(arguments)
