"""The capacity plugin's session callbacks (upstream ``plugins/capacity/capacity.go`` OnSessionOpen).

:class:`Capacity` reads the arguments; at session open it builds the queue attributes
(:mod:`.build`) and hands them to a :class:`CapacitySession`, whose bound methods are the
registered callbacks. Nothing survives the session.

Callbacks and their rules (``L`` = ``ancestorReclaimLevel``):

* QueueOrder: higher ``spec.priority`` first; flat: lower share first, then queues with
  deserved before best-effort ones; hierarchical: leaves before non-leaves, two leaves
  compared through their ancestors just below the deepest common ancestor.
  VictimQueueOrder (hierarchical): the queue sharing a deeper ancestor with the preemptor's
  queue is evicted first. In hierarchical mode both are registered only if the tree is ready.
* Allocatable: queue Open, tree ready, leaf queue (hierarchical), and for the queue and each
  ancestor ``allocated + request ≤ realCapability`` on the task's requested dimensions.
* Preemptive: tree ready, queue Open, ``allocated + request ≤ realCapability``, and on some
  requested dimension ``allocated + request ≤ deserved`` for the queue or one of its
  non-root ancestors within ``L`` levels.
* Reclaimable: victims cheapest first; a candidate must share a dimension with the
  reclaimer's request, must not take its queue below guarantee, and must be an "immediate
  victim" (nothing in common with its queue's deserved) or come from a queue above deserved
  on a dimension it uses; with ``L > 0`` the candidate's ancestors up to ``L`` levels (other
  than the root and ancestors shared with the reclaimer) must also qualify. Chosen victims
  reduce the tracked allocations. Votes permit (reject when the tree is not ready).
* UnifiedEvictable (gangpreempt, gangreclaim): every candidate for gangpreempt; for gangreclaim,
  in the order given, a candidate that does not take its queue below guarantee and is an
  immediate victim or comes from a queue above deserved on a dimension it uses (no ancestor
  check, no common-dimension check with the reclaimer). Reject when the tree is not ready.
* JobEnqueueable / JobEnqueued: ``minResources + allocated + inqueue − elastic ≤
  realCapability`` for the queue and every ancestor; admitted jobs add to ``inqueue``.
* Allocate / deallocate events keep ``allocated`` of the queue and its ancestors current.
* DRA quota (``deviceclass/<class>`` in a queue's capability, :mod:`.dra`): Allocatable and
  JobEnqueueable also check the devices the pods' claims ask for, per DeviceClass.

Upstream registers no Overused callback for capacity.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pyvolcano.api.job import JobInfo
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.resource import DimensionDefault, Resource
from pyvolcano.api.task import ALLOCATED_STATUS, TaskInfo
from pyvolcano.diagnosis.model import QueueQuota
from pyvolcano.framework.argument_keys import ArgumentKeys, honoured, is_false, refused
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.interfaces import Event, EventHandler, EvictionContext, EvictionKind, Vote
from pyvolcano.framework.victims import build_victims_queue
from pyvolcano.plugins._util import replicas_within
from pyvolcano.plugins.capacity.attrs import (
    ROOT_QUEUE,
    QueueAttr,
    compare_share_with_deserved,
    has_common_dimension,
    queue_level,
)
from pyvolcano.plugins.capacity.build import build_flat, build_hierarchy
from pyvolcano.plugins.capacity.dra import COUNT_PREFIX, DraDemand, dra_quota, min_dra_demand, task_demand

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["ARGUMENTS", "NAME", "Capacity", "CapacitySession"]

NAME = "capacity"
ANCESTOR_RECLAIM_LEVEL = "ancestorReclaimLevel"
DRA_ENABLE = "capacity.DynamicResourceAllocationEnable"
DRA_CONSUMABLE_CAPACITY_ENABLE = "capacity.DRAConsumableCapacityEnable"
ARGUMENTS = ArgumentKeys(f"plugin {NAME}", (
    honoured(ANCESTOR_RECLAIM_LEVEL),
    honoured(DRA_ENABLE),
    refused(DRA_CONSUMABLE_CAPACITY_ENABLE, "DRA consumable capacity: the capacity a device shares among claims is "
            "not counted against queues", "the key removed or set to false", accepts=is_false),
))
QUOTA_INSUFFICIENT = "queue resource quota insufficient"


class Capacity:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        args = Arguments(arguments, keys=ARGUMENTS)
        # Upstream: a negative level falls back to 0.
        self.ancestor_reclaim_level = max(args.get_int(ANCESTOR_RECLAIM_LEVEL, 0), 0)
        # Upstream's default is the feature gate: DynamicResourceAllocation is GA (on).
        self.dra_enabled = args.get_bool(DRA_ENABLE, True)
        self.session: CapacitySession | None = None

    def on_session_open(self, ssn: Session) -> None:
        hierarchy = _hierarchy_enabled(ssn)
        total = ssn.total_resource.clone()
        if hierarchy:
            opts, ready = build_hierarchy(ssn.queues, ssn.jobs, total)
        else:
            opts, ready = build_flat(ssn.queues, ssn.jobs, total), True
        self.session = CapacitySession(
            ssn, opts, hierarchy=hierarchy, ready=ready, ancestor_reclaim_level=self.ancestor_reclaim_level
        )
        if self.dra_enabled:
            self.session.open_dra()
        self.session.register()

    def deserved_snapshot(self) -> dict[str, Resource]:
        """Each queue's deserved resources this session (read by the simulator's metrics)."""
        if self.session is None:
            return {}
        return {name: attr.deserved.clone() for name, attr in self.session.opts.items()}

    def quota_snapshot(self) -> dict[str, QueueQuota]:
        """Each queue's quota as allocate and enqueue check it (read by the pending diagnosis)."""
        if self.session is None:
            return {}
        return {
            name: QueueQuota("capacity", attr.allocated.clone(), attr.inqueue.clone(), attr.elastic.clone(),
                             attr.deserved.clone(), attr.real_capability.clone(), attr.real_capability.clone(),
                             "capability")
            for name, attr in self.session.opts.items()
        }

    def dra_shortfall(self, task: TaskInfo) -> tuple[str, int, int, int] | None:
        """The first device class whose queue limit refuses ``task`` (read by the pending diagnosis)."""
        s = self.session
        if s is None or not s.dra:
            return None
        attr = s.attr_of_job(task.job)
        if attr is None:
            return None
        for q in s.path_to_root(attr):
            if q.dra is None:
                continue
            request = q.dra.incremental(s.demand(task))
            for name in q.dra.fits(request, with_inqueue=False):
                cls = name[len(COUNT_PREFIX):]
                return name, request[cls], q.dra.allocated.get(cls, 0), q.dra.capability[cls]
        return None

    def queue_attrs(self) -> tuple[Mapping[str, QueueAttr], bool]:
        """This session's queue attributes and whether they form a hierarchy (read by the
        scheduler metrics, :class:`~pyvolcano.framework.interfaces.CapacityStateExporter`);
        ``({}, False)`` outside a session."""
        if self.session is None:
            return {}, False
        return self.session.opts, self.session.hierarchy

    def on_session_close(self, ssn: Session) -> None:
        self.session = None


class CapacitySession:
    """The queue attributes of one session and the callbacks that read and update them."""

    def __init__(
        self,
        ssn: Session,
        opts: dict[str, QueueAttr],
        *,
        hierarchy: bool,
        ready: bool,
        ancestor_reclaim_level: int,
    ):
        self.ssn = ssn
        self.opts = opts
        self.hierarchy = hierarchy
        self.ready = ready
        self.level = ancestor_reclaim_level if hierarchy else 0
        # DRA quota: on while some queue names a device class and some pod has claims.
        self.dra = False
        self._demand: dict[str, DraDemand] = {}

    # ------------------------------------------------------------------ DRA quota
    def open_dra(self) -> None:
        """Each queue's DRA quota and what its allocated tasks hold (upstream's session open)."""
        ssn = self.ssn
        if not ssn.cache.dra.pods_with_claims:
            return
        for attr in self.opts.values():
            q = ssn.queues.get(attr.queue_id)
            if q is not None:
                attr.dra = dra_quota(q.queue.capability, q.queue.deserved, q.queue.guarantee)
        if not any(attr.dra is not None for attr in self.opts.values()):
            return
        self.dra = True
        for uid in sorted(ssn.jobs):
            job = ssn.jobs[uid]
            holder = self.opts.get(job.queue)
            if holder is None:
                continue
            for status, bucket in job.task_status_index.items():
                if status & ALLOCATED_STATUS:
                    for task in bucket.values():
                        self._account_dra(holder, task, +1)

    def demand(self, task: TaskInfo) -> DraDemand:
        if not task.pod.resource_claims:
            return {}
        got = self._demand.get(task.uid)
        if got is None:
            got = self._demand[task.uid] = task_demand(task, self.ssn.cache.dra)
        return got

    def _account_dra(self, attr: QueueAttr, task: TaskInfo, sign: int) -> None:
        demand = self.demand(task)
        if not demand:
            return
        for q in self.path_to_root(attr):
            if q.dra is not None:
                if sign > 0:
                    q.dra.add(demand)
                else:
                    q.dra.remove(demand)

    def _dra_short(self, q: QueueAttr, task: TaskInfo) -> bool:
        return q.dra is not None and bool(q.dra.fits(q.dra.incremental(self.demand(task)), with_inqueue=False))

    def register(self) -> None:
        ssn = self.ssn
        ssn.add_reclaimable_fn(NAME, self.reclaimable)
        ssn.add_unified_evictable_fn(NAME, self.unified_evictable)
        ssn.add_preemptive_fn(NAME, self.preemptive)
        ssn.add_allocatable_fn(NAME, self.allocatable, count=self.allocatable_count)
        ssn.add_job_enqueueable_fn(NAME, self.job_enqueueable)
        ssn.add_job_enqueued_fn(NAME, self.job_enqueued)
        ssn.add_event_handler(EventHandler(allocate=self.on_allocate, deallocate=self.on_deallocate,
                                           allocate_many=self.on_allocate_many))
        if not self.hierarchy:
            ssn.add_queue_order_fn(NAME, self.queue_order_flat)
        elif self.ready:
            ssn.add_queue_order_fn(NAME, self.queue_order_hierarchy)
            ssn.add_victim_queue_order_fn(NAME, self.victim_queue_order)

    # ------------------------------------------------------------------ helpers
    def attr_of_job(self, job_uid: str) -> QueueAttr | None:
        job = self.ssn.jobs.get(job_uid)
        return None if job is None else self.opts.get(job.queue)

    def path_to_root(self, attr: QueueAttr) -> list[QueueAttr]:
        """The queue itself, then its ancestors from the parent up to the root."""
        return [attr, *(self.opts[a] for a in reversed(attr.ancestors))]

    # ------------------------------------------------------------------ ordering
    def queue_order_flat(self, left: QueueInfo, right: QueueInfo) -> int:
        if left.priority != right.priority:
            return right.priority - left.priority
        l_attr, r_attr = self.opts.get(left.uid), self.opts.get(right.uid)
        if l_attr is None or r_attr is None:
            return 0
        return compare_share_with_deserved(l_attr, r_attr)

    def queue_order_hierarchy(self, left: QueueInfo, right: QueueInfo) -> int:
        if left.priority != right.priority:
            return right.priority - left.priority
        l_attr, r_attr = self.opts[left.uid], self.opts[right.uid]
        if l_attr.is_leaf != r_attr.is_leaf:
            return -1 if l_attr.is_leaf else 1
        if not l_attr.is_leaf:
            return compare_share_with_deserved(l_attr, r_attr)
        level = queue_level(l_attr, r_attr)

        def below_common(attr: QueueAttr) -> QueueAttr:
            return self.opts[attr.ancestors[level + 1]] if level + 1 < len(attr.ancestors) else attr

        return compare_share_with_deserved(below_common(l_attr), below_common(r_attr))

    def victim_queue_order(self, left: QueueInfo, right: QueueInfo, preemptor: QueueInfo) -> int:
        p_attr = self.opts[preemptor.uid]
        l_level = queue_level(self.opts[left.uid], p_attr)
        r_level = queue_level(self.opts[right.uid], p_attr)
        if l_level == r_level:
            return 0
        return -1 if l_level > r_level else 1

    # ------------------------------------------------------------------ quota checks
    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        if not queue.is_open or not self.ready:
            return False
        attr = self.opts.get(queue.uid)
        if attr is None:
            return True
        if self.hierarchy and not attr.is_leaf:
            return False

        def fits(q: QueueAttr) -> bool:
            if self.dra and task.pod.resource_claims and self._dra_short(q, task):
                return False
            future = q.allocated.clone().add(task.resreq)
            return future.less_equal_with_dimension(q.real_capability, task.resreq)[0]

        return all(fits(q) for q in self.path_to_root(attr))

    def allocatable_count(self, queue: QueueInfo, task: TaskInfo, k: int) -> int:
        """:meth:`allocatable`'s batch form: how many of ``k`` replicas it admits in a row."""
        if not queue.is_open or not self.ready:
            return 0
        attr = self.opts.get(queue.uid)
        if attr is None:
            return k
        if self.hierarchy and not attr.is_leaf:
            return 0
        n = k
        for q in self.path_to_root(attr):
            n = replicas_within(q.allocated, q.real_capability, task.resreq, n)
            if self.dra and q.dra is not None and task.pod.resource_claims:
                # replicas of one template: each brings claims of its own with the same demand
                for cls, per in q.dra.incremental(self.demand(task)).items():
                    cap = q.dra.capability.get(cls, 0)
                    if cap > 0 and per > 0:
                        n = min(n, max((cap - q.dra.allocated.get(cls, 0)) // per, 0))
            if not n:
                break
        return n

    def preemptive(self, queue: QueueInfo, tasks: list[TaskInfo]) -> bool:
        if not self.ready or not queue.is_open:
            return False
        attr = self.opts.get(queue.uid)
        if attr is None:
            return False
        request = Resource()
        for task in tasks:
            request.add(task.resreq)

        def within_deserved(q: QueueAttr) -> bool:
            future = q.allocated.clone().add(request)
            return future.less_equal_partly_with_dimension_zero_filtered(q.deserved, request)

        future = attr.allocated.clone().add(request)
        if not future.less_equal_with_dimension(attr.real_capability, request)[0]:
            return False
        if within_deserved(attr):
            return True
        for depth in range(1, self.level + 1):
            ancestor = attr.ancestor_at_depth(depth)
            if ancestor is None or ancestor == ROOT_QUEUE or ancestor not in self.opts:
                continue
            if within_deserved(self.opts[ancestor]):
                return True
        return False

    def job_enqueueable(self, job: JobInfo) -> int:
        if not self.ready:
            return Vote.REJECT
        attr = self.opts.get(job.queue)
        if self.hierarchy and attr is not None and not attr.is_leaf:
            return Vote.REJECT
        queue = self.ssn.queues.get(job.queue)
        if queue is None or not queue.is_open:
            return Vote.REJECT
        min_dra = self._min_dra(job, attr)
        if attr is None or (not job.has_min_resources() and not min_dra):
            return Vote.PERMIT
        min_request = job.min_resources() if job.has_min_resources() else Resource()
        for q in self.path_to_root(attr):
            need = min_request.clone().add(q.allocated).add(q.inqueue).sub(q.elastic)
            ok, short = need.less_equal_with_dimension(q.real_capability, min_request)
            if ok and min_dra and q.dra is not None:
                short = q.dra.fits(min_dra, with_inqueue=True)
                ok = not short
            if not ok:
                message = QUOTA_INSUFFICIENT
                if short:
                    message += ": " + ", ".join(f"insufficient {name}" for name in short)
                self.ssn.podgroup_events.setdefault(job.uid, []).append(f"Normal Unschedulable {message}")
                return Vote.REJECT
        return Vote.PERMIT

    def _min_dra(self, job: JobInfo, attr: QueueAttr | None) -> dict[str, int]:
        if not self.dra or attr is None or attr.dra is None:
            return {}
        return min_dra_demand(job, self.demand)

    def job_enqueued(self, job: JobInfo) -> None:
        attr = self.opts.get(job.queue)
        min_dra = self._min_dra(job, attr)
        if attr is None or (not job.has_min_resources() and not min_dra):
            return
        if job.has_min_resources():
            admitted = job.deduct_sch_gated_resources(job.min_resources())
            for q in self.path_to_root(attr):
                q.inqueue.add(admitted)
        for q in self.path_to_root(attr):
            if min_dra and q.dra is not None:
                for cls, n in min_dra.items():
                    q.dra.inqueue[cls] = q.dra.inqueue.get(cls, 0) + n

    # ------------------------------------------------------------------ reclaim
    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        if not self.ready:
            return [], Vote.REJECT
        reclaimer_attr = self.attr_of_job(reclaimer.job)
        if reclaimer_attr is None:
            return [], Vote.REJECT
        victims: list[TaskInfo] = []
        allocations: dict[str, Resource] = {}

        def allocation(attr: QueueAttr) -> Resource:
            if attr.queue_id not in allocations:
                allocations[attr.queue_id] = attr.allocated.clone()
            return allocations[attr.queue_id]

        candidates = build_victims_queue(self.ssn, reclaimees, reclaimer)
        while candidates:
            reclaimee = candidates.pop()
            attr = self.attr_of_job(reclaimee.job)
            if attr is None:
                continue
            if not has_common_dimension(reclaimee.resreq, reclaimer.init_resreq, ignore_pods=True):
                continue
            allocated = allocation(attr)
            if not attr.guarantee.less_equal(allocated - reclaimee.resreq, DimensionDefault.ZERO):
                continue
            if not self.leaf_eligible(reclaimer, reclaimer_attr, reclaimee, attr, allocated):
                continue
            charged = self.eligible_ancestors(reclaimer_attr, attr, reclaimee, allocation)
            if charged is None:
                continue
            for held in (allocated, *charged):
                held.sub(reclaimee.resreq)
            victims.append(reclaimee)
        return victims, Vote.PERMIT

    def unified_evictable(self, ctx: EvictionContext, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        """Upstream ``capacity.go`` UnifiedEvictableFn (see the module doc)."""
        if ctx.kind is EvictionKind.GANG_PREEMPT:
            return candidates, Vote.PERMIT
        if not self.ready:
            return [], Vote.REJECT
        victims: list[TaskInfo] = []
        allocations: dict[str, Resource] = {}
        for reclaimee in candidates:
            attr = self.attr_of_job(reclaimee.job)
            if attr is None:
                continue
            allocated = allocations.setdefault(attr.queue_id, attr.allocated.clone())
            if not attr.guarantee.less_equal(allocated - reclaimee.resreq, DimensionDefault.ZERO):
                continue
            if (not has_common_dimension(reclaimee.resreq, attr.deserved)
                    or allocated.greater_partly_with_relevant_dimensions(attr.deserved, reclaimee.resreq)):
                allocated.sub(reclaimee.resreq)
                victims.append(reclaimee)
        return victims, Vote.PERMIT

    def leaf_eligible(
        self,
        reclaimer: TaskInfo,
        reclaimer_attr: QueueAttr,
        reclaimee: TaskInfo,
        attr: QueueAttr,
        allocated: Resource,
    ) -> bool:
        """The reclaimee's own queue lets it go: an immediate victim, or the queue is above deserved."""
        if not has_common_dimension(reclaimee.resreq, attr.deserved):
            # Immediate victim. Within a shared ancestor scope it is spared when the
            # reclaimer's queue has no deserved on what it asks for either: no real contention.
            shared = reclaimer_attr.ancestors_within(self.level) & attr.ancestors_within(self.level)
            return not (
                self.level > 0
                and shared - {ROOT_QUEUE}
                and not has_common_dimension(reclaimer.resreq, reclaimer_attr.deserved)
            )
        return allocated.greater_partly_with_relevant_dimensions(attr.deserved, reclaimee.resreq)

    def eligible_ancestors(
        self,
        reclaimer_attr: QueueAttr,
        attr: QueueAttr,
        reclaimee: TaskInfo,
        allocation: Callable[[QueueAttr], Resource],
    ) -> list[Resource] | None:
        """With ``L > 0``: the reclaimee's ancestors to check must each let it go too.

        Returns the ancestors' tracked allocations to charge, or ``None`` if one refuses.
        At each depth the ancestor is skipped when it is the root or the reclaimer's own
        ancestor at that depth.
        """
        charged: dict[str, Resource] = {}
        for depth in range(1, self.level + 1):
            ancestor_id = attr.ancestor_at_depth(depth)
            if ancestor_id is None or ancestor_id == ROOT_QUEUE:
                continue
            if reclaimer_attr.ancestor_at_depth(depth) == ancestor_id:
                continue
            ancestor = self.opts.get(ancestor_id)
            if ancestor is None:
                return None
            held = charged[ancestor_id] = allocation(ancestor)
            if not has_common_dimension(reclaimee.resreq, ancestor.deserved):
                continue
            if not held.greater_partly_with_relevant_dimensions(ancestor.deserved, reclaimee.resreq):
                return None
        return list(charged.values())

    # ------------------------------------------------------------------ events
    def on_allocate(self, event: Event) -> None:
        self._account(event.task, +1)

    def on_deallocate(self, event: Event) -> None:
        self._account(event.task, -1)

    def on_allocate_many(self, tasks: list[TaskInfo]) -> None:
        attr = self.attr_of_job(tasks[0].job)
        if attr is None:
            return
        for q in self.path_to_root(attr):
            q.allocated.add_times(tasks[0].resreq, len(tasks))
        attr.update_share()
        if self.dra:
            for task in tasks:
                self._account_dra(attr, task, +1)

    def _account(self, task: TaskInfo, sign: int) -> None:
        attr = self.attr_of_job(task.job)
        if attr is None:
            return
        # Upstream: only the leaf's share is refreshed; ancestors keep their session-open
        # share, which is what hierarchical queue order compares.
        for i, q in enumerate(self.path_to_root(attr)):
            if sign > 0:
                q.allocated.add(task.resreq)
            else:
                q.allocated.sub(task.resreq)
            if i == 0:
                q.update_share()
        if self.dra:
            self._account_dra(attr, task, sign)


def _hierarchy_enabled(ssn: Session) -> bool:
    """Upstream ``ssn.HierarchyEnabled``: some capacity entry has ``enableHierarchy: true``."""
    return any(opt.name == NAME and opt.enabled("enableHierarchy") for opt, _plugin in ssn.plugins)
