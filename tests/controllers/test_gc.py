"""ttlSecondsAfterFinished: finished jobs are deleted once their TTL has passed."""

from __future__ import annotations

from ctrl_harness import Harness, task, vcjob


def finish(h: Harness, name: str, phase: str = "Succeeded") -> None:
    h.set_pg_phase(name, "Inqueue")
    for pod in h.pod_names():
        h.bind(pod)
        h.set_pod_phase(pod, "Running")
    for pod in h.pod_names():
        h.set_pod_phase(pod, phase, exit_code=0 if phase == "Succeeded" else 1)


def test_completed_job_deleted_after_ttl() -> None:
    h = Harness()
    h.create(vcjob("j", task("worker", 1), ttlSecondsAfterFinished=100))
    h.advance(10)
    finish(h, "j")
    assert h.phase("j") == "Completed"
    assert h.gc.run(h.now) == 110.0
    h.advance(99)
    assert h.phase("j") == "Completed"
    h.advance(1)
    assert h.store.list("Job") == []
    assert h.pod_names() == []  # foreground deletion takes the pods along


def test_failed_job_deleted_and_zero_ttl_is_immediate() -> None:
    h = Harness()
    h.create(vcjob("j", task("worker", 1), ttlSecondsAfterFinished=0))
    finish(h, "j", "Failed")
    assert h.store.list("Job") == []


def test_aborted_and_ttl_less_jobs_are_kept() -> None:
    h = Harness()
    h.create(vcjob("a", task("worker", 1), ttlSecondsAfterFinished=1))
    h.create(vcjob("b", task("worker", 1)))
    h.command("AbortJob", "Job", "a")
    assert h.phase("a") == "Aborted"
    finish(h, "b")
    assert h.phase("b") == "Completed"
    h.advance(1000)
    assert sorted(j["metadata"]["name"] for j in h.store.list("Job")) == ["a", "b"]
