"""The typed result of a pending diagnosis: why a job did not get what it needs.

A :class:`Diagnosis` is plain data, built at session close by
:mod:`pyvolcano.diagnosis.diagnose` and read by the CLI, the simulator and the PodGroup
condition. Its ``to_dict()`` form is the documented, stable JSON schema (docs/reasons.md):

```
{"job": "ns/pg", "queue": "q", "session": "session-1",
 "stage": "node-fit", "reason": "NodeFit.InsufficientResource",
 "message": "...", "hint": "needs 8 nvidia.com/gpu on one node; the largest free block is 6 on n3",
 "task": "ns/pod-0", "scope": "task",
 "tasks": {"total": 4, "min_available": 4, "placed": 0, "unplaced": 4, "gated": 0},
 "resources": [{"name": "nvidia.com/gpu", "requested": 8.0, "free_in_queue": null,
                "free_in_cluster": 12.0, "free_on_best_node": 6.0, "best_node": "n3",
                "shortfall": 2.0}],
 "node_failures": {"Insufficient nvidia.com/gpu": 3},
 "nodes": {"total": 3, "failed": 3},
 "preemption": {"could_help": false, "action": null, "enabled": false, "why_not": "...",
                "victims": []}}
```

Units: ``cpu`` in cores, ``memory`` in bytes, ``pods`` whole, every other resource in its
own unit (``nvidia.com/gpu: 8.0``; the scheduler counts them in milli-units internally).
``free_in_queue`` is null when no quota plugin limits the queue on that dimension.
A job a plugin blocked in its own terms (numa-aware, tdm, usage, extender) also carries
``"plugin": {"name", "figures"}``: the plugin's figures by name. Jobs held back by a
network-topology constraint also carry ``"topology"``: per tier, the
HyperNode with the most room for the pods still needed (``{"tier", "best", "room", "allowed",
"hypernodes"}``); the key is absent for other diagnoses.
Jobs held back by their PersistentVolumeClaims (the ``Volume.*`` reasons) also carry
``"volumes"``: per claim of the pod, its class, binding mode, requested bytes, status and the
PVs of its class with the nodes each is pinned to and why it is not usable (``{"claim",
"class", "binding_mode", "requested", "status", "volume", "pvs": [{"name", "nodes",
"state"}]}``); the key is absent for other diagnoses.
Jobs a plugin's own limit holds back (a ResourceQuota, a node group's limit, a
PodDisruptionBudget, a cooldown) carry ``"limits"``: ``[{"plugin", "object", "name", "limit",
"used", "requested"}]`` (:class:`LimitFigure`).
Jobs held back by their ResourceClaims (the DRA ``NodeFit.ClaimNotReady``, ``NodeFit.NoDevices``,
``NodeFit.ClaimInvalid`` reasons) also carry ``"devices"``: per claim of the pod, its status and,
per request, the devices of the cluster that match it, how many are free, and the node with the
most of them (``{"claim", "status", "requests": [{"request", "class", "wants", "matching",
"free", "best_node", "free_on_best_node", "note"}]}``); the key is absent for other diagnoses.
``scope`` says what ``requested`` counts: ``task`` (one pod, node fit), ``gang`` (the pods
still needed to reach minAvailable, queue quota) or ``minResources`` (enqueue).

Invariants: exactly one reason per diagnosis, every reason belongs to one stage
(:data:`STAGE_OF`), lists are in a stable order, so equal sessions give equal dicts.
"""

from __future__ import annotations

import enum
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from pyvolcano.api.resource import Resource

__all__ = [
    "STAGE_OF",
    "DeviceClaimFigure",
    "DeviceRequestFigure",
    "Diagnosis",
    "HyperNodeFigure",
    "LimitFigure",
    "PluginBlock",
    "PreemptionInfo",
    "QueueQuota",
    "Reason",
    "ResourceFigure",
    "Stage",
    "TaskCounts",
    "VolumeFigure",
]


class Stage(enum.StrEnum):
    """Where in the scheduling pipeline the job stopped."""

    ENQUEUE = "enqueue"
    QUEUE_STATE = "queue-state"
    QUEUE_CAPABILITY = "queue-capability"
    QUEUE_DESERVED = "queue-deserved"
    GANG = "gang"
    SCHEDULING_GATE = "scheduling-gate"
    TOPOLOGY = "topology"
    NODE_FIT = "node-fit"
    PREEMPTION = "preemption"
    RESERVATION = "reservation"
    SESSION = "session"


class Reason(enum.StrEnum):
    """The reason codes: stable tokens, documented in docs/reasons.md."""

    ENQUEUE_REJECTED = "Enqueue.Rejected"
    ENQUEUE_RESOURCE_QUOTA_EXCEEDED = "Enqueue.ResourceQuotaExceeded"
    QUEUE_CLOSED = "Queue.Closed"
    QUEUE_OVER_CAPABILITY = "Queue.OverCapability"
    QUEUE_OVER_DESERVED = "Queue.OverDeserved"
    GANG_MIN_AVAILABLE_NOT_MET = "Gang.MinAvailableNotMet"
    SCHEDULING_GATED = "SchedulingGated"
    TOPOLOGY_NOT_READY = "Topology.NotReady"
    TOPOLOGY_NO_HYPERNODE_FITS = "Topology.NoHyperNodeFits"
    TOPOLOGY_ALLOCATED_HYPERNODE_FULL = "Topology.AllocatedHyperNodeFull"
    NODE_FIT_INSUFFICIENT_RESOURCE = "NodeFit.InsufficientResource"
    NODE_FIT_PREDICATE_FAILED = "NodeFit.PredicateFailed"
    NODE_GROUP_AFFINITY_UNSATISFIED = "NodeGroup.AffinityUnsatisfied"
    NODE_GROUP_RESOURCE_LIMIT_EXCEEDED = "NodeGroup.ResourceLimitExceeded"
    NODE_GROUP_RESOURCE_LIMITS_INVALID = "NodeGroup.InvalidResourceLimits"
    NODE_FIT_CLAIM_NOT_READY = "NodeFit.ClaimNotReady"
    NODE_FIT_NO_DEVICES = "NodeFit.NoDevices"
    NODE_FIT_CLAIM_INVALID = "NodeFit.ClaimInvalid"
    PREEMPTION_NOT_ALLOWED = "Preemption.NotAllowed"
    PREEMPTION_DISRUPTION_BUDGET = "Preemption.DisruptionBudget"
    PREEMPTION_COOLDOWN = "Preemption.CooldownProtected"
    PREEMPTION_WAITING_FOR_RELEASE = "Preemption.WaitingForRelease"
    NOT_ATTEMPTED = "Session.NotAttempted"
    NUMA_POLICY_MISMATCH = "NUMA.PolicyMismatch"
    NUMA_NOT_ALIGNED = "NUMA.NotAligned"
    TDM_ZONE_CLOSED = "TDM.RevocableZoneClosed"
    TDM_NOT_REVOCABLE = "TDM.NotRevocable"
    USAGE_NODE_OVERLOADED = "Usage.NodeOverloaded"
    EXTENDER_REJECTED = "Extender.Rejected"
    EXTENDER_ENQUEUE_REJECTED = "Extender.EnqueueRejected"
    VOLUME_CLAIM_UNAVAILABLE = "Volume.ClaimUnavailable"
    VOLUME_UNBOUND_IMMEDIATE = "Volume.UnboundImmediate"
    VOLUME_NO_MATCHING_PV = "Volume.NoMatchingPV"
    VOLUME_NODE_CONFLICT = "Volume.NodeConflict"
    VOLUME_NOT_ENOUGH_STORAGE = "Volume.NotEnoughStorage"
    VOLUME_ZONE_CONFLICT = "Volume.ZoneConflict"
    VOLUME_ATTACH_LIMIT = "Volume.AttachLimit"
    RESERVATION_HELD = "Reservation.Held"
    RESERVATION_BACKFILL = "Reservation.Backfill"


STAGE_OF: dict[Reason, Stage] = {
    Reason.ENQUEUE_REJECTED: Stage.ENQUEUE,
    Reason.ENQUEUE_RESOURCE_QUOTA_EXCEEDED: Stage.ENQUEUE,
    Reason.QUEUE_CLOSED: Stage.QUEUE_STATE,
    Reason.QUEUE_OVER_CAPABILITY: Stage.QUEUE_CAPABILITY,
    Reason.QUEUE_OVER_DESERVED: Stage.QUEUE_DESERVED,
    Reason.GANG_MIN_AVAILABLE_NOT_MET: Stage.GANG,
    Reason.SCHEDULING_GATED: Stage.SCHEDULING_GATE,
    Reason.TOPOLOGY_NOT_READY: Stage.TOPOLOGY,
    Reason.TOPOLOGY_NO_HYPERNODE_FITS: Stage.TOPOLOGY,
    Reason.TOPOLOGY_ALLOCATED_HYPERNODE_FULL: Stage.TOPOLOGY,
    Reason.NODE_FIT_INSUFFICIENT_RESOURCE: Stage.NODE_FIT,
    Reason.NODE_FIT_PREDICATE_FAILED: Stage.NODE_FIT,
    Reason.NODE_GROUP_AFFINITY_UNSATISFIED: Stage.NODE_FIT,
    Reason.NODE_GROUP_RESOURCE_LIMIT_EXCEEDED: Stage.NODE_FIT,
    Reason.NODE_GROUP_RESOURCE_LIMITS_INVALID: Stage.NODE_FIT,
    Reason.NODE_FIT_CLAIM_NOT_READY: Stage.NODE_FIT,
    Reason.NODE_FIT_NO_DEVICES: Stage.NODE_FIT,
    Reason.NODE_FIT_CLAIM_INVALID: Stage.NODE_FIT,
    Reason.PREEMPTION_NOT_ALLOWED: Stage.PREEMPTION,
    Reason.PREEMPTION_DISRUPTION_BUDGET: Stage.PREEMPTION,
    Reason.PREEMPTION_COOLDOWN: Stage.PREEMPTION,
    Reason.PREEMPTION_WAITING_FOR_RELEASE: Stage.PREEMPTION,
    Reason.NOT_ATTEMPTED: Stage.SESSION,
    Reason.NUMA_POLICY_MISMATCH: Stage.NODE_FIT,
    Reason.NUMA_NOT_ALIGNED: Stage.NODE_FIT,
    Reason.TDM_ZONE_CLOSED: Stage.NODE_FIT,
    Reason.TDM_NOT_REVOCABLE: Stage.NODE_FIT,
    Reason.USAGE_NODE_OVERLOADED: Stage.NODE_FIT,
    Reason.EXTENDER_REJECTED: Stage.NODE_FIT,
    Reason.EXTENDER_ENQUEUE_REJECTED: Stage.ENQUEUE,
    Reason.VOLUME_CLAIM_UNAVAILABLE: Stage.NODE_FIT,
    Reason.VOLUME_UNBOUND_IMMEDIATE: Stage.NODE_FIT,
    Reason.VOLUME_NO_MATCHING_PV: Stage.NODE_FIT,
    Reason.VOLUME_NODE_CONFLICT: Stage.NODE_FIT,
    Reason.VOLUME_NOT_ENOUGH_STORAGE: Stage.NODE_FIT,
    Reason.VOLUME_ZONE_CONFLICT: Stage.NODE_FIT,
    Reason.VOLUME_ATTACH_LIMIT: Stage.NODE_FIT,
    Reason.RESERVATION_HELD: Stage.RESERVATION,
    Reason.RESERVATION_BACKFILL: Stage.RESERVATION,
}


@dataclass(frozen=True, slots=True)
class QueueQuota:
    """A quota plugin's view of one queue during a session (proportion or capacity).

    ``allocate_limit`` is what allocate checks a task against (proportion: deserved,
    capacity: the real capability); ``capability`` is what enqueue checks minResources
    against. Dimensions at or above :data:`UNLIMITED` are unlimited.
    """

    plugin: str
    allocated: Resource
    inqueue: Resource
    elastic: Resource
    deserved: Resource
    capability: Resource
    allocate_limit: Resource
    limit_kind: str  # "deserved" or "capability": which figure allocate_limit is


UNLIMITED = 1e300


@dataclass(frozen=True, slots=True)
class ResourceFigure:
    """One resource dimension of a diagnosis, in user units (cpu cores, memory bytes)."""

    name: str
    requested: float
    free_in_cluster: float
    free_in_queue: float | None = None
    free_on_best_node: float | None = None
    best_node: str | None = None
    shortfall: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "requested": self.requested,
            "free_in_queue": self.free_in_queue,
            "free_in_cluster": self.free_in_cluster,
            "free_on_best_node": self.free_on_best_node,
            "best_node": self.best_node,
            "shortfall": self.shortfall,
        }


@dataclass(frozen=True, slots=True)
class LimitFigure:
    """One limit a plugin enforces and how the job stands against it: a ResourceQuota's
    ``status.hard`` on one resource, a node group's limit for a queue, a PodDisruptionBudget's
    ``disruptionsAllowed``, a pod's cooldown. Amounts in user units (cpu cores, memory bytes,
    pods, seconds); ``used`` is None where the plugin keeps no usage."""

    plugin: str
    object: str  # e.g. "ResourceQuota ns/quota", "Queue q: node group g", "Pod ns/p"
    name: str  # the resource, or what is limited ("disruptionsAllowed", "cooldown seconds")
    limit: float
    used: float | None
    requested: float

    def to_dict(self) -> dict[str, Any]:
        return {"plugin": self.plugin, "object": self.object, "name": self.name, "limit": self.limit,
                "used": self.used, "requested": self.requested}


@dataclass(frozen=True, slots=True)
class PluginBlock:
    """A plugin's own account of how it holds a job back: its reason code, the message, the
    smallest change that would let the job through, and the figures: the limits it enforces
    (``limits``, pdb, cdp, resourcequota, nodegroup) or its own figures by name (``plugin``,
    ``figures``, JSON-able: numa-aware, tdm, usage, extender)."""

    reason: Reason
    message: str
    hint: str
    _: KW_ONLY
    limits: tuple[LimitFigure, ...] = ()
    plugin: str = ""
    figures: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class PreemptionInfo:
    """Whether evicting other pods (preempt or reclaim) could have made room, and why it did not."""

    could_help: bool
    action: str | None = None  # "preempt" or "reclaim": the action that could have helped
    enabled: bool = False  # whether that action is in the configured actions
    why_not: str = ""
    victims: tuple[str, ...] = ()  # pods whose eviction would make room on the best node
    # A plugin that keeps the victims (pdb, cdp): its reason code and figures.
    blocked_by: PluginBlock | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "could_help": self.could_help,
            "action": self.action,
            "enabled": self.enabled,
            "why_not": self.why_not,
            "victims": list(self.victims),
        }


@dataclass(frozen=True, slots=True)
class HyperNodeFigure:
    """For one tier: the HyperNode with the most room for the pods a topology constraint needs."""

    tier: int
    best: str
    room: int  # how many of the needed pods fit on its nodes now
    allowed: bool  # whether the constraint lets the job use this tier
    hypernodes: int  # HyperNodes of this tier that were candidates

    def to_dict(self) -> dict[str, Any]:
        return {"tier": self.tier, "best": self.best, "room": self.room, "allowed": self.allowed,
                "hypernodes": self.hypernodes}


@dataclass(frozen=True, slots=True)
class VolumeFigure:
    """One claim of the pod a volume diagnosis is about."""

    claim: str  # namespace/name
    storage_class: str
    binding_mode: str  # Immediate, WaitForFirstConsumer, or "" (no such class)
    requested: float  # bytes
    status: str  # bound, unbound, missing, deleting
    volume: str | None = None  # the PV it is bound to
    # The PVs of its class: (name, the nodes it is pinned to joined by ",", "" for any node,
    # why it is not usable for this claim or "available").
    pvs: tuple[tuple[str, str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"claim": self.claim, "class": self.storage_class, "binding_mode": self.binding_mode,
                "requested": self.requested, "status": self.status, "volume": self.volume,
                "pvs": [{"name": n, "nodes": nodes, "state": st} for n, nodes, st in self.pvs]}


@dataclass(frozen=True, slots=True)
class DeviceRequestFigure:
    """One request (or ``firstAvailable`` alternative) of a claim a DRA diagnosis is about."""

    request: str  # "gpus", or "gpus/h100" for an alternative
    device_class: str
    wants: str  # the device count, or "all"
    matching: int  # devices in the cluster passing the class's and the request's selectors
    free: int  # of them, not allocated to any claim
    best_node: str | None  # the node with the most free matching devices
    free_on_best_node: int
    note: str = ""  # what stops it whatever the devices (no such class, a selector error)

    def to_dict(self) -> dict[str, Any]:
        return {"request": self.request, "class": self.device_class, "wants": self.wants,
                "matching": self.matching, "free": self.free, "best_node": self.best_node,
                "free_on_best_node": self.free_on_best_node, "note": self.note}


@dataclass(frozen=True, slots=True)
class DeviceClaimFigure:
    """One ResourceClaim of the pod a DRA diagnosis is about."""

    claim: str  # namespace/name, or "<pod claim> (from template <t>)" before it is created
    status: str  # "not allocated", "allocated on n1", "does not exist yet", "being deleted", ...
    requests: tuple[DeviceRequestFigure, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"claim": self.claim, "status": self.status, "requests": [r.to_dict() for r in self.requests]}


@dataclass(frozen=True, slots=True)
class TaskCounts:
    total: int
    min_available: int
    placed: int
    unplaced: int
    gated: int

    def to_dict(self) -> dict[str, int]:
        return {"total": self.total, "min_available": self.min_available, "placed": self.placed,
                "unplaced": self.unplaced, "gated": self.gated}


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """Why one job did not get all it needs in one session."""

    job: str
    queue: str
    session: str
    reason: Reason
    message: str
    hint: str
    tasks: TaskCounts
    task: str | None = None
    scope: str = "task"
    resources: tuple[ResourceFigure, ...] = ()
    node_failures: tuple[tuple[str, int], ...] = ()  # (predicate reason, node count), sorted
    nodes_total: int = 0
    nodes_failed: int = 0
    preemption: PreemptionInfo = field(default_factory=lambda: PreemptionInfo(could_help=False))
    topology: tuple[HyperNodeFigure, ...] = ()
    limits: tuple[LimitFigure, ...] = ()
    # The plugin that blocked the job, with its own figures (plugins' reason codes only).
    plugin: str | None = None
    figures: tuple[tuple[str, Any], ...] = ()
    volumes: tuple[VolumeFigure, ...] = ()
    devices: tuple[DeviceClaimFigure, ...] = ()

    @property
    def stage(self) -> Stage:
        return STAGE_OF[self.reason]

    def same_verdict(self, other: Diagnosis | None) -> bool:
        """Equal apart from the session that produced it."""
        return other is not None and self.to_dict(session=False) == other.to_dict(session=False)

    def to_dict(self, *, session: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"job": self.job, "queue": self.queue}
        if session:
            out["session"] = self.session
        out.update({
            "stage": str(self.stage),
            "reason": str(self.reason),
            "message": self.message,
            "hint": self.hint,
            "task": self.task,
            "scope": self.scope,
            "tasks": self.tasks.to_dict(),
            "resources": [r.to_dict() for r in self.resources],
            "node_failures": dict(self.node_failures),
            "nodes": {"total": self.nodes_total, "failed": self.nodes_failed},
            "preemption": self.preemption.to_dict(),
        })
        if self.topology:
            out["topology"] = [f.to_dict() for f in self.topology]
        if self.limits:
            out["limits"] = [f.to_dict() for f in self.limits]
        if self.plugin is not None:
            out["plugin"] = {"name": self.plugin, "figures": dict(self.figures)}
        if self.volumes:
            out["volumes"] = [f.to_dict() for f in self.volumes]
        if self.devices:
            out["devices"] = [f.to_dict() for f in self.devices]
        return out
