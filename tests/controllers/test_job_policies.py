"""Lifecycle policies: resolution rules (unit) and every event and action end to end."""

from __future__ import annotations

from typing import Any

import pytest
from ctrl_harness import Harness, task, vcjob

from pyvolcano.controllers.job.policies import Request, apply_policies


def job_with(policies: list[dict[str, Any]] | None = None, task_policies: list[dict[str, Any]] | None = None,
             version: int = 0, uid: str = "u1") -> dict[str, Any]:
    t: dict[str, Any] = {"name": "worker", "replicas": 2}
    if task_policies is not None:
        t["policies"] = task_policies
    return {"metadata": {"name": "j", "namespace": "ns", "uid": uid},
            "spec": {"tasks": [t], "policies": policies or []}, "status": {"version": version}}


def req(event: str = "", **kw: Any) -> Request:
    return Request("ns", "j", event=event, **kw)


# ---------------------------------------------------------------------- resolution (unit)
def test_explicit_action_wins() -> None:
    job = job_with([{"event": "PodFailed", "action": "RestartJob"}])
    d = apply_policies(job, req("CommandIssued", action="AbortJob"))
    assert (d.action, d.delay) == ("AbortJob", 0)


@pytest.mark.parametrize("event", ["OutOfSync", "CommandIssued", "PodRunning"])
def test_internal_events_sync(event: str) -> None:
    d = apply_policies(job_with([{"event": "*", "action": "AbortJob"}]), req(event))
    assert d.action == "SyncJob"


def test_other_job_uid_syncs() -> None:
    d = apply_policies(job_with([{"event": "PodFailed", "action": "RestartJob"}]), req("PodFailed", job_uid="old"))
    assert d.action == "SyncJob"


def test_outdated_version_syncs() -> None:
    job = job_with([{"event": "PodFailed", "action": "RestartJob"}], version=2)
    assert apply_policies(job, req("PodFailed", job_version=1)).action == "SyncJob"
    assert apply_policies(job, req("PodFailed", job_version=2)).action == "RestartJob"


def test_unknown_policy_only_before_first_restart() -> None:
    """PodGroup-phase requests carry version 0 (upstream quirk)."""
    policies = [{"event": "Unknown", "action": "RestartJob"}]
    assert apply_policies(job_with(policies, version=0), req("Unknown")).action == "RestartJob"
    assert apply_policies(job_with(policies, version=1), req("Unknown")).action == "SyncJob"


def test_task_policy_before_job_policy() -> None:
    job = job_with([{"event": "PodFailed", "action": "AbortJob"}], [{"event": "PodFailed", "action": "RestartTask"}])
    assert apply_policies(job, req("PodFailed", task_name="worker")).action == "RestartTask"
    assert apply_policies(job, req("PodFailed", task_name="other")).action == "AbortJob"
    assert apply_policies(job, req("PodFailed")).action == "AbortJob"


def test_first_matching_policy_wins_and_events_list() -> None:
    job = job_with([{"events": ["PodEvicted", "PodFailed"], "action": "RestartJob"},
                    {"event": "PodFailed", "action": "AbortJob"}])
    assert apply_policies(job, req("PodFailed")).action == "RestartJob"
    assert apply_policies(job, req("PodEvicted")).action == "RestartJob"


def test_any_event_matches() -> None:
    job = job_with([{"event": "*", "action": "AbortJob"}])
    assert apply_policies(job, req("TaskCompleted")).action == "AbortJob"


def test_pod_pending_needs_timeout() -> None:
    no_timeout = job_with([{"event": "*", "action": "AbortJob"}])
    assert apply_policies(no_timeout, req("PodPending")).action == "SyncJob"
    with_timeout = job_with([{"event": "PodPending", "action": "AbortJob", "timeout": "2m"}])
    d = apply_policies(with_timeout, req("PodPending"))
    assert (d.action, d.delay) == ("AbortJob", 120.0)


def test_exit_code_policy() -> None:
    job = job_with([{"exitCode": 3, "action": "RestartJob"}])
    assert apply_policies(job, req("PodFailed", exit_code=3)).action == "RestartJob"
    assert apply_policies(job, req("PodFailed", exit_code=4)).action == "SyncJob"


def test_timeout_becomes_delay() -> None:
    job = job_with([{"event": "PodFailed", "action": "RestartJob", "timeout": "1m30s"}])
    assert apply_policies(job, req("PodFailed")).delay == 90.0


# ---------------------------------------------------------------------- end to end
def running_job(h: Harness, name: str = "j", *tasks: dict[str, Any], **spec: Any) -> None:
    h.create(vcjob(name, *(tasks or (task("worker", 2),)), **spec))
    h.set_pg_phase(name, "Inqueue")
    for pod in h.pod_names():
        if pod.startswith(f"{name}-"):
            h.bind(pod)
            h.set_pod_phase(pod, "Running")
    assert h.phase(name) == "Running"


def restart_to_running(h: Harness, name: str = "j") -> None:
    """Play scheduler and kubelet after a restart: finish old pods, admit the new PodGroup, run pods."""
    h.finalize()
    h.set_pg_phase(name, "Inqueue")
    for pod in h.pods():
        if pod["metadata"]["name"].startswith(f"{name}-") and pod["status"]["phase"] == "Pending":
            h.bind(pod["metadata"]["name"])
            h.set_pod_phase(pod["metadata"]["name"], "Running")


def test_pod_failed_restart_job_bumps_version_and_recreates_pods() -> None:
    h = Harness()
    running_job(h, "j", policies=[{"event": "PodFailed", "action": "RestartJob"}])
    h.set_pod_phase("j-worker-0", "Failed", exit_code=1)
    st = h.job("j")["status"]
    assert st["state"]["phase"] == "Restarting"
    assert (st["retryCount"], st["version"]) == (1, 1)
    assert st["terminating"] == 2
    # Every pod was marked out-of-sync before deletion; the running one is still terminating.
    ann = h.get("Pod", "default", "j-worker-1")["metadata"]["annotations"]
    assert ann["volcano.sh/controller-out-of-sync"] == "true"
    restart_to_running(h)
    assert h.phase("j") == "Running"
    pods = h.pods()
    assert [p["metadata"]["annotations"]["volcano.sh/job-version"] for p in pods] == ["1", "1"]
    assert [p["metadata"]["annotations"]["volcano.sh/job-retry-count"] for p in pods] == ["1", "1"]


def test_pod_evicted_restart_task_keeps_other_tasks() -> None:
    h = Harness()
    running_job(h, "j", task("ps", 1), task("worker", 2, policies=[{"event": "PodEvicted", "action": "RestartTask"}]))
    h.store.delete("Pod", "default", "j-worker-0", grace_period_seconds=0)
    h.settle()
    st = h.job("j")["status"]
    assert st["state"]["phase"] == "Restarting"
    assert st.get("version", 0) == 0  # KillTarget keeps the version
    ps = h.get("Pod", "default", "j-ps-0")
    assert "deletionTimestamp" not in ps["metadata"]
    assert h.get("Pod", "default", "j-worker-1")["metadata"].get("deletionTimestamp")
    # The PodGroup is kept by KillTarget, so the pods come back without a new admission.
    h.finalize()
    assert sorted(h.pod_names()) == ["j-ps-0", "j-worker-0", "j-worker-1"]
    assert h.phase("j") == "Pending"


def test_restart_pod_only_touches_that_pod() -> None:
    h = Harness()
    running_job(h, "j", task("worker", 3, policies=[{"event": "PodFailed", "action": "RestartPod"}]))
    h.set_pod_phase("j-worker-1", "Failed", exit_code=2)
    # Restarting, then at once Pending: the failed pod is removed immediately and recreated
    # (KillTarget keeps the PodGroup), so Σreplicas − terminating ≥ minAvailable.
    assert h.phase_history("j")[-3:] == ["Running", "Restarting", "Pending"]
    assert h.job("j")["status"]["retryCount"] == 1
    assert sorted(h.pod_names()) == ["j-worker-0", "j-worker-1", "j-worker-2"]
    assert h.get("Pod", "default", "j-worker-1")["status"]["phase"] == "Pending"
    for n in ("j-worker-0", "j-worker-2"):
        assert not h.get("Pod", "default", n)["metadata"].get("deletionTimestamp")


def test_exit_code_policy_end_to_end() -> None:
    h = Harness()
    running_job(h, "j", policies=[{"exitCode": 3, "action": "AbortJob"}])
    h.set_pod_phase("j-worker-0", "Failed", exit_code=5)
    assert h.phase("j") == "Running"
    h.set_pod_phase("j-worker-1", "Failed", exit_code=3)
    # Both pods are finished (kept by the soft retain set), so nothing is left to wait for.
    assert h.phase_history("j")[-3:] == ["Running", "Aborting", "Aborted"]
    assert sorted(h.pod_names()) == ["j-worker-0", "j-worker-1"]


def test_pod_pending_timeout_aborts_after_delay() -> None:
    h = Harness()
    h.create(vcjob("j", task("worker", 2), policies=[{"event": "PodPending", "action": "AbortJob", "timeout": "60s"}]))
    h.set_pg_phase("j", "Inqueue")
    assert h.phase("j") == "Pending"
    h.advance(59)
    assert h.phase("j") == "Pending"
    h.advance(1)
    # The pods were never bound, so they are deleted at once and Aborting resolves immediately.
    assert h.phase_history("j")[-2:] == ["Aborting", "Aborted"]
    assert h.pod_names() == []


def test_pod_pending_timeout_cancelled_when_pod_runs() -> None:
    h = Harness()
    h.create(vcjob("j", task("worker", 1), policies=[{"event": "PodPending", "action": "AbortJob", "timeout": "60s"}]))
    h.set_pg_phase("j", "Inqueue")
    h.advance(30)
    h.bind("j-worker-0")
    h.set_pod_phase("j-worker-0", "Running")
    h.advance(60)
    assert h.phase("j") == "Running"
    assert not h.jobs.delay_actions.get("default/j")


def test_pod_failed_delay_cancelled_by_pod_running() -> None:
    h = Harness()
    running_job(h, "j", task("worker", 1), policies=[{"event": "PodFailed", "action": "AbortJob", "timeout": "30s"}])
    h.set_pod_phase("j-worker-0", "Failed", exit_code=1)
    h.advance(10)
    h.set_pod_phase("j-worker-0", "Running")  # e.g. a restarted container
    h.advance(60)
    assert h.phase("j") == "Running"


def test_task_completed_complete_job() -> None:
    h = Harness()
    running_job(h, "j", task("driver", 1, policies=[{"event": "TaskCompleted", "action": "CompleteJob"}]),
                task("executor", 2))
    h.set_pod_phase("j-executor-0", "Succeeded", exit_code=0)
    assert h.phase("j") == "Running"
    h.set_pod_phase("j-driver-0", "Succeeded", exit_code=0)
    assert h.phase("j") == "Completing"
    assert h.get("Pod", "default", "j-executor-1")["metadata"].get("deletionTimestamp")
    # Soft retain: finished pods are kept.
    assert not h.get("Pod", "default", "j-executor-0")["metadata"].get("deletionTimestamp")
    h.finalize()
    assert h.phase("j") == "Completed"


def test_task_failed_from_container_restarts() -> None:
    h = Harness()
    running_job(h, "j", task("worker", 2, maxRetry=2, policies=[{"event": "TaskFailed", "action": "AbortJob"}]))
    h.set_pod_phase("j-worker-0", "Running", restart_count=1)
    assert h.phase("j") == "Running"
    h.set_pod_phase("j-worker-1", "Running", restart_count=1)  # Σ restarts 2 ≥ maxRetry 2
    assert h.phase("j") == "Aborting"


def test_unknown_podgroup_phase_event() -> None:
    h = Harness()
    running_job(h, "j", policies=[{"event": "Unknown", "action": "RestartJob"}])
    h.set_pg_phase("j", "Unknown")
    assert h.phase("j") == "Restarting"
    # After the first restart (version 1) the same event only syncs.
    restart_to_running(h)
    assert h.phase("j") == "Running"
    h.set_pg_phase("j", "Unknown")
    assert h.phase("j") == "Running"


def test_any_event_terminate_job() -> None:
    h = Harness()
    running_job(h, "j", policies=[{"event": "*", "action": "TerminateJob"}])
    h.set_pod_phase("j-worker-0", "Failed", exit_code=1)
    assert h.phase("j") == "Terminating"
    h.finalize()
    assert h.phase("j") == "Terminated"


def test_max_retry_exhausted_fails_job() -> None:
    h = Harness()
    running_job(h, "j", task("worker", 1), maxRetry=2, policies=[{"event": "PodFailed", "action": "RestartJob"}])
    h.set_pod_phase("j-worker-0", "Failed", exit_code=1)
    assert (h.phase("j"), h.job("j")["status"]["retryCount"]) == ("Restarting", 1)
    restart_to_running(h)
    assert h.phase("j") == "Running"
    h.set_pod_phase("j-worker-0", "Failed", exit_code=1)
    st = h.job("j")["status"]
    assert st["retryCount"] == 2
    assert st["state"]["phase"] == "Failed"
    # The last retry used the soft retain set: the failed pod is kept for inspection.
    assert h.get("Pod", "default", "j-worker-0")["status"]["phase"] == "Failed"


def test_requeue_limit_then_terminate() -> None:
    h = Harness(admission=False, max_requeue=15)
    h.store.create({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                    "metadata": {"name": "j", "namespace": "default"},
                    "spec": {"queue": "missing", "minAvailable": 1, "maxRetry": 3, "tasks": [task("worker", 1)]}})
    h.settle()
    assert h.phase("j") == ""
    # 15 retries with 5 ms doubling back-off take about 164 s.
    h.advance(150)
    assert h.phase("j") == ""
    assert h.jobs.queue.num_requeues(next(iter(h.jobs.queue._requeues))) == 15
    h.advance(100)
    assert h.phase_history("j")[-2:] == ["Terminating", "Terminated"]


def test_stale_request_from_old_pod_only_syncs() -> None:
    h = Harness()
    running_job(h, "j", task("worker", 2), policies=[{"event": "PodEvicted", "action": "RestartJob"}])
    h.store.delete("Pod", "default", "j-worker-0", grace_period_seconds=0)
    h.settle()
    assert h.job("j")["status"]["version"] == 1
    # The other old pod goes away later: its request carries version 0 < 1, so no second restart.
    h.finalize()
    assert h.job("j")["status"]["retryCount"] == 1


# ---------------------------------------------------------------------- commands
def test_abort_and_resume_commands() -> None:
    h = Harness()
    running_job(h, "j")
    h.command("AbortJob", "Job", "j")
    assert h.store.list("Command") == []  # the controller deletes the Command first
    assert h.phase("j") == "Aborting"
    h.finalize()
    assert h.phase("j") == "Aborted"
    assert h.pod_names() == []
    h.command("ResumeJob", "Job", "j")
    st = h.job("j")["status"]
    assert st["retryCount"] == 1
    assert st["state"]["phase"] in ("Restarting", "Pending")
    h.set_pg_phase("j", "Inqueue")
    assert h.pod_names() == ["j-worker-0", "j-worker-1"]
    for pod in h.pod_names():
        h.bind(pod)
        h.set_pod_phase(pod, "Running")
    assert h.phase("j") == "Running"


@pytest.mark.parametrize(("action", "phase", "final"), [
    ("RestartJob", "Restarting", None),
    ("TerminateJob", "Terminating", "Terminated"),
    ("CompleteJob", "Completing", "Completed"),
])
def test_job_commands(action: str, phase: str, final: str | None) -> None:
    h = Harness()
    running_job(h, "j")
    h.command(action, "Job", "j")
    assert h.phase("j") == phase
    if final:
        h.finalize()
        assert h.phase("j") == final


def test_an_api_server_away_longer_than_the_requeue_limit_delays_the_job_but_never_terminates_it() -> None:
    from pyvolcano.store.base import Unavailable

    h = Harness(max_requeue=15)
    real_create = h.store.create
    down = True

    def create(obj: dict[str, Any]) -> dict[str, Any]:
        if down and obj.get("kind") == "Pod":
            raise Unavailable("Pod", "default/x", "connection refused")
        return real_create(obj)

    h.store.create = create  # type: ignore[method-assign]
    h.create(vcjob("j", task("worker", 2)))
    h.settle()
    h.set_pg_phase("j", "Inqueue")
    h.advance(600)  # far past the ~164 s that 15 counted retries take
    assert h.pod_names() == [] and "Terminating" not in h.phase_history("j")
    down = False
    h.advance(6)  # the uncounted back-off is capped at 5 s
    assert h.pod_names() == ["j-worker-0", "j-worker-1"]
    assert h.phase("j") == "Pending"
