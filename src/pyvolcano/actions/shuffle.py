"""shuffle action (upstream pkg/scheduler/actions/shuffle/shuffle.go).

Rebalancing by eviction: every Running task of every job is offered to the plugins'
``VictimTasks`` callbacks (tdm, pdb, rescheduling upstream; per tier, the union of their
answers, the first tier with any victim wins) and each victim is evicted at once with
``Session.evict`` (no statement: the eviction is not revocable), reason ``shuffle``.

Invariant: candidates and victims are taken in job UID / task UID order; upstream iterates
Go maps here, so its order is random.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyvolcano.api.task import TaskInfo, TaskStatus
from pyvolcano.framework.argument_keys import ArgumentKeys
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.session import Session

__all__ = ["Shuffle", "new"]

NAME = "shuffle"
ARGUMENTS = ArgumentKeys(f"action {NAME}")
"""Upstream reads no argument of this action."""
EVICT_REASON = "shuffle"


class Shuffle:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        self.arguments = Arguments(arguments, keys=ARGUMENTS).raw

    def execute(self, ssn: Session) -> None:
        running: list[TaskInfo] = []
        for _uid, job in sorted(ssn.jobs.items()):
            running.extend(t for _tid, t in sorted(job.tasks.items()) if t.status == TaskStatus.Running)
        for victim in sorted(ssn.victim_tasks(running), key=lambda t: t.uid):
            ssn.evict(victim, EVICT_REASON)


def new(arguments: Mapping[str, Any] | None = None) -> Shuffle:
    return Shuffle(arguments)
