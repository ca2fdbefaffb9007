"""The vcjob state machine, transition by transition (upstream ``pkg/controllers/job/state``).

Each case runs ``execute`` with a recording fake of SyncJob / KillJob / KillTarget, checks which
operation ran (and its retain set), then applies the phase function it was given to a status
with the listed counters and checks the resulting phase, retry count and "phase changed" flag.
"""

from __future__ import annotations

from typing import Any

import pytest

from pyvolcano.controllers.job.cache import JobInfo
from pyvolcano.controllers.job.policies import StateAction, Target
from pyvolcano.controllers.job.states import RETAIN_NONE, RETAIN_SOFT, UpdateStatusFn, execute


class RecordingOps:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any, UpdateStatusFn | None]] = []

    def sync_job(self, info: JobInfo, fn: UpdateStatusFn | None) -> None:
        self.calls.append(("sync", None, fn))

    def kill_job(self, info: JobInfo, retain: frozenset[str], fn: UpdateStatusFn | None) -> None:
        self.calls.append(("kill_job", retain, fn))

    def kill_target(self, info: JobInfo, target: Target, fn: UpdateStatusFn | None) -> None:
        self.calls.append(("kill_target", target, fn))


def make_job(phase: str, *, min_available: int = 2, replicas: tuple[int, ...] = (2,), max_retry: int = 3,
             min_success: int | None = None, task_min: tuple[int | None, ...] | None = None) -> dict[str, Any]:
    tasks = []
    for i, r in enumerate(replicas):
        t: dict[str, Any] = {"name": f"t{i}", "replicas": r}
        if task_min is not None and task_min[i] is not None:
            t["minAvailable"] = task_min[i]
        tasks.append(t)
    spec: dict[str, Any] = {"minAvailable": min_available, "maxRetry": max_retry, "tasks": tasks}
    if min_success is not None:
        spec["minSuccess"] = min_success
    return {"metadata": {"name": "j", "namespace": "ns"}, "spec": spec,
            "status": {"state": {"phase": phase}, "minAvailable": min_available}}


NO_TARGET = Target()


def run(job: dict[str, Any], action: str, target: Target = NO_TARGET) -> tuple[str, Any, UpdateStatusFn | None]:
    ops = RecordingOps()
    execute(JobInfo("ns", "j", job), StateAction(action, target), ops)
    assert len(ops.calls) == 1
    return ops.calls[0]


def outcome(fn: UpdateStatusFn | None, **counters: Any) -> tuple[str, int, bool | None]:
    status: dict[str, Any] = {"state": {"phase": "<before>"}, "retryCount": 0, "minAvailable": 2, **counters}
    changed = None if fn is None else fn(status)
    return status["state"]["phase"], status["retryCount"], changed


TASK = Target("task", "t0")

# (phase, action, operation, retain, counters, expected phase, expected retry, expected changed)
KILL_TABLE = [
    ("Pending", "RestartJob", "kill_job", RETAIN_NONE, {}, "Restarting", 1, True),
    ("Pending", "RestartTask", "kill_target", TASK, {}, "Restarting", 1, True),
    ("Pending", "RestartPod", "kill_target", TASK, {}, "Restarting", 1, True),
    ("Pending", "RestartPartition", "kill_target", TASK, {}, "Restarting", 1, True),
    ("Pending", "AbortJob", "kill_job", RETAIN_SOFT, {}, "Aborting", 0, True),
    ("Pending", "CompleteJob", "kill_job", RETAIN_SOFT, {}, "Completing", 0, True),
    ("Pending", "TerminateJob", "kill_job", RETAIN_SOFT, {}, "Terminating", 0, True),
    ("Running", "RestartJob", "kill_job", RETAIN_NONE, {}, "Restarting", 1, True),
    ("Running", "RestartTask", "kill_target", TASK, {}, "Restarting", 1, True),
    ("Running", "RestartPod", "kill_target", TASK, {}, "Restarting", 1, True),
    ("Running", "AbortJob", "kill_job", RETAIN_SOFT, {}, "Aborting", 0, True),
    ("Running", "TerminateJob", "kill_job", RETAIN_SOFT, {}, "Terminating", 0, True),
    ("Running", "CompleteJob", "kill_job", RETAIN_SOFT, {}, "Completing", 0, True),
    # Restarting: restart check (retry ≥ maxRetry → Failed; Σreplicas − terminating ≥ minAvailable → Pending)
    ("Restarting", "SyncJob", "sync", None, {"retryCount": 3}, "Failed", 3, True),
    ("Restarting", "SyncJob", "sync", None, {"retryCount": 1, "terminating": 0}, "Pending", 1, True),
    ("Restarting", "SyncJob", "sync", None, {"retryCount": 1, "terminating": 1}, "<before>", 1, False),
    ("Restarting", "RestartTask", "kill_target", TASK, {"retryCount": 1}, "Pending", 1, True),
    ("Restarting", "RestartJob", "kill_job", RETAIN_NONE, {"retryCount": 1, "terminating": 2}, "<before>", 1, False),
    ("Restarting", "AbortJob", "kill_job", RETAIN_NONE, {"retryCount": 5}, "Failed", 5, True),
    # Aborting
    ("Aborting", "ResumeJob", "kill_job", RETAIN_SOFT, {}, "Restarting", 1, True),
    ("Aborting", "SyncJob", "kill_job", RETAIN_SOFT, {"terminating": 1}, "<before>", 0, False),
    ("Aborting", "SyncJob", "kill_job", RETAIN_SOFT, {"pending": 1}, "<before>", 0, False),
    ("Aborting", "SyncJob", "kill_job", RETAIN_SOFT, {"running": 1}, "<before>", 0, False),
    ("Aborting", "SyncJob", "kill_job", RETAIN_SOFT, {"succeeded": 1, "failed": 1}, "Aborted", 0, True),
    # Aborted
    ("Aborted", "ResumeJob", "kill_job", RETAIN_SOFT, {}, "Restarting", 1, True),
    ("Aborted", "SyncJob", "kill_job", RETAIN_SOFT, {}, "<before>", 0, None),
    ("Aborted", "RestartJob", "kill_job", RETAIN_SOFT, {}, "<before>", 0, None),
    # Completing / Terminating
    ("Completing", "SyncJob", "kill_job", RETAIN_SOFT, {"running": 1}, "<before>", 0, False),
    ("Completing", "ResumeJob", "kill_job", RETAIN_SOFT, {}, "Completed", 0, True),
    ("Terminating", "SyncJob", "kill_job", RETAIN_SOFT, {"terminating": 3}, "<before>", 0, False),
    ("Terminating", "RestartJob", "kill_job", RETAIN_SOFT, {}, "Terminated", 0, True),
    # Finished phases only clean up
    ("Completed", "SyncJob", "kill_job", RETAIN_SOFT, {}, "<before>", 0, None),
    ("Terminated", "RestartJob", "kill_job", RETAIN_SOFT, {}, "<before>", 0, None),
    ("Failed", "ResumeJob", "kill_job", RETAIN_SOFT, {}, "<before>", 0, None),
]


@pytest.mark.parametrize(
    ("phase", "action", "op", "arg", "counters", "want_phase", "want_retry", "want_changed"),
    KILL_TABLE,
    ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(KILL_TABLE)],
)
def test_state_table(phase: str, action: str, op: str, arg: Any, counters: dict[str, Any], want_phase: str,
                     want_retry: int, want_changed: bool | None) -> None:
    target = TASK if op == "kill_target" else Target()
    got_op, got_arg, fn = run(make_job(phase), action, target)
    assert got_op == op
    if op == "kill_job":
        assert got_arg == arg
    elif op == "kill_target":
        assert got_arg == target
    assert outcome(fn, **counters) == (want_phase, want_retry, want_changed)


@pytest.mark.parametrize("phase", ["", "Pending", "SomethingElse"])
def test_pending_sync_moves_to_running_once_min_available_started(phase: str) -> None:
    op, _, fn = run(make_job(phase, min_available=3), "SyncJob")
    assert op == "sync"
    assert outcome(fn, running=1, succeeded=1, failed=0)[0] == "<before>"
    assert outcome(fn, running=1, succeeded=1, failed=1) == ("Running", 0, True)


RUNNING_TABLE = [
    # (job kwargs, counters, expected phase)
    ({"replicas": (0,), "min_available": 0}, {"succeeded": 0}, "<before>"),  # Σreplicas = 0: keep
    ({"min_success": 1}, {"succeeded": 1, "running": 1}, "Completed"),  # minSuccess reached early
    ({}, {"succeeded": 2}, "Completed"),  # all done, succeeded ≥ minAvailable
    ({}, {"succeeded": 1, "failed": 1}, "Failed"),  # all done, succeeded < minAvailable
    ({"min_available": 1}, {"succeeded": 1, "failed": 1}, "Completed"),
    ({"min_success": 2, "min_available": 1}, {"succeeded": 1, "failed": 1}, "Failed"),  # minSuccess missed
    # minAvailable ≥ Σ task minAvailable: a task below its own minAvailable fails the job
    ({"replicas": (2, 1), "min_available": 2, "task_min": (1, 1)},
     {"succeeded": 2, "failed": 1, "taskStatusCount": {"t0": {"phase": {"Succeeded": 2}},
                                                        "t1": {"phase": {"Failed": 1}}}}, "Failed"),
    # ... but not when minAvailable < Σ task minAvailable
    ({"replicas": (2, 1), "min_available": 2, "task_min": (2, 1)},
     {"succeeded": 2, "failed": 1, "taskStatusCount": {"t0": {"phase": {"Succeeded": 2}},
                                                        "t1": {"phase": {"Failed": 1}}}}, "Completed"),
    ({"replicas": (4,), "min_available": 2}, {"pending": 3, "running": 1}, "Pending"),  # pending > Σ − minAvailable
    ({"replicas": (4,), "min_available": 2}, {"pending": 2, "running": 2}, "<before>"),
]


@pytest.mark.parametrize(("job_kwargs", "counters", "want"), RUNNING_TABLE)
def test_running_sync_completion_rules(job_kwargs: dict[str, Any], counters: dict[str, Any], want: str) -> None:
    op, _, fn = run(make_job("Running", **job_kwargs), "SyncJob")
    assert op == "sync"
    assert outcome(fn, **counters)[0] == want


def test_restart_check_uses_status_min_available() -> None:
    job = make_job("Restarting", min_available=1, replicas=(3,))
    _, _, fn = run(job, "SyncJob")
    # status.minAvailable is 2 in outcome(): 3 − 2 terminating = 1 < 2 keeps Restarting.
    assert outcome(fn, retryCount=1, terminating=2)[0] == "<before>"
    assert outcome(fn, retryCount=1, terminating=1)[0] == "Pending"
