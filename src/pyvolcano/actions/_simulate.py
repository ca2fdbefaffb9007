"""The shared core of gangpreempt and gangreclaim (upstream pkg/scheduler/actions/utils/simulate.go
and util.go).

Both actions walk the starving jobs of each queue (QueueOrder, then JobOrder); for each job
they open a statement, try :func:`evict_in_domains`, commit the statement if the job is then
JobPipelined (and record each sub-job's nominated HyperNode, :func:`apply_nominations`), else
discard it. What differs is which running tasks a domain offers as victims and how their
bundles are ordered (:mod:`pyvolcano.actions._bundle`).

* **Pending tasks** (:func:`collect_pending_tasks`): the job's eviction worksheet is allocate's
  (:func:`~pyvolcano.actions.allocate.topology.organize_worksheet`: pending, ungated,
  non-BestEffort tasks per sub-job; sub-jobs needed for ``minSubGroups`` first, then
  SubJobOrder). A job that is not JobReady asks for all of them; a JobReady one only for the
  first sub-job that has pending tasks. The demand is the sum of their init requests. A job
  without a JobTopology has one default sub-job (a transient :class:`SubJobInfo` keyed by the
  job's UID; its readiness is the job's).
* **Domains** (:func:`candidate_domains`): the job's HyperNode gradient for eviction
  (network-topology-aware: widest tier first, at most ``hypernode.gradient.evict.max-hypernodes``),
  flattened without repeats and capped at ``maxDomains``; when it is empty and the job has no
  hard topology, the virtual root ``<cluster-top-hypernode>`` (every node).
* **Per domain** (:func:`evict_in_domains`): the action's bundles, in order, are added one by
  one; once the demand fits the domain's idle plus releasing resources plus what the selected
  victims free, :func:`build_nomination_plan` dry-runs the eviction and the placement; the
  first plan that makes the job JobPipelined is replayed into the job's statement.
* **Dry run** (:func:`build_nomination_plan`): evict every selected victim, then pop sub-jobs
  from the worksheet and pipeline all of each one's pending tasks inside the domain — for a job
  with a hard topology, inside the first HyperNode of the sub-job's eviction gradient (within
  the domain) where that works — on the best node (idle before future idle, then the plugins'
  scores) among those passing the request ≤ future idle test and the preempt predicate, each
  task first passing the queue's Allocatable and PrePredicate. A sub-job must end ready or
  pipelined; the walk stops when the job is JobPipelined (or after the first sub-job, for a job
  that was already JobReady). Every statement of the dry run is discarded before returning;
  only its saved operations leave.

Invariant: the session is unchanged when :func:`build_nomination_plan` returns; evictions and
pipelined tasks reach the session only through the job statement, and leave it only through
its commit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from pyvolcano.actions._bundle import Bundle, sum_resreq
from pyvolcano.actions._helpers import PREDICATE_ERROR_CACHE_ENABLE, PredicateHelper, TaskQueue, task_queue
from pyvolcano.actions._victims import request_fits, schedulable_nodes
from pyvolcano.actions.allocate.allocate import ARGUMENTS as ALLOCATE_ARGUMENTS
from pyvolcano.actions.allocate.tasks import prioritize_nodes
from pyvolcano.actions.allocate.topology import JobWorksheet, organize_worksheet
from pyvolcano.api.hypernode_tree import CLUSTER_TOP_HYPERNODE
from pyvolcano.api.job import JobInfo
from pyvolcano.api.names import PREEMPTABLE_KEY
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.resource import DimensionDefault, Resource
from pyvolcano.api.sub_job import SubJobInfo
from pyvolcano.api.task import TaskInfo, TaskStatus
from pyvolcano.api.unschedule import Code, FitErrors
from pyvolcano.framework.argument_keys import ArgumentKeys, honoured
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.session import Session
from pyvolcano.framework.statement import SavedOperation, Statement
from pyvolcano.framework.topology import PURPOSE_EVICT
from pyvolcano.util.priority_queue import PriorityQueue

__all__ = [
    "DEFAULT_MAX_DOMAINS",
    "allocate_predicate_error_cache",
    "apply_nominations",
    "build_nomination_plan",
    "candidate_domains",
    "collect_pending_tasks",
    "domain_arguments",
    "domain_keys",
    "evict_in_domains",
    "eviction_worksheet",
    "pick_domains",
    "preemptable_for_gang_eviction",
    "starving_jobs",
    "sum_idle_and_releasing",
]

DEFAULT_MAX_DOMAINS = 8
_MAX_DOMAINS = "maxDomains"
_ALLOW_WHOLE_BUNDLE = "allowWholeBundle"

BundleSelector = Callable[[str, Resource], list[Bundle]]


def starving_jobs(ssn: Session) -> tuple[PriorityQueue[QueueInfo], dict[str, PriorityQueue[JobInfo]]]:
    """The queues of every non-pending valid job (QueueOrder) and, per queue, its JobStarving jobs."""
    queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
    seen: set[str] = set()
    by_queue: dict[str, PriorityQueue[JobInfo]] = {}
    for job in ssn.jobs.values():
        if job.is_pending():
            continue
        verdict = ssn.job_valid(job)
        if verdict is not None and not verdict.passed:
            continue
        queue = ssn.queues.get(job.queue)
        if queue is None:
            continue
        if queue.uid not in seen:
            seen.add(queue.uid)
            queues.push(queue)
        if not ssn.job_starving(job):
            continue
        if job.queue not in by_queue:
            by_queue[job.queue] = PriorityQueue(ssn.job_order_fn)
        by_queue[job.queue].push(job)
    return queues, by_queue


def domain_keys(owner: str) -> ArgumentKeys:
    """gangpreempt's and gangreclaim's arguments: ``maxDomains`` and ``allowWholeBundle``."""
    return ArgumentKeys(owner, (honoured(_MAX_DOMAINS), honoured(_ALLOW_WHOLE_BUNDLE)))


def domain_arguments(arguments: Mapping[str, Any] | None, keys: ArgumentKeys) -> tuple[int, bool]:
    """gangpreempt's and gangreclaim's own arguments: ``maxDomains`` (≤ 0 means the default)
    and ``allowWholeBundle``."""
    args = Arguments(arguments, keys=keys)
    max_domains = args.get_int(_MAX_DOMAINS, DEFAULT_MAX_DOMAINS)
    return (max_domains if max_domains > 0 else DEFAULT_MAX_DOMAINS), args.get_bool(_ALLOW_WHOLE_BUNDLE, True)


def allocate_predicate_error_cache(ssn: Session) -> bool:
    """Upstream: the gang actions honour allocate's ``predicateErrorCacheEnable`` (default true)."""
    return Arguments(ssn.config.action_arguments("allocate"), keys=ALLOCATE_ARGUMENTS).get_bool(
        PREDICATE_ERROR_CACHE_ENABLE, True)


def preemptable_for_gang_eviction(job: JobInfo) -> bool:
    """Upstream ``IsJobPreemptableForGangEviction``: allowed unless the PodGroup sets
    ``volcano.sh/preemptable`` (annotation or label) to something false."""
    pg = job.podgroup
    if pg is None:
        return True
    if PREEMPTABLE_KEY in pg.annotations or PREEMPTABLE_KEY in pg.labels:
        return job.preemptable
    return True


# ---------------------------------------------------------------------- worksheet
def eviction_worksheet(ssn: Session, job: JobInfo) -> JobWorksheet:
    """Upstream ``organizeEvictionWorksheet`` (allocate's worksheet; see the module doc)."""
    if job.topology is not None:
        return organize_worksheet(ssn, job)
    ws = JobWorksheet(PriorityQueue(ssn.sub_job_order_fn))
    pending = sorted((t for t in job.tasks_in(TaskStatus.Pending).values()
                      if not t.sch_gated and not t.resreq.is_empty()), key=lambda t: t.uid)
    if pending:
        default = SubJobInfo(job.uid, job.uid, job.uid, min_available=job.min_available)
        ws.sub_jobs.push(default)
        ws.tasks[default.uid] = task_queue(ssn, pending)
    return ws


def collect_pending_tasks(ssn: Session, job: JobInfo) -> list[TaskInfo]:
    """Upstream ``CollectPendingTasksForGangEviction`` (see the module doc)."""
    ws = eviction_worksheet(ssn, job)
    ready = ssn.job_ready(job)
    out: list[TaskInfo] = []
    sub_jobs = ws.sub_jobs.clone()
    while sub_jobs:
        sj = sub_jobs.pop()
        tasks = ws.tasks.get(sj.uid)
        if tasks is None or not tasks:
            continue
        copy = tasks.clone()
        one = [copy.pop() for _ in range(len(copy))]
        if ready:
            return one
        out.extend(one)
    return out


# ---------------------------------------------------------------------- domains
def pick_domains(gradients: list[list[str]], max_domains: int, fallback: str) -> list[str]:
    """Upstream ``PickDomainsFromGradients``: flattened, first occurrence only, at most
    ``max_domains`` (when > 0); ``[fallback]`` when that leaves nothing."""
    domains: list[str] = []
    seen: set[str] = set()
    for gradient in gradients:
        for hn in gradient:
            if not hn or hn in seen:
                continue
            seen.add(hn)
            domains.append(hn)
            if 0 < max_domains <= len(domains):
                return domains
    if not domains and fallback:
        domains.append(fallback)
    return domains


def candidate_domains(ssn: Session, job: JobInfo, max_domains: int) -> list[str]:
    """Upstream ``GetCandidateDomains``."""
    gradients = ssn.hypernode_gradient_for_job(job, CLUSTER_TOP_HYPERNODE, PURPOSE_EVICT)
    hard = job.topology is not None and job.topology.contains_hard_topology()
    return pick_domains(gradients, max_domains, "" if hard else CLUSTER_TOP_HYPERNODE)


def sum_idle_and_releasing(ssn: Session, rows: np.ndarray) -> Resource:
    """Upstream ``SumIdleAndReleasing`` over the node rows of a domain."""
    table = ssn.node_table
    total = Resource()
    for d, name in enumerate(table.dims):
        value = float(table.idle[d][rows].sum() + table.releasing[d][rows].sum())
        if value != 0.0 or table.declared[d][rows].any():
            total.set(name, value)
    return total


def apply_nominations(job: JobInfo, nominations: dict[str, str] | None) -> None:
    """Upstream ``ApplySubJobNominations``, after the job's statement was committed."""
    for uid, hn in (nominations or {}).items():
        if not hn:
            continue
        if job.topology is not None:
            sj = job.topology.sub_jobs.get(uid)
            if sj is not None:
                sj.nominated_hypernode = hn
        elif uid == job.uid:
            job.nominated_hypernode = hn


# ---------------------------------------------------------------------- the search
def evict_in_domains(ssn: Session, stmt: Statement, queue: QueueInfo, job: JobInfo, pending: list[TaskInfo],
                     domains: list[str], select: BundleSelector, reason: str,
                     enable_predicate_error_cache: bool) -> dict[str, str] | None:
    """Upstream ``preemptJobInDomains`` / ``reclaimJobInDomains`` after the pending tasks: the
    first domain and bundle prefix whose dry run pipelines the job, replayed into ``stmt``;
    returns the sub-jobs' HyperNodes (None: nothing found)."""
    need = Resource()
    for t in pending:
        need.add(t.init_resreq)
    for domain in domains:
        rows = ssn.topology.rows(domain)
        if len(rows) == 0:
            continue
        bundles = select(domain, need)
        if not bundles:
            continue
        idle = sum_idle_and_releasing(ssn, rows)
        selected: list[TaskInfo] = []
        for bundle in bundles:
            selected.extend(bundle.tasks)
            available = idle.clone().add(sum_resreq(selected))
            if not need.less_equal(available, DimensionDefault.ZERO):
                continue
            built = build_nomination_plan(ssn, queue, job, domain, list(selected), reason,
                                          enable_predicate_error_cache)
            if built is None:
                continue
            plan, nominations = built
            # Upstream (actions/gangpreempt/gangpreempt.go): a replay that fails part-way keeps
            # what it already redid and goes on with the next bundle.
            if not stmt.recover_operations(plan):
                continue
            return nominations
    return None


def build_nomination_plan(ssn: Session, queue: QueueInfo | None, job: JobInfo, domain: str,
                          victims: list[TaskInfo], reason: str, enable_predicate_error_cache: bool,
                          ) -> tuple[list[SavedOperation], dict[str, str]] | None:
    """Upstream ``BuildNominationPlanInDomain``: the saved operations of a dry run that makes
    ``job`` JobPipelined inside ``domain`` after evicting ``victims``, and each placed
    sub-job's HyperNode; None if there is none. The session is unchanged on return."""
    if len(ssn.topology.rows(domain)) == 0:
        return None
    ws = eviction_worksheet(ssn, job)
    if ws.empty():
        return None
    was_ready = ssn.job_ready(job)
    evicting = bool(victims)
    hard = job.topology is not None and job.topology.contains_hard_topology()
    chain: list[Statement] = []
    try:
        if evicting:
            evictions = ssn.statement()
            chain.append(evictions)
            for victim in victims:
                evictions.evict(victim, reason)
        nominations: dict[str, str] = {}
        pipelined = False
        while ws.sub_jobs:
            sj = ws.sub_jobs.pop()
            tasks = ws.tasks.get(sj.uid)
            if tasks is None or not tasks:
                continue
            winner: tuple[Statement, str] | None = None
            if hard:
                for gradient in ssn.hypernode_gradient_for_sub_job(sj, domain, PURPOSE_EVICT):
                    for hn in gradient:
                        trial = _trial_at_hypernode(ssn, queue, job, sj, tasks, hn, evicting,
                                                    enable_predicate_error_cache)
                        if trial is not None:
                            winner = (trial, hn)
                            break
                    if winner is not None:
                        break
            else:
                trial = _trial_at_hypernode(ssn, queue, job, sj, tasks, domain, evicting,
                                            enable_predicate_error_cache)
                if trial is not None:
                    winner = (trial, domain)
            if winner is None:
                return None
            chain.append(winner[0])
            nominations[sj.uid] = winner[1]
            pipelined = ssn.job_pipelined(job)
            if was_ready or pipelined:
                break
        if not pipelined:
            return None
        return [op for st in chain for op in st.save_operations()], nominations
    finally:
        for st in reversed(chain):
            st.discard()


def _trial_at_hypernode(ssn: Session, queue: QueueInfo | None, job: JobInfo, sj: SubJobInfo, tasks: TaskQueue,
                        hypernode: str, evicting: bool, enable_predicate_error_cache: bool) -> Statement | None:
    """Upstream ``runSimulateTrialAtHyperNode``: every task of ``tasks`` pipelined on nodes of
    ``hypernode`` in a fresh statement, returned applied; None (nothing applied) on a miss."""
    candidates = ssn.topology.rows(hypernode)
    if len(candidates) == 0:
        return None
    trial = ssn.statement()
    helper = PredicateHelper(ssn, enable_error_cache=enable_predicate_error_cache)
    work = tasks.clone()
    while work:
        task = work.pop()
        placed = _place_one(ssn, queue, trial, helper, task, candidates, evicting)
        if not placed:
            trial.discard()
            return None
    if not trial.operations or not (ssn.sub_job_ready(job, sj) or ssn.sub_job_pipelined(job, sj)):
        trial.discard()
        return None
    return trial


def _place_one(ssn: Session, queue: QueueInfo | None, trial: Statement, helper: PredicateHelper,
               task: TaskInfo, candidates: np.ndarray, evicting: bool) -> bool:
    if queue is not None and not ssn.allocatable(queue, task):
        return False
    schedulable = schedulable_nodes(ssn, task)
    # Upstream (actions/utils/simulate.go intersectNodesByName): an empty filter keeps every
    # node of the domain.
    nodes = candidates if len(schedulable) == 0 else candidates[np.isin(candidates, schedulable)]
    if len(nodes) == 0:
        return False
    if ssn.pre_predicate(task) is not None:
        return False
    feasible, _errors = helper.predicate_nodes(task, nodes, _simulate_predicate(ssn))
    if len(feasible) == 0:
        return False
    best = prioritize_nodes(ssn, task, feasible)
    if best is None:
        return False
    node = ssn.node_list[best]
    if not request_fits(task, node.future_idle()):
        return False
    return trial.pipeline(task, node.name, evicting)


def _simulate_predicate(ssn: Session) -> Callable[[TaskInfo, np.ndarray], tuple[np.ndarray, FitErrors]]:
    """Upstream ``simulatePredicate``: request ≤ future idle, then ``PredicateForPreemptAction``."""

    def predicate(task: TaskInfo, idx: np.ndarray) -> tuple[np.ndarray, FitErrors]:
        fit = ssn.node_table.fit_mask(ssn.node_table.task_vector(task), idx)
        ok = np.zeros(len(idx), dtype=bool)
        errors = FitErrors()
        if not fit.all():
            errors.add("Insufficient resources", Code.Unschedulable, idx[~fit])
        live = np.flatnonzero(fit)
        if len(live):
            passed, more = ssn.preempt_predicate(task, idx[live])
            ok[live[passed]] = True
            for group in more.groups:
                errors.add(group.reason, group.code, group.nodes)
        return ok, errors

    return predicate
