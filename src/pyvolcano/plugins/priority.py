"""priority plugin (upstream pkg/scheduler/plugins/priority/priority.go).

TaskOrder and JobOrder put higher priority first. Preemptable: a task of another job is a
victim iff its job's priority is lower than the preemptor job's; a task of the same job iff
its task priority is lower. UnifiedEvictable (gangpreempt; gangreclaim is not gated by
priority): a candidate whose job's priority is lower than the evicting job's. JobStarving: ``ready + waiting < #tasks``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyvolcano.api.job import JobInfo
from pyvolcano.api.task import TaskInfo
from pyvolcano.framework.argument_keys import ArgumentKeys
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.interfaces import EvictionContext, EvictionKind, Vote

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

NAME = "priority"
ARGUMENTS = ArgumentKeys(f"plugin {NAME}")
"""Upstream reads no argument of this plugin."""


def _desc(lv: int, rv: int) -> int:
    if lv == rv:
        return 0
    return -1 if lv > rv else 1


class Priority:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        self.arguments = Arguments(arguments, keys=ARGUMENTS).raw

    def on_session_open(self, ssn: Session) -> None:
        def task_order(l: TaskInfo, r: TaskInfo) -> int:
            return _desc(l.priority, r.priority)

        def job_order(l: JobInfo, r: JobInfo) -> int:
            return _desc(l.priority, r.priority)

        def preemptable(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            pjob = ssn.jobs.get(preemptor.job)
            if pjob is None:
                return [], Vote.PERMIT
            victims = []
            for p in preemptees:
                job = ssn.jobs.get(p.job)
                if job is None:
                    continue
                if job.uid != pjob.uid:
                    if job.priority < pjob.priority:
                        victims.append(p)
                elif p.priority < preemptor.priority:
                    victims.append(p)
            return victims, Vote.PERMIT

        def unified_evictable(ctx: EvictionContext, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            if ctx.kind is EvictionKind.GANG_RECLAIM:
                return candidates, Vote.PERMIT
            return [c for c in candidates if ssn.jobs[c.job].priority < ctx.job.priority], Vote.PERMIT

        def job_starving(job: JobInfo) -> bool:
            return job.ready_task_num() + job.waiting_task_num() < len(job.tasks)

        ssn.add_task_order_fn(NAME, task_order, key=lambda t: -t.priority)
        ssn.add_job_order_fn(NAME, job_order)
        ssn.add_preemptable_fn(NAME, preemptable)
        ssn.add_unified_evictable_fn(NAME, unified_evictable)
        ssn.add_job_starving_fn(NAME, job_starving)

    def on_session_close(self, ssn: Session) -> None:
        return None


def new(arguments: Mapping[str, Any]) -> Priority:
    return Priority(arguments)
