"""``/cronjobs/validate`` and ``/jobflows/validate``: upstream's rules and wording, through the
HTTPS server as the API server calls them, and their webhook registrations."""

from __future__ import annotations

from typing import Any

import pytest
from webhook_client import Client, review

from pyvolcano.webhooks import SERVICES, ClientTarget, webhook_configuration


def cronjob(name: str = "nightly", schedule: str = "0 2 * * *", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedule": schedule, "jobTemplate": {"spec": {"tasks": []}}, **spec}}


def jobflow(*flows: tuple[str, list[str]]) -> dict[str, Any]:
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
            "metadata": {"name": "flow", "namespace": "default"},
            "spec": {"flows": [{"name": n, "dependsOn": {"targets": t}} for n, t in flows]}}


def denied(response: dict[str, Any]) -> str:
    assert response["allowed"] is False
    message: str = response["status"]["message"]
    return message


def test_a_valid_cronjob_is_allowed_on_create_and_update(client: Client) -> None:
    cj = cronjob(timeZone="Europe/Berlin")
    assert client.post("/cronjobs/validate", review("CronJob", "CREATE", cj))["allowed"] is True
    assert client.post("/cronjobs/validate", review("CronJob", "UPDATE", cj, cj))["allowed"] is True


def test_cronjob_problems_are_joined_with_semicolons(client: Client) -> None:
    r = client.post("/cronjobs/validate", review("CronJob", "CREATE", cronjob(name="a" * 53, schedule="bad")))
    assert denied(r) == ("schedule is not a valid cron expression; cronJob name must be no more than 52 "
                         "characters to accommodate job name suffix (max 63 total)")


def test_a_time_zone_in_the_schedule_is_refused(client: Client) -> None:
    r = client.post("/cronjobs/validate", review("CronJob", "UPDATE", cronjob(schedule="TZ=UTC 0 20 * * *"), None))
    assert denied(r) == "schedule should not contain TZ or CRON_TZ, TZ should only be set in the timeZone field"


@pytest.mark.parametrize("path", ["/cronjobs/validate", "/jobflows/validate"])
def test_deletions_are_not_webhook_operations(client: Client, path: str) -> None:
    kind = "CronJob" if path.startswith("/cron") else "JobFlow"
    obj = cronjob() if kind == "CronJob" else jobflow(("a", []))
    r = client.post(path, review(kind, "DELETE", None, obj))
    assert denied(r) == "expect operation to be 'CREATE' or 'UPDATE'"


def test_a_jobflow_dag_is_allowed_and_a_cycle_refused(client: Client) -> None:
    assert client.post("/jobflows/validate", review("JobFlow", "CREATE", jobflow(("a", []), ("b", ["a"]))))["allowed"]
    r = client.post("/jobflows/validate", review("JobFlow", "CREATE", jobflow(("a", ["b"]), ("b", ["a"]))))
    assert denied(r) == "jobflow Flow is not DAG"
    r = client.post("/jobflows/validate", review("JobFlow", "UPDATE", jobflow(("b", ["a"])), None))
    assert denied(r) == "jobflow Flow is not DAG: vertex is not defined: a"


@pytest.mark.parametrize(("path", "name", "group", "resource"), [
    ("/cronjobs/validate", "validatecronjob.volcano.sh", "batch.volcano.sh", "cronjobs"),
    ("/jobflows/validate", "validatejobflow.volcano.sh", "flow.volcano.sh", "jobflows"),
])
def test_registration_rules_are_upstreams(path: str, name: str, group: str, resource: str) -> None:
    config = webhook_configuration(SERVICES[path], ClientTarget(url="https://hook:8443"), b"", ["volcano"])
    assert config["kind"] == "ValidatingWebhookConfiguration"
    [webhook] = config["webhooks"]
    assert webhook["name"] == name
    assert webhook["rules"] == [{"apiGroups": [group], "apiVersions": ["v1alpha1"], "operations": ["CREATE", "UPDATE"],
                                 "resources": [resource], "scope": "*"}]
