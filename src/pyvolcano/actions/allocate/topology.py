"""allocate's HyperNode path (upstream pkg/scheduler/actions/allocate/allocate.go ``allocateForJob``,
``allocateForSubJob``, ``allocateFromNomination``).

A job that has a hard network-topology constraint (after the session's soft → hard
translation), a sub-job with one, or any ``subGroupPolicy`` is placed here instead of task by
task over the whole cluster:

* :func:`organize_worksheet` builds the job's worksheet: one task queue per sub-job (pending,
  ungated, non-BestEffort tasks in TaskOrder) and a queue of sub-jobs: those needed to reach
  each policy's ``minSubGroups`` first, then SubJobOrder (gang: not ready first; then the first
  match value as an integer; then the id).
* :meth:`TopologyPlacement.allocate_for_job` asks the HyperNode gradient plugin for the job's
  candidate HyperNodes, lowest tier first. For each tier it dry-runs every candidate: on a
  copy of the worksheet it pops sub-jobs and places each inside the candidate
  (:meth:`~TopologyPlacement.allocate_for_sub_job`), pushing a sub-job back while it has tasks,
  until the job is ready; a candidate where the job is ready or pipelined is a solution, kept
  with the sum of its sub-jobs' HyperNode scores, and every dry run is discarded. The first
  tier with a solution wins: its best-scoring candidate (random among ties) is replayed into
  a fresh statement and its worksheet adopted.
* ``allocate_for_sub_job`` does the same one level down, over the sub-job's own gradient inside
  the job's candidate, each candidate dry-run by the per-task placement
  (:class:`~pyvolcano.actions.allocate.tasks.TaskPlacement`, restricted to the candidate's
  nodes), choosing by the HyperNodeOrder scores; the chosen HyperNode moves the
  sub-job's allocated HyperNode to the lowest common ancestor of the old one and it.
* **Nomination fast path** (upstream ``allocateFromNomination``): a sub-job that gangpreempt or
  gangreclaim nominated a HyperNode for (``SubJobInfo.nominated_hypernode``; for a job without
  a JobTopology, ``JobInfo.nominated_hypernode``) is first tried there, before any gradient
  search: every task of its worksheet (TaskOrder) must pass the queue's Allocatable, carry a
  ``status.nominatedNodeName`` among the HyperNode's nodes, and pass PrePredicate and the
  allocate predicate on that node (all checked before anything is placed); then each is
  allocated there (pipelined when only the future idle fits) and the worksheet drained. Any
  miss clears the nomination and the tasks' nominated nodes, and the normal search follows.
  Upstream does not check that the nominated HyperNode lies inside the job's candidate.
  allocate's normal path asks the same of the default sub-job
  (:meth:`TopologyPlacement.nominated_statement`) and clears the nomination when it commits.
* :class:`~pyvolcano.actions.allocate.recorder.Recorder` keeps the HyperNode decisions and
  undoes the dry runs' moves of the sub-jobs' allocated HyperNodes.

Bounded search (``SchedulerOptions.bounded_hypernode_search``, on by default). The HyperNode
scores do not depend on the dry runs (they are taken after the dry runs are discarded), so when
the only HyperNodeOrder plugin declares them (``Session.hypernode_order_bounds``, a
:class:`~pyvolcano.framework.interfaces.HyperNodeScoreBounds`; network-topology-aware does) the
candidates are dry-run best score first: a sub-job stops at the first candidate scoring below
the first success (only candidates sharing the top score can get the tie bonus), and a job
stops once no untried candidate's upper bound (:meth:`TopologyPlacement._job_bounds`) reaches
the best score found. The HyperNode chosen
is the exhaustive search's, up to random tie-breaks; only the candidates tried (and so the random
draws and the fit errors left on the job) differ.

HyperNode tie-break (``Session.hypernode_tie_keys``, registered by network-topology-aware's
``hypernode.fragmentation-aware.enable``; none by default): candidates of equal score are tried,
and picked among, lowest tie key first; without one, every draw is as described above.

Invariant: outside the replayed statement, every dry run leaves the session as it found it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from pyvolcano.actions._helpers import PredicateHelper, TaskQueue, task_queue
from pyvolcano.actions.allocate.recorder import Recorder
from pyvolcano.actions.allocate.tasks import TaskPlacement, allocate_resources_for_task
from pyvolcano.api.hypernode_tree import CLUSTER_TOP_HYPERNODE
from pyvolcano.api.job import JobInfo
from pyvolcano.api.node import NodeInfo
from pyvolcano.api.resource import MIN_RESOURCE
from pyvolcano.api.sub_job import SubJobInfo
from pyvolcano.api.task import TaskInfo, TaskStatus
from pyvolcano.framework.interfaces import HyperNodeScoreBounds
from pyvolcano.framework.statement import SavedOperation, Statement
from pyvolcano.framework.topology import PURPOSE_ALLOCATE
from pyvolcano.util.priority_queue import PriorityQueue

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["JobWorksheet", "TopologyPlacement", "organize_worksheet"]


@dataclass(slots=True)
class JobWorksheet:
    """Upstream ``JobWorksheet``: the sub-jobs still to place and each one's task queue."""

    sub_jobs: PriorityQueue[SubJobInfo]
    tasks: dict[str, TaskQueue] = field(default_factory=dict)

    def empty(self) -> bool:
        return not self.sub_jobs

    def clone(self) -> JobWorksheet:
        return JobWorksheet(self.sub_jobs.clone(), {k: v.clone() for k, v in self.tasks.items()})

    def adopt(self, other: JobWorksheet) -> None:
        self.sub_jobs = other.sub_jobs
        self.tasks = other.tasks


def organize_worksheet(ssn: Session, job: JobInfo) -> JobWorksheet:
    """Upstream ``organizeJobWorksheet``."""
    topo = job.topology
    assert topo is not None
    ready_count: dict[str, int] = {}
    not_ready: list[SubJobInfo] = []
    for sj in topo.sub_jobs.values():
        if ssn.sub_job_ready(job, sj):
            ready_count[sj.gid] = ready_count.get(sj.gid, 0) + 1
        else:
            not_ready.append(sj)
    not_ready.sort(key=functools.cmp_to_key(lambda l, r: -1 if ssn.sub_job_order_fn(l, r) else 1))
    required: set[str] = set()
    for sj in not_ready:
        if ready_count.get(sj.gid, 0) < topo.min_sub_jobs.get(sj.gid, 0):
            required.add(sj.uid)
            ready_count[sj.gid] = ready_count.get(sj.gid, 0) + 1

    def less(l: SubJobInfo, r: SubJobInfo) -> bool:
        lreq, rreq = l.uid in required, r.uid in required
        if lreq != rreq:
            return lreq
        return ssn.sub_job_order_fn(l, r)

    ws = JobWorksheet(PriorityQueue(less))
    for sj in topo.sub_jobs.values():
        pending = sorted((t for t in sj.tasks.values()
                          if t.status == TaskStatus.Pending and not t.sch_gated and not t.resreq.is_empty()),
                         key=lambda t: t.uid)
        if pending:
            ws.sub_jobs.push(sj)
            ws.tasks[sj.uid] = task_queue(ssn, pending)
    return ws


def _pick(ssn: Session, scores: dict[str, float], job: JobInfo | None = None) -> tuple[str, float]:
    """The best-scoring name, uniformly at random among ties (names sorted first); with a
    HyperNode tie-break registered (``Session.hypernode_tie_keys`` for ``job``), only the ties
    with the lowest key are drawn from."""
    top = max(scores.values())
    best = sorted(n for n, s in scores.items() if s == top)
    if len(best) > 1 and job is not None:
        keys = ssn.hypernode_tie_keys(job, best)
        if keys is not None:
            low = min(keys[n] for n in best)
            best = [n for n in best if keys[n] == low]
    choice = best[0] if len(best) == 1 else best[int(ssn.rng.integers(len(best)))]
    return choice, top


def _with_tie_keys(ssn: Session, job: JobInfo, keys: dict[str, tuple[float, ...]]) -> dict[str, tuple[float, ...]]:
    """``keys`` (compared descending) extended with the negated HyperNode tie-break keys, when a
    tie-break is registered: equal scores are then tried lowest tie key first."""
    ties = ssn.hypernode_tie_keys(job, sorted(keys)) if len(keys) > 1 else None
    if ties is None:
        return keys
    return {h: (*k, -ties[h]) for h, k in keys.items()}


class TopologyPlacement:
    """The HyperNode search of one allocate execution."""

    def __init__(self, ssn: Session, tasks: TaskPlacement):
        self.ssn = ssn
        # The per-task placement each candidate HyperNode is dry-run with.
        self.tasks = tasks
        self.recorder = Recorder()
        # The capacity bound of the job being placed (see _capacity); None: none.
        self._bound: tuple[np.ndarray, int] | None = None

    def _bounded_scorer(self) -> HyperNodeScoreBounds | None:
        """The HyperNode scores when the bounded search applies: the only enabled HyperNodeOrder
        plugin declared its scores known before any dry run (network-topology-aware does)."""
        ssn = self.ssn
        if not ssn.cache.options.bounded_hypernode_search:
            return None
        return ssn.hypernode_order_bounds()

    def _job_bounds(self, job: JobInfo, gradient: list[str],
                    scorer: HyperNodeScoreBounds) -> tuple[dict[str, float], bool] | None:
        """An upper bound of each job-level candidate's score, and whether every bound is exact;
        None when no bound is known.

        Known for a job without sub-group policies whose pending tasks share one role: its
        default sub-job is placed once per candidate, so the candidate scores what the sub-job's
        choice among its own candidates inside scores: at most the best of their scores (with the
        tie bonus where several share a tier), exactly that score when there is one candidate."""
        topo = job.topology
        assert topo is not None
        if topo.has_policies:
            return None
        sj = topo.default_sub_job
        roles = {t.role for t in sj.tasks.values() if t.status == TaskStatus.Pending}
        if len(roles) != 1 or "" in roles:
            return None
        view = self.ssn.topology
        leaves = [hn for hn in gradient if not view.children(hn)]
        # A candidate without child HyperNodes is its sub-job's only possible candidate.
        bounds: dict[str, float] = scorer.base_scores(sj, leaves) if leaves else {}
        exact = True
        for hn in gradient:
            if hn in bounds:
                continue
            groups = self.ssn.hypernode_gradient_for_sub_job(sj, hn, PURPOSE_ALLOCATE)
            bound = float("-inf")
            for group in groups:
                base = scorer.base_scores(sj, group)
                if len(group) == 1:
                    bound = max(bound, base[group[0]])
                else:
                    bound = max(bound, max(base[h] + scorer.tie_bonus(sj, h) * scorer.tie_bonus_bound
                                           for h in group))
            if len(groups) != 1 or len(groups[0]) != 1:
                exact = False
            bounds[hn] = bound
        return bounds, exact

    def _capacity(self, job: JobInfo) -> tuple[np.ndarray, int] | None:
        """Per node, an upper bound of how many of the job's pending pods it could take now, and
        how many more pods the job needs to be pipelined (None: no bound to use).

        The bound counts copies of the element-wise smallest pending request in each node's
        future-idle resources; placements only lower it, so it holds through the dry runs. A
        candidate whose nodes cannot hold the pods the job needs cannot be a solution and is not
        dry-run (only the fit errors it would have left differ)."""
        pending = [t for t in job.tasks_in(TaskStatus.Pending).values() if not t.resreq.is_empty()]
        if not pending:
            return None
        need = job.min_available - (job.waiting_task_num() + job.ready_task_num() + job.pending_best_effort)
        table = self.ssn.node_table
        n = table.n
        smallest: dict[int, float] = {}
        for t in pending:
            vec = dict(table.task_vector(t))
            for d in set(smallest) | set(vec):
                smallest[d] = min(smallest.get(d, float("inf")), vec.get(d, 0.0))
        counts: np.ndarray | None = None
        for d, v in smallest.items():
            if v < MIN_RESOURCE:
                continue
            c = np.floor((table.future[d][:n] + MIN_RESOURCE) / v)
            counts = c if counts is None else np.minimum(counts, c)
        if counts is None:
            return None
        return np.maximum(counts, 0.0), need

    def _cannot_hold(self, bound: tuple[np.ndarray, int] | None, hn: str, need: int) -> bool:
        if bound is None:
            return False
        return float(bound[0][self.ssn.topology.rows(hn)].sum()) < max(need, 1)

    def _shuffled_best_first(self, names: list[str], keys: dict[str, tuple[float, ...]]) -> list[str]:
        """``names`` by descending key, each run of equal keys in a random order."""
        ordered = sorted(names, key=lambda h: (*(-k for k in keys[h]), h))
        out: list[str] = []
        i = 0
        while i < len(ordered):
            j = i
            while j < len(ordered) and keys[ordered[j]] == keys[ordered[i]]:
                j += 1
            run = ordered[i:j]
            if len(run) > 1:
                run = [run[k] for k in self.ssn.rng.permutation(len(run))]
            out.extend(run)
            i = j
        return out

    def allocate_for_job(self, job: JobInfo, ws: JobWorksheet, root: str = CLUSTER_TOP_HYPERNODE) -> Statement | None:
        ssn = self.ssn
        if ws.empty():
            return None
        self.recorder.snapshot(job, ws.tasks)
        scorer = self._bounded_scorer()
        self._bound = self._capacity(job) if scorer is not None else None
        need = self._bound[1] if self._bound is not None else 0
        for gradient in ssn.hypernode_gradient_for_job(job, root, PURPOSE_ALLOCATE):
            found = self._job_bounds(job, gradient, scorer) if scorer is not None and len(gradient) > 1 else None
            bounds: dict[str, float] | None = None
            exact = False
            order = gradient
            if found is not None:
                bounds, exact = found
                order = self._shuffled_best_first(gradient,
                                                  _with_tie_keys(ssn, job, {h: (b,) for h, b in bounds.items()}))
            solutions: dict[str, tuple[list[SavedOperation], JobWorksheet, float]] = {}
            best_score: float | None = None
            for hn in order:
                if bounds is not None and best_score is not None and (exact or bounds[hn] < best_score):
                    # Exact bounds in descending order, ties shuffled: the first success is the
                    # exhaustive search's random pick among the best. Otherwise stop once no
                    # untried candidate can reach the best score found.
                    break
                if self._cannot_hold(self._bound, hn, need):
                    continue
                stmts: list[Statement] = []
                score = 0.0
                job.reset_fit_err()
                copy = ws.clone()
                while copy.sub_jobs:
                    sj = copy.sub_jobs.pop()
                    stmt, s = self.allocate_for_sub_job(job, sj, copy, hn)
                    if stmt is not None and stmt.operations:
                        stmts.append(stmt)
                        score += s
                        if copy.tasks[sj.uid]:
                            copy.sub_jobs.push(sj)
                        if ssn.job_ready(job):
                            break
                self.recorder.recover(job)
                ops = [op for st in stmts for op in st.save_operations()]
                if ops and (ssn.job_ready(job) or ssn.job_pipelined(job)):
                    solutions[hn] = (ops, copy, score)
                    best_score = score if best_score is None else max(best_score, score)
                    if len(stmts) > 1:
                        bounds = None  # placed in several passes: the bound does not hold, try all
                for st in reversed(stmts):
                    st.discard()
            if not solutions:
                continue
            if len(solutions) == 1:
                best = next(iter(solutions))
            else:
                best, _ = _pick(ssn, {hn: sol[2] for hn, sol in solutions.items()}, job)
            ops, copy, _ = solutions[best]
            final = ssn.statement()
            if not final.recover_operations(ops):
                final.discard()
                return None
            ws.adopt(copy)
            self.recorder.save_job_decision(job.uid, best)
            return final
        return None

    def allocate_for_sub_job(self, job: JobInfo, sj: SubJobInfo, ws: JobWorksheet,
                             for_job: str) -> tuple[Statement | None, float]:
        ssn = self.ssn
        tasks = ws.tasks.get(sj.uid)
        if not tasks:
            return None, 0.0
        if sj.nominated_hypernode:
            pinned = sj.nominated_hypernode
            stmt = self.allocate_from_nomination(job, sj, tasks)
            if stmt is not None:
                sj.allocated_hypernode = ssn.topology.lca(sj.allocated_hypernode, pinned)
                self.recorder.save_sub_job_decision(job.uid, for_job, sj.uid, sj.allocated_hypernode)
                return stmt, 0.0
        scorer = self._bounded_scorer()
        for gradient in ssn.hypernode_gradient_for_sub_job(sj, for_job, PURPOSE_ALLOCATE):
            if scorer is not None and len(gradient) > 1:
                found = self._bounded_sub_job_search(job, sj, tasks, gradient, scorer)
                if found is None:
                    continue
                best, score, ops, copy = found
            else:
                solutions: dict[str, tuple[list[SavedOperation], TaskQueue]] = {}
                for hn in gradient:
                    _reset_sub_job_fit_errors(job, sj)
                    attempt = tasks.clone()
                    stmt = self.tasks.allocate_resources_for_tasks(job, attempt, sub_job=sj, hypernode=hn)
                    if stmt is not None and stmt.operations:
                        solutions[hn] = (stmt.save_operations(), attempt)
                        stmt.discard()
                if not solutions:
                    continue
                best, score = _pick(ssn, ssn.hypernode_order_scores(sj, sorted(solutions)), job)
                ops, copy = solutions[best]
            final = ssn.statement()
            if not final.recover_operations(ops):
                final.discard()
                return None, 0.0
            sj.allocated_hypernode = ssn.topology.lca(sj.allocated_hypernode, best)
            ws.tasks[sj.uid] = copy
            self.recorder.save_sub_job_decision(job.uid, for_job, sj.uid, sj.allocated_hypernode)
            return final, score
        return None, 0.0

    def _bounded_sub_job_search(
        self, job: JobInfo, sj: SubJobInfo, tasks: TaskQueue, gradient: list[str], scorer: HyperNodeScoreBounds,
    ) -> tuple[str, float, list[SavedOperation], TaskQueue] | None:
        """The exhaustive choice over one tier without dry-running every candidate.

        HyperNodeOrder gives the successful candidates that share the top score a bonus (the
        fraction of the sub-job's tasks already inside) and picks at random among the best. Both
        figures are known before any dry run, so candidates are tried by descending (score,
        bonus), equal ones in random order: the first success is a uniform pick among the best
        successes. A second success with the same score is looked for only to know whether the
        bonus applies to the returned score."""
        topo = job.topology
        # Without sub-group policies the sub-job's statement is kept only when the job is
        # pipelined; with them, SubJobPipelined may accept any partial placement.
        sub_need = self._bound[1] if self._bound is not None and topo is not None and not topo.has_policies else 1
        base = scorer.base_scores(sj, gradient)
        bonus = {h: scorer.tie_bonus(sj, h) for h in gradient}
        order = self._shuffled_best_first(gradient, _with_tie_keys(self.ssn, job,
                                                                   {h: (base[h], bonus[h]) for h in gradient}))
        winner: tuple[str, list[SavedOperation], TaskQueue] | None = None
        tied = False
        for hn in order:
            if winner is not None and (base[hn] < base[winner[0]] or bonus[winner[0]] == 0.0):
                break
            if self._cannot_hold(self._bound, hn, sub_need):
                continue
            _reset_sub_job_fit_errors(job, sj)
            attempt = tasks.clone()
            stmt = self.tasks.allocate_resources_for_tasks(job, attempt, sub_job=sj, hypernode=hn)
            if stmt is not None and stmt.operations:
                ops = stmt.save_operations()
                stmt.discard()
                if winner is None:
                    winner = (hn, ops, attempt)
                else:
                    tied = True
                    break
        if winner is None:
            return None
        hn, ops, attempt = winner
        score = base[hn] + (bonus[hn] * scorer.tie_bonus_bound if tied else 0.0)
        return hn, score, ops, attempt


    # ------------------------------------------------------------------ nominations
    def nominated_statement(self, job: JobInfo, tasks: TaskQueue) -> Statement | None:
        """allocate's normal path: the nomination fast path for the job's default sub-job, if
        it has a nomination; None (nothing placed) otherwise or on a miss."""
        sj = job.topology.default_sub_job if job.topology is not None else None
        pinned = sj.nominated_hypernode if sj is not None else job.nominated_hypernode
        if not pinned:
            return None
        stmt = self.allocate_from_nomination(job, sj, tasks)
        if stmt is not None and sj is not None:
            sj.allocated_hypernode = self.ssn.topology.lca(sj.allocated_hypernode, pinned)
        return stmt

    @staticmethod
    def redeemed(job: JobInfo) -> None:
        """The default sub-job's statement was committed: its nomination is used up."""
        if job.topology is not None:
            job.topology.default_sub_job.nominated_hypernode = ""
        else:
            job.nominated_hypernode = ""

    def allocate_from_nomination(self, job: JobInfo, sj: SubJobInfo | None, tasks: TaskQueue) -> Statement | None:
        """Upstream ``allocateFromNomination`` (see the module doc); ``sj`` None is the default
        sub-job of a job without a JobTopology. Drains ``tasks`` on success."""
        ssn = self.ssn
        pinned = sj.nominated_hypernode if sj is not None else job.nominated_hypernode
        plan = self._validate_nomination(job, tasks, pinned)
        stmt: Statement | None = None
        if plan is not None:
            stmt = ssn.statement()
            for task, node in plan:
                if sj is not None and sj.with_network_topology:
                    ssn.topology.task_hypernode[task.uid] = pinned
                if not allocate_resources_for_task(ssn, stmt, task, node):
                    stmt.discard()
                    stmt = None
                    break
        if stmt is None:
            _invalidate_nomination(job, sj, tasks)
            return None
        while tasks:
            tasks.pop()
        return stmt

    def _validate_nomination(self, job: JobInfo, tasks: TaskQueue,
                             pinned: str) -> list[tuple[TaskInfo, NodeInfo]] | None:
        """Upstream ``validateNomination``: each task's nominated node, or None on any miss."""
        ssn = self.ssn
        rows = ssn.topology.rows(pinned)
        if len(rows) == 0:
            return None
        queue = ssn.queues[job.queue]
        helper = PredicateHelper(ssn, enable_error_cache=self.tasks.enable_predicate_error_cache)
        plan: list[tuple[TaskInfo, NodeInfo]] = []
        preview = tasks.clone()
        while preview:
            task = preview.pop()
            if not ssn.allocatable(queue, task):
                return None
            nominated = task.pod.nominated_node_name
            node = ssn.nodes.get(nominated) if nominated else None
            if node is None or not np.isin(node.index, rows):
                return None
            if ssn.pre_predicate(task) is not None:
                return None
            feasible, _errors = helper.predicate_nodes(task, np.array([node.index], dtype=np.int64),
                                                       ssn.allocate_predicate)
            if len(feasible) == 0:
                return None
            plan.append((task, node))
        return plan


def _invalidate_nomination(job: JobInfo, sj: SubJobInfo | None, tasks: TaskQueue) -> None:
    """Upstream ``invalidateSubJobNomination``: forget the HyperNode and the tasks' nominated nodes."""
    if sj is not None:
        sj.nominated_hypernode = ""
    else:
        job.nominated_hypernode = ""
    preview = tasks.clone()
    while preview:
        task = preview.pop()
        if task.pod.nominated_node_name:
            task.pod.nominated_node_name = ""


def _reset_sub_job_fit_errors(job: JobInfo, sj: SubJobInfo) -> None:
    """Upstream ``ResetSubJobFitErr``."""
    stale = [uid for uid in job.nodes_fit_errors if uid in sj.tasks]
    if stale:
        for uid in stale:
            del job.nodes_fit_errors[uid]
        job.bump_fit_version()
