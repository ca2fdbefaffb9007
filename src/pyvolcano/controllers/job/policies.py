"""Requests, lifecycle-policy resolution and delayed actions of the job controller.

Mirrors ``pkg/controllers/apis/request.go`` and ``applyPolicies`` /
``GetStateAction`` / ``GetActionType`` in ``pkg/controllers/job/job_controller_util.go``.

Resolution order for a request (first rule that applies wins):

1. a request carrying an action (from a Command) uses it;
2. internal events (``OutOfSync``, ``CommandIssued``, ``PodRunning``) ⇒ ``SyncJob``;
3. a request for another job UID, or older than ``status.version`` ⇒ ``SyncJob`` — PodGroup
   phase changes carry version 0, so an ``Unknown`` policy only fires before the first
   restart (upstream quirk);
4. the named task's policies, then the job's: a policy matches when its ``event``/``events``
   contain the event or ``*`` (``PodPending`` only matches a policy with a ``timeout``), or
   when its ``exitCode`` equals the request's exit code; its ``timeout`` becomes a delay;
5. otherwise ``SyncJob``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyvolcano.api.duration import parse_duration
from pyvolcano.controllers._common import spec, status, uid_of

__all__ = [
    "ANY_EVENT",
    "DelayAction",
    "Request",
    "StateAction",
    "Target",
    "action_type",
    "apply_policies",
    "is_internal_action",
    "state_action",
]

# Events (volcano.sh/apis bus/v1alpha1/events.go)
ANY_EVENT = "*"
POD_FAILED = "PodFailed"
POD_EVICTED = "PodEvicted"
POD_PENDING = "PodPending"
POD_RUNNING = "PodRunning"
JOB_UNKNOWN = "Unknown"
TASK_COMPLETED = "TaskCompleted"
TASK_FAILED = "TaskFailed"
OUT_OF_SYNC = "OutOfSync"
COMMAND_ISSUED = "CommandIssued"

# Actions (bus/v1alpha1/actions.go)
ABORT_JOB = "AbortJob"
RESTART_JOB = "RestartJob"
RESTART_TASK = "RestartTask"
RESTART_POD = "RestartPod"
RESTART_PARTITION = "RestartPartition"
TERMINATE_JOB = "TerminateJob"
COMPLETE_JOB = "CompleteJob"
RESUME_JOB = "ResumeJob"
SYNC_JOB = "SyncJob"
ENQUEUE_JOB = "EnqueueJob"
SYNC_QUEUE = "SyncQueue"
OPEN_QUEUE = "OpenQueue"
CLOSE_QUEUE = "CloseQueue"

POD_EVENTS = frozenset({POD_PENDING, POD_RUNNING, POD_FAILED, POD_EVICTED})
_INTERNAL_EVENTS = frozenset({OUT_OF_SYNC, COMMAND_ISSUED, POD_RUNNING})
_INTERNAL_ACTIONS = frozenset({SYNC_JOB, ENQUEUE_JOB, SYNC_QUEUE, OPEN_QUEUE, CLOSE_QUEUE})


@dataclass(frozen=True, slots=True)
class Request:
    """One unit of job-controller work (``apis.Request``); equal requests coalesce in the queue."""

    namespace: str
    job_name: str
    job_uid: str = ""
    task_name: str = ""
    pod_name: str = ""
    pod_uid: str = ""
    partition_id: str = ""
    event: str = ""
    exit_code: int = 0
    action: str = ""
    job_version: int = 0

    @property
    def job_key(self) -> str:
        return f"{self.namespace}/{self.job_name}"


@dataclass(frozen=True, slots=True)
class Target:
    type: str = ""  # "", "task", "pod", "partition"
    task_name: str = ""
    pod_name: str = ""
    partition: str = ""


@dataclass(frozen=True, slots=True)
class StateAction:
    action: str
    target: Target = Target()


@dataclass(slots=True)
class DelayAction:
    """The outcome of policy resolution; ``delay > 0`` means "run ``action`` later"."""

    job_key: str
    event: str
    task_name: str
    pod_name: str
    pod_uid: str
    partition: str
    action: str = SYNC_JOB
    delay: float = 0.0
    fire_at: float = 0.0
    cancelled: bool = False
    request: Request | None = None


def is_internal_action(action: str) -> bool:
    return action in _INTERNAL_ACTIONS


def action_type(action: str) -> str:
    """``GetActionType``: the scope a (non-internal) action covers."""
    if action == RESTART_TASK:
        return "task"
    if action == RESTART_POD:
        return "pod"
    if action == RESTART_PARTITION:
        return "partition"
    return "job"


def state_action(d: DelayAction) -> StateAction:
    """``GetStateAction``: attach the target for task/pod/partition restarts."""
    if d.action == RESTART_TASK:
        return StateAction(d.action, Target("task", d.task_name))
    if d.action == RESTART_POD:
        return StateAction(d.action, Target("pod", d.task_name, d.pod_name))
    if d.action == RESTART_PARTITION:
        return StateAction(d.action, Target("partition", d.task_name, d.pod_name, d.partition))
    return StateAction(d.action)


def _event_list(policy: Mapping[str, Any]) -> list[str]:
    events = [str(e) for e in policy.get("events") or []]
    if policy.get("event"):
        events.append(str(policy["event"]))
    return events


def _timeout(policy: Mapping[str, Any]) -> float | None:
    raw = policy.get("timeout")
    if raw is None:
        return None
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return float(raw)
    return parse_duration(str(raw)) or 0.0


def _match(policy: Mapping[str, Any], req: Request) -> bool:
    events = _event_list(policy)
    if (
        events
        and req.event
        and (req.event in events or ANY_EVENT in events)
        and (req.event != POD_PENDING or policy.get("timeout") is not None)
    ):
        return True
    code = policy.get("exitCode")
    return code is not None and not isinstance(code, bool) and int(code) == req.exit_code


def apply_policies(job: Mapping[str, Any], req: Request) -> DelayAction:
    """Resolve what to do for ``req`` on ``job`` (see the module docstring)."""
    d = DelayAction(req.job_key, req.event, req.task_name, req.pod_name, req.pod_uid, req.partition_id)
    if req.action:
        d.action = req.action
        return d
    if req.event in _INTERNAL_EVENTS:
        return d
    if req.job_uid and req.job_uid != uid_of(job):
        return d
    if req.job_version < int(status(job).get("version") or 0):
        return d
    policy_lists: list[list[Any]] = []
    if req.task_name:
        for task in spec(job).get("tasks") or []:
            if isinstance(task, dict) and task.get("name") == req.task_name:
                policy_lists.append(task.get("policies") or [])
                break
    policy_lists.append(spec(job).get("policies") or [])
    for policies in policy_lists:
        for policy in policies:
            if isinstance(policy, dict) and _match(policy, req):
                d.action = str(policy.get("action", ""))
                timeout = _timeout(policy)
                if timeout is not None:
                    d.delay = timeout
                return d
    return d
