"""The job updater session close runs: PodGroup status, pod conditions, undoing what was not committed.

Upstream (framework/session.go ``jobStatus``/``getPodGroupPhase``, job_updater.go): at close
every job's PodGroup phase is recomputed from its tasks, conditions written by plugins
(gang) are kept, and pending tasks get a ``PodScheduled=False`` condition whose reason and
message come from their last transaction. Then the session's tentative state is rolled
back: open statements are discarded, and tasks still Allocated (gang never ready) or
Pipelined return to Pending. Pipelined tasks whose pipelining involved evictions keep the
node as ``status.nominatedNodeName``.

Diagnosis (pyvolcano.diagnosis): before the plugins close, every job left with unplaced pods
gets a :class:`~pyvolcano.diagnosis.Diagnosis`; after gang has written its ``Unschedulable``
condition, the condition's reason becomes the diagnosis' reason code and its message gets the
hint appended. Settled jobs keep both from the close that last looked at them.

Settled jobs: everything close derives for a job (gang's condition, the phase, the counts,
the pods' PodScheduled conditions) is a function of the job's tasks, its PodGroup, its fit
errors and its tasks' last transactions. A job whose close key
(:func:`~pyvolcano.cache.memo.close_key`) equals the one of the previous close would come
out exactly as it did then, so close leaves it alone: the phase function is idempotent on
unchanged input, and the conditions differ only in their transition id and time, which are
not part of the status written back. The memo lists the others (``SessionMemo.unsettled``,
``Session.unsettled``), visiting only the jobs its change feed reported since the previous
close, so close is O(changed jobs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyvolcano.api.job import JobInfo, podgroup_phase
from pyvolcano.api.task import TaskStatus
from pyvolcano.api.unschedule import ALL_NODES_UNAVAILABLE
from pyvolcano.diagnosis.diagnose import amend_condition

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["revert_tentative", "update_job_status"]

_TENTATIVE = TaskStatus.Allocated | TaskStatus.Pipelined


def update_job_status(ssn: Session, unsettled: list[str]) -> None:
    """Upstream's jobUpdater: the unsettled jobs' PodGroup phase and counts, their pending
    pods' PodScheduled conditions, and the diagnosis' reason code and hint on the
    ``Unschedulable`` condition gang wrote (run after the plugins closed)."""
    settled = ssn.settled
    for uid, diag in ssn.diagnoses.items():
        if uid not in settled:
            amend_condition(ssn.jobs[uid], diag, ssn.uid)
    for uid in unsettled:
        job = ssn.jobs[uid]
        pg = job.podgroup
        assert pg is not None
        unschedulable = any(
            c.type == "Unschedulable" and c.status == "True" and c.transition_id == ssn.uid for c in pg.conditions
        )
        job.set_phase(podgroup_phase(job, unschedulable))
        pg.running = len(job.tasks_in(TaskStatus.Running))
        pg.failed = len(job.tasks_in(TaskStatus.Failed))
        pg.succeeded = len(job.tasks_in(TaskStatus.Succeeded))
        _record_task_conditions(ssn, job)


def revert_tentative(ssn: Session) -> None:
    """Return every task still Allocated (gang never ready) or Pipelined to Pending."""
    for job in ssn.changed_jobs_in_order():
        # Only a job changed in this session can hold tentative tasks (a close returns them all).
        if not job.count(_TENTATIVE):
            continue
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
            if not msg:  # upstream cache.go RecordJobStatusEvent's baseErrorMessage
                msg = job.job_fit_errors or ALL_NODES_UNAVAILABLE
            pod = task.pod
            cond = {"type": "PodScheduled", "status": "False", "reason": reason, "message": msg}
            pod.conditions = [c for c in pod.conditions if c.get("type") != "PodScheduled"] + [cond]
            if nominated:
                if pod.nominated_node_name != nominated:
                    ssn.nominated[task.key] = nominated
                pod.nominated_node_name = nominated
