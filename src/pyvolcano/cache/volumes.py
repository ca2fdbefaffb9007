"""The storage objects in the scheduler cache (kube-scheduler's PV/PVC assume caches and listers).

:class:`VolumeState` holds the StorageClasses, PersistentVolumes, PersistentVolumeClaims,
CSINodes, CSIDrivers and CSIStorageCapacities the informers deliver, with the lookups volume
binding needs: a class's PVs in name order (kept until one of them changes), the default
class, a claim's class after the DefaultStorageClass admission's rule. A bind whose pre-bind
step binds a PV or asks for provisioning *assumes* its effect here (:meth:`assume_claim_ref`,
:meth:`assume_selected_node`, upstream ``AssumePodVolumes`` in the assume caches), so that the
next session does not offer the PV again before the API server's own event arrives; a failed
bind re-reads the objects (``ingest.resync_object``), which drops the assumption.

Invariants: objects are values, replaced on every change; ``version`` moves with every change,
so that anything derived from the storage objects can tell it is stale. A cluster without
storage objects costs nothing: nothing here is read for a pod without claims.
"""

from __future__ import annotations

from dataclasses import replace

from pyvolcano.api.storage import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    ClaimRef,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    claim_class,
    default_class,
)

__all__ = ["VolumeState"]


class VolumeState:
    def __init__(self) -> None:
        self.classes: dict[str, StorageClass] = {}
        self.pvs: dict[str, PersistentVolume] = {}
        self.pvcs: dict[str, PersistentVolumeClaim] = {}  # by namespace/name
        self.csi_nodes: dict[str, CSINode] = {}
        self.csi_drivers: dict[str, CSIDriver] = {}
        self.capacities: dict[str, CSIStorageCapacity] = {}  # by namespace/name
        self.version = 0
        self._by_class: dict[str, list[PersistentVolume]] | None = None

    # ------------------------------------------------------------------ changes
    def _changed(self, pvs: bool = False) -> None:
        self.version += 1
        if pvs:
            self._by_class = None

    def upsert_class(self, sc: StorageClass) -> None:
        self.classes[sc.name] = sc
        self._changed()

    def delete_class(self, name: str) -> None:
        if self.classes.pop(name, None) is not None:
            self._changed()

    def upsert_pv(self, pv: PersistentVolume) -> None:
        self.pvs[pv.name] = pv
        self._changed(pvs=True)

    def delete_pv(self, name: str) -> None:
        if self.pvs.pop(name, None) is not None:
            self._changed(pvs=True)

    def upsert_pvc(self, pvc: PersistentVolumeClaim) -> None:
        self.pvcs[pvc.key] = pvc
        self._changed()

    def delete_pvc(self, key: str) -> None:
        if self.pvcs.pop(key, None) is not None:
            self._changed()

    def upsert_csi_node(self, n: CSINode) -> None:
        self.csi_nodes[n.name] = n
        self._changed()

    def delete_csi_node(self, name: str) -> None:
        if self.csi_nodes.pop(name, None) is not None:
            self._changed()

    def upsert_csi_driver(self, d: CSIDriver) -> None:
        self.csi_drivers[d.name] = d
        self._changed()

    def delete_csi_driver(self, name: str) -> None:
        if self.csi_drivers.pop(name, None) is not None:
            self._changed()

    def upsert_capacity(self, c: CSIStorageCapacity) -> None:
        self.capacities[f"{c.namespace}/{c.name}"] = c
        self._changed()

    def delete_capacity(self, key: str) -> None:
        if self.capacities.pop(key, None) is not None:
            self._changed()

    # ------------------------------------------------------------------ assumptions
    def assume_claim_ref(self, pv_name: str, ref: ClaimRef) -> None:
        """The PV as the pre-bind step writes it: its claim reference set (upstream
        ``GetBindVolumeToClaim``, with the bound-by-controller annotation)."""
        pv = self.pvs.get(pv_name)
        if pv is None:
            return
        self.upsert_pv(replace(pv, claim_ref=ref, annotations={**pv.annotations, ANN_BOUND_BY_CONTROLLER: "yes"}))

    def assume_selected_node(self, pvc_key: str, node: str) -> None:
        """The PVC as the pre-bind step writes it: the selected-node annotation for its provisioner."""
        pvc = self.pvcs.get(pvc_key)
        if pvc is None:
            return
        self.upsert_pvc(replace(pvc, annotations={**pvc.annotations, ANN_SELECTED_NODE: node}))

    # ------------------------------------------------------------------ lookups
    def pvs_of_class(self, name: str) -> list[PersistentVolume]:
        """The PVs of class ``name`` (``""``: without a class), in name order."""
        by_class = self._by_class
        if by_class is None:
            by_class = {}
            for pv in sorted(self.pvs.values(), key=lambda p: p.name):
                by_class.setdefault(pv.storage_class, []).append(pv)
            self._by_class = by_class
        return by_class.get(name, [])

    def default_class(self) -> str:
        return default_class(self.classes.values())

    def class_of(self, pvc: PersistentVolumeClaim) -> str:
        """The claim's class; a claim that sets none gets the default class, as the
        DefaultStorageClass admission plugin gives it at creation."""
        if pvc.storage_class is None and not claim_class(pvc):
            return self.default_class()
        return claim_class(pvc)
