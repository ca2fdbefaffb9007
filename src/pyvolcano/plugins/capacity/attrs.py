"""Per-queue state of the capacity plugin and the resource rules it relies on.

Mirrors the ``queueAttr`` struct of upstream ``pkg/scheduler/plugins/capacity/capacity.go``
together with its free helpers (``updateQueueAttrShare``, ``compareShareWithDeserved``,
``getQueueLevel``, ``queueAncestorAtDepth``, ``ancestorsByLevel``, ``hasRelevantDeserved``)
and the two ``api`` helpers whose exact key handling matters here: ``ExceededPart`` and
``Intersection``.

A :class:`QueueAttr` holds, for one queue: the configured ``deserved`` / ``capability`` /
``guarantee``, the derived ``real_capability`` (the hard limit allocations may reach), and
the running sums ``allocated``, ``request``, ``inqueue`` and ``elastic``. In hierarchical
mode it also knows its ``ancestors`` (root first, parent last) and its ``children``.

Invariants: ``ancestors`` is an immutable tuple, so siblings never share a mutable list;
``share`` is recomputed by :meth:`QueueAttr.update_share` whenever ``allocated`` of the
queue itself changes.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from pyvolcano.api.job import JobInfo
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.resource import PODS, Resource, share
from pyvolcano.api.task import ALLOCATED_STATUS, TaskStatus
from pyvolcano.plugins._util import queue_reservation
from pyvolcano.plugins.capacity.dra import DraQuota

__all__ = [
    "MAX_FLOAT",
    "ROOT_QUEUE",
    "JobUsage",
    "QueueAttr",
    "compare_share_with_deserved",
    "exceeded_part",
    "has_common_dimension",
    "infinite_resource",
    "job_usage",
    "queue_level",
]

ROOT_QUEUE = "root"
MAX_FLOAT = sys.float_info.max
MAX_INT64 = float(2**63 - 1)


class QueueAttr:
    """Quota bookkeeping of one queue for one session."""

    __slots__ = (
        "allocated",
        "ancestors",
        "capability",
        "children",
        "deserved",
        "dra",
        "elastic",
        "guarantee",
        "inqueue",
        "name",
        "queue_id",
        "real_capability",
        "request",
        "share",
    )

    def __init__(self, queue: QueueInfo, *, capability: Resource, real_capability: Resource | None = None):
        self.queue_id = queue.uid
        self.name = queue.name
        self.share = 0.0
        self.deserved = queue.deserved() or Resource()
        self.guarantee = queue.guarantee() or Resource()
        self.capability = capability
        self.real_capability = real_capability if real_capability is not None else Resource()
        self.allocated = Resource()
        self.request = Resource()
        self.inqueue = Resource()
        self.elastic = Resource()
        self.ancestors: tuple[str, ...] = ()
        self.children: dict[str, QueueAttr] = {}
        # The queue's DRA quota (plugins/capacity/dra.py), set by the plugin when enabled.
        self.dra: DraQuota | None = None

    @property
    def is_leaf(self) -> bool:
        return not self.children

    def charge(self, usage: JobUsage) -> None:
        self.allocated.add(usage.allocated)
        self.request.add(usage.request)
        self.inqueue.add(usage.inqueue)
        self.elastic.add(usage.elastic)

    def update_share(self) -> None:
        """Max over deserved dimensions of allocated/deserved.

        Upstream: a queue without deserved is "best effort" and gets share 1 whatever it
        holds, so every queue with deserved and share < 1 is served before it.
        """
        if self.deserved.is_empty():
            self.share = 1.0
            return
        names = self.deserved.resource_names()
        self.share = max((share(self.allocated.get(n), self.deserved.get(n)) for n in names), default=0.0)

    def ancestor_at_depth(self, depth: int) -> str | None:
        """The ancestor ``depth`` levels up (1 = parent), or ``None`` above the root."""
        if depth <= 0 or len(self.ancestors) < depth:
            return None
        return self.ancestors[-depth]

    def ancestors_within(self, level: int) -> set[str]:
        """The ancestors at depths 1..``level``."""
        return {a for d in range(1, level + 1) if (a := self.ancestor_at_depth(d)) is not None}

    def __repr__(self) -> str:
        return (
            f"QueueAttr<{self.name} deserved={self.deserved} real_capability={self.real_capability} "
            f"allocated={self.allocated} share={self.share:.3f}>"
        )


@dataclass(slots=True)
class JobUsage:
    """What one job contributes to its queue's sums at session open."""

    allocated: Resource
    request: Resource
    inqueue: Resource
    elastic: Resource


def job_usage(job: JobInfo) -> JobUsage:
    """allocated = Σ allocated-status requests; request adds pending tasks; inqueue/elastic as proportion.

    ``inqueue`` counts the part of ``minResources`` not yet covered by allocated tasks, for
    Inqueue PodGroups and for Running PodGroups that already hold ``minMember`` tasks.
    """
    usage = JobUsage(Resource(), Resource(), Resource(), job.elastic_resources())
    for status, bucket in job.task_status_index.items():
        if status & ALLOCATED_STATUS:
            for task in bucket.values():
                usage.allocated.add(task.resreq)
                usage.request.add(task.resreq)
        elif status == TaskStatus.Pending:
            for task in bucket.values():
                usage.request.add(task.resreq)
    reserved = queue_reservation(job)
    if reserved is not None:
        usage.inqueue.add(reserved)
    return usage


def exceeded_part(left: Resource, right: Resource) -> Resource:
    """Upstream ``api.ExceededPart``: per-dimension ``max(left - right, 0)``.

    Upstream builds it from ``Diff``, which only records a scalar dimension where ``left``
    strictly exceeds ``right``; elsewhere the dimension is *absent* rather than 0. The
    difference is visible to a later ``min_dimension(..., INFINITY)``, which leaves absent
    dimensions uncapped, so it is reproduced here.
    """
    out = Resource(max(left.milli_cpu - right.milli_cpu, 0.0), max(left.memory - right.memory, 0.0))
    for name in (*left.scalars, *(n for n in right.scalars if n not in left.scalars)):
        diff = left.scalars.get(name, 0.0) - right.scalars.get(name, 0.0)
        if diff > 0:
            out.scalars[name] = diff
    return out


def infinite_resource(total: Resource) -> Resource:
    """Upstream ``InfiniteResource`` plus every scalar of the cluster total at MaxInt64."""
    return Resource(MAX_FLOAT, MAX_FLOAT, {name: MAX_INT64 for name in total.scalars})


def has_common_dimension(left: Resource, right: Resource, *, ignore_pods: bool = False) -> bool:
    """Whether ``api.Intersection`` is non-empty: some dimension is ≥ ε on both sides."""
    names = set(right.resource_names())
    return any(n in names and not (ignore_pods and n == PODS) for n in left.resource_names())


def compare_share_with_deserved(left: QueueAttr, right: QueueAttr) -> int:
    """Lower share first; on equal shares a queue with deserved before a best-effort one."""
    if left.share == right.share:
        l_has, r_has = not left.deserved.is_empty(), not right.deserved.is_empty()
        if l_has == r_has:
            return 0
        return -1 if l_has else 1
    return -1 if left.share < right.share else 1


def queue_level(left: QueueAttr, right: QueueAttr) -> int:
    """Upstream ``getQueueLevel``: index of the last shared entry of the two ancestor paths.

    Quirk reproduced: it is 0 both when the paths share only the root and when they share
    nothing at all.
    """
    level = 0
    for i, (a, b) in enumerate(zip(left.ancestors, right.ancestors)):
        if a != b:
            break
        level = i
    return level
