"""Feeding the scheduler cache from store watch events (upstream cache/event_handlers.go).

The scheduler never reads the store directly during a session: it consumes the store's
ordered watch stream and keeps its compact domain state up to date. Objects are converted
once, here, with the same validating parser as manifests.
"""

from __future__ import annotations

import logging
from typing import Any

from pyvolcano.api.dra.types import DeviceClass, ResourceClaim, ResourceSlice
from pyvolcano.api.hypernode import HyperNode
from pyvolcano.api.job import podgroup_phase
from pyvolcano.api.manifest import ManifestError, parse_object, pod_uid
from pyvolcano.api.names import STORAGE_KINDS
from pyvolcano.api.numatopology import Numatopology
from pyvolcano.api.objects import Node, Pod, PodDisruptionBudget, PodGroup, PriorityClass, Queue, ResourceQuota
from pyvolcano.api.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from pyvolcano.api.task import COMPLETED_STATUS, TaskInfo, TaskStatus
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.store.base import Store, StoreError, to_rfc3339

__all__ = ["apply_event", "podgroup_status", "resync_object", "resync_pod"]

logger = logging.getLogger(__name__)


_QUIET_POD_TRANSITIONS = {
    (TaskStatus.Binding, TaskStatus.Bound),
    (TaskStatus.Binding, TaskStatus.Running),
    (TaskStatus.Bound, TaskStatus.Bound),
    (TaskStatus.Bound, TaskStatus.Running),
    (TaskStatus.Running, TaskStatus.Running),
}


def apply_event(cache: SchedulerCache, event_type: str, kind: str, obj: dict[str, Any], *,
                resync: bool = False) -> bool:
    """Apply one ADDED / MODIFIED / DELETED event for a scheduler-relevant kind (``resync``: the
    store's current object after a refused write, which replaces an in-flight placement).

    Returns whether the change can alter a scheduling decision. A pod that was bound by the
    scheduler and now reports Bound or Running on the same node cannot, unless the next
    session would give its PodGroup another phase (see ``_podgroup_phase_due``); a PodGroup
    whose only change is the status the scheduler itself wrote cannot. Neither can the clean-up of a
    finished job: deleting a finished pod only matters while its PodGroup exists (its job's
    counts change), which :meth:`SchedulerCache.take_status_changes` settles when the
    scheduler is next due; deleting a Completed PodGroup with no unfinished tasks removes
    nothing any plugin sums, unless it was its queue's last job. A Queue update that leaves
    every field the scheduler parses unchanged (the controller's per-phase counts) cannot
    either. Everything else can.
    """
    if kind in STORAGE_KINDS:
        return _apply_storage_event(cache, event_type, kind, obj)
    if kind not in _KINDS:
        return False
    if kind == "Pod" and event_type == "DELETED":
        return _delete_pod(cache, obj)
    try:
        typed = parse_object(obj, "store")
    except ManifestError as e:  # admission guarantees shape; a bad object is skipped, not fatal
        logger.warning("ignoring malformed %s: %s", kind, e)
        return False
    if typed is None:
        return False
    if isinstance(typed, Pod):
        old = cache.tasks.get(typed.uid)
        before = (old.status, old.node_name) if old is not None else None
        new = cache.upsert_pod(typed, keep_in_flight=not resync)
        if before is None or new is None:
            return True
        if before[1] == new.node_name and (before[0], new.status) in _QUIET_POD_TRANSITIONS:
            return _podgroup_phase_due(cache, new)
        return True
    if isinstance(typed, PodGroup) and event_type != "DELETED":
        job = cache.pg_jobs.get(f"{typed.namespace}/{typed.name}")
        quiet = job is not None and job.podgroup is not None and _same_spec(job.podgroup, typed) and (
            job.podgroup.phase == typed.phase
        )
        cache.add_podgroup(typed)
        return not quiet
    if isinstance(typed, Pod):
        return True
    elif isinstance(typed, Node):
        if event_type != "DELETED":
            cache.upsert_node(typed)
        else:
            cache.delete_node(typed)
    elif isinstance(typed, PodGroup):
        if event_type == "DELETED":
            quiet = _finished_job_cleanup(cache, f"{typed.namespace}/{typed.name}")
            cache.delete_podgroup(typed.namespace, typed.name, releases=not quiet)
            return not quiet
        else:
            cache.add_podgroup(typed)
    elif isinstance(typed, Queue):
        if event_type == "DELETED":
            cache.delete_queue(typed.name)
        else:
            known = cache.queues.get(typed.name)
            if known is not None and known.queue == typed:
                return False  # e.g. the queue controller's PodGroup counts: nothing the scheduler reads
            cache.upsert_queue(typed)
    elif isinstance(typed, PriorityClass):
        if event_type == "DELETED":
            cache.priority_classes.pop(typed.name, None)
        else:
            cache.upsert_priority_class(typed)
    elif isinstance(typed, PodDisruptionBudget):
        if event_type == "DELETED":
            cache.delete_pod_disruption_budget(typed.namespace, typed.name)
        else:
            cache.upsert_pod_disruption_budget(typed)
    elif isinstance(typed, ResourceQuota):
        if event_type == "DELETED":
            cache.delete_resource_quota(typed.namespace, typed.name)
        else:
            cache.upsert_resource_quota(typed)
    elif isinstance(typed, (DeviceClass, ResourceSlice, ResourceClaim)):
        return _apply_dra(cache, event_type, typed)
    elif isinstance(typed, HyperNode):
        if event_type == "DELETED":
            cache.delete_hypernode(typed.name)
        else:
            cached = cache.hypernodes.get(typed.name)
            if cached is not None and _hypernode_spec(cached) == _hypernode_spec(typed):
                return False  # e.g. the controller's status.nodeCount: nothing the tree reads
            cache.upsert_hypernode(typed)
    elif isinstance(typed, Numatopology):
        if event_type == "DELETED":
            cache.delete_numatopology(typed.name)
        else:
            cached_nt = cache.numatopologies.get(typed.name)
            if cached_nt is not None and cached_nt.spec_key() == typed.spec_key():
                return False  # e.g. the exporter's refresh timestamp annotation
            cache.upsert_numatopology(typed)
    return True


_KINDS = frozenset(("Pod", "Node", "PodGroup", "Queue", "PriorityClass", "HyperNode", "Numatopology", "DeviceClass",
                    "ResourceSlice", "ResourceClaim", "PodDisruptionBudget", "ResourceQuota"))


def _apply_dra(cache: SchedulerCache, event_type: str, obj: DeviceClass | ResourceSlice | ResourceClaim) -> bool:
    """A DRA object's event. A new slice or class, and a claim that lost its allocation or
    went away, can let a waiting pod fit (``capacity_epoch``)."""
    dra = cache.dra
    deleted = event_type == "DELETED"
    if isinstance(obj, DeviceClass):
        if deleted:
            dra.delete_class(obj.name)
        else:
            dra.upsert_class(obj)
        cache.capacity_epoch += 1
    elif isinstance(obj, ResourceSlice):
        if deleted:
            dra.delete_slice(obj.name)
        else:
            dra.upsert_slice(obj)
        cache.capacity_epoch += 1
    else:
        before = dra.claims.get(obj.key)
        if deleted:
            dra.delete_claim(obj.key)
        else:
            dra.upsert_claim(obj)
        if deleted or (before is not None and before.allocation is not None and obj.allocation is None):
            cache.capacity_epoch += 1
        elif before is not None and before.status == obj.status:
            return False  # e.g. a finalizer added: nothing the scheduler reads
    return True


def _apply_storage_event(cache: SchedulerCache, event_type: str, kind: str, obj: dict[str, Any]) -> bool:
    """A StorageClass, PV, PVC or CSI object's event: any of them can let a pod with claims fit."""
    v = cache.volumes
    if event_type == "DELETED":
        md = obj.get("metadata")
        if not isinstance(md, dict) or not isinstance(md.get("name"), str):
            logger.warning("ignoring a deleted %s without metadata.name", kind)
            return False
        name, ns = md["name"], str(md.get("namespace") or "default")
        {"StorageClass": v.delete_class, "PersistentVolume": v.delete_pv, "CSINode": v.delete_csi_node,
         "CSIDriver": v.delete_csi_driver, "PersistentVolumeClaim": lambda n: v.delete_pvc(f"{ns}/{n}"),
         "CSIStorageCapacity": lambda n: v.delete_capacity(f"{ns}/{n}")}[kind](name)
        cache.capacity_epoch += 1
        return True
    try:
        typed = parse_object(obj, "store")
    except ManifestError as e:
        logger.warning("ignoring malformed %s: %s", kind, e)
        return False
    if isinstance(typed, PersistentVolume):
        v.upsert_pv(typed)
    elif isinstance(typed, PersistentVolumeClaim):
        v.upsert_pvc(typed)
    elif isinstance(typed, StorageClass):
        v.upsert_class(typed)
    elif isinstance(typed, CSINode):
        v.upsert_csi_node(typed)
    elif isinstance(typed, CSIDriver):
        v.upsert_csi_driver(typed)
    elif isinstance(typed, CSIStorageCapacity):
        v.upsert_capacity(typed)
    else:
        return False
    cache.capacity_epoch += 1
    return True


def _podgroup_phase_due(cache: SchedulerCache, task: TaskInfo) -> bool:
    """Whether the next session's close would move ``task``'s PodGroup to another phase.

    A bound pod that starts to count as scheduled (Binding -> Bound/Running) can complete its
    gang: upstream's next session sets the PodGroup Running, and from then on enqueue's
    plugins see it as running instead of reserving its ``minResources`` as Inqueue. That
    session must not be skipped as "nothing changed".
    """
    job = cache.pg_jobs.get(task.job)
    if job is None or job.podgroup is None:
        return False
    return podgroup_phase(job, unschedulable=False) != job.podgroup.phase


def _delete_pod(cache: SchedulerCache, obj: dict[str, Any]) -> bool:
    # Only the identity is needed: no full parse.
    md = obj.get("metadata")
    if not isinstance(md, dict) or not isinstance(md.get("name"), str):
        logger.warning("ignoring a deleted Pod without metadata.name")
        return False
    uid = pod_uid(str(md.get("namespace") or "default"), md["name"], str(md.get("uid") or ""))
    task = cache.tasks.get(uid)
    finished = task is not None and bool(task.status & COMPLETED_STATUS)
    cache.delete_pod(uid)
    if finished and task is not None:
        cache.status_only_changes.add(task.job)
        return False
    return True


def _finished_job_cleanup(cache: SchedulerCache, uid: str) -> bool:
    """A Completed PodGroup whose tasks have all finished, and whose queue keeps other jobs."""
    job = cache.pg_jobs.get(uid)
    if job is None or job.podgroup is None or job.podgroup.phase != "Completed":
        return False
    if any(not t.status & COMPLETED_STATUS for t in job.tasks.values()):
        return False
    return any(other.queue == job.queue and other is not job for other in cache.pg_jobs.values())


def _same_spec(a: PodGroup, b: PodGroup) -> bool:
    return _podgroup_spec(a) == _podgroup_spec(b)


def _podgroup_spec(pg: PodGroup) -> tuple[Any, ...]:
    # SubGroupPolicy's equality leaves out the label selector: compare it here.
    return (pg.min_member, pg.min_task_member, pg.queue, pg.priority_class_name, pg.min_resources, pg.annotations,
            pg.labels, pg.network_topology, [(p, p.label_selector) for p in pg.sub_group_policy])


def _hypernode_spec(hn: HyperNode) -> tuple[Any, ...]:
    # MemberSelector's equality leaves out the label selector: compare it here.
    return (hn.tier, hn.tier_name, [(m.type, m.selector, m.selector.label_selector) for m in hn.members])


def resync_pod(cache: SchedulerCache, store: Store, namespace: str, name: str) -> dict[str, Any] | None:
    """Drop a failed write's assumption: re-apply the store's current pod (an unbound pod makes
    its task Pending again), or forget the pod when it is gone. Returns the pod, or None."""
    try:
        obj = store.get("Pod", namespace, name)
    except StoreError:
        for t in list(cache.tasks.values()):
            if t.namespace == namespace and t.name == name:
                cache.delete_pod(t.uid)
        return None
    apply_event(cache, "MODIFIED", "Pod", obj, resync=True)
    return obj


def podgroup_status(pg: PodGroup) -> dict[str, Any]:
    """The ``status`` a session writes for a PodGroup it changed."""
    return {
        "phase": pg.phase, "running": pg.running, "succeeded": pg.succeeded, "failed": pg.failed,
        "conditions": [{**c.to_dict(), "lastTransitionTime": to_rfc3339(c.last_transition_time)}
                       for c in pg.conditions],
    }


def resync_object(cache: SchedulerCache, store: Store, kind: str, namespace: str | None, name: str
                  ) -> tuple[str, dict[str, Any]]:
    """Drop an assumption a failed bind left on a non-pod object: re-apply the store's current
    ``kind`` object, or its deletion when it is gone. Returns the event applied (type, object)."""
    if kind == "ResourceClaim":
        cache.dra.drop_assumed(f"{namespace}/{name}")
    try:
        obj = store.get(kind, namespace, name)
    except StoreError:
        md: dict[str, Any] = {"name": name}
        if namespace is not None:
            md["namespace"] = namespace
        gone = {"kind": kind, "metadata": md}
        apply_event(cache, "DELETED", kind, gone)
        return "DELETED", gone
    apply_event(cache, "MODIFIED", kind, obj)
    return "MODIFIED", obj
