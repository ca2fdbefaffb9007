"""The kube-scheduler score plugins nodeorder wraps, over a :class:`~._k8s_node_view.K8sNodeView`.

Each scorer is ``(task, idx) -> int64 scores in 0..100`` for the candidate nodes ``idx``;
normalising scorers normalise over those candidates. :class:`Weights` are the plugin's
per-scorer weights.

Vectorisation and caches. LeastAllocated, MostAllocated and BalancedAllocation are a handful of
numpy operations over the candidate indices; for a task whose normalising scorers are all
constant (the node-order cache key is not None) only these node-local scorers run, in plain
Python for a few nodes (:meth:`NodeScorers.local_scalar`) and with reduced kernels otherwise
(:meth:`NodeScorers.local_vector`). NodeAffinity evaluates a pod's preferred terms once per
node per distinct set of terms and session (node labels do not change within a session); a pod
without preferred terms scores 0 without touching nodes. TaintToleration finds the nodes
carrying PreferNoSchedule taints once per session; all other nodes count 0 untolerated taints,
and counts are cached per distinct toleration list. InterPodAffinity scans existing pods only
when the incoming pod has preferred pod (anti-)affinity terms, or else only the pods that have
such terms themselves (an index kept up to date by the event handlers); PodTopologySpread runs
only for pods with ScheduleAnyway constraints.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
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
from pyvolcano.api.resource import CPU, MEMORY
from pyvolcano.api.task import TaskInfo
from pyvolcano.framework.argument_keys import ArgumentKeys, honoured
from pyvolcano.framework.arguments import Arguments
from pyvolcano.plugins._k8s_node_view import GPU, PREFERRED, K8sNodeView, has_preferred_pod_terms
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

__all__ = ["LEAST_ALLOCATED_WEIGHTS", "MOST_ALLOCATED_WEIGHTS", "NODEORDER_ARGUMENTS", "PREFER_NO_SCHEDULE",
           "NodeScorers", "Scorer", "Weights"]

PREFER_NO_SCHEDULE: Final = "PreferNoSchedule"
# Volcano's NodeResourcesFit arguments (cpu, memory weights).
LEAST_ALLOCATED_WEIGHTS: Final = (50, 50)
MOST_ALLOCATED_WEIGHTS: Final = (1, 1)

Scorer = Callable[[TaskInfo, np.ndarray], IntArray]

_WEIGHT_KEYS: Final = {
    "least_requested": "leastrequested.weight",
    "most_requested": "mostrequested.weight",
    "balanced_resource": "balancedresource.weight",
    "node_affinity": "nodeaffinity.weight",
    "pod_affinity": "podaffinity.weight",
    "taint_toleration": "tainttoleration.weight",
    "image_locality": "imagelocality.weight",
    "pod_topology_spread": "podtopologyspread.weight",
}
NODEORDER_ARGUMENTS: Final = ArgumentKeys("plugin nodeorder", tuple(honoured(k) for k in _WEIGHT_KEYS.values()))
"""nodeorder's arguments (upstream ``nodeorder.go``): one weight per scorer."""


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
        args = Arguments(arguments, keys=NODEORDER_ARGUMENTS)
        d = cls()
        return cls(**{field: args.get_int(key, getattr(d, field)) for field, key in _WEIGHT_KEYS.items()})


def _prefer_tolerations(task: TaskInfo) -> list[dict[str, Any]]:
    """The tolerations that count against PreferNoSchedule taints (effect empty or PreferNoSchedule)."""
    return [t for t in task.pod.tolerations if (t.get("effect") or "") in ("", PREFER_NO_SCHEDULE)]


def _scalar_mean(terms: list[tuple[int, int, int]]) -> int:
    total = 0
    weight_sum = 0
    for score, capacity, weight in terms:
        if capacity != 0:
            total += score * weight
            weight_sum += weight
    return total // weight_sum if weight_sum else 0


class NodeScorers:
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
        preferred = na.get(PREFERRED) if isinstance(na, Mapping) else None
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
    def tainted_nodes(self) -> tuple[np.ndarray, np.ndarray]:
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
        tainted, pos = self.tainted_nodes()
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
        if has_preferred_pod_terms(pod.affinity):
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
