"""Reading the ``resource.k8s.io/v1`` kinds and a pod's ``resourceClaims`` from manifests.

The readers take the manifest reader's document accessor (:class:`Doc`, implemented by
:mod:`pyvolcano.api.manifest`), check every field they read with the API server's rules that
matter to scheduling (one source per request, a known allocation mode, a positive count, typed
attribute values, a valid semantic version, quantities), and name the field that is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any, Protocol

from pyvolcano.api.dra.cel import parse_semver
from pyvolcano.api.dra.types import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    AllocationResult,
    ClaimStatus,
    ConsumerReference,
    Device,
    DeviceAttribute,
    DeviceClass,
    DeviceConstraint,
    DeviceRequest,
    DeviceRequestResult,
    DeviceSubRequest,
    DeviceTaint,
    PodResourceClaim,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from pyvolcano.api.matching import SelectorError, compile_node_selector_term, validate_tolerations
from pyvolcano.api.plugin_fields import unmodelled_paths
from pyvolcano.api.quantity import QuantityError, parse_quantity

__all__ = ["Doc", "device_class", "pod_resource_claims", "resource_claim", "resource_claim_template",
           "resource_slice"]


class Doc(Protocol):
    """The manifest reader's typed access to one (part of a) document."""

    where: str

    def fail(self, path: str, msg: str) -> Exception: ...
    def get(self, path: str) -> Any: ...
    def str_(self, path: str, default: str = "", *, required: bool = False) -> str: ...
    def int_(self, path: str, default: int | None = None, *, int32: bool = False) -> int | None: ...
    def bool_(self, path: str, default: bool) -> bool: ...
    def str_map(self, path: str) -> dict[str, str]: ...
    def list_(self, path: str) -> list[Any]: ...
    def timestamp(self, path: str) -> float | None: ...
    def child(self, path: str, value: Any, what: str = "a mapping") -> Doc: ...
    def items(self, path: str, what: str = "a mapping") -> Sequence[Doc]: ...


_ATTRIBUTE_KINDS = (("int", "int"), ("bool", "bool"), ("string", "string"), ("version", "version"))


def _strings(d: Doc, path: str) -> tuple[str, ...]:
    out = []
    for i, v in enumerate(d.list_(path)):
        if not isinstance(v, str):
            raise d.fail(f"{path}[{i}]", f"got {v!r}; expected a string")
        out.append(v)
    return tuple(out)


def _selectors(d: Doc, path: str) -> tuple[str, ...]:
    return tuple(sel.str_("cel.expression", required=True)
                 for sel in d.items(path, "a selector {cel: {expression: ...}}"))


def _node_selector(d: Doc, path: str) -> Mapping[str, Any] | None:
    value = d.get(path)
    if value is None:
        return None
    sel = d.child(path, value, "a node selector {nodeSelectorTerms: [...]}")
    terms = sel.items("nodeSelectorTerms", "a node selector term")
    if not terms:
        raise d.fail(f"{path}.nodeSelectorTerms", "is required; expected at least one term")
    try:
        for i, term in enumerate(sel.list_("nodeSelectorTerms")):
            compile_node_selector_term(term, f"{path}.nodeSelectorTerms[{i}]")
    except SelectorError as e:
        raise d.fail(path, str(e)) from None
    return dict(value)


def _tolerations(d: Doc, path: str) -> tuple[Mapping[str, Any], ...]:
    value = d.get(path)
    if value is None:
        return ()
    try:
        validate_tolerations(value, path)
    except SelectorError as e:
        raise d.fail(path, str(e)) from None
    return tuple(dict(t) for t in value)


# ----------------------------------------------------------------------------- DeviceClass


def device_class(d: Doc) -> DeviceClass:
    name = d.str_("metadata.name", required=True)
    config = tuple(dict(entry) for entry in d.list_("spec.config") if isinstance(entry, Mapping))
    return DeviceClass(name=name, selectors=_selectors(d, "spec.selectors"), config=config,
                       creation_timestamp=d.timestamp("metadata.creationTimestamp") or 0.0)


# ----------------------------------------------------------------------------- ResourceSlice


def _attribute(d: Doc, path: str, value: Any) -> DeviceAttribute:
    a = d.child(path, value, "an attribute {int|bool|string|version: value}")
    set_ = [(kind, field) for kind, field in _ATTRIBUTE_KINDS if a.get(field) is not None]
    if len(set_) != 1:
        raise d.fail(path, "expected exactly one of int, bool, string, version")
    kind, field = set_[0]
    v = a.get(field)
    if kind == "int":
        if isinstance(v, bool) or not isinstance(v, int):
            raise d.fail(f"{path}.int", f"got {v!r}; expected an integer")
        return DeviceAttribute("int", v)
    if kind == "bool":
        if not isinstance(v, bool):
            raise d.fail(f"{path}.bool", f"got {v!r}; expected true or false")
        return DeviceAttribute("bool", v)
    if not isinstance(v, str):
        raise d.fail(f"{path}.{field}", f"got {v!r}; expected a string")
    if kind == "version":
        try:
            parse_semver(v)
        except ValueError:
            raise d.fail(f"{path}.version", f"got {v!r}; expected a semantic version such as 1.2.3") from None
    return DeviceAttribute(kind, v)


def _device(d: Doc, path: str, value: Any) -> Device:
    dev = d.child(path, value, "a device")
    name = dev.str_("name", required=True)
    attributes = {}
    raw = dev.get("attributes")
    if raw is not None:
        if not isinstance(raw, Mapping):
            raise dev.fail("attributes", "expected a mapping of attribute name to value")
        for k, v in raw.items():
            attributes[str(k)] = _attribute(dev, f"attributes.{k}", v)
    capacity: dict[str, Fraction] = {}
    raw = dev.get("capacity")
    if raw is not None:
        if not isinstance(raw, Mapping):
            raise dev.fail("capacity", "expected a mapping of capacity name to {value: quantity}")
        for k, v in raw.items():
            c = dev.child(f"capacity.{k}", v, "{value: <quantity>}")
            q = c.get("value")
            try:
                capacity[str(k)] = parse_quantity(q)
            except QuantityError as e:
                raise c.fail("value", str(e)) from None
    taints = []
    for t in dev.items("taints", "a taint {key, value, effect}"):
        effect = t.str_("effect", required=True)
        taints.append(DeviceTaint(t.str_("key", required=True), t.str_("value", ""), effect))
    return Device(
        name=name, attributes=attributes, capacity=capacity, taints=tuple(taints),
        consumes_counters=bool(dev.list_("consumesCounters")), binding_conditions=bool(dev.list_("bindingConditions")),
        node_name=dev.str_("nodeName", ""), all_nodes=dev.bool_("allNodes", False),
        node_selector=_node_selector(dev, "nodeSelector"),
    )


def resource_slice(d: Doc) -> ResourceSlice:
    name = d.str_("metadata.name", required=True)
    driver = d.str_("spec.driver", required=True)
    pool = d.str_("spec.pool.name", required=True)
    generation = d.int_("spec.pool.generation", 0) or 0
    count = d.int_("spec.pool.resourceSliceCount", 1)
    if generation < 0:
        raise d.fail("spec.pool.generation", f"got {generation}; expected a non-negative integer")
    if count is None or count < 1:
        raise d.fail("spec.pool.resourceSliceCount", f"got {count}; expected a positive integer")
    node_name = d.str_("spec.nodeName", "")
    all_nodes = d.bool_("spec.allNodes", False)
    node_selector = _node_selector(d, "spec.nodeSelector")
    per_device = d.bool_("spec.perDeviceNodeSelection", False)
    if sum((bool(node_name), all_nodes, node_selector is not None, per_device)) != 1:
        raise d.fail("spec", "expected exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection")
    devices = tuple(_device(d, f"spec.devices[{i}]", v) for i, v in enumerate(d.list_("spec.devices")))
    return ResourceSlice(name=name, driver=driver, pool=pool, pool_generation=generation,
                         resource_slice_count=count, node_name=node_name, all_nodes=all_nodes,
                         node_selector=node_selector, per_device_node_selection=per_device, devices=devices,
                         creation_timestamp=d.timestamp("metadata.creationTimestamp") or 0.0)


# ----------------------------------------------------------------------------- ResourceClaim


def _sub_request(d: Doc, path: str, value: Any, name: str | None = None) -> DeviceSubRequest:
    r = d.child(path, value, "a device request")
    if name is None:
        name = r.str_("name", required=True)
    mode = r.str_("allocationMode", ALLOCATION_MODE_EXACT_COUNT) or ALLOCATION_MODE_EXACT_COUNT
    if mode not in (ALLOCATION_MODE_EXACT_COUNT, ALLOCATION_MODE_ALL):
        raise r.fail("allocationMode", f"got {mode!r}; expected ExactCount or All")
    count = r.int_("count", None)
    if mode == ALLOCATION_MODE_ALL:
        if count is not None:
            raise r.fail("count", "must not be set with allocationMode All")
        count = 0
    elif not count:
        count = 1  # SetDefaults_ExactDeviceRequest: an ExactCount request without a count asks for one
    elif count < 1:
        raise r.fail("count", f"got {count}; expected a positive integer")
    admin = r.get("adminAccess")
    if admin is not None and not isinstance(admin, bool):
        raise r.fail("adminAccess", f"got {admin!r}; expected true or false")
    return DeviceSubRequest(name=name, device_class_name=r.str_("deviceClassName", required=True),
                            selectors=_selectors(r, "selectors"), allocation_mode=mode, count=count,
                            admin_access=admin, tolerations=_tolerations(r, "tolerations"))


def _claim_spec(d: Doc, path: str) -> tuple[tuple[DeviceRequest, ...], tuple[DeviceConstraint, ...],
                                           tuple[Mapping[str, Any], ...]]:
    value = d.get(path)
    spec = d.child(path, value if value is not None else {}, "a claim spec")
    requests = []
    names: set[str] = set()
    for i, r in enumerate(spec.items("devices.requests", "a device request")):
        name = r.str_("name", required=True)
        if name in names:
            raise spec.fail(f"devices.requests[{i}].name", f"duplicate request name {name!r}")
        names.add(name)
        exactly, first = r.get("exactly"), r.get("firstAvailable")
        if (exactly is None) == (first is None):
            raise spec.fail(f"devices.requests[{i}]", "expected exactly one of exactly, firstAvailable")
        if exactly is not None:
            requests.append(DeviceRequest(name, exactly=_sub_request(r, "exactly", exactly, name)))
            continue
        subs = tuple(_sub_request(r, f"firstAvailable[{j}]", v) for j, v in enumerate(r.list_("firstAvailable")))
        if not subs:
            raise r.fail("firstAvailable", "expected at least one sub-request")
        requests.append(DeviceRequest(name, first_available=subs))
    constraints = []
    for c in spec.items("devices.constraints", "a constraint {requests, matchAttribute}"):
        constraints.append(DeviceConstraint(_strings(c, "requests"), c.str_("matchAttribute", "")))
    config = tuple(dict(entry) for entry in spec.list_("devices.config") if isinstance(entry, Mapping))
    return tuple(requests), tuple(constraints), config


def _allocation(d: Doc, path: str) -> AllocationResult | None:
    value = d.get(path)
    if value is None:
        return None
    a = d.child(path, value, "an allocation result")
    results = []
    for r in a.items("devices.results", "a device request result"):
        admin = r.get("adminAccess")
        results.append(DeviceRequestResult(r.str_("request", required=True), r.str_("driver", required=True),
                                           r.str_("pool", required=True), r.str_("device", required=True),
                                           admin if isinstance(admin, bool) else None, _tolerations(r, "tolerations")))
    config = tuple(dict(c) for c in a.list_("devices.config") if isinstance(c, Mapping))
    return AllocationResult(tuple(results), config, _node_selector(a, "nodeSelector"))


def resource_claim(d: Doc) -> ResourceClaim:
    name = d.str_("metadata.name", required=True)
    ns = d.str_("metadata.namespace", "default") or "default"
    owner = ""
    for o in d.items("metadata.ownerReferences", "an owner reference"):
        if o.get("kind") == "Pod" and o.get("controller") is True:
            owner = o.str_("uid", "")
    requests, constraints, config = _claim_spec(d, "spec")
    reserved = tuple(ConsumerReference(r.str_("resource", "pods") or "pods", r.str_("name", required=True),
                                       r.str_("uid", required=True), r.str_("apiGroup", ""))
                     for r in d.items("status.reservedFor", "a consumer reference"))
    return ResourceClaim(
        namespace=ns, name=name, uid=d.str_("metadata.uid", "") or f"{ns}/{name}", requests=requests,
        constraints=constraints, config=config,
        status=ClaimStatus(_allocation(d, "status.allocation"), reserved), owner_pod_uid=owner,
        deletion_timestamp=d.timestamp("metadata.deletionTimestamp"), finalizers=_strings(d, "metadata.finalizers"),
        annotations=d.str_map("metadata.annotations"), resource_version=d.str_("metadata.resourceVersion", ""),
        creation_timestamp=d.timestamp("metadata.creationTimestamp") or 0.0,
        unmodelled=unmodelled_paths("ResourceClaim", {"spec": d.get("spec")}),
    )


def resource_claim_template(d: Doc) -> ResourceClaimTemplate:
    name = d.str_("metadata.name", required=True)
    ns = d.str_("metadata.namespace", "default") or "default"
    spec = d.get("spec.spec")
    if not isinstance(spec, Mapping):
        raise d.fail("spec.spec", "is required; expected a ResourceClaim spec")
    requests, constraints, config = _claim_spec(d, "spec.spec")
    claim = ResourceClaim(namespace=ns, name=name, uid="", requests=requests, constraints=constraints, config=config)
    return ResourceClaimTemplate(namespace=ns, name=name, uid=d.str_("metadata.uid", ""),
                                 labels=d.str_map("spec.metadata.labels"),
                                 annotations=d.str_map("spec.metadata.annotations"), spec=dict(spec), claim=claim)


# ----------------------------------------------------------------------------- pods


def pod_resource_claims(d: Doc) -> tuple[tuple[PodResourceClaim, ...], dict[str, str]]:
    """``spec.resourceClaims`` and ``status.resourceClaimStatuses`` (pod claim name -> claim name,
    ``""`` when no claim was generated)."""
    claims = []
    names: set[str] = set()
    for i, c in enumerate(d.items("spec.resourceClaims", "a pod resource claim")):
        name = c.str_("name", required=True)
        if name in names:
            raise d.fail(f"spec.resourceClaims[{i}].name", f"duplicate name {name!r}")
        names.add(name)
        direct, template = c.str_("resourceClaimName", ""), c.str_("resourceClaimTemplateName", "")
        if bool(direct) == bool(template):
            raise d.fail(f"spec.resourceClaims[{i}]",
                         "expected exactly one of resourceClaimName, resourceClaimTemplateName")
        claims.append(PodResourceClaim(name, direct, template))
    statuses: dict[str, str] = {}
    for s in d.items("status.resourceClaimStatuses", "a resource claim status"):
        statuses[s.str_("name", required=True)] = s.str_("resourceClaimName", "")
    return tuple(claims), statuses
