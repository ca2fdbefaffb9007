"""Building blocks shared by the eviction actions (preempt, reclaim).

Mirrors upstream ``pkg/scheduler/util/scheduler_helper.go`` (``ValidateVictims``),
``framework/session.go`` (``FilterOutUnschedulableAndUnresolvableNodesForTask``,
``PredicateForPreemptAction``), plus the small checks both actions repeat.

Design. Everything here is a pure function of the session: no helper mutates session state.
Node lists are numpy arrays of node indices in node order (``ssn.node_list``), like the rest
of the framework, and task lists are sorted by UID wherever upstream iterates a Go map, so
decisions never depend on dict insertion order. The victims queue they pop from is the
framework's (:func:`pyvolcano.framework.victims.build_victims_queue`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pyvolcano.actions._helpers import PredicateHelper
from pyvolcano.api.node import NodeInfo
from pyvolcano.api.resource import DimensionDefault, Resource
from pyvolcano.api.task import TaskInfo
from pyvolcano.api.unschedule import Code, Status
from pyvolcano.framework.session import Session

__all__ = [
    "TaskFilter",
    "contains_unresolvable",
    "nodes_passing_preempt_predicate",
    "predicate_statuses_on_node",
    "preemption_never",
    "request_fits",
    "schedulable_nodes",
    "tasks_on_node",
    "validate_victims",
]

TaskFilter = Callable[[TaskInfo], bool]

PREEMPT_NEVER = "Never"


def preemption_never(task: TaskInfo) -> bool:
    """Whether the pod opted out of preempting others (``spec.preemptionPolicy: Never``)."""
    return task.pod.preemption_policy == PREEMPT_NEVER


def request_fits(task: TaskInfo, available: Resource) -> bool:
    """``task.InitResreq.LessEqual(available, Zero)``: the ε-tolerant fit every action uses."""
    return task.init_resreq.less_equal(available, DimensionDefault.ZERO)


def validate_victims(preemptor: TaskInfo, node: NodeInfo, victims: list[TaskInfo]) -> str | None:
    """Upstream ``ValidateVictims``: ``None`` if evicting every victim could make room, else why not.

    An empty victim list is valid when the node's future idle already fits the preemptor.
    """
    future_idle = node.future_idle()
    for victim in victims:
        future_idle.add(victim.resreq)
    if request_fits(preemptor, future_idle):
        return None
    return f"not enough resources: requested <{preemptor.init_resreq}>, but future idle <{future_idle}>"


def schedulable_nodes(ssn: Session, task: TaskInfo) -> np.ndarray:
    """Upstream ``FilterOutUnschedulableAndUnresolvableNodesForTask``, in node order.

    Drops the nodes an earlier action (allocate) recorded as UnschedulableAndUnresolvable
    for this task; everything else stays a candidate.
    """
    all_nodes = ssn.all_node_indices()
    job = ssn.jobs.get(task.job)
    fit_errors = job.nodes_fit_errors.get(task.uid) if job is not None else None
    if fit_errors is None:
        return all_nodes
    skip = fit_errors.unresolvable_nodes()
    if not skip:
        return all_nodes
    return all_nodes[~np.isin(all_nodes, np.fromiter(skip, dtype=np.int64, count=len(skip)))]


def nodes_passing_preempt_predicate(ssn: Session, helper: PredicateHelper, task: TaskInfo) -> np.ndarray:
    """Candidate nodes for an evicting preemptor: schedulable nodes passing ``PredicateForPreemptAction``.

    The result is in the order ``PredicateNodes`` found them (round-robin start). Upstream
    then splits it by scheduler shard; node sharding is not modelled, so there is one group.
    """
    nodes, _errors = helper.predicate_nodes(task, schedulable_nodes(ssn, task), ssn.preempt_predicate)
    return nodes


def predicate_statuses_on_node(ssn: Session, task: TaskInfo, node: NodeInfo) -> list[Status]:
    """Every plugin predicate on one node (upstream ``ssn.PredicateFn``); empty means it passes."""
    _ok, groups = ssn.predicate_failures(task, np.array([node.index], dtype=np.int64))
    return [status for status, _nodes in groups]


def contains_unresolvable(statuses: list[Status]) -> bool:
    return any(s.code == Code.UnschedulableAndUnresolvable for s in statuses)


def tasks_on_node(node: NodeInfo, keep: TaskFilter) -> list[TaskInfo]:
    """The node's tasks accepted by ``keep``, in UID order (upstream iterates a Go map)."""
    return [task for _uid, task in sorted(node.tasks.items()) if keep(task)]
