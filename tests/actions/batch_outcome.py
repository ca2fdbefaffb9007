"""What one session decided, in a form two runs can be compared by (the batch equivalence tests)."""

from __future__ import annotations

from typing import Any

from pyvolcano.api.task import TaskStatus
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.runtime.cycle import SessionResult


def session_outcome(cache: SchedulerCache, res: SessionResult) -> list[Any]:
    """Binds in order, pipelined tasks, evictions, PodGroup phases and conditions, fit errors,
    the round-robin index after the session, the pending diagnoses, and per job its pending
    tasks in the job's order with their last transactions (the pod conditions' source)."""
    out: list[Any] = [(res.binds, sorted(res.pipelined.items()), res.evictions, sorted(res.podgroup_phases.items()),
                       cache.memo.last_processed_node_index)]
    for pg in sorted(cache.podgroups(), key=lambda p: (p.namespace, p.name)):
        out.append((pg.name, pg.phase, [(c.type, c.status, c.reason, c.message) for c in pg.conditions]))
    for uid, job in sorted(cache.jobs.items()):
        out.append((uid, job.job_fit_errors, sorted((k, v.error()) for k, v in job.nodes_fit_errors.items())))
        out.append([(t.uid, t.last_transaction) for t in job.tasks_in(TaskStatus.Pending).values()])
    out.append(sorted((k, repr(v)) for k, v in res.diagnoses.items()))
    return out
