"""Session: one scheduling cycle over the cache's state (framework/session.go, session_plugins.go).

Design. A session does not deep-copy the cluster. It works on the cache's job, task and node
state directly and keeps every tentative change revocable: operations go through
:class:`~pyvolcano.framework.statement.Statement`, and at close everything that was not
committed (pipelined tasks, allocations of gangs that never became ready, statements left
open) is undone before the committed effects (binds, evictions) are applied. Plugins are
instantiated fresh for every session and register callbacks; dispatchers combine them with
the tier rules in :mod:`pyvolcano.framework.extension_points`.

Node work is vectorised: predicates and node-order callbacks take a task and an array of node
indices and return failure masks or score arrays over the columnar
:class:`~pyvolcano.api.node.NodeTable`.

Invariants: the core reads no wall clock and no global randomness (``now`` and ``rng`` come
from the caller); iteration orders are stable (sorted by UID / node order), so the same
inputs and seed give the same decisions.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from pyvolcano.api.job import ChangedJobs, JobInfo, ValidateResult
from pyvolcano.api.node import NodeInfo, NodeTable
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import TaskInfo, TaskStatus
from pyvolcano.api.unschedule import Code, FitErrors, Status, insufficient_reason
from pyvolcano.conf.schema import PluginOption, SchedulerConfiguration
from pyvolcano.diagnosis.diagnose import diagnose_session
from pyvolcano.framework import extension_points as ep
from pyvolcano.framework import job_updater
from pyvolcano.framework.interfaces import Event, EventHandler, Plugin
from pyvolcano.framework.observer import ON_SESSION_CLOSE, ON_SESSION_OPEN, SessionObserver
from pyvolcano.framework.statement import Statement

if TYPE_CHECKING:
    from pyvolcano.cache.cache import SchedulerCache
    from pyvolcano.cache.memo import SessionMemo
    from pyvolcano.diagnosis.model import Diagnosis

__all__ = ["NodeFailures", "Session", "open_session"]

logger = logging.getLogger(__name__)

NodeFailures = list[tuple[Status, np.ndarray]]
PredicateFn = Callable[[TaskInfo, np.ndarray], NodeFailures]
NodeOrderFn = Callable[[TaskInfo, np.ndarray], np.ndarray]

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
}

MIN_NODES_TO_FIND = 100
MIN_PERCENTAGE_OF_NODES_TO_FIND = 5
BASELINE_PERCENTAGE_OF_NODES_TO_FIND = 50


class Session:
    """One scheduling cycle. Build with :func:`open_session`; end with :meth:`close`."""

    def __init__(
        self,
        cache: SchedulerCache,
        config: SchedulerConfiguration,
        plugin_factories: Mapping[str, Callable[[Mapping[str, Any]], Plugin]],
        *,
        uid: str,
        now: float,
        memo: SessionMemo,
        rng: np.random.Generator,
        observer: SessionObserver | None = None,
    ):
        self.cache = cache
        self.memo = memo
        self.config = config
        self.uid = uid
        self.now = now
        self.rng = rng
        self.observer = observer
        self.node_table: NodeTable = cache.node_table
        self.nodes: dict[str, NodeInfo] = cache.nodes
        self.node_list: list[NodeInfo] = cache.node_list
        self.queues: dict[str, QueueInfo] = dict(cache.queues)
        self.priority_classes = cache.priority_classes
        self.jobs: dict[str, JobInfo] = cache.session_jobs()  # with a PodGroup and an existing queue
        self.total_resource = self._total_resource()
        self.enabled_actions = set(config.actions)
        self._callbacks: dict[str, dict[str, Callable[..., Any]]] = {k: {} for k in _FLAGS}
        self.event_handlers: list[EventHandler] = []
        self._open_statements: list[Statement] = []
        self.plugins: list[tuple[PluginOption, Plugin]] = []
        self.binds: list[tuple[TaskInfo, str]] = []
        # Annotations plugins attach to a task's bind request (e.g. volcano.sh/gpu-index), set
        # in their allocate event handler and cleared in deallocate.
        self.bind_annotations: dict[str, dict[str, str]] = {}
        self.evictions: list[tuple[TaskInfo, str]] = []
        self.podgroup_events: dict[str, list[str]] = {}
        self.nominated: dict[str, str] = {}
        # Tasks a topology-aware preemption dry run has taken off their nodes (uid -> task).
        # Upstream simulates the removal only in plugins whose simulate hooks it calls (see
        # simulates_removal); the others keep seeing these tasks where they were.
        self.dry_run_removed: dict[str, TaskInfo] = {}
        # Jobs session close leaves alone because nothing they derive from changed
        # (framework/job_updater.py); filled at close.
        self.settled: set[str] = set()
        # Their complement among the jobs with a PodGroup, in uid order; filled at close.
        self.unsettled: list[str] = []
        # The jobs this session changed so far, from the cache's change feed (None: not
        # tracked; session close then walks every job for tentative tasks).
        self.changed_jobs: ChangedJobs | None = None
        # Why each job left short is blocked (pyvolcano.diagnosis), by job key; filled at close.
        self.diagnoses: dict[str, Diagnosis] = {}
        self.skip_unchanged = cache.options.skip_unchanged_unschedulable
        for job in self.jobs.values():
            if self.skip_unchanged and self.unchanged_since_failure(job):
                continue  # keep the reasons of the attempt that is being skipped
            job.reset_fit_err()
            if not job.count(TaskStatus.Pending):
                continue
            for t in job.tasks_in(TaskStatus.Pending).values():
                if t.last_transaction is not None:
                    t.last_transaction = None
                    job.bump_fit_version()
        for tier in config.tiers:
            for opt in tier.plugins:
                factory = plugin_factories[opt.name]
                plugin = factory(opt.arguments)
                self.plugins.append((opt, plugin))
        self._tier_cache: dict[str, list[list[tuple[str, Callable[..., Any]]]]] = {}
        self._key_fn_cache: dict[str, list[tuple[str, Callable[[TaskInfo], Hashable | None]]] | None] = {}
        self._predicate_cache_keys: dict[str, Callable[[TaskInfo], Hashable | None]] = {}
        self._node_order_cache_keys: dict[str, Callable[[TaskInfo], Hashable | None]] = {}
        self._not_batchable: set[str] = set()
        self._task_order_keys: dict[str, Callable[[TaskInfo], Any]] = {}
        self._projectable: dict[str, Callable[[TaskInfo], bool]] = {}

    # ------------------------------------------------------------------ lifecycle
    def open(self) -> None:
        # Cached scores may reflect session-local plugin state (e.g. in-session evictions).
        self.memo.score_cache.clear()
        obs = self.observer
        for opt, plugin in self.plugins:
            if obs is None:
                plugin.on_session_open(self)
            else:
                t0 = obs.timer()
                plugin.on_session_open(self)
                obs.plugin_done(opt.name, ON_SESSION_OPEN, obs.timer() - t0)
        self._tier_cache.clear()
        self._key_fn_cache.clear()

    def close(self) -> None:
        """End the session (upstream ``CloseSession``): diagnose the jobs left short, let the
        plugins close, update the unsettled jobs' PodGroup status and pod conditions
        (:mod:`~pyvolcano.framework.job_updater`), then undo everything not committed (open
        statements, Allocated and Pipelined tasks). The committed effects stay in
        :attr:`binds` and :attr:`evictions` for the caller to apply."""
        unsettled = job_updater.unsettled_jobs(self)
        self.unsettled = unsettled
        self.settled = self.jobs.keys() - set(unsettled)
        if self.cache.options.diagnose:
            # Before the plugins close: the diagnosis reads their quotas and predicates.
            self.diagnoses = diagnose_session(self)
        obs = self.observer
        for opt, plugin in self.plugins:
            if obs is None:
                plugin.on_session_close(self)
            else:
                t0 = obs.timer()
                plugin.on_session_close(self)
                obs.plugin_done(opt.name, ON_SESSION_CLOSE, obs.timer() - t0)
        job_updater.update_job_status(self, unsettled)
        for stmt in reversed(list(self._open_statements)):
            stmt.discard()
        job_updater.revert_tentative(self)

    def _total_resource(self) -> Resource:
        t = self.node_table
        total = Resource()
        for d, name in enumerate(t.dims):
            col = t.allocatable[d][: t.n]
            if name in ("cpu", "memory") or t.declared[d][: t.n].any():
                total.set(name, float(col.sum()))
        return total

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
        enabled (actions/replica_batch.py), for plugins whose allocate events hold per-device
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

    def add_overused_fn(self, name: str, fn: Callable[[QueueInfo], bool]) -> None:
        self._add("overused", name, fn)

    def add_allocatable_fn(self, name: str, fn: Callable[[QueueInfo, TaskInfo], bool]) -> None:
        self._add("allocatable", name, fn)

    def add_preemptive_fn(self, name: str, fn: Callable[[QueueInfo, list[TaskInfo]], bool]) -> None:
        self._add("preemptive", name, fn)

    def add_job_ready_fn(self, name: str, fn: Callable[[JobInfo], bool]) -> None:
        self._add("job_ready", name, fn)

    def add_job_pipelined_fn(self, name: str, fn: Callable[[JobInfo], int]) -> None:
        self._add("job_pipelined", name, fn)

    def add_job_valid_fn(self, name: str, fn: Callable[[JobInfo], ValidateResult | None]) -> None:
        self._add("job_valid", name, fn)

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

    def job_pipelined(self, job: JobInfo) -> bool:
        return ep.walk_vote(self._tiers("job_pipelined"), job)

    def job_starving(self, job: JobInfo) -> bool:
        return ep.walk_starving(self._tiers("job_starving"), job)

    def job_valid(self, job: JobInfo) -> ValidateResult | None:
        for tier in self._tiers("job_valid"):
            for _name, fn in tier:
                vr = fn(job)
                if vr is not None and not vr.passed:
                    return vr
        return None

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

    def preemptive(self, queue: QueueInfo, tasks: list[TaskInfo]) -> bool:
        return ep.walk_and(self._tiers("preemptive"), queue, tasks)

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return ep.walk_victims(self._tiers("preemptable"), preemptor, candidates)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return ep.walk_victims(self._tiers("reclaimable"), reclaimer, candidates)

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
        table = self.node_table
        n = table.n
        store = self.memo.score_cache
        ckey = (name, key)
        entry = store.get(ckey)
        if entry is None or len(entry[0]) != n:
            entry = (np.zeros(n, dtype=np.float64), np.zeros(n, dtype=bool), table.change_position)
            store[ckey] = entry
            if len(store) > 512:
                store.pop(next(iter(store)))
        values, known, pos = entry
        changed = table.changes_since(pos)
        if changed is None:
            known[:] = False
        elif len(changed):
            known[changed] = False
        store[ckey] = (values, known, table.change_position)
        need = idx[~known[idx]]
        if len(need):
            values[need] = fn(task, need)
            known[need] = True
        return values[idx]

    # ------------------------------------------------------------------ node selection helpers
    def num_feasible_nodes_to_find(self, n: int) -> int:
        opts = self.cache.options
        if n <= opts.min_nodes_to_find or opts.percentage_of_nodes_to_find >= 100:
            return n
        pct = opts.percentage_of_nodes_to_find
        if pct <= 0:
            pct = BASELINE_PERCENTAGE_OF_NODES_TO_FIND - n // 125
            pct = max(pct, opts.min_percentage_of_nodes_to_find)
        return max(n * pct // 100, opts.min_nodes_to_find)

    def predicate_nodes(
        self,
        task: TaskInfo,
        idx: np.ndarray,
        predicate: Callable[[TaskInfo, np.ndarray], tuple[np.ndarray, FitErrors]],
        *,
        limit: bool = True,
    ) -> tuple[np.ndarray, FitErrors]:
        """Upstream ``PredicateNodes``: feasible nodes from a round-robin start, up to numNodesToFind.

        ``idx`` is the candidate node index array in node order. Fit errors are recorded only for
        nodes that were examined, as upstream does.
        """
        n = len(idx)
        if n == 0:
            return idx, FitErrors()
        start = self.memo.last_processed_node_index % n
        order = idx if start == 0 else np.concatenate([idx[start:], idx[:start]])
        want = self.num_feasible_nodes_to_find(n) if limit else n
        # Evaluate in chunks from the round-robin start and stop once enough feasible nodes
        # are found, as upstream stops its workers (only examined nodes get fit errors).
        chunk = n if want >= n else min(n, max(1024, 2 * want))
        found: list[np.ndarray] = []
        n_found = 0
        errors = FitErrors()
        pos = 0
        processed = n
        while pos < n:
            part = order[pos : pos + chunk]
            ok, fe = predicate(task, part)
            hits = np.flatnonzero(ok)
            if n_found + len(hits) >= want:
                need = want - n_found
                cut = int(hits[need - 1]) + 1
                found.append(part[hits[:need]])
                processed = pos + cut
                errors.groups.extend(_restrict_errors(fe, part[:cut]).groups if cut < len(part) else fe.groups)
                n_found = want
                break
            found.append(part[hits])
            n_found += len(hits)
            errors.groups.extend(fe.groups)
            errors.err = errors.err or fe.err
            pos += len(part)
        self.memo.last_processed_node_index = (start + processed) % n
        feasible = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
        return feasible, errors

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

    def feasible_nodes(self, task: TaskInfo, key: Hashable) -> np.ndarray:
        """Fast path of :meth:`predicate_nodes` with :meth:`allocate_predicate` over all nodes.

        Uses a per-key feasibility mask kept in the cache across sessions: only rows in the node
        table's change log since the mask was computed are re-evaluated. The round-robin window
        (numNodesToFind from the last processed index) is applied exactly as in
        :meth:`predicate_nodes`. Returns an empty array when no node is feasible; the caller
        then runs the full path to collect fit errors (which leaves the round-robin index
        where it is, as the full path does when it examines every node).
        """
        mask = self.feasibility_mask(task, key)
        # The same round-robin window as the full path, over the cached verdicts.
        feasible, _ = self.predicate_nodes(
            task, np.arange(len(mask), dtype=np.int64), lambda _t, order: (mask[order], FitErrors())
        )
        return feasible

    def feasibility_mask(self, task: TaskInfo, key: Hashable) -> np.ndarray:
        """The allocate predicate's verdict on every node for tasks of ``key``, up to date.

        Kept in the cache across sessions; only rows changed since it was last brought up to
        date are re-evaluated. The returned array is the stored one (callers that update rows
        themselves write it back with :meth:`store_feasibility`).
        """
        table = self.node_table
        n = table.n
        store = self.memo.feasibility
        entry = store.get(key)
        changed = None if entry is None else table.changes_since(entry[1])
        if entry is None or len(entry[0]) != n or changed is None:
            mask, _ = self.allocate_predicate(task, np.arange(n, dtype=np.int64))
            store[key] = (mask, table.change_position)
            if len(store) > 512:
                store.pop(next(iter(store)))
        else:
            mask = entry[0]
            if len(changed):
                ok, _ = self.allocate_predicate(task, changed)
                mask[changed] = ok
            store[key] = (mask, table.change_position)
        return mask

    def store_feasibility(self, key: Hashable, mask: np.ndarray, position: int) -> None:
        """Record ``mask`` as the verdicts for ``key`` as of change-log ``position``."""
        self.memo.feasibility[key] = (mask, position)

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

    def allocate_predicate(self, task: TaskInfo, idx: np.ndarray) -> tuple[np.ndarray, FitErrors]:
        """Allocate's predicate: InitResreq ≤ FutureIdle, then every plugin predicate."""
        fe = FitErrors()
        vec = self.node_table.task_vector(task)
        fit = self.node_table.fit_mask(vec, idx)
        if not fit.all():
            _, failures = self.node_table.fits(vec, idx)
            assigned = np.zeros(len(idx), dtype=bool)
            for name, mask in failures:
                new = mask & ~assigned
                if new.any():
                    fe.add(insufficient_reason([name]), Code.Unschedulable, idx[new])
                    assigned |= new
        if fit.all():
            pok, groups = self.predicate_failures(task, idx)
            for st, nodes in groups:
                fe.add(st.reason, st.code, nodes)
            return pok, fe
        live = np.flatnonzero(fit)
        ok = np.zeros(len(idx), dtype=bool)
        if len(live):
            pok, groups = self.predicate_failures(task, idx[live])
            ok[live[pok]] = True
            for st, nodes in groups:
                fe.add(st.reason, st.code, nodes)
        return ok, fe

    def preempt_predicate(self, task: TaskInfo, idx: np.ndarray) -> tuple[np.ndarray, FitErrors]:
        """``PredicateForPreemptAction``: only unresolvable/error statuses reject a node."""
        fe = FitErrors()
        ok = np.ones(len(idx), dtype=bool)
        _pok, groups = self.predicate_failures(task, idx)
        for st, nodes in groups:
            if st.aborts:
                fe.add(st.reason, st.code, nodes)
                ok &= ~np.isin(idx, nodes)
        return ok, fe

    def select_best_node(self, task: TaskInfo, idx: np.ndarray) -> int:
        """Score candidates and pick the best, breaking ties uniformly at random."""
        if len(idx) == 1:
            return int(idx[0])
        scores = self.node_order_scores(task, idx)
        best = scores.max()
        ties = np.flatnonzero(scores == best)
        pick = ties[0] if len(ties) == 1 else ties[int(self.rng.integers(len(ties)))]
        return int(idx[pick])

    def sort_nodes_by_score(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        if len(idx) <= 1:
            return idx
        scores = self.node_order_scores(task, idx)
        order = np.argsort(-scores, kind="stable")
        return idx[order]

    # ------------------------------------------------------------------ events and effects
    def fire_allocate(self, task: TaskInfo) -> bool:
        ok = True
        for eh in self.event_handlers:
            if eh.allocate is not None:
                ev = Event(task)
                eh.allocate(ev)
                if ev.err:
                    ok = False
        return ok

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

    def statement(self) -> Statement:
        return Statement(self)

    def dispatch(self, task: TaskInfo) -> None:
        job = self.jobs.get(task.job)
        if job is not None:
            job.update_task_status(task, TaskStatus.Binding)
        self.binds.append((task, task.node_name))

    def effects_evict(self, task: TaskInfo, reason: str) -> None:
        self.evictions.append((task, reason))
        job = self.jobs.get(task.job)
        if job is not None and job.podgroup is not None:
            self.podgroup_events.setdefault(job.uid, []).append(f"Normal Evict {task.key}: {reason}")

    def allocate(self, task: TaskInfo, node: NodeInfo) -> bool:
        """Non-transactional allocation (upstream ``Session.Allocate``, used by backfill)."""
        job = self.jobs.get(task.job)
        if job is None:
            return False
        job.update_task_status(task, TaskStatus.Allocated)
        node.add_task(task)
        self.fire_allocate(task)
        if self.job_ready(job):
            for t in sorted(job.tasks_in(TaskStatus.Allocated).values(), key=lambda x: x.uid):
                self.dispatch(t)
        return True

    def evict(self, task: TaskInfo, reason: str) -> None:
        """Immediate eviction (upstream ``Session.Evict``, used by shuffle)."""
        job = self.jobs.get(task.job)
        if job is not None:
            job.update_task_status(task, TaskStatus.Releasing)
        node = self.nodes.get(task.node_name)
        if node is not None:
            node.update_task(task)
        self.fire_deallocate(task)
        self.effects_evict(task, reason)

    # ------------------------------------------------------------------ unschedulable memo
    def _failure_signature(self, job: JobInfo) -> tuple[int, int, object]:
        return (self.cache.capacity_epoch, len(job.tasks_in(TaskStatus.Pending)), id(job.podgroup))

    def unchanged_since_failure(self, job: JobInfo) -> bool:
        """Whether ``job`` failed to be placed before and nothing since could let it fit."""
        return job.unschedulable_at is not None and job.unschedulable_at == self._failure_signature(job)

    def record_failure(self, job: JobInfo) -> None:
        job.unschedulable_at = self._failure_signature(job)

    # ------------------------------------------------------------------ iteration helpers
    def queue_of(self, job: JobInfo) -> QueueInfo | None:
        return self.queues.get(job.queue)

    def all_node_indices(self) -> np.ndarray:
        return np.arange(self.node_table.n, dtype=np.int64)



def open_session(
    cache: SchedulerCache,
    config: SchedulerConfiguration,
    plugin_factories: Mapping[str, Callable[[Mapping[str, Any]], Plugin]],
    *,
    now: float,
    rng: np.random.Generator,
    observer: SessionObserver | None = None,
) -> Session:
    """Upstream ``framework.OpenSession``: a session over ``cache`` with its memo, the
    configured plugins instantiated and opened."""
    cache.sessions += 1
    ssn = Session(cache, config, plugin_factories, uid=f"session-{cache.sessions}", now=now, memo=cache.memo,
                  rng=rng, observer=observer)
    ssn.open()
    return ssn


def compare_task(l: TaskInfo, r: TaskInfo) -> bool:
    """Upstream ``helpers.CompareTask``: pod index, then creation time, then UID."""
    if l.index is not None and r.index is not None and l.index != r.index:
        return l.index < r.index
    if l.creation_timestamp != r.creation_timestamp:
        return l.creation_timestamp < r.creation_timestamp
    return l.uid < r.uid


def _restrict_errors(errors: FitErrors, examined: np.ndarray) -> FitErrors:
    out = FitErrors()
    out.err = errors.err
    for g in errors.groups:
        keep = g.nodes[np.isin(g.nodes, examined)]
        out.add(g.reason, g.code, keep)
    return out
