"""overcommit plugin: admit PodGroups against an over-committed cluster.

Mirrors upstream pkg/scheduler/plugins/overcommit/overcommit.go.

Design. At session open the plugin fixes two resource vectors:

* ``idle = total × overcommit-factor − Σ node.used`` (``used`` includes releasing pods, so
  the result can be negative on some dimension; it is not clamped, as upstream);
* ``inqueue`` = Σ ``minResources`` of Inqueue PodGroups, plus Σ ``max(minResources −
  allocated, 0)`` of Running PodGroups that already hold at least ``minMember`` allocated
  tasks; both terms exclude the requests of scheduling-gated pods.

JobEnqueueable permits a PodGroup without ``minResources`` and otherwise permits iff
``inqueue + minResources ≤ idle`` on the dimensions ``minResources`` requests (strict, no ε,
``pods`` ignored); a rejection records the PodGroup event ``"resource in cluster is
overused: overused <dims>"``. JobEnqueued adds an admitted job's ``minResources`` to
``inqueue``, so the jobs admitted within one enqueue pass add up.

Invariants: ``idle`` never changes during a session; ``inqueue`` only grows (through
JobEnqueued). The factor is read once, in the constructor, so a malformed value fails
before any session runs; a factor below 1.0 falls back to the default 1.2 (upstream warns
and does the same).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyvolcano.api.job import JobInfo
from pyvolcano.api.resource import CPU, MEMORY, Resource
from pyvolcano.framework.argument_keys import ArgumentKeys, honoured
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.interfaces import Vote
from pyvolcano.plugins._util import running_reservation

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["ARGUMENTS", "DEFAULT_OVERCOMMIT_FACTOR", "NAME", "Overcommit", "new"]

logger = logging.getLogger(__name__)

NAME = "overcommit"
OVERCOMMIT_FACTOR = "overcommit-factor"
DEFAULT_OVERCOMMIT_FACTOR = 1.2
ARGUMENTS = ArgumentKeys(f"plugin {NAME}", (honoured(OVERCOMMIT_FACTOR),))

_INQUEUE_PHASE = "Inqueue"


class Overcommit:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        args = Arguments(arguments, keys=ARGUMENTS)
        factor = args.get_float(OVERCOMMIT_FACTOR, DEFAULT_OVERCOMMIT_FACTOR)
        if factor < 1.0:
            logger.warning(
                "plugin %s: %s %g is below 1; using the default %g",
                NAME, OVERCOMMIT_FACTOR, factor, DEFAULT_OVERCOMMIT_FACTOR,
            )
            factor = DEFAULT_OVERCOMMIT_FACTOR
        self.factor = factor
        self.idle = Resource()
        self.inqueue = Resource()

    def on_session_open(self, ssn: Session) -> None:
        self.idle = ssn.total_resource.clone().multi(self.factor).sub(_cluster_used(ssn))
        self.inqueue = _initial_inqueue(ssn)

        def job_enqueueable(job: JobInfo) -> int:
            if not job.has_min_resources():
                return Vote.PERMIT
            min_req = job.min_resources()
            wanted = self.inqueue.clone().add(min_req)
            fits, overused = wanted.less_equal_with_dimension(self.idle, min_req)
            if fits:
                return Vote.PERMIT
            ssn.podgroup_events.setdefault(job.uid, []).append(
                f"Normal Unschedulable {_overused_message(overused)}"
            )
            return Vote.REJECT

        def job_enqueued(job: JobInfo) -> None:
            if job.has_min_resources():
                self.inqueue.add(job.deduct_sch_gated_resources(job.min_resources()))

        ssn.add_job_enqueueable_fn(NAME, job_enqueueable)
        ssn.add_job_enqueued_fn(NAME, job_enqueued)

    def on_session_close(self, ssn: Session) -> None:
        self.idle = Resource()
        self.inqueue = Resource()


def _cluster_used(ssn: Session) -> Resource:
    """Σ ``used`` over the session's nodes, summed per dimension over the node table."""
    table = ssn.node_table
    rows = slice(0, table.n)
    used = Resource()
    for d, name in enumerate(table.dims):
        column = table.used[d][rows]
        if name in (CPU, MEMORY) or table.declared[d][rows].any() or column.any():
            used.set(name, float(column.sum()))
    return used


def _initial_inqueue(ssn: Session) -> Resource:
    """Resources promised to admitted PodGroups that their pods do not hold yet."""
    sums = ssn.memo.job_sums("overcommit/reservations", 1, _job_reservation, group=_one_group)
    total = sums.refresh(ssn.jobs).get("")
    return total[0].clone() if total is not None else Resource()


def _one_group(_job: JobInfo) -> str:
    return ""


def _job_reservation(job: JobInfo) -> tuple[Resource]:
    pg = job.podgroup
    if pg is None or pg.min_resources is None:
        return (Resource(),)
    if pg.phase == _INQUEUE_PHASE:
        return (job.deduct_sch_gated_resources(job.min_resources()),)
    reserved = running_reservation(job)
    return (reserved.clone() if reserved is not None else Resource(),)


def _overused_message(names: list[str]) -> str:
    prefix = "resource in cluster is overused"
    if not names:
        return prefix
    return f"{prefix}: " + ", ".join(f"overused {n}" for n in names)


def new(arguments: Mapping[str, Any]) -> Overcommit:
    return Overcommit(arguments)
