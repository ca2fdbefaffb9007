"""JobFlow and JobTemplate admission: the CRDs' schemas, and ``validatejobflow.volcano.sh`` with
upstream's messages (the cases of ``validate_jobflow_test.go``)."""

from __future__ import annotations

from typing import Any

import pytest

from pyvolcano.store import InMemoryStore, Invalid


def jobflow(*flows: tuple[str, list[str]], policy: str | None = "retain", **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"flows": [{"name": n, **({"dependsOn": {"targets": t}} if t else {})} for n, t in flows],
                            **extra}
    if policy is not None:
        spec["jobRetainPolicy"] = policy
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
            "metadata": {"name": "valid-jobflow", "namespace": "default"}, "spec": spec}


def jobtemplate(name: str = "a", **spec: Any) -> dict[str, Any]:
    body = {"minAvailable": 1, "schedulerName": "volcano",
            "tasks": [{"name": "default-nginx", "replicas": 1,
                       "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}], **spec}
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate",
            "metadata": {"name": name, "namespace": "default"}, "spec": body}


def refusal(store: InMemoryStore, obj: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(Invalid) as e:
        store.create(obj)
    return e.value.errors


def test_upstreams_valid_flow_is_admitted(store: InMemoryStore) -> None:
    store.create(jobflow(("a", []), ("b", ["a"]), ("c", ["a", "b"]), ("d", ["b"]), ("e", ["c", "d"])))


def test_a_duplicated_flow_name_is_admitted(store: InMemoryStore) -> None:
    store.create(jobflow(("a", []), ("a", []), ("b", ["a"]), ("c", ["a", "b"]), ("d", ["b"]), ("e", ["c", "d"])))


def test_a_missing_target_is_refused(store: InMemoryStore) -> None:
    errors = refusal(store, jobflow(("b", ["a"]), ("c", ["a", "b"]), ("d", ["b"]), ("e", ["c", "d"])))
    assert errors == [("spec.flows[0].dependsOn.targets", "jobflow Flow is not DAG: vertex is not defined: a")]


def test_a_cycle_is_refused(store: InMemoryStore) -> None:
    errors = refusal(store, jobflow(("a", ["b"]), ("b", ["a"]), ("c", ["a", "b"]), ("d", ["b"]), ("e", ["c", "d"])))
    assert [m for _, m in errors] == ["jobflow Flow is not DAG"]


def test_an_update_making_a_cycle_is_refused(store: InMemoryStore) -> None:
    created = store.create(jobflow(("a", []), ("b", ["a"])))
    created["spec"]["flows"][0]["dependsOn"] = {"targets": ["b"]}
    with pytest.raises(Invalid, match="jobflow Flow is not DAG"):
        store.update(created)


@pytest.mark.parametrize(("flow", "field", "message"), [
    (jobflow(("", [])), "spec.flows[0].name", "should be at least 1 chars long"),
    (jobflow(("a", []), policy="keep"), "spec.jobRetainPolicy", 'Unsupported value: "keep"'),
    ({**jobflow(), "spec": {"flows": [{"dependsOn": {}}]}}, "spec.flows[0].name", "Required value"),
    ({**jobflow(), "spec": {"flows": [{"name": "a", "dependsOn": {"probe": {"tcpSocketList": [{"port": 70000}]}}}]}},
     "spec.flows[0].dependsOn.probe.tcpSocketList[0].port", "must be between 0 and 65535"),
    ({**jobflow(), "spec": {"flows": [{"name": "a", "dependsOn": {"probe": {"tcpSocketList": [{}]}}}]}},
     "spec.flows[0].dependsOn.probe.tcpSocketList[0].port", "Required value"),
    ({**jobflow(), "spec": {"flows": [{"name": "a", "dependsOn": {"targets": "b"}}]}},
     "spec.flows[0].dependsOn.targets", "expected a list"),
])
def test_the_crd_schema_refuses_a_bad_flow(store: InMemoryStore, flow: dict[str, Any], field: str,
                                           message: str) -> None:
    errors = refusal(store, flow)
    assert any(f == field and message in m for f, m in errors), errors


def test_a_patch_gets_the_job_spec_defaults(store: InMemoryStore) -> None:
    flow = jobflow(("a", []))
    flow["spec"]["flows"][0]["patch"] = {"jobSpec": {"minAvailable": 2}}
    patch = store.create(flow)["spec"]["flows"][0]["patch"]["jobSpec"]
    assert patch == {"minAvailable": 2, "maxRetry": 3, "queue": "default"}


def test_a_job_template_gets_the_job_spec_defaults_and_no_webhook(store: InMemoryStore) -> None:
    spec = store.create(jobtemplate())["spec"]
    assert (spec["maxRetry"], spec["queue"]) == (3, "default")
    # Two tasks of one name: the job webhook would refuse the jobs; a template has no webhook.
    t = jobtemplate("twice")
    t["spec"]["tasks"].append(dict(t["spec"]["tasks"][0]))
    assert store.create(t)


@pytest.mark.parametrize(("spec", "field", "message"), [
    ({"tasks": []}, "spec.tasks", "must have at least 1 items"),
    ({"minAvailable": -1}, "spec.minAvailable", "must be greater than or equal to 0"),
    ({"minSuccess": 0}, "spec.minSuccess", "must be greater than or equal to 1"),
    ({"queue": "Bad_Queue"}, "spec.queue", "Invalid value"),
    ({"policies": [{"event": "PodExploded", "action": "RestartJob"}]}, "spec.policies[0].event",
     'Unsupported value: "PodExploded"'),
])
def test_the_job_template_schema_refuses_out_of_bounds_fields(store: InMemoryStore, spec: dict[str, Any],
                                                              field: str, message: str) -> None:
    errors = refusal(store, jobtemplate(**spec))
    assert any(f == field and message in m for f, m in errors), errors
