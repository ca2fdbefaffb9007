"""The API server's validation of the ``resource.k8s.io/v1`` kinds (dynamic resource allocation).

DeviceClass, ResourceSlice, ResourceClaim and ResourceClaimTemplate as
``pkg/apis/resource/validation`` validates them, after the defaults of
``pkg/apis/resource/v1`` (a request's ``allocationMode`` ``ExactCount`` and ``count`` 1, a
toleration's ``operator`` ``Equal``), with upstream's field paths and ``field.Error`` texts:

* names: requests and sub-requests DNS labels, unique within their list; device class names DNS
  subdomains; driver names at most 63 characters and DNS subdomains; pool names of slash-separated
  DNS subdomains; device names DNS labels; attribute and capacity names C identifiers with an
  optional domain; ``matchAttribute`` a fully qualified name;
* requests: exactly one of ``exactly`` and ``firstAvailable``; ``count`` with ``ExactCount`` greater
  than zero and absent with ``All``; the list limits (32 requests, constraints, configurations and
  selectors; 8 sub-requests; 16 tolerations);
* selectors: a ``cel`` selector is required; its expression at most 10 Ki and compiled by the
  dynamic resource allocation module's compiler (:class:`~pyvolcano.api.dra.cel.SelectorCache`),
  its message kept;
* constraints and configurations: the requests they name must exist (``req`` or ``req/sub``);
* slices: exactly one of ``nodeName``, ``nodeSelector`` (with exactly one term), ``allNodes``,
  ``perDeviceNodeSelection``; devices unique by name, at most 128 (64 with taints or counters);
  attributes with exactly one value, strings at most 64 bytes, versions semantic versions; device
  taints with a key and a known effect; positive ``resourceSliceCount``;
* claim status (a snapshot's claims): reservations need an allocation, each with resource, name
  and uid, at most 256; allocation results name requests of the claim.

Not checked: CEL cost estimates (every expression that compiles is accepted), consumable-capacity
request policies beyond their shape, counter sets beyond their names, binding conditions'
names, the ``DRAAdminAccess`` namespace label for ``adminAccess``, and update-only rules
(immutability of a claim's spec); see docs/differences.md.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from pyvolcano.admission._common import Problems, ShapeChecker, quote, sub
from pyvolcano.admission.k8s import (
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    qualified_name_errors,
    validate_labels,
)
from pyvolcano.admission.storage import csi_driver_name_problems, node_selector_problems, quantity_problems, too_long
from pyvolcano.api.dra.cel import CelError, SelectorCache

__all__ = ["validate_resource_object"]

DEVICE_REQUESTS_MAX: Final = 32
DEVICE_CONSTRAINTS_MAX: Final = 32
DEVICE_CONFIG_MAX: Final = 32
DEVICE_SELECTORS_MAX: Final = 32
FIRST_AVAILABLE_MAX: Final = 8
DEVICE_TOLERATIONS_MAX: Final = 16
DEVICE_TAINTS_MAX: Final = 16
SLICE_MAX_DEVICES: Final = 128
SLICE_MAX_DEVICES_ADVANCED: Final = 64
SLICE_MAX_COUNTER_SETS: Final = 8
ATTRIBUTES_AND_CAPACITIES_MAX: Final = 32
ATTRIBUTE_VALUE_MAX_LENGTH: Final = 64
DEVICE_MAX_ID_LENGTH: Final = 32
CEL_MAX_LENGTH: Final = 10 * 1024
OPAQUE_PARAMETERS_MAX_LENGTH: Final = 10 * 1024
POOL_NAME_MAX_LENGTH: Final = 253
RESERVED_FOR_MAX: Final = 256
ALLOCATION_RESULTS_MAX: Final = 32
ALLOCATION_MODES: Final = ("All", "ExactCount")
TAINT_EFFECTS: Final = ("NoExecute", "NoSchedule", "None")
TOLERATION_OPERATORS: Final = ("Equal", "Exists")
CONFIG_SOURCES: Final = ("FromClaim", "FromClass")

_C_IDENTIFIER: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_C_IDENTIFIER_MSG: Final = ("a valid C identifier must start with alphabetic character or '_', followed by a string "
                            "of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex "
                            "used for validation is '[A-Za-z_][A-Za-z0-9_]*')")
_NUM: Final = r"(0|[1-9]\d*)"
_PRE: Final = r"(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
_BUILD: Final = r"[0-9a-zA-Z-]+"
_SEMVER: Final = re.compile(rf"^{_NUM}\.{_NUM}\.{_NUM}(-{_PRE}(\.{_PRE})*)?(\+{_BUILD}(\.{_BUILD})*)?$")
_REQUEST_REF_MSG: Final = ("must be the name of a request in the claim or the name of a request and a subrequest "
                           "separated by '/'")


@functools.cache
def _compiler() -> SelectorCache:
    """The selector compiler admission shares (expressions compiled once per process)."""
    return SelectorCache()


def _too_many(path: str, n: int, limit: int, p: Problems) -> bool:
    if n > limit:
        p.add(path, f"Too many: {n}: must have at most {limit} items")
        return True
    return False


def _duplicates(keys: list[Any], path: str, p: Problems) -> None:
    """``validateSet``'s uniqueness, reported after the items: ``<path>[i]`` for each repeat."""
    seen: set[str] = set()
    for i, key in enumerate(keys):
        if isinstance(key, str):
            if key in seen:
                p.add(f"{path}[{i}]", f"Duplicate value: {quote(key)}")
            seen.add(key)


def _label(value: Any, path: str, p: Problems) -> None:
    shown = value if isinstance(value, str) else ""
    for e in dns1123_label_errors(shown):
        p.add(path, f"Invalid value: {quote(value)}: {e}")


def _device_class_name(value: Any, path: str, p: Problems) -> None:
    if value in (None, ""):
        p.add(path, "Required value")
    elif not isinstance(value, str):
        p.add(path, f"Invalid value: {quote(value)}: expected a string")
    else:
        for e in dns1123_subdomain_errors(value):
            p.add(path, f"Invalid value: {quote(value)}: {e}")


def _pool_name(value: Any, path: str, p: Problems) -> None:
    if value in (None, ""):
        p.add(path, "Required value")
        return
    if not isinstance(value, str):
        p.add(path, f"Invalid value: {quote(value)}: expected a string")
        return
    if len(value) > POOL_NAME_MAX_LENGTH:
        p.add(path, too_long(POOL_NAME_MAX_LENGTH))
    for part in value.split("/"):
        for e in dns1123_subdomain_errors(part):
            p.add(path, f"Invalid value: {quote(part)}: {e}")


def _c_identifier(value: str, path: str, p: Problems) -> None:
    if len(value) > DEVICE_MAX_ID_LENGTH:
        p.add(path, too_long(DEVICE_MAX_ID_LENGTH))
    if not _C_IDENTIFIER.match(value):
        p.add(path, f"Invalid value: {quote(value)}: {_C_IDENTIFIER_MSG}")


def _qualified_name(name: str, path: str, p: Problems) -> None:
    """``validateQualifiedName``: ``<C identifier>`` or ``<driver-like domain>/<C identifier>``."""
    parts = name.split("/")
    if len(parts) == 1:
        _c_identifier(parts[0], path, p)
    elif len(parts) == 2:
        if not parts[0]:
            p.add(path, 'Invalid value: "": the domain must not be empty')
        else:
            csi_driver_name_problems(parts[0], path, p)
        if not parts[1]:
            p.add(path, 'Invalid value: "": the name must not be empty')
        else:
            _c_identifier(parts[1], path, p)
    else:
        p.add(path, f"Invalid value: {quote(name)}: must not contain more than one slash")


def _fully_qualified_name(name: Any, path: str, p: Problems) -> None:
    if not isinstance(name, str):
        p.add(path, f"Invalid value: {quote(name)}: expected a string")
        return
    _qualified_name(name, path, p)
    if "/" not in name:
        p.add(path, f"Invalid value: {quote(name)}: a fully qualified name must be a domain and a name separated by "
                    "a slash")


# ----------------------------------------------------------------------------- selectors and configuration


def _selectors(s: ShapeChecker, parent: Mapping[str, Any], path: str, p: Problems) -> None:
    items = s.mappings(parent, "selectors", path)
    if _too_many(path, len(items), DEVICE_SELECTORS_MAX, p):
        return
    for i, sel in enumerate(items):
        cel = s.mapping(sel, "cel", f"{path}[{i}].cel")
        if cel is None:
            if sel.get("cel") is None:
                p.add(f"{path}[{i}].cel", "Required value")
            continue
        ep = f"{path}[{i}].cel.expression"
        expr = s.string(cel, "expression", ep)
        if expr is None:
            if cel.get("expression") is None:
                p.add(ep, "Required value: expression must not be empty")
            continue
        if not expr.strip():
            p.add(ep, "Required value: expression must not be empty")
        elif len(expr) > CEL_MAX_LENGTH:
            p.add(ep, too_long(CEL_MAX_LENGTH))
        else:
            try:
                _compiler().get(expr)
            except CelError as e:
                p.add(ep, f"Invalid value: {quote(expr)}: {e}")


def _opaque(s: ShapeChecker, config: Mapping[str, Any], path: str, p: Problems) -> None:
    op = s.mapping(config, "opaque", f"{path}.opaque")
    if op is None:
        if config.get("opaque") is None:
            p.add(f"{path}.opaque", "Required value")
        return
    csi_driver_name_problems(op.get("driver"), f"{path}.opaque.driver", p)
    params = op.get("parameters")
    pp = f"{path}.opaque.parameters"
    if params is None:
        p.add(pp, "Required value")
    elif not isinstance(params, Mapping):
        p.add(pp, 'Invalid value: "<value omitted>": must be a valid JSON object')
    elif len(json.dumps(params, default=str, separators=(",", ":"))) > OPAQUE_PARAMETERS_MAX_LENGTH:
        p.add(pp, too_long(OPAQUE_PARAMETERS_MAX_LENGTH))


def _configs(s: ShapeChecker, parent: Mapping[str, Any], path: str, p: Problems,
             names: Mapping[str, frozenset[str]] | None) -> None:
    items = s.mappings(parent, "config", path)
    if _too_many(path, len(items), DEVICE_CONFIG_MAX, p):
        return
    for i, config in enumerate(items):
        if names is not None:
            _request_refs(s, config, f"{path}[{i}].requests", p, names)
        _opaque(s, config, f"{path}[{i}]", p)


def _request_refs(s: ShapeChecker, parent: Mapping[str, Any], path: str, p: Problems,
                  names: Mapping[str, frozenset[str]]) -> None:
    """``validateRequestNameRef`` for each entry of a ``requests`` list, unique entries."""
    refs = s.strings(parent, "requests", path) or []
    if _too_many(path, len(refs), DEVICE_REQUESTS_MAX, p):
        return
    seen: set[str] = set()
    for i, ref in enumerate(refs):
        _request_ref(ref, f"{path}[{i}]", p, names)
        if ref in seen:
            p.add(f"{path}[{i}]", f"Duplicate value: {quote(ref)}")
        seen.add(ref)


def _request_ref(ref: str, path: str, p: Problems, names: Mapping[str, frozenset[str]]) -> None:
    """``validateRequestNameRef``: ``<request>`` or ``<request>/<sub-request>`` of this claim."""
    segments = ref.split("/")
    if len(segments) > 2:
        p.add(path, f"Invalid value: {quote(ref)}: {_REQUEST_REF_MSG}")
        return
    for seg in segments:
        _label(seg, path, p)
    subs = names.get(segments[0])
    if subs is None or (len(segments) == 2 and segments[1] not in subs):
        p.add(path, f"Invalid value: {quote(ref)}: {_REQUEST_REF_MSG}")


# ----------------------------------------------------------------------------- claims


def _tolerations(s: ShapeChecker, parent: Mapping[str, Any], path: str, p: Problems) -> None:
    items = s.mappings(parent, "tolerations", path)
    if _too_many(path, len(items), DEVICE_TOLERATIONS_MAX, p):
        return
    for i, tol in enumerate(items):
        tp = f"{path}[{i}]"
        if tol.get("operator") is None:
            tol["operator"] = "Equal"  # +default="Equal"
        key = s.string(tol, "key", f"{tp}.key")
        if key:
            for e in qualified_name_errors(key):
                p.add(f"{tp}.key", f"Invalid value: {quote(key)}: {e}")
        op = s.string(tol, "operator", f"{tp}.operator")
        value = s.string(tol, "value", f"{tp}.value") or ""
        if op == "Exists":
            if value:
                p.add(f"{tp}.value", f"Invalid value: {quote(value)}: must be empty for operator `Exists`")
        elif op == "Equal":
            for e in label_value_errors(value):
                p.add(f"{tp}.value", f"Invalid value: {quote(value)}: {e}")
        elif op == "":
            p.add(f"{tp}.operator", "Required value")
        elif op is not None:
            p.add(f"{tp}.operator", _unsupported(op, TOLERATION_OPERATORS))
        effect = s.string(tol, "effect", f"{tp}.effect")
        if effect and effect not in TAINT_EFFECTS:
            p.add(f"{tp}.effect", _unsupported(effect, TAINT_EFFECTS))
        s.integer(tol, "tolerationSeconds", f"{tp}.tolerationSeconds", int32=False)


def _unsupported(value: Any, allowed: tuple[str, ...]) -> str:
    return f"Unsupported value: {quote(value)}: supported values: " + ", ".join(quote(a) for a in allowed)


def _allocation_mode(s: ShapeChecker, req: dict[str, Any], path: str, p: Problems) -> None:
    """Defaulting (``ExactCount``, count 1) then ``validateDeviceAllocationMode``."""
    mode = s.string(req, "allocationMode", f"{path}.allocationMode")
    count = s.integer(req, "count", f"{path}.count", int32=False)
    if req.get("allocationMode") is None:
        mode = req["allocationMode"] = "ExactCount"
    if mode == "ExactCount" and not count and req.get("count") in (None, 0):
        count = req["count"] = 1
    if mode == "All":
        if count:
            p.add(f"{path}.count", f"Invalid value: {count}: must not be specified when allocationMode is 'All'")
    elif mode == "ExactCount":
        if count is not None and count <= 0:
            p.add(f"{path}.count", f"Invalid value: {count}: must be greater than zero")
    elif mode is not None:
        p.add(f"{path}.allocationMode", _unsupported(mode, ALLOCATION_MODES))


def _request_body(s: ShapeChecker, req: dict[str, Any], path: str, p: Problems) -> None:
    """What an ``exactly`` request and a ``firstAvailable`` sub-request share."""
    _device_class_name(req.get("deviceClassName"), f"{path}.deviceClassName", p)
    _selectors(s, req, f"{path}.selectors", p)
    _allocation_mode(s, req, path, p)
    _tolerations(s, req, f"{path}.tolerations", p)


def _request_names(requests: list[dict[str, Any]]) -> dict[str, frozenset[str]]:
    names: dict[str, frozenset[str]] = {}
    for r in requests:
        name = r.get("name")
        if not isinstance(name, str):
            continue
        first = r.get("firstAvailable")
        subs = [x.get("name") for x in first if isinstance(x, Mapping)] if isinstance(first, list) else []
        names[name] = frozenset(n for n in subs if isinstance(n, str))
    return names


def _device_claim(s: ShapeChecker, spec: Mapping[str, Any], path: str, p: Problems) -> dict[str, frozenset[str]]:
    """``validateDeviceClaim`` for ``<path>.devices``; returns the request names (for the status)."""
    devices = s.mapping(spec, "devices", f"{path}.devices")
    if devices is None:
        return {}
    dp = f"{path}.devices"
    requests = s.mappings(devices, "requests", f"{dp}.requests")
    names = _request_names(requests)
    if not _too_many(f"{dp}.requests", len(requests), DEVICE_REQUESTS_MAX, p):
        for i, req in enumerate(requests):
            rp = f"{dp}.requests[{i}]"
            _label(req.get("name"), f"{rp}.name", p)
            exactly = s.mapping(req, "exactly", f"{rp}.exactly")
            first = s.mappings(req, "firstAvailable", f"{rp}.firstAvailable")
            if exactly is None and not first:
                p.add(rp, "Required value: exactly one of `exactly` or `firstAvailable` is required")
            elif exactly is not None and first:
                p.add(rp, "Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, but "
                          "multiple fields are set")
            elif first:
                if _too_many(f"{rp}.firstAvailable", len(first), FIRST_AVAILABLE_MAX, p):
                    continue
                for j, sub_req in enumerate(first):
                    sp = f"{rp}.firstAvailable[{j}]"
                    _label(sub_req.get("name"), f"{sp}.name", p)
                    _request_body(s, sub_req, sp, p)
                _duplicates([x.get("name") for x in first], f"{rp}.firstAvailable", p)
            elif exactly is not None:
                _request_body(s, exactly, f"{rp}.exactly", p)
                s.boolean(exactly, "adminAccess", f"{rp}.exactly.adminAccess")
        _duplicates([r.get("name") for r in requests], f"{dp}.requests", p)
    constraints = s.mappings(devices, "constraints", f"{dp}.constraints")
    if not _too_many(f"{dp}.constraints", len(constraints), DEVICE_CONSTRAINTS_MAX, p):
        for i, c in enumerate(constraints):
            cp = f"{dp}.constraints[{i}]"
            _request_refs(s, c, f"{cp}.requests", p, names)
            if c.get("matchAttribute") is not None:
                _fully_qualified_name(c["matchAttribute"], f"{cp}.matchAttribute", p)
            elif c.get("distinctAttribute") is not None:
                _fully_qualified_name(c["distinctAttribute"], f"{cp}.distinctAttribute", p)
            else:
                # Upstream's text with DRAConsumableCapacity (on by default in Kubernetes 1.36).
                p.add(cp, 'Required value: exactly one of "matchAttribute" or "distinctAttribute" is required, but '
                          "multiple fields are set")
    _configs(s, devices, f"{dp}.config", p, names)
    return names


def _claim_status(s: ShapeChecker, obj: Mapping[str, Any], names: Mapping[str, frozenset[str]], p: Problems) -> None:
    status = s.mapping(obj, "status", "status")
    if not status:
        return
    reserved = s.mappings(status, "reservedFor", "status.reservedFor")
    if not _too_many("status.reservedFor", len(reserved), RESERVED_FOR_MAX, p):
        uids: set[str] = set()
        for i, ref in enumerate(reserved):
            rp = f"status.reservedFor[{i}]"
            for key in ("resource", "name", "uid"):
                if not s.string(ref, key, f"{rp}.{key}"):
                    p.add(f"{rp}.{key}", "Required value")
            uid = ref.get("uid")
            if isinstance(uid, str) and uid:
                if uid in uids:
                    p.add(rp, f"Duplicate value: {quote(uid)}")
                uids.add(uid)
    allocation = s.mapping(status, "allocation", "status.allocation")
    if reserved and allocation is None:
        p.add("status.reservedFor", "Forbidden: may not be specified when `allocated` is not set")
    if allocation is None:
        return
    ap = "status.allocation.devices"
    devices = s.mapping(allocation, "devices", ap) or {}
    results = s.mappings(devices, "results", f"{ap}.results")
    if not _too_many(f"{ap}.results", len(results), ALLOCATION_RESULTS_MAX, p):
        for i, r in enumerate(results):
            rp = f"{ap}.results[{i}]"
            request = s.string(r, "request", f"{rp}.request")
            if request:
                _request_ref(request, f"{rp}.request", p, names)
            elif r.get("request") in (None, ""):
                p.add(f"{rp}.request", "Required value")
            csi_driver_name_problems(r.get("driver"), f"{rp}.driver", p)
            _pool_name(r.get("pool"), f"{rp}.pool", p)
            _label(r.get("device"), f"{rp}.device", p)
            _tolerations(s, r, f"{rp}.tolerations", p)
    for i, config in enumerate(s.mappings(devices, "config", f"{ap}.config")):
        cp = f"{ap}.config[{i}]"
        source = s.string(config, "source", f"{cp}.source")
        if not source:
            p.add(f"{cp}.source", "Required value")
        elif source not in CONFIG_SOURCES:
            p.add(f"{cp}.source", _unsupported(source, CONFIG_SOURCES))
        _request_refs(s, config, f"{cp}.requests", p, names)
        _opaque(s, config, cp, p)
    if allocation.get("nodeSelector") is not None:
        node_selector_problems(allocation["nodeSelector"], "status.allocation.nodeSelector", p)


def _resource_claim(obj: dict[str, Any], p: Problems) -> None:
    s = ShapeChecker(p)
    spec = s.mapping(obj, "spec", "spec")
    names = _device_claim(s, spec, "spec", p) if spec is not None else {}
    _claim_status(s, obj, names, p)


_TEMPLATE_METADATA: Final = frozenset({"labels", "annotations"})


def _resource_claim_template(obj: dict[str, Any], p: Problems) -> None:
    s = ShapeChecker(p)
    spec = s.mapping(obj, "spec", "spec")
    if spec is None:
        return
    md = s.mapping(spec, "metadata", "spec.metadata")
    if md is not None:
        validate_labels(md.get("labels"), "spec.metadata.labels", p)
        for key in md:
            if key not in _TEMPLATE_METADATA:
                p.add(f"spec.metadata.{key}", "Forbidden: cannot be set")
    inner = s.mapping(spec, "spec", "spec.spec")
    if inner is not None:
        _device_claim(s, inner, "spec.spec", p)


# ----------------------------------------------------------------------------- classes


def _device_class(obj: dict[str, Any], p: Problems) -> None:
    s = ShapeChecker(p)
    spec = s.mapping(obj, "spec", "spec")
    if spec is None:
        return
    _selectors(s, spec, "spec.selectors", p)
    _configs(s, spec, "spec.config", p, None)
    ext = s.string(spec, "extendedResourceName", "spec.extendedResourceName")
    if ext is not None and not _is_extended_resource_name(ext):
        p.add("spec.extendedResourceName", f"Invalid value: {quote(ext)}: must be a valid extended resource name")


def _is_extended_resource_name(name: str) -> bool:
    """``IsExtendedResourceName``: fully qualified, outside ``kubernetes.io``, and valid as a quota name."""
    if "/" not in name or name.startswith("requests."):
        return False
    domain = name.split("/", 1)[0]
    if domain == "kubernetes.io" or domain.endswith(".kubernetes.io"):
        return False
    return not qualified_name_errors(f"requests.{name}")


# ----------------------------------------------------------------------------- slices


def _attribute(s: ShapeChecker, attr: Any, path: str, p: Problems) -> None:
    if not isinstance(attr, Mapping):
        p.add(path, f"Invalid value: {quote(attr)}: expected an attribute {{int|bool|string|version: value}}")
        return
    set_fields = [k for k in ("int", "bool", "string", "version", "ints", "bools", "strings", "versions")
                  if attr.get(k) is not None]
    if len(set_fields) != 1:
        # Upstream prints the Go struct: its field names, every field.
        go = {f"{k[0].upper()}{k[1:-1]}Values" if k.endswith("s") else f"{k[0].upper()}{k[1:]}Value": attr.get(k)
              for k in ("int", "bool", "string", "version", "ints", "bools", "strings", "versions")}
        shown = '""' if not set_fields else json.dumps(go, separators=(",", ":"), default=str)
        p.add(path, f"Invalid value: {shown}: exactly one value must be specified")
        return
    key = set_fields[0]
    value = attr[key]
    if key == "int":
        s.integer(attr, "int", f"{path}.int", int32=False)
    elif key == "bool":
        s.boolean(attr, "bool", f"{path}.bool")
    elif key in ("string", "version"):
        text = s.string(attr, key, f"{path}.{key}")
        if text is not None:
            _attribute_text(key, text, f"{path}.{key}", p)
    else:
        items = s.seq(attr, key, f"{path}.{key}")
        if items is not None and not items:
            p.add(f"{path}.{key}", f"Invalid value: {quote(value)}: must not be empty if specified")
        for i, item in enumerate(items or []):
            if key in ("strings", "versions"):
                if isinstance(item, str):
                    _attribute_text(key[:-1], item, f"{path}.{key}[{i}]", p)
                else:
                    p.add(f"{path}.{key}[{i}]", f"Invalid value: {quote(item)}: expected a string")


def _attribute_text(kind: str, text: str, path: str, p: Problems) -> None:
    if kind == "version" and not _SEMVER.match(text):
        p.add(path, f"Invalid value: {quote(text)}: must be a string compatible with semver.org spec 2.0.0")
    if len(text) > ATTRIBUTE_VALUE_MAX_LENGTH:
        p.add(path, too_long(ATTRIBUTE_VALUE_MAX_LENGTH))


def _device(s: ShapeChecker, dev: dict[str, Any], path: str, per_device: bool, p: Problems) -> None:
    _label(dev.get("name"), f"{path}.name", p)
    attributes = s.mapping(dev, "attributes", f"{path}.attributes") or {}
    capacity = s.mapping(dev, "capacity", f"{path}.capacity") or {}
    n = len(attributes) + len(capacity)
    if n > ATTRIBUTES_AND_CAPACITIES_MAX:
        p.add(path, f"Invalid value: {n}: the total number of attributes and capacities must not exceed "
                    f"{ATTRIBUTES_AND_CAPACITIES_MAX}")
    for name, attr in attributes.items():
        _qualified_name(str(name), f"{path}.attributes", p)
        _attribute(s, attr, f"{path}.attributes[{name}]", p)
    multiple = dev.get("allowMultipleAllocations") is True
    for name, cap in capacity.items():
        cp = f"{path}.capacity[{name}]"
        _qualified_name(str(name), f"{path}.capacity", p)
        if not isinstance(cap, Mapping):
            p.add(cp, f"Invalid value: {quote(cap)}: expected {{value: <quantity>}}")
            continue
        if cap.get("value") is None:
            p.add(f"{cp}.value", "Required value")
        else:
            quantity_problems(cap["value"], f"{cp}.value", p)
        if cap.get("requestPolicy") is not None and not multiple:
            p.add(f"{cp}.requestPolicy", "Forbidden: allowMultipleAllocations must be true")
    taints = s.mappings(dev, "taints", f"{path}.taints")
    if not _too_many(f"{path}.taints", len(taints), DEVICE_TAINTS_MAX, p):
        for i, taint in enumerate(taints):
            tp = f"{path}.taints[{i}]"
            key = s.string(taint, "key", f"{tp}.key")
            if not key:
                if taint.get("key") in (None, ""):
                    p.add(f"{tp}.key", "Required value: name part must be non-empty")
            else:
                for e in qualified_name_errors(key):
                    p.add(f"{tp}.key", f"Invalid value: {quote(key)}: {e}")
            value = s.string(taint, "value", f"{tp}.value")
            if value:
                for e in label_value_errors(value):
                    p.add(f"{tp}.value", f"Invalid value: {quote(value)}: {e}")
            effect = s.string(taint, "effect", f"{tp}.effect")
            if not effect:
                if taint.get("effect") in (None, ""):
                    p.add(f"{tp}.effect", "Required value")
            elif effect not in TAINT_EFFECTS:
                p.add(f"{tp}.effect", _unsupported(effect, TAINT_EFFECTS))
    placement = [f"`{k}`" for k in ("nodeName", "nodeSelector", "allNodes") if dev.get(k) is not None]
    if per_device:
        if dev.get("nodeName") == "":
            p.add(f"{path}.nodeName", 'Invalid value: "": must not be empty')
        if dev.get("allNodes") is False:
            p.add(f"{path}.allNodes", "Invalid value: false: must be either unset or set to true")
        if dev.get("nodeSelector") is not None:
            node_selector_problems(dev["nodeSelector"], f"{path}.nodeSelector", p)
        if not placement:
            p.add(path, "Required value: exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
                        "`perDeviceNodeSelection` is set to true in the ResourceSlice spec")
        elif len(placement) > 1:
            p.add(path, f"Invalid value: {quote('{' + ', '.join(placement) + '}')}: exactly one of `nodeName`, "
                        "`nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in "
                        "the ResourceSlice spec")
    elif placement:
        p.add(path, 'Invalid value: "null": `nodeName`, `nodeSelector` and `allNodes` can only be set if '
                    "`perDeviceNodeSelection` is set to true in the ResourceSlice spec")


def _resource_slice(obj: dict[str, Any], p: Problems) -> None:
    s = ShapeChecker(p)
    spec = s.mapping(obj, "spec", "spec")
    if spec is None:
        p.add("spec", "Required value")
        return
    csi_driver_name_problems(spec.get("driver"), "spec.driver", p)
    pool = s.mapping(spec, "pool", "spec.pool") or {}
    _pool_name(pool.get("name"), "spec.pool.name", p)
    count = s.integer(pool, "resourceSliceCount", "spec.pool.resourceSliceCount", int32=False)
    if (count is None or count <= 0) and (count is not None or pool.get("resourceSliceCount") is None):
        p.add("spec.pool.resourceSliceCount", f"Invalid value: {count or 0}: must be greater than zero")
    gen = s.integer(pool, "generation", "spec.pool.generation", int32=False)
    if gen is not None and gen < 0:
        p.add("spec.pool.generation", f"Invalid value: {gen}: must be greater than or equal to zero")
    set_fields: list[str] = []
    node_name = spec.get("nodeName")
    if node_name is not None:
        if node_name == "":
            p.add("spec.nodeName", 'Invalid value: "": must be either unset or set to a non-empty string')
        elif isinstance(node_name, str):
            set_fields.append("`nodeName`")
            for e in dns1123_subdomain_errors(node_name):
                p.add("spec.nodeName", f"Invalid value: {quote(node_name)}: {e}")
        else:
            p.add("spec.nodeName", f"Invalid value: {quote(node_name)}: expected a string")
    selector = spec.get("nodeSelector")
    if selector is not None:
        set_fields.append("`nodeSelector`")
        node_selector_problems(selector, "spec.nodeSelector", p)
        terms = selector.get("nodeSelectorTerms") if isinstance(selector, Mapping) else None
        if isinstance(terms, list) and len(terms) > 1:
            p.add("spec.nodeSelector.nodeSelectorTerms", f"Invalid value: {quote(terms)}: must have exactly one node "
                                                         "selector term")
    for key in ("allNodes", "perDeviceNodeSelection"):
        flag = s.boolean(spec, key, f"spec.{key}")
        if flag is True:
            set_fields.append(f"`{key}`")
        elif flag is False:
            p.add(f"spec.{key}", "Invalid value: false: must be either unset or set to true")
    if not set_fields:
        p.add("spec", "Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                      "`perDeviceNodeSelection` is required")
    elif len(set_fields) > 1:
        p.add("spec", f"Invalid value: {quote('{' + ', '.join(set_fields) + '}')}: exactly one of `nodeName`, "
                      "`nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set")
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        p.add("spec", 'Invalid value: "": only one of `sharedCounters` or `devices` is allowed')
    devices = s.mappings(spec, "devices", "spec.devices")
    advanced = any(d.get("taints") or d.get("consumesCounters") or
                   any(isinstance(a, Mapping) and any(a.get(k) is not None for k in ("ints", "bools", "strings",
                                                                                       "versions"))
                       for a in sub(d, "attributes").values()) for d in devices)
    limit = SLICE_MAX_DEVICES_ADVANCED if advanced else SLICE_MAX_DEVICES
    if not _too_many("spec.devices", len(devices), limit, p):
        per_device = spec.get("perDeviceNodeSelection") is True
        for i, dev in enumerate(devices):
            _device(s, dev, f"spec.devices[{i}]", per_device, p)
        _duplicates([d.get("name") for d in devices], "spec.devices", p)
    counter_sets = s.mappings(spec, "sharedCounters", "spec.sharedCounters")
    if not _too_many("spec.sharedCounters", len(counter_sets), SLICE_MAX_COUNTER_SETS, p):
        set_names: set[str] = set()
        for i, cs in enumerate(counter_sets):
            cp = f"spec.sharedCounters[{i}]"
            name = cs.get("name")
            if name in (None, ""):
                p.add(f"{cp}.name", "Required value")
            else:
                _label(name, f"{cp}.name", p)
                if name in set_names:
                    p.add(cp, f"Duplicate value: {quote(name)}")
                set_names.add(str(name))
            if not cs.get("counters"):
                p.add(f"{cp}.counters", "Required value")


_VALIDATORS: Final[dict[str, Callable[[dict[str, Any], Problems], None]]] = {
    "DeviceClass": _device_class,
    "ResourceSlice": _resource_slice,
    "ResourceClaim": _resource_claim,
    "ResourceClaimTemplate": _resource_claim_template,
}


def validate_resource_object(obj: dict[str, Any], p: Problems) -> None:
    """The defaults (written into ``obj``) and validation of one ``resource.k8s.io/v1`` object."""
    check = _VALIDATORS.get(str(obj.get("kind")))
    if check is not None:
        check(obj, p)
