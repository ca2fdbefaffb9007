"""Volume binding in the predicates plugin (kube-scheduler ``volumebinding``, as upstream's predicates uses it).

Per pod with claims (``Pod.claims``; a pod without any takes none of these paths), in a
session:

* **PreFilter** (:meth:`VolumeBinding.pod_claims`, upstream ``GetPodVolumeClaims``): each claim
  must exist, not be being deleted, and (a generic ephemeral volume's) be owned by the pod; a
  claim is *bound* when it names its volume and carries the PV controller's bind-completed
  annotation, *delayed* when unbound and its class is ``WaitForFirstConsumer``, *immediate*
  otherwise. An immediate unbound claim keeps the pod waiting on every node ("pod has unbound
  immediate PersistentVolumeClaims"); these failures are UnschedulableAndUnresolvable.
* **Filter** (:meth:`VolumeBinding.find`, upstream ``FindPodVolumes``) on one node: every bound
  claim's PV must exist and reach the node (its node affinity); the delayed claims, smallest
  request first, each take the smallest matching available PV on the node
  (:func:`pyvolcano.api.storage.find_matching_volume`), or else must be provisionable there:
  the class has a provisioner other than ``kubernetes.io/no-provisioner``, its
  ``allowedTopologies`` admit the node, and where the CSI driver publishes capacity a
  ``CSIStorageCapacity`` of the class that reaches the node is large enough. A claim whose
  ``selected-node`` annotation names another node fails at once. The reasons are upstream's,
  all UnschedulableAndUnresolvable.
* **Reserve** (the allocate event, upstream ``AssumePodVolumes``): the PVs chosen on the
  task's node are *assumed* for the session (another pod's filter no longer sees them free;
  a pod sharing the claim sees the PV pre-bound to it), the claims to provision get the node;
  the task's bind context carries the :class:`VolumeBindings`. Deallocate reverts both.
* **PreBind** (:class:`VolumeBinder`, upstream ``BindPodVolumes``): the PV updates (claim
  reference, bound-by-controller annotation), then the claims' ``selected-node`` annotations,
  before the pod's bind; rollback undoes what the API server still shows as ours.

Candidate PVs are found per node through an index: a class's PVs by the nodes their node
affinity reaches (a local volume's by hostname label, any other affinity tested once against
every node and kept until nodes change), so that a filter call costs the PVs of the node, not of
the cluster. A pod whose only claim is one unbound WaitForFirstConsumer claim without a selector
(the common case) is filtered in one vectorised pass over its class (:class:`ClassTable`): the
nodes with a free PV that fits pass, as the search would find one there; the others fail, or,
when the class has a provisioner, are searched node by node.

Upstream waits in PreBind until the PV controller has bound every claim
(``volumebinding.bindTimeoutSeconds``); here the pod is bound once the API server took the
volume writes, and the kubelet waits for the claims (docs/differences.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from pyvolcano.api.node import NodeInfo
from pyvolcano.api.storage import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    ClaimRef,
    PersistentVolume,
    PersistentVolumeClaim,
    VolumeBindings,
    find_matching_volume,
    topology_matches,
    volume_node_affinity_matches,
)
from pyvolcano.api.task import TaskInfo
from pyvolcano.api.unschedule import Code, Status
from pyvolcano.cache.memo import VOLUME_AFFINITY_NODES
from pyvolcano.framework.prebind import BindTarget, ObjectKey, PreBindError
from pyvolcano.store.base import Conflict, NotFound, Store, StoreError

if TYPE_CHECKING:
    from pyvolcano.cache.cache import SchedulerCache
    from pyvolcano.cache.volumes import VolumeState
    from pyvolcano.framework.session import Session
    from pyvolcano.framework.session_plugins import NodeFailures

__all__ = [
    "REASON_BIND_CONFLICT",
    "REASON_NODE_CONFLICT",
    "REASON_NOT_ENOUGH_SPACE",
    "REASON_PV_NOT_EXIST",
    "REASON_UNBOUND_IMMEDIATE",
    "PodClaims",
    "VolumeBinder",
    "VolumeBinding",
]

REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"

NAME = "VolumeBinding"  # the pre-binder and bind-context key (kube-scheduler's plugin name)
_HOSTNAME = "kubernetes.io/hostname"


@dataclass(frozen=True, slots=True)
class PodClaims:
    """A pod's claims as PreFilter sorts them (upstream ``PodVolumeClaims``)."""

    bound: tuple[tuple[PersistentVolumeClaim, PersistentVolume | None], ...] = ()
    # unbound WaitForFirstConsumer claims with their class, smallest request first
    delayed: tuple[tuple[PersistentVolumeClaim, str], ...] = ()
    failure: Status | None = None


@dataclass(frozen=True, slots=True)
class Found:
    reasons: tuple[str, ...]
    bindings: VolumeBindings | None = None


def _unresolvable(reason: str) -> Status:
    return Status(Code.UnschedulableAndUnresolvable, reason)


_MODE_BITS = {"ReadWriteOnce": 1, "ReadOnlyMany": 2, "ReadWriteMany": 4, "ReadWriteOncePod": 8}


def _mode_bits(modes: frozenset[str]) -> int:
    return sum(_MODE_BITS.get(m, 0) for m in modes)


class ClassTable:
    """A class's PVs as arrays, for the filter's one-claim fast path: which nodes have a free PV
    that fits a claim, in one vectorised pass over the class instead of a search per node.

    ``free`` is the cache's state (no claim reference, Available, not being deleted) less the
    PVs this session assumed; ``pairs`` list every (PV, node row) its node affinity reaches.
    """

    def __init__(self, pvs: list[PersistentVolume], reach: list[frozenset[int] | None]):
        self.pos = {pv.name: i for i, pv in enumerate(pvs)}
        self.capacity = np.array([pv.capacity for pv in pvs], dtype=np.float64)
        self.modes = np.array([_mode_bits(pv.access_modes) for pv in pvs], dtype=np.int64)
        self.block = np.array([pv.volume_mode == "Block" for pv in pvs], dtype=bool)
        self.base_free = np.array([pv.claim_ref is None and pv.phase == "Available" and not pv.deleting
                                   for pv in pvs], dtype=bool)
        self.free = self.base_free.copy()
        self.anywhere = np.array([r is None for r in reach], dtype=bool)
        pair_pv: list[int] = []
        pair_node: list[int] = []
        for i, r in enumerate(reach):
            for row in sorted(r or ()):
                pair_pv.append(i)
                pair_node.append(row)
        self.pair_pv = np.array(pair_pv, dtype=np.int64)
        self.pair_node = np.array(pair_node, dtype=np.int64)
        # claim key -> the PVs of the class whose claim reference names it (pre-bound)
        self.prebound: dict[str, list[str]] = {}
        for pv in pvs:
            if pv.claim_ref is not None:
                self.prebound.setdefault(pv.claim_ref.key, []).append(pv.name)

    def take(self, pv: str) -> None:
        i = self.pos.get(pv)
        if i is not None:
            self.free[i] = False

    def give_back(self, pv: str) -> None:
        i = self.pos.get(pv)
        if i is not None:
            self.free[i] = self.base_free[i]

    def rows_with_free_pv(self, pvc: PersistentVolumeClaim, n_rows: int) -> np.ndarray:
        """A mask over node rows: where a free PV of the class fits ``pvc`` (no selector)."""
        need = _mode_bits(pvc.access_modes)
        eligible = (self.free & (self.capacity >= pvc.request) & ((self.modes & need) == need)
                    & (self.block == (pvc.volume_mode == "Block")))
        mask = np.zeros(n_rows, dtype=bool)
        if (eligible & self.anywhere).any():
            mask[:] = True
        elif len(self.pair_pv):
            mask[self.pair_node[eligible[self.pair_pv]]] = True
        return mask


class VolumeBinding:
    """One session's volume binding: its PreFilter memo, candidate index and assumptions."""

    # The filter's one-claim fast path (ClassTable); False takes the per-node search for every
    # pod (the form the equivalence tests compare with).
    fast = True

    def __init__(self, ssn: Session, ignored_provisioners: frozenset[str]):
        self.ssn = ssn
        self.volumes: VolumeState = ssn.cache.volumes
        self.ignored = ignored_provisioners
        self.assumed_pv: dict[str, ClaimRef] = {}  # PV name -> the claim this session gave it
        self.assumed_node: dict[str, str] = {}  # claim key -> node this session gave its provisioner
        self.reserved: dict[str, VolumeBindings] = {}  # task uid -> what its allocation assumed
        self._claims: dict[str, PodClaims] = {}
        self._index: dict[str, tuple[dict[str, list[PersistentVolume]], list[PersistentVolume]]] = {}
        self._tables: dict[str, ClassTable] = {}
        self._rows: dict[str, int] | None = None
        self._assumed_claims: dict[str, int] = {}  # claim key -> PVs this session assumed for it
        self._pv_holders: dict[str, int] = {}  # PV name -> reserved tasks holding it (a shared claim's pods)
        self._node_holders: dict[str, int] = {}  # claim key -> reserved tasks asking it provisioned
        self._statuses: dict[str, Status] = {}

    # ------------------------------------------------------------------ PreFilter
    def pod_claims(self, task: TaskInfo) -> PodClaims:
        got = self._claims.get(task.uid)
        if got is None:
            got = self._claims[task.uid] = self._sort_claims(task)
        return got

    def _sort_claims(self, task: TaskInfo) -> PodClaims:
        v = self.volumes
        pod = task.pod
        bound: list[tuple[PersistentVolumeClaim, PersistentVolume | None]] = []
        delayed: list[tuple[PersistentVolumeClaim, str]] = []
        immediate = False
        for name in pod.claims:
            pvc = v.pvcs.get(f"{pod.namespace}/{name}")
            if pvc is None:
                if name in pod.ephemeral_claims:
                    return PodClaims(failure=_unresolvable(
                        f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"'))
                return PodClaims(failure=_unresolvable(f'persistentvolumeclaim "{name}" not found'))
            if pvc.deleting:
                return PodClaims(failure=_unresolvable(f'persistentvolumeclaim "{name}" is being deleted'))
            if name in pod.ephemeral_claims and pvc.owner_pod_uid and pvc.owner_pod_uid != pod.uid:
                return PodClaims(failure=_unresolvable(
                    f"PVC {pod.namespace}/{name} was not created for pod {pod.namespace}/{pod.name} "
                    "(pod is not owner)"))
            if pvc.fully_bound:
                bound.append((pvc, v.pvs.get(pvc.volume_name)))
                continue
            cls = v.class_of(pvc)
            sc = v.classes.get(cls) if cls else None
            # Upstream IsDelayBindingMode: no class, or a class that does not exist, binds at once;
            # a claim that names its volume but is not yet bound is treated as immediate.
            if sc is not None and sc.delays_binding and not pvc.volume_name:
                delayed.append((pvc, cls))
            else:
                immediate = True
        if immediate:
            return PodClaims(failure=_unresolvable(REASON_UNBOUND_IMMEDIATE))
        delayed.sort(key=lambda pc: pc[0].request)
        return PodClaims(tuple(bound), tuple(delayed))

    # ------------------------------------------------------------------ candidates
    def _affinity_nodes(self, pv: PersistentVolume) -> frozenset[str]:
        """The nodes ``pv``'s required node affinity reaches (memoised by affinity until nodes change)."""
        ssn = self.ssn
        key = (ssn.cache.node_generation, len(ssn.node_list))
        memo = ssn.memo.kept(VOLUME_AFFINITY_NODES, key)
        if memo is None:
            hosts: dict[str, list[str]] = {}
            for n in ssn.node_list:
                h = n.labels.get(_HOSTNAME)
                if h is not None:
                    hosts.setdefault(h, []).append(n.name)
            memo = ssn.memo.keep(VOLUME_AFFINITY_NODES, key, (hosts, {}))
        by_hostname, known = memo
        got = known.get(pv.affinity_key)
        if got is None:
            if pv.hostname_only:
                got = frozenset(n for h in pv.pinned_to for n in by_hostname.get(h, ()))
            else:
                got = frozenset(n.name for n in ssn.node_list if volume_node_affinity_matches(pv, n.name, n.labels))
            known[pv.affinity_key] = got
        return got

    def _class_index(self, cls: str) -> tuple[dict[str, list[PersistentVolume]], list[PersistentVolume]]:
        got = self._index.get(cls)
        if got is None:
            by_node: dict[str, list[PersistentVolume]] = {}
            anywhere: list[PersistentVolume] = []
            for pv in self.volumes.pvs_of_class(cls):
                if pv.node_affinity is None:
                    anywhere.append(pv)
                    continue
                for n in self._affinity_nodes(pv):
                    by_node.setdefault(n, []).append(pv)
            got = self._index[cls] = (by_node, anywhere)
        return got

    def _candidates(self, cls: str, node: str) -> list[PersistentVolume]:
        by_node, anywhere = self._class_index(cls)
        local = by_node.get(node, [])
        if not anywhere:
            return local
        if not local:
            return anywhere
        return sorted([*local, *anywhere], key=lambda p: p.name)

    def _table(self, cls: str) -> ClassTable:
        got = self._tables.get(cls)
        if got is None:
            rows = self._node_rows()
            pvs = self.volumes.pvs_of_class(cls)
            reach = [None if pv.node_affinity is None else frozenset(rows[n] for n in self._affinity_nodes(pv)
                                                                      if n in rows) for pv in pvs]
            got = self._tables[cls] = ClassTable(pvs, reach)
            for name, ref in self.assumed_pv.items():
                if name in got.pos:
                    got.take(name)
                    got.prebound.setdefault(ref.key, []).append(name)
        return got

    def _node_rows(self) -> dict[str, int]:
        rows = self._rows
        if rows is None:
            rows = self._rows = {n.name: i for i, n in enumerate(self.ssn.node_list)}
        return rows

    def _fast_rows(self, claims: PodClaims) -> tuple[np.ndarray, bool] | None:
        """For a pod whose only claim is one delayed claim without a selector, not pre-bound and
        not being provisioned: the node rows where a free PV fits it, and whether the class can
        provision (then the other rows need the per-node check). None: take the per-node path."""
        if claims.bound or len(claims.delayed) != 1:
            return None
        pvc, cls = claims.delayed[0]
        if pvc.selector is not None or ANN_SELECTED_NODE in pvc.annotations or pvc.key in self.assumed_node:
            return None
        table = self._table(cls)
        if pvc.key in table.prebound or pvc.key in self._assumed_claims:
            return None
        sc = self.volumes.classes.get(cls)
        return (table.rows_with_free_pv(pvc, len(self.ssn.node_list)),
                sc is not None and self._provisioner(sc.provisioner))

    def _provisioner(self, provisioner: str) -> bool:
        return bool(provisioner) and provisioner != NOT_SUPPORTED_PROVISIONER

    # ------------------------------------------------------------------ Filter
    def find(self, claims: PodClaims, node: NodeInfo) -> Found:
        """Upstream ``FindPodVolumes`` of a pod whose PreFilter passed, on ``node``."""
        bound_ok = pvs_found = unbound_ok = enough = True
        for _pvc, pv in claims.bound:
            if pv is None:
                pvs_found = False
            elif not volume_node_affinity_matches(pv, node.name, node.labels):
                bound_ok = False
        static: list[tuple[str, ClaimRef]] = []
        provisions: list[ClaimRef] = []
        if claims.delayed:
            unbound_ok, enough = self._find_unbound(claims, node, static, provisions)
        reasons = []
        if not bound_ok:
            reasons.append(REASON_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(REASON_BIND_CONFLICT)
        if not enough:
            reasons.append(REASON_NOT_ENOUGH_SPACE)
        if not pvs_found:
            reasons.append(REASON_PV_NOT_EXIST)
        if reasons:
            return Found(tuple(reasons))
        return Found((), VolumeBindings(node.name, tuple(static), tuple(provisions)))

    def _find_unbound(self, claims: PodClaims, node: NodeInfo, static: list[tuple[str, ClaimRef]],
                      provisions: list[ClaimRef]) -> tuple[bool, bool]:
        to_provision: list[tuple[PersistentVolumeClaim, str]] = []
        to_match: list[tuple[PersistentVolumeClaim, str]] = []
        for pvc, cls in claims.delayed:
            selected = self.assumed_node.get(pvc.key) or pvc.annotations.get(ANN_SELECTED_NODE)
            if selected:
                if selected != node.name:
                    return False, True  # upstream's fast path: provisioning already asked elsewhere
                to_provision.append((pvc, cls))
            else:
                to_match.append((pvc, cls))
        chosen: dict[str, str] = {}
        for pvc, cls in to_match:
            pv = find_matching_volume(pvc, cls, self._candidates(cls, node.name), node.name, node.labels, chosen,
                                      self.assumed_pv, check_affinity=False)
            if pv is None:
                to_provision.append((pvc, cls))
                continue
            chosen[pv.name] = pvc.key
            static.append((pv.name, ClaimRef(pvc.namespace, pvc.name, pvc.uid)))
        unbound_ok = enough = True
        for pvc, cls in to_provision:
            sc = self.volumes.classes.get(cls)
            if sc is None or not self._provisioner(sc.provisioner):
                return False, True
            if not topology_matches(sc.allowed_topologies, node.labels):
                return False, True
            if not self._capacity_suffices(sc.provisioner, cls, pvc, node):
                return True, False
            provisions.append(ClaimRef(pvc.namespace, pvc.name, pvc.uid))
        return unbound_ok, enough

    def _capacity_suffices(self, provisioner: str, cls: str, pvc: PersistentVolumeClaim, node: NodeInfo) -> bool:
        """Upstream ``hasEnoughCapacity``: only a driver that publishes capacity is checked."""
        driver = self.volumes.csi_drivers.get(provisioner)
        if driver is None or not driver.storage_capacity:
            return True
        for cap in self.volumes.capacities.values():
            if cap.storage_class != cls or cap.node_topology is None or not cap.node_topology.matches(node.labels):
                continue
            limit = cap.maximum_volume_size if cap.maximum_volume_size is not None else cap.capacity
            if limit is not None and limit >= pvc.request:
                return True
        return False

    def filter(self, task: TaskInfo, idx: np.ndarray, live: np.ndarray) -> NodeFailures:
        """The failures of ``task`` on the ``live`` nodes of ``idx`` (vectorised over the index)."""
        claims = self.pod_claims(task)
        if claims.failure is not None:
            return [(claims.failure, live.copy())]
        nodes = self.ssn.node_list
        by_reasons: dict[tuple[str, ...], np.ndarray] = {}
        outside: np.ndarray | None = None
        fast = self._fast_rows(claims) if self.fast else None
        if fast is not None:
            rows, provisions = fast
            fits = rows[idx]
            # Where a free PV fits, find() would bind it: the node passes. Elsewhere only a
            # provisioner could help; without one the node fails as find() would fail it.
            live = live & ~fits
            if not provisions:
                outside, live = live, np.zeros(len(idx), dtype=bool)
        for k in np.flatnonzero(live):
            found = self.find(claims, nodes[int(idx[k])])
            if found.reasons:
                mask = by_reasons.get(found.reasons)
                if mask is None:
                    mask = by_reasons[found.reasons] = np.zeros(len(idx), dtype=bool)
                mask[k] = True
        out: NodeFailures = []
        if outside is not None and outside.any():
            out.append((self._status((REASON_BIND_CONFLICT,)), outside))
        for reasons, mask in by_reasons.items():
            out.append((self._status(reasons), mask))
        return out

    def _status(self, reasons: tuple[str, ...]) -> Status:
        # Upstream appends every reason to one status, whose message (joined with ", ") is
        # the reason upstream's predicates plugin records.
        key = "\x00".join(reasons)
        st = self._statuses.get(key)
        if st is None:
            st = self._statuses[key] = _unresolvable(", ".join(reasons))
        return st

    # ------------------------------------------------------------------ Reserve / Unreserve
    def reserve(self, task: TaskInfo) -> bool:
        """Assume the volumes of ``task`` on its node; False when they do not fit there."""
        claims = self.pod_claims(task)
        if claims.failure is not None:
            return False
        node = self.ssn.nodes.get(task.node_name)
        if node is None:
            return False
        found = self.find(claims, node)
        if found.bindings is None:
            return False
        b = found.bindings
        for pv, ref in b.static:
            self.assumed_pv[pv] = ref
            self._pv_holders[pv] = self._pv_holders.get(pv, 0) + 1
            _count(self._assumed_claims, ref.key, +1)
            table = self._table_of(pv)
            if table is not None:
                table.take(pv)
        for ref in b.provisions:
            self.assumed_node[ref.key] = b.node
            _count(self._node_holders, ref.key, +1)
        self.reserved[task.uid] = b
        if b.static or b.provisions:
            self.ssn.bind_contexts.set(task, NAME, b)
        return True

    def unreserve(self, task: TaskInfo) -> None:
        b = self.reserved.pop(task.uid, None)
        if b is None:
            return
        for pv, ref in b.static:
            _count(self._assumed_claims, ref.key, -1)
            if _count(self._pv_holders, pv, -1) == 0:
                self.assumed_pv.pop(pv, None)
                table = self._table_of(pv)
                if table is not None:
                    table.give_back(pv)
        for ref in b.provisions:
            if _count(self._node_holders, ref.key, -1) == 0:
                self.assumed_node.pop(ref.key, None)
        self.ssn.bind_contexts.drop(task, NAME)

    def _table_of(self, pv: str) -> ClassTable | None:
        got = self.volumes.pvs.get(pv)
        return None if got is None else self._tables.get(got.storage_class)


def _count(counts: dict[str, int], key: str, step: int) -> int:
    """Move ``counts[key]`` by ``step``; a count that reaches 0 is removed. Returns the new count."""
    n = counts.get(key, 0) + step
    if n > 0:
        counts[key] = n
    else:
        counts.pop(key, None)
    return max(n, 0)


def _claim_ref_dict(ref: ClaimRef) -> dict[str, Any]:
    out = {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": ref.namespace, "name": ref.name}
    if ref.uid:
        out["uid"] = ref.uid
    return out


class VolumeBinder:
    """Volume binding's pre-bind step (upstream ``BindPodVolumes`` without the wait; see the module doc)."""

    name = NAME

    def assume(self, cache: SchedulerCache, target: BindTarget, extension: Any) -> None:
        b: VolumeBindings = extension
        for pv, ref in b.static:
            cache.volumes.assume_claim_ref(pv, ref)
        for ref in b.provisions:
            cache.volumes.assume_selected_node(ref.key, b.node)

    def pre_bind(self, store: Store, target: BindTarget, extension: Any) -> None:
        b: VolumeBindings = extension
        try:
            for pv, ref in b.static:
                self._bind_pv(store, pv, ref)
            for ref in b.provisions:
                self._select_node(store, ref, b.node)
        except (StoreError, PreBindError) as e:
            self.rollback(store, target, extension)
            raise PreBindError(f"binding volumes: {e}") from None

    @staticmethod
    def _bind_pv(store: Store, name: str, ref: ClaimRef) -> None:
        obj = store.get("PersistentVolume", None, name)
        spec = obj.setdefault("spec", {})
        current = spec.get("claimRef")
        if current:
            if current.get("namespace") == ref.namespace and current.get("name") == ref.name:
                return  # pre-bound to this claim already
            raise PreBindError(f'PersistentVolume "{name}" is bound to another claim '
                               f'{current.get("namespace")}/{current.get("name")}')
        spec["claimRef"] = _claim_ref_dict(ref)
        obj.setdefault("metadata", {}).setdefault("annotations", {})[ANN_BOUND_BY_CONTROLLER] = "yes"
        store.update(obj)

    @staticmethod
    def _select_node(store: Store, ref: ClaimRef, node: str) -> None:
        obj = store.get("PersistentVolumeClaim", ref.namespace, ref.name)
        md = obj.setdefault("metadata", {})
        anns = md.setdefault("annotations", {})
        if (obj.get("spec") or {}).get("volumeName") or anns.get(ANN_SELECTED_NODE) == node:
            return
        anns[ANN_SELECTED_NODE] = node
        store.update(obj)

    def rollback(self, store: Store, target: BindTarget, extension: Any) -> None:
        """Take back the claim references and selected nodes the API server still shows as
        written for this pod and not yet acted on (a PV the PV controller bound stays bound)."""
        b: VolumeBindings = extension
        for pv, ref in b.static:
            _retry(lambda pv=pv, ref=ref: self._unbind_pv(store, pv, ref))
        for ref in b.provisions:
            _retry(lambda ref=ref: self._unselect(store, ref, b.node))

    @staticmethod
    def _unbind_pv(store: Store, name: str, ref: ClaimRef) -> None:
        obj = store.get("PersistentVolume", None, name)
        current = (obj.get("spec") or {}).get("claimRef") or {}
        if (current.get("namespace"), current.get("name")) != (ref.namespace, ref.name):
            return
        if (obj.get("status") or {}).get("phase") == "Bound":
            return
        del obj["spec"]["claimRef"]
        (obj.get("metadata") or {}).get("annotations", {}).pop(ANN_BOUND_BY_CONTROLLER, None)
        store.update(obj)

    @staticmethod
    def _unselect(store: Store, ref: ClaimRef, node: str) -> None:
        obj = store.get("PersistentVolumeClaim", ref.namespace, ref.name)
        anns = (obj.get("metadata") or {}).get("annotations") or {}
        if anns.get(ANN_SELECTED_NODE) != node or (obj.get("spec") or {}).get("volumeName"):
            return
        del anns[ANN_SELECTED_NODE]
        store.update(obj)

    def stale(self, extension: Any) -> list[ObjectKey]:
        b: VolumeBindings = extension
        out: list[ObjectKey] = [("PersistentVolume", None, pv) for pv, _ref in b.static]
        out.extend(("PersistentVolumeClaim", ref.namespace, ref.name) for ref in b.provisions)
        return out


def _retry(write: Any, attempts: int = 3) -> None:
    """A rollback write, tried again on a conflict (someone else updated the object meanwhile)."""
    for _ in range(attempts):
        try:
            write()
            return
        except NotFound:
            return
        except Conflict:
            continue
