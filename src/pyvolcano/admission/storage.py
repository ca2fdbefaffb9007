"""The API server's validation of the storage kinds volume binding reads.

StorageClass, CSINode, CSIDriver and CSIStorageCapacity as ``pkg/apis/storage/validation``
validates them, PersistentVolume and PersistentVolumeClaim as the PV and PVC parts of
``pkg/apis/core/validation`` do (``ValidatePersistentVolumeSpec``,
``ValidatePersistentVolumeClaimSpec``), with upstream's field paths and ``field.Error`` texts.
The API server's defaults are applied first where upstream's validation relies on them
(a StorageClass's ``volumeBindingMode`` and ``reclaimPolicy``, a CSIDriver's booleans), on the
object as sent, so that ``validate -o yaml`` shows them.

The rules kept are those that decide whether the object is created at all and those whose
violation would leave the scheduler reading something else than the user meant: names,
required fields, enumerations, one volume source per PV, node affinity (required for a local
volume), access modes, quantities, label and node selectors, driver names. Not checked: the
insides of volume sources other than ``csi``, ``local``, ``hostPath`` and ``nfs``, mount options,
data-source API groups beyond their name, and update-only rules (immutability); see
docs/differences.md.

Every helper appends to a :class:`~pyvolcano.admission._common.Problems`; none raises on bad input.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable, Mapping
from typing import Any, Final

from pyvolcano.admission._common import Problems, ShapeChecker, quote, sub
from pyvolcano.admission.k8s import (
    dns1123_subdomain_errors,
    parse_quantity_or_none,
    qualified_name_errors,
)
from pyvolcano.api import matching

__all__ = [
    "claim_spec_problems",
    "csi_driver_name_problems",
    "ephemeral_volume_problems",
    "node_selector_problems",
    "quantity_problems",
    "selector_problems",
    "too_long",
    "validate_storage_object",
]

ACCESS_MODES: Final = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
PV_RECLAIM_POLICIES: Final = ("Delete", "Recycle", "Retain")
CLASS_RECLAIM_POLICIES: Final = ("Delete", "Retain")
VOLUME_MODES: Final = ("Block", "Filesystem")
BINDING_MODES: Final = ("Immediate", "WaitForFirstConsumer")
FS_GROUP_POLICIES: Final = ("File", "None", "ReadWriteOnceWithFSType")
LIFECYCLE_MODES: Final = ("Persistent", "Ephemeral")
HOST_PATH_TYPES: Final = ("", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File",
                          "FileOrCreate", "Socket")
CSI_NODE_ID_MAX_LENGTH: Final = 192
MAX_PARAMETERS: Final = 512
MAX_PARAMETERS_SIZE: Final = 256 * 1024

PV_SOURCES: Final = ("hostPath", "gcePersistentDisk", "awsElasticBlockStore", "glusterfs", "flocker", "nfs", "rbd",
                     "quobyte", "cephfs", "iscsi", "cinder", "fc", "flexVolume", "azureFile", "vsphereVolume",
                     "photonPersistentDisk", "portworxVolume", "azureDisk", "scaleIO", "local", "storageos", "csi")
"""A PV's volume sources, in the order ``ValidatePersistentVolumeSpec`` looks at them."""


def unsupported(value: Any, allowed: tuple[str, ...]) -> str:
    return f"Unsupported value: {quote(value)}: supported values: " + ", ".join(quote(a) for a in allowed)


def too_long(limit: int) -> str:
    return f"Too long: may not be more than {limit} bytes"


def csi_driver_name_problems(name: Any, path: str, p: Problems) -> None:
    """``ValidateCSIDriverName``: required, at most 63 characters, a DNS subdomain once lower-cased."""
    if not isinstance(name, str) or not name:
        p.add(path, "Required value" if name in (None, "") else f"Invalid value: {quote(name)}: expected a string")
        return
    if len(name) > 63:
        p.add(path, too_long(63))
    for e in dns1123_subdomain_errors(name.lower()):
        p.add(path, f"Invalid value: {quote(name)}: {e}")


def class_name_problems(name: str, path: str, p: Problems) -> None:
    """``ValidateClassName``: a DNS subdomain."""
    for e in dns1123_subdomain_errors(name):
        p.add(path, f"Invalid value: {quote(name)}: {e}")


def _selector_error(fn: Callable[[Any, str], object], value: Any, path: str, p: Problems) -> None:
    try:
        fn(value, path)
    except matching.SelectorError as e:
        text = str(e)
        where, _, msg = text.partition(": ")
        p.add(where if msg else path, f"Invalid value: {msg or text}")


def selector_problems(value: Any, path: str, p: Problems) -> None:
    """``ValidateLabelSelector`` (operators, keys, values)."""
    _selector_error(matching.compile_label_selector, value, path, p)


def node_selector_problems(value: Any, path: str, p: Problems) -> None:
    """``ValidateNodeSelector``: at least one term, each term's requirements valid."""
    if not isinstance(value, Mapping):
        p.add(path, f"Invalid value: {quote(value)}: expected a node selector {{nodeSelectorTerms: [...]}}")
        return
    terms = value.get("nodeSelectorTerms")
    tp = f"{path}.nodeSelectorTerms"
    if terms is not None and not isinstance(terms, list):
        p.add(tp, f"Invalid value: {quote(terms)}: expected a list")
        return
    if not terms:
        p.add(tp, "Required value: must have at least one node selector term")
        return
    for i, term in enumerate(terms):
        _selector_error(matching.compile_node_selector_term, term, f"{tp}[{i}]", p)


def quantity_problems(value: Any, path: str, p: Problems, *, positive: bool = False) -> None:
    q = parse_quantity_or_none(value)
    shown = quote(str(value)) if isinstance(value, str | int | float) and not isinstance(value, bool) else quote(value)
    if q is None:
        p.add(path, f"Invalid value: {shown}: quantities must match the regular expression "
                    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    elif positive and q <= 0:
        p.add(path, f"Invalid value: {shown}: must be greater than zero")
    elif q < 0:
        p.add(path, f"Invalid value: {shown}: must be greater than or equal to 0")


def _access_modes(s: ShapeChecker, spec: Mapping[str, Any], path: str, p: Problems, *, required: str) -> None:
    modes = s.strings(spec, "accessModes", path)
    if spec.get("accessModes") is not None and modes is None:
        return
    if not modes:
        p.add(path, f"Required value{': ' + required if required else ''}")
        return
    rwop = other = False
    for m in modes:
        if m not in ACCESS_MODES:
            p.add(path, unsupported(m, ACCESS_MODES))
        elif m == "ReadWriteOncePod":
            rwop = True
        else:
            other = True
    if rwop and other:
        p.add(path, "Forbidden: may not use ReadWriteOncePod with other access modes")


def _enum(s: ShapeChecker, obj: Mapping[str, Any], key: str, path: str, allowed: tuple[str, ...],
          p: Problems) -> str | None:
    v = s.string(obj, key, path)
    if v is not None and v not in allowed:
        p.add(path, unsupported(v, allowed))
        return None
    return v


# ----------------------------------------------------------------------------- StorageClass


def _storage_class(obj: dict[str, Any], p: Problems) -> None:
    s = ShapeChecker(p)
    # SetDefaults_StorageClass
    if obj.get("reclaimPolicy") is None:
        obj["reclaimPolicy"] = "Delete"
    if obj.get("volumeBindingMode") is None:
        obj["volumeBindingMode"] = "Immediate"
    prov = s.string(obj, "provisioner", "provisioner")
    if not prov:
        if obj.get("provisioner") in (None, ""):
            p.add("provisioner", "Required value")
    else:
        for e in qualified_name_errors(prov.lower()):
            p.add("provisioner", f"Invalid value: {quote(prov)}: {e}")
    params = s.string_map(obj, "parameters", "parameters")
    if params:
        if len(params) > MAX_PARAMETERS:
            p.add("parameters", too_long(MAX_PARAMETERS))
        elif sum(len(k) + len(v) for k, v in params.items()) > MAX_PARAMETERS_SIZE:
            p.add("parameters", too_long(MAX_PARAMETERS_SIZE))
        for k in params:
            if not k:
                p.add("parameters", 'Invalid value: "": field can not be empty.')
    _enum(s, obj, "reclaimPolicy", "reclaimPolicy", CLASS_RECLAIM_POLICIES, p)
    _enum(s, obj, "volumeBindingMode", "volumeBindingMode", BINDING_MODES, p)
    s.boolean(obj, "allowVolumeExpansion", "allowVolumeExpansion")
    # validateAllowedTopologies: upstream starts its list of seen terms with one nil map per term
    # and compares with Semantic.DeepEqual, for which an empty map equals nil: so a term without
    # requirements is reported as a duplicate, as is a term equal to an earlier one.
    seen: list[dict[str, frozenset[str]]] = []
    for i, term in enumerate(s.mappings(obj, "allowedTopologies", "allowedTopologies")):
        tp = f"allowedTopologies[{i}]"
        by_key: dict[str, frozenset[str]] = {}
        for j, expr in enumerate(s.mappings(term, "matchLabelExpressions", f"{tp}.matchLabelExpressions")):
            ep = f"{tp}.matchLabelExpressions[{j}]"
            values = s.strings(expr, "values", f"{ep}.values") or []
            if not values:
                p.add(f"{ep}.values", "Required value")
            vs: set[str] = set()
            for n, v in enumerate(values):
                if v in vs:
                    p.add(f"{ep}.values[{n}]", f"Duplicate value: {quote(v)}")
                vs.add(v)
            key = s.string(expr, "key", f"{ep}.key") or ""
            errors = qualified_name_errors(key) if key else ["name part must be non-empty"]
            for err in errors:
                p.add(f"{ep}.key", f"Invalid value: {quote(key)}: {err}")
            if key in by_key:
                p.add(f"{ep}.key", f"Duplicate value: {quote(key)}")
            by_key[key] = frozenset(vs)
        if not by_key or by_key in seen:
            p.add(f"{tp}.matchLabelExpressions", 'Duplicate value: ""')
        seen.append(by_key)


# ----------------------------------------------------------------------------- PersistentVolume


def _volume_node_affinity(s: ShapeChecker, spec: Mapping[str, Any], p: Problems) -> bool:
    na = s.mapping(spec, "nodeAffinity", "spec.nodeAffinity")
    if na is None:
        return False
    req = na.get("required")
    if req is None:
        p.add("spec.nodeAffinity.required", "Required value: must specify required node constraints")
    else:
        node_selector_problems(req, "spec.nodeAffinity.required", p)
    return True


def _absolute_path(s: ShapeChecker, src: Mapping[str, Any], path: str, p: Problems, *, absolute: bool) -> None:
    value = s.string(src, "path", path)
    if not value:
        if src.get("path") in (None, ""):
            p.add(path, "Required value")
        return
    if absolute and not value.startswith("/"):
        p.add(path, f"Invalid value: {quote(value)}: must be an absolute path")
    if ".." in value.split("/"):
        p.add(path, f"Invalid value: {quote(value)}: must not contain '..'")


def _pv_source(name: str, src: Mapping[str, Any], s: ShapeChecker, p: Problems) -> None:
    path = f"spec.{name}"
    if name == "local":
        _absolute_path(s, src, f"{path}.path", p, absolute=False)
    elif name == "hostPath":
        _absolute_path(s, src, f"{path}.path", p, absolute=False)
        _enum(s, src, "type", f"{path}.type", HOST_PATH_TYPES, p)
    elif name == "nfs":
        if not s.string(src, "server", f"{path}.server"):
            p.add(f"{path}.server", "Required value")
        _absolute_path(s, src, f"{path}.path", p, absolute=True)
    elif name == "csi":
        csi_driver_name_problems(src.get("driver"), f"{path}.driver", p)
        if not s.string(src, "volumeHandle", f"{path}.volumeHandle"):
            p.add(f"{path}.volumeHandle", "Required value")


def _persistent_volume(obj: dict[str, Any], p: Problems) -> None:
    s = ShapeChecker(p)
    spec = s.mapping(obj, "spec", "spec")
    if spec is None:
        spec = {}
    # SetDefaults_PersistentVolume
    if spec.get("persistentVolumeReclaimPolicy") is None and isinstance(obj.get("spec"), dict):
        spec["persistentVolumeReclaimPolicy"] = "Retain"
    if spec.get("volumeMode") is None and isinstance(obj.get("spec"), dict):
        spec["volumeMode"] = "Filesystem"
    _access_modes(s, spec, "spec.accessModes", p, required="")
    capacity = s.mapping(spec, "capacity", "spec.capacity")
    if not capacity and (spec.get("capacity") is None or capacity == {}):
        p.add("spec.capacity", "Required value")
    if capacity is not None and ("storage" not in capacity or len(capacity) > 1):
        shown = json.dumps({str(k): str(v) for k, v in capacity.items()}, sort_keys=True, separators=(",", ":"))
        p.add("spec.capacity", f"Unsupported value: {shown}: supported values: \"storage\"")
    for r, qty in (capacity or {}).items():
        quantity_problems(qty, f"spec.capacity[{r}]", p, positive=True)
    policy = _enum(s, spec, "persistentVolumeReclaimPolicy", "spec.persistentVolumeReclaimPolicy",
                   PV_RECLAIM_POLICIES, p)
    affinity = _volume_node_affinity(s, spec, p)
    sources = 0
    for name in PV_SOURCES:
        src = spec.get(name)
        if src is None:
            continue
        if not isinstance(src, Mapping):
            p.add(f"spec.{name}", f"Invalid value: {quote(src)}: expected a mapping")
            continue
        if sources and name != "flexVolume":
            p.add(f"spec.{name}", "Forbidden: may not specify more than 1 volume type")
            continue
        sources += 1
        _pv_source(name, src, s, p)
        if name == "local" and not affinity:
            p.add("spec.nodeAffinity", "Required value: Local volume requires node affinity")
    if not sources:
        p.add("spec", "Required value: must specify a volume type")
    host = sub(spec, "hostPath").get("path")
    if isinstance(host, str) and posixpath.normpath(host) == "/" and policy == "Recycle":
        p.add("spec.persistentVolumeReclaimPolicy", "Forbidden: may not be 'recycle' for a hostPath mount of '/'")
    sc = s.string(spec, "storageClassName", "spec.storageClassName")
    if sc:
        class_name_problems(sc, "spec.storageClassName", p)
    _enum(s, spec, "volumeMode", "spec.volumeMode", VOLUME_MODES, p)
    ref = s.mapping(spec, "claimRef", "spec.claimRef")
    if ref is not None:
        for key in ("name", "namespace", "uid"):
            s.string(ref, key, f"spec.claimRef.{key}")


# ----------------------------------------------------------------------------- PersistentVolumeClaim


def _data_source(s: ShapeChecker, src: Mapping[str, Any], path: str, p: Problems) -> None:
    for key in ("name", "kind"):
        if not s.string(src, key, f"{path}.{key}"):
            p.add(f"{path}.{key}", "Required value")
    group = s.string(src, "apiGroup", f"{path}.apiGroup") or ""
    kind = src.get("kind")
    if not group and isinstance(kind, str) and kind != "PersistentVolumeClaim":
        p.add(path, f"Invalid value: {quote(kind)}: must be 'PersistentVolumeClaim' when referencing the "
                    "default apiGroup")
    if group:
        for e in dns1123_subdomain_errors(group):
            p.add(f"{path}.apiGroup", f"Invalid value: {quote(group)}: {e}")


def claim_spec_problems(spec: Mapping[str, Any], path: str, p: Problems) -> None:
    """``ValidatePersistentVolumeClaimSpec`` for a claim's (or a volume claim template's) spec."""
    s = ShapeChecker(p)
    _access_modes(s, spec, f"{path}.accessModes", p, required="at least 1 access mode is required")
    if spec.get("selector") is not None:
        selector_problems(spec["selector"], f"{path}.selector", p)
    requests = sub(sub(spec, "resources"), "requests")
    if "storage" not in requests:
        p.add(f"{path}.resources[storage]", "Required value")
    else:
        quantity_problems(requests["storage"], f"{path}.resources[storage]", p, positive=True)
    sc = s.string(spec, "storageClassName", f"{path}.storageClassName")
    if sc:
        class_name_problems(sc, f"{path}.storageClassName", p)
    _enum(s, spec, "volumeMode", f"{path}.volumeMode", VOLUME_MODES, p)
    ds = s.mapping(spec, "dataSource", f"{path}.dataSource")
    if ds is not None:
        _data_source(s, ds, f"{path}.dataSource", p)
    dsr = s.mapping(spec, "dataSourceRef", f"{path}.dataSourceRef")
    if dsr is not None:
        _data_source(s, dsr, f"{path}.dataSourceRef", p)
    if ds is not None and dsr is not None and not dsr.get("namespace") and any(
            ds.get(k) != dsr.get(k) for k in ("apiGroup", "kind", "name")):
        p.add(path, f"Invalid value: {quote(f'{path}.dataSource')}: must match dataSourceRef")


def ephemeral_volume_problems(pod_spec: Any, path: str, p: Problems) -> None:
    """``validateEphemeralVolumeSource`` for each generic ephemeral volume of a pod spec at
    ``path``: a claim template whose metadata has only labels and annotations and whose spec is a
    valid claim spec (the ephemeral volume controller creates the claim from it)."""
    volumes = pod_spec.get("volumes") if isinstance(pod_spec, Mapping) else None
    for i, vol in enumerate(volumes if isinstance(volumes, list) else []):
        eph = vol.get("ephemeral") if isinstance(vol, Mapping) else None
        if eph is None:
            continue
        ep = f"{path}.volumes[{i}].ephemeral.volumeClaimTemplate"
        template = sub(eph, "volumeClaimTemplate") if isinstance(eph, Mapping) else {}
        if not template:
            p.add(ep, "Required value")
            continue
        for key in sub(template, "metadata"):
            if key not in ("labels", "annotations"):
                p.add(f"{ep}.metadata.{key}", "Forbidden: cannot be set")
        claim_spec_problems(sub(template, "spec"), f"{ep}.spec", p)


def _persistent_volume_claim(obj: dict[str, Any], p: Problems) -> None:
    spec = obj.get("spec")
    if spec is None:
        spec = obj["spec"] = {}
    if not isinstance(spec, dict):
        p.add("spec", f"Invalid value: {quote(spec)}: expected a mapping")
        return
    if spec.get("volumeMode") is None:
        spec["volumeMode"] = "Filesystem"  # SetDefaults_PersistentVolumeClaimSpec
    claim_spec_problems(spec, "spec", p)


# ----------------------------------------------------------------------------- CSI objects


def _csi_node(obj: dict[str, Any], p: Problems) -> None:
    s = ShapeChecker(p)
    spec = s.mapping(obj, "spec", "spec") or {}
    names: set[str] = set()
    for i, drv in enumerate(s.mappings(spec, "drivers", "spec.drivers")):
        dp = f"spec.drivers[{i}]"
        name = drv.get("name")
        csi_driver_name_problems(name, f"{dp}.name", p)
        if isinstance(name, str) and name:
            if name in names:
                p.add(f"{dp}.name", f"Duplicate value: {quote(name)}")
            names.add(name)
        node_id = s.string(drv, "nodeID", f"{dp}.nodeID")
        if not node_id:
            if drv.get("nodeID") in (None, ""):
                p.add(f"{dp}.nodeID", "Required value")
        elif len(node_id) > CSI_NODE_ID_MAX_LENGTH:
            p.add(f"{dp}.nodeID", f"Invalid value: {quote(node_id)}: must be {CSI_NODE_ID_MAX_LENGTH} characters "
                                  "or less")
        keys: set[str] = set()
        for key in s.strings(drv, "topologyKeys", f"{dp}.topologyKeys") or []:
            if not key:
                p.add(dp, "Required value")
            elif key in keys:
                p.add(dp, f"Duplicate value: {quote(key)}")
            keys.add(key)
            for e in qualified_name_errors(key) if key else ():
                p.add(dp, f"Invalid value: {quote(key)}: {e}")
        count = s.integer(sub(drv, "allocatable"), "count", f"{dp}.allocatable.count")
        if count is not None and count < 0:
            p.add(f"{dp}.allocatable.count", f"Invalid value: {count}: must be greater than or equal to 0")


def _csi_driver(obj: dict[str, Any], p: Problems) -> None:
    s = ShapeChecker(p)
    spec = obj.get("spec")
    if spec is None:
        spec = obj["spec"] = {}
    if not isinstance(spec, dict):
        p.add("spec", f"Invalid value: {quote(spec)}: expected a mapping")
        return
    # SetDefaults_CSIDriver
    for key, default in (("attachRequired", True), ("podInfoOnMount", False), ("storageCapacity", False),
                         ("requiresRepublish", False), ("seLinuxMount", False)):
        if spec.get(key) is None:
            spec[key] = default
        s.boolean(spec, key, f"spec.{key}")
    if spec.get("fsGroupPolicy") is None:
        spec["fsGroupPolicy"] = "ReadWriteOnceWithFSType"
    if spec.get("volumeLifecycleModes") is None:
        spec["volumeLifecycleModes"] = ["Persistent"]
    _enum(s, spec, "fsGroupPolicy", "spec.fsGroupPolicy", FS_GROUP_POLICIES, p)
    for mode in s.strings(spec, "volumeLifecycleModes", "spec.volumeLifecycleModes") or []:
        if mode not in LIFECYCLE_MODES:
            p.add("spec.volumeLifecycleModes", unsupported(mode, LIFECYCLE_MODES))
    audiences: set[str] = set()
    for i, tr in enumerate(s.mappings(spec, "tokenRequests", "spec.tokenRequests")):
        tp = f"spec.tokenRequests[{i}]"
        aud = s.string(tr, "audience", f"{tp}.audience") or ""
        if aud in audiences:
            p.add(f"{tp}.audience", f"Duplicate value: {quote(aud)}")
        audiences.add(aud)
        secs = s.integer(tr, "expirationSeconds", f"{tp}.expirationSeconds", int32=False)
        if secs is not None and secs < 600:
            p.add(f"{tp}.expirationSeconds", f"Invalid value: {secs}: may not specify a duration less than 10 "
                                             "minutes")
        elif secs is not None and secs > 2**32:
            p.add(f"{tp}.expirationSeconds", f"Invalid value: {secs}: may not specify a duration larger than 2^32 "
                                             "seconds")


def _csi_storage_capacity(obj: dict[str, Any], p: Problems) -> None:
    s = ShapeChecker(p)
    if obj.get("nodeTopology") is not None:
        selector_problems(obj["nodeTopology"], "nodeTopology", p)
    sc = s.string(obj, "storageClassName", "storageClassName")
    if sc is not None or obj.get("storageClassName") is None:
        class_name_problems(sc or "", "storageClassName", p)
    for key in ("capacity", "maximumVolumeSize"):
        if obj.get(key) is not None:
            quantity_problems(obj[key], key, p)


_VALIDATORS: Final[dict[str, Callable[[dict[str, Any], Problems], None]]] = {
    "StorageClass": _storage_class,
    "PersistentVolume": _persistent_volume,
    "PersistentVolumeClaim": _persistent_volume_claim,
    "CSINode": _csi_node,
    "CSIDriver": _csi_driver,
    "CSIStorageCapacity": _csi_storage_capacity,
}


def validate_storage_object(obj: dict[str, Any], p: Problems) -> None:
    """The API server's defaults (written into ``obj``) and validation of one storage object."""
    check = _VALIDATORS.get(str(obj.get("kind")))
    if check is not None:
        check(obj, p)

