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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from pyvolcano.api.dra.allocator import AllocationError, Allocator, NodeAllocationError, gather_pools
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
    node_allocations: dict[str, list[AllocationResult]] = field(default_factory=dict)


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
        if to_allocate:
            allocator = Allocator([claims[i] for i in to_allocate], dra.classes, dra.in_use, dra.selectors, dra.memo)
        return _PodState(claims, available_on, to_allocate, allocator)

    # ------------------------------------------------------------------ Filter
    def filter(self, task: TaskInfo, idx: np.ndarray, live: np.ndarray) -> NodeFailures:
        state = self._states[task.uid] if task.uid in self._states else self._prepare(task)
        if state is None:
            return []
        if isinstance(state, Status):
            return [(state, live.copy())]
        nodes = self.ssn.node_list
        groups: dict[Status, np.ndarray] = {}

        def fail(k: int, status: Status) -> None:
            mask = groups.get(status)
            if mask is None:
                mask = groups[status] = np.zeros(len(idx), dtype=bool)
            mask[k] = True

        for k in np.flatnonzero(live):
            node = nodes[int(idx[k])]
            status = self._filter_node(state, node.name, node.labels)
            if status is not None:
                fail(int(k), status)
        return list(groups.items())

    def _filter_node(self, state: _PodState, node_name: str, labels: Mapping[str, str]) -> Status | None:
        for selector in state.available_on:
            if selector is not None:
                try:
                    if not selector_matches(selector, node_name, labels):
                        return _unschedulable(REASON_NOT_AVAILABLE)
                except AllocationError as e:
                    return Status(Code.Error, str(e))
        if state.allocator is None:
            return None
        try:
            found = state.allocator.allocate(gather_pools(self.dra.slices_for(node_name), node_name, labels))
        except NodeAllocationError as e:
            return _unschedulable(str(e))
        except AllocationError as e:
            return Status(Code.Error, str(e))
        if found is None:
            return _unschedulable(REASON_CANNOT_ALLOCATE)
        state.node_allocations[node_name] = found
        return None

    # ------------------------------------------------------------------ Reserve / Unreserve
    def reserve(self, task: TaskInfo) -> str | None:
        """Allocate the task's claims on its node in the cache; an error text when it cannot."""
        state = self._states.get(task.uid)
        if task.uid not in self._states or (
                isinstance(state, _PodState) and task.node_name not in state.node_allocations):
            state = self._prepare(task)
            if isinstance(state, _PodState) and state.allocator is not None:
                node = self.ssn.nodes.get(task.node_name)
                if node is None or self._filter_node(state, node.name, node.labels) is not None:
                    return f"claim allocation not found for node {task.node_name}"
        if state is None:
            return None
        if isinstance(state, Status):
            return state.reason
        found = state.node_allocations.get(task.node_name, []) if state.allocator is not None else []
        if len(found) != len(state.to_allocate):
            return f"claim allocation not found for node {task.node_name}"
        planned: list[tuple[ResourceClaim, AllocationResult | None]] = []
        allocated = dict(zip(state.to_allocate, found, strict=True))
        for i, claim in enumerate(state.claims):
            allocation = allocated.get(i)
            if allocation is not None:
                self.dra.assume(claim.with_status(ClaimStatus(allocation, claim.status.reserved_for)))
            planned.append((claim, allocation))
        self.ssn.bind_contexts.set(task, NAME, ClaimBindings(task.uid, tuple(planned)))
        self._states.pop(task.uid, None)  # allocations found for the other nodes are stale now
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

