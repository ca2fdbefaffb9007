"""Dynamic resource allocation in the simulator: the GPU driver's slices, claims from templates,
allocation written before the bind, release when the pods finish."""

from __future__ import annotations

from typing import Any

from builders import device_class
from sim_builders import simulate


def _gpu_node(name: str, gpus: int = 4) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  "nvidia.com/gpu.product": "H100-SXM5-80GB"}},
            "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}}}


def _template(name: str, count: int) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [
                {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": count}}]}}}}


def _job(name: str, replicas: int, template: str, duration: str = "60s") -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulerName": "volcano", "minAvailable": replicas, "tasks": [{
                "name": "w", "replicas": replicas, "template": {
                    "metadata": {"annotations": {"pyvolcano.io/duration": duration}},
                    "spec": {"restartPolicy": "Never",
                             "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"},
                                                                        "claims": [{"name": "gpus"}]}}],
                             "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": template}]}}}]}}


def test_claims_are_allocated_on_the_pods_node_before_the_bind_and_released_after() -> None:
    seen: list[dict[str, Any]] = []
    objs = [(0.0, device_class("gpu.nvidia.com", "gpu.nvidia.com")), (0.0, _gpu_node("g1")), (0.0, _gpu_node("g2")),
            (0.0, _template("two", 2)), (1.0, _job("a", 3, "two"))]
    _res, sim = simulate(objs, until=30.0)
    for claim in sim.store.list("ResourceClaim"):
        seen.append(claim)
    assert len(seen) == 3
    pods = {p["metadata"]["name"]: p for p in sim.store.list("Pod")}
    devices: set[tuple[str, str]] = set()
    for claim in seen:
        owner = claim["metadata"]["ownerReferences"][0]["name"]
        node = pods[owner]["spec"]["nodeName"]
        allocation = claim["status"]["allocation"]
        assert allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [node]
        assert [r["uid"] for r in claim["status"]["reservedFor"]] == [pods[owner]["metadata"]["uid"]]
        for r in allocation["devices"]["results"]:
            assert r["pool"] == node
            devices.add((r["pool"], r["device"]))
        assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]
    assert len(devices) == 6  # no device given twice
    # the pods finish: their claims are released and deleted
    _res, sim2 = simulate(objs, until=600.0)
    assert sim2.store.list("ResourceClaim") == []


def test_job_that_needs_more_devices_than_free_waits_for_release() -> None:
    objs = [(0.0, device_class("gpu.nvidia.com", "gpu.nvidia.com")), (0.0, _gpu_node("g1")),
            (0.0, _template("four", 4)), (1.0, _job("first", 1, "four", "100s")),
            (2.0, _job("second", 1, "four", "100s"))]
    _res, sim = simulate(objs)
    first, second = sim.jobs["default/first"], sim.jobs["default/second"]
    assert first.started is not None and second.started is not None
    assert second.started >= first.started + 100
