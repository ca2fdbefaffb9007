"""Fit errors: why a task did not fit (upstream pkg/scheduler/api/unschedule_info.go).

A :class:`FitErrors` collects, for one task, groups of nodes that failed for the same
reason. Groups hold numpy arrays of node indices rather than one object per node, so a
failure over 10,000 nodes costs one array, not 10,000 records. ``error()`` renders upstream's
message::

    0/12 nodes are unavailable: 4 Insufficient nvidia.com/gpu, 8 node(s) didn't match Pod's node affinity/selector.

where 12 is the number of distinct nodes that reported an error and the reasons are sorted
as strings, as upstream sorts them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

__all__ = ["Code", "FitErrors", "FitGroup", "Status"]

ALL_NODES_UNAVAILABLE = "all nodes are unavailable"
NODE_POD_NUMBER_EXCEEDED = "node(s) pod number exceeded"
DRA_PRE_PREDICATE = "plugin DynamicResources pre-predicates failed"
"""How a pod's ResourceClaims that cannot be used yet are reported (upstream
``handleSkipPrePredicatePlugin`` around DynamicResources' PreFilter message)."""
DRA_NOT_AVAILABLE = "resourceclaim not available on the node"
DRA_CANNOT_ALLOCATE = "cannot allocate all claims"


class Code(enum.IntEnum):
    Success = 0
    Error = 1
    Unschedulable = 2
    UnschedulableAndUnresolvable = 3
    Wait = 4
    Skip = 5


@dataclass(frozen=True, slots=True)
class Status:
    code: Code
    reason: str

    @property
    def aborts(self) -> bool:
        """Whether upstream's predicate loop stops at this status (not a plain Unschedulable)."""
        return self.code in (Code.UnschedulableAndUnresolvable, Code.Error, Code.Wait, Code.Skip)


@dataclass(frozen=True, slots=True)
class FitGroup:
    reason: str
    code: Code
    nodes: np.ndarray  # node indices


class FitErrors:
    """Per-task record of the nodes that failed and why."""

    __slots__ = ("err", "groups", "hypernode")

    def __init__(self) -> None:
        self.groups: list[FitGroup] = []
        self.err = ""
        # The HyperNode the nodes were searched in (upstream ``SetHyperNode``), "" for all nodes.
        self.hypernode = ""

    def add(self, reason: str, code: Code, nodes: np.ndarray) -> None:
        if len(nodes):
            self.groups.append(FitGroup(reason, code, np.asarray(nodes, dtype=np.int64)))

    def set_error(self, err: str) -> None:
        self.err = err

    def is_empty(self) -> bool:
        return not self.groups

    def failed_nodes(self) -> np.ndarray:
        if not self.groups:
            return np.zeros(0, dtype=np.int64)
        return np.unique(np.concatenate([g.nodes for g in self.groups]))

    def unresolvable_nodes(self) -> set[int]:
        out: set[int] = set()
        for g in self.groups:
            if g.code == Code.UnschedulableAndUnresolvable:
                out.update(int(i) for i in g.nodes)
        return out

    def error(self) -> str:
        n = len(self.failed_nodes())
        head = self.err or f"0/{n} nodes are unavailable"
        if n == 0:
            return head
        counts: dict[str, int] = {}
        for g in self.groups:
            counts[g.reason] = counts.get(g.reason, 0) + len(g.nodes)
        parts = sorted(f"{v} {k}" for k, v in counts.items())
        msg = f"{head}: {', '.join(parts)}."
        return f"In hyperNode {self.hypernode}: {msg}" if self.hypernode else msg

    def __repr__(self) -> str:
        return f"FitErrors<{self.error()}>"


def insufficient_reason(resources: list[str]) -> str:
    """Upstream ``WrapInsufficientResourceReason``: only the first failing dimension is named."""
    return f"Insufficient {resources[0]}" if resources else ""
