"""The kube-scheduler node snapshot the nodeorder scorers read (upstream builds ``NodeInfo``
objects for its kube-scheduler score plugins in ``plugins/nodeorder``).

What the scorers see. Upstream builds kube-scheduler ``NodeInfo`` objects from every pod on
every node at session open, and the predicates plugin's event handlers keep them in step
(an allocated or pipelined pod is added, an evicted or unallocated one removed). So
"requested" here is: every task on the node (any status, pipelined included) minus the tasks
evicted in this session. Resource columns come from the node table (``used + pipelined`` for
Requested, ``nonzero_cpu/nonzero_mem`` for NonZeroRequested); evictions in this session are
tracked by the view's own event handlers as a per-node delta. A task evicted in this
session is one in status Releasing whose pod has no deletion timestamp.

Within a session the view only changes through :meth:`K8sNodeView.on_allocate` and
:meth:`K8sNodeView.on_deallocate`, the event handlers the nodeorder plugin registers.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from pyvolcano.api import interpod, topology_spread
from pyvolcano.api.node import NodeInfo
from pyvolcano.api.resource import CPU, MEMORY
from pyvolcano.api.task import TaskInfo, TaskStatus
from pyvolcano.framework.interfaces import Event
from pyvolcano.plugins._scoring import FloatArray

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["GPU", "PREFERRED", "K8sNodeView", "evicted_in_session", "has_preferred_pod_terms"]

GPU: Final = "nvidia.com/gpu"
PREFERRED: Final = "preferredDuringSchedulingIgnoredDuringExecution"


def evicted_in_session(task: TaskInfo) -> bool:
    return task.status == TaskStatus.Releasing and task.pod.deletion_timestamp is None


def has_preferred_pod_terms(affinity: Mapping[str, Any] | None) -> bool:
    if not affinity:
        return False
    for kind in ("podAffinity", "podAntiAffinity"):
        part = affinity.get(kind)
        if isinstance(part, Mapping) and part.get(PREFERRED):
            return True
    return False


class K8sNodeView:
    """Upstream's shared kube-scheduler node snapshot, as the nodeorder scorers read it.

    Resource sums come from the node table; this class adds what the table cannot know: the
    tasks evicted in this session (removed from the snapshot upstream, still ``used`` in the
    table) and an index of the pods that carry preferred pod (anti-)affinity terms.
    """

    # rows of the eviction delta
    _NZ_CPU, _NZ_MEM, _CPU, _MEM, _GPU = range(5)

    def __init__(self, ssn: Session):
        self._ssn = ssn
        self._table = ssn.node_table
        self._evicted: dict[str, tuple[int, tuple[float, ...]]] = {}
        self._delta: np.ndarray | None = None
        self._affinity_pods: dict[str, TaskInfo] | None = None
        self._existing_cache: dict[str, interpod.ExistingPod] = {}
        self._node_labels: dict[str, Mapping[str, str]] | None = None
        self._spread_nodes: dict[str, topology_spread.NodeEntry] | None = None

    # ------------------------------------------------------------------ events
    def on_allocate(self, event: Event) -> None:
        task = event.task
        gone = self._evicted.pop(task.uid, None)
        if gone is not None and self._delta is not None:
            row, amounts = gone
            for k, v in enumerate(amounts):
                self._delta[k, row] -= v
        if self._affinity_pods is not None and has_preferred_pod_terms(task.pod.affinity):
            self._affinity_pods[task.uid] = task

    def on_allocate_many(self, tasks: list[TaskInfo]) -> None:
        """:meth:`on_allocate` of each task (replicas of one template: they all carry
        preferred pod terms or none do)."""
        if self._evicted:
            for task in tasks:
                self.on_allocate(Event(task))
            return
        if self._affinity_pods is not None and has_preferred_pod_terms(tasks[0].pod.affinity):
            for task in tasks:
                self._affinity_pods[task.uid] = task

    def on_deallocate(self, event: Event) -> None:
        task = event.task
        if self._affinity_pods is not None:
            self._affinity_pods.pop(task.uid, None)
        if not evicted_in_session(task):
            return
        node = self._ssn.nodes.get(task.node_name)
        if node is None or task.uid in self._evicted:
            return
        nz_cpu, nz_mem = task.nonzero_request()
        req = task.resreq
        amounts = (nz_cpu, nz_mem, req.milli_cpu, req.memory, req.scalars.get(GPU, 0.0))
        if self._delta is None:
            self._delta = np.zeros((5, self._table.n), dtype=np.float64)
        for k, v in enumerate(amounts):
            self._delta[k, node.index] += v
        self._evicted[task.uid] = (node.index, amounts)

    # ------------------------------------------------------------------ resources
    def nonzero_requested(self, idx: np.ndarray) -> tuple[FloatArray, FloatArray]:
        """kube-scheduler ``NonZeroRequested`` cpu and memory of the nodes ``idx``."""
        cpu = self._table.nonzero_cpu[idx]
        mem = self._table.nonzero_mem[idx]
        if self._delta is not None:
            cpu = cpu - self._delta[self._NZ_CPU, idx]
            mem = mem - self._delta[self._NZ_MEM, idx]
        return cpu, mem

    def requested(self, name: str, idx: np.ndarray) -> FloatArray:
        """kube-scheduler ``Requested`` of resource ``name`` on the nodes ``idx``."""
        t = self._table
        d = t.dim_index.get(name)
        if d is None:
            return np.zeros(len(idx), dtype=np.float64)
        col = t.used[d][idx] + t.pipelined[d][idx]
        if self._delta is not None:
            row = {CPU: self._CPU, MEMORY: self._MEM, GPU: self._GPU}.get(name)
            if row is not None:
                col = col - self._delta[row, idx]
        return col

    def nonzero_requested_at(self, i: int) -> tuple[float, float]:
        """:meth:`nonzero_requested` of one node, as Python floats."""
        cpu = float(self._table.nonzero_cpu[i])
        mem = float(self._table.nonzero_mem[i])
        if self._delta is not None:
            cpu -= float(self._delta[self._NZ_CPU, i])
            mem -= float(self._delta[self._NZ_MEM, i])
        return cpu, mem

    def requested_at(self, name: str, i: int) -> float:
        """:meth:`requested` of one node, as a Python float."""
        t = self._table
        d = t.dim_index.get(name)
        if d is None:
            return 0.0
        value = float(t.used[d][i] + t.pipelined[d][i])
        if self._delta is not None:
            row = {CPU: self._CPU, MEMORY: self._MEM, GPU: self._GPU}.get(name)
            if row is not None:
                value -= float(self._delta[row, i])
        return value

    def allocatable_at(self, name: str, i: int) -> float:
        d = self._table.dim_index.get(name)
        return 0.0 if d is None else float(self._table.allocatable[d][i])

    def allocatable(self, name: str, idx: np.ndarray) -> FloatArray:
        d = self._table.dim_index.get(name)
        if d is None:
            return np.zeros(len(idx), dtype=np.float64)
        return self._table.allocatable[d][idx]

    # ------------------------------------------------------------------ pods
    def pods(self) -> Iterator[tuple[NodeInfo, TaskInfo]]:
        """Every pod in the snapshot, in node order then task UID order."""
        for node in self._ssn.node_list:
            for uid in sorted(node.tasks):
                t = node.tasks[uid]
                if not evicted_in_session(t):
                    yield node, t

    def affinity_pods(self) -> Mapping[str, TaskInfo]:
        """Pods in the snapshot with preferred pod (anti-)affinity terms (built on first use)."""
        if self._affinity_pods is None and not self._table.pod_affinity_tasks:
            self._affinity_pods = {}
        if self._affinity_pods is None:
            self._affinity_pods = {t.uid: t for _n, t in self.pods()
                                   if has_preferred_pod_terms(t.pod.affinity)}
        return self._affinity_pods

    def existing_pod(self, task: TaskInfo) -> interpod.ExistingPod:
        """The interpod view of a placed task (cached, so its compiled terms are reused)."""
        ep = self._existing_cache.get(task.uid)
        if ep is None or ep.node_name != task.node_name:
            ep = interpod.ExistingPod(task.namespace, task.pod.labels, task.node_name, task.pod.affinity)
            self._existing_cache[task.uid] = ep
        return ep

    def node_labels(self) -> Mapping[str, Mapping[str, str]]:
        if self._node_labels is None:
            self._node_labels = {n.name: n.labels for n in self._ssn.node_list}
        return self._node_labels

    def spread_nodes(self) -> Mapping[str, topology_spread.NodeEntry]:
        if self._spread_nodes is None:
            self._spread_nodes = {n.name: (n.labels, n.taints) for n in self._ssn.node_list}
        return self._spread_nodes
