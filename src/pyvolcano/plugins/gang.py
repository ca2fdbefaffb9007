"""gang plugin (upstream pkg/scheduler/plugins/gang/gang.go).

Registers: JobValid (no flag), Preemptable and Reclaimable (``enablePreemptable`` /
``enableReclaimable``), UnifiedEvictable (approves every candidate: gangpreempt and gangreclaim
keep gangs whole through their safe / whole bundles), JobOrder, JobReady, JobPipelined, JobStarving, and for sub-jobs
SubJobOrder (not-ready first), SubJobReady and SubJobPipelined; a job with sub-group policies
is valid, ready or pipelined only when every policy has ``minSubGroups`` such sub-jobs. At session close it
writes the PodGroup condition: ``Unschedulable`` (reason ``NotEnoughResources``, message
``"<k>/<n> tasks in gang unschedulable: <job fit error>"``) or ``Scheduled``, for the jobs
session close did not find settled (``Session.unsettled``; every job with a PodGroup from
scratch, ``SessionMemo.incremental = False``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyvolcano.api.job import JobInfo, ValidateResult
from pyvolcano.api.objects import PodGroupCondition
from pyvolcano.api.sub_job import SubJobInfo
from pyvolcano.api.task import ALLOCATED_STATUS, TaskInfo, TaskStatus
from pyvolcano.framework.argument_keys import ArgumentKeys
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.interfaces import Vote

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

NAME = "gang"
ARGUMENTS = ArgumentKeys(f"plugin {NAME}")
"""Upstream reads no argument of this plugin."""

NOT_ENOUGH_PODS_OF_TASK = "NotEnoughPodsOfTask"
NOT_ENOUGH_PODS = "NotEnoughTasks"
NOT_ENOUGH_RESOURCES = "NotEnoughResources"


class Gang:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        self.arguments = Arguments(arguments, keys=ARGUMENTS).raw

    def on_session_open(self, ssn: Session) -> None:
        def evictable(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            victims: list[TaskInfo] = []
            occupied: dict[str, int] = {}
            for p in preemptees:
                job = ssn.jobs.get(p.job)
                if job is None:
                    continue
                if job.uid not in occupied:
                    occupied[job.uid] = job.ready_task_num()
                if occupied[job.uid] > job.min_available:
                    occupied[job.uid] -= 1
                    victims.append(p)
            return victims, Vote.PERMIT

        def job_order(l: JobInfo, r: JobInfo) -> int:
            lr, rr = l.is_ready(), r.is_ready()
            if lr and rr:
                return 0
            if lr:
                return 1
            if rr:
                return -1
            return 0

        def job_ready(job: JobInfo) -> bool:
            topo = job.topology
            return job.check_task_ready() and (topo is None or topo.check_ready()) and job.is_ready()

        def ready_bound(job: JobInfo) -> int:
            # is_ready() needs minAvailable ready tasks (pending best-effort ones count); every
            # allocation adds one, so fewer than the shortfall cannot make it true.
            return max(1, job.min_available - job.ready_task_num() - job.pending_best_effort)

        def job_pipelined(job: JobInfo) -> int:
            topo = job.topology
            ok = job.check_task_pipelined() and (topo is None or topo.check_pipelined()) and job.is_pipelined()
            return Vote.PERMIT if ok else Vote.REJECT

        def sub_job_order(l: SubJobInfo, r: SubJobInfo) -> int:
            lr, rr = l.is_ready(), r.is_ready()
            if lr and rr:
                return 0
            if lr:
                return 1
            if rr:
                return -1
            return 0

        def job_starving(job: JobInfo) -> bool:
            return job.is_starving()

        ssn.add_job_valid_fn(NAME, job_valid, job_local=True)
        ssn.add_reclaimable_fn(NAME, evictable)
        ssn.add_preemptable_fn(NAME, evictable)
        ssn.add_unified_evictable_fn(NAME, lambda _ctx, candidates: (candidates, Vote.PERMIT))
        ssn.add_job_order_fn(NAME, job_order)
        ssn.add_job_ready_fn(NAME, job_ready, bound=ready_bound)
        ssn.add_job_pipelined_fn(NAME, job_pipelined)
        ssn.add_job_starving_fn(NAME, job_starving)
        ssn.add_sub_job_order_fn(NAME, sub_job_order)
        ssn.add_sub_job_ready_fn(NAME, SubJobInfo.is_ready)
        ssn.add_sub_job_pipelined_fn(NAME, lambda sj: Vote.PERMIT if sj.is_pipelined() else Vote.REJECT)

    def on_session_close(self, ssn: Session) -> None:
        # Settled jobs keep the condition of the close that last looked at them; the unsettled
        # ones are listed (framework/job_updater.py), so only they are visited.
        for uid in ssn.unsettled:
            job = ssn.jobs[uid]
            if not job.tasks or job.podgroup is None:
                continue
            if not job.is_ready():
                unready = unready_task_count(job)
                if unready is None:
                    continue
                msg = f"{unready}/{len(job.tasks)} tasks in gang unschedulable: {job.fit_error()}"
                cond = PodGroupCondition(
                    type="Unschedulable", status="True", reason=NOT_ENOUGH_RESOURCES, message=msg,
                    transition_id=ssn.uid, last_transition_time=ssn.now,
                )
            else:
                cond = PodGroupCondition(
                    type="Scheduled", status="True", reason="tasks in gang are ready to be scheduled",
                    message="", transition_id=ssn.uid, last_transition_time=ssn.now,
                )
            update_podgroup_condition(job, cond)


def job_valid(job: JobInfo) -> ValidateResult | None:
    """Gang's JobValid: enough valid pods for the gang (and per role and sub-group). Reads only
    the job's tasks and PodGroup (``job_local``)."""
    if not job.check_task_valid():
        return ValidateResult(
            False, NOT_ENOUGH_PODS_OF_TASK, "Not enough valid pods of each task for gang-scheduling"
        )
    if job.topology is not None and not job.topology.check_valid():
        return ValidateResult(
            False, NOT_ENOUGH_PODS_OF_TASK, "Not enough valid subGroups of each task for gang-scheduling"
        )
    vtn = job.valid_task_num()
    if vtn < job.min_available:
        return ValidateResult(
            False,
            NOT_ENOUGH_PODS,
            f"Not enough valid tasks for gang-scheduling, valid: {vtn}, min: {job.min_available}",
        )
    return None


def unready_task_count(job: JobInfo) -> int | None:
    """How many more tasks a job that is not ready needs for its gang (``minAvailable`` minus
    the ready and in-session allocated ones), or None when gang leaves it alone because its
    releasing tasks will make it whole."""
    if _skip_unschedulable_for_releasing(job):
        return None
    schedulable = job.ready_task_num()
    for t in job.tasks_in(TaskStatus.Pending).values():
        ctx = t.last_transaction or t.transaction_context()
        if ctx.status & ALLOCATED_STATUS:
            schedulable += 1
    return job.min_available - schedulable


def update_podgroup_condition(job: JobInfo, cond: PodGroupCondition) -> None:
    """A condition of the same type replaces the old one (upstream ``UpdatePodGroupCondition``)."""
    assert job.podgroup is not None
    conds = job.podgroup.conditions
    for i, c in enumerate(conds):
        if c.type == cond.type:
            conds[i] = cond
            return
    conds.append(cond)


def _skip_unschedulable_for_releasing(job: JobInfo) -> bool:
    releasing = job.releasing_scheduled_task_num()
    if releasing == 0:
        return False
    if job.tasks_in(TaskStatus.Pending) or job.tasks_in(TaskStatus.Pipelined):
        return False
    return job.scheduled_task_num() + releasing >= job.min_available


def new(arguments: Mapping[str, Any]) -> Gang:
    return Gang(arguments)
