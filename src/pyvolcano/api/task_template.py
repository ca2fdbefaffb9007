"""Task templates: the identity shared by the replicas of one task of a job.

A Volcano Job creates the pods of a task from one template; apart from their names, uids,
creation times and the ``volcano.sh/task-index`` label and annotation, such replicas are
equal in everything the scheduler reads. :func:`template_signature` is that content: the
job, role, priority and preemptability, and the pod's containers (requests, limits, ports),
init containers, overhead, node selector, affinity, tolerations, topology spread
constraints, scheduling gates, scheduler name, priority class, preemption policy, nominated
node, ``activeDeadlineSeconds`` (a runtime the reservation plugin reads), labels and annotations
(without the task index). A job interns one
:class:`TaskTemplate` per signature (``JobInfo.template_of``), so tasks with equal
signatures share one object and ``a.template is b.template`` is the test.

Invariant: tasks that share a template differ only in their identity (name, uid, creation
time, pod index, task index) and their status; so any work that reads only what the
signature covers (a plugin's cache key, a request vector) may be done once per template.
Equal content written in another order (a dict with its keys inserted differently) may get
two templates: that only costs sharing, never correctness.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyvolcano.api.names import TASK_INDEX_KEY

if TYPE_CHECKING:
    from pyvolcano.api.objects import Container
    from pyvolcano.api.task import TaskInfo

__all__ = ["TaskTemplate", "same_content", "template_signature"]

Signature = tuple[Any, ...]


class TaskTemplate:
    """One template of a job's tasks (see module doc); compared by identity."""

    __slots__ = ("signature",)

    def __init__(self, signature: Signature):
        self.signature = signature

    def __repr__(self) -> str:
        return f"TaskTemplate<{self.signature[0]} {self.signature[1]!r}>"


def _items(d: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    if not d:
        return ()
    if TASK_INDEX_KEY in d:
        return tuple((k, v) for k, v in d.items() if k != TASK_INDEX_KEY)
    return tuple(d.items())


def _nested(value: Any) -> str | None:
    # Manifest-shaped dicts and lists of strings, numbers and booleans: their repr is
    # injective on such values.
    return repr(value) if value else None


def _containers(containers: list[Container]) -> tuple[Any, ...]:
    return tuple(
        (c.name, tuple(c.requests.items()), tuple(c.limits.items()), _nested(c.ports), c.restart_policy)
        for c in containers
    )


def _same_but_index(x: dict[str, str], y: dict[str, str]) -> bool:
    if x == y:
        return True
    if len(x) != len(y) or (TASK_INDEX_KEY in x) != (TASK_INDEX_KEY in y):
        return False
    return all(k == TASK_INDEX_KEY or y.get(k) == v for k, v in x.items())


def same_content(a: TaskInfo, b: TaskInfo) -> bool:
    """Whether ``a`` and ``b`` are equal in everything the signature covers (compared field
    by field, without building a signature; dicts compare regardless of key order)."""
    pa, pb = a.pod, b.pod
    return (
        a.job == b.job
        and a.role == b.role
        and a.priority == b.priority
        and a.preemptable == b.preemptable
        and pa.containers == pb.containers
        and pa.scheduler_name == pb.scheduler_name
        and pa.priority_class_name == pb.priority_class_name
        and pa.preemption_policy == pb.preemption_policy
        and pa.nominated_node_name == pb.nominated_node_name
        and pa.scheduling_gates == pb.scheduling_gates
        and pa.init_containers == pb.init_containers
        and pa.overhead == pb.overhead
        and pa.pod_requests == pb.pod_requests
        and pa.node_selector == pb.node_selector
        and pa.active_deadline_seconds == pb.active_deadline_seconds
        and pa.affinity == pb.affinity
        and pa.tolerations == pb.tolerations
        and pa.topology_spread_constraints == pb.topology_spread_constraints
        and _same_but_index(pa.labels, pb.labels)
        and _same_but_index(pa.annotations, pb.annotations)
    )


def template_signature(task: TaskInfo) -> Signature:
    """The content replicas of one template share (module doc); hashable."""
    pod = task.pod
    return (
        task.job,
        task.role,
        task.priority,
        task.preemptable,
        pod.scheduler_name,
        pod.priority_class_name,
        pod.preemption_policy,
        pod.nominated_node_name,
        tuple(pod.scheduling_gates),
        _items(pod.labels),
        _items(pod.annotations),
        _containers(pod.containers),
        _containers(pod.init_containers) if pod.init_containers else (),
        tuple(pod.overhead.items()) if pod.overhead else (),
        tuple(pod.pod_requests.items()) if pod.pod_requests else (),
        tuple(pod.node_selector.items()) if pod.node_selector else (),
        pod.active_deadline_seconds,
        _nested(pod.affinity),
        _nested(pod.tolerations),
        _nested(pod.topology_spread_constraints),
    )
