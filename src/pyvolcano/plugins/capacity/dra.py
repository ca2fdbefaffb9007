"""The capacity plugin's DRA quota (upstream ``plugins/capacity/capacity.go``, ``draQuotaAttr``).

A queue may limit the devices its jobs hold per DeviceClass with resource names in its
``spec.capability`` (also read from ``deserved`` and ``guarantee``, which upstream parses but
does not enforce):

* ``deviceclass/<class>``: a count of devices;
* ``<dimension>.deviceclass/<class>``: a consumable capacity; read, not enforced here
  (consumable capacity is not modelled, docs/differences.md).

A task's demand is read from its pod's claims (upstream ``buildTaskDRAInfo``): for each claim,
each ``exactly`` request with ``allocationMode: ExactCount`` adds ``count`` devices of its class;
``firstAvailable`` and ``All`` requests are not counted, as upstream. A claim shared by several
tasks of one queue counts once (reference-counted per queue). Allocatable admits a task when, for
every class the queue limits (a count above 0), ``allocated + demand ≤ capability``; JobEnqueueable
adds what admitted jobs reserve (``inqueue``): the demand of the first ``minAvailable`` tasks in
name order, or ``minTaskMember`` tasks per role.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from pyvolcano.api.dra.resourceclaim import ClaimNameError, claim_name
from pyvolcano.api.dra.types import ALLOCATION_MODE_EXACT_COUNT
from pyvolcano.api.quantity import QuantityError, parse_quantity

if TYPE_CHECKING:
    from pyvolcano.api.job import JobInfo
    from pyvolcano.api.task import TaskInfo
    from pyvolcano.cache.dra import DraState

__all__ = ["COUNT_PREFIX", "DraDemand", "DraQuota", "dra_quota", "min_dra_demand", "task_demand"]

COUNT_PREFIX: Final = "deviceclass/"
CAPACITY_SEPARATOR: Final = ".deviceclass/"

ClaimDemand = dict[str, int]  # device class -> devices
DraDemand = dict[str, ClaimDemand]  # claim key -> its demand, in the pod's claim order


def _counts(resources: Mapping[str, Any] | None) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, q in (resources or {}).items():
        if CAPACITY_SEPARATOR in name or not name.startswith(COUNT_PREFIX):
            continue
        cls = name[len(COUNT_PREFIX):]
        if not cls:
            continue
        try:
            value = parse_quantity(q)
        except QuantityError:
            continue
        out[cls] = -(-value.numerator // value.denominator)  # Quantity.Value() rounds up
    return out


@dataclass(slots=True)
class DraQuota:
    """One queue's device counts per class: the limit, what it holds, what admitted jobs reserve."""

    capability: dict[str, int]
    allocated: dict[str, int] = field(default_factory=dict)
    inqueue: dict[str, int] = field(default_factory=dict)
    claim_refs: dict[str, int] = field(default_factory=dict)

    def incremental(self, demand: DraDemand) -> ClaimDemand:
        """The demand of the claims this queue does not hold yet (upstream ``incrementalTaskDRA``)."""
        out: ClaimDemand = {}
        for key, per_class in demand.items():
            if self.claim_refs.get(key, 0) > 0:
                continue
            for cls, n in per_class.items():
                out[cls] = out.get(cls, 0) + n
        return out

    def fits(self, request: ClaimDemand, *, with_inqueue: bool) -> list[str]:
        """The classes whose limit ``request`` would exceed (``checkDRAAllocatable``)."""
        short = []
        for cls, n in request.items():
            cap = self.capability.get(cls, 0)
            if cap <= 0:
                continue
            held = self.allocated.get(cls, 0) + (self.inqueue.get(cls, 0) if with_inqueue else 0)
            if held + n > cap:
                short.append(f"{COUNT_PREFIX}{cls}")
        return short

    def add(self, demand: DraDemand) -> None:
        for key, per_class in demand.items():
            if self.claim_refs.get(key, 0) == 0:
                for cls, n in per_class.items():
                    self.allocated[cls] = self.allocated.get(cls, 0) + n
            self.claim_refs[key] = self.claim_refs.get(key, 0) + 1

    def remove(self, demand: DraDemand) -> None:
        for key, per_class in demand.items():
            refs = self.claim_refs.get(key, 0)
            if refs <= 1:
                self.claim_refs.pop(key, None)
                for cls, n in per_class.items():
                    self.allocated[cls] = max(self.allocated.get(cls, 0) - n, 0)
            else:
                self.claim_refs[key] = refs - 1


def dra_quota(capability: Mapping[str, Any] | None, deserved: Mapping[str, Any] | None,
              guarantee: Mapping[str, Any] | None) -> DraQuota | None:
    """The queue's DRA quota, or None when none of its resource lists names a device class."""
    names = [*(capability or {}), *(deserved or {}), *(guarantee or {})]
    if not any(n.startswith(COUNT_PREFIX) or CAPACITY_SEPARATOR in n for n in names):
        return None
    return DraQuota(_counts(capability))


def task_demand(task: TaskInfo, dra: DraState) -> DraDemand:
    """The devices ``task``'s claims ask for, per claim (empty for a pod without claims or with
    claims not created yet)."""
    pod = task.pod
    out: DraDemand = {}
    for pc in pod.resource_claims:
        try:
            name, _check = claim_name(pod, pc)
        except ClaimNameError:
            continue
        claim = dra.claim(f"{pod.namespace}/{name}") if name else None
        if claim is None or claim.key in out:
            continue
        per_class: ClaimDemand = {}
        for request in claim.requests:
            ex = request.exactly
            if ex is None or ex.allocation_mode != ALLOCATION_MODE_EXACT_COUNT or not ex.device_class_name:
                continue
            per_class[ex.device_class_name] = per_class.get(ex.device_class_name, 0) + ex.count
        if per_class:
            out[claim.key] = per_class
    return out


def min_dra_demand(job: JobInfo, demand_of: Any) -> ClaimDemand:
    """``GetMinDRAResources``: the devices the job needs to start (see the module docstring)."""
    out: ClaimDemand = {}

    def add(demand: DraDemand, times: int) -> None:
        for per_class in demand.values():
            for cls, n in per_class.items():
                out[cls] = out.get(cls, 0) + n * times

    tasks: Iterable[TaskInfo] = job.tasks.values()
    mtm = job.podgroup.min_task_member if job.podgroup is not None else {}
    if not mtm:
        with_demand = sorted((t for t in tasks if demand_of(t)), key=lambda t: (t.namespace, t.name, t.uid))
        for t in with_demand[:max(job.min_available, 0)]:
            add(demand_of(t), 1)
        return out
    seen: set[str] = set()
    for t in tasks:
        d = demand_of(t)
        n = mtm.get(t.role, 0)
        if not d or n <= 0 or t.role in seen:
            continue
        seen.add(t.role)
        add(d, n)
    return out
