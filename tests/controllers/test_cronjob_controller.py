"""The CronJob controller, as upstream's ``pkg/controllers/cronjob``: when jobs are created, what
they look like, and the concurrency policies, deadlines, suspension and history limits."""

from __future__ import annotations

from workflow_harness import UNIX0, WorkflowHarness, cronjob

from pyvolcano.store.base import to_rfc3339

MIN = 60.0


def job_name(cronjob_name: str, t: float) -> str:
    return f"{cronjob_name}-{int((UNIX0 + t) // 60)}"


def test_a_job_is_created_at_each_scheduled_time_named_after_it() -> None:
    h = WorkflowHarness()
    h.create(cronjob())
    assert h.jobs() == []
    assert h.cron.run(h.now) == 5 * MIN + 0.1  # requeued 100 ms after the next scheduled time
    h.advance_to(5 * MIN + 1)
    assert h.jobs() == [job_name("nightly", 5 * MIN)]
    h.advance_to(10 * MIN + 1)
    assert h.jobs() == [job_name("nightly", 5 * MIN), job_name("nightly", 10 * MIN)]


def test_the_job_carries_the_template_the_scheduled_time_and_its_owner() -> None:
    h = WorkflowHarness()
    cj = h.create(cronjob())
    h.advance_to(5 * MIN + 1)
    job = h.job(job_name("nightly", 5 * MIN))
    md = job["metadata"]
    assert md["labels"] == {"team": "ml"}
    assert md["annotations"]["volcano.sh/cronjob-scheduled-timestamp"] == "2024-01-01T00:05:00Z"
    assert md["ownerReferences"] == [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob", "name": "nightly",
                                      "uid": cj["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
    assert job["spec"]["tasks"][0]["name"] == "main"
    st = h.status("CronJob", "nightly")
    assert [(r["kind"], r["name"], r["uid"]) for r in st["active"]] == [("Job", md["name"], md["uid"])]
    assert st["lastScheduleTime"] == to_rfc3339(5 * MIN)


def test_the_schedule_runs_in_the_cronjobs_time_zone() -> None:
    h = WorkflowHarness()
    h.create(cronjob(schedule="0 9 * * *", timeZone="Asia/Shanghai"))  # 09:00 in Shanghai = 01:00 UTC
    h.advance_to(3600 + 1)
    [name] = h.jobs()
    assert name == job_name("nightly", 3600)
    assert h.job(name)["metadata"]["annotations"]["volcano.sh/cronjob-scheduled-timestamp"] == \
        "2024-01-01T09:00:00+08:00"


def test_after_an_outage_only_the_most_recent_missed_time_runs() -> None:
    h = WorkflowHarness()
    h.store.create(cronjob())  # created at 0; the controller sees it only at 23 minutes
    h.now = 23 * MIN
    h.settle()
    assert h.jobs() == [job_name("nightly", 20 * MIN)]


def test_a_missed_time_older_than_the_starting_deadline_is_skipped() -> None:
    h = WorkflowHarness()
    h.store.create(cronjob(startingDeadlineSeconds=60))
    h.now = 23 * MIN  # 20 minutes was 3 minutes ago: too late
    h.settle()
    assert h.jobs() == []
    h.advance_to(25 * MIN + 1)
    assert h.jobs() == [job_name("nightly", 25 * MIN)]


def test_forbid_holds_a_run_back_while_a_job_is_active() -> None:
    h = WorkflowHarness()
    h.create(cronjob(concurrencyPolicy="Forbid"))
    h.advance_to(5 * MIN + 1)
    first = job_name("nightly", 5 * MIN)
    h.set_job_phase(first, "Running")
    h.advance_to(10 * MIN + 1)
    assert h.jobs() == [first]
    # Once the active job finishes, the held-back 10-minute run starts (no starting deadline).
    h.advance_to(11 * MIN)
    h.set_job_phase(first, "Completed")
    assert h.jobs() == [first, job_name("nightly", 10 * MIN)]


def test_forbid_with_a_starting_deadline_skips_the_run_for_good() -> None:
    h = WorkflowHarness()
    h.create(cronjob(concurrencyPolicy="Forbid", startingDeadlineSeconds=30))
    h.advance_to(5 * MIN + 1)
    first = job_name("nightly", 5 * MIN)
    h.set_job_phase(first, "Running")
    h.advance_to(11 * MIN)
    h.set_job_phase(first, "Completed")
    assert h.jobs() == [first]
    h.advance_to(15 * MIN + 1)
    assert h.jobs() == [first, job_name("nightly", 15 * MIN)]


def test_allow_runs_alongside_an_active_job() -> None:
    h = WorkflowHarness()
    h.create(cronjob())
    h.advance_to(5 * MIN + 1)
    h.set_job_phase(job_name("nightly", 5 * MIN), "Running")
    h.advance_to(10 * MIN + 1)
    assert len(h.status("CronJob", "nightly")["active"]) == 2


def test_replace_deletes_the_active_job_first() -> None:
    h = WorkflowHarness()
    h.create(cronjob(concurrencyPolicy="Replace"))
    h.advance_to(5 * MIN + 1)
    h.set_job_phase(job_name("nightly", 5 * MIN), "Running")
    h.advance_to(10 * MIN + 1)
    assert h.jobs() == [job_name("nightly", 10 * MIN)]
    assert [r["name"] for r in h.status("CronJob", "nightly")["active"]] == [job_name("nightly", 10 * MIN)]


def test_a_suspended_cronjob_creates_nothing_until_resumed() -> None:
    h = WorkflowHarness()
    cj = h.create(cronjob(suspend=True, startingDeadlineSeconds=30))
    h.advance_to(12 * MIN)
    assert h.jobs() == []
    cj = h.store.get("CronJob", "default", "nightly")
    cj["spec"]["suspend"] = False
    h.store.update(cj)
    h.advance_to(15 * MIN + 1)
    assert h.jobs() == [job_name("nightly", 15 * MIN)]


def test_finished_jobs_leave_active_and_set_the_last_successful_time() -> None:
    h = WorkflowHarness()
    h.create(cronjob())
    h.advance_to(5 * MIN + 1)
    name = job_name("nightly", 5 * MIN)
    h.advance_to(7 * MIN)
    h.set_job_phase(name, "Completed")
    st = h.status("CronJob", "nightly")
    assert "active" not in st
    assert st["lastSuccessfulTime"] == to_rfc3339(7 * MIN)


def test_history_limits_keep_the_newest_finished_jobs() -> None:
    h = WorkflowHarness()
    h.create(cronjob(successfulJobsHistoryLimit=2, failedJobsHistoryLimit=1))
    names = []
    for i in range(1, 6):
        h.advance_to(i * 5 * MIN + 1)
        names.append(job_name("nightly", i * 5 * MIN))
        h.set_job_phase(names[-1], "Failed" if i in (2, 3) else "Completed")
    # Completed: 1, 4, 5 -> the oldest goes; Failed: 2, 3 -> the oldest goes.
    assert h.jobs() == sorted([names[2], names[3], names[4]])


def test_a_terminated_job_is_never_counted_by_the_history_limits() -> None:
    h = WorkflowHarness()
    h.create(cronjob(successfulJobsHistoryLimit=0, failedJobsHistoryLimit=0))
    h.advance_to(5 * MIN + 1)
    h.set_job_phase(job_name("nightly", 5 * MIN), "Terminated")
    assert h.jobs() == [job_name("nightly", 5 * MIN)]


def test_a_deleted_active_job_is_dropped_from_the_status() -> None:
    h = WorkflowHarness()
    h.create(cronjob())
    h.advance_to(5 * MIN + 1)
    h.store.delete("Job", "default", job_name("nightly", 5 * MIN))
    h.settle()
    assert "active" not in h.status("CronJob", "nightly")


def test_a_time_zone_that_no_longer_loads_stops_the_runs_and_is_retried() -> None:
    h = WorkflowHarness()
    h.create(cronjob())
    stored = h.store._objects["CronJob"][("default", "nightly")]  # as if the zone database changed
    stored["spec"]["timeZone"] = "Mars/Olympus"
    h.cron._cronjobs["default/nightly"] = stored
    h.cron.queue.add("default/nightly")
    h.advance_to(6 * MIN)
    assert h.jobs() == []
    assert h.cron.queue.num_requeues("default/nightly") > 0


def test_a_new_schedule_takes_effect_at_its_next_time() -> None:
    h = WorkflowHarness()
    h.create(cronjob(schedule="0 * * * *"))
    cj = h.store.get("CronJob", "default", "nightly")
    cj["spec"]["schedule"] = "*/2 * * * *"
    h.store.update(cj)
    h.advance_to(2 * MIN + 1)
    assert h.jobs() == [job_name("nightly", 2 * MIN)]
