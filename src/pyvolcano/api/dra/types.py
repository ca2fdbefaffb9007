"""The ``resource.k8s.io/v1`` objects of dynamic resource allocation, as typed values.

DeviceClass, ResourceSlice, ResourceClaim and ResourceClaimTemplate, reduced to the fields
kube-scheduler's DynamicResources plugin and the structured allocator read
(``k8s.io/api/resource/v1/types.go``). They are built once, at the edge, by
:mod:`pyvolcano.api.manifest`, which checks every field read here and names the one that is
wrong. Sub-structures the allocator passes through unchanged (opaque device configuration,
device tolerations in an allocation result) stay in their manifest shape.

Invariants: every object is frozen; a claim whose status changes is replaced by a new
:class:`ResourceClaim` (:meth:`ResourceClaim.with_status`), never mutated, so that a claim
held by a session or a pending write keeps the status it was read with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, Final

__all__ = [
    "ALLOCATION_MODE_ALL",
    "ALLOCATION_MODE_EXACT_COUNT",
    "FINALIZER",
    "RESERVED_FOR_MAX_SIZE",
    "RESOURCE_API_VERSION",
    "AllocationResult",
    "ClaimStatus",
    "ConsumerReference",
    "Device",
    "DeviceAttribute",
    "DeviceClass",
    "DeviceConstraint",
    "DeviceRequest",
    "DeviceRequestResult",
    "DeviceSubRequest",
    "DeviceTaint",
    "PodResourceClaim",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "ResourceSlice",
]

RESOURCE_API_VERSION: Final = "resource.k8s.io/v1"
FINALIZER: Final = "resource.kubernetes.io/delete-protection"
"""The finalizer kube-scheduler puts on a claim it allocates (``resourceapi.Finalizer``)."""
RESERVED_FOR_MAX_SIZE: Final = 256
"""``ResourceClaimReservedForMaxSize``: how many consumers one claim may be reserved for."""
ALLOCATION_RESULTS_MAX_SIZE: Final = 32
"""``AllocationResultsMaxSize``: the most devices one claim's allocation may hold."""
ALLOCATION_MODE_EXACT_COUNT: Final = "ExactCount"
ALLOCATION_MODE_ALL: Final = "All"


@dataclass(frozen=True, slots=True)
class DeviceAttribute:
    """One typed attribute value: ``kind`` is ``int``, ``bool``, ``string`` or ``version``."""

    kind: str
    value: int | bool | str


@dataclass(frozen=True, slots=True)
class DeviceTaint:
    key: str
    value: str = ""
    effect: str = ""

    def as_mapping(self) -> dict[str, str]:
        """The taint in the shape the toleration matcher reads."""
        return {"key": self.key, "value": self.value, "effect": self.effect}


@dataclass(frozen=True, slots=True)
class Device:
    name: str
    attributes: Mapping[str, DeviceAttribute] = field(default_factory=dict)
    capacity: Mapping[str, Fraction] = field(default_factory=dict)
    taints: tuple[DeviceTaint, ...] = ()
    # Partitionable devices, consumable capacity and binding conditions: read only to be
    # left out (see docs/differences.md).
    consumes_counters: bool = False
    binding_conditions: bool = False
    # Per-device node selection (with the slice's perDeviceNodeSelection).
    node_name: str = ""
    all_nodes: bool = False
    node_selector: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ResourceSlice:
    name: str
    driver: str
    pool: str
    pool_generation: int = 0
    resource_slice_count: int = 1
    node_name: str = ""
    all_nodes: bool = False
    node_selector: Mapping[str, Any] | None = None
    per_device_node_selection: bool = False
    devices: tuple[Device, ...] = ()
    creation_timestamp: float = 0.0


@dataclass(frozen=True, slots=True)
class DeviceClass:
    name: str
    selectors: tuple[str, ...] = ()  # CEL expressions
    config: tuple[Mapping[str, Any], ...] = ()  # spec.config entries (opaque driver configuration)
    creation_timestamp: float = 0.0


@dataclass(frozen=True, slots=True)
class DeviceSubRequest:
    """A request or one of its ``firstAvailable`` alternatives (what the allocator satisfies)."""

    name: str
    device_class_name: str
    selectors: tuple[str, ...] = ()
    allocation_mode: str = ALLOCATION_MODE_EXACT_COUNT
    count: int = 1
    admin_access: bool | None = None
    tolerations: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """``spec.devices.requests[i]``: either ``exactly`` or ``first_available`` is set."""

    name: str
    exactly: DeviceSubRequest | None = None
    first_available: tuple[DeviceSubRequest, ...] = ()


@dataclass(frozen=True, slots=True)
class DeviceConstraint:
    requests: tuple[str, ...] = ()
    match_attribute: str = ""


@dataclass(frozen=True, slots=True)
class DeviceRequestResult:
    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool | None = None
    tolerations: tuple[Mapping[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"request": self.request, "driver": self.driver, "pool": self.pool,
                               "device": self.device}
        if self.admin_access is not None:
            out["adminAccess"] = self.admin_access
        if self.tolerations:
            out["tolerations"] = [dict(t) for t in self.tolerations]
        return out


@dataclass(frozen=True, slots=True)
class AllocationResult:
    results: tuple[DeviceRequestResult, ...] = ()
    config: tuple[Mapping[str, Any], ...] = ()
    node_selector: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        devices: dict[str, Any] = {"results": [r.to_dict() for r in self.results]}
        if self.config:
            devices["config"] = [dict(c) for c in self.config]
        out: dict[str, Any] = {"devices": devices}
        if self.node_selector is not None:
            out["nodeSelector"] = dict(self.node_selector)
        return out


@dataclass(frozen=True, slots=True)
class ConsumerReference:
    resource: str
    name: str
    uid: str
    api_group: str = ""

    def to_dict(self) -> dict[str, str]:
        out = {"resource": self.resource, "name": self.name, "uid": self.uid}
        if self.api_group:
            out["apiGroup"] = self.api_group
        return out


@dataclass(frozen=True, slots=True)
class ClaimStatus:
    allocation: AllocationResult | None = None
    reserved_for: tuple[ConsumerReference, ...] = ()


@dataclass(frozen=True, slots=True)
class ResourceClaim:
    namespace: str
    name: str
    uid: str
    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[DeviceConstraint, ...] = ()
    config: tuple[Mapping[str, Any], ...] = ()  # spec.devices.config entries
    status: ClaimStatus = ClaimStatus()
    owner_pod_uid: str = ""  # the uid of the controlling owner when it is a Pod
    deletion_timestamp: float | None = None
    finalizers: tuple[str, ...] = ()
    annotations: Mapping[str, str] = field(default_factory=dict)
    resource_version: str = ""
    creation_timestamp: float = 0.0
    # Paths of fields set that the allocator does not act on (api/plugin_fields.py).
    unmodelled: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def allocation(self) -> AllocationResult | None:
        return self.status.allocation

    def reserved_for_uid(self, uid: str) -> bool:
        """``resourceclaim.IsReservedForPod``."""
        return any(r.uid == uid for r in self.status.reserved_for)

    def can_be_reserved(self) -> bool:
        """``resourceclaim.CanBeReserved``: room for one more consumer."""
        return len(self.status.reserved_for) < RESERVED_FOR_MAX_SIZE

    def with_status(self, status: ClaimStatus) -> ResourceClaim:
        return replace(self, status=status)


@dataclass(frozen=True, slots=True)
class ResourceClaimTemplate:
    namespace: str
    name: str
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    spec: Mapping[str, Any] = field(default_factory=dict)  # the ResourceClaimSpec, as written
    claim: ResourceClaim | None = None  # the spec read as a claim's (checked at the edge)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class PodResourceClaim:
    """``pod.spec.resourceClaims[i]``: exactly one of the two sources is set."""

    name: str
    resource_claim_name: str = ""
    resource_claim_template_name: str = ""
