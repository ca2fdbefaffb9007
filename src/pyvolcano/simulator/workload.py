"""Workload and cluster files for ``pyvolcano simulate``.

A CLUSTER file holds Nodes (and optionally Queues, PriorityClasses, HyperNodes, RuntimeClasses,
ResourceQuotas, PodDisruptionBudgets, the storage objects: StorageClasses, PersistentVolumes,
PersistentVolumeClaims, CSINodes, CSIDrivers, CSIStorageCapacities, and DeviceClasses and
ResourceSlices). A WORKLOAD file holds any of Job, CronJob, JobTemplate, JobFlow, Queue, PodGroup,
Pod, Command, PriorityClass, RuntimeClass, ResourceQuota, PodDisruptionBudget, the storage objects,
the dynamic resource allocation objects, plus
``apiVersion: pyvolcano.io/v1alpha1, kind: ClusterEvent`` documents
(``spec: {at: 10m, action: NodeDown|NodeUp, node: NAME}``). An object's
``metadata.annotations["pyvolcano.io/submit-at"]`` (a duration such as ``5m``) delays its
creation. Shape errors (not YAML, not a mapping, a kind or apiVersion pyvolcano does not model,
an unknown field, bad submit-at, an object defined twice in a cluster file) are reported with
file, document and field; admission errors are the store's business, at submit time.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from pyvolcano.api.duration import DurationError, parse_duration_strict
from pyvolcano.api.fields import unknown_fields
from pyvolcano.api.kinds import KindStatus, resolve
from pyvolcano.api.manifest import ManifestError, iter_documents, parse_object, read_manifest_text
from pyvolcano.runtime.kubelet import DURATION

__all__ = ["ClusterEvent", "Submission", "endless_cronjobs", "load_workload", "without_duration"]

SUBMIT_AT = "pyvolcano.io/submit-at"
STORAGE_KINDS = {"StorageClass", "PersistentVolume", "PersistentVolumeClaim", "CSINode", "CSIDriver",
                 "CSIStorageCapacity"}
DRA_KINDS = {"DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate"}
CLUSTER_KINDS = {"Node", "Queue", "PriorityClass", "HyperNode", *STORAGE_KINDS, "DeviceClass", "ResourceSlice",
                 "ResourceQuota", "PodDisruptionBudget", "RuntimeClass"}
CLUSTER_SCOPED = {"Node", "Queue", "PriorityClass", "Namespace", "HyperNode", "StorageClass", "PersistentVolume",
                  "CSINode", "CSIDriver", "DeviceClass", "ResourceSlice", "RuntimeClass"}
WORKLOAD_KINDS = {"Job", "Queue", "PodGroup", "Pod", "Command", "PriorityClass", "Namespace", "Service",
                  "ConfigMap", "Secret", "Node", "HyperNode", "CronJob", "JobTemplate", "JobFlow", *STORAGE_KINDS,
                  *DRA_KINDS, "RuntimeClass", "ResourceQuota", "PodDisruptionBudget"}
PASS_THROUGH = {("v1", "Namespace"), ("v1", "Service"), ("v1", "ConfigMap"), ("v1", "Secret")}
"""Kinds pyvolcano does not model that a workload may still create (job plugins read them)."""


@dataclass(frozen=True, slots=True)
class Submission:
    at: float
    document: int
    source: str
    obj: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind", ""))

    @property
    def key(self) -> str:
        md = self.obj.get("metadata") or {}
        name = md.get("name") or md.get("generateName") or "?"
        if self.kind in CLUSTER_SCOPED:
            return str(name)
        return f"{md.get('namespace') or 'default'}/{name}"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    at: float
    action: str
    node: str
    document: int
    source: str


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def load_workload(
    path: str | os.PathLike[str], *, cluster: bool = False
) -> tuple[list[Submission], list[ClusterEvent]]:
    source, text = os.fspath(path), read_manifest_text(path)
    subs: list[Submission] = []
    events: list[ClusterEvent] = []
    allowed = CLUSTER_KINDS if cluster else WORKLOAD_KINDS
    seen: dict[tuple[str, str], int] = {}
    for i, doc in iter_documents(text, source):
        if doc is None:
            continue
        where = f"{source}: document {i}"
        if not isinstance(doc, dict):
            raise ManifestError(f"{where}: expected a Kubernetes object mapping")
        kind = doc.get("kind")
        if kind == "ClusterEvent" and not cluster:
            events.append(_cluster_event(doc, where, i, source))
            continue
        what = "cluster" if cluster else "workload"
        if not isinstance(kind, str) or kind not in allowed:
            raise ManifestError(f"{where}: kind {_short(kind)} is not allowed in a {what} file; expected one of "
                                f"{', '.join(sorted(allowed))}")
        api = doc.get("apiVersion")
        if not isinstance(api, str) or not api:
            raise ManifestError(f"{where} ({kind}): apiVersion: got {_short(api)}; expected a string such as v1")
        md = doc.get("metadata")
        if not isinstance(md, dict):
            raise ManifestError(f"{where} ({kind}): metadata: expected a mapping with a name")
        _check_type_and_fields(doc, f"{where} ({kind} {_key(kind, md)})", what)
        if cluster:
            if kind in ("Node", "DeviceClass", "ResourceSlice") or kind in STORAGE_KINDS:
                # A Node is not admitted (the kubelet registers it): check its values here, so a
                # bad quantity is an error naming the file rather than a node quietly dropped.
                # (creationTimestamp is the API server's field: the store sets it, whatever was sent)
                parse_object({**doc, "metadata": {k: v for k, v in md.items() if k != "creationTimestamp"}}, where)
            key = (str(kind), _key(kind, md))
            if key in seen:
                raise ManifestError(f"{where} ({kind} {key[1]}): duplicate {kind} {key[1]} (first defined in "
                                    f"document {seen[key]})")
            seen[key] = i
        ann = md.get("annotations") or {}
        at = 0.0
        if isinstance(ann, dict) and SUBMIT_AT in ann:
            try:
                at = parse_duration_strict(str(ann[SUBMIT_AT]))
            except DurationError as e:
                raise ManifestError(f"{where} ({kind}): metadata.annotations.{SUBMIT_AT}: {e}") from None
            if at < 0:
                raise ManifestError(f"{where} ({kind}): metadata.annotations.{SUBMIT_AT}: must not be negative")
        subs.append(Submission(at, i, source, doc))
    return subs, events


def _key(kind: Any, md: dict[str, Any]) -> str:
    name = md.get("name") or md.get("generateName") or "?"
    if kind in CLUSTER_SCOPED:
        return str(name)
    return f"{md.get('namespace') or 'default'}/{name}"


def _check_type_and_fields(doc: dict[str, Any], where: str, what: str) -> None:
    """The object's kind is decided by apiVersion and kind (a ``v2`` Node or a ``batch/v1`` Job is
    not one pyvolcano models), and its fields are checked strictly, as ``kubectl`` does."""
    api, kind = doc.get("apiVersion"), str(doc.get("kind"))
    if not isinstance(api, str) or not api:
        raise ManifestError(f"{where}: apiVersion: is required; expected a string such as v1")
    res = resolve(api, kind)
    if res.status is KindStatus.UNKNOWN:
        raise ManifestError(f"{where}: apiVersion: {res.message}")
    if res.status is KindStatus.NOT_CHECKED and (api, kind) not in PASS_THROUGH:
        raise ManifestError(f"{where}: apiVersion: {api} {kind} is not allowed in a {what} file ({res.message})")
    unknown = unknown_fields(doc, api, kind)
    if unknown:
        raise ManifestError(f"{where}: " + "; ".join(f"{f}: {m}" for f, m in unknown))


def _cluster_event(doc: dict[str, Any], where: str, i: int, source: str) -> ClusterEvent:
    if doc.get("apiVersion") != "pyvolcano.io/v1alpha1":
        raise ManifestError(f"{where} (ClusterEvent): apiVersion: expected pyvolcano.io/v1alpha1")
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        raise ManifestError(f"{where} (ClusterEvent): spec: expected {{at, action, node}}")
    action = spec.get("action")
    if action not in ("NodeDown", "NodeUp"):
        raise ManifestError(f"{where} (ClusterEvent): spec.action: got {action!r}; expected NodeDown or NodeUp")
    node = spec.get("node")
    if not isinstance(node, str) or not node:
        raise ManifestError(f"{where} (ClusterEvent): spec.node: expected a node name")
    try:
        at = parse_duration_strict(str(spec.get("at", "0s")))
    except DurationError as e:
        raise ManifestError(f"{where} (ClusterEvent): spec.at: {e}") from None
    return ClusterEvent(at, action, node, i, source)


def without_duration(subs: list[Submission]) -> list[str]:
    """Keys of the Jobs, CronJobs and JobTemplates with a task template, and of the plain Pods,
    that have no ``pyvolcano.io/duration`` annotation: their pods run until the simulation ends."""
    out: list[str] = []
    for sub in subs:
        if sub.kind in ("Job", "CronJob", "JobTemplate"):
            spec = sub.obj.get("spec") or {}
            if sub.kind == "CronJob":
                spec = (spec.get("jobTemplate") or {}).get("spec") or {} if isinstance(spec, dict) else {}
            tasks = spec.get("tasks") if isinstance(spec, dict) else None
            if isinstance(tasks, list) and any(_lacks_duration((t or {}).get("template") if isinstance(t, dict)
                                                               else None) for t in tasks):
                out.append(sub.key)
        elif sub.kind == "Pod" and _lacks_duration(sub.obj):
            out.append(sub.key)
    return out


def _lacks_duration(obj: object) -> bool:
    md = obj.get("metadata") if isinstance(obj, dict) else None
    ann = md.get("annotations") if isinstance(md, dict) else None
    return not (isinstance(ann, dict) and DURATION in ann)


def endless_cronjobs(subs: list[Submission]) -> list[Submission]:
    """The CronJobs that are not suspended: they create jobs for as long as the run lasts."""
    return [s for s in subs if s.kind == "CronJob" and ((s.obj.get("spec") or {}).get("suspend") is not True)]
