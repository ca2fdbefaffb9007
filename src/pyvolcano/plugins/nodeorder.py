"""nodeorder plugin (upstream pkg/scheduler/plugins/nodeorder/nodeorder.go).

Upstream wraps kube-scheduler score plugins and sums ``score × weight`` over them; the
weights are integer arguments and a weight of 0 disables that scorer:

* ``leastrequested.weight`` (1): NodeResourcesFit, LeastAllocated, cpu 50 / memory 50;
* ``mostrequested.weight`` (0): NodeResourcesFit, MostAllocated, cpu 1 / memory 1;
* ``balancedresource.weight`` (1): NodeResourcesBalancedAllocation over cpu, memory and
  ``nvidia.com/gpu``;
* ``nodeaffinity.weight`` (2): NodeAffinity, preferred terms, DefaultNormalizeScore;
* ``podaffinity.weight`` (2): InterPodAffinity, preferred terms, min-max normalised;
* ``tainttoleration.weight`` (3): TaintToleration, PreferNoSchedule taints, reverse normalised;
* ``imagelocality.weight`` (1): ImageLocality;
* ``podtopologyspread.weight`` (2): PodTopologySpread, ScheduleAnyway constraints.

Every scorer gives an integer in 0..100 per candidate node; normalisation runs over the
candidate nodes the action passes in (upstream's BatchNodeOrderFn gets the same list).

What the scorers see. Upstream builds kube-scheduler ``NodeInfo`` objects from every pod on
every node at session open, and the predicates plugin's event handlers keep them in step
(an allocated or pipelined pod is added, an evicted or unallocated one removed). So
"requested" here is: every task on the node (any status, pipelined included) minus the tasks
evicted in this session. Resource columns come from the node table (``used + pipelined`` for
Requested, ``nonzero_cpu/nonzero_mem`` for NonZeroRequested); evictions in this session are
tracked by this plugin's own event handlers as a per-node delta. A task evicted in this
session is one in status Releasing whose pod has no deletion timestamp.

Vectorisation and caches. LeastAllocated, MostAllocated and BalancedAllocation are a handful
of numpy operations over the candidate indices; for a task whose normalising scorers are
all constant (the node-order cache key is not None) only these node-local scorers run, in
plain Python for a few nodes and with reduced kernels otherwise. NodeAffinity evaluates a pod's preferred
terms once per node per distinct set of terms and session (node labels do not change within a
session); a pod without preferred terms scores 0 without touching nodes. TaintToleration
finds the nodes carrying PreferNoSchedule taints once per session; all other nodes count 0
untolerated taints, and counts are cached per distinct toleration list. InterPodAffinity
scans existing pods only when the incoming pod has preferred pod (anti-)affinity terms, or
else only the pods that have such terms themselves (an index kept up to date by the event
handlers); PodTopologySpread runs only for pods with ScheduleAnyway constraints.

Upstream details reproduced: NodeResourcesFit scores with the non-zero requests (a container
without a cpu/memory request counts as 100m/200Mi); BalancedAllocation uses the real
requests and skips best-effort pods; a resource whose allocatable is 0 is left out of the
weighted mean; Volcano passes ``InterPodAffinityArgs{}``, so ``hardPodAffinityWeight`` is 0
and existing pods' *required* affinity terms add nothing to the score.

Not implemented (and why):

* ImageLocality always scores 0: nodes carry no ``status.images`` in pyvolcano's model.
* PodTopologySpread's *system default* constraints (used for pods without
  ``topologySpreadConstraints``) derive their selectors from Services, ReplicaSets,
  StatefulSets and ReplicationControllers, which pyvolcano does not model; such pods score 0.
* Namespace labels are unknown (no Namespace objects), so a ``namespaceSelector`` other than
  ``{}`` matches no namespace in pod affinity terms.
* Upstream's k8s snapshot is only updated in-session when the predicates plugin is enabled;
  without it upstream scores against the session-open state. Here the view is always kept
  in step, as if predicates were enabled (the normal configuration).
* A malformed preferred pod affinity term of the incoming pod makes upstream's batch scoring
  fail for that task; here InterPodAffinity scores 0 (kube-scheduler's PreFilter rejects
  such pods before scoring anyway).
* Pod-level ``spec.resources``, in-place resize status resources and DRA-backed extended
  resources are not part of pyvolcano's pod model, so requests are container requests only.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from pyvolcano.api import interpod, topology_spread
from pyvolcano.api.matching import (
    PreferredNodeAffinity,
    SelectorError,
    count_intolerable_prefer_no_schedule,
    default_normalize,
)
from pyvolcano.api.node import NodeInfo
from pyvolcano.api.resource import CPU, MEMORY
from pyvolcano.api.task import TaskInfo, TaskStatus
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.interfaces import Event, EventHandler
from pyvolcano.plugins._scoring import (
    MAX_NODE_SCORE,
    FloatArray,
    IntArray,
    balanced_allocation,
    least_requested,
    most_requested,
    weighted_mean,
)

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["NAME", "K8sNodeView", "NodeOrder", "Weights", "new"]

NAME: Final = "nodeorder"
GPU: Final = "nvidia.com/gpu"
PREFER_NO_SCHEDULE: Final = "PreferNoSchedule"
# Volcano's NodeResourcesFit arguments (cpu, memory weights).
LEAST_ALLOCATED_WEIGHTS: Final = (50, 50)
MOST_ALLOCATED_WEIGHTS: Final = (1, 1)
_PREFERRED: Final = "preferredDuringSchedulingIgnoredDuringExecution"

Scorer = Callable[[TaskInfo, np.ndarray], IntArray]


@dataclass(frozen=True, slots=True)
class Weights:
    """Per-scorer integer weights (0 disables a scorer)."""

    least_requested: int = 1
    most_requested: int = 0
    balanced_resource: int = 1
    node_affinity: int = 2
    pod_affinity: int = 2
    taint_toleration: int = 3
    image_locality: int = 1
    pod_topology_spread: int = 2

    @classmethod
    def from_arguments(cls, arguments: Mapping[str, Any] | None) -> Weights:
        args = Arguments(arguments, owner=f"plugin {NAME}")
        d = cls()
        return cls(
            least_requested=args.get_int("leastrequested.weight", d.least_requested),
            most_requested=args.get_int("mostrequested.weight", d.most_requested),
            balanced_resource=args.get_int("balancedresource.weight", d.balanced_resource),
            node_affinity=args.get_int("nodeaffinity.weight", d.node_affinity),
            pod_affinity=args.get_int("podaffinity.weight", d.pod_affinity),
            taint_toleration=args.get_int("tainttoleration.weight", d.taint_toleration),
            image_locality=args.get_int("imagelocality.weight", d.image_locality),
            pod_topology_spread=args.get_int("podtopologyspread.weight", d.pod_topology_spread),
        )


def _evicted_in_session(task: TaskInfo) -> bool:
    return task.status == TaskStatus.Releasing and task.pod.deletion_timestamp is None


def _prefer_tolerations(task: TaskInfo) -> list[dict[str, Any]]:
    """The tolerations that count against PreferNoSchedule taints (effect empty or PreferNoSchedule)."""
    return [t for t in task.pod.tolerations if (t.get("effect") or "") in ("", PREFER_NO_SCHEDULE)]


_SCALAR_MAX_NODES = 8


def _scalar_mean(terms: list[tuple[int, int, int]]) -> int:
    total = 0
    weight_sum = 0
    for score, capacity, weight in terms:
        if capacity != 0:
            total += score * weight
            weight_sum += weight
    return total // weight_sum if weight_sum else 0


def _has_preferred_pod_terms(affinity: Mapping[str, Any] | None) -> bool:
    if not affinity:
        return False
    for kind in ("podAffinity", "podAntiAffinity"):
        part = affinity.get(kind)
        if isinstance(part, Mapping) and part.get(_PREFERRED):
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
        if self._affinity_pods is not None and _has_preferred_pod_terms(task.pod.affinity):
            self._affinity_pods[task.uid] = task

    def on_deallocate(self, event: Event) -> None:
        task = event.task
        if self._affinity_pods is not None:
            self._affinity_pods.pop(task.uid, None)
        if not _evicted_in_session(task):
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
                if not _evicted_in_session(t):
                    yield node, t

    def affinity_pods(self) -> Mapping[str, TaskInfo]:
        """Pods in the snapshot with preferred pod (anti-)affinity terms (built on first use)."""
        if self._affinity_pods is None and not self._table.pod_affinity_tasks:
            self._affinity_pods = {}
        if self._affinity_pods is None:
            self._affinity_pods = {t.uid: t for _n, t in self.pods()
                                   if _has_preferred_pod_terms(t.pod.affinity)}
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


class _Scorers:
    """The kube-scheduler scorers of one session, each ``(task, idx) -> int64 scores in 0..100``."""

    def __init__(self, ssn: Session, view: K8sNodeView):
        self._ssn = ssn
        self._view = view
        # NodeAffinity: terms key per task; per key the compiled terms and raw scores per node.
        self._affinity_key: dict[str, str | None] = {}
        self._affinity_raw: dict[str, tuple[PreferredNodeAffinity, IntArray, np.ndarray]] = {}
        # TaintToleration: nodes with PreferNoSchedule taints; counts per toleration list.
        self._tainted: np.ndarray | None = None
        self._tainted_pos: np.ndarray | None = None
        self._toleration_key: dict[str, str] = {}
        self._taint_counts: dict[str, IntArray] = {}

    # ------------------------------------------------------------------ NodeResourcesFit
    def _fit_requests(self, task: TaskInfo, idx: np.ndarray) -> tuple[list[IntArray], list[IntArray]]:
        v = self._view
        pod_cpu, pod_mem = task.nonzero_request()
        node_cpu, node_mem = v.nonzero_requested(idx)
        requested = [np.rint(node_cpu + pod_cpu).astype(np.int64),
                     np.rint(node_mem + pod_mem).astype(np.int64)]
        capacity = [np.rint(v.allocatable(name, idx)).astype(np.int64) for name in (CPU, MEMORY)]
        return requested, capacity

    def least_allocated(self, task: TaskInfo, idx: np.ndarray) -> IntArray:
        requested, capacity = self._fit_requests(task, idx)
        return weighted_mean([(least_requested(r, c), c, w)
                              for r, c, w in zip(requested, capacity, LEAST_ALLOCATED_WEIGHTS)])

    def most_allocated(self, task: TaskInfo, idx: np.ndarray) -> IntArray:
        requested, capacity = self._fit_requests(task, idx)
        return weighted_mean([(most_requested(r, c), c, w)
                              for r, c, w in zip(requested, capacity, MOST_ALLOCATED_WEIGHTS)])

    def local_scalar(self, task: TaskInfo, i: int, w: Weights) -> float:
        """Weighted least/most/balanced scores of one node, in plain Python.

        Same integer and float operations, in the same order, as the vectorised kernels;
        used when only a handful of nodes need (re)scoring, where numpy's per-call overhead
        dominates.
        """
        v = self._view
        total = 0.0
        if w.least_requested or w.most_requested:
            pod_cpu, pod_mem = task.nonzero_request()
            node_cpu, node_mem = v.nonzero_requested_at(i)
            # np.rint rounds half to even, like the vectorised kernel; Python's round does too.
            req = (round(node_cpu + pod_cpu), round(node_mem + pod_mem))
            cap = (round(v.allocatable_at(CPU, i)), round(v.allocatable_at(MEMORY, i)))
            if w.least_requested:
                total += w.least_requested * _scalar_mean(
                    [(0 if c == 0 or r > c else ((c - r) * MAX_NODE_SCORE) // c, c, wt)
                     for r, c, wt in zip(req, cap, LEAST_ALLOCATED_WEIGHTS)])
            if w.most_requested:
                total += w.most_requested * _scalar_mean(
                    [((min(r, c) * MAX_NODE_SCORE) // c if c else 0, c, wt)
                     for r, c, wt in zip(req, cap, MOST_ALLOCATED_WEIGHTS)])
        if w.balanced_resource:
            rq = task.resreq
            pod = (rq.milli_cpu, rq.memory, rq.scalars.get(GPU, 0.0))
            if any(pod):
                names = (CPU, MEMORY, GPU) if pod[2] else (CPU, MEMORY)
                fracs = []
                for name, amount in zip(names, pod):
                    alloc = v.allocatable_at(name, i)
                    if alloc != 0:
                        fracs.append(min((v.requested_at(name, i) + amount) / alloc, 1.0))
                std = 0.0
                if len(fracs) == 2:
                    std = abs((fracs[0] - fracs[1]) / 2)
                elif len(fracs) == 3:
                    mean = ((fracs[0] + fracs[1]) + fracs[2]) / 3
                    sq = ((fracs[0] - mean) * (fracs[0] - mean) + (fracs[1] - mean) * (fracs[1] - mean)) \
                        + (fracs[2] - mean) * (fracs[2] - mean)
                    std = math.sqrt(sq / 3)
                total += w.balanced_resource * math.trunc((1 - std) * float(MAX_NODE_SCORE))
        return total

    def local_vector(self, task: TaskInfo, idx: np.ndarray, w: Weights) -> FloatArray:
        """:meth:`local_scalar` over many nodes: the weighted least/most/balanced scores.

        Where every node of ``idx`` has non-zero allocatable cpu and memory (and GPU when
        the pod requests it), the kernels reduce to fewer numpy operations with the same
        results (non-negative integers divide the same way in Go and Python, and every
        resource counts in the weighted mean); otherwise the general kernels run.
        """
        v = self._view
        total = np.zeros(len(idx), dtype=np.float64)
        if w.least_requested or w.most_requested:
            cap_cpu = np.rint(v.allocatable(CPU, idx)).astype(np.int64)
            cap_mem = np.rint(v.allocatable(MEMORY, idx)).astype(np.int64)
            if not ((cap_cpu > 0).all() and (cap_mem > 0).all()):
                if w.least_requested:
                    total += self.least_allocated(task, idx) * float(w.least_requested)
                if w.most_requested:
                    total += self.most_allocated(task, idx) * float(w.most_requested)
            else:
                pod_cpu, pod_mem = task.nonzero_request()
                node_cpu, node_mem = v.nonzero_requested(idx)
                req_cpu = np.rint(node_cpu + pod_cpu).astype(np.int64)
                req_mem = np.rint(node_mem + pod_mem).astype(np.int64)
                if w.least_requested:
                    wc, wm = LEAST_ALLOCATED_WEIGHTS
                    s_cpu = np.where(req_cpu <= cap_cpu, ((cap_cpu - req_cpu) * MAX_NODE_SCORE) // cap_cpu, 0)
                    s_mem = np.where(req_mem <= cap_mem, ((cap_mem - req_mem) * MAX_NODE_SCORE) // cap_mem, 0)
                    total += ((s_cpu * wc + s_mem * wm) // (wc + wm)) * float(w.least_requested)
                if w.most_requested:
                    wc, wm = MOST_ALLOCATED_WEIGHTS
                    s_cpu = (np.minimum(req_cpu, cap_cpu) * MAX_NODE_SCORE) // cap_cpu
                    s_mem = (np.minimum(req_mem, cap_mem) * MAX_NODE_SCORE) // cap_mem
                    total += ((s_cpu * wc + s_mem * wm) // (wc + wm)) * float(w.most_requested)
        if w.balanced_resource:
            total += self._balanced_local(task, idx) * float(w.balanced_resource)
        return total

    def _balanced_local(self, task: TaskInfo, idx: np.ndarray) -> IntArray:
        req = task.resreq
        pod = (req.milli_cpu, req.memory, req.scalars.get(GPU, 0.0))
        if not any(pod):
            return np.zeros(len(idx), dtype=np.int64)
        v = self._view
        names = (CPU, MEMORY, GPU) if pod[2] else (CPU, MEMORY)
        allocatable = [v.allocatable(name, idx) for name in names]
        if not all(a.all() for a in allocatable):
            return self.balanced_allocation(task, idx)
        fracs = [np.minimum((v.requested(name, idx) + amount) / alloc, 1.0)
                 for name, amount, alloc in zip(names, pod, allocatable)]
        if len(fracs) == 2:
            std = np.abs((fracs[0] - fracs[1]) / 2)
        else:
            mean = ((fracs[0] + fracs[1]) + fracs[2]) / 3
            sq = ((fracs[0] - mean) * (fracs[0] - mean) + (fracs[1] - mean) * (fracs[1] - mean)) \
                + (fracs[2] - mean) * (fracs[2] - mean)
            std = np.sqrt(sq / 3)
        return np.trunc((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)

    # ------------------------------------------------------------------ BalancedAllocation
    def balanced_allocation(self, task: TaskInfo, idx: np.ndarray) -> IntArray:
        req = task.resreq
        pod = (req.milli_cpu, req.memory, req.scalars.get(GPU, 0.0))
        if not any(pod):
            # Upstream (noderesources/balanced_allocation.go PreScore): best-effort pods are skipped.
            return np.zeros(len(idx), dtype=np.int64)
        v = self._view
        names = (CPU, MEMORY, GPU) if pod[2] else (CPU, MEMORY)
        requested = [v.requested(name, idx) + amount for name, amount in zip(names, pod)]
        allocatable = [v.allocatable(name, idx) for name in names]
        return balanced_allocation(requested, allocatable)

    # ------------------------------------------------------------------ NodeAffinity
    def _preferred_key(self, task: TaskInfo) -> str | None:
        if task.uid in self._affinity_key:
            return self._affinity_key[task.uid]
        affinity = task.pod.affinity
        na = affinity.get("nodeAffinity") if affinity else None
        preferred = na.get(_PREFERRED) if isinstance(na, Mapping) else None
        key = json.dumps(preferred, sort_keys=True, default=str) if preferred is not None else None
        self._affinity_key[task.uid] = key
        return key

    def node_affinity(self, task: TaskInfo, idx: np.ndarray) -> IntArray:
        key = self._preferred_key(task)
        if key is None:
            # Upstream (nodeaffinity PreScore): no preferred terms => Skip.
            return np.zeros(len(idx), dtype=np.int64)
        entry = self._affinity_raw.get(key)
        if entry is None:
            n = self._ssn.node_table.n
            entry = (PreferredNodeAffinity(task.pod.affinity), np.zeros(n, dtype=np.int64),
                     np.zeros(n, dtype=bool))
            self._affinity_raw[key] = entry
        terms, raw, done = entry
        if not terms.is_trivial:
            todo = idx[~done[idx]]
            nodes = self._ssn.node_list
            for i in todo.tolist():
                raw[i] = terms.score(nodes[i].name, nodes[i].labels)
            done[todo] = True
        return default_normalize(raw[idx])

    # ------------------------------------------------------------------ TaintToleration
    def _tainted_nodes(self) -> tuple[np.ndarray, np.ndarray]:
        if self._tainted is None or self._tainted_pos is None:
            nodes = self._ssn.node_list
            tainted = [n.index for n in nodes
                       if n.taints and any(t.get("effect") == PREFER_NO_SCHEDULE for t in n.taints)]
            self._tainted = np.array(tainted, dtype=np.int64)
            self._tainted_pos = np.full(len(nodes), -1, dtype=np.int64)
            self._tainted_pos[self._tainted] = np.arange(len(tainted), dtype=np.int64)
        return self._tainted, self._tainted_pos

    def _taint_counts_for(self, task: TaskInfo, tainted: np.ndarray) -> IntArray:
        key = self._toleration_key.get(task.uid)
        if key is None:
            key = json.dumps(_prefer_tolerations(task), sort_keys=True, default=str)
            self._toleration_key[task.uid] = key
        counts = self._taint_counts.get(key)
        if counts is None:
            tolerations = _prefer_tolerations(task)
            nodes = self._ssn.node_list
            counts = np.array([count_intolerable_prefer_no_schedule(nodes[i].taints, tolerations)
                               for i in tainted.tolist()], dtype=np.int64)
            self._taint_counts[key] = counts
        return counts

    def taint_toleration(self, task: TaskInfo, idx: np.ndarray) -> IntArray:
        tainted, pos = self._tainted_nodes()
        raw = np.zeros(len(idx), dtype=np.int64)
        if len(tainted):
            p = pos[idx]
            hit = p >= 0
            if hit.any():
                raw[hit] = self._taint_counts_for(task, tainted)[p[hit]]
        return default_normalize(raw, reverse=True)

    # ------------------------------------------------------------------ InterPodAffinity
    def pod_affinity(self, task: TaskInfo, idx: np.ndarray) -> IntArray:
        pod = task.pod
        view = self._view
        if _has_preferred_pod_terms(pod.affinity):
            placed: Sequence[TaskInfo] = [t for _n, t in view.pods()]
        else:
            index = view.affinity_pods()
            if not index or (len(index) == 1 and task.uid in index):
                return np.zeros(len(idx), dtype=np.int64)
            placed = [index[uid] for uid in sorted(index)]
        existing = [view.existing_pod(t) for t in placed if t.uid != task.uid]
        nodes = self._ssn.node_list
        names = [nodes[i].name for i in idx.tolist()]
        try:
            return interpod.score_nodes(pod.namespace, pod.labels, pod.affinity, existing, view.node_labels(),
                                        names, hard_pod_affinity_weight=0)
        except SelectorError:
            return np.zeros(len(idx), dtype=np.int64)

    # ------------------------------------------------------------------ PodTopologySpread
    def pod_topology_spread(self, task: TaskInfo, idx: np.ndarray) -> IntArray:
        pod = task.pod
        if not any(c.get("whenUnsatisfiable") == "ScheduleAnyway" for c in pod.topology_spread_constraints):
            return np.zeros(len(idx), dtype=np.int64)
        view = self._view
        existing = [topology_spread.SpreadPod(t.namespace, t.pod.labels, node.name,
                                              t.pod.deletion_timestamp is not None)
                    for node, t in view.pods() if t.uid != task.uid]
        nodes = self._ssn.node_list
        names = [nodes[i].name for i in idx.tolist()]
        try:
            return topology_spread.score_nodes(pod.namespace, pod.labels, pod.topology_spread_constraints,
                                               pod.node_selector, pod.affinity, pod.tolerations, existing,
                                               view.spread_nodes(), names)
        except SelectorError:
            return np.zeros(len(idx), dtype=np.int64)


class NodeOrder:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        self.weights = Weights.from_arguments(arguments)

    def on_session_open(self, ssn: Session) -> None:
        view = K8sNodeView(ssn)
        scorers = _Scorers(ssn, view)
        w = self.weights
        # ImageLocality is left out: without node image data it scores 0 on every node.
        weighted: list[tuple[int, Scorer]] = [
            (weight, fn) for weight, fn in (
                (w.least_requested, scorers.least_allocated),
                (w.most_requested, scorers.most_allocated),
                (w.balanced_resource, scorers.balanced_allocation),
                (w.node_affinity, scorers.node_affinity),
                (w.pod_affinity, scorers.pod_affinity),
                (w.taint_toleration, scorers.taint_toleration),
                (w.pod_topology_spread, scorers.pod_topology_spread),
            ) if weight != 0
        ]
        if not weighted:
            return
        ssn.add_event_handler(EventHandler(allocate=view.on_allocate, deallocate=view.on_deallocate))

        local_fns = {scorers.least_allocated, scorers.most_allocated, scorers.balanced_allocation}
        constant_part: dict[object, float] = {}

        def node_order(task: TaskInfo, idx: np.ndarray) -> np.ndarray:
            total = np.zeros(len(idx), dtype=np.float64)
            if len(idx) == 0:
                return total
            key = cache_key(task)
            if key is not None:
                # Every non-local scorer is constant for this task: score the node-local part
                # only (few nodes in plain Python). Scores are integers, so the sum is exact
                # in any order.
                const = constant_part.get(key)
                if const is None:
                    const = 0.0
                    for weight, fn in weighted:
                        if fn not in local_fns:
                            const += float(fn(task, idx[:1])[0]) * float(weight)
                    constant_part[key] = const
                if len(idx) > _SCALAR_MAX_NODES:
                    return scorers.local_vector(task, idx, w) + const
                for k, i in enumerate(idx.tolist()):
                    total[k] = const + scorers.local_scalar(task, i, w)
                return total
            for weight, fn in weighted:
                total += fn(task, idx) * float(weight)
            return total

        key_memo: dict[int, dict[str, tuple[object, ...] | None]] = {}
        canonical: dict[tuple[object, ...], tuple[object, ...]] = {}

        def cache_key(task: TaskInfo) -> tuple[object, ...] | None:
            # Memoised per task; the one session-dependent input, the pods with preferred
            # affinity terms, is part of the memo key through their count. Equal keys share
            # one tuple (replicas have equal keys; fewer long-lived objects for the collector).
            count = len(view.affinity_pods()) if w.pod_affinity else 0
            memo = key_memo.get(count)
            if memo is None:
                memo = key_memo[count] = {}
            uid = task.uid
            if uid in memo:
                return memo[uid]
            key = _cache_key(task)
            if key is not None:
                key = canonical.setdefault(key, key)
            memo[uid] = key
            return key

        def _cache_key(task: TaskInfo) -> tuple[object, ...] | None:
            # Node-local only when every normalising scorer is constant for this task.
            pod = task.pod
            if w.node_affinity and pod.affinity and (pod.affinity.get("nodeAffinity") or {}).get(
                "preferredDuringSchedulingIgnoredDuringExecution"
            ):
                return None
            if w.taint_toleration and len(scorers._tainted_nodes()[0]):
                return None
            if w.pod_affinity and (_has_preferred_pod_terms(pod.affinity) or view.affinity_pods()):
                return None
            if w.pod_topology_spread and any(
                c.get("whenUnsatisfiable") == "ScheduleAnyway" for c in pod.topology_spread_constraints
            ):
                return None
            return (w, ssn.node_table.task_vector(task), task.nonzero_request())

        # Node-local scores read the table's columns and the in-session eviction delta, which
        # placing a pending task does not change.
        ssn.add_node_order_fn(NAME, node_order, cache_key=cache_key, projectable=lambda _task: True)

    def on_session_close(self, ssn: Session) -> None:
        return None


def new(arguments: Mapping[str, Any]) -> NodeOrder:
    return NodeOrder(arguments)
