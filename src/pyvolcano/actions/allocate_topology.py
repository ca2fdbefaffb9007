"""allocate's HyperNode path (upstream pkg/scheduler/actions/allocate/allocate.go ``allocateForJob``,
``allocateForSubJob``, and recorder.go).

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
  the job's candidate, choosing by the HyperNodeOrder scores; the chosen HyperNode moves the
  sub-job's allocated HyperNode to the lowest common ancestor of the old one and it.
* :class:`Recorder` snapshots the sub-jobs' allocated HyperNodes before the dry runs, restores
  them after each job-level candidate, remembers the decisions, and, when the job's statement
  is committed, moves the job's and its sub-jobs' allocated HyperNodes (LCA with the decision)
  and clears their nominations.

Invariant: outside the replayed statement, every dry run leaves the session as it found it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pyvolcano.actions._helpers import TaskQueue, task_queue
from pyvolcano.api.hypernode_tree import CLUSTER_TOP_HYPERNODE
from pyvolcano.api.job import JobInfo
from pyvolcano.api.sub_job import SubJobInfo
from pyvolcano.api.task import TaskStatus
from pyvolcano.framework.statement import SavedOperation, Statement
from pyvolcano.framework.topology import PURPOSE_ALLOCATE
from pyvolcano.util.priority_queue import PriorityQueue

if TYPE_CHECKING:
    from pyvolcano.actions.allocate import Allocate
    from pyvolcano.framework.session import Session

__all__ = ["JobWorksheet", "Recorder", "TopologyPlacement", "organize_worksheet"]


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


class Recorder:
    """Upstream ``Recorder``: HyperNode decisions of one allocate execution."""

    def __init__(self) -> None:
        self.job_decisions: dict[str, str] = {}
        self.sub_job_decisions: dict[str, dict[str, dict[str, str]]] = {}
        self._snapshot: dict[str, dict[str, str]] = {}

    def save_job_decision(self, job: str, hypernode: str) -> None:
        self.job_decisions[job] = hypernode

    def save_sub_job_decision(self, job: str, for_job: str, sub_job: str, hypernode: str) -> None:
        self.sub_job_decisions.setdefault(job, {}).setdefault(for_job, {})[sub_job] = hypernode

    def snapshot(self, job: JobInfo, ws: JobWorksheet) -> None:
        topo = job.topology
        assert topo is not None
        self._snapshot[job.uid] = {uid: topo.sub_jobs[uid].allocated_hypernode
                                   for uid in ws.tasks if uid in topo.sub_jobs}

    def recover(self, job: JobInfo) -> None:
        topo = job.topology
        assert topo is not None
        for uid, hn in self._snapshot.get(job.uid, {}).items():
            sj = topo.sub_jobs.get(uid)
            if sj is not None:
                sj.allocated_hypernode = hn

    def update_decision_to_job(self, ssn: Session, job: JobInfo) -> None:
        """After the job's statement was committed (upstream ``UpdateDecisionToJob``)."""
        topo = job.topology
        chosen = self.job_decisions.get(job.uid, "")
        if topo is None or not chosen:
            return
        lca = ssn.topology.lca
        topo.allocated_hypernode = lca(topo.allocated_hypernode, chosen)
        for uid, hn in self.sub_job_decisions.get(job.uid, {}).get(chosen, {}).items():
            sj = topo.sub_jobs.get(uid)
            if sj is None:
                continue
            sj.allocated_hypernode = lca(sj.allocated_hypernode, hn)
            sj.nominated_hypernode = ""


def _pick(ssn: Session, scores: dict[str, float]) -> tuple[str, float]:
    """The best-scoring name, uniformly at random among ties (names sorted first)."""
    top = max(scores.values())
    best = sorted(n for n, s in scores.items() if s == top)
    choice = best[0] if len(best) == 1 else best[int(ssn.rng.integers(len(best)))]
    return choice, top


class TopologyPlacement:
    """The HyperNode search of one allocate execution."""

    def __init__(self, ssn: Session, action: Allocate):
        self.ssn = ssn
        self.action = action
        self.recorder = Recorder()

    def allocate_for_job(self, job: JobInfo, ws: JobWorksheet, root: str = CLUSTER_TOP_HYPERNODE) -> Statement | None:
        ssn = self.ssn
        if ws.empty():
            return None
        self.recorder.snapshot(job, ws)
        for gradient in ssn.hypernode_gradient_for_job(job, root, PURPOSE_ALLOCATE):
            solutions: dict[str, tuple[list[SavedOperation], JobWorksheet, float]] = {}
            for hn in gradient:
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
                for st in reversed(stmts):
                    st.discard()
            if not solutions:
                continue
            best, _ = _pick(ssn, {hn: sol[2] for hn, sol in solutions.items()})
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
        for gradient in ssn.hypernode_gradient_for_sub_job(sj, for_job, PURPOSE_ALLOCATE):
            solutions: dict[str, tuple[list[SavedOperation], TaskQueue]] = {}
            for hn in gradient:
                _reset_sub_job_fit_errors(job, sj)
                copy = tasks.clone()
                stmt = self.action.allocate_resources_for_tasks(ssn, job, copy, sub_job=sj, hypernode=hn)
                if stmt is not None and stmt.operations:
                    solutions[hn] = (stmt.save_operations(), copy)
                    stmt.discard()
            if not solutions:
                continue
            best, score = _pick(ssn, ssn.hypernode_order_scores(sj, sorted(solutions)))
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


def _reset_sub_job_fit_errors(job: JobInfo, sj: SubJobInfo) -> None:
    """Upstream ``ResetSubJobFitErr``."""
    stale = [uid for uid in job.nodes_fit_errors if uid in sj.tasks]
    if stale:
        for uid in stale:
            del job.nodes_fit_errors[uid]
        job.bump_fit_version()
