"""TaskInfo: the scheduler's view of one pod (upstream pkg/scheduler/api/job_info.go, types.go).

A task carries its request twice like upstream (``init_resreq`` for fit checks, ``resreq``
for accounting; equal in this version), its status in :class:`TaskStatus` (upstream's bit
order, so sets of statuses are bit masks), the node it sits on and the context of its last
transaction (used for the close-time scheduling reasons).
"""

from __future__ import annotations

import contextlib
import enum
import re
from dataclasses import dataclass
from typing import Any

from pyvolcano.api.names import GROUP_NAME_KEY, PREEMPTABLE_KEY, TASK_PRIORITY_KEY, TASK_SPEC_KEY
from pyvolcano.api.objects import Pod
from pyvolcano.api.quantity import milli_value, value
from pyvolcano.api.resource import CPU, MEMORY, PODS, Resource
from pyvolcano.api.task_template import TaskTemplate
from pyvolcano.util.numbers import parse_int

__all__ = [
    "ALLOCATED_STATUS",
    "COMPLETED_STATUS",
    "PREEMPTABLE_STATUS",
    "SCHEDULED_STATUS",
    "TaskInfo",
    "TaskStatus",
    "TransactionContext",
    "pod_nonzero_request",
    "pod_resource_request",
    "task_status_from_pod",
]


class TaskStatus(enum.IntFlag):
    """Upstream ``TaskStatus`` (``1 << iota`` order)."""

    Pending = 1 << 0
    Allocated = 1 << 1
    Pipelined = 1 << 2
    Binding = 1 << 3
    Bound = 1 << 4
    Running = 1 << 5
    Releasing = 1 << 6
    Succeeded = 1 << 7
    Failed = 1 << 8
    Unknown = 1 << 9

    def __str__(self) -> str:
        return self.name or repr(self)


ALLOCATED_STATUS = TaskStatus.Allocated | TaskStatus.Binding | TaskStatus.Bound | TaskStatus.Running
SCHEDULED_STATUS = TaskStatus.Running | TaskStatus.Bound | TaskStatus.Failed | TaskStatus.Succeeded
COMPLETED_STATUS = TaskStatus.Succeeded | TaskStatus.Failed
PREEMPTABLE_STATUS = TaskStatus.Bound | TaskStatus.Running
ALL_STATUSES: tuple[TaskStatus, ...] = tuple(TaskStatus)


def task_status_from_pod(pod: Pod) -> TaskStatus:
    """Upstream ``getTaskStatus``."""
    phase = pod.phase
    if phase == "Running":
        return TaskStatus.Releasing if pod.deletion_timestamp is not None else TaskStatus.Running
    if phase == "Pending":
        if pod.deletion_timestamp is not None:
            return TaskStatus.Releasing
        return TaskStatus.Bound if pod.node_name else TaskStatus.Pending
    if phase == "Succeeded":
        return TaskStatus.Succeeded
    if phase == "Failed":
        return TaskStatus.Failed
    return TaskStatus.Unknown


def _apply_pod_level(result: Resource, requests: dict[str, Any]) -> None:
    """Upstream ``amendResourceAccordingToPodFeatures`` (pkg/scheduler/api/pod_info.go): each
    pod-level request of a supported resource (cpu, memory, hugepages) replaces the containers'."""
    for name, q in requests.items():
        if name == CPU:
            result.milli_cpu = float(milli_value(q))
        elif name == MEMORY:
            result.memory = float(value(q))
        elif name.startswith("hugepages-"):
            result.scalars[name] = float(milli_value(q))


def pod_resource_request(pod: Pod) -> Resource:
    """Upstream ``GetPodResourceRequest``: containers + sidecars vs init max, the pod-level
    requests in their place, overhead, ``pods = 1``."""
    containers = pod.containers
    if len(containers) == 1:
        result = Resource.from_list(containers[0].requests)  # the sum of one, without a copy
    else:
        result = Resource()
        for c in containers:
            result.add(Resource.from_list(c.requests))
    if not pod.init_containers:
        # The max with an empty init total below, without building it.
        result.milli_cpu = max(result.milli_cpu, 0.0)
        result.memory = max(result.memory, 0.0)
        if pod.pod_requests:
            _apply_pod_level(result, pod.pod_requests)
        if pod.overhead:
            result.add(Resource.from_list(pod.overhead))
        result.scalars[PODS] = result.scalars.get(PODS, 0.0) + 1
        return result
    sidecars = Resource()
    init_max = Resource()
    for c in pod.init_containers:
        req = Resource.from_list(c.requests)
        if c.restart_policy == "Always":
            result.add(req)
            sidecars.add(req)
            current = sidecars.clone()
        else:
            current = req.add(sidecars)
        init_max.set_max(current)
    result.set_max(init_max)
    if pod.pod_requests:
        _apply_pod_level(result, pod.pod_requests)
    if pod.overhead:
        result.add(Resource.from_list(pod.overhead))
    result.scalars[PODS] = result.scalars.get(PODS, 0.0) + 1
    return result


# kube-scheduler (pkg/scheduler/util/pod_resources.go) DefaultMilliCPURequest / DefaultMemoryRequest.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


def _nonzero_container(requests: dict[str, Any]) -> tuple[int, int]:
    cpu = milli_value(requests[CPU]) if CPU in requests else DEFAULT_MILLI_CPU_REQUEST
    mem = value(requests[MEMORY]) if MEMORY in requests else DEFAULT_MEMORY_REQUEST
    return cpu, mem


def pod_nonzero_request(pod: Pod, resreq: Resource) -> tuple[float, float]:
    """kube-scheduler's *non-zero* cpu/memory request of a pod (``PodRequests`` with
    ``NonMissingContainerRequests``): a container without a ``cpu`` (``memory``) request key
    counts as 100m (200Mi), an explicit 0 stays 0; init containers and sidecars combine as in
    :func:`pod_resource_request`; pod-level cpu and memory requests replace the containers'
    (``applyPodLevelResources``); overhead is added. Equals ``resreq`` when no key is missing.
    """
    containers = (*pod.containers, *pod.init_containers)
    if all(CPU in c.requests and MEMORY in c.requests for c in containers):
        return resreq.milli_cpu, resreq.memory
    cpu = mem = 0
    for c in pod.containers:
        c_cpu, c_mem = _nonzero_container(c.requests)
        cpu += c_cpu
        mem += c_mem
    side_cpu = side_mem = init_cpu = init_mem = 0
    for c in pod.init_containers:
        c_cpu, c_mem = _nonzero_container(c.requests)
        if c.restart_policy == "Always":
            cpu, mem = cpu + c_cpu, mem + c_mem
            side_cpu, side_mem = side_cpu + c_cpu, side_mem + c_mem
            cur_cpu, cur_mem = side_cpu, side_mem
        else:
            cur_cpu, cur_mem = c_cpu + side_cpu, c_mem + side_mem
        init_cpu, init_mem = max(init_cpu, cur_cpu), max(init_mem, cur_mem)
    cpu, mem = max(cpu, init_cpu), max(mem, init_mem)
    if pod.pod_requests:
        if CPU in pod.pod_requests:
            cpu = milli_value(pod.pod_requests[CPU])
        if MEMORY in pod.pod_requests:
            mem = value(pod.pod_requests[MEMORY])
    if pod.overhead:
        over = Resource.from_list(pod.overhead)
        return cpu + over.milli_cpu, mem + over.memory
    return float(cpu), float(mem)


_INDEX_RE = re.compile(r"^[0-9]+$")


def _pod_index(name: str) -> int | None:
    # Upstream (framework/session_plugins.go TaskOrderFn fallback): the numeric suffix of a
    # name with at least three dash-separated parts.
    parts = name.split("-")
    if len(parts) >= 3 and _INDEX_RE.match(parts[-1]):
        return int(parts[-1])
    return None


def _parse_bool(text: str) -> bool | None:
    t = text.strip()
    if t in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if t in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    return None


@dataclass(slots=True)
class TransactionContext:
    node_name: str
    status: TaskStatus
    eviction_occurred: bool = False


class TaskInfo:
    """One pod as the scheduler sees it. Mutated only through JobInfo/NodeInfo/Statement."""

    __slots__ = (
        "best_effort",
        "creation_timestamp",
        "eq_key",
        "eviction_occurred",
        "index",
        "init_resreq",
        "job",
        "last_transaction",
        "name",
        "namespace",
        "node_name",
        "nonzero_req",
        "pod",
        "preemptable",
        "priority",
        "req_vec",
        "resreq",
        "role",
        "sch_gated",
        "status",
        "template",
        "uid",
    )

    def __init__(self, pod: Pod, *, resreq: Resource | None = None):
        self.pod = pod
        self.uid = pod.uid
        self.name = pod.name
        self.namespace = pod.namespace
        group = pod.annotations.get(GROUP_NAME_KEY, "")
        self.job = f"{pod.namespace}/{group}" if group else ""
        self.role = pod.labels.get(TASK_SPEC_KEY) or pod.annotations.get(TASK_SPEC_KEY) or ""
        req = resreq if resreq is not None else pod_resource_request(pod)
        self.init_resreq = req
        self.resreq = req
        self.best_effort = req.is_empty()
        self.preemptable = self._preemptable(pod)
        self.sch_gated = bool(pod.scheduling_gates)
        self.priority = pod.priority if pod.priority is not None else 1
        prio = pod.annotations.get(TASK_PRIORITY_KEY)
        if prio is not None:
            with contextlib.suppress(ValueError):
                self.priority = parse_int(prio.strip())
        self.node_name = pod.node_name
        self.status = task_status_from_pod(pod)
        self.eviction_occurred = False
        self.last_transaction: TransactionContext | None = None
        self.creation_timestamp = pod.creation_timestamp
        self.index = _pod_index(pod.name)
        self.eq_key: object = None
        self.req_vec: object = None
        self.nonzero_req: tuple[float, float] | None = None
        # The job's TaskTemplate for this task (api/task_template.py), set on first use.
        self.template: TaskTemplate | None = None

    @staticmethod
    def _preemptable(pod: Pod) -> bool:
        # Upstream GetPodPreemptable: annotation first, then label; unparsable => false; default true.
        for src in (pod.annotations, pod.labels):
            if PREEMPTABLE_KEY in src:
                return bool(_parse_bool(src[PREEMPTABLE_KEY]))
        return True

    def nonzero_request(self) -> tuple[float, float]:
        """The pod's non-zero cpu/memory request (:func:`pod_nonzero_request`), cached."""
        req = self.nonzero_req
        if req is None:
            req = self.nonzero_req = pod_nonzero_request(self.pod, self.resreq)
        return req

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def transaction_context(self) -> TransactionContext:
        return TransactionContext(self.node_name, self.status, self.eviction_occurred)

    def generate_last_tx_context(self) -> None:
        self.last_transaction = self.transaction_context()

    def clear_last_tx_context(self) -> None:
        self.last_transaction = None

    def __repr__(self) -> str:
        return f"Task<{self.key} {self.status} on {self.node_name or '-'}>"
