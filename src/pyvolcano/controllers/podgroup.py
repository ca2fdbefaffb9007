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

Workloads (upstream ``addReplicaSet`` / ``addStatefulSet``, on add and on every update of an
``apps/v1`` ReplicaSet or StatefulSet): with ``spec.replicas`` 0 the workload's PodGroup
(``podgroup-<workload uid>``) is deleted; otherwise the first of its pods (a ReplicaSet's:
``spec.selector.matchLabels`` in its namespace, in name order; a StatefulSet's: those labels
and ``controller-revision-hash`` = ``status.updateRevision``, in every namespace, as upstream's
pod lister is asked) that is ours and has no PodGroup yet gets one, or, when the PodGroup
exists, its spec, labels and annotations are brought in line with what the pod would build
now (e.g. a changed ``scheduling.volcano.sh/group-min-member`` on the workload), and the pod is
annotated with it. ``inherit_owner_annotations`` (``--inherit-owner-annotations``, default
true) is what lets the owner's ``scheduling.volcano.sh/group-min-member`` and ``volcano.sh/*``
annotations reach the PodGroup; without it every PodGroup is a gang of one.

Failures are retried with exponential back-off (5 ms doubling, at most 1000 s) without a
limit, like upstream.
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
from pyvolcano.store.base import AlreadyExists, NotFound, Store, StoreError, Unavailable, WatchEvent, clone
from pyvolcano.util.numbers import parse_int

__all__ = ["WORKLOAD_KINDS", "PodGroupController", "pod_group_name_for"]

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


@dataclass(frozen=True, slots=True)
class _WorkloadKey:
    kind: str  # ReplicaSet or StatefulSet
    namespace: str
    name: str


WORKLOAD_KINDS = ("ReplicaSet", "StatefulSet")
REVISION_HASH_LABEL = "controller-revision-hash"


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
        self.workloads: WorkQueue[_WorkloadKey] = WorkQueue(dedup=True, max_delay=1000.0)
        self.now = 0.0

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind == "Pod" and ev.type == "ADDED":
            md = meta(ev.object)
            self.queue.add(_PodKey(str(md.get("namespace") or ""), str(md.get("name") or "")))
        elif ev.kind in WORKLOAD_KINDS and ev.type in ("ADDED", "MODIFIED") and \
                str(ev.object.get("apiVersion", "")).startswith("apps/"):
            md = meta(ev.object)
            self.workloads.add(_WorkloadKey(ev.kind, str(md.get("namespace") or ""), str(md.get("name") or "")))

    def run(self, now: float) -> float | None:
        self.now = now
        # Upstream handles a workload in its informer's event handler and a pod on a worker,
        # so a workload event is acted on before the pods queued with it.
        for wkey in self.workloads.drain(now):
            self._process_workload(wkey)
        for key in self.queue.drain(now):
            self._process(key)
        wakes = [w for w in (self.queue.next_wakeup(), self.workloads.next_wakeup()) if w is not None]
        return min(wakes, default=None)

    # ------------------------------------------------------------------ ReplicaSets and StatefulSets
    def _process_workload(self, key: _WorkloadKey) -> None:
        try:
            workload = self.store.get(key.kind, key.namespace, key.name)
            if not str(workload.get("apiVersion", "")).startswith("apps/"):
                return
            self._sync_workload(key.kind, workload)
        except NotFound:
            return
        except StoreError as e:
            logger.error("failed to handle %s %s/%s: %s", key.kind, key.namespace, key.name, e)
            if isinstance(e, Unavailable):
                self.workloads.add_unavailable(key, self.now)
            else:
                self.workloads.add_rate_limited(key, self.now)
            return
        self.workloads.forget(key)

    def _sync_workload(self, kind: str, workload: dict[str, Any]) -> None:
        """Upstream ``addReplicaSet`` / ``addStatefulSet`` (see the module docstring)."""
        ns = str(meta(workload).get("namespace") or "")
        replicas = spec(workload).get("replicas")
        replicas = 1 if replicas is None else replicas  # the API server's default
        if not isinstance(replicas, int) or isinstance(replicas, bool):
            return
        if replicas == 0:
            with contextlib.suppress(NotFound):
                self.store.delete("PodGroup", ns, PODGROUP_PREFIX + uid_of(workload))
            return
        selector = (spec(workload).get("selector") or {}).get("matchLabels") or {}
        labels = {str(k): str(v) for k, v in selector.items()} if isinstance(selector, dict) else {}
        if kind == "StatefulSet":
            labels[REVISION_HASH_LABEL] = str((workload.get("status") or {}).get("updateRevision") or "")
            pods = self.store.list("Pod", None, label_selector=labels)
            pods.sort(key=lambda p: (str(meta(p).get("namespace") or ""), str(meta(p).get("name") or "")))
        else:
            pods = sorted(self.store.list("Pod", ns, label_selector=labels), key=lambda p: str(meta(p).get("name")))
        if not pods:
            return
        pod = pods[0]
        if spec(pod).get("schedulerName") not in self.scheduler_names or annotations_of(pod).get(GROUP_NAME_KEY):
            return
        self._create_or_update_pod_group(pod)

    def _create_or_update_pod_group(self, pod: dict[str, Any]) -> None:
        """Upstream ``createOrUpdateNormalPodPG``."""
        ns = str(meta(pod).get("namespace") or "")
        pg_name = pod_group_name_for(pod)
        try:
            current = self.store.get("PodGroup", ns, pg_name)
        except NotFound:
            with contextlib.suppress(AlreadyExists):
                self.store.create(self.build_pod_group(pod, pg_name))
        else:
            wanted = self.build_pod_group(pod, pg_name)
            updated = _with_fields_of(current, wanted)
            if updated is not None:
                self.store.update(updated)
        if not annotations_of(pod).get(GROUP_NAME_KEY):
            patch = {"metadata": {"annotations": {GROUP_NAME_KEY: pg_name}}}
            self.store.patch("Pod", ns, str(meta(pod).get("name")), patch)

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


def _with_fields_of(current: dict[str, Any], wanted: dict[str, Any]) -> dict[str, Any] | None:
    """``current`` with the spec, labels and annotations of ``wanted`` where they differ
    (upstream ``shouldUpdateExistingPodGroup``; the status is kept), or None when nothing does.
    Fields are compared as the Go structs are: an absent field equals its zero value."""
    def spec_of(obj: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in (obj.get("spec") or {}).items() if v not in (None, "", 0, {}, [])}

    md_now, md_want = meta(current), meta(wanted)
    out = clone(current)
    changed = False
    if spec_of(current) != spec_of(wanted):
        out["spec"] = dict(wanted.get("spec") or {})
        changed = True
    for field in ("labels", "annotations"):
        if (md_now.get(field) or {}) != (md_want.get(field) or {}):
            out["metadata"][field] = dict(md_want.get(field) or {})
            changed = True
    return out if changed else None


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
