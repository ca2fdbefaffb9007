"""Collecting :class:`~pyvolcano.simulator.metrics.RunMetrics` during a simulation.

The collector watches the same event stream as everyone else (Jobs, PodGroups, Pods) and
samples the scheduler cache once the events of an instant have settled: after every session
(its binds written back and the pods started, so a job that got its pods counts as running)
and whenever the pending/running job counts change without a session at that instant. A
sample therefore always describes the state *after* the events of its instant. A job is
either a vcjob (Job objects) or, for workloads of plain PodGroups, the PodGroup itself.
Once the cluster has a HyperNode the collector also follows each job's span and samples the
topology fragmentation (:mod:`pyvolcano.simulator.topology_metrics`).
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

from pyvolcano.api.job import JobInfo
from pyvolcano.api.names import GROUP_NAME_KEY, JOB_NAME_KEY
from pyvolcano.api.objects import Pod
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import TaskInfo, TaskStatus
from pyvolcano.gpu.devices import (
    GPU_MILLI_ANNOTATION,
    NO_GPU,
    DemandKind,
    GpuDemand,
    GpuLedger,
    NodeGpus,
    node_gpus,
    pod_demand,
)
from pyvolcano.gpu.frag import node_terms
from pyvolcano.plugins.gpu_session import assign_node_tasks, workload_typical_pods
from pyvolcano.simulator.metrics import JobMetrics, NodeRecord, PodRecord, QueueRecord, QueueSample, RunMetrics, Sample
from pyvolcano.simulator.topology_metrics import SpanTracker, TopologyFragmentation, has_topology
from pyvolcano.store.base import WatchEvent

if TYPE_CHECKING:
    from pyvolcano.cache.cache import SchedulerCache
    from pyvolcano.runtime.cycle import SessionResult

__all__ = ["FragmentationTracker", "MetricsCollector", "fragmentation"]

GPU = "nvidia.com/gpu"
FINAL = {"Completed", "Failed", "Terminated", "Aborted"}


def fragmentation(cache: SchedulerCache) -> float:
    """GPU fragmentation (whole-GPU equivalents) with respect to the pending pods.

    The FGD paper's measure (:func:`pyvolcano.plugins.gpu_session.cluster_fragmentation`) with the
    pending pods as the target workload: the expected idle GPU capacity that a typical pending
    pod — drawn by popularity from the pending pods' GPU shapes — cannot use, because the GPUs
    left on its node are too small, of the wrong model, or lack CPU. With nothing pending,
    nothing counts as fragmented. (:class:`FragmentationTracker` computes the same value
    incrementally.)
    """
    from pyvolcano.plugins.gpu_session import cluster_fragmentation

    pending = _pending_tasks(cache)
    if not pending or not cache.node_list:
        return 0.0
    return cluster_fragmentation(cache.node_list, pending).fragmentation_milli / 1000.0


def _pending_tasks(cache: SchedulerCache) -> list[TaskInfo]:
    return [t for job in cache.pg_jobs.values() for t in job.tasks_in(TaskStatus.Pending).values()]


def _has_pending_tasks(job: JobInfo) -> bool:
    return bool(job.tasks_in(TaskStatus.Pending))


class FragmentationTracker:
    """:func:`fragmentation`, keeping the GPU ledger between samples.

    Rebuilding the ledger walks every task on every node; between two samples only the
    nodes in the node table's change log moved, so only their rows are rebuilt
    (:func:`~pyvolcano.plugins.gpu_session.assign_node_tasks`). The whole ledger is rebuilt when a
    node was added, when the change log no longer reaches back, or when a changed node's GPU
    inventory differs (its row width or model vocabulary may change). GPU demands are
    parsed once per pod object. With no row in the change log and no job reported by the
    cache's change feed since the last value (or the same pod objects pending), the value
    itself is reused without walking the jobs. Otherwise the pending pods are read from the
    jobs that have any, kept by the change feed (``SessionMemo.select``, in uid order; the
    value depends only on the multiset of pending pods); from scratch
    (``SessionMemo.incremental = False``) every job is walked instead.
    """

    def __init__(self, cache: SchedulerCache):
        self.cache = cache
        self._ledger: GpuLedger | None = None
        self._inventories: list[NodeGpus] = []
        self._row_uids: list[list[str]] = []
        self._position = 0
        self._demands: dict[str, tuple[Pod, GpuDemand]] = {}
        # The last value, with the change-log position and the pending pods it was computed
        # for: with no node row changed and the same pod objects pending, it is still the value.
        self._last: tuple[int, list[Pod], float] | None = None
        # Jobs reported since the last value (the cache's change feed): a pending task can
        # appear, leave or change only in a reported job.
        self._changed = cache.memo.feed()

    def _demand_of(self, task: TaskInfo) -> GpuDemand:
        memo = self._demands.get(task.uid)
        if memo is None or memo[0] is not task.pod:
            memo = self._demands[task.uid] = (task.pod, pod_demand(task.pod))
        d = memo[1]
        return d if d.kind is not DemandKind.INVALID else NO_GPU

    def _rebuild(self) -> GpuLedger:
        nodes = self.cache.node_list
        self._inventories = [node_gpus(n.node) for n in nodes]
        ledger = self._ledger = GpuLedger(self._inventories)
        self._row_uids = [assign_node_tasks(ledger, i, n, self._demand_of) for i, n in enumerate(nodes)]
        self._demands = {uid: self._demands[uid] for uids in self._row_uids for uid in uids
                         if uid in self._demands}
        return ledger

    def ledger(self) -> GpuLedger:
        """The ledger of the cache's nodes now."""
        nodes = self.cache.node_list
        table = self.cache.node_table
        changed = table.changes_since(self._position)
        self._position = table.change_position
        ledger = self._ledger
        if ledger is None or changed is None or ledger.n != len(nodes):
            return self._rebuild()
        rows = [int(i) for i in changed if i < len(nodes)]
        for i in rows:
            if node_gpus(nodes[i].node) != self._inventories[i]:
                return self._rebuild()
        for i in rows:
            tasks = nodes[i].tasks
            for uid in self._row_uids[i]:
                ledger.release(uid)
                if uid not in tasks:
                    self._demands.pop(uid, None)
            self._row_uids[i] = assign_node_tasks(ledger, i, nodes[i], self._demand_of)
        return ledger

    def value(self) -> float:
        """Whole-GPU fragmentation now (as :func:`fragmentation`)."""
        cache = self.cache
        last = self._last
        changed = self._changed
        position = cache.node_table.change_position
        if last is not None and last[0] == position and not changed and not changed.overflowed:
            return last[2]  # no node row and no job changed: the same pending tasks on the same nodes
        changed.take()
        if cache.memo.incremental:
            jobs = cache.memo.select("collector/pending", _has_pending_tasks, cache.pg_jobs)
            pending = [t for job in jobs for t in job.tasks_in(TaskStatus.Pending).values()]
        else:
            pending = _pending_tasks(cache)
        if not pending or not cache.node_list:
            self._last = (position, [], 0.0)
            return 0.0
        nodes = cache.node_list
        pods = [t.pod for t in pending]
        if (last is not None and last[0] == position and len(last[1]) == len(pods)
                and all(map(operator.is_, pods, last[1]))):
            self._last = (position, pods, last[2])
            return last[2]
        ledger = self.ledger()
        typ = workload_typical_pods(pending, self._demand_of)
        if typ is None or ledger.n == 0:
            value = 0.0
        else:
            table = nodes[0].table
            cpu = table.idle[table.dim_index["cpu"]][[n.index for n in nodes]]
            terms = node_terms(typ, typ.accessible(ledger.models), ledger.free, cpu, ledger.model)
            value = int(terms.frag.sum()) / typ.total / 1000.0
        self._last = (cache.node_table.change_position, pods, value)
        return value


def _pod_size(obj: dict[str, Any], md: dict[str, Any]) -> tuple[float, float]:
    """(GPUs, cores) a pod object requests: ``nvidia.com/gpu`` of its containers, else its
    GPU-share annotation as a fraction of one GPU; the containers' cpu requests."""
    gpu = cpu = 0.0
    for c in (obj.get("spec") or {}).get("containers") or []:
        req = (c.get("resources") or {}).get("requests") or {}
        try:
            r = Resource.from_list({k: v for k, v in req.items() if k in ("cpu", GPU)})
        except ValueError:
            continue
        gpu += r.scalars.get(GPU, 0.0) / 1000
        cpu += r.milli_cpu / 1000
    milli = ((md.get("annotations") or {}).get(GPU_MILLI_ANNOTATION) or "").strip()
    if not gpu and milli.isdigit():
        gpu = min(int(milli), 1000) / 1000
    return gpu, cpu


def _allocated(job: JobInfo) -> tuple[Resource]:
    return (job.allocated.clone(),)


class MetricsCollector:
    def __init__(self, cache: SchedulerCache, metrics: RunMetrics):
        self.cache = cache
        self.metrics = metrics
        self.jobs: dict[str, JobMetrics] = {}
        self._pg_to_job: dict[str, str] = {}
        self._uses_vcjobs = False
        self._deserved: dict[str, Resource] = {}
        # Jobs not finished yet, by whether they have started: O(1) pending/running counts.
        self._waiting: set[str] = set()
        self._started: set[str] = set()
        # Set when the pending/running counts moved since the last sample.
        self.counts_changed = False
        self._fragmentation = FragmentationTracker(cache)
        self._spans = SpanTracker(cache)
        self._topology_fragmentation = TopologyFragmentation(cache)
        self._pods: dict[str, PodRecord] = {}  # by uid

    # ------------------------------------------------------------------ events
    def on_event(self, ev: WatchEvent, now: float) -> None:
        obj = ev.object
        md = obj.get("metadata") or {}
        ns = md.get("namespace", "default")
        key = f"{ns}/{md.get('name')}"
        if ev.kind == "Job":
            self._uses_vcjobs = True
            self._on_job(ev, key, obj, now)
        elif ev.kind == "PodGroup" and not self._uses_vcjobs:
            self._on_podgroup(ev, key, obj, now)
        elif ev.kind == "Pod":
            node = (obj.get("spec") or {}).get("nodeName")
            if node and ev.type != "DELETED":
                jm = self._job_of_pod(ns, md)
                if jm is not None:
                    if jm.first_bind is None:
                        jm.first_bind = now
                    if self.metrics.topology:
                        self._spans.bound(jm.key, node)
            self._track_pod(ev, key, ns, md, obj, now)
        elif ev.kind == "HyperNode" and not self.metrics.topology:
            self.metrics.topology = has_topology(self.cache.hypernode_tree)

    def _job_of_pod(self, ns: str, md: dict[str, Any]) -> JobMetrics | None:
        ann = md.get("annotations") or {}
        labels = md.get("labels") or {}
        name = ann.get(JOB_NAME_KEY) or labels.get(JOB_NAME_KEY)
        if name:
            return self.jobs.get(f"{ns}/{name}")
        group = ann.get(GROUP_NAME_KEY)
        if group:
            return self.jobs.get(self._pg_to_job.get(f"{ns}/{group}", f"{ns}/{group}"))
        return None

    def _track_pod(self, ev: WatchEvent, key: str, ns: str, md: dict[str, Any], obj: dict[str, Any],
                   now: float) -> None:
        """Keep the pod's :class:`PodRecord`: opened when it is first seen bound, closed when it
        ends or goes."""
        uid = str(md.get("uid") or key)
        rec = self._pods.get(uid)
        phase = (obj.get("status") or {}).get("phase")
        done = ev.type == "DELETED" or phase in ("Succeeded", "Failed")
        if rec is None:
            node = (obj.get("spec") or {}).get("nodeName")
            if not node or done:
                return
            jm = self._job_of_pod(ns, md)
            gpu, cpu = _pod_size(obj, md)
            rec = self._pods[uid] = PodRecord(key, jm.key if jm is not None else "", str(node), now, gpu=gpu, cpu=cpu)
            self.metrics.pods.append(rec)
        elif done and rec.end is None:
            rec.end = now

    def record_cluster(self) -> None:
        """Record the cluster's nodes and queues as they are now (the end of the run)."""
        from pyvolcano.api.hypernode_tree import CLUSTER_TOP_HYPERNODE

        tree = self.cache.hypernode_tree
        m = self.metrics
        m.nodes = []
        for n in self.cache.node_list:
            inv = node_gpus(n.node)
            path = tuple(h for h in tree.hypernodes_of(n.name) if h != CLUSTER_TOP_HYPERNODE) if m.topology else ()
            m.nodes.append(NodeRecord(n.name, inv.count, inv.model, n.allocatable.milli_cpu / 1000, path))
            for h in path:
                m.hypernode_tiers[h] = tree.tier(h)
        m.queues = [QueueRecord(q.name, q.parent, q.weight, q.state) for _name, q in sorted(self.cache.queues.items())]

    def _on_job(self, ev: WatchEvent, key: str, obj: dict[str, Any], now: float) -> None:
        jm = self.jobs.get(key)
        spec = obj.get("spec") or {}
        if jm is None:
            if ev.type == "DELETED":
                return
            gpus = 0.0
            pods = 0
            for task in spec.get("tasks") or []:
                replicas = int(task.get("replicas", 1) or 0)
                pods += replicas
                for c in ((task.get("template") or {}).get("spec") or {}).get("containers") or []:
                    req = ((c.get("resources") or {}).get("requests")) or {}
                    if GPU in req:
                        gpus += Resource.from_list({GPU: req[GPU]}).scalars.get(GPU, 0.0) / 1000 * replicas
            jm = JobMetrics(key, str(spec.get("queue") or "default"), now, gpus=gpus, pods=pods)
            self.jobs[key] = jm
            self.metrics.jobs.append(jm)
        status = obj.get("status") or {}
        phase = (status.get("state") or {}).get("phase") or jm.phase
        if ev.type == "DELETED" and phase not in FINAL:
            phase = "Terminated"
        jm.phase = phase
        jm.restarts = int(status.get("retryCount", 0) or 0)
        if phase == "Running" and jm.start is None:
            jm.start = now
        if phase in FINAL and jm.end is None:
            jm.end = now
            if jm.start is None and phase == "Completed":
                jm.start = now
        self._classify(key, jm)

    def _on_podgroup(self, ev: WatchEvent, key: str, obj: dict[str, Any], now: float) -> None:
        jm = self.jobs.get(key)
        spec = obj.get("spec") or {}
        if jm is None:
            if ev.type == "DELETED":
                return
            jm = JobMetrics(key, str(spec.get("queue") or "default"), now, pods=int(spec.get("minMember", 0) or 0))
            self.jobs[key] = jm
            self.metrics.jobs.append(jm)
        phase = (obj.get("status") or {}).get("phase", "Pending")
        jm.phase = phase
        if phase == "Running" and jm.start is None:
            jm.start = now
        if phase == "Completed" and jm.end is None:
            jm.end = now
        self._classify(key, jm)

    def _classify(self, key: str, jm: JobMetrics) -> None:
        before = (len(self._waiting), len(self._started))
        if jm.end is not None:
            self._waiting.discard(key)
            self._started.discard(key)
        elif jm.start is None:
            self._waiting.add(key)
        else:
            self._waiting.discard(key)
            self._started.add(key)
        if (len(self._waiting), len(self._started)) != before:
            self.counts_changed = True

    def set_reasons(self, reasons: dict[str, str]) -> None:
        """Record why unfinished jobs had not finished (job key → text)."""
        for key, why in reasons.items():
            jm = self.jobs.get(key)
            if jm is not None:
                jm.reason = why

    def set_spans(self) -> None:
        """Fill in every job's ``span_*`` (with HyperNodes in the cluster)."""
        if not self.metrics.topology:
            return
        for key, jm in self.jobs.items():
            jm.span_nodes, jm.span_domains, jm.span_hypernode, jm.span_tier = self._spans.span(key)

    def on_eviction(self, namespace: str, name: str) -> None:
        for t in self.cache.tasks.values():
            if t.namespace == namespace and t.name == name:
                jm = self._job_of_pod(namespace, {"annotations": t.pod.annotations, "labels": t.pod.labels})
                if jm is not None:
                    jm.preemptions += 1
                return

    def _counts(self) -> tuple[int, int]:
        """(pending, running) jobs."""
        return len(self._waiting), len(self._started)

    # ------------------------------------------------------------------ samples
    def sample(self, now: float, result: SessionResult | None = None) -> None:
        cache = self.cache
        table = cache.node_table
        n = table.n
        d_gpu = table.dim_index.get(GPU)
        gpu_used = float(table.used[d_gpu][:n].sum()) / 1000 if d_gpu is not None else 0.0
        gpu_cap = float(table.allocatable[d_gpu][:n].sum()) / 1000 if d_gpu is not None else 0.0
        cpu_used = float(table.used[0][:n].sum()) / 1000
        cpu_cap = float(table.allocatable[0][:n].sum()) / 1000
        pending, running = self._counts()
        self.counts_changed = False
        queues: dict[str, QueueSample] = {}
        alloc_gpu: dict[str, float] = {}
        alloc_cpu: dict[str, float] = {}
        for queue, (allocated,) in cache.memo.job_sums("collector/allocated", 1, _allocated).refresh(
                cache.pg_jobs).items():
            alloc_gpu[queue] = allocated.scalars.get(GPU, 0.0) / 1000
            alloc_cpu[queue] = allocated.milli_cpu / 1000
        if result is not None and result.deserved:
            self._deserved = result.deserved
        deserved = self._deserved
        names = sorted({*cache.queues, *alloc_gpu} - {"root"})
        for q in names:
            des = deserved.get(q)
            d_gpu_v = des.scalars.get(GPU, 0.0) / 1000 if des is not None else None
            share = (alloc_gpu.get(q, 0.0) / gpu_cap) if gpu_cap else None
            queues[q] = QueueSample(alloc_gpu.get(q, 0.0), d_gpu_v, alloc_cpu.get(q, 0.0), share)
        samples = self.metrics.samples
        if samples:
            # Months of sessions keep hundreds of thousands of samples: share what did not change.
            last = samples[-1].queues
            if queues == last:
                queues = last
            else:
                queues = {q: (last[q] if last.get(q) == v else v) for q, v in queues.items()}
        if self.metrics.samples and self.metrics.samples[-1].t == now:
            self.metrics.samples.pop()
        sample = Sample(now, gpu_used, gpu_cap, cpu_used, cpu_cap, self._fragmentation.value(), pending, running,
                        queues)
        if self.metrics.topology:
            sample.topology_fragmentation, sample.fragmented_domains = self._topology_fragmentation.value()
        self.metrics.samples.append(sample)
