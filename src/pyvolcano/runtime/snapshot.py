"""Snapshots: a cluster's scheduler inputs as the multi-document YAML ``pyvolcano schedule`` reads.

A snapshot holds, in this order, the scheduler configuration (upstream's
``volcano-system/volcano-scheduler-configmap`` ConfigMap with its ``volcano-scheduler.conf``
key), PriorityClasses, Queues, Nodes, Numatopologies, HyperNodes, the storage objects
(StorageClasses, CSIDrivers, CSINodes, PersistentVolumes, PersistentVolumeClaims,
CSIStorageCapacities), DeviceClasses, ResourceSlices, PodDisruptionBudgets, ResourceQuotas,
PodGroups, ResourceClaims, Pods, Volcano Jobs, JobTemplates, JobFlows and CronJobs; each kind
sorted by namespace and name, so the same cluster state gives the same bytes. Jobs and the
workflow kinds are not scheduler inputs (their pods and PodGroups are); they are kept for
``vcctl --cluster``, the forecasts (which create the jobs a flow or a CronJob has still to make)
and the dashboard, and ``schedule`` skips them.

Reading (:func:`load_snapshot_and_config`) takes files, directories and ``-``
(:mod:`pyvolcano.api.inputs`) and merges their objects in order; an object defined twice, in
one file or two, is an error, and so is any kind besides the scheduler's inputs, the
scheduler ConfigMap (at most one, its configuration loaded with
:func:`pyvolcano.conf.load_configuration`), Volcano Jobs, CronJobs, JobTemplates, JobFlows and
Commands.

Invariants: every object keeps what the manifest parser reads (spec, status, labels,
annotations, uid, creationTimestamp, deletionTimestamp, ownerReferences); server bookkeeping
that no reader needs is dropped (``managedFields``, ``resourceVersion``, ``generation``,
``selfLink`` and kubectl's last-applied annotation), so a snapshot diffs cleanly against the
next one.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import yaml

from pyvolcano.api.inputs import read_inputs
from pyvolcano.api.manifest import ClusterObjects, ManifestError, load_manifest_text
from pyvolcano.api.names import BUS_API_VERSION, FLOW_API_VERSION, JOB_API_VERSION
from pyvolcano.runtime.configuration import load_configuration
from pyvolcano.store.base import Store, StoreError, clone

if TYPE_CHECKING:
    from pyvolcano.conf.schema import SchedulerConfiguration
    from pyvolcano.runtime.registry import Registry

__all__ = ["CONFIG_KEY", "CONFIG_MAP", "CONFIG_NAMESPACE", "SNAPSHOT_KINDS", "clean",
           "config_document", "dump_documents", "dump_json_documents", "load_snapshot", "load_snapshot_and_config",
           "read_config_text", "snapshot_documents"]

CONFIG_NAMESPACE: Final = "volcano-system"
CONFIG_MAP: Final = "volcano-scheduler-configmap"
CONFIG_KEY: Final = "volcano-scheduler.conf"

SNAPSHOT_KINDS: Final = ("PriorityClass", "Queue", "Node", "Numatopology", "HyperNode", "StorageClass", "CSIDriver",
                         "CSINode", "PersistentVolume", "PersistentVolumeClaim", "CSIStorageCapacity", "DeviceClass",
                         "ResourceSlice", "PodDisruptionBudget", "ResourceQuota", "PodGroup", "ResourceClaim", "Pod",
                         "Job", "JobTemplate", "JobFlow", "CronJob")
"""The kinds a snapshot lists, in its document order: every kind of
:data:`pyvolcano.api.names.SCHEDULER_KINDS`, the cluster-scoped ones first, then Volcano Jobs and
the workflow kinds."""

# Kinds a snapshot may hold besides the scheduler's inputs: skipped by the reader (vcctl reads
# Jobs and Commands, the dashboard's job page Events).
_SKIPPED_KINDS = {(JOB_API_VERSION, "Job"), (BUS_API_VERSION, "Command"), ("v1", "Event"),
                  ("events.k8s.io/v1", "Event"), (JOB_API_VERSION, "CronJob"), (FLOW_API_VERSION, "JobTemplate"),
                  (FLOW_API_VERSION, "JobFlow")}
_SCHEDULER_KINDS_TEXT = ("v1 Pod, v1 Node, scheduling.volcano.sh/v1beta1 PodGroup, "
                         "scheduling.volcano.sh/v1beta1 Queue, scheduling.k8s.io/v1 PriorityClass, "
                         "topology.volcano.sh/v1alpha1 HyperNode, nodeinfo.volcano.sh/v1alpha1 Numatopology, "
                         "storage.k8s.io/v1 StorageClass, v1 PersistentVolume, "
                         "v1 PersistentVolumeClaim, storage.k8s.io/v1 CSINode, storage.k8s.io/v1 CSIDriver, "
                         "storage.k8s.io/v1 CSIStorageCapacity, resource.k8s.io/v1 DeviceClass, ResourceSlice, "
                         "ResourceClaim, ResourceClaimTemplate, policy/v1 PodDisruptionBudget, v1 ResourceQuota")

# Every typed object list of ClusterObjects (all but the untyped documents and the index).
_OBJECT_LISTS: Final = tuple(f.name for f in dataclasses.fields(ClusterObjects) if f.name not in ("other", "documents"))

_NOISE: Final = ("managedFields", "resourceVersion", "generation", "selfLink")
_LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"


def clean(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``obj`` without server bookkeeping (see the module docstring)."""
    out: dict[str, Any] = clone(obj)
    md = out.get("metadata")
    if isinstance(md, dict):
        for key in _NOISE:
            md.pop(key, None)
        annotations = md.get("annotations")
        if isinstance(annotations, dict):
            annotations.pop(_LAST_APPLIED, None)
            if not annotations:
                del md["annotations"]
    return out


def read_config_text(store: Store) -> str | StoreError | None:
    """The ``volcano-scheduler.conf`` text of the cluster's scheduler ConfigMap in ``store``; the
    StoreError when the ConfigMap cannot be read; None when it has no such key."""
    try:
        cm = store.get("ConfigMap", CONFIG_NAMESPACE, CONFIG_MAP)
    except StoreError as e:
        return e
    text = (cm.get("data") or {}).get(CONFIG_KEY)
    return text if isinstance(text, str) else None


def config_document(text: str) -> dict[str, Any]:
    """The scheduler configuration as upstream deploys it: a ConfigMap in volcano-system."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": CONFIG_MAP, "namespace": CONFIG_NAMESPACE}, "data": {CONFIG_KEY: text}}


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    md = obj.get("metadata") or {}
    return (str(md.get("namespace") or ""), str(md.get("name") or ""))


def snapshot_documents(read: Callable[[str], Iterable[Mapping[str, Any]]], config_text: str | None,
                       kinds: Sequence[str] = SNAPSHOT_KINDS) -> list[dict[str, Any]]:
    """The snapshot of what ``read(kind)`` lists, in the module's order, with ``config_text`` first."""
    docs: list[dict[str, Any]] = []
    if config_text is not None:
        docs.append(config_document(config_text))
    for kind in SNAPSHOT_KINDS:
        if kind in kinds:
            docs.extend(clean(o) for o in sorted(read(kind), key=_key))
    return docs


def dump_json_documents(docs: Iterable[Mapping[str, Any]]) -> str:
    """The same documents as one JSON line each after ``---``: YAML that any reader takes, written
    twenty times faster than block YAML (what the recorder writes every session)."""
    return "".join(f"---\n{json.dumps(d, separators=(',', ':'))}\n" for d in docs)


def dump_documents(docs: Iterable[Mapping[str, Any]]) -> str:
    """Multi-document YAML, keys in the objects' own order (the C emitter when there is one)."""
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump_all(list(docs), Dumper=dumper, sort_keys=False, allow_unicode=True, default_flow_style=False)


def load_snapshot(sources: Sequence[str | Path]) -> ClusterObjects:
    """The objects of every source, merged in order; raises :class:`ManifestError`."""
    return _load(sources)[0]


def load_snapshot_and_config(sources: Sequence[str | Path], registry: Registry
                             ) -> tuple[ClusterObjects, SchedulerConfiguration | None]:
    """The objects of every source and the configuration their scheduler ConfigMap carries (or None)."""
    objs, embedded = _load(sources)
    if embedded is None:
        return objs, None
    where, doc = embedded
    text = (doc.get("data") or {}).get(CONFIG_KEY)
    if not isinstance(text, str):
        raise ManifestError(f"{where}: data.{CONFIG_KEY}: expected the configuration text")
    return objs, load_configuration(registry, text=text, source=f"{where}: data.{CONFIG_KEY}")


def _is_config_map(doc: dict[str, Any]) -> bool:
    md = doc.get("metadata") or {}
    return (doc.get("apiVersion"), doc.get("kind")) == ("v1", "ConfigMap") and md.get("name") == CONFIG_MAP \
        and (md.get("namespace") or "default") == CONFIG_NAMESPACE


def _load(sources: Sequence[str | Path]) -> tuple[ClusterObjects, tuple[str, dict[str, Any]] | None]:
    merged = ClusterObjects()
    embedded: tuple[str, dict[str, Any]] | None = None
    first: dict[tuple[str, str], str] = {}
    for source, text in read_inputs(sources):
        if isinstance(text, ManifestError):
            raise text
        objs = load_manifest_text(text, source, allow_other=True)
        for i, doc in objs.other:
            where = f"{source}: document {i}"
            if _is_config_map(doc):
                if embedded is not None:
                    raise ManifestError(f"{where}: a second ConfigMap {CONFIG_NAMESPACE}/{CONFIG_MAP} (the first is "
                                        f"{embedded[0]})")
                embedded = (f"{where} (ConfigMap {CONFIG_NAMESPACE}/{CONFIG_MAP})", doc)
            elif (doc.get("apiVersion"), doc.get("kind")) not in _SKIPPED_KINDS:
                raise ManifestError(f"{where}: apiVersion/kind {doc.get('apiVersion')}/{doc.get('kind')} is not "
                                    f"supported; expected one of {_SCHEDULER_KINDS_TEXT}, the {CONFIG_NAMESPACE}/"
                                    f"{CONFIG_MAP} ConfigMap, batch.volcano.sh/v1alpha1 Job or CronJob, "
                                    "flow.volcano.sh/v1alpha1 JobTemplate or JobFlow")
            merged.other.append((i, doc))
        for attr in _OBJECT_LISTS:
            for obj in getattr(objs, attr):
                key = (type(obj).__name__, f"{getattr(obj, 'namespace', '') or ''}/{obj.name}".lstrip("/"))
                if key in first:
                    raise ManifestError(f"{source}: duplicate {key[0]} {key[1]} (first defined in {first[key]})")
                first[key] = source
                getattr(merged, attr).append(obj)
    return merged, embedded
