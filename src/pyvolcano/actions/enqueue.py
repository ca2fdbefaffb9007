"""enqueue action (upstream pkg/scheduler/actions/enqueue/enqueue.go).

Decides which Pending PodGroups become Inqueue. Queues are visited in QueueOrder and jobs
in JobOrder; every pending job is tried exactly once, interleaving queues by their current
order. A PodGroup without ``minResources`` is admitted without asking any plugin;
otherwise ``JobEnqueueable`` votes decide and ``JobEnqueued`` lets plugins account for it.

The job queues are built from the jobs enqueue can act on (a Pending PodGroup, or a job
without its first-seen time), kept between sessions by the cache's change feed
(:class:`~pyvolcano.cache.job_filter.JobFilter`); the queue heap still receives every queue
that has a job in the session, in the order a walk over the jobs meets them, so ties pop as
before (and none when no job is Pending: the loop would only pop them).
From scratch (``SessionMemo.incremental = False``) it walks every job instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyvolcano.api.job import JobInfo
from pyvolcano.api.queue import QueueInfo
from pyvolcano.framework.argument_keys import ArgumentKeys
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.session import Session
from pyvolcano.util.priority_queue import PriorityQueue

NAME = "enqueue"
ARGUMENTS = ArgumentKeys(f"action {NAME}")
"""Upstream reads no argument of this action."""


class Enqueue:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        self.arguments = Arguments(arguments, keys=ARGUMENTS).raw

    def execute(self, ssn: Session) -> None:
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
        jobs_map: dict[str, PriorityQueue[JobInfo]] = {}
        if ssn.memo.incremental:
            for job in ssn.memo.select(NAME, _can_act_on, ssn.jobs):
                if job.schedule_start is None:
                    job.schedule_start = ssn.now
                if job.is_pending():
                    jobs_map.setdefault(job.queue, PriorityQueue(ssn.job_order_fn)).push(job)
            if not jobs_map:
                return  # the loop below would only pop every queue (QueueOrder has no side effects)
            for name in ssn.job_queues:
                queues.push(ssn.queues[name])
        else:
            queue_set: set[str] = set()
            for job in ssn.jobs.values():
                if job.schedule_start is None:
                    job.schedule_start = ssn.now
                queue = ssn.queues.get(job.queue)
                if queue is None:
                    continue
                if queue.uid not in queue_set:
                    queue_set.add(queue.uid)
                    queues.push(queue)
                if job.is_pending():
                    jobs_map.setdefault(job.queue, PriorityQueue(ssn.job_order_fn)).push(job)
        while queues:
            queue = queues.pop()
            jobs = jobs_map.get(queue.uid)
            if jobs is None or not jobs:
                continue
            job = jobs.pop()
            if not job.has_min_resources() or ssn.job_enqueueable(job):
                ssn.job_enqueued(job)
                assert job.podgroup is not None
                job.set_phase("Inqueue")
            queues.push(queue)


def _can_act_on(job: JobInfo) -> bool:
    """Whether enqueue's walk does anything for ``job`` (reads only what moves its version,
    except the first-seen time, which only enqueue sets)."""
    return job.schedule_start is None or job.is_pending()


def new(arguments: Mapping[str, Any] | None = None) -> Enqueue:
    return Enqueue(arguments)
