"""Session: one scheduling cycle over the cache's state (upstream framework/session.go, framework.go).

Design. A session does not deep-copy the cluster. It works on the cache's job, task and node
state directly and keeps every tentative change revocable: operations go through
:class:`~pyvolcano.framework.statement.Statement`, and at close everything that was not
committed (pipelined tasks, allocations of gangs that never became ready, statements left
open) is undone; the committed effects (binds, evictions) stay listed for the scheduling
cycle (:mod:`pyvolcano.runtime.cycle`) to apply. Lifecycle: :func:`open_session` builds a
session with the cache's :class:`~pyvolcano.cache.memo.SessionMemo` and opens the plugins,
:meth:`Session.close` closes them and runs the job updater. Plugins are instantiated fresh
for every session and register callbacks (:mod:`pyvolcano.framework.session_plugins`); node
selection lives in :mod:`pyvolcano.framework.scheduler_helper`.

Node work is vectorised: predicates and node-order callbacks take a task and an array of node
indices and return failure masks or score arrays over the columnar
:class:`~pyvolcano.api.node.NodeTable`.

Invariants: the core reads no wall clock and no global randomness (``now`` and ``rng`` come
from the caller); iteration orders are stable (sorted by UID / node order), so the same
inputs and seed give the same decisions.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from pyvolcano.api.job import ChangedJobs, JobInfo
from pyvolcano.api.node import NodeInfo, NodeTable
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import TaskInfo, TaskStatus
from pyvolcano.conf.schema import PluginOption, SchedulerConfiguration
from pyvolcano.diagnosis.diagnose import diagnose_session
from pyvolcano.framework import job_updater
from pyvolcano.framework.interfaces import Plugin
from pyvolcano.framework.observer import ON_SESSION_CLOSE, ON_SESSION_OPEN, SessionObserver
from pyvolcano.framework.prebind import BindContexts, PreBinder
from pyvolcano.framework.scheduler_helper import SchedulerHelper
from pyvolcano.framework.statement import Statement
from pyvolcano.framework.topology import SessionTopology

if TYPE_CHECKING:
    from pyvolcano.cache.cache import SchedulerCache
    from pyvolcano.cache.memo import SessionMemo
    from pyvolcano.diagnosis.model import Diagnosis

__all__ = ["Session", "open_session"]

logger = logging.getLogger(__name__)


class Session(SchedulerHelper):
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
        # The queues of those jobs, each once, in the order a walk over self.jobs meets them.
        self.job_queues: tuple[str, ...] = cache.session_job_queues()
        self.total_resource = self._total_resource()
        # HyperNodes and the jobs' effective network-topology constraints (framework/topology.py).
        self.topology = SessionTopology(cache.hypernode_tree)
        self.topology.open(self._jobs_with_topology())
        self.enabled_actions = set(config.actions)
        self._init_plugin_tables()
        self._open_statements: list[Statement] = []
        self.plugins: list[tuple[PluginOption, Plugin]] = []
        self.binds: list[tuple[TaskInfo, str]] = []
        # Annotations plugins attach to a task's bind request (e.g. volcano.sh/gpu-index), set
        # in their allocate event handler and cleared in deallocate.
        self.bind_annotations: dict[str, dict[str, str]] = {}
        # Pre-binders and the tasks' bind-context extensions (framework/prebind.py), set in
        # the plugins' allocate event handlers and dropped in deallocate.
        self.bind_contexts = BindContexts()
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
        self._reset_fit_errors()
        for tier in config.tiers:
            for opt in tier.plugins:
                factory = plugin_factories[opt.name]
                plugin = factory(opt.arguments)
                self.plugins.append((opt, plugin))

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

    def _jobs_with_topology(self) -> list[JobInfo]:
        """The session's jobs with a JobTopology, in uid order: kept by the change feed (a
        job's topology is rebuilt only with its PodGroup, which moves its version); every job
        is walked with ``SessionMemo.track_session_changes`` False."""
        if not self.memo.track_session_changes:
            return [j for j in self.jobs.values() if j.topology is not None]
        return self.memo.job_filter("session/topology", _has_topology).select(self.jobs)

    def _reset_fit_errors(self) -> None:
        """Clear the jobs' fit errors and their pending tasks' last transactions (upstream's
        session open), except for jobs skipped as unchanged since their failure, which keep
        the reasons of the attempt being skipped.

        Only a job reported by the change feed since the last reset, or one that reset left
        alone, can have anything to clear: recording fit errors moves the fit version, and the
        statement marks a task's last transaction only as it returns the task to an earlier
        status, which moves the job's version. A job that joins the view is reported too. So
        the other jobs are skipped (``SessionMemo.feed_fit_reset = False``: every job)."""
        memo = self.memo
        reported = memo.fit_reset_changes.take()
        visit: Iterable[JobInfo]
        if not memo.feed_fit_reset or reported is None or not memo.fit_reset_primed:
            visit = self.jobs.values()
            memo.fit_reset_primed = memo.feed_fit_reset
        else:
            jobs = self.jobs
            visit = [jobs[uid] for uid in sorted(memo.fit_reset_kept.union(reported)) if uid in jobs]
        kept: set[str] = set()
        skip_unchanged = self.skip_unchanged
        for job in visit:
            if skip_unchanged and self.unchanged_since_failure(job):
                kept.add(job.uid)
                continue  # keep the reasons of the attempt that is being skipped
            job.reset_fit_err()
            if not job.count(TaskStatus.Pending):
                continue
            for t in job.tasks_in(TaskStatus.Pending).values():
                if t.last_transaction is not None:
                    t.last_transaction = None
                    job.bump_fit_version()
        memo.fit_reset_kept = kept

    def _total_resource(self) -> Resource:
        t = self.node_table
        total = Resource()
        for d, name in enumerate(t.dims):
            col = t.allocatable[d][: t.n]
            if name in ("cpu", "memory") or t.declared[d][: t.n].any():
                total.set(name, float(col.sum()))
        return total

    # ------------------------------------------------------------------ effects
    def add_pre_binder(self, binder: PreBinder) -> None:
        """Register a plugin's pre-bind step (upstream ``RegisterBinder`` of a ``PreBinder``)."""
        self.bind_contexts.register(binder)

    def statement(self) -> Statement:
        return Statement(self)

    def dispatch(self, task: TaskInfo) -> None:
        job = self.jobs.get(task.job)
        if job is not None:
            job.update_task_status(task, TaskStatus.Binding)
        self.binds.append((task, task.node_name))

    def dispatch_many(self, tasks: list[TaskInfo]) -> None:
        """:meth:`dispatch` of each of ``tasks`` in order: replicas of one template of one job,
        moved to Binding at once (``JobInfo.update_tasks_status``)."""
        job = self.jobs.get(tasks[0].job)
        if job is not None:
            job.update_tasks_status(tasks, TaskStatus.Binding)
        self.binds.extend((task, task.node_name) for task in tasks)

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


def _has_topology(job: JobInfo) -> bool:
    return job.topology is not None


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
