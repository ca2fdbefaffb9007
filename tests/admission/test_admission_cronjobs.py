"""CronJob admission: the CRD's defaults and bounds, then ``validatecronjob.volcano.sh`` with
upstream's messages (the cases of ``admit_cronjob_test.go``)."""

from __future__ import annotations

from typing import Any

import pytest

from pyvolcano.store import InMemoryStore, Invalid


def cronjob(name: str = "cronvcjob", schedule: Any = "* * * * *", time_zone: str | None = None,
            **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"schedule": schedule, "jobTemplate": {"spec": {
        "minAvailable": 1, "schedulerName": "volcano",
        "tasks": [{"name": "task-1", "replicas": 1,
                   "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]}}, **spec}
    if time_zone is not None:
        body["timeZone"] = time_zone
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob",
            "metadata": {"name": name, "namespace": "default"}, "spec": body}


def refusal(store: InMemoryStore, obj: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(Invalid) as e:
        store.create(obj)
    return e.value.errors


@pytest.mark.parametrize(("schedule", "zone"), [
    ("* * * * *", None), ("@every 1m", None), ("*/5 * * * *", "Pacific/Honolulu"), ("0 2 * * *", "UTC"),
])
def test_valid_cronjobs_are_admitted(store: InMemoryStore, schedule: str, zone: str | None) -> None:
    assert store.create(cronjob(schedule=schedule, time_zone=zone))["metadata"]["name"] == "cronvcjob"


@pytest.mark.parametrize(("schedule", "zone", "field", "message"), [
    ("TZ=UTC 0 20 * * *", "Pacific/Honolulu", "spec.schedule",
     "schedule should not contain TZ or CRON_TZ, TZ should only be set in the timeZone field"),
    ("error schedule", "Pacific/Honolulu", "spec.schedule", "schedule is not a valid cron expression"),
    ("0 0 * * 7", None, "spec.schedule", "schedule is not a valid cron expression"),
    ("", "Pacific/Honolulu", "spec.schedule", "schedule is required, but got empty"),
    ("*/5 * * * *", "Asia/./Shanghai", "spec.timeZone", "unknown timeZone"),
    ("*/5 * * * *", "America/-NewYork", "spec.timeZone", "unknown timeZone invalid timeZone"),
    ("*/5 * * * *", "New York", "spec.timeZone", "unknown timeZone invalid timeZone"),
    ("*/5 * * * *", "UTC!", "spec.timeZone", "unknown timeZone invalid timeZone"),
    ("*/5 * * * *", "Local", "spec.timeZone",
     "timeZone can't be Local, and must be defined in https://www.iana.org/time-zones"),
    ("*/5 * * * *", "", "spec.timeZone", "timeZone must be nil or non-empty string, got empty string"),
    ("*/5 * * * *", "Amerrica/New_York", "spec.timeZone", "invalid timeZone"),
])
def test_schedule_and_time_zone_refusals_carry_upstreams_message(store: InMemoryStore, schedule: str,
                                                                 zone: str | None, field: str, message: str) -> None:
    assert refusal(store, cronjob(schedule=schedule, time_zone=zone)) == [(field, message)]


def test_a_name_must_leave_room_for_the_job_suffix(store: InMemoryStore) -> None:
    assert refusal(store, cronjob(name="a" * 53)) == [
        ("metadata.name", "cronJob name must be no more than 52 characters to accommodate job name suffix "
                          "(max 63 total)")]
    assert store.create(cronjob(name="a" * 52))


def test_schedule_and_name_problems_are_reported_together(store: InMemoryStore) -> None:
    fields = [f for f, _ in refusal(store, cronjob(name="a" * 53, schedule="error schedule"))]
    assert fields == ["spec.schedule", "metadata.name"]


def test_updates_are_validated_as_creations(store: InMemoryStore) -> None:
    created = store.create(cronjob())
    created["spec"]["schedule"] = "61 * * * *"
    with pytest.raises(Invalid, match="schedule is not a valid cron expression"):
        store.update(created)


def test_the_crd_defaults_are_written(store: InMemoryStore) -> None:
    spec = store.create(cronjob())["spec"]
    assert (spec["concurrencyPolicy"], spec["suspend"], spec["successfulJobsHistoryLimit"],
            spec["failedJobsHistoryLimit"]) == ("Allow", False, 3, 1)
    assert (spec["jobTemplate"]["spec"]["maxRetry"], spec["jobTemplate"]["spec"]["queue"]) == (3, "default")


def test_explicit_values_are_kept(store: InMemoryStore) -> None:
    spec = store.create(cronjob(concurrencyPolicy="Forbid", successfulJobsHistoryLimit=0, suspend=True))["spec"]
    assert (spec["concurrencyPolicy"], spec["successfulJobsHistoryLimit"], spec["suspend"]) == ("Forbid", 0, True)


@pytest.mark.parametrize(("spec", "field", "message"), [
    ({"concurrencyPolicy": "Sometimes"}, "spec.concurrencyPolicy", 'Unsupported value: "Sometimes"'),
    ({"failedJobsHistoryLimit": -1}, "spec.failedJobsHistoryLimit", "must be greater than or equal to 0"),
    ({"startingDeadlineSeconds": -5}, "spec.startingDeadlineSeconds", "must be greater than or equal to 0"),
    ({"schedule": 5}, "spec.schedule", "expected a string"),
    ({"suspend": "yes"}, "spec.suspend", "expected true or false"),
])
def test_the_crd_schema_refuses_out_of_bounds_and_mistyped_fields(store: InMemoryStore, spec: dict[str, Any],
                                                                   field: str, message: str) -> None:
    errors = refusal(store, cronjob(**spec))
    assert any(f == field and message in m for f, m in errors), errors


def test_schedule_and_job_template_are_required(store: InMemoryStore) -> None:
    obj = cronjob()
    del obj["spec"]["jobTemplate"]
    assert ("spec.jobTemplate", "Required value") in refusal(store, obj)


def test_the_template_is_typed_and_bounded_but_not_validated_as_a_job(store: InMemoryStore) -> None:
    obj = cronjob()
    obj["spec"]["jobTemplate"]["spec"]["tasks"][0]["replicas"] = -1
    assert refusal(store, obj) == [("spec.jobTemplate.spec.tasks[0].replicas",
                                    "Invalid value: -1: must be greater than or equal to 0")]
    obj = cronjob()
    obj["spec"]["jobTemplate"]["spec"]["minAvailable"] = "1"
    assert refusal(store, obj) == [("spec.jobTemplate.spec.minAvailable", 'Invalid value: "1": expected an integer')]
    # The job webhook would refuse two tasks of one name; the CronJob's does not look.
    obj = cronjob()
    tasks = obj["spec"]["jobTemplate"]["spec"]["tasks"]
    tasks.append(dict(tasks[0]))
    assert store.create(obj)
