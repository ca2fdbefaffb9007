"""The per-task placement of allocate, shared by its plain and HyperNode paths (upstream
pkg/scheduler/actions/allocate/allocate.go ``allocateResourcesForTasks``,
``allocateResourcesForTask``, ``prioritizeNodes``).

:meth:`TaskPlacement.allocate_resources_for_tasks` places a job's worksheet of tasks on the
nodes of one HyperNode (the virtual root: every node) into a new statement. For each task:
queue quota (``Allocatable``), the role's earlier fit failure, PrePredicate, then the allocate
predicate (request ≤ FutureIdle and every plugin predicate) over the nodes found from a
round-robin start (inside a HyperNode: its rows of the cached feasibility masks, never a scan
of the whole cluster per candidate), then the best node among those where the request fits
Idle (else FutureIdle, which pipelines). It stops once the job (or the sub-job) is ready; the
statement is returned when it is ready or pipelined, else discarded.

Replicas whose predicates and scores are all node-local are placed through a
:class:`~pyvolcano.actions.allocate.replica_batch.ReplicaBatch` (the same window, scores,
tie-breaking and round-robin index as the per-pod path, with the changed nodes' values
projected or re-evaluated in vectorised rounds); ``SchedulerOptions.batch_replicas=False``
forces the per-pod path. Within the batched placement, consecutive replicas of one task
template are taken as a run (:meth:`TaskPlacement._place_run`), each batch form replacing its
per-pod call; ``SchedulerOptions.batch_templates`` and the other ``batch_*`` options force the
per-pod forms.

One :class:`TaskPlacement` lives for one execution of allocate: its replica batches carry over
from one job to the next (brought up to date from the node table's change log). Both paths
(``allocate.py``, ``topology.py``) call it; it calls neither.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pyvolcano.actions._helpers import PredicateHelper, TaskQueue
from pyvolcano.actions.allocate.replica_batch import BatchKey, ReplicaBatch, batch_key
from pyvolcano.api.hypernode_tree import CLUSTER_TOP_HYPERNODE
from pyvolcano.api.job import JobInfo
from pyvolcano.api.node import NodeInfo, RequestVector
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.sub_job import SubJobInfo
from pyvolcano.api.task import TaskInfo, TaskStatus
from pyvolcano.api.unschedule import FitErrors
from pyvolcano.framework.session import Session
from pyvolcano.framework.statement import Statement

__all__ = ["TaskPlacement", "allocate_resources_for_task", "prioritize_nodes"]


class TaskPlacement:
    """allocate's per-task placement for one execution (see the module docstring)."""

    def __init__(self, ssn: Session, *, enable_predicate_error_cache: bool = True):
        self.ssn = ssn
        self.enable_predicate_error_cache = enable_predicate_error_cache
        # Batches live for one execution: later jobs with replicas of the same template
        # continue from the state the earlier ones left (brought up to date from the change log).
        self._batches: dict[BatchKey, ReplicaBatch] = {}

    def allocate_resources_for_tasks(
        self, job: JobInfo, tasks: TaskQueue, *, sub_job: SubJobInfo | None = None,
        hypernode: str = CLUSTER_TOP_HYPERNODE,
    ) -> Statement | None:
        """Place ``tasks`` on the nodes of ``hypernode`` (the virtual root: every node).

        With a ``sub_job`` (jobs with a topology or sub-groups) readiness is the sub-job's, fit
        errors are per sub-job, and a sub-job with a network topology carries its current
        allocated HyperNode into node scoring, moved after every placed task. Returns the
        statement holding the placements when the job (sub-job) is ready or pipelined, else
        None, the statement discarded.
        """
        ssn = self.ssn
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
                        outcome = self._place_run(stmt, job, queue, task, batch, tasks, leftover)
                        if outcome is _CUT:
                            stmt.discard()
                            return None
                        if outcome is _READY:
                            break
                        if outcome is _PLACED:
                            continue
                        chosen = None  # the first replica has no batched choice: per-pod path
                    else:
                        chosen = batch.select(task)
                    if chosen is not None:
                        allocate_resources_for_task(ssn, stmt, task, ssn.node_list[chosen])
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
            best = prioritize_nodes(ssn, task, feasible)
            if best is None:
                continue
            allocate_resources_for_task(ssn, stmt, task, ssn.node_list[best])
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
        self, stmt: Statement, job: JobInfo, queue: QueueInfo, task: TaskInfo, batch: ReplicaBatch,
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
        ssn = self.ssn
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
            if (i == 0 and admitted and opts.batch_quota_cut and opts.batch_ready and not tasks and not leftover
                    and not stmt.operations and self._quota_cut(job, run, admitted, batch, vec)):
                return _CUT
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
            self._place_chunk(stmt, chunk, rows, vec)
            i += len(rows)
            if len(rows) >= bound and ssn.job_ready(job):
                leftover.extend(reversed(run[i:]))
                return _READY
        return _PLACED

    def _quota_cut(self, job: JobInfo, run: list[TaskInfo], admitted: int, batch: ReplicaBatch,
                   vec: RequestVector) -> bool:
        """A gang the queue's quota cuts short of JobReady, walked without placing it.

        ``run`` is all that is left of the job's worksheet, in a statement still empty, and the
        quota admits only its first ``admitted`` replicas. If JobReady cannot turn true within
        them (``Session.job_ready_bound``), :meth:`_place_run` would place them, see the quota
        refuse the rest and the job neither ready nor pipelined, and the statement would undo
        it all. What that leaves behind is made here without the placements: the same
        selections (the round-robin index moved and the session's generator drawn as they
        move and draw it) from the batch's projected values, the job's status moves, the
        plugins' allocate and deallocate events (their accounts keep what an add and a
        subtraction leave), the tasks' last transactions and the node table's change log
        (each row named as the placement and the undo name it) as the undo leaves them; the
        nodes' accounting is left alone (the placements and their undo cancel out), and the
        batch is put back to its saved state, from which its next catch-up syncs those rows.

        Returns False, with nothing changed, where the walk cannot know what the placements
        would do: a batch whose values are not all projectable, a selection that needs a sync
        of the batch (its rows would be read without the walk's placements), a replica that
        does not fit Idle (pipelined, one task at a time), no feasible node (fit errors are
        recorded on the state with the placements), allocate events without their batch form,
        claims to reserve, or a job JobReady or JobPipelined accepts with the replicas
        allocated.
        """
        ssn = self.ssn
        # Projectable: every verdict and score reads only the node's table row and static
        # attributes, so the values a sync would compute after the undo are the saved ones
        # (a score reading event-handler state, such as usage's shadow load, would not be).
        if not (batch.project and ssn.cache.options.batch_statement and ssn.allocate_batchable()):
            return False
        bound = ssn.job_ready_bound(job)
        if bound is None or admitted >= bound:
            return False
        memo = ssn.memo
        saved = batch.save(run[0])
        rr = memo.last_processed_node_index
        drawn = ssn.rng.bit_generator.state
        syncs = batch.syncs
        rows: list[int] = []
        ok = True
        while len(rows) < admitted:
            idle = batch.idle_all.copy()
            got = batch.select_many(run[len(rows)], admitted - len(rows))
            if not got or batch.syncs != syncs or not idle[got].all():
                ok = False
                break
            rows.extend(got)
            # What the catch-up after the chunk's placement does: its own changes.
            batch.advanced.clear()
        placed = run[:admitted]
        if ok and any(t.pod.claims or t.pod.resource_claims for t in placed):
            ok = False  # reserving claims reads the nodes' accounting
        if ok:
            nodes = ssn.node_list
            for task, row in zip(placed, rows, strict=True):
                task.node_name = nodes[row].name
            job.update_tasks_status(placed, TaskStatus.Allocated)
            ssn.fire_allocate_many(placed)
            ok = not ssn.job_ready(job) and not ssn.job_pipelined(job)
            # The statement's undo, last placement first (Session.move_task without the node).
            for task in reversed(placed):
                if ok:
                    task.generate_last_tx_context()
                job.update_task_status(task, TaskStatus.Pending)
                ssn.fire_deallocate(task)
                task.node_name = ""
        if ok:
            # The node table's change log as the placements and their undo leave it (every
            # row once, then again last first): what keys on its position (the batches' syncs,
            # the kept feasibility verdicts, plugins' kept plans) moves as it would.
            table = ssn.node_table
            for row in rows:
                table.bump(row)
            for row in reversed(rows):
                table.bump(row)
        batch.restore(saved)
        if not ok:
            memo.last_processed_node_index = rr
            ssn.rng.bit_generator.state = drawn
        return ok

    def _place_chunk(self, stmt: Statement, chunk: list[TaskInfo], rows: list[int], vec: RequestVector) -> None:
        """Place ``chunk[j]`` on ``rows[j]`` (distinct rows) in order, as the per-pod path does:
        allocated where the request fits Idle, else through :func:`allocate_resources_for_task`.
        A row's Idle fit is read before the chunk's placements, which touch only other rows."""
        ssn = self.ssn
        table = ssn.node_table
        if len(rows) < 4:
            fits = [table.fits_row(vec, r, future=False) for r in rows]
        else:
            fits = table.fits_rows(vec, np.array(rows, dtype=np.int64), future=False).tolist()
        nodes = ssn.node_list
        j, n = 0, len(rows)
        while j < n:
            if not fits[j]:
                allocate_resources_for_task(ssn, stmt, chunk[j], nodes[rows[j]])
                j += 1
                continue
            e = j + 1
            while e < n and fits[e]:
                e += 1
            stmt.allocate_many(chunk[j:e], [nodes[r] for r in rows[j:e]])
            j = e


def prioritize_nodes(ssn: Session, task: TaskInfo, feasible: np.ndarray) -> int | None:
    """Upstream ``prioritizeNodes``: the best node among the feasible ones where the request
    fits Idle, else among those where it fits FutureIdle; None when it fits neither."""
    table = ssn.node_table
    vec = table.task_vector(task)
    idle_nodes = feasible[table.fit_mask(vec, feasible, future=False)]
    if len(idle_nodes):
        return ssn.select_best_node(task, idle_nodes)
    future_nodes = feasible[table.fit_mask(vec, feasible, future=True)]
    if len(future_nodes):
        return ssn.select_best_node(task, future_nodes)
    return None


def allocate_resources_for_task(ssn: Session, stmt: Statement, task: TaskInfo, node: NodeInfo) -> bool:
    """Upstream ``allocateResourcesForTask``: allocate on Idle, else pipeline on FutureIdle;
    False only when the statement refused the operation (fitting neither is no error)."""
    table = ssn.node_table
    vec = table.task_vector(task)
    if table.fits_row(vec, node.index, future=False):
        return stmt.allocate(task, node)
    if table.fits_row(vec, node.index, future=True):
        return stmt.pipeline(task, node.name, False)
    return True


_READY = object()
_PLACED = object()
_CUT = object()  # the queue's quota cuts the gang short: walked, nothing placed (_quota_cut)


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
