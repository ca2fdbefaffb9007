"""deviceshare: GPU-fit predicate, GPU choice recorded at bind, ledger across sessions."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import yaml

from pyvolcano.api.manifest import load_manifest_text
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.framework.arguments import ArgumentError
from pyvolcano.framework.session import open_session
from pyvolcano.plugins.deviceshare import DeviceShare
from pyvolcano.plugins.gpu_session import REASON_MEMORY, REASON_MODEL, REASON_NUMBER, REASON_WHOLE, SessionGpus
from pyvolcano.runtime.cycle import schedule_objects
from pyvolcano.runtime.registry import default_registry

INDEX = "volcano.sh/gpu-index"


def node(name: str, gpus: int = 2, model: str = "", **extra: str) -> dict[str, Any]:
    res = {"cpu": "16", "memory": "64Gi", "pods": "110", **extra}
    if gpus:
        res["nvidia.com/gpu"] = str(gpus)
    labels = {"nvidia.com/gpu.product": model} if model else {}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"capacity": res, "allocatable": res}}


def pod(name: str, *, milli: int | None = None, whole: int = 0, models: str = "", node_name: str = "",
        index: str = "", limits: dict[str, str] | None = None, phase: str = "Pending") -> dict[str, Any]:
    ann = {"scheduling.k8s.io/group-name": f"pg-{name}"}
    if milli is not None:
        ann["pyvolcano.io/gpu-milli"] = str(milli)
    if models:
        ann["pyvolcano.io/gpu-models"] = models
    if index:
        ann[INDEX] = index
    requests = {"cpu": "1", "memory": "1Gi"}
    if whole:
        requests["nvidia.com/gpu"] = str(whole)
    spec: dict[str, Any] = {"schedulerName": "volcano",
                            "containers": [{"name": "main", "resources": {"requests": requests,
                                                                          "limits": limits or {}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns", "annotations": ann},
            "spec": spec, "status": {"phase": phase if not node_name else "Running"}}


def podgroups(*pods: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
             "metadata": {"name": p["metadata"]["annotations"]["scheduling.k8s.io/group-name"], "namespace": "ns"},
             "spec": {"minMember": 1, "queue": "q"}, "status": {"phase": "Inqueue"}} for p in pods]


QUEUE = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"},
         "spec": {"weight": 1}, "status": {"state": "Open"}}


def conf(arguments: dict[str, Any] | None = None, extra: str = "") -> str:
    plugins: list[dict[str, Any]] = [{"name": "predicates"}, {"name": "deviceshare", "arguments": arguments or {}}]
    if extra:
        plugins.append({"name": extra})
    return yaml.safe_dump({"actions": "allocate", "tiers": [{"plugins": [{"name": "gang"}]}, {"plugins": plugins}]})


def cache_of(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> SchedulerCache:
    text = yaml.safe_dump_all([QUEUE, *nodes, *podgroups(*pods), *pods])
    return SchedulerCache.from_objects(load_manifest_text(text, "test.yaml"))


def run(cache: SchedulerCache, config: str, sessions: int = 1) -> dict[str, Any]:
    return schedule_objects(cache, load_scheduler_conf(config), default_registry(), sessions=sessions, seed=0)


def placed(cache: SchedulerCache) -> dict[str, tuple[str, str | None]]:
    return {p.name: (p.node_name, p.annotations.get(INDEX)) for p in cache.pods.values() if p.node_name}


def reason(cache: SchedulerCache, name: str) -> str:
    pod_ = next(p for p in cache.pods.values() if p.name == name)
    return " ".join(c.get("message", "") for c in pod_.conditions)


def test_fractional_pods_share_the_tightest_gpu_and_record_its_index() -> None:
    pods = [pod("gpu-pod-0", milli=600), pod("gpu-pod-1", milli=300), pod("gpu-pod-2", milli=500)]
    cache = cache_of([node("n1")], pods)
    run(cache, conf())
    assert placed(cache) == {"gpu-pod-0": ("n1", "0"), "gpu-pod-1": ("n1", "0"), "gpu-pod-2": ("n1", "1")}


def test_whole_gpu_pod_skips_gpus_partly_used_by_shared_pods() -> None:
    running = pod("shared", milli=100, node_name="a", index="1")
    cache = cache_of([node("a")], [running, pod("whole", whole=2)])
    run(cache, conf())
    assert "whole" not in placed(cache)
    assert REASON_WHOLE in reason(cache, "whole")
    cache = cache_of([node("a"), node("b")], [running, pod("whole", whole=2)])
    run(cache, conf())
    assert placed(cache)["whole"] == ("b", "0,1")


def test_running_pod_without_index_is_counted_on_the_first_fitting_gpu() -> None:
    cache = cache_of([node("a")], [pod("old", milli=500, node_name="a"), pod("new", milli=600)])
    run(cache, conf())
    assert placed(cache)["new"] == ("a", "1")


def test_gpu_state_carries_over_between_sessions() -> None:
    cache = cache_of([node("a", gpus=1)], [pod("first", milli=600)])
    run(cache, conf())
    assert placed(cache)["first"] == ("a", "0")
    extra = load_manifest_text(yaml.safe_dump_all([*podgroups(pod("second", milli=600)), pod("second", milli=600)]),
                               "more.yaml")
    cache.add_podgroup(extra.podgroups[0])
    cache.add_pod(extra.pods[0])
    run(cache, conf())
    assert "second" not in placed(cache)


def test_model_constraint_picks_a_matching_node_or_fails_unresolvably() -> None:
    cache = cache_of([node("t4", model="T4"), node("v100", model="V100M32")],
                     [pod("p", milli=300, models="V100M16|V100M32")])
    run(cache, conf())
    assert placed(cache)["p"][0] == "v100"
    cache = cache_of([node("t4", model="T4")], [pod("p", milli=300, models="V100M32")])
    run(cache, conf())
    assert REASON_MODEL in reason(cache, "p")


def test_memory_shares_are_checked_only_with_gpu_sharing_enabled() -> None:
    mem_node = node("m", gpus=0, **{"volcano.sh/gpu-number": "2", "volcano.sh/gpu-memory": "32000"})
    pods = [pod(f"mem-pod-{i}", limits={"volcano.sh/gpu-memory": "10000"}) for i in range(3)]
    cache = cache_of([mem_node], pods)
    run(cache, conf({"deviceshare.GPUSharingEnable": True}))
    assert placed(cache) == {"mem-pod-0": ("m", "0"), "mem-pod-1": ("m", "1")}
    assert REASON_MEMORY in reason(cache, "mem-pod-2")
    cache = cache_of([mem_node], pods)
    run(cache, conf())
    assert sorted(placed(cache)) == ["mem-pod-0", "mem-pod-1", "mem-pod-2"]
    assert all(index is None for _node, index in placed(cache).values())


def test_gpu_number_needs_cards_nobody_uses() -> None:
    num_node = node("c", gpus=0, **{"volcano.sh/gpu-number": "2", "volcano.sh/gpu-memory": "32000"})
    cache = cache_of([num_node], [pod("share", milli=100, node_name="c", index="1"),
                                  pod("num-pod-0", limits={"volcano.sh/gpu-number": "1"}),
                                  pod("num-pod-1", limits={"volcano.sh/gpu-number": "1"})])
    run(cache, conf({"deviceshare.GPUNumberEnable": True}))
    assert placed(cache)["num-pod-0"] == ("c", "0")
    assert REASON_NUMBER in reason(cache, "num-pod-1")


def test_invalid_share_annotation_keeps_the_pod_pending_with_the_reason() -> None:
    cache = cache_of([node("a")], [pod("bad", milli=1500)])
    run(cache, conf())
    assert not placed(cache)
    assert "pyvolcano.io/gpu-milli" in reason(cache, "bad")


def test_eviction_frees_the_gpu_in_the_session() -> None:
    cache = cache_of([node("a", gpus=1)], [pod("r", milli=800, node_name="a", index="0")])
    config = load_scheduler_conf(conf())
    ssn = open_session(cache, config, default_registry().plugin_factories(config.plugin_names()), now=0.0,
                             rng=np.random.default_rng(0))
    gpus = next(p.session_gpus for _o, p in ssn.plugins if isinstance(p, DeviceShare))
    assert isinstance(gpus, SessionGpus)
    assert gpus.ledger.free[0, 0] == 200
    task = next(iter(cache.tasks.values()))
    ssn.evict(task, "test")
    assert gpus.ledger.free[0, 0] == 1000


@pytest.mark.parametrize(("args", "message"), [
    ({"deviceshare.GPUSharingEnable": True, "deviceshare.GPUNumberEnable": True}, "both gpu sharing and gpu number"),
    ({"deviceshare.VGPUEnable": True}, "deviceshare.VGPUEnable"),
    ({"deviceshare.GPUSharingEnable": "maybe"}, "deviceshare.GPUSharingEnable"),
])
def test_bad_arguments_are_rejected(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ArgumentError, match=message):
        DeviceShare(args)
