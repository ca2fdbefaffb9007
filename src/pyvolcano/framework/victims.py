"""The victims queue: upstream's ``BuildVictimsPriorityQueue`` (framework/session_plugins.go).

A session's tasks that an eviction may take, ordered cheapest first by the session's
ordering plugins: the eviction actions (preempt, reclaim) and the plugins that pick victims
themselves (capacity's reclaim) pop from it.

Invariant: a victim queue pops the *cheapest* victim first — the reverse of the order in
which the scheduler would want to keep tasks running.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyvolcano.api.job import JobInfo
from pyvolcano.api.task import TaskInfo
from pyvolcano.util.priority_queue import PriorityQueue

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["build_victims_queue"]


def build_victims_queue(
    ssn: Session, victims: list[TaskInfo], preemptor: TaskInfo
) -> PriorityQueue[TaskInfo]:
    """Upstream ``BuildVictimsPriorityQueue``: victims ordered cheapest first.

    Same job: reverse task order. A task whose job left the session goes first. Jobs in one
    queue (or an unknown preemptor job): the job ranked later by JobOrder goes first, ties by
    reverse task order. Jobs in different queues: VictimQueueOrder relative to the
    preemptor's queue.
    """
    preemptor_job = ssn.jobs.get(preemptor.job)

    def later_job_first(left_job: JobInfo, right_job: JobInfo, left: TaskInfo, right: TaskInfo) -> bool:
        cmp = ssn.job_order_compare(left_job, right_job)
        if cmp != 0:
            return cmp > 0
        return not ssn.task_order_fn(left, right)

    def cheaper(left: TaskInfo, right: TaskInfo) -> bool:
        if left.job == right.job:
            return not ssn.task_order_fn(left, right)
        left_job = ssn.jobs.get(left.job)
        right_job = ssn.jobs.get(right.job)
        if left_job is None or right_job is None:
            if left_job is None and right_job is None:
                return not ssn.task_order_fn(left, right)
            return left_job is None
        if preemptor_job is None or left_job.queue == right_job.queue:
            return later_job_first(left_job, right_job, left, right)
        return ssn.victim_queue_order_fn(
            ssn.queues[left_job.queue], ssn.queues[right_job.queue], ssn.queues[preemptor_job.queue]
        )

    return PriorityQueue(cheaper, victims)
