"""drf plugin: dominant resource fairness (upstream pkg/scheduler/plugins/drf/drf.go).

A job's share is the largest ``allocated[r] / total[r]`` over the cluster's resource
dimensions (``pods`` included, as upstream). JobOrder puts the smaller share first;
Preemptable lets a preemptor take a task when the preemptor job's share after the
preemption stays below (or within 1e-6 of) the victim job's share after losing it.
The job allocation here follows every allocate/pipeline/evict event, so pipelined tasks
count (as upstream). With ``enableHierarchy: true`` queues are ordered and reclaimed with
hierarchical DRF over the ``volcano.sh/hierarchy`` annotations (see :mod:`._hdrf`). The
share itself is :func:`~pyvolcano.plugins.drf_share.dominant_share`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyvolcano.api.job import JobInfo
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import TaskInfo
from pyvolcano.framework.argument_keys import ArgumentKeys
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.interfaces import Event, EventHandler, Vote
from pyvolcano.plugins._hdrf import HierarchicalDrf
from pyvolcano.plugins.drf_share import ShareDimensions, dominant_share, job_allocation, share_dimensions

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

NAME = "drf"
ARGUMENTS = ArgumentKeys(f"plugin {NAME}")
"""Upstream reads no argument of this plugin."""
SHARE_DELTA = 0.000001


class DrfAttr:
    """A job's DRF allocation; the share is recomputed lazily after the allocation changes."""

    __slots__ = ("_dimensions", "_dominant", "_share", "allocated")

    def __init__(self, allocated: Resource, dimensions: ShareDimensions):
        self.allocated = allocated
        self._dimensions = dimensions
        self._share: float | None = None
        self._dominant = ""

    def invalidate(self) -> None:
        self._share = None

    @property
    def share(self) -> float:
        if self._share is None:
            self._dominant, self._share = dominant_share(self.allocated, self._dimensions)
        return self._share

    @property
    def dominant_resource(self) -> str:
        _ = self.share
        return self._dominant


class _JobAttrs(dict[str, DrfAttr]):
    """Job uid → DrfAttr, built on first use.

    Upstream builds every job's attribute at open and then follows allocate/deallocate
    events. Those events move ``job.allocated`` (allocated statuses) the same way, except
    that pipelining counts for DRF but not in ``job.allocated``; so an attribute built late
    from ``job.allocated`` + the job's Pipelined tasks equals the one upstream would have by
    then. Attributes that exist follow the events; absent ones need not.
    """

    def __init__(self, ssn: Session, dimensions: ShareDimensions):
        super().__init__()
        self._jobs = ssn.jobs
        self._dimensions = dimensions

    def __missing__(self, uid: str) -> DrfAttr:
        attr = self[uid] = DrfAttr(job_allocation(self._jobs[uid]), self._dimensions)
        return attr

    def lookup(self, uid: str) -> DrfAttr | None:
        return self[uid] if uid in self._jobs else None


class Drf:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        self.arguments = Arguments(arguments, keys=ARGUMENTS).raw
        self.total = Resource()
        self.job_attrs: dict[str, DrfAttr] = {}

    def update_share(self, attr: DrfAttr) -> None:
        attr.invalidate()

    def on_session_open(self, ssn: Session) -> None:
        self.total = ssn.total_resource.clone()
        dimensions = share_dimensions(self.total)
        hdrf = HierarchicalDrf(self.total) if _hierarchy_enabled(ssn) else None
        self.job_attrs = attrs = _JobAttrs(ssn, dimensions)
        if hdrf is not None:
            for job in ssn.jobs.values():
                attr = attrs[job.uid]
                queue = ssn.queues.get(job.queue)
                if queue is not None:
                    hdrf.add_job(job, attr.allocated, queue)

        def preemptable(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            latt = attrs.lookup(preemptor.job)
            if latt is None:
                return [], Vote.PERMIT
            _, ls = dominant_share(latt.allocated.clone().add(preemptor.resreq), dimensions)
            allocations: dict[str, Resource] = {}
            victims = []
            for p in preemptees:
                if p.job not in allocations:
                    ratt = attrs.lookup(p.job)
                    if ratt is None:
                        continue
                    allocations[p.job] = ratt.allocated.clone()
                ralloc = allocations[p.job].sub(p.resreq)
                _, rs = dominant_share(ralloc, dimensions)
                if ls < rs or abs(ls - rs) <= SHARE_DELTA:
                    victims.append(p)
            return victims, Vote.PERMIT

        def job_order(l: JobInfo, r: JobInfo) -> int:
            ls = attrs[l.uid].share
            rs = attrs[r.uid].share
            if ls == rs:
                return 0
            return -1 if ls < rs else 1

        def on_allocate(ev: Event) -> None:
            attr = self.job_attrs.get(ev.task.job)
            if attr is None:
                return
            attr.allocated.add(ev.task.resreq)
            self.update_share(attr)
            if hdrf is not None:
                hdrf.task_added(ssn, ev.task)

        def on_allocate_many(tasks: list[TaskInfo]) -> None:
            attr = self.job_attrs.get(tasks[0].job)
            if attr is None:
                return
            attr.allocated.add_times(tasks[0].resreq, len(tasks))
            self.update_share(attr)

        def on_deallocate(ev: Event) -> None:
            attr = self.job_attrs.get(ev.task.job)
            if attr is None:
                return
            attr.allocated.sub(ev.task.resreq)
            self.update_share(attr)
            if hdrf is not None:
                hdrf.task_removed(ssn, ev.task)

        ssn.add_preemptable_fn(NAME, preemptable)
        ssn.add_job_order_fn(NAME, job_order)
        if hdrf is not None:

            def queue_order(l: QueueInfo, r: QueueInfo) -> int:
                return hdrf.compare_queues(l, r)

            def reclaimable(reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
                return hdrf.reclaimable(ssn, reclaimer, reclaimees), Vote.PERMIT

            ssn.add_queue_order_fn(NAME, queue_order)
            ssn.add_reclaimable_fn(NAME, reclaimable)
        # Hierarchical DRF follows every task through its tree: no batch form then.
        ssn.add_event_handler(EventHandler(allocate=on_allocate, deallocate=on_deallocate,
                                           allocate_many=on_allocate_many if hdrf is None else None))

    def on_session_close(self, ssn: Session) -> None:
        self.total = Resource()
        self.job_attrs = {}


def _hierarchy_enabled(ssn: Session) -> bool:
    return any(opt.name == NAME and opt.enabled("enableHierarchy") for opt, _plugin in ssn.plugins)


def new(arguments: Mapping[str, Any]) -> Drf:
    return Drf(arguments)
