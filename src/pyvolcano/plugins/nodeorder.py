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

Modules: :mod:`._k8s_node_view` is the kube-scheduler node snapshot the scorers read;
:mod:`._node_scorers` holds the scorers and the weights; this module registers them.

Session callbacks (:class:`NodeOrderSession`). The node order is ``Σ weight × score`` over
the scorers with a non-zero weight. When every normalising scorer (NodeAffinity,
TaintToleration, InterPodAffinity, PodTopologySpread) is constant for a task, its cache key
(:meth:`NodeOrderSession.cache_key`) is not ``None``: the constant part is computed once per
key on one node, and only the node-local scorers (LeastAllocated, MostAllocated,
BalancedAllocation) run per node. Keys are memoised per task and per number of pods with
preferred pod affinity terms (the one session-dependent input).

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

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from pyvolcano.api.task import TaskInfo
from pyvolcano.framework.interfaces import EventHandler
from pyvolcano.plugins._k8s_node_view import PREFERRED, K8sNodeView, has_preferred_pod_terms
from pyvolcano.plugins._node_scorers import NODEORDER_ARGUMENTS, NodeScorers, Scorer, Weights

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["ARGUMENTS", "NAME", "NodeOrder", "NodeOrderSession", "new"]

NAME: Final = "nodeorder"
ARGUMENTS: Final = NODEORDER_ARGUMENTS
# Up to this many candidate nodes, the node-local scores run in plain Python.
_SCALAR_MAX_NODES = 8

CacheKey = tuple[object, ...]


class NodeOrderSession:
    """The node order callback of one session and its cache key (see the module docstring)."""

    def __init__(self, ssn: Session, weights: Weights):
        self._ssn = ssn
        self._weights = w = weights
        self.view = view = K8sNodeView(ssn)
        self._scorers = scorers = NodeScorers(ssn, view)
        # ImageLocality is left out: without node image data it scores 0 on every node.
        self.weighted: list[tuple[int, Scorer]] = [
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
        local = {scorers.least_allocated, scorers.most_allocated, scorers.balanced_allocation}
        self._normalising = [(weight, fn) for weight, fn in self.weighted if fn not in local]
        self._constant_part: dict[CacheKey, float] = {}
        self._key_memo: dict[int, dict[str, CacheKey | None]] = {}
        self._canonical: dict[CacheKey, CacheKey] = {}

    def node_order(self, task: TaskInfo, idx: np.ndarray) -> np.ndarray:
        """The weighted scores of ``task`` on the candidate nodes ``idx``."""
        total = np.zeros(len(idx), dtype=np.float64)
        if len(idx) == 0:
            return total
        key = self.cache_key(task)
        if key is not None:
            # Scores are integers, so the sum is exact in any order.
            const = self._constant_part.get(key)
            if const is None:
                const = self._constant_part[key] = self._constant_score(task, idx[:1])
            scorers, w = self._scorers, self._weights
            if len(idx) > _SCALAR_MAX_NODES:
                return scorers.local_vector(task, idx, w) + const
            for k, i in enumerate(idx.tolist()):
                total[k] = const + scorers.local_scalar(task, i, w)
            return total
        for weight, fn in self.weighted:
            total += fn(task, idx) * float(weight)
        return total

    def _constant_score(self, task: TaskInfo, one: np.ndarray) -> float:
        """The normalising scorers' weighted sum, the same on every node for a cacheable task."""
        const = 0.0
        for weight, fn in self._normalising:
            const += float(fn(task, one)[0]) * float(weight)
        return const

    def cache_key(self, task: TaskInfo) -> CacheKey | None:
        """Memoised per task; the one session-dependent input, the pods with preferred
        affinity terms, is part of the memo key through their count. Equal keys share one
        tuple (replicas have equal keys; fewer long-lived objects for the collector)."""
        count = len(self.view.affinity_pods()) if self._weights.pod_affinity else 0
        memo = self._key_memo.get(count)
        if memo is None:
            memo = self._key_memo[count] = {}
        uid = task.uid
        if uid in memo:
            return memo[uid]
        key = self._node_local_key(task)
        if key is not None:
            key = self._canonical.setdefault(key, key)
        memo[uid] = key
        return key

    def _node_local_key(self, task: TaskInfo) -> CacheKey | None:
        """Node-local only when every normalising scorer is constant for this task."""
        w = self._weights
        pod = task.pod
        if w.node_affinity and pod.affinity and (pod.affinity.get("nodeAffinity") or {}).get(PREFERRED):
            return None
        if w.taint_toleration and len(self._scorers.tainted_nodes()[0]):
            return None
        if w.pod_affinity and (has_preferred_pod_terms(pod.affinity) or self.view.affinity_pods()):
            return None
        if w.pod_topology_spread and any(
            c.get("whenUnsatisfiable") == "ScheduleAnyway" for c in pod.topology_spread_constraints
        ):
            return None
        return (w, self._ssn.node_table.task_vector(task), task.nonzero_request())


def _projectable(_task: TaskInfo) -> bool:
    # Node-local scores read the table's columns and the in-session eviction delta, which
    # placing a pending task does not change.
    return True


class NodeOrder:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        self.weights = Weights.from_arguments(arguments)

    def on_session_open(self, ssn: Session) -> None:
        order = NodeOrderSession(ssn, self.weights)
        if not order.weighted:
            return
        view = order.view
        ssn.add_event_handler(EventHandler(allocate=view.on_allocate, deallocate=view.on_deallocate,
                                           allocate_many=view.on_allocate_many))
        ssn.add_node_order_fn(NAME, order.node_order, cache_key=order.cache_key, projectable=_projectable)

    def on_session_close(self, ssn: Session) -> None:
        return None


def new(arguments: Mapping[str, Any]) -> NodeOrder:
    return NodeOrder(arguments)
