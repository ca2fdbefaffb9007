"""gangreclaim action (upstream pkg/scheduler/actions/gangreclaim/gangreclaim.go).

Gang- and topology-aware reclaim across queues: a starving job takes room from jobs of *other*
queues, choosing whole victim bundles in one HyperNode domain at a time, and nominates where
its pods go. Design and shared steps: :mod:`pyvolcano.actions._simulate` and
:mod:`pyvolcano.actions._bundle`.

Queues in QueueOrder; an overused queue is skipped. A job whose queue may not take its pending
tasks (``Preemptive(queue, pending)``) reclaims nothing. Victim candidates in a domain: Running,
preemptable tasks on the domain's nodes of jobs in other queues that allow reclaim
(``spec.reclaimable``, default true), whose PodGroup does not set ``volcano.sh/preemptable:
false``. Bundles are ordered safe first, then by VictimQueueOrder relative to the reclaiming
queue (the default: the queue the queue order ranks last first), then ROI; the plugins'
UnifiedEvictable filter (context ``gangreclaim``) sees them flattened in that order, once per
domain; the survivors are sorted again, and whole bundles dropped when ``allowWholeBundle`` is
false.

Arguments (``configurations`` entry ``gangreclaim``): ``maxDomains`` (8; ≤ 0 means 8) and
``allowWholeBundle`` (true); the dry run's predicate error cache follows allocate's
``predicateErrorCacheEnable`` (true). Evictions carry the reason ``gangreclaim``.

Of the fair-share plugins only capacity filters gang-reclaim victims (proportion and drf
register no UnifiedEvictable callback upstream), so with proportion a queue may lose tasks
below its deserved share.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pyvolcano.actions import _simulate as sim
from pyvolcano.actions._bundle import (
    Bundle,
    BundleType,
    apply_allowed_tasks,
    create_job_bundles,
    flatten_bundles,
    sort_bundles_for_reclaim,
)
from pyvolcano.api.job import JobInfo
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import TaskInfo, TaskStatus
from pyvolcano.framework.interfaces import EvictionContext, EvictionKind
from pyvolcano.framework.session import Session
from pyvolcano.framework.statement import Statement

__all__ = ["ARGUMENTS", "GangReclaim", "new"]

NAME = "gangreclaim"
ARGUMENTS = sim.domain_keys(f"action {NAME}")
EVICT_REASON = "gangreclaim"


class GangReclaim:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        self.max_domains, self.allow_whole_bundle = sim.domain_arguments(arguments, ARGUMENTS)
        self.enable_predicate_error_cache = True

    def execute(self, ssn: Session) -> None:
        self.enable_predicate_error_cache = sim.allocate_predicate_error_cache(ssn)
        queues, by_queue = sim.starving_jobs(ssn)
        while queues:
            queue = queues.pop()
            if ssn.overused(queue):
                continue
            jobs = by_queue.get(queue.uid)
            while jobs:
                job = jobs.pop()
                stmt = ssn.statement()
                nominations = self.reclaim_job_in_domains(ssn, stmt, queue, job)
                if ssn.job_pipelined(job):
                    stmt.commit()
                    sim.apply_nominations(job, nominations)
                else:
                    stmt.discard()

    def reclaim_job_in_domains(self, ssn: Session, stmt: Statement, queue: QueueInfo,
                               job: JobInfo) -> dict[str, str] | None:
        pending = sim.collect_pending_tasks(ssn, job)
        if not pending:
            return None
        if not ssn.preemptive(queue, pending):
            return None
        domains = sim.candidate_domains(ssn, job, self.max_domains)
        less_queue = _victim_queue_first(ssn, job.queue)

        def select(domain: str, need: Resource) -> list[Bundle]:
            return self.select_domain_bundles(ssn, less_queue, job, pending, need, domain)

        return sim.evict_in_domains(ssn, stmt, queue, job, pending, domains, select, EVICT_REASON,
                                    self.enable_predicate_error_cache)

    def select_domain_bundles(self, ssn: Session, less_queue: Callable[[QueueInfo, QueueInfo], bool] | None,
                              job: JobInfo, pending: list[TaskInfo], need: Resource, domain: str) -> list[Bundle]:
        """Upstream ``selectDomainBundles``: the domain's victim bundles, filtered and in order."""
        rows = ssn.topology.rows(domain)
        if len(rows) == 0 or not pending:
            return []
        by_job: dict[str, list[TaskInfo]] = {}
        for row in rows:
            for _uid, task in sorted(ssn.node_list[int(row)].tasks.items()):
                if task.status != TaskStatus.Running or not task.preemptable:
                    continue
                victim_job = ssn.jobs.get(task.job)
                if victim_job is None or victim_job.queue == job.queue:
                    continue
                if not sim.preemptable_for_gang_eviction(victim_job):
                    continue
                victim_queue = ssn.queues.get(victim_job.queue)
                if victim_queue is None or not victim_queue.reclaimable:
                    continue
                by_job.setdefault(task.job, []).append(task)
        bundles = [b for uid in sorted(by_job) for b in create_job_bundles(ssn.jobs[uid], by_job[uid])]
        if not bundles:
            return []
        sort_bundles_for_reclaim(bundles, need, less_queue, ssn.queues)
        ctx = EvictionContext(EvictionKind.GANG_RECLAIM, job, domain)
        allowed = ssn.unified_evictable(ctx, flatten_bundles(bundles))
        if not allowed:
            return []
        valid = apply_allowed_tasks(bundles, {t.uid for t in allowed})
        sort_bundles_for_reclaim(valid, need, less_queue, ssn.queues)
        return [b for b in valid if self.allow_whole_bundle or b.type is not BundleType.WHOLE]


def _victim_queue_first(ssn: Session, reclaimer_queue: str) -> Callable[[QueueInfo, QueueInfo], bool]:
    """Upstream ``queueLessFn``: VictimQueueOrder relative to the reclaimer's queue."""

    def less(left: QueueInfo, right: QueueInfo) -> bool:
        own = ssn.queues.get(reclaimer_queue)
        if own is None:
            return ssn.queue_order_fn(left, right)
        return ssn.victim_queue_order_fn(left, right, own)

    return less


def new(arguments: Mapping[str, Any] | None = None) -> GangReclaim:
    return GangReclaim(arguments)
