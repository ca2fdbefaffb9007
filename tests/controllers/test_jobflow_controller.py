"""The JobFlow and JobTemplate controllers, as upstream's ``pkg/controllers/jobflow`` and
``jobtemplate``: jobs made from templates in dependency order, the flow's status and phase,
the retain policy, and (beyond upstream) dependsOn probes."""

from __future__ import annotations

from workflow_harness import WorkflowHarness, jobflow, jobtemplate

UPSTREAM_FLOW = (("a", []), ("b", ["a"]), ("c", ["b"]), ("d", ["b"]), ("e", ["c", "d"]))


def flow_harness(policy: str = "retain") -> WorkflowHarness:
    h = WorkflowHarness()
    for name in "abcde":
        h.create(jobtemplate(name))
    h.create(jobflow("test", *UPSTREAM_FLOW, policy=policy))
    return h


def complete(h: WorkflowHarness, *names: str) -> None:
    for name in names:
        h.set_job_phase(name, "Running")
        h.set_job_phase(name, "Completed")


def test_jobs_are_created_from_their_templates_once_their_targets_completed() -> None:
    h = flow_harness()
    assert h.jobs() == ["test-a"]
    h.set_job_phase("test-a", "Running")
    assert h.jobs() == ["test-a"]
    h.set_job_phase("test-a", "Completed")
    assert h.jobs() == ["test-a", "test-b"]
    complete(h, "test-b")
    assert h.jobs() == ["test-a", "test-b", "test-c", "test-d"]
    complete(h, "test-c")
    assert "test-e" not in h.jobs()
    complete(h, "test-d")
    assert h.jobs() == ["test-a", "test-b", "test-c", "test-d", "test-e"]


def test_a_flow_job_carries_its_template_marks_and_owner() -> None:
    h = flow_harness()
    flow = h.store.get("JobFlow", "default", "test")
    job = h.job("test-a")
    marks = {"volcano.sh/createdByJobTemplate": "default.a", "volcano.sh/createdByJobFlow": "default.test"}
    assert job["metadata"]["labels"] == marks and job["metadata"]["annotations"] == marks
    assert job["metadata"]["ownerReferences"] == [{
        "apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "name": "test",
        "uid": flow["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
    template = h.store.get("JobTemplate", "default", "a")
    assert job["spec"]["tasks"][0]["name"] == template["spec"]["tasks"][0]["name"]


def test_the_flow_goes_pending_running_succeed_and_lists_its_jobs_by_phase() -> None:
    h = flow_harness()
    assert h.status("JobFlow", "test")["state"] == {"phase": "Pending"}
    h.set_job_phase("test-a", "Pending")
    assert h.status("JobFlow", "test")["pendingJobs"] == ["test-a"]
    h.set_job_phase("test-a", "Running")
    st = h.status("JobFlow", "test")
    assert (st["state"]["phase"], st["runningJobs"]) == ("Running", ["test-a"])
    complete(h, "test-a", "test-b", "test-c", "test-d", "test-e")
    st = h.status("JobFlow", "test")
    assert st["state"]["phase"] == "Succeed"
    assert st["completedJobs"] == ["test-a", "test-b", "test-c", "test-d", "test-e"]
    assert set(st["conditions"]) == set(st["completedJobs"])
    history = {j["name"]: [r["state"] for r in j["runningHistories"]] for j in st["jobStatusList"]}
    assert history["test-a"] == ["Pending", "Running", "Completed"]


def test_with_the_delete_policy_the_jobs_go_once_the_flow_succeeded() -> None:
    h = flow_harness(policy="delete")
    complete(h, "test-a", "test-b", "test-c", "test-d")
    assert h.jobs() == ["test-a", "test-b", "test-c", "test-d", "test-e"]
    complete(h, "test-e")
    assert h.status("JobFlow", "test")["state"]["phase"] == "Succeed"
    assert h.jobs() == []


def test_with_the_retain_policy_the_jobs_stay() -> None:
    h = flow_harness()
    complete(h, "test-a", "test-b", "test-c", "test-d", "test-e")
    assert len(h.jobs()) == 5


def test_a_failed_job_fails_the_flow_and_stops_it() -> None:
    h = flow_harness()
    h.set_job_phase("test-a", "Running")
    h.set_job_phase("test-a", "Failed")
    st = h.status("JobFlow", "test")
    assert (st["state"]["phase"], st["failedJobs"]) == ("Failed", ["test-a"])
    assert h.jobs() == ["test-a"]


def test_a_missing_template_is_retried_until_it_exists() -> None:
    h = WorkflowHarness()
    h.create(jobflow("late", ("x", [])))
    assert h.jobs() == []
    assert h.flows.queue.num_requeues("default/late") > 0
    h.create(jobtemplate("x"))
    h.advance_to(h.now + 1)
    assert h.jobs() == ["late-x"]


def test_a_probe_on_a_targets_task_status_holds_the_job_back_until_it_holds() -> None:
    h = WorkflowHarness()
    h.create(jobtemplate("train", "worker", "ps"))
    h.create(jobtemplate("eval"))
    probe = {"probe": {"taskStatusList": [{"taskName": "worker", "phase": "Succeeded"}]}}
    h.create(jobflow("p", ("train", []), ("eval", ["train"]), eval=probe))
    h.set_job_phase("p-train", "Running")
    h.set_job_phase("p-train", "Completed", taskStatusCount={"worker": {"phase": {"Failed": 2}},
                                                              "ps": {"phase": {"Succeeded": 1}}})
    assert h.jobs() == ["p-train"]
    h.set_job_phase("p-train", "Completed", taskStatusCount={"worker": {"phase": {"Succeeded": 2}}})
    assert h.jobs() == ["p-eval", "p-train"]


def test_a_job_template_lists_the_jobs_made_from_it() -> None:
    h = flow_harness()
    assert "jobDependsOnList" not in h.status("JobTemplate", "b")
    assert h.status("JobTemplate", "a")["jobDependsOnList"] == ["test-a"]
    h.create(jobflow("again", ("a", [])))
    assert h.status("JobTemplate", "a")["jobDependsOnList"] == ["again-a", "test-a"]
    complete(h, "test-a")
    assert h.status("JobTemplate", "b")["jobDependsOnList"] == ["test-b"]


def test_deleting_the_flow_deletes_its_jobs_with_it() -> None:
    h = flow_harness()
    h.store.delete("JobFlow", "default", "test")
    h.settle()
    assert h.jobs() == []
