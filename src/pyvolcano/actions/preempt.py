"""preempt action (upstream pkg/scheduler/actions/preempt/preempt.go).

Starving jobs take resources from lower-ranked work of their *own* queue (reclaim handles
other queues). Two passes per queue, queues in QueueOrder:

1. **Between jobs.** Each starving job (JobOrder) gets one statement; while it is still
   starving its pending tasks (TaskOrder) try to preempt Bound/Running, preemptable tasks of
   other jobs of the same queue (a BestEffort preemptor only takes BestEffort victims). The
   statement is committed — evictions leave the session — only if the job is then
   JobPipelined, otherwise discarded.
2. **Within each starving job.** Its remaining pending tasks preempt tasks of the same job,
   one statement per task; the first task that cannot be placed ends the job's turn.

Placing one preemptor (``_preempt``): the task must be eligible (not ``preemptionPolicy:
Never``; a previous nomination must not be still pending), pass PrePredicate; candidate
nodes are those not known to be unresolvable that pass the preempt predicate. Then either

* **normal preemption**: nodes best-scored first; on each, victims = ``Preemptable`` over
  the filtered tasks; evict them cheapest first in a per-node statement until the preemptor
  fits (queue ``Allocatable`` ∧ request ≤ FutureIdle ∧ predicates), then pipeline it there and
  merge the node statement, or discard it and try the next node; or
* **topology-aware preemption** (``enableTopologyAwarePreemption``): kube-scheduler style.
  From a random offset, dry-run nodes until enough candidates are found; per node remove
  victims cheapest first until the preemptor fits, then reprieve them highest first,
  keeping only those whose return breaks the fit; pick the candidate with the lowest
  highest victim priority, then the lowest priority sum, then the fewest victims; evict its
  victims and pipeline the preemptor there.

Design of the dry run. Upstream simulates on cloned nodes through plugin "simulate" hooks.
We take victims off the real node (``NodeInfo.remove_task``) and fire the plugins' deallocate
events, so queue accounting follows, and put everything back before the next node. We do not
evict through a Statement here: an evicted task stays on its node as Releasing and still
counts for the pod-number, host-port and inter-pod predicates, whereas upstream's simulation
removes it (the BestEffort case on a one-pod node depends on that). The fit test is the
real one: ``Allocatable`` (upstream's simulated Allocatable of proportion skips the
queue-open check) and every predicate (upstream's simulated predicate runs only inter-pod
affinity and device filters; the others are static and were applied to pick the nodes).
Removed tasks are listed in ``ssn.dry_run_removed``: upstream calls a plugin's simulate
add/remove hooks only when it has ``enablePreemptable`` or ``enabledAllocatable``, so the
predicates plugin without either judges inter-pod affinity as if nothing had been removed
(``Session.simulates_removal``).

Deviation: a topology-aware candidate must fit completely (quota, resources, predicates)
once all its victims are removed; upstream checks only the predicates at that point and so
evicts every victim on a node where the preemptor's queue still refuses it (see
``select_victims_on_node``).

Invariants: nothing tentative leaks — every per-node statement is either merged into the
caller's statement or discarded, and every dry-run removal is restored (also on errors).
Randomness comes only from ``ssn.rng`` (the topology-aware offset).

Preemptor jobs are the non-pending, valid, JobStarving jobs of an existing queue, except those
with a network topology (the job's or a sub-group's, hard or soft): as upstream, they do not
preempt at all (gangpreempt is the topology-aware path); their pods may still be victims.

Not modelled: node sharding (one candidate group), the PDB criterion and the "latest start
time" tie-break of candidate selection (pods carry no ``status.startTime`` here; remaining
ties go to the first candidate found, where upstream's pick is effectively random), and
parallel dry runs (``topologyAwarePreemptWorkerNum`` is accepted; nodes are checked one by one in offset order).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from pyvolcano.actions._helpers import PREDICATE_ERROR_CACHE_ENABLE, PredicateHelper
from pyvolcano.actions._victims import (
    TaskFilter,
    contains_unresolvable,
    nodes_passing_preempt_predicate,
    predicate_statuses_on_node,
    preemption_never,
    request_fits,
    tasks_on_node,
    validate_victims,
)
from pyvolcano.api.job import JobInfo
from pyvolcano.api.node import NodeInfo
from pyvolcano.api.objects import Pod
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import PREEMPTABLE_STATUS, TaskInfo, TaskStatus
from pyvolcano.framework.argument_keys import ArgumentKeys, honoured
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.session import Session
from pyvolcano.framework.statement import Statement
from pyvolcano.framework.victims import build_victims_queue
from pyvolcano.util.priority_queue import PriorityQueue

__all__ = ["ARGUMENTS", "Candidate", "Preempt", "new", "select_candidate"]

NAME = "preempt"
_TOPOLOGY_AWARE = "enableTopologyAwarePreemption"
_WORKER_NUM = "topologyAwarePreemptWorkerNum"
_MIN_PERCENTAGE = "minCandidateNodesPercentage"
_MIN_ABSOLUTE = "minCandidateNodesAbsolute"
_MAX_ABSOLUTE = "maxCandidateNodesAbsolute"
ARGUMENTS = ArgumentKeys(f"action {NAME}", (
    honoured(PREDICATE_ERROR_CACHE_ENABLE), honoured(_TOPOLOGY_AWARE),
    honoured(_WORKER_NUM, note="candidates are examined one after another; the choice is the same"),
    honoured(_MIN_PERCENTAGE), honoured(_MIN_ABSOLUTE), honoured(_MAX_ABSOLUTE),
))
EVICT_REASON = "preempt"

# Upstream (actions/preempt/preempt.go pickOneNodeForPreemption): MaxInt32+1 is added to
# every priority so that a few negative priorities never beat fewer equal ones.
_PRIORITY_OFFSET = 2**31


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node where the preemptor fits after evicting ``victims`` (highest ranked first)."""

    node: NodeInfo
    victims: list[TaskInfo]


class Preempt:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        args = Arguments(arguments, keys=ARGUMENTS)
        self.enable_predicate_error_cache = args.get_bool(PREDICATE_ERROR_CACHE_ENABLE, True)
        self.enable_topology_aware_preemption = args.get_bool(_TOPOLOGY_AWARE, False)
        self.topology_aware_preempt_worker_num = args.get_int(_WORKER_NUM, 16)
        self.min_candidate_nodes_percentage = args.get_int(_MIN_PERCENTAGE, 10)
        self.min_candidate_nodes_absolute = args.get_int(_MIN_ABSOLUTE, 1)
        self.max_candidate_nodes_absolute = args.get_int(_MAX_ABSOLUTE, 100)

    # ------------------------------------------------------------------ action
    def execute(self, ssn: Session) -> None:
        jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        starving_by_queue: dict[str, list[JobInfo]] = {}
        tasks_by_job: dict[str, PriorityQueue[TaskInfo]] = {}
        for job in ssn.jobs.values():
            if not _is_preemptor_job(ssn, job):
                continue
            if job.queue not in jobs_by_queue:
                jobs_by_queue[job.queue] = PriorityQueue(ssn.job_order_fn)
            jobs_by_queue[job.queue].push(job)
            starving_by_queue.setdefault(job.queue, []).append(job)
            tasks_by_job[job.uid] = _pending_tasks(ssn, job)

        queues: PriorityQueue[QueueInfo] = PriorityQueue(
            ssn.queue_order_fn, (ssn.queues[uid] for uid in sorted(jobs_by_queue))
        )
        helper = PredicateHelper(ssn, enable_error_cache=self.enable_predicate_error_cache)
        while queues:
            queue = queues.pop()
            self._preempt_between_jobs(ssn, helper, jobs_by_queue[queue.uid], tasks_by_job)
            for job in starving_by_queue[queue.uid]:
                self._preempt_within_job(ssn, helper, job)

    def _preempt_between_jobs(
        self,
        ssn: Session,
        helper: PredicateHelper,
        jobs: PriorityQueue[JobInfo],
        tasks_by_job: Mapping[str, PriorityQueue[TaskInfo]],
    ) -> None:
        while jobs:
            job = jobs.pop()
            tasks = tasks_by_job[job.uid]
            stmt = ssn.statement()
            while ssn.job_starving(job) and tasks:
                preemptor = tasks.pop()
                self._preempt(ssn, stmt, preemptor, _other_job_in_queue(ssn, preemptor, job), helper)
            if ssn.job_pipelined(job):
                stmt.commit()
            else:
                stmt.discard()

    def _preempt_within_job(self, ssn: Session, helper: PredicateHelper, job: JobInfo) -> None:
        # Upstream (actions/preempt/preempt.go): a fresh task queue, not the one the
        # between-jobs pass drained, so other queues' preemptors are not lost.
        tasks = _pending_tasks(ssn, job)
        while tasks:
            preemptor = tasks.pop()
            stmt = ssn.statement()
            if not self._preempt(ssn, stmt, preemptor, _same_job(preemptor), helper):
                stmt.discard()
                return
            stmt.commit()

    # ------------------------------------------------------------------ one preemptor
    def _preempt(
        self, ssn: Session, stmt: Statement, preemptor: TaskInfo, keep: TaskFilter, helper: PredicateHelper
    ) -> bool:
        if not _eligible_to_preempt(ssn, preemptor):
            return False
        if ssn.pre_predicate(preemptor) is not None:
            return False
        job = ssn.jobs.get(preemptor.job)
        if job is None:
            return False
        queue = ssn.queues[job.queue]
        nodes = nodes_passing_preempt_predicate(ssn, helper, preemptor)
        if self.enable_topology_aware_preemption:
            return self._topology_aware_preempt(ssn, stmt, preemptor, queue, keep, nodes)
        return self._normal_preempt(ssn, stmt, preemptor, queue, keep, nodes)

    def _normal_preempt(
        self,
        ssn: Session,
        stmt: Statement,
        preemptor: TaskInfo,
        queue: QueueInfo,
        keep: TaskFilter,
        nodes: np.ndarray,
    ) -> bool:
        for index in ssn.sort_nodes_by_score(preemptor, nodes):
            node = ssn.node_list[int(index)]
            victims = ssn.preemptable(preemptor, tasks_on_node(node, keep))
            if validate_victims(preemptor, node, victims) is not None:
                continue
            node_stmt = ssn.statement()
            cheapest_first = build_victims_queue(ssn, victims, preemptor)
            preempted = Resource()
            fits = _fits_on_node(ssn, queue, preemptor, node)
            while not fits and cheapest_first:
                victim = cheapest_first.pop()
                node_stmt.evict(victim, EVICT_REASON)
                preempted.add(victim.resreq)
                fits = _fits_on_node(ssn, queue, preemptor, node)
            # Upstream (actions/preempt/preempt.go normalPreempt): the eviction flag means
            # "some resources were freed", so evicting only BestEffort victims pipelines
            # without it (and the preemptor gets no nominated node).
            if fits and node_stmt.pipeline(preemptor, node.name, not preempted.is_empty()):
                stmt.merge(node_stmt)
                return True
            node_stmt.discard()
        return False

    # ------------------------------------------------------------------ topology-aware mode
    def _topology_aware_preempt(
        self,
        ssn: Session,
        stmt: Statement,
        preemptor: TaskInfo,
        queue: QueueInfo,
        keep: TaskFilter,
        nodes: np.ndarray,
    ) -> bool:
        candidates = self._find_candidates(ssn, preemptor, queue, keep, nodes)
        best = select_candidate(candidates)
        if best is None:
            return False
        tmp = ssn.statement()
        for victim in best.victims:
            tmp.evict(victim, EVICT_REASON)
        if not tmp.pipeline(preemptor, best.node.name, True):
            tmp.discard()
            return False
        stmt.merge(tmp)
        return True

    def num_candidates(self, num_nodes: int) -> int:
        """Upstream ``calculateNumCandidates``: a percentage of the nodes, clamped."""
        n = num_nodes * self.min_candidate_nodes_percentage // 100
        n = max(n, self.min_candidate_nodes_absolute)
        n = min(n, self.max_candidate_nodes_absolute)
        return min(n, num_nodes)

    def _find_candidates(
        self, ssn: Session, preemptor: TaskInfo, queue: QueueInfo, keep: TaskFilter, nodes: np.ndarray
    ) -> list[Candidate]:
        count = len(nodes)
        if count == 0:
            return []
        offset = int(ssn.rng.integers(count))
        wanted = self.num_candidates(count)
        candidates: list[Candidate] = []
        for i in range(count):
            node = ssn.node_list[int(nodes[(offset + i) % count])]
            victims = select_victims_on_node(ssn, preemptor, queue, node, keep)
            if victims:
                candidates.append(Candidate(node, victims))
                if len(candidates) >= wanted:
                    break
        return candidates


def select_victims_on_node(
    ssn: Session, preemptor: TaskInfo, queue: QueueInfo, node: NodeInfo, keep: TaskFilter
) -> list[TaskInfo]:
    """Upstream ``SelectVictimsOnNode``: the smallest set of victims (by reprieve) that makes room.

    Returns the victims highest ranked first, or an empty list when the node is not a
    candidate. The session is unchanged on return.
    """
    victims = ssn.preemptable(preemptor, tasks_on_node(node, keep))
    if validate_victims(preemptor, node, victims) is not None:
        return []
    cheapest_first = build_victims_queue(ssn, victims, preemptor)

    def fits() -> bool:
        return _fits_on_node(ssn, queue, preemptor, node)

    with _removed_from_node(ssn, node) as removal:
        potential: list[TaskInfo] = []
        while cheapest_first:
            victim = cheapest_first.pop()
            potential.append(victim)
            removal.remove(victim)
            if fits():
                break
        if not potential:
            return []
        # Upstream (actions/preempt/preempt.go SelectVictimsOnNode) re-checks only the
        # predicates here, so a node where the queue quota still refuses the preemptor after
        # every victim is gone reaches the reprieve, which keeps every victim out: all of them
        # are evicted for a preemptor that cannot be allocated. No conformance case depends
        # on it and normal preemption rolls that situation back, so we require the full fit,
        # as kube-scheduler's SelectVictimsOnNode does.
        if not fits():
            return []
        chosen: list[TaskInfo] = []
        for victim in reversed(potential):
            removal.restore(victim)
            if not fits():
                removal.remove(victim)
                chosen.append(victim)
        return chosen


def select_candidate(candidates: list[Candidate]) -> Candidate | None:
    """Upstream ``SelectCandidate``/``pickOneNodeForPreemption`` without the PDB and start-time criteria."""
    if len(candidates) <= 1:
        return candidates[0] if candidates else None

    def lowest_top_priority(c: Candidate) -> int:
        return -pod_priority(c.victims[0].pod)

    def lowest_priority_sum(c: Candidate) -> int:
        return -sum(pod_priority(v.pod) + _PRIORITY_OFFSET for v in c.victims)

    def fewest_victims(c: Candidate) -> int:
        return -len(c.victims)

    score_fns: list[Callable[[Candidate], int]] = [lowest_top_priority, lowest_priority_sum, fewest_victims]
    remaining = candidates
    for score in score_fns:
        scores = [score(c) for c in remaining]
        best = max(scores)
        remaining = [c for c, s in zip(remaining, scores) if s == best]
        if len(remaining) == 1:
            break
    return remaining[0]


def pod_priority(pod: Pod) -> int:
    """Upstream ``PodPriority``: ``spec.priority``, 0 when unset (not the task default of 1)."""
    return pod.priority if pod.priority is not None else 0


class _NodeRemoval:
    """Tasks taken off one node for a dry run; plugins see deallocate/allocate events."""

    def __init__(self, ssn: Session, node: NodeInfo):
        self.ssn = ssn
        self.node = node
        self.removed: list[TaskInfo] = []

    def remove(self, task: TaskInfo) -> None:
        self.node.remove_task(task)
        self.removed.append(task)
        self.ssn.dry_run_removed[task.uid] = task
        self.ssn.fire_deallocate(task)

    def restore(self, task: TaskInfo) -> None:
        self.removed.remove(task)
        del self.ssn.dry_run_removed[task.uid]
        self.node.add_task(task)
        self.ssn.fire_allocate(task)

    def restore_all(self) -> None:
        while self.removed:
            self.restore(self.removed[-1])


@contextmanager
def _removed_from_node(ssn: Session, node: NodeInfo) -> Iterator[_NodeRemoval]:
    removal = _NodeRemoval(ssn, node)
    try:
        yield removal
    finally:
        removal.restore_all()


# ---------------------------------------------------------------------- predicates on tasks
def _is_preemptor_job(ssn: Session, job: JobInfo) -> bool:
    if job.is_pending():
        return False
    verdict = ssn.job_valid(job)
    if verdict is not None and not verdict.passed:
        return False
    if job.queue not in ssn.queues:
        return False
    if not ssn.job_starving(job):
        return False
    # Upstream (actions/preempt/preempt.go, vol#4374): a job with a network topology (its own
    # or a sub-group's) never preempts; gangpreempt handles such jobs.
    return job.topology is None or not job.topology.contains_network_topology()


def _pending_tasks(ssn: Session, job: JobInfo) -> PriorityQueue[TaskInfo]:
    pending = sorted(job.tasks_in(TaskStatus.Pending).values(), key=lambda t: t.uid)
    return PriorityQueue(ssn.task_order_fn, (t for t in pending if not t.sch_gated))


def _may_be_preempted_by(preemptor: TaskInfo, task: TaskInfo) -> bool:
    """The checks both passes share: running, preemptable, and BestEffort only for BestEffort."""
    if not task.status & PREEMPTABLE_STATUS:
        return False
    if preemptor.best_effort and not task.best_effort:
        return False
    return task.preemptable


def _other_job_in_queue(ssn: Session, preemptor: TaskInfo, preemptor_job: JobInfo) -> TaskFilter:
    def keep(task: TaskInfo) -> bool:
        if not _may_be_preempted_by(preemptor, task):
            return False
        job = ssn.jobs.get(task.job)
        if job is None:
            return False
        return job.queue == preemptor_job.queue and task.job != preemptor.job

    return keep


def _same_job(preemptor: TaskInfo) -> TaskFilter:
    def keep(task: TaskInfo) -> bool:
        return _may_be_preempted_by(preemptor, task) and task.job == preemptor.job

    return keep


def _fits_on_node(ssn: Session, queue: QueueInfo, preemptor: TaskInfo, node: NodeInfo) -> bool:
    """Upstream ``preemptorFitsOnNode``: queue quota, future idle, then every predicate."""
    return (
        ssn.allocatable(queue, preemptor)
        and request_fits(preemptor, node.future_idle())
        and not predicate_statuses_on_node(ssn, preemptor, node)
    )


def _eligible_to_preempt(ssn: Session, preemptor: TaskInfo) -> bool:
    """Upstream ``taskEligibleToPreempt``.

    Not with ``preemptionPolicy: Never``. A preemptor nominated by an earlier preemption is
    eligible again only if its nominated node is in the session and fails the predicates,
    and then either unresolvably or with no lower-priority pod there still terminating
    because of a scheduler preemption (the earlier preemption must finish first).
    """
    if preemption_never(preemptor):
        return False
    nominated = preemptor.pod.nominated_node_name
    if not nominated:
        return True
    node = ssn.nodes.get(nominated)
    if node is None:
        return False
    statuses = predicate_statuses_on_node(ssn, preemptor, node)
    if not statuses:
        return False
    if contains_unresolvable(statuses):
        return True
    priority = pod_priority(preemptor.pod)
    return not any(
        pod_priority(t.pod) < priority and _terminating_by_preemption(t.pod)
        for _uid, t in sorted(node.tasks.items())
    )


def _terminating_by_preemption(pod: Pod) -> bool:
    if pod.deletion_timestamp is None:
        return False
    for cond in pod.conditions:
        if cond.get("type") == "DisruptionTarget":
            return cond.get("status") == "True" and cond.get("reason") == "PreemptionByScheduler"
    return False


def new(arguments: Mapping[str, Any] | None = None) -> Preempt:
    return Preempt(arguments)
