"""The PodGroup controller for plain pods (``pkg/controllers/podgroup``).

For every new pod whose ``schedulerName`` is one of ours and that has no
``scheduling.k8s.io/group-name`` annotation, it creates (if missing) the PodGroup
``podgroup-<controller owner uid, else pod uid>`` and annotates the pod with its name, so the
pod is scheduled as a gang of ``minMember`` (by default a gang of one).

The PodGroup gets: the pod's owner references (or a controller reference to the pod when it
has no controller); ``minMember`` from the owner's ``scheduling.volcano.sh/group-min-member``
annotation (default 1; owners are the ReplicaSet, DaemonSet, StatefulSet or batch Job the
pod references, looked up in the store); ``minResources`` = the pod's quota usage ×
``minMember``; the pod's priority class; the queue from the pod annotation
``scheduling.volcano.sh/queue-name`` (left empty otherwise, for the admission layer to
default); the owners' ``volcano.sh/*`` annotations; the pod's preemptable / cooldown /
revocable-zone / JDB annotations and preemptable / cooldown labels; the network topology
from the pod's own ``volcano.sh/network-topology-mode`` and
``volcano.sh/network-topology-highest-tier`` annotations (an invalid value is logged and left
out, the rest kept, as upstream's ``parseNetworkTopologyFromPod``); and ``status.phase: Pending``.

Failures are retried with exponential back-off (5 ms doubling, at most 1000 s) without a
limit, like upstream. Upstream's ReplicaSet / StatefulSet handlers (refreshing the PodGroup
spec when a workload scales) are not implemented: the store has no workload controllers.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyvolcano.api.names import (
    COOLDOWN_KEY,
    GROUP_MIN_MEMBER_KEY,
    GROUP_NAME_KEY,
    JDB_MAX_UNAVAILABLE_KEY,
    JDB_MIN_AVAILABLE_KEY,
    NETWORK_TOPOLOGY_MODE_KEY,
    NETWORK_TOPOLOGY_TIER_KEY,
    PREEMPTABLE_KEY,
    QUEUE_NAME_ANNOTATION,
    REVOCABLE_ZONE_KEY,
)
from pyvolcano.controllers._common import WorkQueue, annotations_of, controller_of, labels_of, meta, spec, uid_of
from pyvolcano.controllers._resources import format_list, pod_quota_usage, scale_list
from pyvolcano.store.base import AlreadyExists, NotFound, Store, StoreError, Unavailable, WatchEvent
from pyvolcano.util.numbers import parse_int

__all__ = ["PodGroupController", "pod_group_name_for"]

logger = logging.getLogger(__name__)

ANNOTATION_PREFIX = "volcano.sh/"
PODGROUP_PREFIX = "podgroup-"

# Owner kinds whose annotations are inherited, with the API group each must come from.
_OWNER_KINDS = {"ReplicaSet": "apps/", "DaemonSet": "apps/", "StatefulSet": "apps/", "Job": "batch/"}


def pod_group_name_for(pod: dict[str, Any]) -> str:
    """``helpers.GeneratePodgroupName``."""
    for ref in meta(pod).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return PODGROUP_PREFIX + str(ref.get("uid", ""))
    return PODGROUP_PREFIX + uid_of(pod)


@dataclass(frozen=True, slots=True)
class _PodKey:
    namespace: str
    name: str


class PodGroupController:
    """Gives plain pods a PodGroup (see the module docstring).

    Args:
        store: the object store.
        scheduler_names: pods with one of these ``schedulerName`` s are handled.
        inherit_owner_annotations: ``--inherit-owner-annotations`` (default true).
    """

    name = "pg-controller"

    def __init__(
        self,
        *,
        store: Store,
        scheduler_names: Sequence[str] = ("volcano",),
        inherit_owner_annotations: bool = True,
    ):
        self.store = store
        self.scheduler_names = tuple(scheduler_names)
        self.inherit_owner_annotations = inherit_owner_annotations
        self.queue: WorkQueue[_PodKey] = WorkQueue(dedup=True, max_delay=1000.0)
        self.now = 0.0

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind == "Pod" and ev.type == "ADDED":
            md = meta(ev.object)
            self.queue.add(_PodKey(str(md.get("namespace") or ""), str(md.get("name") or "")))

    def run(self, now: float) -> float | None:
        self.now = now
        for key in self.queue.drain(now):
            self._process(key)
        return self.queue.next_wakeup()

    def _process(self, key: _PodKey) -> None:
        try:
            pod = self.store.get("Pod", key.namespace, key.name)
        except NotFound:
            return
        if spec(pod).get("schedulerName") not in self.scheduler_names:
            return
        if annotations_of(pod).get(GROUP_NAME_KEY):
            return
        try:
            self._create_pod_group_if_not_exist(pod)
        except StoreError as e:
            logger.error("failed to handle pod %s/%s: %s", key.namespace, key.name, e)
            if isinstance(e, Unavailable):
                self.queue.add_unavailable(key, self.now)
            else:
                self.queue.add_rate_limited(key, self.now)
            return
        self.queue.forget(key)

    # ------------------------------------------------------------------ PodGroup
    def _create_pod_group_if_not_exist(self, pod: dict[str, Any]) -> None:
        ns = str(meta(pod).get("namespace") or "")
        pg_name = pod_group_name_for(pod)
        try:
            self.store.get("PodGroup", ns, pg_name)
        except NotFound:
            with contextlib.suppress(AlreadyExists):
                self.store.create(self.build_pod_group(pod, pg_name))
        if not annotations_of(pod).get(GROUP_NAME_KEY):
            patch = {"metadata": {"annotations": {GROUP_NAME_KEY: pg_name}}}
            self.store.patch("Pod", ns, str(meta(pod).get("name")), patch)

    def _owner_annotations(self, pod: dict[str, Any]) -> dict[str, str]:
        """``getAnnotationsFromUpperRes``: the first value of each key across the pod's owners."""
        out: dict[str, str] = {}
        ns = str(meta(pod).get("namespace") or "")
        for ref in meta(pod).get("ownerReferences") or []:
            if not isinstance(ref, dict) or not ref.get("kind") or not ref.get("name"):
                continue
            group = _OWNER_KINDS.get(str(ref["kind"]))
            if group is None or not str(ref.get("apiVersion", "")).startswith(group):
                continue
            try:
                owner = self.store.get(str(ref["kind"]), ns, str(ref["name"]))
            except StoreError:
                continue
            if not str(owner.get("apiVersion", "")).startswith(group):
                continue  # e.g. a Volcano Job where a batch/v1 Job was meant
            for k, v in annotations_of(owner).items():
                out.setdefault(k, v)
        return out

    @staticmethod
    def _min_member(owner_annotations: dict[str, str]) -> int:
        raw = owner_annotations.get(GROUP_MIN_MEMBER_KEY)
        if raw is None:
            return 1
        try:
            value = parse_int(raw)
        except ValueError:
            return 1
        return value if value >= 0 else 1

    def build_pod_group(self, pod: dict[str, Any], pg_name: str) -> dict[str, Any]:
        """``buildPodGroupFromPod``."""
        min_member = 1
        owner_ann: dict[str, str] = {}
        if self.inherit_owner_annotations:
            owner_ann = self._owner_annotations(pod)
            min_member = self._min_member(owner_ann)
        pg_ann: dict[str, str] = {}
        pg_labels: dict[str, str] = {}
        if self.inherit_owner_annotations:
            pg_ann.update({k: v for k, v in owner_ann.items() if k.startswith(ANNOTATION_PREFIX)})
        pod_ann, pod_labels = annotations_of(pod), labels_of(pod)
        pg_spec: dict[str, Any] = {
            "minMember": min_member,
            "minResources": format_list(scale_list(pod_quota_usage(pod), min_member)),
        }
        if spec(pod).get("priorityClassName"):
            pg_spec["priorityClassName"] = spec(pod)["priorityClassName"]
        if QUEUE_NAME_ANNOTATION in pod_ann:
            pg_spec["queue"] = pod_ann[QUEUE_NAME_ANNOTATION]
        for key in (PREEMPTABLE_KEY, COOLDOWN_KEY, REVOCABLE_ZONE_KEY):
            if key in pod_ann:
                pg_ann[key] = pod_ann[key]
        for key in (PREEMPTABLE_KEY, COOLDOWN_KEY):
            if key in pod_labels:
                pg_labels[key] = pod_labels[key]
        if JDB_MIN_AVAILABLE_KEY in pod_ann:
            pg_ann[JDB_MIN_AVAILABLE_KEY] = pod_ann[JDB_MIN_AVAILABLE_KEY]
        elif JDB_MAX_UNAVAILABLE_KEY in pod_ann:
            pg_ann[JDB_MAX_UNAVAILABLE_KEY] = pod_ann[JDB_MAX_UNAVAILABLE_KEY]
        topology = _network_topology(pod, pod_ann)
        if topology is not None:
            pg_spec["networkTopology"] = topology
        md: dict[str, Any] = {
            "namespace": str(meta(pod).get("namespace") or ""),
            "name": pg_name,
            "ownerReferences": _owner_references(pod),
        }
        if pg_ann:
            md["annotations"] = pg_ann
        if pg_labels:
            md["labels"] = pg_labels
        return {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": md,
            "spec": pg_spec,
            "status": {"phase": "Pending"},
        }


def _owner_references(pod: dict[str, Any]) -> list[dict[str, Any]]:
    """``newPGOwnerReferences``: the pod's references if one is a controller, else the pod itself."""
    refs = [dict(r) for r in meta(pod).get("ownerReferences") or [] if isinstance(r, dict)]
    if controller_of(pod) is not None:
        return refs
    return [{
        "apiVersion": "v1",
        "kind": "Pod",
        "name": str(meta(pod).get("name") or ""),
        "uid": uid_of(pod),
        "controller": True,
        "blockOwnerDeletion": True,
    }]


def _network_topology(pod: dict[str, Any], ann: dict[str, str]) -> dict[str, Any] | None:
    """``parseNetworkTopologyFromPod``: none without either annotation; hard mode unless the mode
    is ``hard`` or ``soft`` (any case); the highest tier when it is an integer (``strconv.Atoi``).
    An invalid value is logged and left out, as upstream does; the PodGroup is still created."""
    if NETWORK_TOPOLOGY_MODE_KEY not in ann and NETWORK_TOPOLOGY_TIER_KEY not in ann:
        return None
    nt: dict[str, Any] = {"mode": "hard"}
    where = f"{meta(pod).get('namespace') or ''}/{meta(pod).get('name') or ''}"
    mode = ann.get(NETWORK_TOPOLOGY_MODE_KEY)
    if mode is not None:
        if mode.lower() in ("hard", "soft"):
            nt["mode"] = mode.lower()
        else:
            logger.warning("Invalid network topology mode %r in pod %s, using default 'hard' mode", mode, where)
    tier = ann.get(NETWORK_TOPOLOGY_TIER_KEY)
    if tier is not None:
        try:
            value = parse_int(tier)
            if not -(2**63) <= value < 2**63:  # Atoi's range error
                raise ValueError(f"value out of range {tier!r}")
        except ValueError as e:
            logger.warning("Invalid network topology highest tier %s in pod %s: %s", tier, where, e)
        else:
            nt["highestTierAllowed"] = value
    return nt
