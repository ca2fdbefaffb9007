"""The HyperNode decisions of one allocate execution (upstream
pkg/scheduler/actions/allocate/recorder.go).

The HyperNode path (:mod:`pyvolcano.actions.allocate.topology`) dry-runs candidates that move
the sub-jobs' allocated HyperNodes; :class:`Recorder` snapshots them before the dry runs,
restores them after each job-level candidate, remembers the decisions, and, when the job's
statement is committed, moves the job's and its sub-jobs' allocated HyperNodes (the lowest
common ancestor with the decision) and clears their nominations.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from pyvolcano.api.job import JobInfo

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["Recorder"]


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

    def snapshot(self, job: JobInfo, sub_jobs: Iterable[str]) -> None:
        """Keep the allocated HyperNodes of ``job``'s sub-jobs ``sub_jobs`` (uids) for :meth:`recover`."""
        topo = job.topology
        assert topo is not None
        self._snapshot[job.uid] = {uid: topo.sub_jobs[uid].allocated_hypernode
                                   for uid in sub_jobs if uid in topo.sub_jobs}

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
