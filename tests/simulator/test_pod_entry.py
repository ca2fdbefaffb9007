"""What happens to pods where they enter a simulation: the API server's defaulting and Priority
admission, and pods the API server refuses (listed in ``rejected`` or failing their job)."""

from __future__ import annotations

from typing import Any

import yaml

from pyvolcano.conf import default_configuration
from pyvolcano.runtime.registry import default_registry
from pyvolcano.simulator.report.stats import summarize
from pyvolcano.simulator.runtime import Simulation, SimulationResult
from pyvolcano.simulator.workload import Submission


def gpu_node(name: str, gpus: int = 8) -> dict[str, Any]:
    res = {"cpu": "32", "memory": "128Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"capacity": res}}


def gang(name: str, *, replicas: int, resources: dict[str, Any], duration: str = "1h",
         priority_class: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "minAvailable": replicas, "schedulerName": "volcano",
        "tasks": [{"name": "w", "replicas": replicas, "template": {
            "metadata": {"annotations": {"pyvolcano.io/duration": duration}},
            "spec": {"restartPolicy": "Never",
                     "containers": [{"name": "c", "image": "i", "resources": resources}]}}}],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def simulate(*objs: dict[str, Any]) -> tuple[SimulationResult, Simulation]:
    sim = Simulation(config=default_configuration(), registry=default_registry(), seed=0)
    sim.submit([Submission(0.0, i, "w.yaml", yaml.safe_load(yaml.safe_dump(o))) for i, o in enumerate(objs)])
    placements: dict[str, str] = {}

    def record(_now: float, result: Any) -> None:
        for b in result.bind_requests:
            placements[b.name] = b.node

    sim.on_session = record
    sim.placements = placements  # type: ignore[attr-defined]
    return sim.run(until=24 * 3600), sim


def test_gang_with_gpus_only_under_limits_needs_one_node_per_pod() -> None:
    # NVIDIA's documentation writes GPUs under limits only; the API server defaults requests from them.
    res, sim = simulate(gpu_node("n1"), gpu_node("n2"), gpu_node("n3"),
                        gang("train", replicas=3, resources={"limits": {"nvidia.com/gpu": 8}}))
    assert res.jobs["default/train"].phase == "Completed"
    placements = sim.placements  # type: ignore[attr-defined]
    assert sorted(placements.values()) == ["n1", "n2", "n3"]
    assert summarize(sim.metrics)["summary"]["gpu_hours"] == 24.0  # 3 pods x 8 GPUs x 1 h


def test_gang_with_gpu_limits_larger_than_the_cluster_never_starts() -> None:
    res, _ = simulate(gpu_node("n1"), gang("train", replicas=3, resources={"limits": {"nvidia.com/gpu": 8}}))
    assert res.jobs["default/train"].started is None


def test_stored_pods_carry_requests_defaulted_from_limits() -> None:
    _, sim = simulate(gpu_node("n1"), gang("one", replicas=1, resources={
        "requests": {"cpu": "1"}, "limits": {"cpu": "2", "nvidia.com/gpu": 2}}, duration="1000h"))
    pods = sim.store.list("Pod")
    assert [p["spec"]["containers"][0]["resources"]["requests"] for p in pods] == [{"cpu": "1", "nvidia.com/gpu": 2}]
    # The template is not defaulted (upstream defaults Pods, never PodTemplates).
    job = sim.store.get("Job", "default", "one")
    assert job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1"}


def test_workload_pod_with_a_bad_quantity_is_rejected_not_ignored() -> None:
    bad = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad", "namespace": "default"},
           "spec": {"schedulerName": "volcano",
                    "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1x"}}}]}}
    res, _ = simulate(gpu_node("n1"), bad)
    assert [(r["kind"], r["name"]) for r in res.rejected] == [("Pod", "default/bad")]
    assert "spec.containers[0].resources.requests.cpu: Invalid value: \"1x\"" in res.rejected[0]["error"]


def test_job_naming_a_missing_priority_class_is_terminated_after_its_pods_are_refused() -> None:
    res, sim = simulate(gpu_node("n1"), gang("nopc", replicas=1, resources={"requests": {"cpu": "1"}},
                                             duration="1m", priority_class="no-such-pc"))
    rec = res.jobs["default/nopc"]
    # upstream: every SyncJob fails to create the pods, is requeued with back-off (5 ms doubling)
    # --max-requeue-num (15) times, then the job is terminated.
    assert rec.phase == "Terminated" and rec.started is None
    assert 150 < rec.finished < 170
    assert sim.store.list("Pod") == []


def test_pods_without_a_priority_class_get_the_global_default() -> None:
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "batch"},
          "value": 100, "globalDefault": True}
    _, sim = simulate(pc, gpu_node("n1"), gang("j", replicas=1, resources={"requests": {"cpu": "1"}},
                                               duration="1000h"))
    (pod,) = sim.store.list("Pod")
    assert (pod["spec"]["priorityClassName"], pod["spec"]["priority"], pod["spec"]["preemptionPolicy"]) == (
        "batch", 100, "PreemptLowerPriority")
