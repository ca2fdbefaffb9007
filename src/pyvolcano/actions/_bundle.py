"""Victim bundles of the gang-aware eviction actions (upstream pkg/scheduler/actions/utils/bundle.go).

gangpreempt and gangreclaim do not pick victims task by task: the candidate tasks a victim job
has inside one domain (a HyperNode) are split into at most two **bundles**, each evicted as a
whole or not at all.

* The **safe** bundle holds the tasks whose eviction keeps the job gang-ready, lowest task
  priority first (ties by UID): a task is safe while the job has ready tasks above
  ``minAvailable``, its role has allocated tasks above the role's ``minTaskMember`` (checked
  only when ``minAvailable`` ≥ the sum of the role minimums, as the gang plugin does), and, for
  a job with sub-group policies, its sub-job is already broken or its group keeps more ready
  sub-jobs than ``minSubGroups`` (the first eviction in a ready sub-job breaks it and costs its
  group one). A job that is already not gang-ready has only a safe bundle.
* The **whole** bundle holds the rest: choosing it breaks the gang, so its global cost is the
  resources of every task of the job.

Bundles are ordered safe before whole; then by the victim job (gangpreempt: the job the job
order ranks last first) or by the victim queue (gangreclaim: VictimQueueOrder relative to the
reclaiming queue); then by return on investment, higher first::

    ROI = Σ_r min(local_r, need_r) / need_r  ÷  Σ_r global_r / need_r

over the dimensions the demand requests (a safe bundle's global cost is zero: infinite ROI);
then by job UID, first task UID and size, so the order is total and stable.

After the plugins' UnifiedEvictable filter (:func:`apply_allowed_tasks`) a safe bundle keeps
its approved tasks and a whole bundle survives only if every task was approved.
"""

from __future__ import annotations

import enum
import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from pyvolcano.api.job import JobInfo
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import ALLOCATED_STATUS, TaskInfo, TaskStatus

__all__ = [
    "Bundle",
    "BundleType",
    "apply_allowed_tasks",
    "create_job_bundles",
    "flatten_bundles",
    "sort_bundles_for_preempt",
    "sort_bundles_for_reclaim",
    "sum_resreq",
]


class BundleType(enum.IntEnum):
    SAFE = 0
    WHOLE = 1


@dataclass(frozen=True, slots=True)
class Bundle:
    type: BundleType
    job: JobInfo
    tasks: list[TaskInfo]
    local_res: Resource
    global_res: Resource


def sum_resreq(tasks: list[TaskInfo]) -> Resource:
    total = Resource()
    for t in tasks:
        total.add(t.resreq)
    return total


def create_job_bundles(job: JobInfo, local_tasks: list[TaskInfo]) -> list[Bundle]:
    """Upstream ``CreateJobBundles``: ``local_tasks`` (the job's candidates in one domain) split
    into a safe and a whole bundle (see the module doc); empty bundles are left out."""
    if not local_tasks:
        return []
    ordered = sorted(local_tasks, key=lambda t: (t.priority, t.uid))
    job_surplus = job.ready_task_num() - job.min_available
    if job_surplus < 0:
        return [Bundle(BundleType.SAFE, job, ordered, sum_resreq(ordered), Resource())]

    enforce_roles = job.min_available >= job.task_min_available_total
    role_surplus: dict[str, int] = {}
    if enforce_roles:
        role_ready: dict[str, int] = {}
        for t in job.tasks.values():
            if (t.status & (ALLOCATED_STATUS | TaskStatus.Succeeded)
                    or (t.status == TaskStatus.Pending and t.init_resreq.is_empty())):
                role_ready[t.role] = role_ready.get(t.role, 0) + 1
        role_surplus = {role: role_ready.get(role, 0) - m for role, m in job.task_min_available.items()}

    topo = job.topology
    enforce_sub_jobs = topo is not None and bool(topo.min_sub_jobs)
    broken: set[str] = set()
    group_surplus: dict[str, int] = {}
    if topo is not None and enforce_sub_jobs:
        for sj in topo.sub_jobs.values():
            if sj.is_ready():
                group_surplus[sj.gid] = group_surplus.get(sj.gid, 0) + 1
            else:
                broken.add(sj.uid)
        for gid, m in topo.min_sub_jobs.items():
            group_surplus[gid] = group_surplus.get(gid, 0) - m

    safe: list[TaskInfo] = []
    whole: list[TaskInfo] = []
    for task in ordered:
        has_role_min = enforce_roles and task.role in job.task_min_available
        role_safe = not has_role_min or role_surplus[task.role] > 0
        sj_uid = ""
        group_safe = True
        if topo is not None and enforce_sub_jobs:
            sj_uid = topo.task_to_sub_job.get(task.uid, "")
            owner = topo.sub_jobs.get(sj_uid)
            # A task without a sub-job is a bookkeeping error upstream; it goes whole.
            group_safe = owner is not None and (owner.uid in broken or group_surplus.get(owner.gid, 0) > 0)
        if job_surplus > 0 and role_safe and group_safe:
            safe.append(task)
            job_surplus -= 1
            if has_role_min:
                role_surplus[task.role] -= 1
            if topo is not None and enforce_sub_jobs and sj_uid not in broken:
                broken.add(sj_uid)
                gid = topo.sub_jobs[sj_uid].gid
                group_surplus[gid] = group_surplus.get(gid, 0) - 1
        else:
            whole.append(task)

    bundles: list[Bundle] = []
    if safe:
        bundles.append(Bundle(BundleType.SAFE, job, safe, sum_resreq(safe), Resource()))
    if whole:
        bundles.append(Bundle(BundleType.WHOLE, job, whole, sum_resreq(whole), sum_resreq(list(job.tasks.values()))))
    return bundles


def flatten_bundles(bundles: list[Bundle]) -> list[TaskInfo]:
    return [t for b in bundles for t in b.tasks]


def apply_allowed_tasks(bundles: list[Bundle], allowed: set[str]) -> list[Bundle]:
    """Upstream ``ApplyAllowedTasks``: shrink safe bundles to their approved tasks; keep a whole
    bundle only when every task of it was approved (by UID)."""
    valid: list[Bundle] = []
    for b in bundles:
        if not b.tasks:
            continue
        approved = [t for t in b.tasks if t.uid in allowed]
        if b.type is BundleType.WHOLE:
            if len(approved) == len(b.tasks):
                valid.append(b)
        elif approved:
            valid.append(replace(b, tasks=approved, local_res=sum_resreq(approved)))
    return valid


def _score_against_need(res: Resource, need: Resource, *, cap_at_need: bool) -> float:
    score = 0.0
    for name in need.resource_names():
        n = need.get(name)
        if n <= 0:
            continue
        v = res.get(name)
        if cap_at_need and v > n:
            v = n
        score += v / n
    return score


def bundle_roi(b: Bundle, need: Resource) -> float:
    local = _score_against_need(b.local_res, need, cap_at_need=True)
    cost = _score_against_need(b.global_res, need, cap_at_need=False)
    if cost == 0:
        return math.inf
    return local / cost


def _stable(l: Bundle, r: Bundle) -> int:
    lk = (l.job.uid, l.tasks[0].uid if l.tasks else "")
    rk = (r.job.uid, r.tasks[0].uid if r.tasks else "")
    if lk != rk:
        return -1 if lk < rk else 1
    return len(l.tasks) - len(r.tasks)


def _sort(bundles: list[Bundle], need: Resource, before: Callable[[Bundle, Bundle], bool | None]) -> None:
    """Safe first, then ``before`` (None: no opinion), then ROI, then the stable keys."""
    roi = {id(b): bundle_roi(b, need) for b in bundles}

    def compare(l: Bundle, r: Bundle) -> int:
        if l.type != r.type:
            return int(l.type) - int(r.type)
        first = before(l, r)
        if first is not None:
            return -1 if first else 1
        lr, rr = roi[id(l)], roi[id(r)]
        if lr != rr:
            return -1 if lr > rr else 1
        return _stable(l, r)

    bundles.sort(key=functools.cmp_to_key(compare))


def sort_bundles_for_preempt(bundles: list[Bundle], need: Resource,
                             less_victim_job: Callable[[JobInfo, JobInfo], bool]) -> None:
    """Upstream ``SortBundlesForPreempt``; ``less_victim_job(l, r)``: evict ``l``'s job first."""

    def before(l: Bundle, r: Bundle) -> bool | None:
        if l.job.uid == r.job.uid:
            return None
        lr, rl = less_victim_job(l.job, r.job), less_victim_job(r.job, l.job)
        return lr if lr != rl else None

    _sort(bundles, need, before)


def sort_bundles_for_reclaim(bundles: list[Bundle], need: Resource,
                             less_queue: Callable[[QueueInfo, QueueInfo], bool] | None,
                             queues: Mapping[str, QueueInfo]) -> None:
    """Upstream ``SortBundlesForReclaim``; ``less_queue(l, r)``: evict from queue ``l`` first."""

    def before(l: Bundle, r: Bundle) -> bool | None:
        if less_queue is None:
            return None
        lq, rq = queues.get(l.job.queue), queues.get(r.job.queue)
        if lq is None or rq is None or lq.uid == rq.uid:
            return None
        lr, rl = less_queue(lq, rq), less_queue(rq, lq)
        return lr if lr != rl else None

    _sort(bundles, need, before)
