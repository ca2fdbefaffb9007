"""Loading multi-document manifests into typed objects, validating every field read.

Errors are :class:`ManifestError` with one line that names the file, the document index
(0-based, as ``kubectl`` reports), the object, the field path and what was expected, e.g.::

    cluster.yaml: document 4 (Pod c1/p1): spec.containers[0].resources.requests.cpu:
    got '1x'; expected a quantity such as '500m', '2', '1.5', '1G', '4Gi', '1e3'

Loading is all-or-nothing: a bad document raises before anything is returned, so callers
never see a partially loaded cluster.

Pods are most of a large snapshot (50,000 in one document each), so a Pod is first read by
:func:`_pod_common`, which reads the same fields with the same checks straight from the
mapping and gives up (:class:`_Uncommon`) at anything outside the common shape: a value of
another type than the usual one, or any value a check refuses. The general reader, which words
every error, then reads the document again. So the common reader may only ever return the Pod
the general one returns (``tests/api/test_manifest_common.py`` checks this on generated pods).
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyvolcano.api import matching
from pyvolcano.api.defaults import host_network_ports, pod_level_requests, requests_with_limit_defaults
from pyvolcano.api.dra import manifest as dra_manifest
from pyvolcano.api.dra.types import (
    RESOURCE_API_VERSION,
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from pyvolcano.api.hypernode import (
    MEMBER_TYPES,
    HyperNode,
    HyperNodeMember,
    MemberSelector,
    SelectorKind,
)
from pyvolcano.api.names import TOPOLOGY_API_VERSION
from pyvolcano.api.network_topology import NETWORK_TOPOLOGY_MODES, NetworkTopology, SubGroupPolicy
from pyvolcano.api.numatopology import NODEINFO_API_VERSION, Numatopology, read_spec
from pyvolcano.api.objects import (
    Container,
    Node,
    NodeGroupAffinity,
    OwnerReference,
    Pod,
    PodDisruptionBudget,
    PodGroup,
    PodGroupCondition,
    PriorityClass,
    Queue,
    QueueAffinity,
    ResourceQuota,
    unschedulable_condition,
)
from pyvolcano.api.plugin_fields import unmodelled_paths
from pyvolcano.api.quantity import QuantityError, parse_quantity
from pyvolcano.api.storage import (
    ANN_BETA_STORAGE_CLASS,
    BINDING_IMMEDIATE,
    BINDING_WAIT,
    ClaimRef,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from pyvolcano.util import safe_yaml

__all__ = [
    "ClusterObjects",
    "ManifestError",
    "check_queue_parents",
    "load_manifest_file",
    "load_manifest_text",
    "one_line",
    "parse_object",
    "parse_objects",
    "parse_time",
    "pod_uid",
    "read_manifest_text",
]

# The store's epoch (pyvolcano.store.base.EPOCH, 2024-01-01T00:00:00Z) in Unix seconds: timestamps
# are read as seconds after it, the clock of every scheduling loop. (The store layer sits above
# this one, so the instant is written out here; tests/api/test_manifest.py checks they agree.)
_EPOCH_UNIX = _dt.datetime(2024, 1, 1, tzinfo=_dt.UTC).timestamp()

MAX_NODE_GPUS = 1024
"""The most GPUs one Node may advertise: GPU placement keeps a row of per-device state for each
node, and a typo of a billion GPUs would otherwise exhaust memory. Real nodes have up to 16."""
GPU_DEVICE_RESOURCES = ("nvidia.com/gpu", "volcano.sh/gpu-number")

POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
PODGROUP_PHASES = ("Pending", "Inqueue", "Running", "Unknown", "Completed")
QUEUE_STATES = ("Open", "Closed", "Closing", "Unknown")
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000}


class ManifestError(ValueError):
    """A malformed manifest: the message says where and what was expected.

    The message is always one line: a line break that came in with a value is shown escaped.
    """

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


def one_line(text: str) -> str:
    """``text`` with line breaks escaped as ``\\n`` / ``\\r``, so a message stays one line."""
    if "\n" not in text and "\r" not in text:
        return text
    return text.replace("\r", "\\r").replace("\n", "\\n")


@dataclass(slots=True)
class ClusterObjects:
    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    podgroups: list[PodGroup] = field(default_factory=list)
    queues: list[Queue] = field(default_factory=list)
    priority_classes: list[PriorityClass] = field(default_factory=list)
    hypernodes: list[HyperNode] = field(default_factory=list)
    numatopologies: list[Numatopology] = field(default_factory=list)
    pod_disruption_budgets: list[PodDisruptionBudget] = field(default_factory=list)
    resource_quotas: list[ResourceQuota] = field(default_factory=list)
    device_classes: list[DeviceClass] = field(default_factory=list)
    resource_slices: list[ResourceSlice] = field(default_factory=list)
    resource_claims: list[ResourceClaim] = field(default_factory=list)
    resource_claim_templates: list[ResourceClaimTemplate] = field(default_factory=list)
    storage_classes: list[StorageClass] = field(default_factory=list)
    persistent_volumes: list[PersistentVolume] = field(default_factory=list)
    persistent_volume_claims: list[PersistentVolumeClaim] = field(default_factory=list)
    csi_nodes: list[CSINode] = field(default_factory=list)
    csi_drivers: list[CSIDriver] = field(default_factory=list)
    csi_storage_capacities: list[CSIStorageCapacity] = field(default_factory=list)
    other: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    documents: dict[tuple[str, str], int] = field(default_factory=dict)  # (kind, [ns/]name) -> document index


@functools.lru_cache(maxsize=512)
def _split_path(path: str) -> tuple[str, ...]:
    return tuple(path.split("."))


class _Doc:
    """Typed, path-tracking access to one manifest document."""

    def __init__(self, data: Mapping[str, Any], where: str, prefix: str = ""):
        self.data = data
        self.where = where
        self.prefix = prefix  # the path of ``data`` in the document, with a trailing dot

    def fail(self, path: str, msg: str) -> ManifestError:
        return ManifestError(f"{self.where}: {self.prefix}{path}: {msg}")

    def child(self, path: str, value: Any, what: str = "a mapping") -> _Doc:
        """Access to ``value`` (a mapping found at ``path``) whose errors name the full path."""
        if not isinstance(value, Mapping):
            raise self.fail(path, f"got {_show(value)}; expected {what}")
        return _Doc(value, self.where, f"{self.prefix}{path}.")

    def items(self, path: str, what: str = "a mapping") -> list[_Doc]:
        """The mappings of the list at ``path``, each as a :meth:`child`."""
        return [self.child(f"{path}[{i}]", v, what) for i, v in enumerate(self.list_(path))]

    def get(self, path: str) -> Any:
        cur: Any = self.data
        for part in _split_path(path):
            if cur is None:
                return None
            if type(cur) is not dict and not isinstance(cur, Mapping):
                return self._not_a_mapping(path)
            cur = cur.get(part)
        return cur

    def _not_a_mapping(self, path: str) -> Any:
        cur: Any = self.data
        parts = _split_path(path)
        for i, part in enumerate(parts):
            if not isinstance(cur, Mapping):
                raise self.fail(".".join(parts[:i]), f"got {_show(cur)}; expected a mapping")
            cur = cur.get(part)
        raise AssertionError(path)  # pragma: no cover - only called on a non-mapping step

    def str_(self, path: str, default: str = "", *, required: bool = False) -> str:
        v = self.get(path)
        if v is None:
            if required:
                raise self.fail(path, "is required; expected a non-empty string")
            return default
        if not isinstance(v, str) or (required and not v):
            raise self.fail(path, f"got {_show(v)}; expected a string")
        return v

    def int_(self, path: str, default: int | None = None, *, int32: bool = False) -> int | None:
        v = self.get(path)
        if v is None:
            return default
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(path, f"got {_show(v)}; expected an integer")
        if int32 and not INT32_MIN <= v <= INT32_MAX:
            raise self.fail(path, f"got {_show(v)}; expected a 32-bit integer ({INT32_MIN}..{INT32_MAX})")
        if not -(2**63) <= v < 2**63:
            # No Kubernetes integer field is wider than int64; the API server refuses such a number.
            raise self.fail(path, f"got {_show(v)}; expected an integer in the int64 range")
        return v

    def bool_(self, path: str, default: bool) -> bool:
        v = self.get(path)
        if v is None:
            return default
        if not isinstance(v, bool):
            raise self.fail(path, f"got {_show(v)}; expected true or false")
        return v

    def str_map(self, path: str) -> dict[str, str]:
        v = self.get(path)
        if v is None:
            return {}
        if not isinstance(v, Mapping):
            raise self.fail(path, f"got {_show(v)}; expected a mapping of strings")
        out: dict[str, str] = {}
        for k, x in v.items():
            if not isinstance(k, str):
                raise self.fail(path, f"key {_show(k)} is not a string")
            if isinstance(x, bool) or x is None or isinstance(x, (list, dict)):
                raise self.fail(f"{path}.{k}", f"got {_show(x)}; expected a string")
            out[k] = str(x)
        return out

    def list_(self, path: str) -> list[Any]:
        v = self.get(path)
        if v is None:
            return []
        if not isinstance(v, list):
            raise self.fail(path, f"got {_show(v)}; expected a list")
        return v

    def resources(self, path: str, value: Any = None, *, use_value: bool = False) -> dict[str, Any] | None:
        v = value if use_value else self.get(path)
        if v is None:
            return None
        if not isinstance(v, Mapping):
            raise self.fail(path, f"got {_show(v)}; expected a resource list such as {{cpu: '1', memory: 1Gi}}")
        out: dict[str, Any] = {}
        for k, q in v.items():
            if not isinstance(k, str) or not k:
                raise self.fail(path, f"resource name {_show(k)} is not a string")
            try:
                amount = parse_quantity(q)
            except QuantityError as e:
                raise self.fail(f"{path}.{k}", str(e)) from None
            if amount.numerator < 0:  # a Fraction's sign is its numerator's (and cheaper to read)
                raise self.fail(f"{path}.{k}", f"got {q!r}; expected a non-negative quantity")
            out[k] = q
        return out

    def timestamp(self, path: str) -> float | None:
        v = self.get(path)
        if v is None:
            return None
        seconds = _seconds(v)
        if seconds is None:
            raise self.fail(path, f"got {_show(v)}; expected an RFC 3339 time such as 2024-01-01T00:00:00Z")
        return seconds

    def validate(self, path: str, fn: Callable[[Any, str], None]) -> None:
        v = self.get(path)
        if v is None:
            return
        try:
            fn(v, path)
        except matching.SelectorError as e:
            raise ManifestError(f"{self.where}: {e}") from None


def _seconds(v: Any) -> float | None:
    """A time value (RFC 3339 text, a datetime, or a number already in the store's seconds) in the
    store's seconds after :data:`~pyvolcano.store.base.EPOCH`, the clock every component runs on
    (:mod:`pyvolcano.runtime.clock`); None if it is not one."""
    if isinstance(v, _dt.datetime):
        dt = v if v.tzinfo else v.replace(tzinfo=_dt.UTC)
        return dt.timestamp() - _EPOCH_UNIX
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, str):
        try:
            return _dt.datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp() - _EPOCH_UNIX
        except ValueError:
            pass
    return None


def parse_time(v: Any) -> float | None:
    """A time value as a manifest holds it (RFC 3339 text, a datetime, a number) in the store's
    seconds after its epoch, the clock sessions run on; None when it is not one."""
    return _seconds(v)


def _show(v: Any) -> str:
    text = repr(v)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(v).__name__})"


# ---------------------------------------------------------------------------- per kind


def _meta_common(d: _Doc) -> tuple[str, dict[str, str], dict[str, str], float]:
    name = d.str_("metadata.name", required=True)
    return name, d.str_map("metadata.labels"), d.str_map("metadata.annotations"), d.timestamp(
        "metadata.creationTimestamp"
    ) or 0.0


def _containers(d: _Doc, path: str) -> list[Container]:
    out = []
    for i, c in enumerate(d.list_(path)):
        cp = f"{path}[{i}]"
        if not isinstance(c, Mapping):
            raise d.fail(cp, f"got {_show(c)}; expected a container mapping")
        sub = _Doc(c, d.where)
        requests = _prefixed(d, sub, "resources.requests", f"{cp}.resources.requests")
        limits = _prefixed(d, sub, "resources.limits", f"{cp}.resources.limits")
        ports = []
        for j, p in enumerate(sub.list_("ports")):
            if not isinstance(p, Mapping):
                raise d.fail(f"{cp}.ports[{j}]", f"got {_show(p)}; expected a port mapping")
            for key in ("containerPort", "hostPort"):
                val = p.get(key)
                if val is not None and (isinstance(val, bool) or not isinstance(val, int) or not 0 <= val <= 65535):
                    raise d.fail(f"{cp}.ports[{j}].{key}", f"got {_show(val)}; expected a port number 0..65535")
            ports.append(dict(p))
        name = c.get("name", f"c{i}")
        if not isinstance(name, str):
            raise d.fail(f"{cp}.name", f"got {_show(name)}; expected a string")
        rp = c.get("restartPolicy")
        # The API server's SetDefaults_Pod: a resource only under limits is requested at its limit.
        out.append(Container(name=name, requests=requests_with_limit_defaults(requests or {}, limits or {}),
                             limits=limits or {}, ports=ports, restart_policy=rp if isinstance(rp, str) else None))
    return out


def _prefixed(d: _Doc, sub: _Doc, rel: str, full: str) -> dict[str, Any] | None:
    try:
        return sub.resources(rel)
    except ManifestError as e:
        raise ManifestError(str(e).replace(f"{sub.where}: {rel}", f"{d.where}: {full}", 1)) from None


def pod_uid(namespace: str, name: str, uid: str) -> str:
    """A pod's identity in the scheduler: ``metadata.uid``, or ``<namespace>-<name>`` without one."""
    return uid or f"{namespace}-{name}"


def _pod(d: _Doc) -> Pod:
    name, labels, annotations, created = _meta_common(d)
    ns = d.str_("metadata.namespace", "default") or "default"
    uid = pod_uid(ns, name, d.str_("metadata.uid", ""))
    owners = []
    for i, o in enumerate(d.list_("metadata.ownerReferences")):
        if not isinstance(o, Mapping) or not isinstance(o.get("name"), str):
            raise d.fail(f"metadata.ownerReferences[{i}]", f"got {_show(o)}; expected apiVersion/kind/name/uid")
        owners.append(OwnerReference(str(o.get("apiVersion", "")), str(o.get("kind", "")), o["name"],
                                     str(o.get("uid", "")), bool(o.get("controller", False))))
    containers = _containers(d, "spec.containers")
    init_containers = _containers(d, "spec.initContainers")
    if d.bool_("spec.hostNetwork", False):
        for c in (*containers, *init_containers):
            c.ports = host_network_ports(c.ports)
    phase = d.str_("status.phase", "Pending") or "Pending"
    if phase not in POD_PHASES:
        raise d.fail("status.phase", f"got {phase!r}; expected one of {', '.join(POD_PHASES)}")
    pp = d.str_("spec.preemptionPolicy", "")
    if pp not in ("", "Never", "PreemptLowerPriority"):
        raise d.fail("spec.preemptionPolicy", f"got {pp!r}; expected Never or PreemptLowerPriority")
    d.validate("spec.affinity", matching.validate_node_affinity)
    d.validate("spec.tolerations", matching.validate_tolerations)
    d.validate("spec.topologySpreadConstraints", matching.validate_topology_spread_constraints)
    affinity = d.get("spec.affinity")
    gates = []
    for i, g in enumerate(d.list_("spec.schedulingGates")):
        if not isinstance(g, Mapping) or not isinstance(g.get("name"), str):
            raise d.fail(f"spec.schedulingGates[{i}]", f"got {_show(g)}; expected {{name: <gate>}}")
        gates.append(g["name"])
    conditions = [dict(c) for c in d.list_("status.conditions") if isinstance(c, Mapping)]
    priority = d.int_("spec.priority", int32=True)
    if not containers:
        raise d.fail("spec.containers", "is required; expected at least one container")
    resource_claims, claim_statuses = dra_manifest.pod_resource_claims(d)
    claims, ephemeral = _pod_claims(d, name)
    return Pod(
        namespace=ns, name=name, uid=uid, labels=labels, annotations=annotations, owner_references=owners,
        creation_timestamp=created, deletion_timestamp=d.timestamp("metadata.deletionTimestamp"),
        containers=containers, init_containers=init_containers,
        overhead=d.resources("spec.overhead") or {}, node_name=d.str_("spec.nodeName", ""),
        scheduler_name=d.str_("spec.schedulerName", "default-scheduler") or "default-scheduler",
        priority=priority, priority_class_name=d.str_("spec.priorityClassName", ""),
        preemption_policy=pp, node_selector=d.str_map("spec.nodeSelector"),
        affinity=dict(affinity) if isinstance(affinity, Mapping) else None,
        tolerations=[dict(t) for t in d.list_("spec.tolerations")],
        topology_spread_constraints=[dict(t) for t in d.list_("spec.topologySpreadConstraints")],
        scheduling_gates=gates, phase=phase, conditions=conditions,
        nominated_node_name=d.str_("status.nominatedNodeName", ""), start_time=d.timestamp("status.startTime"),
        stored_unschedulable=unschedulable_condition(conditions),
        resource_claims=resource_claims, resource_claim_statuses=claim_statuses,
        claims=claims, ephemeral_claims=ephemeral,
        pod_requests=_pod_requests(d, containers, init_containers),
        unmodelled=unmodelled_paths("Pod", {"spec": d.get("spec")}),
        active_deadline_seconds=_positive_number(d.get("spec.activeDeadlineSeconds")),
    )


def _pod_requests(d: _Doc, containers: list[Container], init_containers: list[Container]) -> dict[str, Any] | None:
    """``spec.resources``'s requests after the API server's pod-level defaulting (None: none)."""
    if d.get("spec.resources") is None:
        return None
    requests = d.resources("spec.resources.requests")
    limits = d.resources("spec.resources.limits")
    out = pod_level_requests({"requests": requests or {}, "limits": limits or {}},
                             [(c.requests, c.limits, False) for c in containers],
                             [(c.requests, c.limits, c.restart_policy == "Always") for c in init_containers])
    return out or None


def _pod_claims(d: _Doc, pod_name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The PersistentVolumeClaims a pod's volumes name, in volume order (a generic ephemeral
    volume's claim is ``<pod>-<volume>``), and those of ephemeral volumes."""
    claims: list[str] = []
    ephemeral: list[str] = []
    for i, v in enumerate(d.list_("spec.volumes")):
        vp = f"spec.volumes[{i}]"
        if not isinstance(v, Mapping):
            raise d.fail(vp, f"got {_show(v)}; expected a volume mapping")
        pvc = v.get("persistentVolumeClaim")
        if pvc is not None:
            claim = pvc.get("claimName") if isinstance(pvc, Mapping) else None
            if not isinstance(claim, str) or not claim:
                raise d.fail(f"{vp}.persistentVolumeClaim.claimName", f"got {_show(claim)}; expected a claim name")
            claims.append(claim)
        elif v.get("ephemeral") is not None:
            vol = v.get("name")
            if not isinstance(vol, str) or not vol:
                raise d.fail(f"{vp}.name", f"got {_show(vol)}; expected a volume name")
            claims.append(f"{pod_name}-{vol}")
            ephemeral.append(claims[-1])
    return tuple(claims), tuple(ephemeral)


def _mapping_or_none(value: Any) -> dict[str, Any] | None:
    """A non-empty mapping field kept as given (its contents are not read here), else None."""
    return dict(value) if isinstance(value, Mapping) and value else None


class _Uncommon(Exception):
    """A document outside the common shape: the general reader reads it (and words any error)."""


def _str_or(v: Any, default: str = "") -> str:
    if v is None:
        return default
    if type(v) is not str:
        raise _Uncommon
    return v


def _strs(v: Any) -> dict[str, str]:
    if v is None:
        return {}
    if type(v) is not dict:
        raise _Uncommon
    for k, x in v.items():
        if type(k) is not str or type(x) is not str:
            raise _Uncommon
    return dict(v)


def _list_or_empty(v: Any) -> list[Any]:
    if v is None:
        return []
    if type(v) is not list:
        raise _Uncommon
    return v


def _positive_number(v: Any) -> float | None:
    """A positive number as a float (``activeDeadlineSeconds``); None for anything else (the
    API server validates the field; a pod without one has no declared limit)."""
    if isinstance(v, int | float) and not isinstance(v, bool) and v > 0:
        return float(v)
    return None


def _time_or_none(v: Any) -> float | None:
    if v is None:
        return None
    seconds = _seconds(v)
    if seconds is None:
        raise _Uncommon
    return seconds


def _resource_list(v: Any) -> dict[str, Any] | None:
    if v is None:
        return None
    if type(v) is not dict:
        raise _Uncommon
    for k, q in v.items():
        if type(k) is not str or not k:
            raise _Uncommon
        try:
            amount = parse_quantity(q)
        except QuantityError:
            raise _Uncommon from None
        if amount < 0:
            raise _Uncommon
    return dict(v)


def _containers_common(v: Any) -> list[Container]:
    out = []
    for i, c in enumerate(_list_or_empty(v)):
        if type(c) is not dict:
            raise _Uncommon
        res = c.get("resources")
        if res is None:
            requests = limits = None
        elif type(res) is dict:
            requests = _resource_list(res.get("requests"))
            limits = _resource_list(res.get("limits"))
        else:
            raise _Uncommon
        ports = []
        for p in _list_or_empty(c.get("ports")):
            if type(p) is not dict:
                raise _Uncommon
            for key in ("containerPort", "hostPort"):
                val = p.get(key)
                if val is not None and (type(val) is not int or not 0 <= val <= 65535):
                    raise _Uncommon
            ports.append(dict(p))
        name = c.get("name", f"c{i}")
        if type(name) is not str:
            raise _Uncommon
        rp = c.get("restartPolicy")
        out.append(Container(name=name, requests=requests_with_limit_defaults(requests or {}, limits or {}),
                             limits=limits or {}, ports=ports, restart_policy=rp if isinstance(rp, str) else None))
    return out


def _pod_common(doc: dict[str, Any]) -> Pod:
    """:func:`_pod` for a Pod of the common shape, read straight from ``doc``; :class:`_Uncommon` otherwise.

    Field by field the same reads, defaults and checks as :func:`_pod`: every check that
    fails, and every value not of the one type this reader takes, gives up. The fields
    :func:`_pod` reads before it calls the selector validators are read before them here too.
    """
    md, spec, status = doc.get("metadata"), doc.get("spec"), doc.get("status")
    if status is None:
        status = {}
    if type(md) is not dict or type(spec) is not dict or type(status) is not dict:
        raise _Uncommon
    if "resourceClaims" in spec or "resourceClaimStatuses" in status or "resources" in spec or "hostNetwork" in spec:
        raise _Uncommon  # the general reader reads DRA, pod-level resources and host networking
    name = md.get("name")
    if type(name) is not str or not name:
        raise _Uncommon
    labels, annotations = _strs(md.get("labels")), _strs(md.get("annotations"))
    created = _time_or_none(md.get("creationTimestamp")) or 0.0
    ns = _str_or(md.get("namespace"), "default") or "default"
    uid = pod_uid(ns, name, _str_or(md.get("uid")))
    owners = []
    for o in _list_or_empty(md.get("ownerReferences")):
        if type(o) is not dict or type(o.get("name")) is not str:
            raise _Uncommon
        owners.append(OwnerReference(str(o.get("apiVersion", "")), str(o.get("kind", "")), o["name"],
                                     str(o.get("uid", "")), bool(o.get("controller", False))))
    containers = _containers_common(spec.get("containers"))
    init_containers = _containers_common(spec.get("initContainers"))
    if not containers:
        raise _Uncommon
    phase = _str_or(status.get("phase"), "Pending") or "Pending"
    pp = _str_or(spec.get("preemptionPolicy"))
    if phase not in POD_PHASES or pp not in ("", "Never", "PreemptLowerPriority"):
        raise _Uncommon
    affinity, tolerations = spec.get("affinity"), spec.get("tolerations")
    spread = spec.get("topologySpreadConstraints")
    try:
        if affinity is not None:
            matching.validate_node_affinity(affinity, "spec.affinity")
        if tolerations is not None:
            matching.validate_tolerations(tolerations, "spec.tolerations")
        if spread is not None:
            matching.validate_topology_spread_constraints(spread, "spec.topologySpreadConstraints")
    except matching.SelectorError:
        raise _Uncommon from None
    gates = []
    for g in _list_or_empty(spec.get("schedulingGates")):
        if type(g) is not dict or type(g.get("name")) is not str:
            raise _Uncommon
        gates.append(g["name"])
    priority = spec.get("priority")
    if priority is not None and (type(priority) is not int or not INT32_MIN <= priority <= INT32_MAX):
        raise _Uncommon
    conditions = [dict(c) for c in _list_or_empty(status.get("conditions")) if isinstance(c, Mapping)]
    claims: tuple[str, ...] = ()
    ephemeral: tuple[str, ...] = ()
    volumes = spec.get("volumes")
    if volumes:
        if type(volumes) is not list:
            raise _Uncommon
        for v in volumes:
            if type(v) is not dict:
                raise _Uncommon
            if "persistentVolumeClaim" in v or "ephemeral" in v or "csi" in v:
                # Pods with claims (or inline CSI volumes) are few: the general reader reads them
                # (and words any error).
                raise _Uncommon
    return Pod(
        namespace=ns, name=name, uid=uid, labels=labels, annotations=annotations, owner_references=owners,
        creation_timestamp=created, deletion_timestamp=_time_or_none(md.get("deletionTimestamp")),
        containers=containers, init_containers=init_containers,
        overhead=_resource_list(spec.get("overhead")) or {}, node_name=_str_or(spec.get("nodeName")),
        scheduler_name=_str_or(spec.get("schedulerName"), "default-scheduler") or "default-scheduler",
        priority=priority, priority_class_name=_str_or(spec.get("priorityClassName")),
        preemption_policy=pp, node_selector=_strs(spec.get("nodeSelector")),
        affinity=dict(affinity) if isinstance(affinity, Mapping) else None,
        tolerations=[dict(t) for t in _list_or_empty(tolerations)],
        topology_spread_constraints=[dict(t) for t in _list_or_empty(spread)],
        scheduling_gates=gates, phase=phase, conditions=conditions,
        nominated_node_name=_str_or(status.get("nominatedNodeName")),
        start_time=_time_or_none(status.get("startTime")),
        stored_unschedulable=unschedulable_condition(conditions),
        claims=claims, ephemeral_claims=ephemeral,
        active_deadline_seconds=_positive_number(spec.get("activeDeadlineSeconds")),
    )


def _node(d: _Doc) -> Node:
    name, labels, annotations, created = _meta_common(d)
    d.validate("spec.taints", matching.validate_taints)
    capacity = d.resources("status.capacity") or {}
    allocatable = d.resources("status.allocatable")
    for path, resources in (("status.capacity", capacity), ("status.allocatable", allocatable or {})):
        for gpu in GPU_DEVICE_RESOURCES:
            if gpu in resources and parse_quantity(resources[gpu]) > MAX_NODE_GPUS:
                raise d.fail(f"{path}.{gpu}", f"got {_show(resources[gpu])}; expected at most "
                                              f"{MAX_NODE_GPUS} GPUs on one node")
    return Node(
        name=name, labels=labels, annotations=annotations,
        taints=[dict(t) for t in d.list_("spec.taints")],
        unschedulable=d.bool_("spec.unschedulable", False),
        capacity=capacity, allocatable=dict(capacity) if allocatable is None else allocatable,
        conditions=[dict(c) for c in d.list_("status.conditions") if isinstance(c, Mapping)],
        creation_timestamp=created,
    )


def _podgroup(d: _Doc) -> PodGroup:
    name, labels, annotations, created = _meta_common(d)
    ns = d.str_("metadata.namespace", "default") or "default"
    mtm_raw = d.get("spec.minTaskMember")
    mtm: dict[str, int] = {}
    if mtm_raw is not None:
        if not isinstance(mtm_raw, Mapping):
            raise d.fail("spec.minTaskMember", f"got {_show(mtm_raw)}; expected a mapping of task name to integer")
        for k, v in mtm_raw.items():
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= INT32_MAX:
                raise d.fail(f"spec.minTaskMember.{k}", f"got {_show(v)}; expected a non-negative 32-bit integer")
            mtm["" if k is None else str(k)] = v
    min_member = d.int_("spec.minMember", 0, int32=True) or 0
    if min_member < 0:
        raise d.fail("spec.minMember", f"got {min_member}; expected a non-negative integer")
    phase = d.str_("status.phase", "Pending") or "Pending"
    if phase not in PODGROUP_PHASES:
        raise d.fail("status.phase", f"got {phase!r}; expected one of {', '.join(PODGROUP_PHASES)}")
    conds = []
    for i, c in enumerate(d.list_("status.conditions")):
        if not isinstance(c, Mapping):
            raise d.fail(f"status.conditions[{i}]", f"got {_show(c)}; expected a condition mapping")
        conds.append(PodGroupCondition(type=str(c.get("type", "")), status=str(c.get("status", "")),
                                       reason=str(c.get("reason", "")), message=str(c.get("message", "")),
                                       transition_id=str(c.get("transitionID", ""))))
    return PodGroup(
        namespace=ns, name=name, uid=d.str_("metadata.uid", "") or f"{ns}/{name}", labels=labels,
        annotations=annotations, creation_timestamp=created, min_member=min_member, min_task_member=mtm,
        queue=d.str_("spec.queue", ""), priority_class_name=d.str_("spec.priorityClassName", ""),
        min_resources=d.resources("spec.minResources"), phase=phase, conditions=conds,
        running=d.int_("status.running", 0) or 0, succeeded=d.int_("status.succeeded", 0) or 0,
        failed=d.int_("status.failed", 0) or 0,
        network_topology=_network_topology(d, d.get("spec.networkTopology"), "spec.networkTopology"),
        sub_group_policy=_sub_group_policies(d),
    )


def _int_field(d: _Doc, value: Any, path: str, default: int, minimum: int) -> int:
    """A 32-bit integer at ``path`` (``value`` already read) of at least ``minimum``."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not INT32_MIN <= value <= INT32_MAX:
        raise d.fail(path, f"got {_show(value)}; expected a 32-bit integer")
    if value < minimum:
        raise d.fail(path, f"got {value}; expected an integer >= {minimum}")
    return value


def _str_field(d: _Doc, value: Any, path: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise d.fail(path, f"got {_show(value)}; expected a string")
    return value


def _mapping_field(d: _Doc, value: Any, path: str) -> Mapping[str, Any] | None:
    if value is not None and not isinstance(value, Mapping):
        raise d.fail(path, f"got {_show(value)}; expected a mapping")
    return value


def _network_topology(d: _Doc, value: Any, path: str) -> NetworkTopology | None:
    """``networkTopology`` with the CRD's checks: the mode enum (default ``hard``), a tier >= 0."""
    nt = _mapping_field(d, value, path)
    if nt is None:
        return None
    mode = _str_field(d, nt.get("mode"), f"{path}.mode") or "hard"
    if mode not in NETWORK_TOPOLOGY_MODES:
        raise d.fail(f"{path}.mode", f"got {mode!r}; expected one of {', '.join(NETWORK_TOPOLOGY_MODES)}")
    tier = nt.get("highestTierAllowed")
    return NetworkTopology(
        mode=mode,
        highest_tier_allowed=None if tier is None else _int_field(d, tier, f"{path}.highestTierAllowed", 0, 0),
        highest_tier_name=_str_field(d, nt.get("highestTierName"), f"{path}.highestTierName"),
    )


def _sub_group_policies(d: _Doc) -> tuple[SubGroupPolicy, ...]:
    out = []
    for i, raw in enumerate(d.list_("spec.subGroupPolicy")):
        path = f"spec.subGroupPolicy[{i}]"
        sg = _mapping_field(d, raw, path)
        if sg is None:
            raise d.fail(path, "got None; expected a mapping")
        keys = sg.get("matchLabelKeys")
        if keys is not None and (not isinstance(keys, list) or not all(isinstance(k, str) for k in keys)):
            raise d.fail(f"{path}.matchLabelKeys", f"got {_show(keys)}; expected a list of label keys")
        selector = sg.get("labelSelector")
        if selector is not None:
            try:
                matching.compile_label_selector(selector, f"{path}.labelSelector")
            except matching.SelectorError as e:
                raise ManifestError(f"{d.where}: {e}") from None
        out.append(SubGroupPolicy(
            name=_str_field(d, sg.get("name"), f"{path}.name"),
            sub_group_size=_int_field(d, sg.get("subGroupSize"), f"{path}.subGroupSize", 1, 1),
            min_sub_groups=_int_field(d, sg.get("minSubGroups"), f"{path}.minSubGroups", 0, 0),
            match_label_keys=tuple(keys or ()),
            label_selector=dict(selector) if selector is not None else None,
            network_topology=_network_topology(d, sg.get("networkTopology"), f"{path}.networkTopology"),
        ))
    return tuple(out)


def _hypernode(d: _Doc) -> HyperNode:
    """A HyperNode as its CRD's schema admits it: a tier >= 0, and members of type Node or HyperNode
    that each have exactly one selector (a non-empty ``exactMatch.name``, a non-empty
    ``regexMatch.pattern`` or a label selector). As upstream, a ``labelMatch`` on a HyperNode
    member is accepted; it selects nothing."""
    name, labels, annotations, created = _meta_common(d)
    tier = _int_field(d, d.get("spec.tier"), "spec.tier", 0, 0)
    members = []
    for i, raw in enumerate(d.list_("spec.members")):
        path = f"spec.members[{i}]"
        m = _mapping_field(d, raw, path)
        if m is None:
            raise d.fail(path, "got None; expected a member mapping {type, selector}")
        mtype = m.get("type")
        if mtype not in MEMBER_TYPES:
            raise d.fail(f"{path}.type", f"got {_show(mtype)}; expected one of {', '.join(MEMBER_TYPES)}")
        members.append(HyperNodeMember(str(mtype), _member_selector(d, m.get("selector"), f"{path}.selector")))
    node_count = d.int_("status.nodeCount", 0) or 0
    if node_count < 0:
        raise d.fail("status.nodeCount", f"got {node_count}; expected a non-negative integer")
    return HyperNode(
        name=name, uid=d.str_("metadata.uid", "") or name, labels=labels, annotations=annotations,
        creation_timestamp=created, tier=tier, tier_name=d.str_("spec.tierName", ""), members=members,
        node_count=node_count, conditions=[dict(c) for c in d.list_("status.conditions") if isinstance(c, Mapping)],
    )


def _member_selector(d: _Doc, value: Any, path: str) -> MemberSelector:
    sel = _mapping_field(d, value, path) or {}
    given = [k for k in SelectorKind if sel.get(k.value) is not None]
    if len(given) != 1:
        what = "none" if not given else " and ".join(k.value for k in given)
        raise d.fail(path, f"got {what}; expected exactly one of exactMatch, regexMatch or labelMatch")
    kind = given[0]
    inner = _mapping_field(d, sel[kind.value], f"{path}.{kind.value}") or {}
    if kind is SelectorKind.EXACT:
        exact = _str_field(d, inner.get("name"), f"{path}.exactMatch.name")
        if not exact:
            raise d.fail(f"{path}.exactMatch.name", "is required; expected a non-empty name")
        return MemberSelector(kind, name=exact)
    if kind is SelectorKind.REGEX:
        pattern = _str_field(d, inner.get("pattern"), f"{path}.regexMatch.pattern")
        if not pattern:
            raise d.fail(f"{path}.regexMatch.pattern", "is required; expected a non-empty regular expression")
        return MemberSelector(kind, pattern=pattern)
    try:
        matching.compile_label_selector(inner, f"{path}.labelMatch")
    except matching.SelectorError as e:
        raise ManifestError(f"{d.where}: {e}") from None
    return MemberSelector(kind, label_selector=dict(inner))


def _numatopology(d: _Doc) -> Numatopology:
    """A Numatopology as the resource exporter writes it (:func:`pyvolcano.api.numatopology.read_spec`)."""
    name, labels, annotations, created = _meta_common(d)
    spec, problems = read_spec(d.get("spec"))
    if problems:
        path, message = problems[0]
        raise d.fail(path, message)
    return Numatopology(name=name, uid=d.str_("metadata.uid", "") or name, labels=labels, annotations=annotations,
                        creation_timestamp=created, **spec)


def _queue(d: _Doc) -> Queue:
    name, labels, annotations, created = _meta_common(d)
    weight = d.int_("spec.weight", 1, int32=True)
    if weight is None or weight < 0:
        raise d.fail("spec.weight", f"got {weight}; expected a non-negative integer")
    state = d.str_("status.state", "Open") or "Open"
    if state not in QUEUE_STATES:
        raise d.fail("status.state", f"got {state!r}; expected one of {', '.join(QUEUE_STATES)}")
    return Queue(
        name=name, uid=d.str_("metadata.uid", "") or name, labels=labels, annotations=annotations,
        creation_timestamp=created, weight=weight, capability=d.resources("spec.capability"),
        deserved=d.resources("spec.deserved"), guarantee=d.resources("spec.guarantee.resource"),
        reclaimable=d.bool_("spec.reclaimable", True), priority=d.int_("spec.priority", 0, int32=True) or 0,
        parent=d.str_("spec.parent", ""), state=state, affinity=_mapping_or_none(d.get("spec.affinity")),
        node_groups=_queue_affinity(d),
    )


def _queue_affinity(d: _Doc) -> QueueAffinity | None:
    """``spec.affinity``: lists of node-group names under ``nodeGroup(Anti)Affinity``."""
    if _mapping_field(d, d.get("spec.affinity"), "spec.affinity") is None:
        return None

    def rules(path: str) -> NodeGroupAffinity | None:
        if _mapping_field(d, d.get(path), path) is None:
            return None
        groups = []
        for when in ("required", "preferred"):
            field_path = f"{path}.{when}DuringSchedulingIgnoredDuringExecution"
            names = d.list_(field_path)
            for i, name in enumerate(names):
                if not isinstance(name, str):
                    raise d.fail(f"{field_path}[{i}]", f"got {_show(name)}; expected a node group name")
            groups.append(tuple(names))
        return NodeGroupAffinity(required=groups[0], preferred=groups[1])

    return QueueAffinity(node_group_affinity=rules("spec.affinity.nodeGroupAffinity"),
                         node_group_anti_affinity=rules("spec.affinity.nodeGroupAntiAffinity"))


def _int_or_percent(d: _Doc, path: str) -> int | str | None:
    """An IntOrString count: a non-negative integer or a percentage such as ``"50%"``."""
    v = d.get(path)
    if v is None:
        return None
    if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
        return v
    if isinstance(v, str) and v.endswith("%") and v[:-1].isascii() and v[:-1].isdigit():
        return v
    raise d.fail(path, f"got {_show(v)}; expected a non-negative integer or a percentage such as '50%'")


def _pod_disruption_budget(d: _Doc) -> PodDisruptionBudget:
    name, _labels, _annotations, _created = _meta_common(d)
    ns = d.str_("metadata.namespace", "default") or "default"
    try:
        selector = matching.compile_label_selector(d.get("spec.selector"), "spec.selector")
    except matching.SelectorError as e:
        raise ManifestError(f"{d.where}: {e}") from None
    min_available = _int_or_percent(d, "spec.minAvailable")
    max_unavailable = _int_or_percent(d, "spec.maxUnavailable")
    if min_available is not None and max_unavailable is not None:
        raise d.fail("spec", "minAvailable and maxUnavailable cannot be both set")
    allowed = d.int_("status.disruptionsAllowed", 0, int32=True) or 0
    if allowed < 0:
        raise d.fail("status.disruptionsAllowed", f"got {allowed}; expected a non-negative integer")
    disrupted = d.get("status.disruptedPods")
    if disrupted is not None and not isinstance(disrupted, Mapping):
        raise d.fail("status.disruptedPods", f"got {_show(disrupted)}; expected a mapping of pod name to time")
    return PodDisruptionBudget(
        namespace=ns, name=name, uid=d.str_("metadata.uid", "") or f"{ns}/{name}", selector=selector,
        disruptions_allowed=allowed, disrupted_pods=frozenset(str(k) for k in (disrupted or {})),
        min_available=min_available, max_unavailable=max_unavailable,
    )


def _resource_quota(d: _Doc) -> ResourceQuota:
    name, _labels, _annotations, _created = _meta_common(d)
    ns = d.str_("metadata.namespace", "default") or "default"
    return ResourceQuota(
        namespace=ns, name=name, uid=d.str_("metadata.uid", "") or f"{ns}/{name}",
        hard=d.resources("status.hard") or {}, used=d.resources("status.used") or {},
        spec_hard=d.resources("spec.hard") or {},
    )


def _priority_class(d: _Doc) -> PriorityClass:
    name = d.str_("metadata.name", required=True)
    value = d.int_("value", int32=True)
    if value is None:
        raise d.fail("value", "is required; expected an integer")
    if name.startswith("system-"):
        if SYSTEM_PRIORITY_CLASSES.get(name) != value:
            raise d.fail("metadata.name", "names with the 'system-' prefix are reserved for the system priority "
                                          "classes system-node-critical (2000001000) and system-cluster-critical "
                                          "(2000000000)")
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        raise d.fail("value", f"got {value}; the maximum value of a user-defined priority is "
                              f"{HIGHEST_USER_DEFINABLE_PRIORITY}")
    policy = d.str_("preemptionPolicy", "PreemptLowerPriority") or "PreemptLowerPriority"
    if policy not in ("Never", "PreemptLowerPriority"):
        raise d.fail("preemptionPolicy", f"got {policy!r}; expected Never or PreemptLowerPriority")
    return PriorityClass(name=name, value=value, global_default=d.bool_("globalDefault", False),
                         preemption_policy=policy)


def _storage_bytes(d: _Doc, path: str, *, required: bool = False) -> float | None:
    v = d.get(path)
    if v is None:
        if required:
            raise d.fail(path, "is required; expected a quantity such as '10Gi'")
        return None
    try:
        amount = parse_quantity(v)
    except QuantityError as e:
        raise d.fail(path, str(e)) from None
    if amount < 0:
        raise d.fail(path, f"got {v!r}; expected a non-negative quantity")
    return float(amount)


_ACCESS_MODES = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
_VOLUME_MODES = ("Filesystem", "Block")


def _access_modes(d: _Doc, path: str) -> frozenset[str]:
    modes = d.list_(path)
    for i, m in enumerate(modes):
        if m not in _ACCESS_MODES:
            raise d.fail(f"{path}[{i}]", f"got {_show(m)}; expected one of {', '.join(_ACCESS_MODES)}")
    return frozenset(modes)


def _volume_mode(d: _Doc, path: str) -> str:
    mode = d.str_(path, "Filesystem") or "Filesystem"
    if mode not in _VOLUME_MODES:
        raise d.fail(path, f"got {mode!r}; expected Filesystem or Block")
    return mode


def _compiled_selector(d: _Doc, path: str) -> matching.LabelSelector | None:
    raw = d.get(path)
    if raw is None:
        return None
    try:
        return matching.compile_label_selector(raw, path)
    except matching.SelectorError as e:
        raise ManifestError(f"{d.where}: {e}") from None


def _storage_class(d: _Doc) -> StorageClass:
    name, _labels, annotations, created = _meta_common(d)
    mode = d.str_("volumeBindingMode", BINDING_IMMEDIATE) or BINDING_IMMEDIATE
    if mode not in (BINDING_IMMEDIATE, BINDING_WAIT):
        raise d.fail("volumeBindingMode", f"got {mode!r}; expected {BINDING_IMMEDIATE} or {BINDING_WAIT}")
    terms = []
    for i, term in enumerate(d.list_("allowedTopologies")):
        tp = f"allowedTopologies[{i}]"
        sub = _Doc(term, d.where) if isinstance(term, Mapping) else None
        if sub is None:
            raise d.fail(tp, f"got {_show(term)}; expected {{matchLabelExpressions: [...]}}")
        reqs = []
        for j, e in enumerate(sub.list_("matchLabelExpressions")):
            ep = f"{tp}.matchLabelExpressions[{j}]"
            key = e.get("key") if isinstance(e, Mapping) else None
            values = e.get("values") if isinstance(e, Mapping) else None
            if not isinstance(key, str) or not key:
                raise d.fail(f"{ep}.key", f"got {_show(key)}; expected a label key")
            if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
                raise d.fail(f"{ep}.values", f"got {_show(values)}; expected a non-empty list of label values")
            reqs.append((key, frozenset(values)))
        terms.append(tuple(reqs))
    policy = d.str_("reclaimPolicy", "Delete") or "Delete"
    if policy not in ("Delete", "Retain"):
        raise d.fail("reclaimPolicy", f"got {policy!r}; expected Delete or Retain")
    return StorageClass(name=name, provisioner=d.str_("provisioner", required=True), volume_binding_mode=mode,
                        allowed_topologies=tuple(terms), annotations=annotations, creation_timestamp=created,
                        reclaim_policy=policy)


def _node_affinity_terms(d: _Doc, path: str
                         ) -> tuple[tuple[matching.NodeSelectorTerm, ...] | None, tuple[str, ...], bool]:
    """A PV's required node affinity: its compiled terms (None: none), the node names it
    names (hostname In values, metadata.name In fields) and whether those names are all it says."""
    required = d.get(f"{path}.required")
    if required is None:
        return None, (), False
    terms = []
    pinned: list[str] = []
    hostname_only = True
    for i, t in enumerate(d.list_(f"{path}.required.nodeSelectorTerms")):
        tp = f"{path}.required.nodeSelectorTerms[{i}]"
        try:
            compiled = matching.compile_node_selector_term(t, tp)
        except matching.SelectorError as e:
            raise ManifestError(f"{d.where}: {e}") from None
        if compiled is not None:
            terms.append(compiled)
        exprs, fields = t.get("matchExpressions") or [], t.get("matchFields") or []
        if fields or len(exprs) != 1:
            hostname_only = False
        for expr in exprs:
            if expr.get("key") == "kubernetes.io/hostname" and expr.get("operator") == "In":
                pinned.extend(str(v) for v in expr.get("values") or [])
            else:
                hostname_only = False
        for f in fields:
            if f.get("operator") == "In":
                pinned.extend(str(v) for v in f.get("values") or [])
    return tuple(terms), tuple(dict.fromkeys(pinned)), hostname_only and bool(terms)


def _persistent_volume(d: _Doc) -> PersistentVolume:
    name, labels, annotations, _created = _meta_common(d)
    capacity = _storage_bytes(d, "spec.capacity.storage", required=True)
    affinity, pinned, hostname_only = _node_affinity_terms(d, "spec.nodeAffinity")
    affinity_key = "" if affinity is None else json.dumps(d.get("spec.nodeAffinity.required"), sort_keys=True,
                                                          default=str)
    ref = d.get("spec.claimRef")
    claim_ref = None
    if ref is not None:
        if not isinstance(ref, Mapping) or not isinstance(ref.get("name"), str):
            raise d.fail("spec.claimRef", f"got {_show(ref)}; expected {{namespace, name, uid}}")
        claim_ref = ClaimRef(str(ref.get("namespace") or "default"), ref["name"], str(ref.get("uid") or ""))
    phase = d.str_("status.phase", "Available") or "Available"
    return PersistentVolume(
        name=name, capacity=capacity or 0.0, storage_class=d.str_("spec.storageClassName", "")
        or annotations.get(ANN_BETA_STORAGE_CLASS, ""), access_modes=_access_modes(d, "spec.accessModes"),
        volume_mode=_volume_mode(d, "spec.volumeMode"), node_affinity=affinity, claim_ref=claim_ref, phase=phase,
        labels=labels, annotations=annotations, deleting=d.get("metadata.deletionTimestamp") is not None,
        csi_driver=d.str_("spec.csi.driver", ""), csi_handle=d.str_("spec.csi.volumeHandle", ""), pinned_to=pinned,
        hostname_only=hostname_only, affinity_key=affinity_key)


def _persistent_volume_claim(d: _Doc) -> PersistentVolumeClaim:
    name, _labels, annotations, _created = _meta_common(d)
    ns = d.str_("metadata.namespace", "default") or "default"
    sc = d.get("spec.storageClassName")
    if sc is not None and not isinstance(sc, str):
        raise d.fail("spec.storageClassName", f"got {_show(sc)}; expected a string")
    owner = ""
    for o in d.list_("metadata.ownerReferences"):
        if isinstance(o, Mapping) and o.get("kind") == "Pod" and o.get("controller") is True:
            owner = str(o.get("uid") or "")
    return PersistentVolumeClaim(
        namespace=ns, name=name, uid=d.str_("metadata.uid", ""), storage_class=sc,
        access_modes=_access_modes(d, "spec.accessModes"),
        request=_storage_bytes(d, "spec.resources.requests.storage") or 0.0,
        selector=_compiled_selector(d, "spec.selector"), volume_name=d.str_("spec.volumeName", ""),
        volume_mode=_volume_mode(d, "spec.volumeMode"), phase=d.str_("status.phase", "Pending") or "Pending",
        annotations=annotations, deleting=d.get("metadata.deletionTimestamp") is not None, owner_pod_uid=owner)


def _csi_node(d: _Doc) -> CSINode:
    name = d.str_("metadata.name", required=True)
    limits: dict[str, int | None] = {}
    for i, drv in enumerate(d.list_("spec.drivers")):
        dp = f"spec.drivers[{i}]"
        sub = _Doc(drv, d.where) if isinstance(drv, Mapping) else None
        if sub is None:
            raise d.fail(dp, f"got {_show(drv)}; expected a driver mapping")
        driver = sub.str_("name")
        if not driver:
            raise d.fail(f"{dp}.name", "is required; expected a CSI driver name")
        count = sub.get("allocatable.count")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
            raise d.fail(f"{dp}.allocatable.count", f"got {_show(count)}; expected a non-negative integer")
        limits[driver] = count
    return CSINode(name=name, limits=limits)


def _csi_driver(d: _Doc) -> CSIDriver:
    return CSIDriver(name=d.str_("metadata.name", required=True),
                     attach_required=d.bool_("spec.attachRequired", True),
                     storage_capacity=d.bool_("spec.storageCapacity", False))


def _csi_storage_capacity(d: _Doc) -> CSIStorageCapacity:
    return CSIStorageCapacity(
        namespace=d.str_("metadata.namespace", "default") or "default", name=d.str_("metadata.name", required=True),
        storage_class=d.str_("storageClassName", required=True),
        node_topology=_compiled_selector(d, "nodeTopology"), capacity=_storage_bytes(d, "capacity"),
        maximum_volume_size=_storage_bytes(d, "maximumVolumeSize"))


_KINDS: dict[tuple[str, str], tuple[str, Callable[[_Doc], Any]]] = {
    ("v1", "Pod"): ("pods", _pod),
    ("v1", "Node"): ("nodes", _node),
    ("scheduling.volcano.sh/v1beta1", "PodGroup"): ("podgroups", _podgroup),
    ("scheduling.volcano.sh/v1beta1", "Queue"): ("queues", _queue),
    ("scheduling.k8s.io/v1", "PriorityClass"): ("priority_classes", _priority_class),
    (TOPOLOGY_API_VERSION, "HyperNode"): ("hypernodes", _hypernode),
    (NODEINFO_API_VERSION, "Numatopology"): ("numatopologies", _numatopology),
    ("policy/v1", "PodDisruptionBudget"): ("pod_disruption_budgets", _pod_disruption_budget),
    ("v1", "ResourceQuota"): ("resource_quotas", _resource_quota),
    (RESOURCE_API_VERSION, "DeviceClass"): ("device_classes", dra_manifest.device_class),
    (RESOURCE_API_VERSION, "ResourceSlice"): ("resource_slices", dra_manifest.resource_slice),
    (RESOURCE_API_VERSION, "ResourceClaim"): ("resource_claims", dra_manifest.resource_claim),
    (RESOURCE_API_VERSION, "ResourceClaimTemplate"): ("resource_claim_templates", dra_manifest.resource_claim_template),
    ("storage.k8s.io/v1", "StorageClass"): ("storage_classes", _storage_class),
    ("v1", "PersistentVolume"): ("persistent_volumes", _persistent_volume),
    ("v1", "PersistentVolumeClaim"): ("persistent_volume_claims", _persistent_volume_claim),
    ("storage.k8s.io/v1", "CSINode"): ("csi_nodes", _csi_node),
    ("storage.k8s.io/v1", "CSIDriver"): ("csi_drivers", _csi_driver),
    ("storage.k8s.io/v1", "CSIStorageCapacity"): ("csi_storage_capacities", _csi_storage_capacity),
}


# Readers of the common shape, tried first (see the module docstring).
_COMMON: dict[tuple[str, str], Callable[[dict[str, Any]], Any]] = {("v1", "Pod"): _pod_common}


def _describe(doc: Mapping[str, Any]) -> str:
    kind = doc.get("kind", "?")
    md = doc.get("metadata")
    if isinstance(md, Mapping):
        name = md.get("name")
        ns = md.get("namespace")
        if isinstance(name, str):
            if kind in ("Pod", "PodGroup", "PersistentVolumeClaim", "CSIStorageCapacity", "ResourceClaim",
                        "ResourceClaimTemplate", "PodDisruptionBudget", "ResourceQuota"):
                return f"{kind} {ns if isinstance(ns, str) and ns else 'default'}/{name}"
            return f"{kind} {name}"
    return str(kind)


def iter_documents(text: str, source: str) -> Iterator[tuple[int, Any]]:
    """``(index, document)`` pairs through the bounded loader of :mod:`pyvolcano.util.safe_yaml`."""
    try:
        yield from safe_yaml.load_all(text, source)
    except safe_yaml.InputError as e:
        if e.syntax:
            at = f" at {e.where}" if e.where else ""
            raise ManifestError(f"{source}: not valid YAML{at}: {e.problem}") from None
        raise ManifestError(str(e)) from None


def parse_objects(docs: Iterator[tuple[int, Any]] | list[tuple[int, Any]], source: str, *,
                  allow_other: bool = False) -> ClusterObjects:
    """Turn ``(index, document)`` pairs into typed objects; raises :class:`ManifestError`."""
    out = ClusterObjects()
    seen: dict[tuple[str, str], int] = {}
    for i, doc in docs:
        if doc is None:
            continue
        if not isinstance(doc, Mapping):
            raise ManifestError(f"{source}: document {i}: got {_show(doc)}; expected a Kubernetes object mapping")
        api, kind = doc.get("apiVersion"), doc.get("kind")
        if not isinstance(api, str) or not isinstance(kind, str) or (api, kind) not in _KINDS:
            where = f"{source}: document {i}"
            if allow_other and isinstance(kind, str) and isinstance(api, str):
                out.other.append((i, dict(doc)))
                continue
            known = ", ".join(f"{a} {k}" for a, k in _KINDS)
            raise ManifestError(f"{where}: apiVersion/kind {api}/{kind} is not supported; expected one of {known}")
        attr, build = _KINDS[(str(api), str(kind))]
        common = _COMMON.get((api, kind))
        obj = None
        if common is not None and type(doc) is dict:
            try:
                obj = common(doc)
            except _Uncommon:
                obj = None
        if obj is None:
            obj = build(_Doc(doc, f"{source}: document {i} ({_describe(doc)})"))
        key = (str(kind), f"{getattr(obj, 'namespace', '')}/{obj.name}")
        if key in seen:
            first = seen[key]
            raise ManifestError(f"{source}: document {i} ({_describe(doc)}): duplicate {kind} {key[1].lstrip('/')} "
                                f"(first defined in document {first})")
        seen[key] = i
        getattr(out, attr).append(obj)
    out.documents = {(kind, key.lstrip("/")): i for (kind, key), i in seen.items()}
    return out


def check_queue_parents(objs: ClusterObjects, source: str) -> None:
    """Queue parents must form a tree under ``root``: a cycle (``a -> b -> a``, or a ``root`` given a
    parent that descends from it) is a :class:`ManifestError` naming the first queue of the cycle.

    Not part of :func:`parse_objects` (the scheduler itself tolerates a broken hierarchy, as the
    capacity plugin's tests need); the ``schedule`` command calls it on its snapshot."""
    parent = {q.name: q.parent for q in objs.queues}
    for q in objs.queues:
        chain = [q.name]
        current = q.parent or ("" if q.name == "root" else "root")
        while (current and current in parent) or current == "root":
            if current in chain:
                cycle = " -> ".join([*chain[chain.index(current):], current])
                doc = objs.documents.get(("Queue", q.name), "?")
                raise ManifestError(f"{source}: document {doc} (Queue {q.name}): spec.parent: "
                                    f"queue parents form a cycle: {cycle}")
            chain.append(current)
            # Without a parent a queue hangs under root, which is itself the top.
            current = parent.get(current) or ("" if current == "root" else "root")


def parse_object(doc: Mapping[str, Any], where: str = "object") -> Any:
    """Typed object for one scheduler-relevant document, or None for other kinds."""
    api, kind = doc.get("apiVersion"), doc.get("kind")
    entry = _KINDS.get((api, kind)) if isinstance(api, str) and isinstance(kind, str) else None
    if entry is None:
        return None
    return entry[1](_Doc(doc, f"{where} ({_describe(doc)})"))


def load_manifest_text(text: str, source: str = "<manifest>", *, allow_other: bool = False) -> ClusterObjects:
    return parse_objects(iter_documents(text, source), source, allow_other=allow_other)


def load_manifest_file(path: str | os.PathLike[str], *, allow_other: bool = False) -> ClusterObjects:
    return load_manifest_text(read_manifest_text(path), os.fspath(path), allow_other=allow_other)


def read_manifest_text(path: str | os.PathLike[str]) -> str:
    """A manifest file's text; a missing, unreadable, non-UTF-8 or oversized file is a :class:`ManifestError`."""
    source = os.fspath(path)
    try:
        return safe_yaml.read_text(path)
    except OSError as e:
        raise ManifestError(f"{source}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise ManifestError(f"{source}: not UTF-8 text (byte {e.start}: {e.reason})") from None
    except safe_yaml.InputError as e:
        raise ManifestError(str(e)) from None
