"""The vcjob state machine (``pkg/controllers/job/state/*.go``).

Each phase maps an action to one of three operations, passing a *phase function* that
inspects the freshly counted status and may move the phase:

* ``SyncJob(fn)`` — reconcile PodGroup and pods, count them, apply ``fn``;
* ``KillJob(retain, fn)`` — bump ``status.version``, delete every pod except those whose
  phase is in ``retain`` (``SOFT`` = Succeeded/Failed, ``NONE`` = nothing), delete the
  PodGroup, apply ``fn``;
* ``KillTarget(target, fn)`` — delete one task's, pod's or partition's pods, apply ``fn``.

The table (upstream file per phase):

============  ==========================================  =====================================
phase         action                                      effect
============  ==========================================  =====================================
Pending       RestartJob                                  KillJob(NONE), retry+1 → Restarting
Pending       RestartTask/Pod/Partition                   KillTarget, retry+1 → Restarting
Pending       AbortJob / CompleteJob / TerminateJob       KillJob(SOFT) → Aborting/Completing/Terminating
Pending       other                                       SyncJob; Running once minAvailable ≤ running+succeeded+failed
Running       (same kills as Pending)
Running       other                                       SyncJob; completion rules (:func:`_running_phase`)
Restarting    SyncJob / RestartTask… / other              SyncJob / KillTarget / KillJob(NONE), restart check
Aborting      ResumeJob / other                           KillJob(SOFT) → Restarting (retry+1) / Aborted when idle
Aborted       ResumeJob / other                           KillJob(SOFT) → Restarting (retry+1) / stay
Completing    any                                         KillJob(SOFT); Completed when idle
Terminating   any                                         KillJob(SOFT); Terminated when idle
Completed, Terminated, Failed  any                        KillJob(SOFT), stay
============  ==========================================  =====================================

"Idle" means no terminating, pending or running pods. An unknown phase behaves as Pending.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from pyvolcano.controllers._common import spec
from pyvolcano.controllers.job.cache import JobInfo
from pyvolcano.controllers.job.policies import (
    ABORT_JOB,
    COMPLETE_JOB,
    RESTART_JOB,
    RESTART_PARTITION,
    RESTART_POD,
    RESTART_TASK,
    RESUME_JOB,
    SYNC_JOB,
    TERMINATE_JOB,
    StateAction,
    Target,
)

__all__ = [
    "PHASES",
    "RETAIN_NONE",
    "RETAIN_SOFT",
    "StateOps",
    "UpdateStatusFn",
    "execute",
    "total_task_min_available",
    "total_tasks",
]

PENDING = "Pending"
ABORTING = "Aborting"
ABORTED = "Aborted"
RUNNING = "Running"
RESTARTING = "Restarting"
COMPLETING = "Completing"
COMPLETED = "Completed"
TERMINATING = "Terminating"
TERMINATED = "Terminated"
FAILED = "Failed"
PHASES = (PENDING, ABORTING, ABORTED, RUNNING, RESTARTING, COMPLETING, COMPLETED, TERMINATING, TERMINATED, FAILED)

RETAIN_NONE: frozenset[str] = frozenset()
RETAIN_SOFT: frozenset[str] = frozenset({"Succeeded", "Failed"})

UpdateStatusFn = Callable[[dict[str, Any]], bool]
"""Mutates a job status dict in place; returns whether the phase changed."""

_RESTARTS = (RESTART_TASK, RESTART_POD, RESTART_PARTITION)


class StateOps(Protocol):
    def sync_job(self, info: JobInfo, fn: UpdateStatusFn | None) -> None: ...

    def kill_job(self, info: JobInfo, retain: frozenset[str], fn: UpdateStatusFn | None) -> None: ...

    def kill_target(self, info: JobInfo, target: Target, fn: UpdateStatusFn | None) -> None: ...


def _n(st: Mapping[str, Any], key: str) -> int:
    return int(st.get(key) or 0)


def _set_phase(st: dict[str, Any], phase: str) -> None:
    state = st.get("state")
    if not isinstance(state, dict):
        state = {}
        st["state"] = state
    state["phase"] = phase


def _bump_retry(st: dict[str, Any]) -> None:
    st["retryCount"] = _n(st, "retryCount") + 1


def total_tasks(job: Mapping[str, Any]) -> int:
    return sum(int(t.get("replicas") or 0) for t in spec(job).get("tasks") or [] if isinstance(t, dict))


def total_task_min_available(job: Mapping[str, Any]) -> int:
    total = 0
    for t in spec(job).get("tasks") or []:
        if isinstance(t, dict):
            ma = t.get("minAvailable")
            total += int(ma) if ma is not None else int(t.get("replicas") or 0)
    return total


def _to(phase: str, *, retry: bool = False) -> UpdateStatusFn:
    def fn(st: dict[str, Any]) -> bool:
        if retry:
            _bump_retry(st)
        _set_phase(st, phase)
        return True

    return fn


def _when_idle(phase: str) -> UpdateStatusFn:
    def fn(st: dict[str, Any]) -> bool:
        if _n(st, "terminating") or _n(st, "pending") or _n(st, "running"):
            return False
        _set_phase(st, phase)
        return True

    return fn


def _pending_phase(job: Mapping[str, Any]) -> UpdateStatusFn:
    def fn(st: dict[str, Any]) -> bool:
        if int(spec(job).get("minAvailable") or 0) <= _n(st, "running") + _n(st, "succeeded") + _n(st, "failed"):
            _set_phase(st, RUNNING)
            return True
        return False

    return fn


def _running_phase(job: Mapping[str, Any]) -> UpdateStatusFn:
    def fn(st: dict[str, Any]) -> bool:
        replicas = total_tasks(job)
        if replicas == 0:
            return False
        sp = spec(job)
        min_success = sp.get("minSuccess")
        min_available = int(sp.get("minAvailable") or 0)
        succeeded, failed = _n(st, "succeeded"), _n(st, "failed")
        if min_success is not None and succeeded >= int(min_success):
            _set_phase(st, COMPLETED)
            return True
        if succeeded + failed == replicas:
            if min_available >= total_task_min_available(job):
                counts = st.get("taskStatusCount") or {}
                for task in sp.get("tasks") or []:
                    if not isinstance(task, dict) or task.get("minAvailable") is None:
                        continue
                    ts = counts.get(task.get("name"))
                    if ts is not None and _n(ts.get("phase") or {}, "Succeeded") < int(task["minAvailable"]):
                        _set_phase(st, FAILED)
                        return True
            if min_success is not None and succeeded < int(min_success):
                _set_phase(st, FAILED)
            elif succeeded >= min_available:
                _set_phase(st, COMPLETED)
            else:
                _set_phase(st, FAILED)
            return True
        if _n(st, "pending") > replicas - min_available:
            _set_phase(st, PENDING)
            return True
        return False

    return fn


def _restarting_phase(job: Mapping[str, Any]) -> UpdateStatusFn:
    def fn(st: dict[str, Any]) -> bool:
        if _n(st, "retryCount") >= int(spec(job).get("maxRetry") or 0):
            _set_phase(st, FAILED)
            return True
        # Upstream compares with status.minAvailable (not spec).
        if total_tasks(job) - _n(st, "terminating") >= _n(st, "minAvailable"):
            _set_phase(st, PENDING)
            return True
        return False

    return fn


def execute(info: JobInfo, act: StateAction, ops: StateOps) -> None:
    """``state.NewState(job).Execute(action)``."""
    job = info.job
    assert job is not None
    phase = str(((job.get("status") or {}).get("state") or {}).get("phase") or "")
    a = act.action
    if phase in ("", PENDING, RUNNING) or phase not in PHASES:
        if a == RESTART_JOB:
            return ops.kill_job(info, RETAIN_NONE, _to(RESTARTING, retry=True))
        if a in _RESTARTS:
            return ops.kill_target(info, act.target, _to(RESTARTING, retry=True))
        if a == ABORT_JOB:
            return ops.kill_job(info, RETAIN_SOFT, _to(ABORTING))
        if a == COMPLETE_JOB:
            return ops.kill_job(info, RETAIN_SOFT, _to(COMPLETING))
        if a == TERMINATE_JOB:
            return ops.kill_job(info, RETAIN_SOFT, _to(TERMINATING))
        return ops.sync_job(info, _running_phase(job) if phase == RUNNING else _pending_phase(job))
    if phase == RESTARTING:
        check = _restarting_phase(job)
        if a == SYNC_JOB:
            return ops.sync_job(info, check)
        if a in _RESTARTS:
            return ops.kill_target(info, act.target, check)
        return ops.kill_job(info, RETAIN_NONE, check)
    if phase in (ABORTING, ABORTED):
        if a == RESUME_JOB:
            return ops.kill_job(info, RETAIN_SOFT, _to(RESTARTING, retry=True))
        return ops.kill_job(info, RETAIN_SOFT, _when_idle(ABORTED) if phase == ABORTING else None)
    if phase == COMPLETING:
        return ops.kill_job(info, RETAIN_SOFT, _when_idle(COMPLETED))
    if phase == TERMINATING:
        return ops.kill_job(info, RETAIN_SOFT, _when_idle(TERMINATED))
    # Completed, Terminated, Failed
    return ops.kill_job(info, RETAIN_SOFT, None)
