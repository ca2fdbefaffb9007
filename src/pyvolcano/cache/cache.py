"""SchedulerCache: authoritative scheduler state built from cluster objects (pkg/scheduler/cache).

The cache turns Pods, Nodes, PodGroups, Queues and PriorityClasses into the scheduler's
domain state (``JobInfo``/``TaskInfo``/``NodeInfo``/``QueueInfo`` plus the columnar
``NodeTable``) once, and keeps it up to date as objects change. Sessions work on this state
in place and hand back their effects; :meth:`run_session` applies them: a bind sets the pod's
``nodeName`` (the task becomes Bound), an eviction deletes the pod, and each PodGroup gets
the status computed at close.

Tracked pods follow upstream: a pod is scheduled by us if its ``schedulerName`` is one of
``scheduler_names``; any pod already assigned to a node consumes that node's resources.
A pod's job is ``<namespace>/<scheduling.k8s.io/group-name>``; pods without the annotation are
only counted on nodes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyvolcano.api.job import JobChanges, JobInfo
from pyvolcano.api.manifest import ClusterObjects
from pyvolcano.api.node import NodeInfo, NodeTable
from pyvolcano.api.objects import Node, Pod, PodGroup, PriorityClass, Queue
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import COMPLETED_STATUS, TaskInfo, TaskStatus
from pyvolcano.conf.schema import SchedulerConfiguration
from pyvolcano.diagnosis.model import Diagnosis
from pyvolcano.framework.interfaces import Action, Plugin
from pyvolcano.framework.job_updater import close_session
from pyvolcano.framework.observer import SessionObserver
from pyvolcano.framework.session import Session

__all__ = ["BindRequest", "SchedulerCache", "SchedulerOptions", "SessionResult"]


def _pg_status_key(pg: PodGroup | None) -> tuple[Any, ...]:
    if pg is None:
        return ()
    return (pg.phase, pg.running, pg.succeeded, pg.failed,
            tuple((c.type, c.status, c.reason, c.message) for c in pg.conditions))

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SchedulerOptions:
    """Upstream scheduler command-line options that change decisions."""

    scheduler_names: tuple[str, ...] = ("volcano",)
    default_queue: str = "default"
    min_nodes_to_find: int = 100
    min_percentage_of_nodes_to_find: int = 5
    percentage_of_nodes_to_find: int = 0
    # pyvolcano extension (upstream vol#5551): allocate skips a gang that could not be placed
    # when nothing that could let it fit has changed since (no resources released, no node or
    # queue change, the job itself unchanged). Off by default to keep upstream's behaviour.
    skip_unchanged_unschedulable: bool = False
    # allocate places the identical replicas of a task as one batch when every predicate and
    # scorer is node-local for them (actions/replica_batch.py); the decisions are those of
    # the per-pod path, which False forces (kept for the equivalence tests and benchmarks).
    batch_replicas: bool = True
    # pyvolcano extension: a pending diagnosis for every job left short at session close
    # (pyvolcano.diagnosis), with its reason code and hint on the Unschedulable condition.
    diagnose: bool = True


@dataclass(slots=True)
class BindRequest:
    namespace: str
    name: str
    node: str
    annotations: dict[str, str]
    uid: str = ""


@dataclass(slots=True)
class SessionResult:
    binds: list[tuple[str, str]] = field(default_factory=list)
    evictions: list[str] = field(default_factory=list)
    pipelined: dict[str, str] = field(default_factory=dict)
    podgroup_phases: dict[str, str] = field(default_factory=dict)
    # What a backend must write: bind requests, evictions (namespace, name, reason), and the
    # PodGroups whose status the session changed.
    bind_requests: list[BindRequest] = field(default_factory=list)
    evict_requests: list[tuple[str, str, str]] = field(default_factory=list)
    changed_podgroups: list[PodGroup] = field(default_factory=list)
    nominated: dict[str, str] = field(default_factory=dict)
    # Deserved resources per queue, from plugins that compute it (proportion, capacity).
    deserved: dict[str, Resource] = field(default_factory=dict)
    # Why each job left short is blocked, by job key (pyvolcano.diagnosis).
    diagnoses: dict[str, Diagnosis] = field(default_factory=dict)


class SchedulerCache:
    # The per-session passes visit only the jobs the change feed reported (False: every job,
    # the from-scratch form the equivalence tests compare with).
    track_session_changes = True

    def __init__(self, options: SchedulerOptions | None = None):
        self.options = options or SchedulerOptions()
        self.node_table = NodeTable()
        self.nodes: dict[str, NodeInfo] = {}
        self.node_list: list[NodeInfo] = []
        self.jobs: dict[str, JobInfo] = {}
        # Jobs that have a PodGroup: the only ones a session looks at.
        self.pg_jobs: dict[str, JobInfo] = {}
        self._pg_jobs_sorted: list[tuple[str, JobInfo]] | None = None
        # The jobs a session visits (session_jobs), kept until the set of PodGroups, their
        # queues or the set of queues changes.
        self._session_view: dict[str, JobInfo] | None = None
        self.queues: dict[str, QueueInfo] = {}
        self.priority_classes: dict[str, PriorityClass] = {}
        self.pods: dict[str, Pod] = {}
        self.tasks: dict[str, TaskInfo] = {}
        self.last_processed_node_index = 0
        # Bumped whenever a node's labels, taints or schedulability change, so per-node
        # derived data (e.g. predicate signatures) can be rebuilt.
        self.node_generation = 0
        # With True (one-shot mode) an eviction deletes the pod at once; otherwise the pod is
        # marked terminating and the backend's delete event removes it later.
        self.evictions_delete_immediately = True
        # Per-cache memo for plugins' derived data that outlives a session (keyed by plugin).
        self.plugin_memo: dict[str, Any] = {}
        # Bumped by external changes that can make an unschedulable job fit: resources
        # released (pod finished or deleted), node or queue changes, a job leaving.
        self.capacity_epoch = 0
        # Allocate-predicate feasibility masks shared by equivalent tasks (Session.feasible_nodes).
        self.feasibility: dict[object, tuple[np.ndarray, int]] = {}
        # Node-order scores of node-local scorers, per (plugin, task key) (Session.node_order_scores).
        self.score_cache: dict[object, tuple[np.ndarray, np.ndarray, int]] = {}
        self.sessions = 0
        # Jobs that lost finished pods since the last session: they matter only while the
        # job still has its PodGroup (see take_status_changes).
        self.status_only_changes: set[str] = set()
        # Every job's changes (api/job.py); the per-session passes subscribe to it.
        self.job_changes = JobChanges()
        # Jobs changed since the current (or last) session started: status keys to take at
        # the start, pipelined and tentative tasks at the end (see run_session).
        self._session_changes = self.job_changes.subscribe()
        # Jobs changed since the last session close (framework/job_updater.unsettled_jobs).
        self.close_changes = self.job_changes.subscribe()

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_objects(cls, objs: ClusterObjects, options: SchedulerOptions | None = None) -> SchedulerCache:
        cache = cls(options)
        for pc in objs.priority_classes:
            cache.priority_classes[pc.name] = pc
        for q in objs.queues:
            cache.add_queue(q)
        for n in objs.nodes:
            cache.add_node(n)
        for pg in sorted(objs.podgroups, key=lambda p: (p.namespace, p.name)):
            cache.add_podgroup(pg)
        referenced = {cache.jobs[k].queue for k in cache.jobs}
        if cache.options.default_queue in referenced and cache.options.default_queue not in cache.queues:
            # Upstream's scheduler creates the default queue at start-up.
            cache.add_queue(Queue(name=cache.options.default_queue, uid=cache.options.default_queue))
        for p in sorted(objs.pods, key=lambda p: (p.namespace, p.name)):
            cache.add_pod(p)
        return cache

    def add_queue(self, q: Queue) -> None:
        if q.name not in self.queues:
            self._session_view = None
            self._touch_queue_jobs(q.name)  # they join the sessions' view
        self.queues[q.name] = QueueInfo(q)

    def add_node(self, n: Node) -> NodeInfo:
        info = NodeInfo(n, self.node_table, Resource.from_list(n.allocatable))
        self.nodes[n.name] = info
        self.node_list.append(info)
        return info

    def add_podgroup(self, pg: PodGroup) -> JobInfo:
        uid = f"{pg.namespace}/{pg.name}"
        job = self.jobs.get(uid)
        if job is None:
            job = self._new_job(uid)
        queue = job.queue
        job.set_podgroup(pg, self.options.default_queue)
        job.priority = self._job_priority(pg)
        if uid not in self.pg_jobs:
            self.pg_jobs[uid] = job
            self._pg_jobs_sorted = None
            self._session_view = None
        elif job.queue != queue:
            self._session_view = None
        return job

    def _new_job(self, uid: str) -> JobInfo:
        job = self.jobs[uid] = JobInfo(uid)
        job.changes = self.job_changes
        return job

    def sorted_pg_jobs(self) -> list[tuple[str, JobInfo]]:
        """``pg_jobs`` in uid order (the order sessions visit jobs in), kept between changes."""
        if self._pg_jobs_sorted is None:
            self._pg_jobs_sorted = sorted(self.pg_jobs.items())
        return self._pg_jobs_sorted

    def session_jobs(self) -> dict[str, JobInfo]:
        """The jobs a session visits: those with a PodGroup whose queue exists, in uid order
        (a new dict on every call)."""
        view = self._session_view
        if view is None:
            queues = self.queues
            view = self._session_view = {uid: j for uid, j in self.sorted_pg_jobs() if j.queue in queues}
        return dict(view)

    def _job_priority(self, pg: PodGroup) -> int:
        if pg.priority_class_name and pg.priority_class_name in self.priority_classes:
            return self.priority_classes[pg.priority_class_name].value
        for pc in self.priority_classes.values():
            if pc.global_default:
                return pc.value
        return 0

    def tracks(self, pod: Pod) -> bool:
        return pod.scheduler_name in self.options.scheduler_names or bool(pod.node_name)

    def add_pod(self, pod: Pod) -> TaskInfo | None:
        if not self.tracks(pod):
            return None
        if pod.priority is None and pod.priority_class_name in self.priority_classes:
            pod.priority = self.priority_classes[pod.priority_class_name].value
        task = TaskInfo(pod)
        self.pods[pod.uid] = pod
        self.tasks[pod.uid] = task
        if task.job:
            job = self.jobs.get(task.job)
            if job is None:
                job = self._new_job(task.job)
            job.add_task(task)
        if pod.node_name and task.status not in (TaskStatus.Succeeded, TaskStatus.Failed):
            node = self.nodes.get(pod.node_name)
            if node is not None:
                node.add_task(task)
        return task

    def delete_pod(self, uid: str) -> None:
        task = self.tasks.get(uid)
        # A finished pod holds nothing and is in no queue's request: removing it frees nothing.
        if task is None or not task.status & COMPLETED_STATUS:
            self.capacity_epoch += 1
        self._remove_task(uid)

    def _remove_task(self, uid: str) -> None:
        task = self.tasks.pop(uid, None)
        self.pods.pop(uid, None)
        if task is None:
            return
        node = self.nodes.get(task.node_name)
        if node is not None:
            node.remove_task(task)
        job = self.jobs.get(task.job)
        if job is not None:
            job.delete_task(task)
            if not job.tasks and job.podgroup is None:
                del self.jobs[job.uid]

    # ------------------------------------------------------------------ effects
    def bind(self, task: TaskInfo, node_name: str, annotations: Mapping[str, str] | None = None) -> None:
        """Apply a bind: the pod gets ``nodeName`` (and the bind annotations); the task becomes Bound."""
        task.pod.node_name = node_name
        if annotations:
            task.pod.annotations.update(annotations)
        job = self.jobs.get(task.job)
        if job is not None:
            job.update_task_status(task, TaskStatus.Bound)
        else:
            task.status = TaskStatus.Bound
        node = self.nodes.get(node_name)
        if node is not None and task.uid in node.task_status:
            node.task_status[task.uid] = TaskStatus.Bound

    def evict(self, task: TaskInfo, now: float = 0.0) -> None:
        """Apply an eviction: delete the pod (one-shot mode) or mark it terminating."""
        if self.evictions_delete_immediately:
            self.delete_pod(task.uid)
            return
        task.pod.deletion_timestamp = now
        self.upsert_pod(task.pod)

    # ------------------------------------------------------------------ sessions
    def open_session(
        self,
        config: SchedulerConfiguration,
        plugins: Mapping[str, Callable[[Mapping[str, Any]], Plugin]],
        *,
        now: float,
        rng: np.random.Generator,
        observer: SessionObserver | None = None,
    ) -> Session:
        self.sessions += 1
        ssn = Session(self, config, plugins, uid=f"session-{self.sessions}", now=now, rng=rng, observer=observer)
        ssn.open()
        return ssn

    def take_status_changes(self) -> bool:
        """Whether a job that lost finished pods still has its PodGroup (its status changes)."""
        touched = self.status_only_changes
        if not touched:
            return False
        still = any(uid in self.pg_jobs for uid in touched)
        touched.clear()
        return still

    def run_session(
        self,
        config: SchedulerConfiguration,
        plugins: Mapping[str, Callable[[Mapping[str, Any]], Plugin]],
        actions: Mapping[str, Callable[[Mapping[str, Any]], Action]],
        *,
        now: float,
        rng: np.random.Generator,
        observer: SessionObserver | None = None,
    ) -> SessionResult:
        """One session; ``observer`` (optional) times its phases for metrics."""
        self.status_only_changes.clear()
        t0 = observer.timer() if observer is not None else 0.0
        ssn = self.open_session(config, plugins, now=now, rng=rng, observer=observer)
        if observer is not None:
            observer.session_opened(observer.timer() - t0)
        changed = self._session_changes
        # Only a job the change feed reported can lack its status key (set_podgroup clears it).
        reported = changed.take()
        if reported is None or not self.track_session_changes:
            visit: Iterable[JobInfo] = ssn.jobs.values()
        else:
            visit = (ssn.jobs[uid] for uid in reported if uid in ssn.jobs)
        for job in visit:
            if job.status_key is None and job.podgroup is not None:
                job.status_key = _pg_status_key(job.podgroup)
        # From here on: the jobs this session changes.
        ssn.changed_jobs = changed if self.track_session_changes else None
        for name in config.actions:
            action = actions[name](config.action_arguments(name))
            if observer is None:
                action.execute(ssn)
            else:
                t0 = observer.timer()
                action.execute(ssn)
                observer.action_done(name, observer.timer() - t0)
        result = SessionResult()
        # Only a job this session changed can hold pipelined tasks (the last close reverted them).
        tracked = ssn.changed_jobs
        if tracked is not None and tracked.overflowed:
            tracked = None
        for job in ssn.jobs.values() if tracked is None else (ssn.jobs[u] for u in sorted(tracked) if u in ssn.jobs):
            if job.count(TaskStatus.Pipelined):
                for t in job.tasks_in(TaskStatus.Pipelined).values():
                    result.pipelined[t.key] = t.node_name
        for _opt, plugin in ssn.plugins:
            snapshot = getattr(plugin, "deserved_snapshot", None)
            if snapshot is not None and not result.deserved:
                result.deserved = snapshot()
        if observer is not None:
            observer.session_closing(ssn)
        close_session(ssn)
        result.nominated = dict(ssn.nominated)
        result.diagnoses = ssn.diagnoses
        for task, node_name in ssn.binds:
            if task.status == TaskStatus.Binding:
                ann = ssn.bind_annotations.get(task.uid) or {}
                self.bind(task, node_name, ann)
                result.binds.append((task.key, node_name))
                result.bind_requests.append(BindRequest(task.namespace, task.name, node_name, dict(ann), task.uid))
        for task, reason in ssn.evictions:
            result.evictions.append(task.key)
            result.evict_requests.append((task.namespace, task.name, reason))
            self.evict(task, now)
        result.podgroup_phases = {uid: job.podgroup.phase for uid, job in ssn.jobs.items()
                                  if job.podgroup is not None}
        for uid in ssn.unsettled:  # close left the others' status as it was
            job = ssn.jobs[uid]
            if job.podgroup is not None:
                key = _pg_status_key(job.podgroup)
                if key != job.status_key:
                    job.status_key = key
                    result.changed_podgroups.append(job.podgroup)
        return result

    # ------------------------------------------------------------------ incremental updates
    def upsert_node(self, n: Node) -> NodeInfo:
        self.capacity_epoch += 1
        info = self.nodes.get(n.name)
        if info is None:
            self.node_generation += 1
            return self.add_node(n)
        if (n.labels != info.labels or n.taints != info.taints or n.unschedulable != info.unschedulable):
            self.node_generation += 1
        info.node = n
        info.labels = n.labels
        info.taints = n.taints
        info.unschedulable = n.unschedulable
        new_alloc = Resource.from_list(n.allocatable)
        if new_alloc != info.allocatable:
            self.node_table.set_allocatable(info.index, new_alloc)
        else:
            self.node_table.bump(info.index)
        return info

    def upsert_queue(self, q: Queue) -> None:
        self.capacity_epoch += 1
        self.add_queue(q)

    def delete_queue(self, name: str) -> None:
        self.capacity_epoch += 1
        if self.queues.pop(name, None) is not None:
            self._session_view = None
            self._touch_queue_jobs(name)  # they leave the sessions' view

    def _touch_queue_jobs(self, queue: str) -> None:
        for uid, job in self.pg_jobs.items():
            if job.queue == queue:
                self.job_changes.touch(uid)

    def upsert_priority_class(self, pc: PriorityClass) -> None:
        self.priority_classes[pc.name] = pc

    def delete_podgroup(self, namespace: str, name: str, *, releases: bool = True) -> None:
        """Forget a PodGroup; ``releases=False`` when nothing it held or summed goes with it."""
        if releases:
            self.capacity_epoch += 1
        uid = f"{namespace}/{name}"
        job = self.jobs.get(uid)
        if job is None:
            return
        job.podgroup = None
        if self.pg_jobs.pop(uid, None) is not None:
            self._pg_jobs_sorted = None
            self._session_view = None
            self.job_changes.touch(uid)
        if not job.tasks:
            del self.jobs[uid]

    def upsert_pod(self, pod: Pod) -> TaskInfo | None:
        old = self.tasks.get(pod.uid)
        if old is not None:
            # Upstream (cache/event_handlers.go): an update without nodeName is ignored while
            # the cached task holds an in-flight placement.
            if not pod.node_name and old.status in (TaskStatus.Allocated, TaskStatus.Binding, TaskStatus.Pipelined):
                return old
            self._remove_task(pod.uid)
            new = self.add_pod(pod)
            if new is None or new.status in (TaskStatus.Succeeded, TaskStatus.Failed, TaskStatus.Releasing,
                                             TaskStatus.Unknown) or new.node_name != old.node_name:
                self.capacity_epoch += 1
            return new
        return self.add_pod(pod)

    def podgroups(self) -> Iterable[PodGroup]:
        for job in self.jobs.values():
            if job.podgroup is not None:
                yield job.podgroup
