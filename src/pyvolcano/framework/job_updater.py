"""Session close: PodGroup status, pod conditions, and undoing what was not committed.

Upstream (framework/session.go ``jobStatus``/``getPodGroupPhase``, job_updater.go): at close
every job's PodGroup phase is recomputed from its tasks, conditions written by plugins
(gang) are kept, and pending tasks get a ``PodScheduled=False`` condition whose reason and
message come from their last transaction. Then the session's tentative state is rolled
back: open statements are discarded, and tasks still Allocated (gang never ready) or
Pipelined return to Pending. Pipelined tasks whose pipelining involved evictions keep the
node as ``status.nominatedNodeName``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyvolcano.api.job import JobInfo
from pyvolcano.api.task import COMPLETED_STATUS, TaskStatus

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["close_session", "podgroup_phase"]


def podgroup_phase(job: JobInfo, unschedulable: bool) -> str:
    assert job.podgroup is not None
    if job.tasks_in(TaskStatus.Running) and unschedulable:
        return "Unknown"
    scheduled = job.scheduled_task_num() + job.releasing_scheduled_task_num()
    completed = job.count(COMPLETED_STATUS)
    if scheduled >= job.podgroup.min_member:
        return "Completed" if scheduled == completed else "Running"
    if job.podgroup.phase != "Inqueue":
        return "Pending"
    return job.podgroup.phase


def close_session(ssn: Session) -> None:
    for _opt, plugin in ssn.plugins:
        plugin.on_session_close(ssn)
    for job in ssn.jobs.values():
        pg = job.podgroup
        if pg is None:
            continue
        unschedulable = any(
            c.type == "Unschedulable" and c.status == "True" and c.transition_id == ssn.uid for c in pg.conditions
        )
        pg.phase = podgroup_phase(job, unschedulable)
        pg.running = len(job.tasks_in(TaskStatus.Running))
        pg.failed = len(job.tasks_in(TaskStatus.Failed))
        pg.succeeded = len(job.tasks_in(TaskStatus.Succeeded))
        _record_task_conditions(ssn, job)
    for stmt in reversed(list(ssn._open_statements)):
        stmt.discard()
    for job in ssn.jobs.values():
        for status in (TaskStatus.Allocated, TaskStatus.Pipelined):
            for task in sorted(job.tasks_in(status).values(), key=lambda t: t.uid):
                node = ssn.nodes.get(task.node_name)
                if node is not None:
                    node.remove_task(task)
                job.update_task_status(task, TaskStatus.Pending)
                task.node_name = ""
                task.eviction_occurred = False


def _record_task_conditions(ssn: Session, job: JobInfo) -> None:
    for status in (TaskStatus.Allocated, TaskStatus.Pending, TaskStatus.Pipelined):
        for task in job.tasks_in(status).values():
            if task.sch_gated:
                continue
            reason, msg, nominated = job.task_scheduling_reason(task)
            pod = task.pod
            cond = {"type": "PodScheduled", "status": "False", "reason": reason, "message": msg}
            pod.conditions = [c for c in pod.conditions if c.get("type") != "PodScheduled"] + [cond]
            if nominated:
                if pod.nominated_node_name != nominated:
                    ssn.nominated[task.key] = nominated
                pod.nominated_node_name = nominated
