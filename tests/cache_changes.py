"""Random changes to a scheduler cache of jobs ``ns/pg{j}`` with tasks ``p{j}-{t}`` in queues
``a`` / ``b``, for the tests that compare a state kept by the change feed with a fresh walk.

Operation codes: 0 = allocate the task, 1 = back to Pending, 2 = delete the task, 3 = drop the
PodGroup, 4 = the job's queue deleted, 5 = created again, 6 = the PodGroup added again (a new
JobInfo when the job had gone), 7 = its phase set to Inqueue, 8 = to Pending.
"""

from __future__ import annotations

from pyvolcano.api.objects import PodGroup, Queue
from pyvolcano.api.task import TaskStatus
from pyvolcano.cache.cache import SchedulerCache


def apply_change(cache: SchedulerCache, op: int, j: int, t: int) -> None:
    job = cache.pg_jobs.get(f"ns/pg{j}")
    task = None if job is None else next((x for x in job.tasks.values() if x.name == f"p{j}-{t}"), None)
    if op == 4:
        cache.delete_queue("ab"[j % 2])
    elif op == 5:
        cache.upsert_queue(Queue(name="ab"[j % 2], uid="ab"[j % 2]))
    elif op == 6:
        cache.add_podgroup(PodGroup(namespace="ns", name=f"pg{j}", uid=f"pg{j}", queue="ab"[j % 2], min_member=1))
    elif job is not None and task is not None and op in (0, 1):
        job.update_task_status(task, TaskStatus.Allocated if op == 0 else TaskStatus.Pending)
    elif task is not None and op == 2:
        cache.delete_pod(task.uid)
    elif job is not None and op == 3:
        cache.delete_podgroup("ns", f"pg{j}")
    elif job is not None and job.podgroup is not None and op in (7, 8):
        job.set_phase("Inqueue" if op == 7 else "Pending")
