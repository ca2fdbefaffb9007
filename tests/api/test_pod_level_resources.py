"""Pod-level resources (``spec.resources``, Kubernetes' PodLevelResources): the API server's
defaulting, and the task request upstream Volcano's ``GetPodResourceRequest`` computes from them
(``pkg/scheduler/api/pod_info.go`` at the pinned commit, whose ``pod_info_test.go`` cases are
reproduced here)."""

from __future__ import annotations

from typing import Any

from builders import node, pod, podgroup, queue, schedule
from pyvolcano.api.defaults import default_pod
from pyvolcano.api.manifest import parse_object
from pyvolcano.api.task import TaskInfo, pod_nonzero_request, pod_resource_request
from pyvolcano.api.task_template import template_signature
from pyvolcano.controllers._resources import format_list, pod_quota_usage

MI = 1024 * 1024


def sidecar_pod(resources: dict[str, Any] | None = None, overhead: dict[str, Any] | None = None) -> dict[str, Any]:
    """Upstream's "restartable-init, init and regular containers" pod (cores, not millicores)."""
    spec: dict[str, Any] = {
        "initContainers": [
            {"name": "restartable-init-1", "restartPolicy": "Always", "resources": {"requests": {"cpu": "10"}}},
            {"name": "init-1", "resources": {"requests": {"cpu": "200"}}}],
        "containers": [{"name": "container-1", "resources": {"requests": {"cpu": "100"}}}],
    }
    if resources is not None:
        spec["resources"] = resources
    if overhead is not None:
        spec["overhead"] = overhead
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": spec}


def test_without_pod_level_resources_the_containers_decide() -> None:
    r = pod_resource_request(parse_object(sidecar_pod()))
    assert (r.milli_cpu, r.memory, r.scalars) == (210_000, 0, {"pods": 1})


def test_pod_level_requests_replace_the_containers_cpu_memory_and_hugepages() -> None:
    r = pod_resource_request(parse_object(sidecar_pod({"requests": {
        "cpu": "250", "memory": "100Mi", "hugepages-1Mi": "2Gi", "hugepages-1Ki": "2Gi"}})))
    assert (r.milli_cpu, r.memory) == (250_000, 100 * MI)
    assert r.scalars == {"pods": 1, "hugepages-1Mi": 2048 * MI * 1000, "hugepages-1Ki": 2048 * MI * 1000}


def test_overhead_is_added_to_pod_level_requests() -> None:
    r = pod_resource_request(parse_object(sidecar_pod({"requests": {"cpu": "250", "memory": "100Mi"}},
                                                      overhead={"cpu": "250", "memory": "100Mi"})))
    assert (r.milli_cpu, r.memory, r.scalars) == (500_000, 200 * MI, {"pods": 1})


def test_a_resource_pod_level_requests_leave_out_comes_from_the_containers() -> None:
    doc = pod("p", "g", cpu="1", memory="1Gi", resources={"requests": {"cpu": "3"}})
    r = pod_resource_request(parse_object(doc))
    assert (r.milli_cpu, r.memory) == (3000, 1024 * MI)


def test_pod_level_limits_default_the_pod_level_requests_as_the_api_server_does() -> None:
    doc = pod("p", "g", cpu="500m", memory=None, resources={"limits": {"cpu": "2", "memory": "4Gi"}})
    default_pod(doc)
    # cpu: the containers request some, so their aggregate; memory: none do, so the limit.
    assert doc["spec"]["resources"]["requests"] == {"cpu": "500m", "memory": "4Gi"}
    read = parse_object(pod("p", "g", cpu="500m", memory=None, resources={"limits": {"cpu": "2", "memory": "4Gi"}}))
    assert read.pod_requests == {"cpu": "500m", "memory": "4Gi"}


def test_the_non_zero_request_kube_schedulers_scores_use_takes_pod_level_cpu_and_memory() -> None:
    p = parse_object(pod("p", "g", cpu=None, memory=None, resources={"requests": {"cpu": "2"}}))
    cpu, mem = pod_nonzero_request(p, pod_resource_request(p))
    assert (cpu, mem) == (2000, 200 * MI)  # memory: kube-scheduler's 200Mi for a container without one


def test_a_pod_level_request_decides_where_the_pod_fits() -> None:
    big = pod("big", "g", cpu="1", memory="1Gi", resources={"requests": {"cpu": "3"}})
    result = schedule(queue("q"), node("small", cpu="2"), node("large", cpu="4"), podgroup("g"), big)
    assert result["binds"] == {"ns/big": "large"}


def test_replicas_with_different_pod_level_requests_are_not_one_template() -> None:
    a = parse_object(pod("a-0", "g", resources={"requests": {"cpu": "2"}}))
    b = parse_object(pod("a-1", "g", resources={"requests": {"cpu": "3"}}))
    ta, tb = TaskInfo(a), TaskInfo(b)
    assert template_signature(ta) != template_signature(tb)


def test_a_podgroups_min_resources_count_pod_level_requests_as_the_quota_evaluator_does() -> None:
    doc = pod("p", "g", cpu="1", memory="1Gi", resources={"requests": {"cpu": "3"}, "limits": {"cpu": "4"}})
    usage = format_list(pod_quota_usage(doc))
    assert (usage["cpu"], usage["requests.cpu"], usage["limits.cpu"], usage["memory"]) == ("3", "3", "4", "1Gi")
