"""Storage objects and kube's volume matching rules (the subset volume binding reads).

StorageClass, PersistentVolume, PersistentVolumeClaim, CSINode, CSIDriver and
CSIStorageCapacity as slotted values, built once at the edge by :mod:`pyvolcano.api.manifest`
(selectors and node affinity compiled there, so a bad one is an error with its field path),
and the rules of ``k8s.io/component-helpers/storage/volume`` the scheduler and the PV
controller share:

* :func:`claim_class` (``GetPersistentVolumeClaimClass``: the beta annotation first, then
  ``spec.storageClassName``);
* :func:`find_matching_volume` (``FindMatchingVolume``): a PV pre-bound to the claim wins when
  its node affinity holds; otherwise the *smallest* Available PV of the claim's class, with
  enough capacity, the claim's volume mode and access modes, matching its selector and (on the
  scheduler's path) the node. Among PVs of equal capacity the first in name order is taken
  (upstream takes the first its informer lists, an order it does not define);
* :func:`volume_node_affinity_matches` (``CheckNodeAffinity``) and
  :func:`topology_matches` (``MatchTopologySelectorTerms`` of a class's ``allowedTopologies``).

Invariant: these objects are values; the cache replaces one on update, never mutates it, except
for the claim reference and annotation a bind assumes (:mod:`pyvolcano.cache.volumes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pyvolcano.api.matching import LabelSelector, NodeSelectorTerm

__all__ = [
    "ANN_BETA_STORAGE_CLASS",
    "ANN_BIND_COMPLETED",
    "ANN_BOUND_BY_CONTROLLER",
    "ANN_DEFAULT_CLASS",
    "ANN_SELECTED_NODE",
    "ANN_STORAGE_PROVISIONER",
    "BINDING_IMMEDIATE",
    "BINDING_WAIT",
    "NOT_SUPPORTED_PROVISIONER",
    "CSIDriver",
    "CSINode",
    "CSIStorageCapacity",
    "ClaimRef",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "StorageClass",
    "VolumeBindings",
    "claim_class",
    "default_class",
    "find_matching_volume",
    "topology_matches",
    "volume_node_affinity_matches",
]

BINDING_IMMEDIATE = "Immediate"
BINDING_WAIT = "WaitForFirstConsumer"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
_BETA_DEFAULT_CLASS = "storageclass.beta.kubernetes.io/is-default-class"


@dataclass(frozen=True, slots=True)
class StorageClass:
    name: str
    provisioner: str = ""
    volume_binding_mode: str = BINDING_IMMEDIATE
    # allowedTopologies: each term a tuple of (label key, allowed values); empty = anywhere.
    allowed_topologies: tuple[tuple[tuple[str, frozenset[str]], ...], ...] = ()
    annotations: Mapping[str, str] = field(default_factory=dict)
    creation_timestamp: float = 0.0
    reclaim_policy: str = "Delete"

    @property
    def is_default(self) -> bool:
        return (self.annotations.get(ANN_DEFAULT_CLASS) == "true"
                or self.annotations.get(_BETA_DEFAULT_CLASS) == "true")

    @property
    def delays_binding(self) -> bool:
        return self.volume_binding_mode == BINDING_WAIT


@dataclass(frozen=True, slots=True)
class ClaimRef:
    namespace: str
    name: str
    uid: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class PersistentVolume:
    name: str
    capacity: float = 0.0  # bytes of spec.capacity.storage
    storage_class: str = ""
    access_modes: frozenset[str] = frozenset()
    volume_mode: str = "Filesystem"
    # spec.nodeAffinity.required's terms (None: no required node affinity).
    node_affinity: tuple[NodeSelectorTerm, ...] | None = None
    claim_ref: ClaimRef | None = None
    phase: str = "Available"
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    deleting: bool = False
    csi_driver: str = ""
    csi_handle: str = ""
    # The node names spec.nodeAffinity pins the volume to, when it names them (for diagnoses).
    pinned_to: tuple[str, ...] = ()
    # Whether the required node affinity is only ``kubernetes.io/hostname In pinned_to`` (a
    # local volume's): its nodes are then found by hostname label, not by testing every node.
    hostname_only: bool = False
    # The required node affinity as canonical JSON ("" without one): PVs with equal keys reach
    # the same nodes.
    affinity_key: str = ""


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaim:
    namespace: str
    name: str
    uid: str = ""
    # spec.storageClassName: None when not set (the default class then applies), "" for none.
    storage_class: str | None = None
    access_modes: frozenset[str] = frozenset()
    request: float = 0.0  # bytes of spec.resources.requests.storage
    selector: LabelSelector | None = None
    volume_name: str = ""
    volume_mode: str = "Filesystem"
    phase: str = "Pending"
    annotations: Mapping[str, str] = field(default_factory=dict)
    deleting: bool = False
    # uid of the pod that owns it as controller (generic ephemeral volumes), else "".
    owner_pod_uid: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def fully_bound(self) -> bool:
        """``isPVCFullyBound``: a volume name and the PV controller's bind-completed annotation."""
        return bool(self.volume_name) and ANN_BIND_COMPLETED in self.annotations


@dataclass(frozen=True, slots=True)
class CSINode:
    name: str
    # driver name -> allocatable volume count (None: no limit published)
    limits: Mapping[str, int | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CSIDriver:
    name: str
    attach_required: bool = True
    storage_capacity: bool = False


@dataclass(frozen=True, slots=True)
class CSIStorageCapacity:
    namespace: str
    name: str
    storage_class: str
    node_topology: LabelSelector | None = None  # None: reaches no node
    capacity: float | None = None
    maximum_volume_size: float | None = None


@dataclass(frozen=True, slots=True)
class VolumeBindings:
    """What volume binding decided for one pod on one node, for its bind to write first
    (the bind-context extension of the predicates plugin)."""

    node: str
    static: tuple[tuple[str, ClaimRef], ...] = ()  # (PV name, the claim it is bound to)
    provisions: tuple[ClaimRef, ...] = ()  # claims whose provisioner is to create a PV on node


def default_class(classes: Iterable[StorageClass]) -> str:
    """The default StorageClass (upstream ``GetDefaultClass``: the newest of those marked
    default, by name on a tie), or "" without one."""
    defaults = [c for c in classes if c.is_default]
    if not defaults:
        return ""
    return max(defaults, key=lambda c: (c.creation_timestamp, c.name)).name


def claim_class(pvc: PersistentVolumeClaim) -> str:
    """``GetPersistentVolumeClaimClass``: the beta annotation, then ``spec.storageClassName``."""
    beta = pvc.annotations.get(ANN_BETA_STORAGE_CLASS)
    if beta is not None:
        return beta
    return pvc.storage_class or ""


def volume_node_affinity_matches(pv: PersistentVolume, node_name: str, labels: Mapping[str, str]) -> bool:
    """``CheckNodeAffinity``: no required node affinity, or one of its terms matches."""
    terms = pv.node_affinity
    if terms is None:
        return True
    return any(t.matches(node_name, labels) for t in terms)


def topology_matches(terms: tuple[tuple[tuple[str, frozenset[str]], ...], ...], labels: Mapping[str, str]) -> bool:
    """``MatchTopologySelectorTerms``: no terms, or one whose every requirement holds."""
    if not terms:
        return True
    return any(all(labels.get(key) in values for key, values in term) for term in terms)


def _bound_to(ref: ClaimRef | None, pvc: PersistentVolumeClaim) -> bool:
    """``IsVolumeBoundToClaim`` of a PV whose claim reference is ``ref``."""
    if ref is None or ref.name != pvc.name or ref.namespace != pvc.namespace:
        return False
    return not ref.uid or ref.uid == pvc.uid


def find_matching_volume(pvc: PersistentVolumeClaim, requested_class: str, volumes: Iterable[PersistentVolume],
                         node_name: str, labels: Mapping[str, str], excluded: Mapping[str, object],
                         assumed: Mapping[str, ClaimRef], *, check_affinity: bool = True
                         ) -> PersistentVolume | None:
    """``FindMatchingVolume`` on the scheduler's path (``node`` given, ``delayBinding`` true):
    see the module docstring. ``requested_class`` is the claim's class, ``volumes`` the
    candidates (that class's PVs), ``excluded`` the PV names already chosen for the pod's
    other claims, ``assumed`` the claim references this session gave PVs (as upstream's assume
    cache holds them). ``check_affinity=False``: the candidates are known to reach the node."""
    smallest: PersistentVolume | None = None
    for pv in volumes:
        if pv.name in excluded:
            continue
        ref = assumed.get(pv.name, pv.claim_ref)
        bound = _bound_to(ref, pvc)
        if ref is not None and not bound:
            continue
        if pv.capacity < pvc.request or pv.volume_mode != pvc.volume_mode or pv.deleting:
            continue
        affinity_ok = not check_affinity or volume_node_affinity_matches(pv, node_name, labels)
        if bound:
            return pv if affinity_ok else None
        if pv.phase != "Available":
            continue
        if pvc.selector is not None and not pvc.selector.matches(pv.labels):
            continue
        if pv.storage_class != requested_class or not affinity_ok:
            continue
        if not pvc.access_modes <= pv.access_modes:
            continue
        if smallest is None or pv.capacity < smallest.capacity:
            smallest = pv
    return smallest
