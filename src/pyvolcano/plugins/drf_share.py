"""DRF's dominant share (upstream ``plugins/drf/drf.go`` ``calculateShare``), defined once.

The share of an allocation is its largest ``allocated[r] / total[r]`` over the dimensions
the cluster total holds (``pods`` included, as upstream), with upstream's ``helpers.Share``
for a zero total; the dominant resource is the first dimension reaching it. A job's DRF
allocation counts its pipelined tasks as well as ``job.allocated`` (as upstream's event
handlers do). The drf plugin, its hierarchical mode and the scheduler's ``job_share``
metric all read these functions, so the three agree by construction.

The cluster total does not change within a session: callers take its dimensions once
(:func:`share_dimensions`) and pass them to every :func:`dominant_share`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyvolcano.api.resource import Resource, share
from pyvolcano.api.task import TaskStatus

if TYPE_CHECKING:
    from pyvolcano.api.job import JobInfo

__all__ = ["ShareDimensions", "dominant_share", "job_allocation", "share_dimensions"]

ShareDimensions = tuple[tuple[str, float], ...]


def share_dimensions(total: Resource) -> ShareDimensions:
    """``(name, amount)`` of each dimension of the cluster total, in ``resource_names`` order."""
    return tuple((name, total.get(name)) for name in total.resource_names())


def dominant_share(allocated: Resource, dimensions: ShareDimensions) -> tuple[str, float]:
    """``(dominant resource, share)`` of ``allocated``; ``("", 0.0)`` when nothing is held."""
    best = 0.0
    dominant = ""
    for name, total in dimensions:
        s = share(allocated.get(name), total)
        if s > best:
            best = s
            dominant = name
    return dominant, best


def job_allocation(job: JobInfo) -> Resource:
    """A new :class:`Resource`: the job's allocated resources plus its pipelined tasks' requests."""
    allocated = job.allocated.clone()
    for t in job.tasks_in(TaskStatus.Pipelined).values():
        allocated.add(t.resreq)
    return allocated
