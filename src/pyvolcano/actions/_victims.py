"""Building blocks shared by the eviction actions (preempt, reclaim).

Mirrors upstream ``pkg/scheduler/util/scheduler_helper.go`` (``ValidateVictims``),
``framework/session_plugins.go`` (``BuildVictimsPriorityQueue``) and
``framework/session.go`` (``FilterOutUnschedulableAndUnresolvableNodesForTask``,
``PredicateForPreemptAction``), plus the small checks both actions repeat.

Design. Everything here is a pure function of the session: no helper mutates session state.
Node lists are numpy arrays of node indices in node order (``ssn.node_list``), like the rest
of the framework, and task lists are sorted by UID wherever upstream iterates a Go map, so
decisions never depend on dict insertion order.

Invariant: a victim queue pops the *cheapest* victim first — the reverse of the order in
which the scheduler would want to keep tasks running.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pyvolcano.actions._helpers import PredicateHelper
from pyvolcano.api.job import JobInfo
from pyvolcano.api.node import NodeInfo
from pyvolcano.api.resource import DimensionDefault, Resource
from pyvolcano.api.task import TaskInfo
from pyvolcano.api.unschedule import Code, Status
from pyvolcano.framework.session import Session
from pyvolcano.util.priority_queue import PriorityQueue

__all__ = [
    "TaskFilter",
    "build_victims_queue",
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


def build_victims_queue(
    ssn: Session, victims: list[TaskInfo], preemptor: TaskInfo
) -> PriorityQueue[TaskInfo]:
    """Upstream ``BuildVictimsPriorityQueue``: victims ordered cheapest first.

    Same job: reverse task order. A task whose job left the session goes first. Jobs in one
    queue (or an unknown preemptor job): the job ranked later by JobOrder goes first, ties by
    reverse task order. Jobs in different queues: VictimQueueOrder relative to the
    preemptor's queue.
    """
    preemptor_job = ssn.jobs.get(preemptor.job)

    def later_job_first(left_job: JobInfo, right_job: JobInfo, left: TaskInfo, right: TaskInfo) -> bool:
        cmp = ssn.job_order_compare(left_job, right_job)
        if cmp != 0:
            return cmp > 0
        return not ssn.task_order_fn(left, right)

    def cheaper(left: TaskInfo, right: TaskInfo) -> bool:
        if left.job == right.job:
            return not ssn.task_order_fn(left, right)
        left_job = ssn.jobs.get(left.job)
        right_job = ssn.jobs.get(right.job)
        if left_job is None or right_job is None:
            if left_job is None and right_job is None:
                return not ssn.task_order_fn(left, right)
            return left_job is None
        if preemptor_job is None or left_job.queue == right_job.queue:
            return later_job_first(left_job, right_job, left, right)
        return ssn.victim_queue_order_fn(
            ssn.queues[left_job.queue], ssn.queues[right_job.queue], ssn.queues[preemptor_job.queue]
        )

    return PriorityQueue(cheaper, victims)


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
