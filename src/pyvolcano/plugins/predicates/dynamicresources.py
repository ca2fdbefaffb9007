"""kube-scheduler's DynamicResources plugin inside predicates (upstream ``plugins/dynamicresources``).

Volcano's predicates plugin runs kube-scheduler's DynamicResources plugin (PreFilter, Filter,
Reserve, Unreserve, PreBind) for pods with ``spec.resourceClaims``; this module is that plugin
over the scheduler cache's DRA state (:mod:`pyvolcano.cache.dra`):

* **PreFilter** (:meth:`DynamicResources.pre_filter`): each pod claim is resolved to its
  ResourceClaim (``resourceClaimName``, or the claim the ResourceClaim controller generated
  from ``resourceClaimTemplateName`` and wrote into ``status.resourceClaimStatuses``; a
  generated claim must be owned by the pod); a missing claim, a claim being deleted, an
  allocated claim reserved for 256 other consumers, a claim another pod's allocation is in
  flight for, and a request whose DeviceClass does not exist make the pod unschedulable
  everywhere (upstream's messages). The unallocated claims get an
  :class:`~pyvolcano.api.dra.allocator.Allocator`.
* **Filter** (:meth:`DynamicResources.filter`): on each node an allocated claim's
  ``nodeSelector`` must match ("resourceclaim not available on the node") and the allocator
  must find devices for every unallocated claim ("cannot allocate all claims"); a claim the
  allocator refuses as written (a CEL error, ...) is an ``Error`` status, which stops the
  pod. The allocations found are kept per node for Reserve.
* **Reserve** (the allocate event): the claims are allocated on the chosen node in the cache
  (assumed, in flight: no other pod gets their devices), and the task's bind context gets the
  claims to write. **Unreserve** (deallocate) restores them.
* **PreBind** (:class:`ClaimBinder`, a pre-binder of :mod:`pyvolcano.framework.prebind`): before
  the pod's bind, each claim gets the finalizer ``resource.kubernetes.io/delete-protection``
  (an update) and its allocation and a ``reservedFor`` entry for the pod (a status update);
  a claim already allocated only gets the reservation. A claim deleted or allocated by
  someone else meanwhile fails the bind; rollback removes the pod's reservation, and the
  allocation it wrote while no other consumer holds the claim.

Nothing here runs for a pod without ``resourceClaims``: the predicate looks at one tuple.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from pyvolcano.api.dra.allocator import AllocationError, Allocator, NodeAllocationError
from pyvolcano.api.dra.allocator import node_selector_matches_node as selector_matches
from pyvolcano.api.dra.resourceclaim import ClaimNameError, claim_name
from pyvolcano.api.dra.types import (
    FINALIZER,
    AllocationResult,
    ClaimStatus,
    ResourceClaim,
)
from pyvolcano.api.task import TaskInfo
from pyvolcano.api.unschedule import DRA_CANNOT_ALLOCATE, DRA_NOT_AVAILABLE, Code, Status
from pyvolcano.framework.prebind import BindTarget, ObjectKey, PreBindError
from pyvolcano.store.base import Conflict, NotFound, StoreError

if TYPE_CHECKING:
    from pyvolcano.cache.cache import SchedulerCache
    from pyvolcano.cache.dra import DraState
    from pyvolcano.framework.session import Session
    from pyvolcano.framework.session_plugins import NodeFailures
    from pyvolcano.store.base import Store

__all__ = ["NAME", "REASON_CANNOT_ALLOCATE", "REASON_NOT_AVAILABLE", "ClaimBinder", "ClaimBindings",
           "DynamicResources"]

NAME: Final = "DynamicResources"
REASON_NOT_AVAILABLE: Final = DRA_NOT_AVAILABLE
REASON_CANNOT_ALLOCATE: Final = DRA_CANNOT_ALLOCATE
_UNRESOLVABLE = Code.UnschedulableAndUnresolvable


@dataclass(slots=True)
class _PodState:
    """Upstream's ``stateData``: the pod's claims and what Filter found per node."""

    claims: list[ResourceClaim]
    available_on: list[Mapping[str, Any] | None]  # an allocated claim's nodeSelector
    to_allocate: list[int]  # indices into claims
    allocator: Allocator | None
    signature: str = ""  # the specs of the claims to allocate: pods with equal ones share verdicts


@dataclass(frozen=True, slots=True)
class ClaimBindings:
    """A task's bind-context extension: each claim as read, and the allocation to write (or None)."""

    pod_uid: str
    claims: tuple[tuple[ResourceClaim, AllocationResult | None], ...]


class DynamicResources:
    """The plugin's state for one session (see the module docstring)."""

    def __init__(self, ssn: Session):
        self.ssn = ssn
        self.dra: DraState = ssn.cache.dra
        self._states: dict[str, _PodState | Status | None] = {}

    # ------------------------------------------------------------------ PreFilter
    def pre_filter(self, task: TaskInfo) -> Status | None:
        """A status that makes the pod unschedulable on every node, or None."""
        got = self._prepare(task)
        return got if isinstance(got, Status) else None

    def _prepare(self, task: TaskInfo) -> _PodState | Status | None:
        got = self._build(task)
        self._states[task.uid] = got
        return got

    def _build(self, task: TaskInfo) -> _PodState | Status | None:
        pod = task.pod
        dra = self.dra
        claims: list[ResourceClaim] = []
        for pc in pod.resource_claims:
            try:
                name, check_owner = claim_name(pod, pc)
            except ClaimNameError as e:
                return _unschedulable(str(e))
            if not name:
                continue
            claim = dra.claim(f"{pod.namespace}/{name}")
            if claim is None:
                return _unschedulable(f'resourceclaim.resource.k8s.io "{name}" not found')
            if claim.deletion_timestamp is not None:
                return _unschedulable(f'resourceclaim "{name}" is being deleted')
            if check_owner and claim.owner_pod_uid != pod.uid:
                return _unschedulable(f"ResourceClaim {claim.key} was not created for pod {pod.namespace}/{pod.name} "
                                      "(pod is not owner)")
            claims.append(claim)
        if not claims:
            return None
        available_on: list[Mapping[str, Any] | None] = []
        to_allocate: list[int] = []
        for i, claim in enumerate(claims):
            allocation = claim.allocation
            if allocation is not None:
                if not claim.can_be_reserved() and not claim.reserved_for_uid(pod.uid):
                    return _unschedulable("resourceclaim in use")
                available_on.append(allocation.node_selector)
                continue
            available_on.append(None)
            if claim.uid in dra.in_flight:
                return _unschedulable(f"resource claim {claim.key} is in the process of being allocated")
            for request in claim.requests:
                for sub in (request.first_available or (request.exactly,)):
                    assert sub is not None
                    full = f"{request.name}/{sub.name}" if request.first_available else request.name
                    if sub.device_class_name not in dra.classes:
                        return _unschedulable(f"request {full}: device class {sub.device_class_name} does not exist")
            to_allocate.append(i)
        allocator = None
        signature = ""
        if to_allocate:
            pending = [claims[i] for i in to_allocate]
            allocator = Allocator(pending, dra.classes, dra.in_use, dra.selectors, dra.memo)
            signature = repr([(c.requests, c.constraints, c.config) for c in pending])
        return _PodState(claims, available_on, to_allocate, allocator, signature)

    # ------------------------------------------------------------------ Filter
    def filter(self, task: TaskInfo, idx: np.ndarray, live: np.ndarray) -> NodeFailures:
        state = self._states[task.uid] if task.uid in self._states else self._prepare(task)
        if state is None:
            return []
        if isinstance(state, Status):
            return [(state, live.copy())]
        out: NodeFailures = []
        live = live.copy()
        if any(sel is not None for sel in state.available_on):
            # an allocated claim's devices are reachable only from the nodes its selector names
            groups: dict[Status, np.ndarray] = {}
            for k in np.flatnonzero(live):
                node = self.ssn.node_list[int(idx[k])]
                st = self._available(state, node.name, node.labels)
                if st is not None:
                    groups.setdefault(st, np.zeros(len(idx), dtype=bool))[k] = True
            for st, mask in groups.items():
                out.append((st, mask))
                live &= ~mask
        if state.allocator is None:
            return out
        verdicts = self._verdicts(state)
        rows = idx[live]
        for row in rows[verdicts.codes[rows] == _UNKNOWN_ROW]:
            self._evaluate(state, verdicts, int(row))
        codes = np.where(live, verdicts.codes[idx], _FITS)
        cannot = codes == _CANNOT
        if cannot.any():
            out.append((_UNSCHEDULABLE_CANNOT_ALLOCATE, cannot))
        other = np.flatnonzero(codes == _OTHER)
        if len(other):
            by_status: dict[Status, np.ndarray] = {}
            for k in other:
                st = verdicts.statuses[int(idx[k])]
                by_status.setdefault(st, np.zeros(len(idx), dtype=bool))[k] = True
            out.extend(by_status.items())
        return out

    @staticmethod
    def _available(state: _PodState, node_name: str, labels: Mapping[str, str]) -> Status | None:
        for selector in state.available_on:
            if selector is not None:
                try:
                    if not selector_matches(selector, node_name, labels):
                        return _unschedulable(REASON_NOT_AVAILABLE)
                except AllocationError as e:
                    return Status(Code.Error, str(e))
        return None

    def _verdicts(self, state: _PodState) -> _Verdicts:
        """The allocator's verdicts for claims like ``state``'s, per node row, brought up to date
        with the nodes whose devices changed since they were last read."""
        dra, ssn = self.dra, self.ssn
        n = len(ssn.node_list)
        key = (dra.slice_generation, ssn.cache.node_generation)
        got = dra.verdicts.get(state.signature)
        v = got if isinstance(got, _Verdicts) and got.key == key else None
        if v is None:
            v = _Verdicts(key, len(dra.changes), np.zeros(n, dtype=np.int8))
            dra.verdicts[state.signature] = v
        else:
            changed = dra.changed_since(v.position)
            if changed is None or "*" in changed:
                v.reset(n)
            else:
                for name in set(changed):
                    node = ssn.nodes.get(name)
                    if node is not None and node.index < len(v.codes):
                        v.forget(node.index)
            v.position = len(dra.changes)
            for row in list(v.pod_specific):  # another pod's error, naming its claim
                v.forget(row)
        if len(v.codes) < n:
            v.codes = np.concatenate([v.codes, np.zeros(n - len(v.codes), dtype=np.int8)])
        return v

    def _evaluate(self, state: _PodState, v: _Verdicts, row: int) -> None:
        assert state.allocator is not None
        node = self.ssn.node_list[row]
        try:
            found = state.allocator.allocate(self.dra.pools_for(node.name, node.labels, self.ssn.cache.node_generation))
        except NodeAllocationError as e:
            v.codes[row], v.statuses[row] = _OTHER, _unschedulable(str(e))
            return
        except AllocationError as e:  # names the claim: kept for this pod only
            v.codes[row], v.statuses[row] = _OTHER, Status(Code.Error, str(e))
            v.pod_specific.add(row)
            return
        if found is None:
            v.codes[row] = _CANNOT
        else:
            v.codes[row], v.results[row] = _FITS, found

    def _allocation_on(self, state: _PodState, node_name: str) -> list[AllocationResult] | None:
        node = self.ssn.nodes.get(node_name)
        if node is None or self._available(state, node.name, node.labels) is not None:
            return None
        if state.allocator is None:
            return []
        v = self._verdicts(state)
        if v.codes[node.index] == _UNKNOWN_ROW:
            self._evaluate(state, v, node.index)
        return v.results.get(node.index) if v.codes[node.index] == _FITS else None

    # ------------------------------------------------------------------ Reserve / Unreserve
    def reserve(self, task: TaskInfo) -> str | None:
        """Allocate the task's claims on its node in the cache; an error text when it cannot."""
        state = self._prepare(task)
        if state is None:
            return None
        if isinstance(state, Status):
            return state.reason
        found = self._allocation_on(state, task.node_name)
        if found is None or len(found) != len(state.to_allocate):
            return f"claim allocation not found for node {task.node_name}"
        planned: list[tuple[ResourceClaim, AllocationResult | None]] = []
        allocated = dict(zip(state.to_allocate, found, strict=True))
        for i, claim in enumerate(state.claims):
            allocation = allocated.get(i)
            if allocation is not None:
                self.dra.assume(claim.with_status(ClaimStatus(allocation, claim.status.reserved_for)))
            planned.append((claim, allocation))
        self.ssn.bind_contexts.set(task, NAME, ClaimBindings(task.uid, tuple(planned)))
        self._states.pop(task.uid, None)
        return None

    def unreserve(self, task: TaskInfo) -> None:
        got = self.ssn.bind_contexts.get(task, NAME)
        if got is None:
            return
        for claim, allocation in got.claims:
            if allocation is not None:
                self.dra.restore(claim.key, claim.uid)
        self.ssn.bind_contexts.drop(task, NAME)


def _unschedulable(reason: str) -> Status:
    return Status(_UNRESOLVABLE, reason)


_UNSCHEDULABLE_CANNOT_ALLOCATE: Final = _unschedulable(REASON_CANNOT_ALLOCATE)
_UNKNOWN_ROW, _FITS, _CANNOT, _OTHER = 0, 1, 2, 3


class _Verdicts:
    """The allocator's verdict per node row for one claim specification (see :meth:`_verdicts`)."""

    __slots__ = ("codes", "key", "pod_specific", "position", "results", "statuses")

    def __init__(self, key: tuple[int, int], position: int, codes: np.ndarray):
        self.key = key
        self.position = position
        self.codes = codes
        self.statuses: dict[int, Status] = {}
        self.results: dict[int, list[AllocationResult]] = {}
        self.pod_specific: set[int] = set()

    def reset(self, n: int) -> None:
        self.codes = np.zeros(n, dtype=np.int8)
        self.statuses.clear()
        self.results.clear()
        self.pod_specific.clear()

    def forget(self, row: int) -> None:
        self.codes[row] = _UNKNOWN_ROW
        self.statuses.pop(row, None)
        self.results.pop(row, None)
        self.pod_specific.discard(row)


# ----------------------------------------------------------------------------- PreBind


def _consumer(target: BindTarget) -> dict[str, str]:
    return {"resource": "pods", "name": target.name, "uid": target.uid}


class ClaimBinder:
    """DynamicResources' pre-bind step (upstream ``PreBind`` / ``bindClaim``, ``Unreserve``)."""

    name = NAME
    retries = 5  # upstream's retry.DefaultRetry on a conflict

    def assume(self, cache: SchedulerCache, target: BindTarget, extension: Any) -> None:
        """The allocations were assumed at Reserve; nothing more to assume."""

    def pre_bind(self, store: Store, target: BindTarget, extension: Any) -> None:
        b: ClaimBindings = extension
        for claim, allocation in b.claims:
            if claim.reserved_for_uid(target.uid):
                continue
            for attempt in range(self.retries):
                try:
                    self._bind_claim(store, target, claim, allocation)
                    break
                except Conflict:
                    if attempt == self.retries - 1:
                        raise PreBindError(f"add reservation to claim {claim.key}: conflict") from None
                except StoreError as e:
                    what = "add allocation and reservation to" if allocation is not None else "add reservation to"
                    raise PreBindError(f"{what} claim {claim.key}: {e}") from None

    @staticmethod
    def _bind_claim(store: Store, target: BindTarget, claim: ResourceClaim,
                    allocation: AllocationResult | None) -> None:
        obj = store.get("ResourceClaim", claim.namespace, claim.name)
        md = obj.setdefault("metadata", {})
        if md.get("deletionTimestamp"):
            raise PreBindError(f"claim {claim.key} got deleted in the meantime")
        status = obj.setdefault("status", {})
        if allocation is not None:
            if status.get("allocation"):
                raise PreBindError(f"claim {claim.key} got allocated elsewhere in the meantime")
            finalizers = md.setdefault("finalizers", [])
            if FINALIZER not in finalizers:
                finalizers.append(FINALIZER)
                obj = store.update(obj)
                status = obj.setdefault("status", {})
            status["allocation"] = allocation.to_dict()
        reserved = status.setdefault("reservedFor", [])
        if not any(r.get("uid") == target.uid for r in reserved):
            reserved.append(_consumer(target))
        store.update_status(obj)

    def rollback(self, store: Store, target: BindTarget, extension: Any) -> None:
        """Upstream Unreserve: the pod's reservation goes; an allocation written for this pod
        goes too while nobody else holds the claim."""
        b: ClaimBindings = extension
        for claim, allocation in b.claims:
            for _ in range(self.retries):
                try:
                    obj = store.get("ResourceClaim", claim.namespace, claim.name)
                except NotFound:
                    break
                status = obj.setdefault("status", {})
                reserved = [r for r in status.get("reservedFor") or [] if r.get("uid") != target.uid]
                changed = len(reserved) != len(status.get("reservedFor") or [])
                status["reservedFor"] = reserved
                if allocation is not None and not reserved and status.get("allocation") == allocation.to_dict():
                    status.pop("allocation", None)
                    changed = True
                if not changed:
                    break
                try:
                    store.update_status(obj)
                    break
                except Conflict:
                    continue

    def stale(self, extension: Any) -> list[ObjectKey]:
        b: ClaimBindings = extension
        return [("ResourceClaim", claim.namespace, claim.name) for claim, _allocation in b.claims]

