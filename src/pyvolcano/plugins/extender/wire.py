"""The JSON an HTTP extender receives: upstream's scheduler types as Go's ``encoding/json`` writes them.

Upstream marshals ``api.TaskInfo``, ``api.NodeInfo``, ``api.JobInfo`` and ``api.QueueInfo``
whole; those structs carry no JSON tags, so their keys are the Go field names (``UID``,
``Resreq``, ``NodeName``...), and an ``api.Resource`` is ``{"MilliCPU", "Memory",
"ScalarResources"}``. A task's ``Status`` is upstream's ``TaskStatus`` bit (Pending 1,
Allocated 2, Pipelined 4, Binding 8, Bound 16, Running 32, Releasing 64, Succeeded 128,
Failed 256, Unknown 512); its ``Pod`` is the ``v1.Pod`` as far as pyvolcano models it
(metadata, the scheduling fields of the spec, the containers' resources, the phase). These are
the fields an extender written against upstream reads; what pyvolcano does not model (image
states, CSI volumes, device plugins' private state) is left out (docs/differences.md).

Victims an extender returns are matched back to the session's candidates by ``UID``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyvolcano.api.job import JobInfo
from pyvolcano.api.node import NodeInfo
from pyvolcano.api.objects import Container, Pod, PodGroup
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import TaskInfo

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["job", "node", "queue", "resource", "session_open", "task"]


def resource(r: Resource) -> dict[str, Any]:
    return {"MilliCPU": r.milli_cpu, "Memory": r.memory,
            "ScalarResources": {k: v for k, v in sorted(r.scalars.items())} or None}


def _container(c: Container) -> dict[str, Any]:
    return {"name": c.name, "resources": {"requests": {k: str(v) for k, v in c.requests.items()},
                                          "limits": {k: str(v) for k, v in c.limits.items()}}}


def pod(p: Pod) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": p.scheduler_name, "containers": [_container(c) for c in p.containers]}
    if p.init_containers:
        spec["initContainers"] = [_container(c) for c in p.init_containers]
    for key, value in (("nodeName", p.node_name), ("priority", p.priority), ("priorityClassName",
                       p.priority_class_name), ("nodeSelector", p.node_selector), ("affinity", p.affinity),
                       ("tolerations", p.tolerations), ("preemptionPolicy", p.preemption_policy)):
        if value:
            spec[key] = value
    return {"metadata": {"name": p.name, "namespace": p.namespace, "uid": p.uid, "labels": dict(p.labels),
                         "annotations": dict(p.annotations)},
            "spec": spec, "status": {"phase": p.phase}}


def task(t: TaskInfo) -> dict[str, Any]:
    return {"UID": t.uid, "Job": t.job, "Name": t.name, "Namespace": t.namespace, "TaskRole": t.role,
            "Resreq": resource(t.resreq), "InitResreq": resource(t.init_resreq), "NodeName": t.node_name,
            "Status": int(t.status), "Priority": t.priority, "Preemptable": t.preemptable,
            "BestEffort": t.best_effort, "Pod": pod(t.pod)}


def node(n: NodeInfo) -> dict[str, Any]:
    return {"Name": n.name,
            "Node": {"metadata": {"name": n.name, "labels": dict(n.labels), "annotations": dict(n.node.annotations)},
                     "spec": {"taints": list(n.taints), "unschedulable": n.unschedulable},
                     "status": {"capacity": {k: str(v) for k, v in n.node.capacity.items()},
                                "allocatable": {k: str(v) for k, v in n.node.allocatable.items()}}},
            "Allocatable": resource(n.allocatable), "Capability": resource(Resource.from_list(n.node.capacity)),
            "Idle": resource(n.idle), "Used": resource(n.used), "Releasing": resource(n.releasing),
            "Pipelined": resource(n.pipelined),
            "Tasks": {uid: task(t) for uid, t in sorted(n.tasks.items())}}


def _podgroup(pg: PodGroup | None) -> dict[str, Any] | None:
    if pg is None:
        return None
    return {"metadata": {"name": pg.name, "namespace": pg.namespace, "uid": pg.uid, "labels": dict(pg.labels),
                         "annotations": dict(pg.annotations)},
            "spec": {"minMember": pg.min_member, "minTaskMember": dict(pg.min_task_member), "queue": pg.queue,
                     "priorityClassName": pg.priority_class_name, "minResources": pg.min_resources},
            "status": {"phase": pg.phase, "running": pg.running, "succeeded": pg.succeeded, "failed": pg.failed}}


def job(j: JobInfo) -> dict[str, Any]:
    return {"UID": j.uid, "Name": j.name, "Namespace": j.namespace, "Queue": j.queue, "Priority": j.priority,
            "MinAvailable": j.min_available, "TaskMinAvailable": dict(j.task_min_available),
            "Preemptable": j.preemptable, "Allocated": resource(j.allocated),
            "TotalRequest": resource(j.total_request), "PodGroup": _podgroup(j.podgroup),
            "Tasks": {uid: task(t) for uid, t in sorted(j.tasks.items())}}


def queue(q: QueueInfo) -> dict[str, Any]:
    spec = q.queue
    return {"UID": q.uid, "Name": q.name, "Weight": q.weight, "Hierarchy": q.hierarchy, "Weights": q.weights,
            "Queue": {"metadata": {"name": spec.name, "labels": dict(spec.labels),
                                   "annotations": dict(spec.annotations)},
                      "spec": {"weight": spec.weight, "capability": spec.capability, "deserved": spec.deserved,
                               "reclaimable": spec.reclaimable, "priority": spec.priority, "parent": spec.parent},
                      "status": {"state": spec.state}}}


def session_open(ssn: Session) -> dict[str, Any]:
    """``OnSessionOpenRequest``: every job, node and queue of the session (no JSON tags upstream)."""
    revocable = {n.name: node(n) for n in ssn.node_list if n.labels.get("volcano.sh/revocable-zone")}
    return {"Jobs": {uid: job(j) for uid, j in ssn.jobs.items()},
            "Nodes": {n.name: node(n) for n in ssn.node_list},
            "Queues": {name: queue(q) for name, q in sorted(ssn.queues.items())},
            "NamespaceInfo": {}, "RevocableNodes": revocable, "NodeList": [n.name for n in ssn.node_list]}
