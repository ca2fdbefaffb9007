"""What each webhook path answers: upstream's rejection texts and the defaults as JSON Patches.

These go through the HTTPS server (``client`` fixture), as the API server calls them."""

from __future__ import annotations

from typing import Any

import pytest
from jsonpatch_apply import apply_patch
from webhook_client import Client, decoded_patch, queue_obj, review

from pyvolcano.admission import VolcanoAdmission
from pyvolcano.store import InMemoryStore, clone


def job(name: str = "j", *, ns: str = "ns", min_available: int | None = None, queue: str | None = None,
        tasks: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"tasks": tasks if tasks is not None else [task("worker", 2)], **spec}
    if min_available is not None:
        body["minAvailable"] = min_available
    if queue is not None:
        body["queue"] = queue
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": ns},
            "spec": body}


def task(name: str, replicas: int, **extra: Any) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}}
    return {"name": name, "replicas": replicas, "template": template, **extra}


def denied(response: dict[str, Any]) -> str:
    assert response["allowed"] is False
    assert response["status"]["code"] == 400
    assert "reason" not in response["status"]
    message: str = response["status"]["message"]
    return message


# ----------------------------------------------------------------------------- /jobs/validate


def test_job_with_min_available_above_total_replicas_is_rejected_with_upstreams_text(client: Client) -> None:
    r = client.post("/jobs/validate", review("Job", "CREATE", job(min_available=3)))
    assert denied(r) == "job 'minAvailable' should not be greater than total replicas in tasks;"


def test_job_create_problems_are_concatenated_as_upstreams_fragments(client: Client) -> None:
    bad = job("big", min_available=5, tasks=[task("t", 1, minAvailable=2)])
    r = client.post("/jobs/validate", review("Job", "CREATE", bad))
    assert denied(r) == ("'minAvailable' is greater than 'replicas' in task: t, job: big; "
                         "job 'minAvailable' should not be greater than total replicas in tasks;")


def test_job_in_a_missing_queue_is_rejected_with_upstreams_text(client: Client) -> None:
    r = client.post("/jobs/validate", review("Job", "CREATE", job(queue="nope")))
    assert denied(r) == 'unable to find job queue: queues.scheduling.volcano.sh "nope" not found;'


def test_job_in_a_closed_queue_is_rejected(client: Client, store: InMemoryStore) -> None:
    store.create(queue_obj("shut", state="Closed"))
    r = client.post("/jobs/validate", review("Job", "CREATE", job(queue="shut")))
    assert denied(r) == "can only submit job to queue with state `Open`, queue `shut` status is `Closed`;"


def test_valid_job_is_allowed_without_status(client: Client) -> None:
    r = client.post("/jobs/validate", review("Job", "CREATE", job(min_available=2)))
    assert r["allowed"] is True and "status" not in r and "patch" not in r


def test_job_update_changing_a_fixed_field_is_rejected_with_the_single_upstream_error(client: Client) -> None:
    old = job(min_available=1, queue="default", schedulerName="volcano")
    new = clone(old)
    new["spec"]["schedulerName"] = "other"
    r = client.post("/jobs/validate", review("Job", "UPDATE", new, old))
    assert denied(r) == ("job updates may not change fields other than `minAvailable`, `tasks[*].replicas under "
                         "spec` and `PriorityClassName`")
    new = clone(old)
    new["spec"]["tasks"][0]["replicas"] = 4
    assert client.post("/jobs/validate", review("Job", "UPDATE", new, old))["allowed"] is True


def test_job_validate_refuses_an_operation_it_is_not_registered_for(client: Client) -> None:
    r = client.post("/jobs/validate", review("Job", "DELETE", None, job()))
    assert denied(r) == "expect operation to be 'CREATE' or 'UPDATE'"


def test_a_request_for_another_resource_is_refused(client: Client) -> None:
    req = review("Queue", "CREATE", queue_obj("q"))
    r = client.post("/jobs/validate", req)
    assert denied(r) == "expect resource to be {batch.volcano.sh v1alpha1 jobs}"


# ----------------------------------------------------------------------------- /jobs/mutate


def test_job_mutation_patch_applied_gives_the_defaulted_job(client: Client, store: InMemoryStore) -> None:
    submitted = job(tasks=[task("", 3), task("ps", 1, template={"spec": {"hostNetwork": True, "containers": []}})],
                    plugins={"pytorch": ["--master=ps"]})
    r = client.post("/jobs/mutate", review("Job", "CREATE", submitted))
    assert r["allowed"] is True
    patched = apply_patch(submitted, decoded_patch(r))
    expected = clone(submitted)
    VolcanoAdmission().mutate("CREATE", expected, store)
    assert patched == expected
    spec = patched["spec"]
    assert (spec["queue"], spec["schedulerName"], spec["maxRetry"]) == ("default", "volcano", 3)
    assert spec["minAvailable"] == 4
    assert [t["name"] for t in spec["tasks"]] == ["default0", "ps"]
    assert spec["tasks"][1]["template"]["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert spec["plugins"] == {"pytorch": ["--master=ps"], "svc": []}


def test_job_mutation_of_a_fully_defaulted_job_has_no_patch(client: Client, store: InMemoryStore) -> None:
    submitted = job()
    VolcanoAdmission().mutate("CREATE", submitted, store)
    r = client.post("/jobs/mutate", review("Job", "CREATE", submitted))
    assert r == {"uid": r["uid"], "allowed": True}


def test_job_mutation_does_not_patch_in_the_namespace_taken_from_the_request(client: Client) -> None:
    submitted = job()
    del submitted["metadata"]["namespace"]
    r = client.post("/jobs/mutate", review("Job", "CREATE", submitted, namespace="team-a"))
    assert all(not op["path"].startswith("/metadata") for op in decoded_patch(r))


def test_job_with_wrong_types_is_refused_by_the_mutating_webhook(client: Client) -> None:
    bad = job()
    bad["spec"]["minAvailable"] = "two"
    r = client.post("/jobs/mutate", review("Job", "CREATE", bad))
    assert denied(r) == 'spec.minAvailable: Invalid value: "two": expected an integer'


# ----------------------------------------------------------------------------- queues


@pytest.mark.parametrize("name", ["root", "default"])
def test_deleting_root_or_default_queue_is_rejected_with_upstreams_text(client: Client, name: str) -> None:
    r = client.post("/queues/validate", review("Queue", "DELETE", None, queue_obj(name)))
    assert denied(r) == f"`{name}` queue can not be deleted"


def test_deleting_a_queue_with_children_names_them(client: Client, store: InMemoryStore) -> None:
    store.create(queue_obj("parent"))
    store.create(queue_obj("kid", parent="parent"))
    r = client.post("/queues/validate", review("Queue", "DELETE", None, name="parent"))
    assert denied(r) == "queue parent can not be deleted because it has 1 child queues: kid"
    assert client.post("/queues/validate", review("Queue", "DELETE", None, queue_obj("kid")))["allowed"] is True


def test_queue_field_errors_are_an_aggregate_under_request_body(client: Client) -> None:
    one = queue_obj("q", deserved={"cpu": "1"}, guarantee={"resource": {"cpu": "2"}})
    r = client.post("/queues/validate", review("Queue", "CREATE", one))
    assert denied(r) == 'requestBody.spec.deserved.cpu: Invalid value: "1": deserved[cpu]=1 must be >= guarantee[cpu]=2'
    two = queue_obj("q", deserved={"cpu": "1", "memory": "1Gi"}, guarantee={"resource": {"cpu": "2", "memory": "2Gi"}})
    message = denied(client.post("/queues/validate", review("Queue", "CREATE", two)))
    assert message.startswith("[requestBody.spec.deserved.") and message.endswith("]") and message.count(", req") == 1


def test_queue_with_a_missing_parent_is_rejected(client: Client) -> None:
    r = client.post("/queues/validate", review("Queue", "CREATE", queue_obj("q", parent="ghost")))
    assert denied(r) == 'failed to get parent queue of queue q: queues.scheduling.volcano.sh "ghost" not found'


def test_queue_mutation_defaults_weight_reclaimable_and_hierarchy(client: Client) -> None:
    submitted = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                 "metadata": {"name": "q", "annotations": {"volcano.sh/hierarchy": "a/b",
                                                           "volcano.sh/hierarchy-weights": "2/3"}},
                 "spec": {}}
    r = client.post("/queues/mutate", review("Queue", "CREATE", submitted))
    patched = apply_patch(submitted, decoded_patch(r))
    assert patched["metadata"]["annotations"] == {"volcano.sh/hierarchy": "root/a/b",
                                                  "volcano.sh/hierarchy-weights": "1/2/3"}
    assert patched["spec"]["weight"] == 1 and patched["spec"]["reclaimable"] is True


def test_queue_mutate_refuses_other_operations_with_upstreams_text(client: Client) -> None:
    r = client.post("/queues/mutate", review("Queue", "UPDATE", queue_obj("q"), queue_obj("q")))
    assert denied(r) == "invalid operation `UPDATE`, expect operation to be `CREATE`"


# ----------------------------------------------------------------------------- podgroups and pods


def podgroup(queue: str | None = None, ns: str = "ns") -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": 1}
    if queue is not None:
        spec["queue"] = queue
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": ns}, "spec": spec}


def test_podgroup_mutation_takes_the_namespace_queue_annotation(client: Client, store: InMemoryStore) -> None:
    store.create({"apiVersion": "v1", "kind": "Namespace",
                  "metadata": {"name": "team", "annotations": {"scheduling.volcano.sh/queue-name": "team-q"}}})
    submitted = podgroup(ns="team")
    r = client.post("/podgroups/mutate", review("PodGroup", "CREATE", submitted))
    assert decoded_patch(r) == [{"op": "add", "path": "/spec/queue", "value": "team-q"}]


def test_podgroup_in_a_closed_queue_is_rejected_with_upstreams_text(client: Client, store: InMemoryStore) -> None:
    store.create(queue_obj("shut", state="Closed"))
    r = client.post("/podgroups/validate", review("PodGroup", "CREATE", podgroup("shut")))
    assert denied(r) == "can only submit PodGroup to queue with state `Open`, queue `shut` status is `Closed`."


def pod(annotations: dict[str, str], scheduler: str = "volcano") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "annotations": annotations},
            "spec": {"schedulerName": scheduler, "containers": [{"name": "c", "image": "busybox"}]}}


def test_pod_with_both_budget_annotations_is_rejected_with_upstreams_text(client: Client) -> None:
    both = {"volcano.sh/jdb-min-available": "1", "volcano.sh/jdb-max-unavailable": "1"}
    r = client.post("/pods/validate", review("Pod", "CREATE", pod(both)))
    assert denied(r) == ("not allow configure multiple annotations <[volcano.sh/jdb-min-available "
                         "volcano.sh/jdb-max-unavailable]> at same time")
    assert client.post("/pods/validate", review("Pod", "CREATE", pod(both, "default-scheduler")))["allowed"] is True


def test_pod_mutation_allows_without_a_patch(client: Client) -> None:
    r = client.post("/pods/mutate", review("Pod", "CREATE", pod({})))
    assert r["allowed"] is True and "patch" not in r and "patchType" not in r
