"""The volume stage of a pending diagnosis: which claim keeps a pod off every node, and why.

When the most common reason a pod's nodes failed for is one of volume binding's, VolumeZone's
or NodeVolumeLimits' (kube-scheduler's texts), :func:`volume_diagnosis` names the reason code
(``Volume.*``, docs/reasons.md) and builds a hint with figures from the cache's storage objects
and the session's assumptions: for each claim of the pod, its class and binding mode, what it
asks for, and every PV of its class with the nodes it is pinned to and why it is not usable
(taken by another claim, in this session or in the cluster; too small; another access mode;
not Available). At most :data:`SHOWN` PVs are listed per claim, the usable ones first.

Invariants: pure (reads the session and the cache), deterministic (claims in the pod's volume
order, PVs in name order within each state).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyvolcano.api.quantity import format_quantity
from pyvolcano.api.storage import (
    ANN_SELECTED_NODE,
    ClaimRef,
    PersistentVolume,
    PersistentVolumeClaim,
    VolumeBindings,
)
from pyvolcano.api.task import TaskInfo
from pyvolcano.diagnosis.model import Reason, VolumeFigure

if TYPE_CHECKING:
    from pyvolcano.cache.volumes import VolumeState
    from pyvolcano.framework.session import Session

__all__ = ["SHOWN", "volume_diagnosis", "volume_reason"]

SHOWN = 8

# kube-scheduler's texts (volumebinding, volumezone, nodevolumelimits) -> our reason codes,
# in the order a node's combined reason is read.
_REASONS: tuple[tuple[str, Reason], ...] = (
    ("pod has unbound immediate PersistentVolumeClaims", Reason.VOLUME_UNBOUND_IMMEDIATE),
    ("persistentvolumeclaim ", Reason.VOLUME_CLAIM_UNAVAILABLE),
    ("waiting for ephemeral volume controller", Reason.VOLUME_CLAIM_UNAVAILABLE),
    ("was not created for pod", Reason.VOLUME_CLAIM_UNAVAILABLE),
    ("node(s) had volume node affinity conflict", Reason.VOLUME_NODE_CONFLICT),
    ("node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)", Reason.VOLUME_NODE_CONFLICT),
    ("node(s) didn't find available persistent volumes to bind", Reason.VOLUME_NO_MATCHING_PV),
    ("node(s) did not have enough free storage", Reason.VOLUME_NOT_ENOUGH_STORAGE),
    ("node(s) had no available volume zone", Reason.VOLUME_ZONE_CONFLICT),
    ("node(s) exceed max volume count", Reason.VOLUME_ATTACH_LIMIT),
)


def volume_reason(reason: str) -> Reason | None:
    """The ``Volume.*`` code of a predicate failure reason, or None for any other reason."""
    for text, code in _REASONS:
        if text in reason:
            return code
    return None


def _size(b: float) -> str:
    return format_quantity(b, binary=True)


def _session_claims(ssn: Session) -> dict[str, ClaimRef]:
    """PV name -> the claim a placement of this session assumed it for."""
    out: dict[str, ClaimRef] = {}
    for ext in ssn.bind_contexts.extensions.values():
        for value in ext.values():
            if isinstance(value, VolumeBindings):
                for pv, ref in value.static:
                    out[pv] = ref
    return out


def _pv_state(pv: PersistentVolume, pvc: PersistentVolumeClaim, cls: str, assumed: dict[str, ClaimRef]) -> str:
    ref = assumed.get(pv.name)
    if ref is not None and (ref.namespace, ref.name) != (pvc.namespace, pvc.name):
        return f"taken by {ref.key} in this session"
    if pv.claim_ref is not None and (pv.claim_ref.namespace, pv.claim_ref.name) != (pvc.namespace, pvc.name):
        return f"bound to {pv.claim_ref.key}"
    if pv.claim_ref is not None:
        return "pre-bound to this claim"
    if pv.deleting:
        return "being deleted"
    if pv.phase != "Available":
        return f"phase {pv.phase}"
    if pv.capacity < pvc.request:
        return f"too small ({_size(pv.capacity)})"
    if not pvc.access_modes <= pv.access_modes:
        return f"access modes {','.join(sorted(pv.access_modes)) or 'none'}"
    if pv.volume_mode != pvc.volume_mode:
        return f"volume mode {pv.volume_mode}"
    if pvc.selector is not None and not pvc.selector.matches(pv.labels):
        return "labels do not match the claim's selector"
    return "available"


def _figure(v: VolumeState, pvc: PersistentVolumeClaim, assumed: dict[str, ClaimRef]) -> VolumeFigure:
    cls = v.class_of(pvc)
    sc = v.classes.get(cls)
    mode = sc.volume_binding_mode if sc is not None else ""
    if pvc.fully_bound:
        pv = v.pvs.get(pvc.volume_name)
        pvs = () if pv is None else ((pv.name, ",".join(pv.pinned_to), "bound to this claim"),)
        return VolumeFigure(pvc.key, cls, mode, pvc.request, "bound", pvc.volume_name, pvs)
    rows = [(pv.name, ",".join(pv.pinned_to), _pv_state(pv, pvc, cls, assumed)) for pv in v.pvs_of_class(cls)]
    rows.sort(key=lambda r: (r[2] != "available", r[2] != "pre-bound to this claim", r[0]))
    status = "deleting" if pvc.deleting else "unbound"
    return VolumeFigure(pvc.key, cls, mode, pvc.request, status, pvc.volume_name or None, tuple(rows[:SHOWN]))


def _gang_demand(v: VolumeState, tasks: list[TaskInfo], cls: str) -> int:
    """How many unbound claims of class ``cls`` the pods ``tasks`` still need, each claim once."""
    keys = set()
    for t in tasks:
        for name in t.pod.claims:
            pvc = v.pvcs.get(f"{t.namespace}/{name}")
            if pvc is not None and not pvc.fully_bound and v.class_of(pvc) == cls:
                keys.add(pvc.key)
    return len(keys)


def volume_diagnosis(ssn: Session, task: TaskInfo, code: Reason, top: str, needed: list[TaskInfo]
                     ) -> tuple[str, tuple[VolumeFigure, ...]]:
    """The hint and figures of a ``Volume.*`` diagnosis of ``task``; ``top`` is the most
    common node failure (with its count) for the hint to quote, ``needed`` the job's pods still
    needed (a gang whose pods want more volumes of a class than are free is said so)."""
    v = ssn.cache.volumes
    pod = task.pod
    assumed = _session_claims(ssn)
    figures = []
    missing = []
    for name in pod.claims:
        pvc = v.pvcs.get(f"{pod.namespace}/{name}")
        if pvc is None:
            missing.append(name)
            figures.append(VolumeFigure(f"{pod.namespace}/{name}", "", "", 0.0, "missing"))
            continue
        figures.append(_figure(v, pvc, assumed))
    if code is Reason.VOLUME_CLAIM_UNAVAILABLE:
        if missing:
            hint = (f"{task.name} mounts claim(s) {', '.join(missing)} that do not exist in {pod.namespace}: "
                    "create them (a vcjob's volumeClaim is created by the job controller)")
        else:
            hint = f"a claim of {task.name} is being deleted or not owned by the pod ({top})"
    elif code is Reason.VOLUME_UNBOUND_IMMEDIATE:
        unbound = [f for f in figures if f.status == "unbound" and f.binding_mode != "WaitForFirstConsumer"]
        names = ", ".join(f"{f.claim} (class {f.storage_class or 'none'})" for f in unbound)
        hint = (f"claim(s) {names} bind Immediately and are not bound yet: the PV controller must bind or "
                "provision them first (is there a matching PV, or a provisioner for the class?)")
    elif code is Reason.VOLUME_NODE_CONFLICT:
        parts = []
        for f in figures:
            if f.status == "bound":
                pinned = f.pvs[0][1] if f.pvs else ""
                where = f"pinned to {pinned}" if pinned else ("missing" if not f.pvs else "with a node affinity")
                parts.append(f"{f.claim} is bound to {f.volume}, {where}")
        hint = (f"{'; '.join(parts)}: the pod can only run where its bound volumes are, and those nodes fail "
                f"its other predicates or are gone ({top})")
    elif code is Reason.VOLUME_NO_MATCHING_PV:
        parts = []
        for f in figures:
            if f.status != "unbound" or f.binding_mode != "WaitForFirstConsumer":
                continue
            pvc = v.pvcs[f.claim]
            sc = v.classes.get(f.storage_class)
            prov = sc.provisioner if sc is not None else ""
            want = (f"{f.claim} wants {_size(f.requested)} {','.join(sorted(pvc.access_modes))} of class "
                    f"{f.storage_class}")
            pvs = ", ".join(f"{n} ({'on ' + nodes if nodes else 'any node'}: {st})" for n, nodes, st in f.pvs)
            total = len(v.pvs_of_class(f.storage_class))
            more = f" and {total - len(f.pvs)} more" if total > len(f.pvs) else ""
            can = ("no provisioner" if prov in ("", "kubernetes.io/no-provisioner") else
                   f"provisioner {prov} cannot provision on those nodes")
            selected = pvc.annotations.get(ANN_SELECTED_NODE)
            if selected:
                can = f"provisioning already asked on {selected}"
            # Usable PVs are listed first: fewer than SHOWN of them listed is all there are.
            free = sum(1 for _n, _nodes, st in f.pvs if st == "available")
            demand = _gang_demand(v, needed, f.storage_class) if free < SHOWN else 0
            if free and demand > free:
                can += (f"; the pods the job still needs want {demand} volumes of the class and {free} "
                        "available PV(s) fit them")
            parts.append(f"{want}; PVs of the class: {pvs or 'none'}{more}; {can}")
        hint = "no node has a free volume for every claim: " + "; ".join(parts)
    elif code is Reason.VOLUME_NOT_ENOUGH_STORAGE:
        hint = ("the class's CSI driver publishes storage capacity, and no CSIStorageCapacity that reaches a "
                "node has room for the claim: free storage or use another class")
    elif code is Reason.VOLUME_ZONE_CONFLICT:
        hint = f"{task.name}'s bound volumes are labelled with zones no schedulable node is in ({top})"
    else:
        hint = (f"the nodes that could take {task.name} have no CSI attach slot left for its volumes "
                f"(CSINode allocatable counts; {top}): free a slot or add nodes")
    return hint, tuple(figures)
