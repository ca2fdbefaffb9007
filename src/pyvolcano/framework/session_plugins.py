"""Plugin registration and tier dispatch (upstream ``framework/session_plugins.go``).

Plugins register callbacks on the session in ``OnSessionOpen`` (``add_*_fn``); the
dispatchers (``job_order_fn``, ``predicate_failures``, ``node_order_scores``, ...) combine the
enabled ones with the tier rules of :mod:`pyvolcano.framework.extension_points`. A callback
family is enabled per plugin by its configuration flag (``_FLAGS``, upstream's
``enableJobOrder`` and the like); the per-kind tier lists are built once and kept until a
registration changes them.

Plugins may also declare, per predicate and scorer, a cache key (the verdict or score on a
node depends only on the key and the node's own state), which the node-selection helpers
(:mod:`pyvolcano.framework.scheduler_helper`) use to share feasibility masks and scores
across tasks and sessions, and whether the replica batch may use them
(``batchable``, ``projectable``).

:class:`SessionPlugins` is the part of :class:`~pyvolcano.framework.session.Session` that
holds these tables; it is not used on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

import numpy as np

from pyvolcano.api.job import JobInfo, ValidateResult
from pyvolcano.api.node import NodeTable
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.sub_job import SubJobInfo
from pyvolcano.api.task import TaskInfo
from pyvolcano.api.unschedule import Status
from pyvolcano.conf.schema import SchedulerConfiguration
from pyvolcano.framework import extension_points as ep
from pyvolcano.framework.interfaces import Event, EventHandler, EvictionContext, HyperNodeScoreBounds, ShareLender

if TYPE_CHECKING:
    from pyvolcano.cache.memo import SessionMemo

__all__ = ["BestNodeFn", "NodeFailures", "NodeOrderFn", "PredicateFn", "SessionPlugins", "compare_task"]

NodeFailures = list[tuple[Status, np.ndarray]]
PredicateFn = Callable[[TaskInfo, np.ndarray], NodeFailures]
NodeOrderFn = Callable[[TaskInfo, np.ndarray], np.ndarray]
BestNodeFn = Callable[[TaskInfo, np.ndarray, np.ndarray], "int | None"]

# Which enable flag gates which callback family (upstream session_plugins.go).
_FLAGS: dict[str, str | None] = {
    "job_order": "enableJobOrder",
    "queue_order": "enableQueueOrder",
    "victim_queue_order": None,
    "task_order": "enableTaskOrder",
    "predicate": "enablePredicate",
    "pre_predicate": "enablePredicate",
    "node_order": "enableNodeOrder",
    "best_node": "enableBestNode",
    "preemptable": "enablePreemptable",
    "reclaimable": "enableReclaimable",
    "overused": "enabledOverused",
    "allocatable": "enabledAllocatable",
    "preemptive": "enablePreemptive",
    "job_ready": "enableJobReady",
    "job_pipelined": "enableJobPipelined",
    "job_valid": None,
    "job_enqueueable": "enableJobEnqueued",
    "job_enqueued": "enableJobEnqueued",
    "job_starving": "enableJobStarving",
    "victim_tasks": "enabledVictim",
    "sub_job_ready": "enabledSubJobReady",
    "sub_job_pipelined": "enabledSubJobPipelined",
    "sub_job_order": "enabledSubJobOrder",
    "hypernode_order": "enabledHyperNodeOrder",
    # pyvolcano's own: a tie-break among HyperNodes of equal HyperNodeOrder score.
    "hypernode_tie_break": "enabledHyperNodeOrder",
    "hypernode_gradient_for_job": "enabledHyperNodeGradient",
    "hypernode_gradient_for_sub_job": "enabledHyperNodeGradient",
    # Upstream (framework/session_plugins.go UnifiedEvictable) checks no enable flag.
    "unified_evictable": None,
}


class SessionPlugins:
    """The registered callbacks of a session's plugins and their tier-ordered dispatch."""

    config: SchedulerConfiguration
    memo: SessionMemo
    node_table: NodeTable

    def _init_plugin_tables(self) -> None:
        self._callbacks: dict[str, dict[str, Callable[..., Any]]] = {k: {} for k in _FLAGS}
        self.event_handlers: list[EventHandler] = []
        self._tier_cache: dict[str, list[list[tuple[str, Callable[..., Any]]]]] = {}
        self._key_fn_cache: dict[str, list[tuple[str, Callable[[TaskInfo], Hashable | None]]] | None] = {}
        self._predicate_cache_keys: dict[str, Callable[[TaskInfo], Hashable | None]] = {}
        self._node_order_cache_keys: dict[str, Callable[[TaskInfo], Hashable | None]] = {}
        self._not_batchable: set[str] = set()
        self._task_order_keys: dict[str, Callable[[TaskInfo], Any]] = {}
        self._projectable: dict[str, Callable[[TaskInfo], bool]] = {}
        self._allocatable_counts: dict[str, Callable[[QueueInfo, TaskInfo, int], int]] = {}
        self._ready_bounds: dict[str, Callable[[JobInfo], int]] = {}
        self._job_local_valid: set[str] = set()
        self._hypernode_order_bounds: dict[str, HyperNodeScoreBounds] = {}
        self._share_lenders: dict[str, ShareLender] = {}

    # ------------------------------------------------------------------ registration
    def _add(self, kind: str, name: str, fn: Callable[..., Any]) -> None:
        self._callbacks[kind][name] = fn
        self._tier_cache.pop(kind, None)
        self._key_fn_cache.clear()

    def add_job_order_fn(self, name: str, fn: Callable[[JobInfo, JobInfo], int]) -> None:
        self._add("job_order", name, fn)

    def add_queue_order_fn(self, name: str, fn: Callable[[QueueInfo, QueueInfo], int]) -> None:
        self._add("queue_order", name, fn)

    def add_victim_queue_order_fn(self, name: str, fn: Callable[[QueueInfo, QueueInfo, QueueInfo], int]) -> None:
        self._add("victim_queue_order", name, fn)

    def add_task_order_fn(
        self, name: str, fn: Callable[[TaskInfo, TaskInfo], int], *, key: Callable[[TaskInfo], Any] | None = None
    ) -> None:
        """Register a task comparator.

        ``key`` (optional) declares that ``fn(l, r)`` is negative, zero or positive exactly as
        ``key(l)`` is less than, equal to or greater than ``key(r)``; when every enabled task
        comparator declares one, :meth:`task_sort_key` can order tasks by sorting.
        """
        self._add("task_order", name, fn)
        if key is not None:
            self._task_order_keys[name] = key
        else:
            self._task_order_keys.pop(name, None)

    def add_predicate_fn(
        self, name: str, fn: PredicateFn, *, cache_key: Callable[[TaskInfo], Hashable | None] | None = None,
        batchable: bool = True, projectable: Callable[[TaskInfo], bool] | None = None,
    ) -> None:
        """Register a vectorised predicate.

        ``cache_key(task)`` (optional) declares that the plugin's verdict for ``task`` on a node
        depends only on the returned key and on that node's own state (labels, taints, the
        tasks on it). Tasks whose keys are equal for every predicate plugin then share one
        feasibility mask, re-evaluated only on nodes that changed (see :meth:`feasible_nodes`).
        Return None when the verdict depends on other nodes (inter-pod affinity, spreading).
        ``batchable=False`` keeps allocate's batched replica placement off while the plugin is
        enabled (actions/allocate/replica_batch.py), for plugins whose allocate events hold per-device
        state (GPU sharing and placement policies).
        ``projectable(task)`` (optional) declares, for a task with a cache key, that the
        verdict on a node depends only on the key, the node's labels, taints and
        unschedulable flag and the node table's columns of that row (not on the node's task
        dict, nor on state the plugin's event handlers keep): the replica batch may then
        evaluate it on a row state set up by :meth:`NodeTable.trial_add`.
        """
        self._add("predicate", name, fn)
        if cache_key is not None:
            self._predicate_cache_keys[name] = cache_key
            self._key_fn_cache.clear()
        if not batchable:
            self._not_batchable.add(name)
        if projectable is not None:
            self._projectable[name] = projectable

    def add_pre_predicate_fn(self, name: str, fn: Callable[[TaskInfo], Status | None]) -> None:
        self._add("pre_predicate", name, fn)

    def add_best_node_fn(self, name: str, fn: BestNodeFn) -> None:
        """Register a best-node chooser (upstream ``AddBestNodeFn``): ``fn(task, idx, scores)``
        gets the scored candidate rows and their summed scores and returns the row to place
        ``task`` on, or None to leave the choice to the next plugin and then to the random
        pick among the best scores. It must return None for every task the replica batch may
        place (those are chosen without it)."""
        self._add("best_node", name, fn)

    def add_node_order_fn(
        self, name: str, fn: NodeOrderFn, *, cache_key: Callable[[TaskInfo], Hashable | None] | None = None,
        batchable: bool = True, projectable: Callable[[TaskInfo], bool] | None = None,
    ) -> None:
        """Register a vectorised node-order (scoring) callback.

        ``cache_key(task)`` (optional) declares that, for tasks with that key, the plugin's
        score on a node depends only on the node's own state — no normalisation across the
        candidate set. Scores are then cached per key in the scheduler cache and recomputed
        only for nodes whose row changed. Return None when that does not hold for a task.
        ``batchable`` and ``projectable`` as in :meth:`add_predicate_fn`.
        """
        self._add("node_order", name, fn)
        if cache_key is not None:
            self._node_order_cache_keys[name] = cache_key
            self._key_fn_cache.clear()
        if not batchable:
            self._not_batchable.add(name)
        if projectable is not None:
            self._projectable[name] = projectable

    def add_preemptable_fn(
        self, name: str, fn: Callable[[TaskInfo, list[TaskInfo]], tuple[list[TaskInfo], int]]
    ) -> None:
        self._add("preemptable", name, fn)

    def add_reclaimable_fn(
        self, name: str, fn: Callable[[TaskInfo, list[TaskInfo]], tuple[list[TaskInfo], int]]
    ) -> None:
        self._add("reclaimable", name, fn)

    def add_unified_evictable_fn(
        self, name: str, fn: Callable[[EvictionContext, list[TaskInfo]], tuple[list[TaskInfo], int]]
    ) -> None:
        """Register a victim filter of the gang-aware eviction actions (gangpreempt, gangreclaim)."""
        self._add("unified_evictable", name, fn)

    def add_overused_fn(self, name: str, fn: Callable[[QueueInfo], bool]) -> None:
        self._add("overused", name, fn)

    def add_allocatable_fn(
        self, name: str, fn: Callable[[QueueInfo, TaskInfo], bool], *,
        count: Callable[[QueueInfo, TaskInfo, int], int] | None = None,
    ) -> None:
        """Register a queue-quota check.

        ``count(queue, task, k)`` (optional) is its batch form: how many of ``k`` replicas of
        ``task``'s template, each allocated in turn with its allocate events fired, ``fn``
        admits one after another before it first refuses one. The verdict must be monotone
        (a refused replica leaves the state as it was, so every later one is refused too),
        and ``count`` must compute it with the float operations the events would perform.
        """
        self._add("allocatable", name, fn)
        if count is not None:
            self._allocatable_counts[name] = count
        else:
            self._allocatable_counts.pop(name, None)

    def add_share_lender(self, name: str, lender: ShareLender) -> None:
        """Register a lender of idle queue share (:class:`~pyvolcano.framework.interfaces.ShareLender`;
        pyvolcano's own, not an upstream extension point)."""
        self._share_lenders[name] = lender

    def share_lender(self) -> ShareLender | None:
        """The registered lender of idle queue share (the first, in registration order), or None."""
        return next(iter(self._share_lenders.values()), None)

    def add_preemptive_fn(self, name: str, fn: Callable[[QueueInfo, list[TaskInfo]], bool]) -> None:
        self._add("preemptive", name, fn)

    def add_job_ready_fn(
        self, name: str, fn: Callable[[JobInfo], bool], *, bound: Callable[[JobInfo], int] | None = None
    ) -> None:
        """Register a JobReady callback.

        ``bound(job)`` (optional) is a number ``n ≥ 1`` such that ``fn(job)`` stays False until
        at least ``n`` more of the job's pending tasks are allocated (a gang's count decides
        it); allocate then asks ``fn`` only when that many were placed.
        """
        self._add("job_ready", name, fn)
        if bound is not None:
            self._ready_bounds[name] = bound
        else:
            self._ready_bounds.pop(name, None)

    def add_job_pipelined_fn(self, name: str, fn: Callable[[JobInfo], int]) -> None:
        self._add("job_pipelined", name, fn)

    def add_job_valid_fn(self, name: str, fn: Callable[[JobInfo], ValidateResult | None], *,
                         job_local: bool = False) -> None:
        """``job_local``: the verdict reads only what moves the job's mutation counter (its
        tasks, PodGroup and phase), so a job's verdict stays valid until the job changes."""
        self._add("job_valid", name, fn)
        if job_local:
            self._job_local_valid.add(name)
        else:
            self._job_local_valid.discard(name)

    def add_job_enqueueable_fn(self, name: str, fn: Callable[[JobInfo], int]) -> None:
        self._add("job_enqueueable", name, fn)

    def add_job_enqueued_fn(self, name: str, fn: Callable[[JobInfo], None]) -> None:
        self._add("job_enqueued", name, fn)

    def add_job_starving_fn(self, name: str, fn: Callable[[JobInfo], bool]) -> None:
        self._add("job_starving", name, fn)

    def add_victim_tasks_fn(self, name: str, fn: Callable[[list[TaskInfo]], list[TaskInfo]]) -> None:
        self._add("victim_tasks", name, fn)

    def add_event_handler(self, handler: EventHandler) -> None:
        self.event_handlers.append(handler)

    def add_sub_job_ready_fn(self, name: str, fn: Callable[[SubJobInfo], bool]) -> None:
        self._add("sub_job_ready", name, fn)

    def add_sub_job_pipelined_fn(self, name: str, fn: Callable[[SubJobInfo], int]) -> None:
        self._add("sub_job_pipelined", name, fn)

    def add_sub_job_order_fn(self, name: str, fn: Callable[[SubJobInfo, SubJobInfo], int]) -> None:
        self._add("sub_job_order", name, fn)

    def add_hypernode_order_fn(
        self, name: str, fn: Callable[[SubJobInfo, list[str]], dict[str, float]], *,
        bounds: HyperNodeScoreBounds | None = None,
    ) -> None:
        """Register a HyperNode scorer: ``fn(sub_job, candidates)`` → score per candidate.

        ``bounds`` (optional) declares ``fn``'s scores before any placement (see
        :class:`~pyvolcano.framework.interfaces.HyperNodeScoreBounds`); allocate then dry-runs
        candidates best score first and stops early (:meth:`hypernode_order_bounds`).
        """
        self._add("hypernode_order", name, fn)
        if bounds is not None:
            self._hypernode_order_bounds[name] = bounds
        else:
            self._hypernode_order_bounds.pop(name, None)

    def add_hypernode_tie_break_fn(
        self, name: str, fn: Callable[[JobInfo, list[str]], dict[str, float] | None]
    ) -> None:
        """Register a tie-break among candidate HyperNodes of equal score (pyvolcano's own, no
        upstream counterpart): ``fn(job, candidates)`` → a key per candidate, lower preferred,
        consulted only between equal scores; None when it cannot tell them apart."""
        self._add("hypernode_tie_break", name, fn)

    def add_hypernode_gradient_for_job_fn(self, name: str, fn: Callable[[JobInfo, str, str], list[list[str]]]) -> None:
        """``fn(job, hypernode, purpose)`` → candidate HyperNodes grouped by tier, tried in order."""
        self._add("hypernode_gradient_for_job", name, fn)

    def add_hypernode_gradient_for_sub_job_fn(
        self, name: str, fn: Callable[[SubJobInfo, str, str], list[list[str]]]
    ) -> None:
        self._add("hypernode_gradient_for_sub_job", name, fn)

    # ------------------------------------------------------------------ tier walk
    def _tiers(self, kind: str) -> list[list[tuple[str, Callable[..., Any]]]]:
        cached = self._tier_cache.get(kind)
        if cached is not None:
            return cached
        flag = _FLAGS[kind]
        table = self._callbacks[kind]
        out: list[list[tuple[str, Callable[..., Any]]]] = []
        for tier in self.config.tiers:
            row = []
            for opt in tier.plugins:
                if flag is not None and not opt.enabled(flag):
                    continue
                fn = table.get(opt.name)
                if fn is not None:
                    row.append((opt.name, fn))
            out.append(row)
        self._tier_cache[kind] = out
        return out

    def has(self, kind: str) -> bool:
        return any(self._tiers(kind))

    def enabled_plugins(self, kind: str) -> list[str]:
        """The enabled plugins that registered a ``kind`` callback (an extension point's name,
        e.g. ``job_enqueueable``), in tier order."""
        return [name for tier in self._tiers(kind) for name, _fn in tier]

    # ------------------------------------------------------------------ dispatchers
    def job_order_compare(self, l: JobInfo, r: JobInfo) -> int:
        return ep.walk_first_nonzero(self._tiers("job_order"), l, r)

    def job_order_fn(self, l: JobInfo, r: JobInfo) -> bool:
        res = self.job_order_compare(l, r)
        if res != 0:
            return res < 0
        if l.creation_timestamp == r.creation_timestamp:
            return l.uid < r.uid
        return l.creation_timestamp < r.creation_timestamp

    def queue_order_fn(self, l: QueueInfo, r: QueueInfo) -> bool:
        res = ep.walk_first_nonzero(self._tiers("queue_order"), l, r)
        if res != 0:
            return res < 0
        if l.creation_timestamp == r.creation_timestamp:
            return l.uid < r.uid
        return l.creation_timestamp < r.creation_timestamp

    def victim_queue_order_fn(self, l: QueueInfo, r: QueueInfo, preemptor: QueueInfo) -> bool:
        res = ep.walk_first_nonzero(self._tiers("victim_queue_order"), l, r, preemptor)
        if res != 0:
            return res < 0
        return not self.queue_order_fn(l, r)

    def task_compare(self, l: TaskInfo, r: TaskInfo) -> int:
        return ep.walk_first_nonzero(self._tiers("task_order"), l, r)

    def task_order_fn(self, l: TaskInfo, r: TaskInfo) -> bool:
        res = self.task_compare(l, r)
        if res != 0:
            return res < 0
        return compare_task(l, r)

    def task_sort_key(self, tasks: list[TaskInfo]) -> Callable[[TaskInfo], tuple[Any, ...]] | None:
        """A sort key that orders ``tasks`` exactly as :meth:`task_order_fn` does, or None.

        Not None when every enabled task comparator declared a key and :func:`compare_task`,
        the tie-break, is lexicographic on ``tasks`` (all or none of them have a pod index;
        with a mix it is not transitive). UIDs are unique, so the order is total and a heap
        pops ``tasks`` in this sorted order whatever its internal layout.
        """
        keys: list[Callable[[TaskInfo], Any]] = []
        for tier in self._tiers("task_order"):
            for name, _fn in tier:
                k = self._task_order_keys.get(name)
                if k is None:
                    return None
                keys.append(k)
        indexed = sum(1 for t in tasks if t.index is not None)
        if indexed == 0:
            return lambda t: (*(k(t) for k in keys), t.creation_timestamp, t.uid)
        if indexed == len(tasks):
            return lambda t: (*(k(t) for k in keys), t.index, t.creation_timestamp, t.uid)
        return None

    def job_ready(self, job: JobInfo) -> bool:
        return ep.walk_and(self._tiers("job_ready"), job)

    def job_ready_bound(self, job: JobInfo) -> int | None:
        """How many more of ``job``'s tasks must be allocated before :meth:`job_ready` can
        turn True (at least 1); None when an enabled JobReady callback declared no bound.

        Every callback must agree, so the largest of their bounds holds for the walk.
        """
        n = 1
        for tier in self._tiers("job_ready"):
            for name, _fn in tier:
                bound = self._ready_bounds.get(name)
                if bound is None:
                    return None
                b = bound(job)
                if b > n:
                    n = b
        return n

    def job_pipelined(self, job: JobInfo) -> bool:
        return ep.walk_vote(self._tiers("job_pipelined"), job)

    # Sub-jobs and HyperNodes (upstream SubJobReady, SubJobPipelined, SubJobOrderFn,
    # HyperNodeOrderMapFn, HyperNodeGradientFor{Job,SubJob}Fn).
    def sub_job_ready(self, job: JobInfo, sub_job: SubJobInfo) -> bool:
        if job.topology is None or not job.topology.has_policies:
            return self.job_ready(job)
        return ep.walk_and(self._tiers("sub_job_ready"), sub_job)

    def sub_job_pipelined(self, job: JobInfo, sub_job: SubJobInfo) -> bool:
        if job.topology is None or not job.topology.has_policies:
            return self.job_pipelined(job)
        return ep.walk_vote(self._tiers("sub_job_pipelined"), sub_job)

    def sub_job_order_fn(self, l: SubJobInfo, r: SubJobInfo) -> bool:
        res = ep.walk_first_nonzero(self._tiers("sub_job_order"), l, r)
        if res != 0:
            return res < 0
        if l.match_index != r.match_index:
            return l.match_index < r.match_index
        return l.uid < r.uid

    def hypernode_order_scores(self, sub_job: SubJobInfo, candidates: list[str]) -> dict[str, float]:
        """Σ of the enabled HyperNode scorers' scores per candidate (0 for a candidate none scored)."""
        total = dict.fromkeys(candidates, 0.0)
        for tier in self._tiers("hypernode_order"):
            for _name, fn in tier:
                for hn, score in fn(sub_job, candidates).items():
                    if hn in total:
                        total[hn] += score
        return total

    def hypernode_tie_keys(self, job: JobInfo, candidates: list[str]) -> dict[str, float] | None:
        """The first enabled tie-break's keys for ``candidates`` (lower preferred); None: none."""
        for tier in self._tiers("hypernode_tie_break"):
            for _name, fn in tier:
                keys: dict[str, float] | None = fn(job, candidates)
                if keys is not None:
                    return keys
        return None

    def hypernode_order_bounds(self) -> HyperNodeScoreBounds | None:
        """The declared scores of the HyperNodeOrder scorer when it is the only one enabled and
        declared them (``bounds`` of :meth:`add_hypernode_order_fn`); None otherwise."""
        names = self.enabled_plugins("hypernode_order")
        if len(names) != 1:
            return None
        return self._hypernode_order_bounds.get(names[0])

    def hypernode_gradient_for_job(self, job: JobInfo, hypernode: str, purpose: str) -> list[list[str]]:
        """The first enabled gradient plugin decides; none: ``[[hypernode]]``."""
        for tier in self._tiers("hypernode_gradient_for_job"):
            for _name, fn in tier:
                return list(fn(job, hypernode, purpose))
        return [[hypernode]]

    def hypernode_gradient_for_sub_job(self, sub_job: SubJobInfo, hypernode: str, purpose: str) -> list[list[str]]:
        for tier in self._tiers("hypernode_gradient_for_sub_job"):
            for _name, fn in tier:
                return list(fn(sub_job, hypernode, purpose))
        return [[hypernode]]

    def job_starving(self, job: JobInfo) -> bool:
        return ep.walk_starving(self._tiers("job_starving"), job)

    def job_valid(self, job: JobInfo) -> ValidateResult | None:
        for tier in self._tiers("job_valid"):
            for _name, fn in tier:
                vr = fn(job)
                if vr is not None and not vr.passed:
                    return vr
        return None

    def job_local_valid_fns(self) -> list[tuple[str, Callable[[JobInfo], ValidateResult | None]]]:
        """The enabled JobValid callbacks declared ``job_local``, in tier order."""
        local = self._job_local_valid
        return [(name, fn) for tier in self._tiers("job_valid") for name, fn in tier if name in local]

    def job_enqueueable(self, job: JobInfo) -> bool:
        return ep.walk_vote(self._tiers("job_enqueueable"), job)

    def job_enqueued(self, job: JobInfo) -> None:
        for tier in self._tiers("job_enqueued"):
            for _name, fn in tier:
                fn(job)

    def overused(self, queue: QueueInfo) -> bool:
        return ep.walk_or(self._tiers("overused"), queue)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return ep.walk_and(self._tiers("allocatable"), queue, task)

    def allocatable_count(self, queue: QueueInfo, task: TaskInfo, k: int) -> int | None:
        """How many of ``k`` replicas of ``task``'s template :meth:`allocatable` admits in a
        row, each allocated in turn; None when an enabled callback declared no count.

        Every callback's verdict is monotone, so the walk admits a replica exactly when each
        callback does: the smallest of their counts.
        """
        n = k
        for tier in self._tiers("allocatable"):
            for name, _fn in tier:
                count = self._allocatable_counts.get(name)
                if count is None:
                    return None
                if n:
                    n = min(n, count(queue, task, n))
        return n

    def preemptive(self, queue: QueueInfo, tasks: list[TaskInfo]) -> bool:
        return ep.walk_and(self._tiers("preemptive"), queue, tasks)

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return ep.walk_victims(self._tiers("preemptable"), preemptor, candidates)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return ep.walk_victims(self._tiers("reclaimable"), reclaimer, candidates)

    def unified_evictable(self, ctx: EvictionContext, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Upstream ``UnifiedEvictable``: the candidates every plugin of the deciding tier approves.

        Combined as Preemptable/Reclaimable are (:func:`~pyvolcano.framework.extension_points.walk_victims`,
        the same quirks), with the eviction context in place of the preemptor task.
        """
        return ep.walk_victims(self._tiers("unified_evictable"), ctx, candidates)

    def victim_tasks(self, tasks: list[TaskInfo]) -> list[TaskInfo]:
        for tier in self._tiers("victim_tasks"):
            chosen: dict[str, TaskInfo] = {}
            for _name, fn in tier:
                for t in fn(tasks):
                    chosen[t.uid] = t
            if chosen:
                return list(chosen.values())
        return []

    def pre_predicate(self, task: TaskInfo) -> Status | None:
        for tier in self._tiers("pre_predicate"):
            for _name, fn in tier:
                st = fn(task)
                if st is not None:
                    return st
        return None

    def predicate_failures(self, task: TaskInfo, idx: np.ndarray) -> tuple[np.ndarray, list[tuple[Status, np.ndarray]]]:
        """Run every plugin predicate over ``idx``; the first failing plugin decides per node.

        Returns the pass mask over ``idx`` and ``(status, failing node indices)`` groups.
        """
        ok = np.ones(len(idx), dtype=bool)
        groups: list[tuple[Status, np.ndarray]] = []
        for tier in self._tiers("predicate"):
            for _name, fn in tier:
                live = np.flatnonzero(ok)
                if not len(live):
                    return ok, groups
                failures: NodeFailures = fn(task, idx[live])
                failed_any = np.zeros(len(live), dtype=bool)
                for status, mask in failures:
                    if mask.any():
                        groups.append((status, idx[live[mask]]))
                        failed_any |= mask
                ok[live[failed_any]] = False
        return ok, groups

    def best_node(self, task: TaskInfo, idx: np.ndarray, scores: np.ndarray) -> int | None:
        """Upstream ``BestNodeFn``: the first enabled chooser's row that is not None."""
        for tier in self._tiers("best_node"):
            for _name, fn in tier:
                row = fn(task, idx, scores)
                if row is not None:
                    return int(row)
        return None

    def node_order_scores(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        scores = np.zeros(len(idx), dtype=np.float64)
        for tier in self._tiers("node_order"):
            for name, fn in tier:
                key_fn = self._node_order_cache_keys.get(name)
                key = key_fn(task) if key_fn is not None else None
                if key is None:
                    scores = scores + fn(task, idx)
                else:
                    scores = scores + self._cached_scores(name, key, fn, task, idx)
        return scores

    def node_local_scores(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        """:meth:`node_order_scores` for a task whose :meth:`node_order_cache_key` is not None.

        Calls every plugin directly on ``idx`` (no score cache): for such a task each
        plugin's score on a node is a function of the node's own state, so the sum, taken in
        the same order, is the one :meth:`node_order_scores` returns. For the few rows a
        placement changed.
        """
        scores = np.zeros(len(idx), dtype=np.float64)
        for tier in self._tiers("node_order"):
            for _name, fn in tier:
                scores = scores + fn(task, idx)
        return scores

    def _cached_scores(
        self, name: str, key: Hashable, fn: NodeOrderFn, task: TaskInfo, idx: np.ndarray
    ) -> np.ndarray:
        values, known, _stale = self.memo.score_cache.refresh((name, key), self.node_table)
        need = idx[~known[idx]]
        if len(need):
            values[need] = fn(task, need)
            known[need] = True
        return values[idx]

    # ------------------------------------------------------------------ cache keys and batching
    def _key_fns(self, kind: str) -> list[tuple[str, Callable[[TaskInfo], Hashable | None]]] | None:
        """The enabled plugins' cache-key functions of ``kind`` in tier order; None if one has none."""
        cached = self._key_fn_cache.get(kind, False)
        if cached is not False:
            return cached  # type: ignore[return-value]
        keys = self._predicate_cache_keys if kind == "predicate" else self._node_order_cache_keys
        out: list[tuple[str, Callable[[TaskInfo], Hashable | None]]] | None = []
        for tier in self._tiers(kind):
            for name, _fn in tier:
                key_fn = keys.get(name)
                if key_fn is None:
                    out = None
                    break
                assert out is not None
                out.append((name, key_fn))
            if out is None:
                break
        self._key_fn_cache[kind] = out
        return out

    def predicate_cache_key(self, task: TaskInfo) -> Hashable | None:
        """A key under which the allocate predicate's verdicts for ``task`` may be shared."""
        return self._combined_key("predicate", task, [self.node_table.task_vector(task)])

    def replicas_batchable(self) -> bool:
        """Whether no enabled predicate or node-order plugin opted out of batched placement."""
        if not self._not_batchable:
            return True
        return not any(
            name in self._not_batchable
            for kind in ("predicate", "node_order")
            for tier in self._tiers(kind)
            for name, _fn in tier
        )

    def replicas_projectable(self, task: TaskInfo) -> bool:
        """Whether every enabled predicate and node-order plugin is projectable for ``task``.

        See ``projectable`` in :meth:`add_predicate_fn`. A pod with inter-pod affinity terms
        never is: placing it changes a count the node table keeps for the whole cluster.
        """
        if task.pod.has_pod_affinity:
            return False
        for kind in ("predicate", "node_order"):
            for tier in self._tiers(kind):
                for name, _fn in tier:
                    fn = self._projectable.get(name)
                    if fn is None or not fn(task):
                        return False
        return True

    def node_order_cache_key(self, task: TaskInfo) -> Hashable | None:
        """A key under which every node-order score for ``task`` is node-local, or None.

        Not None only when every enabled node-order plugin declared a cache key and returns
        one for ``task`` (see :meth:`add_node_order_fn`): the summed score of a node then
        depends only on the key and that node's own state.
        """
        return self._combined_key("node_order", task, [])

    def _combined_key(self, kind: str, task: TaskInfo, parts: list[Hashable]) -> Hashable | None:
        """``parts`` followed by every enabled ``kind`` plugin's ``(name, key)`` for ``task``;
        None when one of them has no key function or no key for it."""
        fns = self._key_fns(kind)
        if fns is None:
            return None
        for name, key_fn in fns:
            k = key_fn(task)
            if k is None:
                return None
            parts.append((name, k))
        return tuple(parts)

    # ------------------------------------------------------------------ event handlers
    def fire_allocate(self, task: TaskInfo) -> bool:
        ok = True
        for eh in self.event_handlers:
            if eh.allocate is not None:
                ev = Event(task)
                eh.allocate(ev)
                if ev.err:
                    ok = False
        return ok

    def allocate_batchable(self) -> bool:
        """Whether every allocate event handler declared its batch form (``allocate_many``)."""
        return all(eh.allocate_many is not None for eh in self.event_handlers if eh.allocate is not None)

    def fire_allocate_many(self, tasks: list[TaskInfo]) -> None:
        """Every handler's batch form on ``tasks`` (see :class:`EventHandler`); handlers
        without an allocate hook are skipped, as :meth:`fire_allocate` skips them."""
        for eh in self.event_handlers:
            if eh.allocate_many is not None:
                eh.allocate_many(tasks)

    def fire_deallocate(self, task: TaskInfo) -> None:
        for eh in self.event_handlers:
            if eh.deallocate is not None:
                eh.deallocate(Event(task))

    def simulates_removal(self, plugin: str) -> bool:
        """Whether upstream calls ``plugin``'s SimulateAddTask/SimulateRemoveTask hooks.

        Upstream (framework/session_plugins.go SimulateRemoveTaskFn) calls them only for
        plugins with ``enablePreemptable`` or ``enabledAllocatable``; a plugin without either
        keeps the pre-filter state of the preemptor's PrePredicate, in which a dry run's
        removals never happened.
        """
        return any(
            opt.name == plugin and (opt.enabled("enablePreemptable") or opt.enabled("enabledAllocatable"))
            for tier in self.config.tiers
            for opt in tier.plugins
        )


def compare_task(l: TaskInfo, r: TaskInfo) -> bool:
    """Upstream ``helpers.CompareTask``: pod index, then creation time, then UID."""
    if l.index is not None and r.index is not None and l.index != r.index:
        return l.index < r.index
    if l.creation_timestamp != r.creation_timestamp:
        return l.creation_timestamp < r.creation_timestamp
    return l.uid < r.uid
