"""reclaim action (upstream pkg/scheduler/actions/reclaim/reclaim.go).

Starving jobs take back resources that *other* queues hold beyond their share. Queues that
have a non-pending, valid job are visited in QueueOrder; an overused queue is skipped. For
each starving job of the queue (JobOrder) one statement is opened and its pending tasks
(TaskOrder) try, while the job is still starving, to reclaim: a task is skipped if it has
``preemptionPolicy: Never``, if the queue may not take it (``Preemptive``) or if
PrePredicate fails. The statement is committed if the job is then JobPipelined, otherwise
discarded.

Reclaiming for one task (``_reclaim_for_task``): nodes not known to be unresolvable that pass
the preempt predicate, in the order they were found (not scored). On each node the
reclaimees are Running, preemptable tasks of jobs in other queues that allow reclaim
(``spec.reclaimable``, default true); victims = ``Reclaimable`` over them. If evicting all
victims could make room (``ValidateVictims``), victims are evicted cheapest first in a
per-node statement until the request fits the node's future idle plus what was evicted;
then the task is pipelined there and the node statement merged into the job's, otherwise
the node statement is discarded and the next node tried.

Invariant: evictions on a node are kept only together with a pipelined reclaimer on that
node, and leave the session only through the job statement's commit.

Jobs with a network topology reclaim like any other job, node by node without regard to
their HyperNode constraint: upstream's reclaim has no topology check (preempt skips them;
gangreclaim is the topology-aware path).

Not modelled: node sharding (in-shard nodes first; there is one group here).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyvolcano.actions._helpers import PREDICATE_ERROR_CACHE_ENABLE, PredicateHelper
from pyvolcano.actions._simulate import starving_jobs
from pyvolcano.actions._victims import (
    TaskFilter,
    nodes_passing_preempt_predicate,
    preemption_never,
    request_fits,
    tasks_on_node,
    validate_victims,
)
from pyvolcano.api.job import JobInfo
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.task import TaskInfo, TaskStatus
from pyvolcano.framework.argument_keys import ArgumentKeys, honoured
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.session import Session
from pyvolcano.framework.statement import Statement
from pyvolcano.framework.victims import build_victims_queue
from pyvolcano.util.priority_queue import PriorityQueue

__all__ = ["ARGUMENTS", "Reclaim", "new"]

NAME = "reclaim"
ARGUMENTS = ArgumentKeys(f"action {NAME}", (honoured(PREDICATE_ERROR_CACHE_ENABLE),))
EVICT_REASON = "reclaim"


class Reclaim:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        args = Arguments(arguments, keys=ARGUMENTS)
        self.enable_predicate_error_cache = args.get_bool(PREDICATE_ERROR_CACHE_ENABLE, True)

    def execute(self, ssn: Session) -> None:
        queues, jobs_by_queue = starving_jobs(ssn)
        while queues:
            queue = queues.pop()
            if ssn.overused(queue):
                continue
            jobs = jobs_by_queue.get(queue.uid)
            while jobs:
                job = jobs.pop()
                # Each starving job is popped once; reclaiming for the others evicts running
                # tasks and pipelines their own, so its pending tasks are those it had at the start.
                pending = sorted(job.tasks_in(TaskStatus.Pending).values(), key=lambda t: t.uid)
                tasks = PriorityQueue(ssn.task_order_fn, (t for t in pending if not t.sch_gated))
                self._reclaim_for_job(ssn, queue, job, tasks)
                # Upstream (actions/reclaim/reclaim.go): the queue is pushed back while it has
                # starving jobs, but this loop keeps draining them, so the re-pushed entry
                # later finds none (it is still re-checked for Overused).
                if jobs:
                    queues.push(queue)

    def _reclaim_for_job(
        self, ssn: Session, queue: QueueInfo, job: JobInfo, tasks: PriorityQueue[TaskInfo]
    ) -> None:
        stmt = ssn.statement()
        while ssn.job_starving(job) and tasks:
            task = tasks.pop()
            if preemption_never(task):
                continue
            if not ssn.preemptive(queue, [task]):
                continue
            if ssn.pre_predicate(task) is not None:
                continue
            self._reclaim_for_task(ssn, stmt, task, job)
        if ssn.job_pipelined(job):
            stmt.commit()
        else:
            stmt.discard()

    def _reclaim_for_task(self, ssn: Session, stmt: Statement, task: TaskInfo, job: JobInfo) -> None:
        helper = PredicateHelper(ssn, enable_error_cache=self.enable_predicate_error_cache)
        keep = _reclaimee_of(ssn, job)
        for index in nodes_passing_preempt_predicate(ssn, helper, task):
            node = ssn.node_list[int(index)]
            reclaimees = tasks_on_node(node, keep)
            if not reclaimees:
                continue
            victims = ssn.reclaimable(task, reclaimees)
            if validate_victims(task, node, victims) is not None:
                continue
            cheapest_first = build_victims_queue(ssn, victims, task)
            # Upstream (actions/reclaim/reclaim.go): freed resources are added to the node's
            # future idle as victims go, so nothing beyond the request is reclaimed.
            available = node.future_idle()
            node_stmt = ssn.statement()
            evicted = False
            while cheapest_first and not request_fits(task, available):
                victim = cheapest_first.pop()
                node_stmt.evict(victim, EVICT_REASON)
                available.add(victim.resreq)
                evicted = True
            if request_fits(task, available) and node_stmt.pipeline(task, node.name, evicted):
                stmt.merge(node_stmt)
                return
            node_stmt.discard()


def _reclaimee_of(ssn: Session, reclaimer_job: JobInfo) -> TaskFilter:
    """Running, preemptable tasks of jobs in other queues that allow reclaim."""

    def keep(task: TaskInfo) -> bool:
        if task.status != TaskStatus.Running or not task.preemptable:
            return False
        job = ssn.jobs.get(task.job)
        if job is None or job.queue == reclaimer_job.queue:
            return False
        return ssn.queues[job.queue].reclaimable

    return keep


def new(arguments: Mapping[str, Any] | None = None) -> Reclaim:
    return Reclaim(arguments)
