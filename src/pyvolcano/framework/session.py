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

import functools
import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from pyvolcano.api.job import ChangedJobs, JobInfo
from pyvolcano.api.node import NodeInfo, NodeTable
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import ALLOCATED_STATUS, TaskInfo, TaskStatus
from pyvolcano.conf.schema import PluginOption, SchedulerConfiguration
from pyvolcano.diagnosis.diagnose import diagnose_session
from pyvolcano.framework import job_updater
from pyvolcano.framework.interfaces import (
    AskedQuotaExporter,
    DraQuotaExporter,
    EnqueueExplainer,
    Plugin,
    PluginFactory,
    PredicateExplainer,
    QuotaExporter,
    VictimExplainer,
)
from pyvolcano.framework.observer import ON_SESSION_CLOSE, ON_SESSION_OPEN, SessionObserver
from pyvolcano.framework.prebind import BindContexts, PreBinder
from pyvolcano.framework.scheduler_helper import SchedulerHelper
from pyvolcano.framework.statement import Statement
from pyvolcano.framework.topology import SessionTopology

if TYPE_CHECKING:
    from pyvolcano.cache.cache import SchedulerCache
    from pyvolcano.cache.memo import SessionMemo
    from pyvolcano.diagnosis.model import Diagnosis, QueueQuota

__all__ = ["Session", "open_session"]

logger = logging.getLogger(__name__)


class Session(SchedulerHelper):
    """One scheduling cycle. Build with :func:`open_session`; end with :meth:`close`."""

    def __init__(
        self,
        cache: SchedulerCache,
        config: SchedulerConfiguration,
        plugin_factories: Mapping[str, PluginFactory],
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
        # The cache's PodDisruptionBudgets (by "namespace/name") and ResourceQuotas (by namespace),
        # as upstream's PDB lister and ssn.NamespaceInfo: read by the pdb and resourcequota plugins.
        self.pod_disruption_budgets = cache.pod_disruption_budgets
        self.resource_quotas = cache.resource_quotas
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
        # The jobs changed since the last session opened and those this session changes, from
        # the memo as the session opens (None: not tracked, every job is walked).
        self.changed_jobs: ChangedJobs | None = None
        # Why each job left short is blocked (pyvolcano.diagnosis), by job key; filled at close.
        self.diagnoses: dict[str, Diagnosis] = {}
        self.skip_unchanged = cache.options.skip_unchanged_unschedulable
        # The earliest later time at which a plugin's verdict changes with the clock alone
        # (e.g. a cooldown ending): see revisit_at.
        self.revisit: float | None = None
        # The plugins that explain their blocks, by extension point and protocol (see explainers).
        self._explainers: dict[tuple[str, type], list[object]] = {}
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
        self.changed_jobs = self.memo.session_opened(self.jobs)
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
        unsettled = self.memo.unsettled(self.jobs)
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
        job's topology is rebuilt only with its PodGroup, which moves its version)."""
        return [j for j in self.memo.select("session/topology", _has_topology, self.jobs) if j.topology is not None]

    def _reset_fit_errors(self) -> None:
        """Clear the jobs' fit errors and their pending tasks' last transactions (upstream's
        session open), except for jobs skipped as unchanged since their failure, which keep
        the reasons of the attempt being skipped.

        Only a job reported by the change feed since the last reset, or one that reset left
        alone, can have anything to clear: recording fit errors moves the fit version, and the
        statement marks a task's last transaction only as it returns the task to an earlier
        status, which moves the job's version. A job that joins the view is reported too. So
        the other jobs are skipped (``SessionMemo.fit_reset_visit``)."""
        memo = self.memo
        visit = memo.fit_reset_visit(self.jobs)
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
        memo.fit_reset_done(kept)

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
        self.move_task(task, TaskStatus.Releasing)
        self.effects_evict(task, reason)

    def move_task(self, task: TaskInfo, status: TaskStatus) -> None:
        """Move a task that is on its node to ``status``, the three steps an eviction and every
        undo of a statement take: its job's status index, its node's accounting (it leaves the
        node when it returns to Pending) and the plugins' allocate event (back to an allocated
        status) or deallocate event."""
        job = self.jobs.get(task.job)
        if job is not None:
            job.update_task_status(task, status)
        node = self.nodes.get(task.node_name)
        if node is not None:
            if status == TaskStatus.Pending:
                node.remove_task(task)
            else:
                node.update_task(task)
        if status & ALLOCATED_STATUS:
            self.fire_allocate(task)
        else:
            self.fire_deallocate(task)

    def revisit_at(self, when: float) -> None:
        """A plugin's decision would change at ``when`` with nothing else changing (a pod's
        cooldown ends): a loop that runs sessions only after a change runs one then too."""
        if when > self.now and (self.revisit is None or when < self.revisit):
            self.revisit = when

    # ------------------------------------------------------------------ unschedulable memo
    def _failure_signature(self, job: JobInfo) -> tuple[int, int, object]:
        return (self.cache.capacity_epoch, len(job.tasks_in(TaskStatus.Pending)), id(job.podgroup))

    def unchanged_since_failure(self, job: JobInfo) -> bool:
        """Whether ``job`` failed to be placed before and nothing since could let it fit."""
        failed = self.memo.job(job).unschedulable_at
        return failed is not None and failed == self._failure_signature(job)

    def record_failure(self, job: JobInfo) -> None:
        self.memo.job(job).unschedulable_at = self._failure_signature(job)

    def clear_failure(self, job: JobInfo) -> None:
        """``job`` was placed: a later failure is a new one."""
        self.memo.job(job).unschedulable_at = None

    # ------------------------------------------------------------------ what changed
    def changed_jobs_in_order(self) -> Iterable[JobInfo]:
        """The session's jobs this session may have changed, in uid order: those the memo's
        feed reported since the last session opened (a job not among them is as the last
        close left it); every job when the feed is not tracked or overflowed."""
        changed = self.changed_jobs
        if changed is None or changed.overflowed:
            return self.jobs.values()
        jobs = self.jobs
        return [jobs[uid] for uid in sorted(changed) if uid in jobs]

    # ------------------------------------------------------------------ plugin exports
    def queue_quotas(self) -> dict[str, QueueQuota]:
        """Queue name → the quota figures allocate and enqueue check, from the first plugin
        that exports them (:class:`~pyvolcano.framework.interfaces.QuotaExporter`: proportion,
        capacity); empty without one."""
        plugin = self._quota_exporter[0]
        return plugin.quota_snapshot() if plugin is not None else {}

    @functools.cached_property
    def _quota_exporter(self) -> tuple[QuotaExporter | None, AskedQuotaExporter | None]:
        """The first plugin that exports queue quotas, and the same plugin if it also answers
        :meth:`queue_quota_if_asked` (looked up once: protocol checks are slow)."""
        for _opt, plugin in self.plugins:
            if isinstance(plugin, QuotaExporter):
                return plugin, plugin if isinstance(plugin, AskedQuotaExporter) else None
        return None, None

    def queue_quota_if_asked(self, queue: str, extra: Resource) -> QueueQuota | None:
        """The quota ``queue`` would have if it asked ``extra`` more, from the plugin that
        exports :meth:`queue_quotas` (proportion water-fills its deserved shares again with the
        larger request; a quota that does not follow requests, such as capacity's, is the same);
        None without a quota plugin or when it has no quota for the queue."""
        plugin, asked = self._quota_exporter
        if asked is not None:
            return asked.quota_if_asked(queue, extra)
        return plugin.quota_snapshot().get(queue) if plugin is not None else None

    def device_quota_shortfall(self, task: TaskInfo) -> tuple[str, int, int, int] | None:
        """The first per-queue device quota that refuses ``task``, from the plugins that export
        them (:class:`~pyvolcano.framework.interfaces.DraQuotaExporter`: capacity's
        ``deviceclass/<class>``): (class, devices the task asks for, devices the queue holds,
        limit); None when none refuses it."""
        for _opt, plugin in self.plugins:
            if isinstance(plugin, DraQuotaExporter):
                got = plugin.dra_shortfall(task)
                if got is not None:
                    return got
        return None

    def enqueue_explainers(self) -> list[EnqueueExplainer]:
        """The plugins enabled for JobEnqueueable that say why their vote kept a PodGroup Pending
        (:class:`~pyvolcano.framework.interfaces.EnqueueExplainer`: resourcequota, extender), in
        tier order."""
        return self._explaining("job_enqueueable", EnqueueExplainer)  # type: ignore[return-value]

    def predicate_explainers(self) -> list[PredicateExplainer]:
        """The plugins enabled for Predicate that say why they refused a task's nodes
        (:class:`~pyvolcano.framework.interfaces.PredicateExplainer`: nodegroup, numa-aware, tdm,
        usage, extender), in tier order."""
        return self._explaining("predicate", PredicateExplainer)  # type: ignore[return-value]

    def victim_explainers(self, kind: str) -> list[VictimExplainer]:
        """The plugins enabled for ``kind`` (``preemptable`` or ``reclaimable``) whose victim
        filter the diagnosis replays (:class:`~pyvolcano.framework.interfaces.VictimExplainer`:
        pdb, cdp), in tier order."""
        return self._explaining(kind, VictimExplainer)  # type: ignore[return-value]

    def _explaining(self, kind: str, protocol: type) -> list[object]:
        """The plugins enabled for ``kind`` that implement ``protocol``, computed once per session."""
        got = self._explainers.get((kind, protocol))
        if got is None:
            by_name: dict[str, object] = {}
            for opt, plugin in self.plugins:
                by_name.setdefault(opt.name, plugin)
            got = self._explainers[(kind, protocol)] = [
                p for name in dict.fromkeys(self.enabled_plugins(kind))
                if (p := by_name.get(name)) is not None and isinstance(p, protocol)]
        return got

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
    plugin_factories: Mapping[str, PluginFactory],
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
