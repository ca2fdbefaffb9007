"""conformance plugin (upstream pkg/scheduler/plugins/conformance/conformance.go).

Preemptable, Reclaimable and UnifiedEvictable: never evict critical pods — those whose priorityClassName is
``system-cluster-critical`` or ``system-node-critical`` or that live in ``kube-system``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyvolcano.api.task import TaskInfo
from pyvolcano.framework.argument_keys import ArgumentKeys
from pyvolcano.framework.arguments import Arguments
from pyvolcano.framework.interfaces import Vote

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

NAME = "conformance"
ARGUMENTS = ArgumentKeys(f"plugin {NAME}")
"""Upstream reads no argument of this plugin."""
_CRITICAL = ("system-cluster-critical", "system-node-critical")


class Conformance:
    name = NAME

    def __init__(self, arguments: Mapping[str, Any] | None = None):
        self.arguments = Arguments(arguments, keys=ARGUMENTS).raw

    def on_session_open(self, ssn: Session) -> None:
        def evictable(_evictor: object, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            victims = [
                c
                for c in candidates
                if c.pod.priority_class_name not in _CRITICAL and c.namespace != "kube-system"
            ]
            return victims, Vote.PERMIT

        ssn.add_preemptable_fn(NAME, evictable)
        ssn.add_reclaimable_fn(NAME, evictable)
        ssn.add_unified_evictable_fn(NAME, evictable)

    def on_session_close(self, ssn: Session) -> None:
        return None


def new(arguments: Mapping[str, Any]) -> Conformance:
    return Conformance(arguments)
