"""backfill action (upstream pkg/scheduler/actions/backfill/backfill.go).

Places BestEffort tasks (empty requests), which allocate skips. Tasks are taken in queue
order → job order → task order, predicated over all nodes and placed with the
non-transactional ``Session.allocate``, which dispatches the job's allocated tasks as soon as
it is JobReady.

The walk visits only the jobs with BestEffort work (an admitted PodGroup with a pending
BestEffort pod, or a pipelined pod), kept between sessions by the cache's change feed
(:class:`~pyvolcano.cache.job_filter.JobFilter`, evaluated when backfill runs, so it sees
what the session's earlier actions changed); the walk skips every other job without a side
effect, so the order and the result are those of the walk over every job.
From scratch (``SessionMemo.incremental = False``) the filter gives every job.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyvolcano.actions._helpers import PREDICATE_ERROR_CACHE_ENABLE, PredicateHelper
from pyvolcano.api.job import JobInfo
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.task import TaskInfo, TaskStatus
from pyvolcano.api.unschedule import FitErrors
from pyvolcano.framework.argument_keys import ArgumentKeys, honoured
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.session import Session
from pyvolcano.util.priority_queue import PriorityQueue

NAME = "backfill"
ARGUMENTS = ArgumentKeys(f"action {NAME}", (honoured(PREDICATE_ERROR_CACHE_ENABLE),))


class Backfill:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        args = Arguments(arguments, keys=ARGUMENTS)
        self.enable_predicate_error_cache = args.get_bool(PREDICATE_ERROR_CACHE_ENABLE, True)

    def _pending_tasks(self, ssn: Session) -> list[TaskInfo]:
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
        jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        tasks_by_job: dict[str, PriorityQueue[TaskInfo]] = {}
        for job in ssn.memo.select(NAME, _has_best_effort_work, ssn.jobs):
            if not _has_best_effort_work(job):
                continue  # JobValid has no side effects: skipping it is safe
            vr = ssn.job_valid(job)
            if vr is not None and not vr.passed:
                continue
            queue = ssn.queues.get(job.queue)
            if queue is None:
                continue
            tasks: PriorityQueue[TaskInfo] = PriorityQueue(ssn.task_order_fn)
            for task in sorted(job.tasks_in(TaskStatus.Pending).values(), key=lambda t: t.uid):
                if task.best_effort and not task.sch_gated:
                    tasks.push(task)
            for task in sorted(job.tasks_in(TaskStatus.Pipelined).values(), key=lambda t: t.uid):
                if task.best_effort:
                    node = ssn.nodes.get(task.node_name)
                    if node is not None:
                        node.remove_task(task)
                    job.update_task_status(task, TaskStatus.Pending)
                    ssn.fire_deallocate(task)
                    task.node_name = ""
                    tasks.push(task)
            if not tasks:
                continue
            if job.queue not in jobs_by_queue:
                jobs_by_queue[job.queue] = PriorityQueue(ssn.job_order_fn)
                queues.push(queue)
            jobs_by_queue[job.queue].push(job)
            tasks_by_job[job.uid] = tasks
        out: list[TaskInfo] = []
        while queues:
            queue = queues.pop()
            jobs = jobs_by_queue[queue.uid]
            while jobs:
                job = jobs.pop()
                tasks = tasks_by_job[job.uid]
                while tasks:
                    out.append(tasks.pop())
        return out

    def execute(self, ssn: Session) -> None:
        all_nodes = ssn.all_node_indices()
        for task in self._pending_tasks(ssn):
            job = ssn.jobs[task.job]
            st = ssn.pre_predicate(task)
            if st is not None:
                fe = FitErrors()
                fe.add(st.reason, st.code, all_nodes)
                job.set_task_fit_errors(task, fe)
                continue
            ph = PredicateHelper(ssn, enable_error_cache=self.enable_predicate_error_cache)
            feasible, errors = ph.predicate_nodes(task, all_nodes, ssn.allocate_predicate)
            if len(feasible) == 0:
                job.set_task_fit_errors(task, errors)
                continue
            best = ssn.select_best_node(task, feasible)
            ssn.allocate(task, ssn.node_list[best])


def _has_best_effort_work(job: JobInfo) -> bool:
    """Whether backfill's walk does anything for ``job`` (reads only what moves its version)."""
    if job.is_pending():
        return False
    return bool(job.pending_best_effort) or bool(job.tasks_in(TaskStatus.Pipelined))


def new(arguments: Mapping[str, Any] | None = None) -> Backfill:
    return Backfill(arguments)
