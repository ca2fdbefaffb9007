"""Which object kinds pyvolcano knows, decided by ``apiVersion`` *and* ``kind``.

The API server serves a kind only in its API group and version, and kind names are
case-sensitive: ``kind: job`` or ``kind: Jobb`` under ``batch.volcano.sh/v1alpha1`` is not a
Volcano Job but an error (``no matches for kind``), and a ``batch/v1`` Job is a Kubernetes Job,
not a Volcano Job. :func:`resolve` gives one of three answers for an object's type:

* ``CHECKED`` — a kind pyvolcano models and validates (:data:`CHECKED_KINDS`);
* ``NOT_CHECKED`` — a real kind pyvolcano does not model (a ConfigMap, a Deployment, a
  ``batch/v1`` CronJob, an Argo Workflow, anything of an API group it does not know);
* ``UNKNOWN`` — a kind or version that does not exist in an API group whose kinds pyvolcano
  knows completely (:data:`KNOWN_GROUPS`: the core group, ``scheduling.k8s.io``, ``policy``,
  ``storage.k8s.io``, ``node.k8s.io``, ``resource.k8s.io`` and every Volcano group), with a "did you mean" when a
  known name is close.

Older versions of a known group that an API server may still serve (``resource.k8s.io/v1beta2``)
are ``NOT_CHECKED`` with the version to use.
"""

from __future__ import annotations

import difflib
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

__all__ = ["CHECKED_KINDS", "KNOWN_GROUPS", "KindStatus", "Resolution", "resolve", "split_api_version"]


class KindStatus(enum.Enum):
    CHECKED = "checked"
    NOT_CHECKED = "not checked"
    UNKNOWN = "unknown"


CHECKED_KINDS: Final[frozenset[tuple[str, str]]] = frozenset({
    ("v1", "Pod"),
    ("v1", "Node"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("batch.volcano.sh/v1alpha1", "Job"),
    ("batch.volcano.sh/v1alpha1", "CronJob"),
    ("flow.volcano.sh/v1alpha1", "JobFlow"),
    ("flow.volcano.sh/v1alpha1", "JobTemplate"),
    ("scheduling.volcano.sh/v1beta1", "PodGroup"),
    ("scheduling.volcano.sh/v1beta1", "Queue"),
    ("bus.volcano.sh/v1alpha1", "Command"),
    ("topology.volcano.sh/v1alpha1", "HyperNode"),
    ("nodeinfo.volcano.sh/v1alpha1", "Numatopology"),
    ("v1", "ResourceQuota"),
    ("policy/v1", "PodDisruptionBudget"),
    ("storage.k8s.io/v1", "StorageClass"),
    ("v1", "PersistentVolume"),
    ("v1", "PersistentVolumeClaim"),
    ("storage.k8s.io/v1", "CSINode"),
    ("storage.k8s.io/v1", "CSIDriver"),
    ("storage.k8s.io/v1", "CSIStorageCapacity"),
    ("node.k8s.io/v1", "RuntimeClass"),
    ("resource.k8s.io/v1", "DeviceClass"),
    ("resource.k8s.io/v1", "ResourceSlice"),
    ("resource.k8s.io/v1", "ResourceClaim"),
    ("resource.k8s.io/v1", "ResourceClaimTemplate"),
})
"""``(apiVersion, kind)`` of the kinds pyvolcano validates (fields, defaults, admission)."""

KNOWN_GROUPS: Final[Mapping[str, Mapping[str, frozenset[str]]]] = {
    "": {"v1": frozenset({
        "Binding", "ComponentStatus", "ConfigMap", "Endpoints", "Event", "LimitRange", "Namespace", "Node",
        "PersistentVolume", "PersistentVolumeClaim", "Pod", "PodTemplate", "ReplicationController",
        "ResourceQuota", "Secret", "Service", "ServiceAccount",
    })},
    "scheduling.k8s.io": {"v1": frozenset({"PriorityClass"})},
    "policy": {"v1": frozenset({"PodDisruptionBudget", "Eviction"})},
    "storage.k8s.io": {"v1": frozenset({"StorageClass", "CSINode", "CSIDriver", "CSIStorageCapacity",
                                        "VolumeAttachment", "VolumeAttributesClass"})},
    "node.k8s.io": {"v1": frozenset({"RuntimeClass"})},
    "resource.k8s.io": {"v1": frozenset({"DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate"})},
    "batch.volcano.sh": {"v1alpha1": frozenset({"Job", "CronJob"})},
    "scheduling.volcano.sh": {"v1beta1": frozenset({"PodGroup", "Queue"})},
    "bus.volcano.sh": {"v1alpha1": frozenset({"Command"})},
    "flow.volcano.sh": {"v1alpha1": frozenset({"JobFlow", "JobTemplate"})},
    "nodeinfo.volcano.sh": {"v1alpha1": frozenset({"Numatopology"})},
    "topology.volcano.sh": {"v1alpha1": frozenset({"HyperNode"})},
    "config.volcano.sh": {"v1alpha1": frozenset({"ColocationConfiguration"})},
    "shard.volcano.sh": {"v1alpha1": frozenset({"NodeShard"})},
}
"""API groups whose served versions and kinds are known completely (Kubernetes' core and
scheduling groups; Volcano's CRDs)."""

_RESOURCE_BETA: Final = ("pyvolcano checks dynamic resource allocation's objects in resource.k8s.io/v1, the version "
                          "Kubernetes serves by default since 1.34")
_REMOVED_VERSIONS: Final[Mapping[str, str]] = {
    "resource.k8s.io/v1beta1": _RESOURCE_BETA,
    "resource.k8s.io/v1beta2": _RESOURCE_BETA,
    "resource.k8s.io/v1alpha3": _RESOURCE_BETA,
    "scheduling.k8s.io/v1beta1": "scheduling.k8s.io/v1beta1 is no longer served (removed in Kubernetes 1.22); "
                                 "use scheduling.k8s.io/v1",
    "scheduling.k8s.io/v1alpha1": "scheduling.k8s.io/v1alpha1 is no longer served (removed in Kubernetes 1.22); "
                                  "use scheduling.k8s.io/v1",
}


@dataclass(frozen=True, slots=True)
class Resolution:
    status: KindStatus
    message: str = ""  # why it is not checked, or what is wrong (with a "did you mean")


def split_api_version(api_version: str) -> tuple[str, str] | None:
    """``(group, version)``; the core group is ``""``. None if the text is not ``[group/]version``."""
    parts = api_version.split("/")
    if len(parts) == 1 and parts[0]:
        return "", parts[0]
    if len(parts) == 2 and all(parts):
        return parts[0], parts[1]
    return None


def _did_you_mean(word: str, choices: list[str]) -> str:
    lowered = {c.lower(): c for c in choices}
    if word.lower() in lowered:
        return f'; did you mean "{lowered[word.lower()]}"? (kinds are case-sensitive)'
    close = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return f'; did you mean "{lowered[close[0]]}"?' if close else ""


def resolve(api_version: str, kind: str) -> Resolution:
    """What pyvolcano makes of an object of ``apiVersion`` / ``kind`` (both non-empty strings)."""
    gv = split_api_version(api_version)
    if gv is None:
        return Resolution(KindStatus.UNKNOWN, f'apiVersion {api_version!r} is not of the form "group/version" '
                                              'or "v1"')
    group, version = gv
    versions = KNOWN_GROUPS.get(group)
    if versions is None:
        return Resolution(KindStatus.NOT_CHECKED, f"pyvolcano does not model the kinds of API group {group!r}")
    kinds = versions.get(version)
    if kinds is None:
        if api_version in _REMOVED_VERSIONS:
            return Resolution(KindStatus.NOT_CHECKED, _REMOVED_VERSIONS[api_version])
        served = [f"{group}/{v}" if group else v for v in sorted(versions) if kind in versions[v]]
        hint = f'; did you mean "{served[0]}"?' if served else ""
        return Resolution(KindStatus.UNKNOWN, f'no matches for kind "{kind}" in version "{api_version}"{hint}')
    if kind not in kinds:
        return Resolution(KindStatus.UNKNOWN, f'no matches for kind "{kind}" in version "{api_version}"'
                                              + _did_you_mean(kind, sorted(kinds)))
    if (api_version, kind) in CHECKED_KINDS:
        return Resolution(KindStatus.CHECKED)
    return Resolution(KindStatus.NOT_CHECKED, f"pyvolcano does not model {api_version} {kind}")
