"""gangpreempt action (upstream pkg/scheduler/actions/gangpreempt/gangpreempt.go).

Gang- and topology-aware preemption inside a queue: a starving job takes room from
lower-priority jobs of its own queue, choosing whole victim bundles in one HyperNode domain at
a time instead of single tasks across the cluster, and nominates where its pods go. Design and
shared steps: :mod:`pyvolcano.actions._simulate` (pending tasks, domains, dry run, nominations)
and :mod:`pyvolcano.actions._bundle` (safe / whole bundles and their order).

Victim candidates in a domain: Bound or Running, preemptable tasks on the domain's nodes of
*other* jobs of the *same* queue whose job priority is strictly lower than the preemptor's, and
whose PodGroup does not set ``volcano.sh/preemptable: false``. Unlike preempt, a BestEffort
preemptor may take non-BestEffort victims (upstream leaves that to the plugins). Bundles are
ordered safe first, then the victim job the job order ranks last first, then ROI; the plugins'
UnifiedEvictable filter (context ``gangpreempt``, the job, the domain) sees them flattened in
that order, once per domain; the survivors are sorted again, and whole bundles dropped when
``allowWholeBundle`` is false.

Arguments (``configurations`` entry ``gangpreempt``): ``maxDomains`` (8; ≤ 0 means 8) caps the
domains tried per job; ``allowWholeBundle`` (true) lets it break victim gangs. The dry run's
predicate error cache follows allocate's ``predicateErrorCacheEnable`` (true).

Evictions carry the reason ``gangpreempt``; pipelined pods whose placement needed an eviction
get ``status.nominatedNodeName`` at session close, and each placed sub-job its nominated
HyperNode, which allocate's nomination fast path redeems in a later session.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyvolcano.actions import _simulate as sim
from pyvolcano.actions._bundle import (
    Bundle,
    BundleType,
    apply_allowed_tasks,
    create_job_bundles,
    flatten_bundles,
    sort_bundles_for_preempt,
)
from pyvolcano.api.job import JobInfo
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import PREEMPTABLE_STATUS, TaskInfo
from pyvolcano.framework.interfaces import EvictionContext, EvictionKind
from pyvolcano.framework.session import Session
from pyvolcano.framework.statement import Statement

__all__ = ["ARGUMENTS", "GangPreempt", "new"]

NAME = "gangpreempt"
ARGUMENTS = sim.domain_keys(f"action {NAME}")
EVICT_REASON = "gangpreempt"


class GangPreempt:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        self.max_domains, self.allow_whole_bundle = sim.domain_arguments(arguments, ARGUMENTS)
        self.enable_predicate_error_cache = True

    def execute(self, ssn: Session) -> None:
        self.enable_predicate_error_cache = sim.allocate_predicate_error_cache(ssn)
        queues, by_queue = sim.starving_jobs(ssn)
        while queues:
            queue = queues.pop()
            jobs = by_queue.get(queue.uid)
            while jobs:
                job = jobs.pop()
                stmt = ssn.statement()
                nominations = self.preempt_job_in_domains(ssn, stmt, queue, job)
                if ssn.job_pipelined(job):
                    stmt.commit()
                    sim.apply_nominations(job, nominations)
                else:
                    stmt.discard()

    def preempt_job_in_domains(self, ssn: Session, stmt: Statement, queue: QueueInfo,
                               job: JobInfo) -> dict[str, str] | None:
        pending = sim.collect_pending_tasks(ssn, job)
        if not pending:
            return None
        domains = sim.candidate_domains(ssn, job, self.max_domains)

        def select(domain: str, need: Resource) -> list[Bundle]:
            return self.select_domain_bundles(ssn, job, pending, need, domain)

        return sim.evict_in_domains(ssn, stmt, queue, job, pending, domains, select, EVICT_REASON,
                                    self.enable_predicate_error_cache)

    def select_domain_bundles(self, ssn: Session, job: JobInfo, pending: list[TaskInfo], need: Resource,
                              domain: str) -> list[Bundle]:
        """Upstream ``selectDomainBundles``: the domain's victim bundles, filtered and in order."""
        rows = ssn.topology.rows(domain)
        if len(rows) == 0 or not pending:
            return []
        by_job: dict[str, list[TaskInfo]] = {}
        for row in rows:
            for _uid, task in sorted(ssn.node_list[int(row)].tasks.items()):
                if not task.status & PREEMPTABLE_STATUS or not task.preemptable:
                    continue
                victim_job = ssn.jobs.get(task.job)
                if victim_job is None or victim_job.queue != job.queue:
                    continue
                if not sim.preemptable_for_gang_eviction(victim_job):
                    continue
                if job.priority <= victim_job.priority or task.job == job.uid:
                    continue
                by_job.setdefault(task.job, []).append(task)
        bundles = [b for uid in sorted(by_job) for b in create_job_bundles(ssn.jobs[uid], by_job[uid])]
        if not bundles:
            return []

        def later_job_first(left: JobInfo, right: JobInfo) -> bool:
            return not ssn.job_order_fn(left, right)

        sort_bundles_for_preempt(bundles, need, later_job_first)
        ctx = EvictionContext(EvictionKind.GANG_PREEMPT, job, domain)
        allowed = ssn.unified_evictable(ctx, flatten_bundles(bundles))
        if not allowed:
            return []
        valid = apply_allowed_tasks(bundles, {t.uid for t in allowed})
        sort_bundles_for_preempt(valid, need, later_job_first)
        return [b for b in valid if self.allow_whole_bundle or b.type is not BundleType.WHOLE]


def new(arguments: Mapping[str, Any] | None = None) -> GangPreempt:
    return GangPreempt(arguments)
