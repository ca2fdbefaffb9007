"""SyncJob: the PodGroup, minResources, pod construction, dependsOn, scaling and status counting."""

from __future__ import annotations

from typing import Any

import pytest
from ctrl_harness import Harness, task, vcjob

from builders import pvc
from pyvolcano.controllers._resources import format_list
from pyvolcano.controllers.job import podgroup as podgroup_module
from pyvolcano.controllers.job.actions import canonical
from pyvolcano.controllers.job.podgroup import _first_count, _min_resources, calc_pg_min_resources
from pyvolcano.store.base import AlreadyExists
from pyvolcano.store.memory import InMemoryStore


# ---------------------------------------------------------------------- PodGroup
def test_podgroup_created_from_job() -> None:
    h = Harness()
    h.store.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
                    "value": 1000})
    job = vcjob("j", task("ps", 1), task("worker", 3, min_available=2), minAvailable=3, priorityClassName="high")
    job["metadata"]["annotations"] = {"volcano.sh/preemptable": "true", "team": "a"}
    job["metadata"]["labels"] = {"app": "x"}
    created = h.create(job)
    pg = h.pg_of("j")
    assert pg["metadata"]["name"] == f"j-{created['metadata']['uid']}"
    assert pg["metadata"]["ownerReferences"] == [{
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "j", "uid": created["metadata"]["uid"],
        "controller": True, "blockOwnerDeletion": True,
    }]
    assert pg["metadata"]["annotations"] == {"volcano.sh/preemptable": "true", "team": "a"}
    assert pg["metadata"]["labels"] == {"app": "x"}
    assert pg["spec"]["minMember"] == 3
    assert pg["spec"]["minTaskMember"] == {"ps": 1, "worker": 2}
    assert pg["spec"]["queue"] == "default"
    assert pg["spec"]["priorityClassName"] == "high"
    assert pg["spec"]["minResources"] == {
        "count/pods": "3", "cpu": "3", "memory": "3Gi", "pods": "3", "requests.cpu": "3", "requests.memory": "3Gi",
    }


def test_no_pods_while_podgroup_pending() -> None:
    h = Harness()
    h.create(vcjob("j", task("worker", 2)))
    assert h.phase("j") == "Pending"
    assert h.pod_names() == []
    h.set_pg_phase("j", "Pending")
    assert h.pod_names() == []
    h.set_pg_phase("j", "Inqueue")
    assert h.pod_names() == ["j-worker-0", "j-worker-1"]
    st = h.job("j")["status"]
    assert st["pending"] == 2
    assert st["taskStatusCount"] == {"worker": {"phase": {"Pending": 2}}}
    assert [c["status"] for c in st["conditions"]] == ["Pending"]


# upstream TestTaskPriority_CalcPGMin vectors: master 2×50m, worker 2×100m; like upstream's test, a
# missing task minAvailable is patched to its replicas (the webhook) and job min 0 to their sum.
def _mw(master_min: int | None, worker_min: int | None, *, master_prio: int = 0,
        worker_prio: int = 0) -> list[tuple[int, dict[str, Any]]]:
    def t(name: str, cpu: str, ma: int | None) -> dict[str, Any]:
        out: dict[str, Any] = {"name": name, "replicas": 2, "template": {"spec": {"containers": [
            {"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}}
        out["minAvailable"] = 2 if ma is None else ma
        return out

    return [(master_prio, t("master", "50m", master_min)), (worker_prio, t("worker", "100m", worker_min))]


def _ordered(pairs: list[tuple[int, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [t for _, t in sorted(pairs, key=lambda p: -p[0])]


def _cpu(rl: dict[str, str]) -> tuple[str, str]:
    return rl["cpu"], rl["pods"]


@pytest.mark.parametrize(("pairs", "job_min", "want"), [
    (_mw(1, 1), 0, ("150m", "2")),
    (_mw(None, 1, master_prio=2), 0, ("200m", "3")),
    (_mw(None, 1), 3, ("200m", "3")),
    (_mw(1, None), 3, ("250m", "3")),
    (_mw(1, 1), 2, ("150m", "2")),
    (_mw(1, 1, master_prio=2), 3, ("200m", "3")),
    (_mw(1, 1, worker_prio=2), 3, ("250m", "3")),
    (_mw(0, 1, worker_prio=2), 3, ("250m", "3")),
    (_mw(None, 1, worker_prio=2), 4, ("300m", "4")),
    (_mw(1, 1, worker_prio=2), 4, ("300m", "4")),
    (_mw(None, 1, master_prio=2), 2, ("100m", "2")),
    (_mw(None, 1, worker_prio=2), 2, ("150m", "2")),
    (_mw(1, None), 2, ("150m", "2")),
], ids=lambda v: str(v) if isinstance(v, int) else None)
def test_calc_pg_min_resources_upstream_vectors(pairs: list[tuple[int, dict[str, Any]]], job_min: int,
                                                want: tuple[str, str]) -> None:
    if job_min == 0:
        job_min = sum(t["minAvailable"] for _, t in pairs)
    rl = format_list(_min_resources(_ordered(pairs), job_min))
    assert _cpu(rl) == want
    assert rl["requests.cpu"] == rl["cpu"] and rl["count/pods"] == rl["pods"]


@pytest.mark.parametrize(("count", "want"), [(1, ("100m", "1")), (2, ("200m", "2")), (3, ("250m", "3"))])
def test_first_count_takes_high_priority_tasks_first(count: int, want: tuple[str, str]) -> None:
    rl = format_list(_first_count(_ordered(_mw(2, 2, worker_prio=5)), count))
    assert _cpu(rl) == want


def test_min_resources_branch_uses_priority_classes() -> None:
    store = InMemoryStore()
    store.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "hi"},
                  "value": 100})
    tasks = [t for _, t in _mw(2, 2)]
    tasks[1]["template"]["spec"]["priorityClassName"] = "hi"
    job = {"metadata": {"name": "j"}, "spec": {"minAvailable": 1, "tasks": tasks}}
    # minAvailable (1) < Σ task minAvailable (4): the first pod of the highest-priority task.
    assert calc_pg_min_resources(store, job)["cpu"] == "100m"
    job["spec"]["minAvailable"] = 4
    assert calc_pg_min_resources(store, job)["cpu"] == "300m"


def test_min_resources_sums_limits_init_containers_and_extended() -> None:
    store = InMemoryStore()
    spec = {"initContainers": [{"name": "i", "resources": {"requests": {"cpu": "3", "memory": "1Gi"}}}],
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "500m", "nvidia.com/gpu": "1"},
                                            "limits": {"cpu": "1", "nvidia.com/gpu": "1"}}},
                {"name": "b", "resources": {"requests": {"cpu": "1", "memory": "512Mi"}}},
            ]}
    job = {"metadata": {"name": "j"}, "spec": {"minAvailable": 2, "tasks": [
        {"name": "t", "replicas": 2, "minAvailable": 2, "template": {"spec": spec}}]}}
    assert calc_pg_min_resources(store, job) == {
        "count/pods": "2", "cpu": "6", "limits.cpu": "2", "memory": "2Gi", "nvidia.com/gpu": "2", "pods": "2",
        "requests.cpu": "6", "requests.memory": "2Gi", "requests.nvidia.com/gpu": "2",
    }


def test_podgroup_updated_when_replicas_change() -> None:
    h = Harness()
    h.create(vcjob("j", task("worker", 2)))
    job = h.job("j")
    job["spec"]["tasks"][0]["replicas"] = 4
    h.store.update(job)
    h.settle()
    pg = h.pg_of("j")
    # minAvailable / task minAvailable are not defaulted again on update, so only replicas move.
    assert pg["spec"]["minMember"] == 2
    assert pg["spec"]["minTaskMember"] == {"worker": 2}


def test_min_resources_are_computed_once_per_job_spec_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    computed: list[int] = []
    original = podgroup_module._calc

    def spy(prioritised: Any, total_min: int, job: Any) -> dict[str, str]:
        computed.append(job["metadata"]["generation"])
        return original(prioritised, total_min, job)

    monkeypatch.setattr(podgroup_module, "_calc", spy)
    h = Harness()
    h.create(vcjob("j", task("worker", 2)))
    h.set_pg_phase("j", "Inqueue")
    h.settle()
    assert computed == [1]  # the PodGroup's creation; the later syncs find it in the memo
    job = h.job("j")
    job["spec"]["tasks"][0]["replicas"] = 4
    h.store.update(job)
    h.settle()
    assert computed == [1, 2]
    assert h.pg_of("j")["spec"]["minResources"] == calc_pg_min_resources(h.store, h.job("j"))


# ---------------------------------------------------------------------- pods
def test_pod_names_labels_annotations() -> None:
    h = Harness()
    job = vcjob("j", task("worker", 2, topologyPolicy="best-effort"), priorityClassName="high")
    job["metadata"]["annotations"] = {"volcano.sh/preemptable": "true", "volcano.sh/jdb-min-available": "1"}
    job["metadata"]["labels"] = {"volcano.sh/cooldown-time": "60s"}
    job["spec"]["tasks"][0]["template"]["metadata"] = {"labels": {"app": "w"}, "annotations": {"a": "b"}}
    h.store.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
                    "value": 10})
    created = h.create(job)
    h.set_pg_phase("j", "Inqueue")
    pod = h.get("Pod", "default", "j-worker-1")
    uid = created["metadata"]["uid"]
    assert pod["metadata"]["ownerReferences"][0]["uid"] == uid
    assert pod["metadata"]["annotations"] == {
        "a": "b",
        "volcano.sh/task-index": "1",
        "volcano.sh/task-spec": "worker",
        "scheduling.k8s.io/group-name": f"j-{uid}",
        "volcano.sh/job-name": "j",
        "volcano.sh/queue-name": "default",
        "volcano.sh/job-version": "0",
        "volcano.sh/template-uid": "j-worker",
        "volcano.sh/job-retry-count": "0",
        "volcano.sh/numa-topology-policy": "best-effort",
        "volcano.sh/preemptable": "true",
        "volcano.sh/jdb-min-available": "1",
    }
    assert pod["metadata"]["labels"] == {
        "app": "w",
        "volcano.sh/task-index": "1",
        "volcano.sh/job-name": "j",
        "volcano.sh/task-spec": "worker",
        "volcano.sh/job-namespace": "default",
        "volcano.sh/queue-name": "default",
        "volcano.sh/cooldown-time": "60s",
    }
    assert pod["spec"]["schedulerName"] == "volcano"
    assert pod["spec"]["priorityClassName"] == "high"


def test_depends_on_waits_for_ready_pods() -> None:
    h = Harness()
    h.create(vcjob("j", task("master", 1), task("worker", 2, dependsOn={"name": ["master"]})))
    h.set_pg_phase("j", "Inqueue")
    assert h.pod_names() == ["j-master-0"]
    h.bind("j-master-0")
    h.set_pod_phase("j-master-0", "Running", ready=False)
    assert h.pod_names() == ["j-master-0"]
    h.set_pod_phase("j-master-0", "Running", ready=True)
    assert h.pod_names() == ["j-master-0", "j-worker-0", "j-worker-1"]


def test_depends_on_any_iteration() -> None:
    h = Harness()
    h.create(vcjob("j", task("a", 1), task("b", 1), task("c", 1, dependsOn={"name": ["a", "b"], "iteration": "any"})))
    h.set_pg_phase("j", "Inqueue")
    assert h.pod_names() == ["j-a-0", "j-b-0"]
    h.set_pod_phase("j-b-0", "Succeeded")
    assert "j-c-0" in h.pod_names()


def test_scale_up_and_down() -> None:
    h = Harness()
    h.create(vcjob("j", task("worker", 3, min_available=1), minAvailable=1))
    h.set_pg_phase("j", "Inqueue")
    assert h.pod_names() == ["j-worker-0", "j-worker-1", "j-worker-2"]
    job = h.job("j")
    job["spec"]["tasks"][0]["replicas"] = 1
    h.store.update(job)
    h.settle()
    assert h.pod_names() == ["j-worker-0"]
    job = h.job("j")
    job["spec"]["tasks"][0]["replicas"] = 2
    h.store.update(job)
    h.settle()
    assert h.pod_names() == ["j-worker-0", "j-worker-1"]
    cm_less = h.job("j")["status"]
    assert cm_less["pending"] == 2


def test_pending_to_running_and_min_success() -> None:
    h = Harness()
    h.create(vcjob("j", task("worker", 3, min_available=1), minAvailable=2, minSuccess=2))
    h.set_pg_phase("j", "Inqueue")
    h.bind("j-worker-0")
    h.set_pod_phase("j-worker-0", "Running")
    assert h.phase("j") == "Pending"
    h.bind("j-worker-1")
    h.set_pod_phase("j-worker-1", "Running")
    assert h.phase("j") == "Running"
    h.set_pod_phase("j-worker-0", "Succeeded")
    assert h.phase("j") == "Running"
    h.set_pod_phase("j-worker-1", "Succeeded")
    # minSuccess reached while a pod is still pending: Completed, then the finished-phase
    # KillJob removes the leftover pod and the PodGroup.
    assert h.phase("j") == "Completed"
    assert h.pod_names() == ["j-worker-0", "j-worker-1"]
    assert h.store.list("PodGroup") == []


def test_failed_pods_fail_the_job() -> None:
    h = Harness()
    h.create(vcjob("j", task("worker", 2)))
    h.set_pg_phase("j", "Inqueue")
    for n in h.pod_names():
        h.bind(n)
        h.set_pod_phase(n, "Running")
    h.set_pod_phase("j-worker-0", "Succeeded")
    h.set_pod_phase("j-worker-1", "Failed", exit_code=1)
    st = h.job("j")["status"]
    assert st["state"]["phase"] == "Failed"
    assert [c["status"] for c in st["conditions"]] == ["Pending", "Running", "Failed"]
    # After the finished-phase kill the counters are rewritten (retained pods are not counted).
    assert st["version"] == 1
    assert "succeeded" not in st and "failed" not in st
    assert st["runningDuration"] == "0s"


def test_status_timestamps_follow_the_clock() -> None:
    h = Harness()
    h.create(vcjob("j", task("worker", 1)))
    h.advance(5)
    h.set_pg_phase("j", "Inqueue")
    h.advance(10)
    h.bind("j-worker-0")
    h.set_pod_phase("j-worker-0", "Running")
    st = h.job("j")["status"]
    assert st["state"]["lastTransitionTime"] == "2024-01-01T00:00:15Z"
    # Every status write refreshes the condition of the current phase (appendJobCondition): the
    # Pending one was rewritten at 5 s when the pods were counted.
    assert st["conditions"] == [{"status": "Pending", "lastTransitionTime": "2024-01-01T00:00:05Z"},
                                {"status": "Running", "lastTransitionTime": "2024-01-01T00:00:15Z"}]
    h.advance(75)
    h.set_pod_phase("j-worker-0", "Succeeded")
    assert h.job("j")["status"]["runningDuration"] == "1m30s"


def test_job_volumes_get_claims_and_mounts() -> None:
    h = Harness()
    h.store.create(pvc("data", ns="default"))
    h.create(vcjob("j", task("worker", 1), volumes=[
        {"mountPath": "/data", "volumeClaimName": "data"},
        {"mountPath": "/scratch", "volumeClaim": {"accessModes": ["ReadWriteOnce"],
                                                 "resources": {"requests": {"storage": "1Gi"}}}},
    ]))
    job = h.job("j")
    generated = job["spec"]["volumes"][1]["volumeClaimName"]
    assert generated.startswith("j-pvc-") and len(generated) == len("j-pvc-") + 12
    assert h.get("PersistentVolumeClaim", "default", generated)["spec"]["accessModes"] == ["ReadWriteOnce"]
    h.set_pg_phase("j", "Inqueue")
    pod = h.get("Pod", "default", "j-worker-0")
    claims = [v["persistentVolumeClaim"]["claimName"] for v in pod["spec"]["volumes"]]
    assert claims == ["data", generated]
    assert [m["mountPath"] for m in pod["spec"]["containers"][0]["volumeMounts"]] == ["/data", "/scratch"]


def test_missing_claim_keeps_job_pending_and_is_retried() -> None:
    h = Harness()
    h.create(vcjob("j", task("worker", 1), volumes=[{"mountPath": "/data", "volumeClaimName": "nope"}]))
    assert h.phase("j") == "Pending"
    assert h.store.list("PodGroup") == []
    h.store.create(pvc("nope", ns="default"))
    h.advance(1)
    assert len(h.store.list("PodGroup")) == 1


def test_deleting_job_cascades() -> None:
    h = Harness()
    h.create(vcjob("j", task("worker", 2), plugins={"svc": []}))
    h.set_pg_phase("j", "Inqueue")
    h.store.delete("Job", "default", "j")
    h.settle()
    assert h.pod_names() == []
    assert h.store.list("PodGroup") == []
    assert h.store.list("Service") == [] and h.store.list("ConfigMap") == []


@pytest.mark.parametrize(("value", "want"), [
    ({"a": 0, "b": 0.0, "c": "", "d": None, "e": {}, "f": [], "g": False, "h": True}, {"g": False, "h": True}),
    ({"n": {"x": {"y": 0}}, "l": [0, "", None, {"z": ""}], "s": "0", "i": -1, "f": 0.5},
     {"l": [0, "", None, {}], "s": "0", "i": -1, "f": 0.5}),
    ({"state": {"phase": "Running", "lastTransitionTime": "t"}, "pending": 0, "running": 1,
      "taskStatusCount": {"t": {"phase": {"Running": 1}}}, "conditions": []},
     {"state": {"phase": "Running", "lastTransitionTime": "t"}, "running": 1,
      "taskStatusCount": {"t": {"phase": {"Running": 1}}}}),
])
def test_canonical_drops_what_go_omitempty_drops_at_every_level_of_maps(value: Any, want: Any) -> None:
    got = canonical(value)
    assert got == want and repr(got) == repr(want)  # False stays False, 1 stays an int


def test_pods_created_by_one_request_are_not_created_again_by_the_next_in_the_same_batch() -> None:
    h = Harness()
    h.create(vcjob("j", task("worker", 2)))
    refused: list[str] = []
    create = h.store.create

    def counting_create(obj: dict[str, Any]) -> dict[str, Any]:
        try:
            return create(obj)
        except AlreadyExists:
            refused.append(obj["metadata"]["name"])
            raise

    h.store.create = counting_create  # type: ignore[method-assign]
    # Two requests for the job reach the controller in one batch, before any pod's watch event.
    pg = h.pg_of("j")
    h.store.patch("PodGroup", "default", pg["metadata"]["name"], {"status": {"phase": "Inqueue"}},
                  subresource="status")
    h.store.patch("Job", "default", "j", {"spec": {"minAvailable": 1}})
    h.settle()
    assert h.pod_names() == ["j-worker-0", "j-worker-1"]
    assert refused == []
    assert h.job("j")["status"]["pending"] == 2
