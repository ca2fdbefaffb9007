"""Snapshots: a cluster's scheduler inputs as the multi-document YAML ``pyvolcano schedule`` reads.

A snapshot holds, in this order, the scheduler configuration (upstream's
``volcano-system/volcano-scheduler-configmap`` ConfigMap with its ``volcano-scheduler.conf``
key), PriorityClasses, Queues, Nodes, PodGroups, Pods and Volcano Jobs; each kind sorted by
namespace and name, so the same cluster state gives the same bytes. Jobs are not scheduler
inputs (their pods and PodGroups are); they are kept for ``vcctl job list|view --cluster``,
and ``schedule`` skips them.

Invariants: every object keeps what the manifest parser reads (spec, status, labels,
annotations, uid, creationTimestamp, deletionTimestamp, ownerReferences); server bookkeeping
that no reader needs is dropped (``managedFields``, ``resourceVersion``, ``generation``,
``selfLink`` and kubectl's last-applied annotation), so a snapshot diffs cleanly against the
next one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

import yaml

from pyvolcano.store.base import StoreError, clone

__all__ = ["CONFIG_KEY", "CONFIG_MAP", "CONFIG_NAMESPACE", "SCHEDULER_INPUT_KINDS", "SNAPSHOT_KINDS", "clean",
           "config_document", "dump_documents", "dump_json_documents", "read_config_text", "snapshot_documents"]

CONFIG_NAMESPACE: Final = "volcano-system"
CONFIG_MAP: Final = "volcano-scheduler-configmap"
CONFIG_KEY: Final = "volcano-scheduler.conf"

SCHEDULER_INPUT_KINDS: Final = ("PriorityClass", "Queue", "Node", "PodGroup", "Pod")
"""What the scheduler's cache reads, in the order a snapshot lists them."""
SNAPSHOT_KINDS: Final = (*SCHEDULER_INPUT_KINDS, "Job")

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


def read_config_text(store: Any) -> str | StoreError | None:
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
