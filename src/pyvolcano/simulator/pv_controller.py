"""A simulated PersistentVolume controller: kube-controller-manager's PV binder and a provisioner per class.

The scheduler only *asks* for volumes (a PV's ``claimRef``, a claim's ``selected-node``
annotation); in a cluster kube-controller-manager's ``persistentvolume-binder`` and the
classes' external provisioners do the rest. This controller does that in a simulation, on the
store, at virtual time:

* **binding** (``syncVolume`` / ``syncClaim``): a PV whose ``claimRef`` names an existing claim
  that has no volume yet is bound to it: the claim gets ``spec.volumeName``, the
  ``pv.kubernetes.io/bind-completed`` annotation and phase ``Bound`` (its capacity and access
  modes from the PV), the PV phase ``Bound``. An unbound claim of an ``Immediate`` class (or
  of none) takes the smallest Available PV that matches it without regard to nodes, as the
  controller does, or, when its class has a provisioner, is provisioned at once. Claims of a
  ``WaitForFirstConsumer`` class wait for the scheduler.
* **provisioning**: a claim with ``volume.kubernetes.io/selected-node`` (or an Immediate one) of
  a class whose provisioner is not ``kubernetes.io/no-provisioner`` gets, after the class's
  ``pyvolcano.io/provisioning-delay`` annotation (a duration, default ``0s``), a PV named
  ``pvc-<claim uid>`` of the requested size, pre-bound to it, with the class's
  ``reclaimPolicy`` (default ``Delete``) and, when a node was selected, node affinity to that node's
  hostname (a local volume, as the provisioners of WaitForFirstConsumer classes make).
* **release**: when a bound claim is deleted, its PV goes ``Released`` (``Retain``) or is deleted
  (``Delete``), as the controller's reclaim does.

It is the cluster's component, not Volcano's: it exists only in simulations (a real cluster
runs kube-controller-manager). It follows the controllers' protocol (:meth:`on_event` records,
:meth:`run` writes and returns its next wake-up) and reads no wall clock.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from pyvolcano.api.duration import DurationError, parse_duration_strict
from pyvolcano.api.manifest import ManifestError, parse_object
from pyvolcano.api.names import is_dns1123_subdomain
from pyvolcano.api.storage import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    NOT_SUPPORTED_PROVISIONER,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    claim_class,
    default_class,
)
from pyvolcano.store.base import AlreadyExists, NotFound, Store, StoreError, WatchEvent

__all__ = ["PROVISIONING_DELAY", "PersistentVolumeController"]

logger = logging.getLogger(__name__)

PROVISIONING_DELAY = "pyvolcano.io/provisioning-delay"
_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
_HOSTNAME = "kubernetes.io/hostname"


class PersistentVolumeController:
    name = "persistentvolume-binder"

    def __init__(self, *, store: Store):
        self.store = store
        self._dirty = False
        self._due: dict[str, float] = {}  # claim key -> when its PV is provisioned

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind in ("PersistentVolume", "PersistentVolumeClaim", "StorageClass"):
            self._dirty = True

    def run(self, now: float) -> float | None:
        due = [k for k, at in self._due.items() if at <= now]
        if not self._dirty and not due:
            return min(self._due.values(), default=None)
        self._dirty = False
        pvs, pvcs, classes = self._read()
        self._bind_prebound(pvs, pvcs)
        self._release(pvs, pvcs)
        for key, (raw, pvc) in sorted(pvcs.items()):
            if pvc.volume_name or pvc.deleting:
                self._due.pop(key, None)
                continue
            cls = claim_class(pvc) or (default_class(classes.values()) if pvc.storage_class is None else "")
            sc = classes.get(cls)
            node = pvc.annotations.get(ANN_SELECTED_NODE, "")
            if sc is None or (sc.delays_binding and not node):
                continue
            if not sc.delays_binding and self._bind_immediate(pvc, cls, pvs, raw):
                continue
            if not sc.provisioner or sc.provisioner == NOT_SUPPORTED_PROVISIONER:
                continue
            at = self._due.get(key)
            if at is None:
                at = self._due[key] = now + _delay(sc)
            if at <= now:
                self._provision(raw, pvc, sc, cls, node)
                del self._due[key]
        return min(self._due.values(), default=None)

    # ------------------------------------------------------------------ reading
    def _read(self) -> tuple[dict[str, tuple[dict[str, Any], PersistentVolume]],
                             dict[str, tuple[dict[str, Any], PersistentVolumeClaim]], dict[str, StorageClass]]:
        pvs: dict[str, tuple[dict[str, Any], PersistentVolume]] = {}
        pvcs: dict[str, tuple[dict[str, Any], PersistentVolumeClaim]] = {}
        classes: dict[str, StorageClass] = {}
        for kind, into in (("PersistentVolume", pvs), ("PersistentVolumeClaim", pvcs), ("StorageClass", classes)):
            for raw in self.store.list(kind):
                try:
                    typed = parse_object(raw, "store")
                except ManifestError as e:
                    logger.warning("persistentvolume-binder: ignoring %s: %s", kind, e)
                    continue
                if kind == "StorageClass":
                    classes[typed.name] = typed
                else:
                    key = typed.name if kind == "PersistentVolume" else typed.key
                    into[key] = (raw, typed)  # type: ignore[assignment]
        return pvs, pvcs, classes

    # ------------------------------------------------------------------ binding
    def _bind_prebound(self, pvs: dict[str, tuple[dict[str, Any], PersistentVolume]],
                       pvcs: dict[str, tuple[dict[str, Any], PersistentVolumeClaim]]) -> None:
        for name, (_raw_pv, pv) in sorted(pvs.items()):
            ref = pv.claim_ref
            if ref is None:
                continue
            got = pvcs.get(ref.key)
            if got is None or (ref.uid and got[1].uid and ref.uid != got[1].uid):
                continue
            raw_pvc, pvc = got
            if pvc.volume_name and pvc.volume_name != name:
                continue
            if not pvc.fully_bound:
                self._complete(raw_pvc, pvc, pv)
            if pv.phase != "Bound":
                self._set_phase("PersistentVolume", None, name, "Bound")

    def _complete(self, raw: dict[str, Any], pvc: PersistentVolumeClaim, pv: PersistentVolume) -> None:
        md = raw.setdefault("metadata", {})
        anns = md.setdefault("annotations", {})
        anns[ANN_BIND_COMPLETED] = "yes"
        if ANN_BOUND_BY_CONTROLLER in pv.annotations:
            anns[ANN_BOUND_BY_CONTROLLER] = "yes"
        raw.setdefault("spec", {})["volumeName"] = pv.name
        try:
            obj = self.store.update(raw)
        except StoreError as e:
            logger.info("persistentvolume-binder: claim %s not bound yet: %s", pvc.key, e)
            self._dirty = True
            return
        pv_raw = self.store.get("PersistentVolume", None, pv.name)
        obj["status"] = {"phase": "Bound", "accessModes": list((pv_raw.get("spec") or {}).get("accessModes") or []),
                         "capacity": dict((pv_raw.get("spec") or {}).get("capacity") or {})}
        self.store.update_status(obj)

    def _set_phase(self, kind: str, ns: str | None, name: str, phase: str) -> None:
        try:
            obj = self.store.get(kind, ns, name)
            obj["status"] = {**(obj.get("status") or {}), "phase": phase}
            self.store.update_status(obj)
        except StoreError as e:
            logger.info("persistentvolume-binder: %s %s not set %s: %s", kind, name, phase, e)
            self._dirty = True

    def _bind_immediate(self, pvc: PersistentVolumeClaim, cls: str,
                        pvs: dict[str, tuple[dict[str, Any], PersistentVolume]], raw_pvc: dict[str, Any]) -> bool:
        """The controller's own match for an Immediate claim (no node: affinity is not checked)."""
        best: PersistentVolume | None = None
        for _name, (_raw, pv) in sorted(pvs.items()):
            if pv.claim_ref is not None or pv.phase != "Available" or pv.deleting or pv.storage_class != cls:
                continue
            if pv.capacity < pvc.request or not pvc.access_modes <= pv.access_modes:
                continue
            if pv.volume_mode != pvc.volume_mode or (pvc.selector is not None and not pvc.selector.matches(pv.labels)):
                continue
            if best is None or pv.capacity < best.capacity:
                best = pv
        if best is None:
            return False
        raw_pv = self.store.get("PersistentVolume", None, best.name)
        raw_pv.setdefault("spec", {})["claimRef"] = {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                                                     "namespace": pvc.namespace, "name": pvc.name,
                                                     **({"uid": pvc.uid} if pvc.uid else {})}
        raw_pv.setdefault("metadata", {}).setdefault("annotations", {})[ANN_BOUND_BY_CONTROLLER] = "yes"
        try:
            self.store.update(raw_pv)
        except StoreError as e:
            logger.info("persistentvolume-binder: PV %s not bound to %s: %s", best.name, pvc.key, e)
        self._dirty = True
        return True

    def _release(self, pvs: dict[str, tuple[dict[str, Any], PersistentVolume]],
                 pvcs: dict[str, tuple[dict[str, Any], PersistentVolumeClaim]]) -> None:
        for name, (raw_pv, pv) in sorted(pvs.items()):
            ref = pv.claim_ref
            if ref is None or pv.phase != "Bound":
                continue
            got = pvcs.get(ref.key)
            if got is not None and (not ref.uid or not got[1].uid or ref.uid == got[1].uid):
                continue
            policy = (raw_pv.get("spec") or {}).get("persistentVolumeReclaimPolicy") or "Retain"
            if policy == "Delete":
                with contextlib.suppress(NotFound):
                    self.store.delete("PersistentVolume", None, name)
            else:
                self._set_phase("PersistentVolume", None, name, "Released")

    # ------------------------------------------------------------------ provisioning
    def _provision(self, raw_pvc: dict[str, Any], pvc: PersistentVolumeClaim, sc: StorageClass, cls: str,
                   node: str) -> None:
        name = f"pvc-{pvc.uid or pvc.namespace + '-' + pvc.name}"
        spec: dict[str, Any] = {
            "capacity": {"storage": str(int(pvc.request))}, "accessModes": sorted(pvc.access_modes),
            "storageClassName": cls, "volumeMode": pvc.volume_mode,
            "persistentVolumeReclaimPolicy": sc.reclaim_policy,
            "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": pvc.namespace,
                         "name": pvc.name, **({"uid": pvc.uid} if pvc.uid else {})},
        }
        if node:
            hostname = node
            with contextlib.suppress(NotFound):
                hostname = ((self.store.get("Node", None, node).get("metadata") or {}).get("labels") or {}).get(
                    _HOSTNAME, node)
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": _HOSTNAME, "operator": "In", "values": [hostname]}]}]}}
            spec["local"] = {"path": f"/provisioned/{name}"}
        elif is_dns1123_subdomain(sc.provisioner.lower()) and len(sc.provisioner) <= 63:
            spec["csi"] = {"driver": sc.provisioner, "volumeHandle": name}
        else:
            # Not a CSI driver's name (``rancher.io/local-path``): such provisioners make host paths.
            spec["hostPath"] = {"path": f"/provisioned/{name}"}
        pv = {"apiVersion": "v1", "kind": "PersistentVolume",
              "metadata": {"name": name, "annotations": {_PROVISIONED_BY: sc.provisioner}}, "spec": spec}
        try:
            self.store.create(pv)
        except AlreadyExists:
            pass
        except StoreError as e:
            logger.info("persistentvolume-binder: provisioning for %s failed: %s", pvc.key, e)
            return
        anns = raw_pvc.setdefault("metadata", {}).setdefault("annotations", {})
        if anns.get(ANN_STORAGE_PROVISIONER) != sc.provisioner:
            anns[ANN_STORAGE_PROVISIONER] = sc.provisioner
            try:
                self.store.update(raw_pvc)
            except StoreError as e:
                logger.info("persistentvolume-binder: claim %s not annotated: %s", pvc.key, e)
        self._dirty = True


def _delay(sc: StorageClass) -> float:
    text = sc.annotations.get(PROVISIONING_DELAY)
    if text is None:
        return 0.0
    try:
        return max(parse_duration_strict(text), 0.0)
    except DurationError:
        logger.warning("StorageClass %s: %s %r is not a duration; provisioning at once", sc.name,
                       PROVISIONING_DELAY, text)
        return 0.0

