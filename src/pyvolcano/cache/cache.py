"""SchedulerCache: authoritative scheduler state built from cluster objects (pkg/scheduler/cache).

The cache turns Pods, Nodes, PodGroups, Queues, PriorityClasses and HyperNodes into the
scheduler's domain state (``JobInfo``/``TaskInfo``/``NodeInfo``/``QueueInfo``, the columnar
``NodeTable`` and the :class:`~pyvolcano.api.hypernode_tree.HyperNodeTree`) once, and keeps it up
to date as objects change: the tree follows every HyperNode change and every node added, deleted
or relabelled (a ``regexMatch`` or ``labelMatch`` member may select it or stop selecting it).
Sessions work on this state in place; the scheduling cycle (:mod:`pyvolcano.runtime.cycle`)
applies their committed effects here: a bind sets the pod's ``nodeName`` (the task becomes
Bound), an eviction deletes the pod (or marks it terminating). What sessions keep from one to
the next lives in one :class:`~pyvolcano.cache.memo.SessionMemo` the cache owns and hands to
each session.
The cache knows nothing of the framework: it imports no session, plugin or action.

Tracked pods follow upstream: a pod is scheduled by us if its ``schedulerName`` is one of
``scheduler_names``; any pod already assigned to a node consumes that node's resources.
A pod's job is ``<namespace>/<scheduling.k8s.io/group-name>``; pods without the annotation are
only counted on nodes.

PodDisruptionBudgets and ResourceQuotas are kept as read (upstream's PDB lister and
``NamespaceInfo``): by ``namespace/name``, and quotas by namespace, for the pdb and
resourcequota plugins.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pyvolcano.api.hypernode import HyperNode
from pyvolcano.api.hypernode_tree import HyperNodeTree
from pyvolcano.api.job import JobChanges, JobInfo
from pyvolcano.api.manifest import ClusterObjects
from pyvolcano.api.node import NodeInfo, NodeTable
from pyvolcano.api.node_usage import NodeUsage
from pyvolcano.api.numatopology import NumaSchedulerInfo, Numatopology, PodMeta, ResNumaSets
from pyvolcano.api.objects import Node, Pod, PodDisruptionBudget, PodGroup, PriorityClass, Queue, ResourceQuota
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import COMPLETED_STATUS, TaskInfo, TaskStatus
from pyvolcano.cache.dra import DraState
from pyvolcano.cache.memo import SessionMemo
from pyvolcano.cache.volumes import VolumeState

__all__ = ["SchedulerCache", "SchedulerOptions"]


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
    # scorer is node-local for them (actions/allocate/replica_batch.py); the decisions are those of
    # the per-pod path, which False forces (kept for the equivalence tests and benchmarks).
    batch_replicas: bool = True
    # Within allocate's batched placement, consecutive replicas of one task template
    # (api/task_template.py) are taken as a run with one equivalence key, and each of the
    # following batch forms replaces its per-pod call for the run (actions/allocate/tasks.py);
    # each False forces the per-pod form (for the equivalence tests and benchmarks).
    batch_templates: bool = True
    # The statement allocates a run with one call: the job's aggregates moved once, one
    # batched allocate event per plugin; commit moves it to Binding at once (framework/statement.py).
    batch_statement: bool = True
    # The queue-quota check (Allocatable) counts how many replicas of the run fit, once.
    batch_quota: bool = True
    # JobReady is asked only once the gang's count can make it true.
    batch_ready: bool = True
    # allocate's HyperNode search dry-runs candidates best-score-first and stops once no
    # untried candidate can score as high as the best placement found (the scores do not depend
    # on the dry runs; actions/allocate/topology.py). The chosen HyperNode is the one the
    # exhaustive search picks, up to random tie-breaks; False forces the exhaustive search.
    bounded_hypernode_search: bool = True
    # pyvolcano extension: a pending diagnosis for every job left short at session close
    # (pyvolcano.diagnosis), with its reason code and hint on the Unschedulable condition.
    diagnose: bool = True
    # The scheduler's local time zone, which upstream reads from the process (tdm's daily
    # windows): "UTC", an IANA name or "+HH:MM". The live scheduler passes its own.
    time_zone: str = "UTC"
    # Upstream --ignored-provisioners: claims of classes with these provisioners are not counted
    # against the nodes' CSI attach limits (host-path provisioners, which publish no CSINode drivers).
    ignored_provisioners: tuple[str, ...] = ()


_IN_FLIGHT = TaskStatus.Allocated | TaskStatus.Binding | TaskStatus.Bound | TaskStatus.Pipelined


class SchedulerCache:
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
        # The queues of the view's jobs, in the order of their first job (uid order), kept
        # with the view.
        self._view_queues: tuple[str, ...] | None = None
        self.queues: dict[str, QueueInfo] = {}
        self.priority_classes: dict[str, PriorityClass] = {}
        self.pods: dict[str, Pod] = {}
        self.tasks: dict[str, TaskInfo] = {}
        # HyperNodes as written, and the tree resolved over the live nodes (deleted nodes,
        # which keep their NodeInfo and row, are not in it).
        self.hypernodes: dict[str, HyperNode] = {}
        self.hypernode_tree = HyperNodeTree()
        # PodDisruptionBudgets by "namespace/name"; ResourceQuotas by namespace, then name.
        self.pod_disruption_budgets: dict[str, PodDisruptionBudget] = {}
        self.resource_quotas: dict[str, dict[str, ResourceQuota]] = {}
        # Numatopologies by node name (upstream NodeInfo.NumaInfo) and, per node, the CPUs the
        # numa-aware plugin gave pods it placed there that the node's exporter has not reported
        # yet (upstream NodeInfo.UnassignedNumaPods); see numa_scheduler_infos.
        self.numatopologies: dict[str, Numatopology] = {}
        self.unassigned_numa: dict[str, dict[PodMeta, ResNumaSets]] = {}
        # Each node's measured load, as the metrics collector last set it (upstream
        # NodeInfo.ResourceUsage), and a counter bumped by every collection.
        self.node_usage: dict[str, NodeUsage] = {}
        self.usage_version = 0
        # StorageClasses, PVs, PVCs and the CSI objects (cache/volumes.py), and how many of the
        # tracked pods mount claims (volume binding runs only when there are claims or such pods).
        self.volumes = VolumeState()
        self.pods_with_claims = 0
        # Bumped whenever a node's labels, taints or schedulability change, so per-node
        # derived data (e.g. predicate signatures) can be rebuilt.
        self.node_generation = 0
        # With True (one-shot mode) an eviction deletes the pod at once; otherwise the pod is
        # marked terminating and the backend's delete event removes it later.
        self.evictions_delete_immediately = True
        # Bumped by external changes that can make an unschedulable job fit: resources
        # released (pod finished or deleted), node or queue changes, a job leaving.
        self.capacity_epoch = 0
        # Sessions opened on this cache (they are named session-1, session-2, ...).
        self.sessions = 0
        # Jobs that lost finished pods since the last session: they matter only while the
        # job still has its PodGroup (see take_status_changes).
        self.status_only_changes: set[str] = set()
        # Every job's changes (api/job.py); the per-session passes subscribe to it.
        self.job_changes = JobChanges()
        # What sessions keep from one to the next and what changed (cache/memo.py: every
        # shortcut, its keys and its switch), handed to every session.
        self.memo = SessionMemo(self.job_changes, self.jobs)
        # Dynamic resource allocation: DeviceClasses, ResourceSlices, ResourceClaims and the
        # devices in use (cache/dra.py).
        self.dra = DraState()

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_objects(cls, objs: ClusterObjects, options: SchedulerOptions | None = None) -> SchedulerCache:
        cache = cls(options)
        for pc in objs.priority_classes:
            cache.priority_classes[pc.name] = pc
        for q in objs.queues:
            cache.add_queue(q)
        for n in objs.nodes:
            cache._add_node_info(n)
        v = cache.volumes
        for sc in objs.storage_classes:
            v.upsert_class(sc)
        for pv in objs.persistent_volumes:
            v.upsert_pv(pv)
        for pvc in objs.persistent_volume_claims:
            v.upsert_pvc(pvc)
        for cn in objs.csi_nodes:
            v.upsert_csi_node(cn)
        for drv in objs.csi_drivers:
            v.upsert_csi_driver(drv)
        for cap in objs.csi_storage_capacities:
            v.upsert_capacity(cap)
        cache.hypernodes = {hn.name: hn for hn in objs.hypernodes}
        cache.numatopologies = {nt.name: nt for nt in objs.numatopologies}
        cache.hypernode_tree = HyperNodeTree.build(
            cache.hypernodes.values(), ((info.name, info.labels, info.index) for info in cache.node_list))
        for pdb in objs.pod_disruption_budgets:
            cache.pod_disruption_budgets[pdb.key] = pdb
        for rq in objs.resource_quotas:
            cache.resource_quotas.setdefault(rq.namespace, {})[rq.name] = rq
        for device_class in objs.device_classes:
            cache.dra.upsert_class(device_class)
        for rs in objs.resource_slices:
            cache.dra.upsert_slice(rs)
        for claim in objs.resource_claims:
            cache.dra.upsert_claim(claim)
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
        info = self._add_node_info(n)
        self.hypernode_tree.set_node(n.name, n.labels, info.index)
        return info

    def _add_node_info(self, n: Node) -> NodeInfo:
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
        self.memo.podgroup_replaced(uid)
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
        return dict(self._view())

    def _view(self) -> dict[str, JobInfo]:
        view = self._session_view
        if view is None:
            queues = self.queues
            view = self._session_view = {uid: j for uid, j in self.sorted_pg_jobs() if j.queue in queues}
            self._view_queues = None
        return view

    def session_job_queues(self) -> tuple[str, ...]:
        """The queues of the jobs :meth:`session_jobs` returns, each once, in the order of its
        first job (the order a walk over those jobs meets them)."""
        view = self._view()
        got = self._view_queues
        if got is None:
            got = self._view_queues = tuple(dict.fromkeys(j.queue for j in view.values()))
        return got

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
        if pod.claims:
            self.pods_with_claims += 1
        if pod.resource_claims:
            self.dra.pods_with_claims.add(pod.uid)
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
        if task is not None and self.unassigned_numa:
            self._clear_unassigned_numa(task)
        # A finished pod holds nothing and is in no queue's request: removing it frees nothing.
        if task is None or not task.status & COMPLETED_STATUS:
            self.capacity_epoch += 1
        self._remove_task(uid)

    def _remove_task(self, uid: str) -> None:
        task = self.tasks.pop(uid, None)
        self.pods.pop(uid, None)
        if task is None:
            return
        if task.pod.claims:
            self.pods_with_claims -= 1
        if task.pod.resource_claims:
            self.dra.pods_with_claims.discard(uid)
        node = self.nodes.get(task.node_name)
        if node is not None:
            node.remove_task(task)
        job = self.jobs.get(task.job)
        if job is not None:
            job.delete_task(task)
            if not job.tasks and job.podgroup is None:
                del self.jobs[job.uid]
                self.memo.forget(job.uid)

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

    def bind_many(self, tasks: list[TaskInfo], node_names: list[str]) -> None:
        """:meth:`bind` of ``tasks[i]`` to ``node_names[i]`` (no annotations) for each ``i`` in
        order: replicas of one template of one job, moved to Bound at once."""
        job = self.jobs.get(tasks[0].job)
        if job is None:
            for task, node_name in zip(tasks, node_names, strict=True):
                self.bind(task, node_name)
            return
        job.update_tasks_status(tasks, TaskStatus.Bound)
        nodes = self.nodes
        for task, node_name in zip(tasks, node_names, strict=True):
            task.pod.node_name = node_name
            node = nodes.get(node_name)
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
    def take_status_changes(self) -> bool:
        """Whether a job that lost finished pods still has its PodGroup (its status changes)."""
        touched = self.status_only_changes
        if not touched:
            return False
        still = any(uid in self.pg_jobs for uid in touched)
        touched.clear()
        return still

    # ------------------------------------------------------------------ incremental updates
    def upsert_node(self, n: Node) -> NodeInfo:
        self.capacity_epoch += 1
        info = self.nodes.get(n.name)
        if info is None:
            self.node_generation += 1
            return self.add_node(n)
        if (n.labels != info.labels or n.taints != info.taints or n.unschedulable != info.unschedulable):
            self.node_generation += 1
        if n.labels != info.labels or not self.hypernode_tree.has_node(n.name):
            self.hypernode_tree.set_node(n.name, n.labels, info.index)
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

    def delete_node(self, n: Node) -> None:
        """A deleted node keeps its row but can host nothing (upstream: not in snapshots), and
        leaves the HyperNode tree."""
        n.unschedulable = True
        n.allocatable = {}
        self.upsert_node(n)
        self.hypernode_tree.remove_node(n.name)

    def upsert_hypernode(self, hn: HyperNode) -> None:
        self.hypernodes[hn.name] = hn
        self.hypernode_tree.set_hypernode(hn)

    def delete_hypernode(self, name: str) -> None:
        if self.hypernodes.pop(name, None) is not None:
            self.hypernode_tree.remove_hypernode(name)

    def upsert_numatopology(self, nt: Numatopology) -> None:
        self.capacity_epoch += 1  # CPUs freed or a policy changed can let a job fit
        self.numatopologies[nt.name] = nt

    def delete_numatopology(self, name: str) -> None:
        if self.numatopologies.pop(name, None) is not None:
            self.capacity_epoch += 1

    def add_unassigned_numa(self, node_name: str, meta: PodMeta, sets: ResNumaSets) -> None:
        """Upstream ``AddUnassignedNumaPods``: CPUs a session gave a pod it bound to ``node_name``."""
        if node_name in self.nodes:
            self.unassigned_numa.setdefault(node_name, {})[meta] = sets

    def _clear_unassigned_numa(self, task: TaskInfo) -> None:
        # Upstream clearUnassignedNumaTask: a deleted pod holds its CPUs no longer.
        held = self.unassigned_numa.get(task.node_name)
        if held is not None:
            held.pop(PodMeta(task.uid, task.name, task.namespace), None)

    def numa_scheduler_infos(self) -> dict[str, NumaSchedulerInfo]:
        """Every node's NUMA state for a session (upstream ``RefreshNumaSchedulerInfoByCrd``,
        run at each snapshot): the exporter's free CPUs less those of pods placed since that it
        does not list yet; a node whose placements it all lists forgets them."""
        out: dict[str, NumaSchedulerInfo] = {}
        for name in sorted(self.numatopologies):
            if name not in self.nodes:
                continue
            info, settled = self.numatopologies[name].scheduler_info(self.unassigned_numa.get(name, {}))
            if settled:
                self.unassigned_numa.pop(name, None)
            out[name] = info
        return out

    def set_node_usage(self, usage: Mapping[str, NodeUsage]) -> None:
        """Upstream ``setMetricsData``: the load of the nodes the collector measured (other nodes
        keep what they had). A lower load can let a job fit, so the capacity epoch moves."""
        changed = False
        for name, u in usage.items():
            if name in self.nodes and self.node_usage.get(name) != u:
                self.node_usage[name] = u
                changed = True
        if changed:
            self.usage_version += 1
            self.capacity_epoch += 1

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

    def upsert_pod_disruption_budget(self, pdb: PodDisruptionBudget) -> None:
        # A budget that allows more disruptions can let preemption make room.
        self.capacity_epoch += 1
        self.pod_disruption_budgets[pdb.key] = pdb

    def delete_pod_disruption_budget(self, namespace: str, name: str) -> None:
        if self.pod_disruption_budgets.pop(f"{namespace}/{name}", None) is not None:
            self.capacity_epoch += 1

    def upsert_resource_quota(self, rq: ResourceQuota) -> None:
        self.capacity_epoch += 1
        self.resource_quotas.setdefault(rq.namespace, {})[rq.name] = rq

    def delete_resource_quota(self, namespace: str, name: str) -> None:
        quotas = self.resource_quotas.get(namespace)
        if quotas is not None and quotas.pop(name, None) is not None:
            self.capacity_epoch += 1
            if not quotas:
                del self.resource_quotas[namespace]

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
            self.memo.forget(uid)

    def upsert_pod(self, pod: Pod, *, keep_in_flight: bool = True) -> TaskInfo | None:
        old = self.tasks.get(pod.uid)
        if old is not None:
            # Upstream (cache/event_handlers.go): an update without nodeName is ignored while
            # the cached task holds an in-flight placement. A bind this scheduler sent is one
            # too: the cache takes it as Bound at once (upstream keeps Binding until the API
            # answers), and an event older than the bind must not turn the pod Pending again
            # for the next session to place it twice (a refused bind is resynced instead).
            if keep_in_flight and not pod.node_name and old.status in _IN_FLIGHT and (
                    old.status != TaskStatus.Bound or old.pod.node_name):
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
