"""Typed Kubernetes / Volcano objects: the subset the scheduler reads.

These are plain slotted dataclasses built once, at the edge, from manifest dicts by
:mod:`pyvolcano.api.manifest` (which validates every field it reads). Sub-structures whose
semantics live in the Kubernetes matching rules (affinity, tolerations, taints, topology
spread constraints) are kept in their manifest shape (dicts and lists) and interpreted by
:mod:`pyvolcano.api.matching`, :mod:`pyvolcano.api.interpod` and
:mod:`pyvolcano.api.topology_spread`.

Invariant: objects are treated as values by the scheduler; the cache replaces an object on
update instead of mutating it in place, except for status fields the scheduler owns
(``Pod.node_name``/``phase`` on bind, ``Pod.conditions`` and ``PodGroup.phase``/``conditions`` at
session close). ``Pod.stored_unschedulable`` keeps the ``PodScheduled=False`` condition as it was
read, so that the decision writer can tell a condition the store already holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyvolcano.api.dra.types import PodResourceClaim
from pyvolcano.api.matching import NOTHING, LabelSelector
from pyvolcano.api.names import GROUP_NAME_KEY
from pyvolcano.api.network_topology import NetworkTopology, SubGroupPolicy

__all__ = [
    "Container",
    "Node",
    "NodeGroupAffinity",
    "OwnerReference",
    "Pod",
    "PodDisruptionBudget",
    "PodGroup",
    "PodGroupCondition",
    "PriorityClass",
    "Queue",
    "QueueAffinity",
    "ResourceQuota",
    "unschedulable_condition",
]


@dataclass(slots=True)
class OwnerReference:
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool = False


@dataclass(slots=True)
class Container:
    name: str
    requests: dict[str, Any] = field(default_factory=dict)
    limits: dict[str, Any] = field(default_factory=dict)
    ports: list[dict[str, Any]] = field(default_factory=list)
    restart_policy: str | None = None  # "Always" marks a sidecar init container


def unschedulable_condition(conditions: list[dict[str, Any]]) -> tuple[str, str] | None:
    """(reason, message) of a pod's ``PodScheduled`` condition when it is False, else None."""
    for c in conditions:
        if c.get("type") == "PodScheduled":
            if c.get("status") != "False":
                return None
            return str(c.get("reason") or ""), str(c.get("message") or "")
    return None


@dataclass(slots=True)
class Pod:
    namespace: str
    name: str
    uid: str
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    owner_references: list[OwnerReference] = field(default_factory=list)
    creation_timestamp: float = 0.0
    deletion_timestamp: float | None = None
    containers: list[Container] = field(default_factory=list)
    init_containers: list[Container] = field(default_factory=list)
    overhead: dict[str, Any] = field(default_factory=dict)
    node_name: str = ""
    scheduler_name: str = "default-scheduler"
    priority: int | None = None
    priority_class_name: str = ""
    preemption_policy: str = ""
    node_selector: dict[str, str] = field(default_factory=dict)
    affinity: dict[str, Any] | None = None
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    topology_spread_constraints: list[dict[str, Any]] = field(default_factory=list)
    scheduling_gates: list[str] = field(default_factory=list)
    phase: str = "Pending"
    conditions: list[dict[str, Any]] = field(default_factory=list)
    nominated_node_name: str = ""
    # status.startTime (seconds since the epoch, as creation_timestamp), or None.
    start_time: float | None = None
    # (reason, message) of the stored PodScheduled=False condition, as read; session close
    # rewrites ``conditions``, never this.
    stored_unschedulable: tuple[str, str] | None = None
    # Dynamic resource allocation: spec.resourceClaims, and status.resourceClaimStatuses as
    # pod claim name -> generated claim name ("" when none was generated).
    resource_claims: tuple[PodResourceClaim, ...] = ()
    resource_claim_statuses: dict[str, str] = field(default_factory=dict)
    # The PersistentVolumeClaims its volumes name, in volume order (a generic ephemeral
    # volume's is "<pod>-<volume>"), and those of ephemeral volumes; () for most pods.
    claims: tuple[str, ...] = ()
    ephemeral_claims: tuple[str, ...] = ()
    # Pod-level requests (``spec.resources.requests`` after the API server's defaulting from
    # pod-level limits), None for the pods that set none: cpu, memory and hugepages here
    # replace the containers' sum in the pod's request (api/task.py).
    pod_requests: dict[str, Any] | None = None
    # Paths of fields set that the scheduler does not act on (api/plugin_fields.py), () for most.
    unmodelled: tuple[str, ...] = ()
    # ``spec.activeDeadlineSeconds``: the pod's declared runtime limit, read by the reservation
    # plugin's runtime estimate (with ``start_time``).
    active_deadline_seconds: float | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def group_name(self) -> str:
        return self.annotations.get(GROUP_NAME_KEY, "")

    @property
    def has_pod_affinity(self) -> bool:
        """Whether the pod declares podAffinity or podAntiAffinity terms."""
        a = self.affinity
        return a is not None and ("podAffinity" in a or "podAntiAffinity" in a)


@dataclass(slots=True)
class Node:
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, Any]] = field(default_factory=list)
    unschedulable: bool = False
    capacity: dict[str, Any] = field(default_factory=dict)
    allocatable: dict[str, Any] = field(default_factory=dict)
    conditions: list[dict[str, Any]] = field(default_factory=list)
    creation_timestamp: float = 0.0


@dataclass(slots=True)
class PodGroupCondition:
    type: str
    status: str
    reason: str = ""
    message: str = ""
    transition_id: str = ""
    last_transition_time: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "transitionID": self.transition_id,
        }


@dataclass(slots=True)
class PodGroup:
    namespace: str
    name: str
    uid: str
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    creation_timestamp: float = 0.0
    min_member: int = 0
    min_task_member: dict[str, int] = field(default_factory=dict)
    queue: str = ""
    priority_class_name: str = ""
    min_resources: dict[str, Any] | None = None
    phase: str = "Pending"
    conditions: list[PodGroupCondition] = field(default_factory=list)
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    network_topology: NetworkTopology | None = None
    sub_group_policy: tuple[SubGroupPolicy, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class NodeGroupAffinity:
    """One of a Queue's ``spec.affinity.nodeGroup(Anti)Affinity``: node-group names, as written."""

    required: tuple[str, ...] = ()
    preferred: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class QueueAffinity:
    """A Queue's ``spec.affinity``: the node groups (label ``volcano.sh/nodegroup-name``) its
    jobs may or should run on (read by the nodegroup plugin)."""

    node_group_affinity: NodeGroupAffinity | None = None
    node_group_anti_affinity: NodeGroupAffinity | None = None


@dataclass(slots=True)
class Queue:
    name: str
    uid: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    creation_timestamp: float = 0.0
    weight: int = 1
    capability: dict[str, Any] | None = None
    deserved: dict[str, Any] | None = None
    guarantee: dict[str, Any] | None = None
    reclaimable: bool = True
    priority: int = 0
    parent: str = ""
    state: str = "Open"
    allocated: dict[str, float] = field(default_factory=dict)
    # ``spec.affinity`` (node-group affinity) as given: only the nodegroup plugin acts on it.
    affinity: dict[str, Any] | None = None
    # The same, read for the nodegroup plugin (None without ``spec.affinity``).
    node_groups: QueueAffinity | None = None


@dataclass(slots=True)
class PriorityClass:
    name: str
    value: int
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"


@dataclass(slots=True)
class PodDisruptionBudget:
    """A ``policy/v1`` PodDisruptionBudget: the parts the pdb plugin reads.

    ``selector`` is ``spec.selector`` compiled (a missing one selects nothing);
    ``disruptions_allowed`` and ``disrupted_pods`` (pod names) are the disruption controller's
    ``status``. ``min_available`` / ``max_unavailable`` are kept as written (an integer or a
    percentage) for the simulator's disruption controller; the scheduler does not read them.
    """

    namespace: str
    name: str
    uid: str = ""
    selector: LabelSelector = NOTHING
    disruptions_allowed: int = 0
    disrupted_pods: frozenset[str] = frozenset()
    min_available: int | str | None = None
    max_unavailable: int | str | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(slots=True)
class ResourceQuota:
    """A ``v1`` ResourceQuota: ``status.hard`` and ``status.used`` (quantities as written), which
    the resourcequota plugin reads, and ``spec.hard``, which the quota controller copies into
    ``status.hard``. Scopes are not modelled (upstream's plugin ignores them too)."""

    namespace: str
    name: str
    uid: str = ""
    hard: dict[str, Any] = field(default_factory=dict)
    used: dict[str, Any] = field(default_factory=dict)
    spec_hard: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"
