"""The job controller's batched syncs (``sync_batch_period``): one sync for a job's pod changes
within the period, as Kubernetes' job controller batches them, ending in upstream's status."""

from __future__ import annotations

from typing import Any

from ctrl_harness import Harness, task, vcjob


def _without_times(st: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in st.items() if k != "conditions"}
    out["state"] = {k: v for k, v in (st.get("state") or {}).items() if k != "lastTransitionTime"}
    out["conditions"] = [c.get("status") for c in st.get("conditions") or []]
    return out


def _run_pods_one_by_one(h: Harness, n: int) -> None:
    h.create(vcjob("j", task("worker", n)))
    h.set_pg_phase("j", "Inqueue")
    for name in h.pod_names():
        h.bind(name)
        h.advance(0.1)
        h.set_pod_phase(name, "Running")
        h.advance(0.1)
    h.advance(2.0)


def _status_writes(h: Harness) -> int:
    return sum(1 for e in h.events if e.kind == "Job" and e.type == "MODIFIED")


def test_batched_syncs_end_in_the_status_of_a_sync_per_pod_change_with_fewer_writes() -> None:
    each, batched = Harness(), Harness(sync_batch_period=1.0)
    _run_pods_one_by_one(each, 6)
    _run_pods_one_by_one(batched, 6)
    assert batched.phase("j") == each.phase("j") == "Running"
    assert _without_times(batched.job("j")["status"]) == _without_times(each.job("j")["status"])
    assert batched.phase_history("j") == each.phase_history("j")
    assert _status_writes(batched) < _status_writes(each)


def test_a_batched_sync_runs_once_the_period_has_passed() -> None:
    h = Harness(sync_batch_period=1.0)
    h.create(vcjob("j", task("worker", 1)))
    h.set_pg_phase("j", "Inqueue")
    h.bind("j-worker-0")
    h.set_pod_phase("j-worker-0", "Running")
    assert h.phase("j") == "Pending"
    h.advance(0.5)
    assert h.phase("j") == "Pending"
    h.advance(0.6)
    assert h.phase("j") == "Running"
    assert h.job("j")["status"]["running"] == 1


def test_a_failed_pod_syncs_the_job_at_once_even_when_batching() -> None:
    h = Harness(sync_batch_period=1.0)
    h.create(vcjob("j", task("worker", 2)))
    h.set_pg_phase("j", "Inqueue")
    for n in h.pod_names():
        h.bind(n)
        h.set_pod_phase(n, "Running")
    h.advance(1.0)
    h.set_pod_phase("j-worker-0", "Succeeded")
    h.set_pod_phase("j-worker-1", "Failed", exit_code=1)
    assert h.phase("j") == "Failed"
