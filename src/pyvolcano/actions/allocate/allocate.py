"""allocate action (upstream pkg/scheduler/actions/allocate/allocate.go ``Execute``).

Queues are popped in QueueOrder (re-ranked after every job), jobs in JobOrder, tasks in
TaskOrder. A job's tasks are placed by the per-task placement
(:class:`~pyvolcano.actions.allocate.tasks.TaskPlacement`); the job's statement is committed
only when ``JobReady``; a pipelined-but-not-ready statement is kept (its reservations hold
for the rest of the session) and discarded at session close; otherwise it is discarded at
once. A job's worksheet is a sorted list when the task order has a sort key
(:func:`~pyvolcano.actions._helpers.task_queue`), else upstream's comparator heap.

Jobs with a hard network topology, a hard sub-job or any sub-group policy take the HyperNode
path (:class:`~pyvolcano.actions.allocate.topology.TopologyPlacement`), which runs the same
per-task placement restricted to one HyperNode's nodes. A job's sub-job nominated by
gangpreempt or gangreclaim is first tried on its nominated nodes (the nomination fast path,
in the same module). Not modelled: node sharding.

The job queues are built from the jobs allocate can act on (a pending pod that is not best
effort in a job the job-local JobValid callbacks accept, such as a gang whose pods are all
created, or a Pending PodGroup), kept between sessions by the cache's change feed
(:class:`~pyvolcano.cache.job_filter.JobFilter`) and walked in uid order as the session's
jobs are; from scratch (``SessionMemo.incremental = False``) every job is walked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyvolcano.actions._helpers import PREDICATE_ERROR_CACHE_ENABLE, TaskQueue, task_queue
from pyvolcano.actions.allocate.tasks import TaskPlacement
from pyvolcano.actions.allocate.topology import JobWorksheet, TopologyPlacement, organize_worksheet
from pyvolcano.api.job import JobInfo
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.task import TaskStatus
from pyvolcano.framework.argument_keys import ArgumentKeys, honoured
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.session import Session
from pyvolcano.framework.topology import sub_job_needs_search
from pyvolcano.util.priority_queue import PriorityQueue

__all__ = ["ARGUMENTS", "NAME", "Allocate", "new"]

NAME = "allocate"
ARGUMENTS = ArgumentKeys(f"action {NAME}", (honoured(PREDICATE_ERROR_CACHE_ENABLE),))


class Allocate:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        args = Arguments(arguments, keys=ARGUMENTS)
        self.enable_predicate_error_cache = args.get_bool(PREDICATE_ERROR_CACHE_ENABLE, True)

    def execute(self, ssn: Session) -> None:
        per_task = TaskPlacement(ssn, enable_predicate_error_cache=self.enable_predicate_error_cache)
        placement = TopologyPlacement(ssn, per_task)
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
        jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        worksheets: dict[str, TaskQueue] = {}
        topology_worksheets: dict[str, JobWorksheet] = {}
        candidates = _candidates(ssn)
        for job in candidates:
            if job.is_pending():
                if "enqueue" in ssn.enabled_actions:
                    continue
                assert job.podgroup is not None
                job.set_phase("Inqueue")
            if len(job.tasks_in(TaskStatus.Pending)) == job.pending_best_effort:
                # Nothing for allocate (upstream builds an empty worksheet and skips the job;
                # JobValid has no side effects, so asking it first changes nothing).
                continue
            if ssn.skip_unchanged and ssn.unchanged_since_failure(job):
                continue  # before the checks below, which only skip too
            vr = ssn.job_valid(job)
            if vr is not None and not vr.passed:
                continue
            queue = ssn.queues.get(job.queue)
            if queue is None:
                continue
            topo = job.topology
            if topo is not None and not ssn.topology.ready and topo.contains_network_topology():
                continue
            if sub_job_needs_search(job):
                ws = organize_worksheet(ssn, job)
                if ws.empty():
                    continue
                topology_worksheets[job.uid] = ws
            else:
                pending = [task for task in sorted(job.tasks_in(TaskStatus.Pending).values(), key=lambda t: t.uid)
                           if not task.sch_gated and not task.resreq.is_empty()]
                if not pending:
                    continue
                worksheets[job.uid] = task_queue(ssn, pending)
            if job.queue not in jobs_by_queue:
                jobs_by_queue[job.queue] = PriorityQueue(ssn.job_order_fn)
                queues.push(queue)
            jobs_by_queue[job.queue].push(job)

        while queues:
            queue = queues.pop()
            if ssn.overused(queue):
                continue
            jobs = jobs_by_queue.get(queue.uid)
            if jobs is None or not jobs:
                continue
            job = jobs.pop()
            tws = topology_worksheets.get(job.uid)
            if tws is not None:
                stmt = placement.allocate_for_job(job, tws)
                if stmt is not None and ssn.job_ready(job):
                    stmt.commit()
                    ssn.clear_failure(job)
                    placement.recorder.update_decision_to_job(ssn, job)
                    if not tws.empty():
                        jobs.push(job)
                elif ssn.skip_unchanged:
                    ssn.record_failure(job)
                queues.push(queue)
                continue
            tasks = worksheets[job.uid]
            sub_job = job.topology.default_sub_job if job.topology is not None else None
            # gangpreempt's / gangreclaim's nomination first (topology.py).
            stmt = placement.nominated_statement(job, tasks)
            if stmt is None:
                stmt = per_task.allocate_resources_for_tasks(job, tasks, sub_job=sub_job)
            if stmt is not None and ssn.job_ready(job):
                stmt.commit()
                placement.redeemed(job)
                ssn.clear_failure(job)
                if tasks:
                    jobs.push(job)
            elif ssn.skip_unchanged:
                ssn.record_failure(job)
            queues.push(queue)


def _candidates(ssn: Session) -> list[JobInfo]:
    """The session's jobs allocate's walk can do anything for, in uid order: a Pending PodGroup
    (admitted here without enqueue), or a pending pod that is not best effort in a job every
    job-local JobValid callback accepts (JobValid has no side effects, and one rejection
    rejects the job). Kept by the change feed (every job from scratch)."""
    local = tuple(ssn.job_local_valid_fns())
    name = f"{NAME}/valid:{','.join(n for n, _ in local)}"
    fns = tuple(fn for _, fn in local)

    def can_act_on(job: JobInfo) -> bool:
        # Reads only what moves the job's version (the callbacks are job-local).
        if job.is_pending():
            return True
        if len(job.tasks_in(TaskStatus.Pending)) == job.pending_best_effort:
            return False
        for fn in fns:
            vr = fn(job)
            if vr is not None and not vr.passed:
                return False
        return True

    return ssn.memo.select(name, can_act_on, ssn.jobs)


def new(arguments: Mapping[str, Any] | None = None) -> Allocate:
    return Allocate(arguments)
