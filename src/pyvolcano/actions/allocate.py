"""allocate action (upstream pkg/scheduler/actions/allocate/allocate.go).

Queues are popped in QueueOrder (re-ranked after every job), jobs in JobOrder, tasks in
TaskOrder. For each task: queue quota (``Allocatable``), the role's earlier fit failure,
PrePredicate, then the allocate predicate (request ≤ FutureIdle and every plugin
predicate) over the nodes found from a round-robin start, then the best node among those
where the request fits Idle (else FutureIdle, which pipelines). The job's statement is
committed only when ``JobReady``; a pipelined-but-not-ready statement is kept (its
reservations hold for the rest of the session) and discarded at session close; otherwise
it is discarded at once.

Replicas whose predicates and scores are all node-local are placed through a
:class:`~pyvolcano.actions.replica_batch.ReplicaBatch` (the same window, scores, tie-breaking
and round-robin index as the per-pod path, with the changed nodes' values projected or
re-evaluated in vectorised rounds); ``SchedulerOptions.batch_replicas=False`` forces the
per-pod path. A job's worksheet is a sorted list when the task order has a sort key
(:func:`~pyvolcano.actions._helpers.task_queue`), else upstream's comparator heap.

Jobs with a hard network topology, a hard sub-job or any sub-group policy take the HyperNode
path (:mod:`pyvolcano.actions.allocate_topology`), which calls the same per-task placement
restricted to one HyperNode's nodes (their rows of the cached feasibility masks, never a scan
of the whole cluster per candidate). A job's sub-job nominated by gangpreempt or gangreclaim is
first tried on its nominated nodes (the nomination fast path, in the same module). Not
modelled: node sharding.

The job queues are built from the jobs allocate can act on (a pending pod that is not best
effort in a job the job-local JobValid callbacks accept, such as a gang whose pods are all
created, or a Pending PodGroup), kept between sessions by the cache's change feed
(:class:`~pyvolcano.cache.job_filter.JobFilter`) and walked in uid order as the session's
jobs are; ``SessionMemo.feed_action_queues = False`` walks every job instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from pyvolcano.actions._helpers import PREDICATE_ERROR_CACHE_ENABLE, PredicateHelper, TaskQueue, task_queue
from pyvolcano.actions.allocate_topology import JobWorksheet, TopologyPlacement, organize_worksheet
from pyvolcano.actions.replica_batch import BatchKey, ReplicaBatch, batch_key
from pyvolcano.api.hypernode_tree import CLUSTER_TOP_HYPERNODE
from pyvolcano.api.job import JobInfo
from pyvolcano.api.node import RequestVector
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.sub_job import SubJobInfo
from pyvolcano.api.task import TaskInfo, TaskStatus
from pyvolcano.api.unschedule import FitErrors
from pyvolcano.framework.argument_keys import ArgumentKeys, honoured
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.session import Session
from pyvolcano.framework.statement import Statement
from pyvolcano.framework.topology import sub_job_needs_search
from pyvolcano.util.priority_queue import PriorityQueue

NAME = "allocate"
ARGUMENTS = ArgumentKeys(f"action {NAME}", (honoured(PREDICATE_ERROR_CACHE_ENABLE),))


class Allocate:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        args = Arguments(arguments, keys=ARGUMENTS)
        self.enable_predicate_error_cache = args.get_bool(PREDICATE_ERROR_CACHE_ENABLE, True)
        self._batches: dict[BatchKey, ReplicaBatch] = {}

    def execute(self, ssn: Session) -> None:
        # Batches live for one execution: later jobs with replicas of the same template
        # continue from the state the earlier ones left (brought up to date from the change log).
        self._batches = {}
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
        jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        worksheets: dict[str, TaskQueue] = {}
        topology_worksheets: dict[str, JobWorksheet] = {}
        placement = TopologyPlacement(ssn, self)
        candidates = _candidates(ssn)
        for job in candidates:
            if job.is_pending():
                if "enqueue" in ssn.enabled_actions:
                    continue
                assert job.podgroup is not None
                job.set_phase("Inqueue")
            if len(job.tasks_in(TaskStatus.Pending)) == job.pending_best_effort:
                # Nothing for allocate (upstream builds an empty worksheet and skips the job;
                # JobValid has no side effects, so asking it first changes nothing).
                continue
            if ssn.skip_unchanged and ssn.unchanged_since_failure(job):
                continue  # before the checks below, which only skip too
            vr = ssn.job_valid(job)
            if vr is not None and not vr.passed:
                continue
            queue = ssn.queues.get(job.queue)
            if queue is None:
                continue
            topo = job.topology
            if topo is not None and not ssn.topology.ready and topo.contains_network_topology():
                continue
            if sub_job_needs_search(job):
                ws = organize_worksheet(ssn, job)
                if ws.empty():
                    continue
                topology_worksheets[job.uid] = ws
            else:
                pending = [task for task in sorted(job.tasks_in(TaskStatus.Pending).values(), key=lambda t: t.uid)
                           if not task.sch_gated and not task.resreq.is_empty()]
                if not pending:
                    continue
                worksheets[job.uid] = task_queue(ssn, pending)
            if job.queue not in jobs_by_queue:
                jobs_by_queue[job.queue] = PriorityQueue(ssn.job_order_fn)
                queues.push(queue)
            jobs_by_queue[job.queue].push(job)

        while queues:
            queue = queues.pop()
            if ssn.overused(queue):
                continue
            jobs = jobs_by_queue.get(queue.uid)
            if jobs is None or not jobs:
                continue
            job = jobs.pop()
            tws = topology_worksheets.get(job.uid)
            if tws is not None:
                stmt = placement.allocate_for_job(job, tws)
                if stmt is not None and ssn.job_ready(job):
                    stmt.commit()
                    job.unschedulable_at = None
                    placement.recorder.update_decision_to_job(ssn, job)
                    if not tws.empty():
                        jobs.push(job)
                elif ssn.skip_unchanged:
                    ssn.record_failure(job)
                queues.push(queue)
                continue
            tasks = worksheets[job.uid]
            sub_job = job.topology.default_sub_job if job.topology is not None else None
            # gangpreempt's / gangreclaim's nomination first (allocate_topology.py).
            stmt = placement.nominated_statement(job, tasks)
            if stmt is None:
                stmt = self.allocate_resources_for_tasks(ssn, job, tasks, sub_job=sub_job)
            if stmt is not None and ssn.job_ready(job):
                stmt.commit()
                placement.redeemed(job)
                job.unschedulable_at = None
                if tasks:
                    jobs.push(job)
            elif ssn.skip_unchanged:
                ssn.record_failure(job)
            queues.push(queue)

    def allocate_resources_for_tasks(
        self, ssn: Session, job: JobInfo, tasks: TaskQueue, *, sub_job: SubJobInfo | None = None,
        hypernode: str = CLUSTER_TOP_HYPERNODE,
    ) -> Statement | None:
        """Place ``tasks`` on the nodes of ``hypernode`` (the virtual root: every node).

        With a ``sub_job`` (jobs with a topology or sub-groups) readiness is the sub-job's, fit
        errors are per sub-job, and a sub-job with a network topology carries its current
        allocated HyperNode into node scoring, moved after every placed task.
        """
        queue = ssn.queues[job.queue]
        whole = hypernode == CLUSTER_TOP_HYPERNODE
        candidates = ssn.all_node_indices() if whole else ssn.topology.rows(hypernode)
        if len(candidates) == 0:
            return None
        stmt = ssn.statement()
        ph = PredicateHelper(ssn, enable_error_cache=self.enable_predicate_error_cache)
        aware = sub_job is not None and sub_job.with_network_topology
        allocated_hn = sub_job.allocated_hypernode if sub_job is not None else ""
        by_sub_job = sub_job is not None and job.topology is not None and job.topology.has_policies
        batching = whole and not aware and ssn.cache.options.batch_replicas and ssn.replicas_batchable()
        batch: ReplicaBatch | None = None
        pre_predicates = ssn.has("pre_predicate")
        runs = batching and sub_job is None and not pre_predicates and ssn.cache.options.batch_templates
        # Tasks taken from ``tasks`` for a run and not placed, the next one last.
        leftover: list[TaskInfo] = []

        def ready() -> bool:
            return ssn.sub_job_ready(job, sub_job) if sub_job is not None else ssn.job_ready(job)

        def keep_going() -> bool:
            return _need_continue(job, sub_job)

        while leftover or tasks:
            task = leftover.pop() if leftover else tasks.pop()
            if not ssn.allocatable(queue, task):
                continue
            if task.sch_gated:
                continue
            failed_before = (_sub_job_has_fit_errors(job, sub_job, task) if by_sub_job and sub_job is not None
                             else job.task_has_fit_errors(task))
            if failed_before:
                fe = FitErrors()
                fe.set_error(f"Task {task.name} with role spec {task.role} has already predicated failed, skip")
                job.set_task_fit_errors(task, fe)
                continue
            st = ssn.pre_predicate(task) if pre_predicates else None
            if st is not None:
                fe = FitErrors()
                fe.add(st.reason, st.code, candidates)
                job.set_task_fit_errors(task, fe)
                if keep_going():
                    continue
                break
            if batching and not ph.has_failures(task):
                bkey = batch_key(ssn, task)
                if bkey is not None:
                    if batch is None or batch.key != bkey:
                        batch = self._batches.get(bkey)
                        if batch is None:
                            batch = self._batches[bkey] = ReplicaBatch(ssn, task, bkey)
                    if runs:
                        outcome = self._place_run(ssn, stmt, job, queue, task, batch, tasks, leftover)
                        if outcome is _READY:
                            break
                        if outcome is _PLACED:
                            continue
                        chosen = None  # the first replica has no batched choice: per-pod path
                    else:
                        chosen = batch.select(task)
                    if chosen is not None:
                        self.allocate_resources_for_task(ssn, stmt, task, chosen)
                        if ready():
                            break
                        continue
            feasible = np.zeros(0, dtype=np.int64)
            errors = FitErrors()
            nominated = task.pod.nominated_node_name
            if nominated and nominated in ssn.nodes:
                node = ssn.nodes[nominated]
                inside = whole or bool(np.isin(node.index, candidates))
                if inside and task.init_resreq.less_equal(node.future_idle()):
                    feasible, errors = ph.predicate_nodes(
                        task, np.array([node.index], dtype=np.int64), ssn.allocate_predicate
                    )
            if len(feasible) == 0:
                key = ssn.predicate_cache_key(task) if not ph.has_failures(task) else None
                if key is not None:
                    if whole:
                        feasible = ssn.feasible_nodes(task, key)
                    else:
                        feasible, _ = ssn.predicate_nodes(task, candidates,
                                                          _cached_verdicts(ssn.feasibility_mask(task, key)))
            if len(feasible) == 0:
                feasible, errors = ph.predicate_nodes(task, candidates, ssn.allocate_predicate)
            if len(feasible) == 0:
                if not whole:
                    errors.hypernode = hypernode
                job.set_task_fit_errors(task, errors)
                if keep_going():
                    continue
                break
            if aware:
                ssn.topology.task_hypernode[task.uid] = allocated_hn
            best = self.prioritize_nodes(ssn, task, feasible)
            if best is None:
                continue
            self.allocate_resources_for_task(ssn, stmt, task, best)
            if aware:
                own = ssn.topology.lowest_hypernode_of(ssn.node_list[best].name)
                if own:
                    allocated_hn = ssn.topology.lca(own, allocated_hn) if allocated_hn else own
            if ready():
                break
        for task in leftover:
            tasks.push(task)
        if ready():
            return stmt
        if sub_job is not None and ssn.sub_job_pipelined(job, sub_job):
            return stmt
        if sub_job is None and ssn.job_pipelined(job):
            return stmt
        stmt.discard()
        return None

    def _place_run(
        self, ssn: Session, stmt: Statement, job: JobInfo, queue: QueueInfo, task: TaskInfo, batch: ReplicaBatch,
        tasks: TaskQueue, leftover: list[TaskInfo],
    ) -> object:
        """Place ``task`` and the replicas of its template that follow it in the worksheet.

        ``task`` passed the per-pod checks; so do its replicas, whose checks read only what
        they share with it (template, role) or what only the per-pod path changes (fit
        errors). In chunks: the queue-quota check once for the chunk (how many replicas fit,
        ``Session.allocatable_count``), at most as many replicas as JobReady needs before it
        can turn true (``Session.job_ready_bound``), their nodes chosen by
        :meth:`ReplicaBatch.select_many`, then placed in order (``Statement.allocate_many``
        for the ones that fit Idle) and JobReady asked once. Each form falls back to its
        per-pod call when switched off or not declared by every enabled plugin.

        Returns ``_READY`` (the job is ready: stop), ``_PLACED`` (carry on with the next task)
        or None (no batched choice for ``task``: the per-pod path places it). Tasks taken
        and not handled are left in ``leftover``.
        """
        opts = ssn.cache.options
        tpl = job.template_of(task)
        # Per-template work done once: the request vector and non-zero request are the
        # first replica's (they derive from the containers, part of the template).
        vec = ssn.node_table.task_vector(task)
        nonzero = task.nonzero_request()
        run = [task]
        while leftover or tasks:
            nxt = leftover.pop() if leftover else tasks.pop()
            if job.template_of(nxt, like=task) is not tpl:
                leftover.append(nxt)
                break
            nxt.req_vec = vec
            nxt.nonzero_req = nonzero
            run.append(nxt)
        i = 0
        while i < len(run):
            remaining = len(run) - i
            admitted = ssn.allocatable_count(queue, run[i], remaining) if opts.batch_quota else None
            if admitted is None:
                admitted = 1 if i == 0 or ssn.allocatable(queue, run[i]) else 0
                if not admitted:
                    i += 1  # refused, as the per-pod path skips it
                    continue
            elif not admitted:
                # Refused, and so is every later replica (the state does not change in between).
                return _PLACED
            bound = ssn.job_ready_bound(job) if opts.batch_ready else None
            if bound is None:
                bound = 1
            rows = batch.select_many(run[i], min(admitted, bound, remaining))
            if not rows:
                leftover.extend(reversed(run[i + 1:] if i == 0 else run[i:]))
                return None if i == 0 else _PLACED
            chunk = run[i:i + len(rows)]
            self._place_chunk(ssn, stmt, chunk, rows, vec)
            i += len(rows)
            if len(rows) >= bound and ssn.job_ready(job):
                leftover.extend(reversed(run[i:]))
                return _READY
        return _PLACED

    def _place_chunk(
        self, ssn: Session, stmt: Statement, chunk: list[TaskInfo], rows: list[int], vec: RequestVector
    ) -> None:
        """Place ``chunk[j]`` on ``rows[j]`` (distinct rows) in order, as the per-pod path does:
        allocated where the request fits Idle, else through :meth:`allocate_resources_for_task`.
        A row's Idle fit is read before the chunk's placements, which touch only other rows."""
        table = ssn.node_table
        if len(rows) < 4:
            fits = [table.fits_row(vec, r, future=False) for r in rows]
        else:
            fits = table.fits_rows(vec, np.array(rows, dtype=np.int64), future=False).tolist()
        nodes = ssn.node_list
        j, n = 0, len(rows)
        while j < n:
            if not fits[j]:
                self.allocate_resources_for_task(ssn, stmt, chunk[j], rows[j])
                j += 1
                continue
            e = j + 1
            while e < n and fits[e]:
                e += 1
            stmt.allocate_many(chunk[j:e], [nodes[r] for r in rows[j:e]])
            j = e

    @staticmethod
    def prioritize_nodes(ssn: Session, task: TaskInfo, feasible: np.ndarray) -> int | None:
        table = ssn.node_table
        vec = table.task_vector(task)
        idle_nodes = feasible[table.fit_mask(vec, feasible, future=False)]
        if len(idle_nodes):
            return ssn.select_best_node(task, idle_nodes)
        future_nodes = feasible[table.fit_mask(vec, feasible, future=True)]
        if len(future_nodes):
            return ssn.select_best_node(task, future_nodes)
        return None

    @staticmethod
    def allocate_resources_for_task(ssn: Session, stmt: Statement, task: TaskInfo, node_index: int) -> None:
        node = ssn.node_list[node_index]
        table = ssn.node_table
        vec = table.task_vector(task)
        if table.fits_row(vec, node_index, future=False):
            stmt.allocate(task, node)
        elif table.fits_row(vec, node_index, future=True):
            stmt.pipeline(task, node.name, False)


_READY = object()
_PLACED = object()


def _candidates(ssn: Session) -> list[JobInfo]:
    """The session's jobs allocate's walk can do anything for, in uid order: a Pending PodGroup
    (admitted here without enqueue), or a pending pod that is not best effort in a job every
    job-local JobValid callback accepts (JobValid has no side effects, and one rejection
    rejects the job). Kept by the change feed; every job with ``feed_action_queues`` False."""
    memo = ssn.memo
    if not memo.feed_action_queues:
        return list(ssn.jobs.values())
    local = tuple(ssn.job_local_valid_fns())
    name = f"{NAME}/valid:{','.join(n for n, _ in local)}"
    fns = tuple(fn for _, fn in local)

    def can_act_on(job: JobInfo) -> bool:
        # Reads only what moves the job's version (the callbacks are job-local).
        if job.is_pending():
            return True
        if len(job.tasks_in(TaskStatus.Pending)) == job.pending_best_effort:
            return False
        for fn in fns:
            vr = fn(job)
            if vr is not None and not vr.passed:
                return False
        return True

    return memo.job_filter(name, can_act_on).select(ssn.jobs)


def _cached_verdicts(mask: np.ndarray) -> Callable[[TaskInfo, np.ndarray], tuple[np.ndarray, FitErrors]]:
    """A predicate that reads stored verdicts (a feasibility mask over all nodes)."""
    return lambda _task, order: (mask[order], FitErrors())


def _need_continue(job: JobInfo, sub_job: SubJobInfo | None) -> bool:
    """Upstream ``NeedContinueAllocating(subJobID)``."""
    if job.min_available == len(job.tasks):
        return False
    if sub_job is not None and sub_job.min_available >= len(sub_job.tasks):
        return False
    if job.topology is not None and job.topology.has_policies:
        return True
    return job.need_continue_allocating()


def _sub_job_has_fit_errors(job: JobInfo, sub_job: SubJobInfo, task: TaskInfo) -> bool:
    """Upstream ``TaskHasFitErrors(subJob, task)``: a task of the same role in the sub-job failed."""
    if not task.role:
        return False
    return any(uid in sub_job.tasks and job.tasks[uid].role == task.role
               for uid in job.nodes_fit_errors if uid in job.tasks)


def new(arguments: Mapping[str, Any] | None = None) -> Allocate:
    return Allocate(arguments)
