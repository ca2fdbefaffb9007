"""GPU placement policy plugins in scheduling sessions: node choice and GPU choice."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from pyvolcano.api.manifest import load_manifest_text
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.framework.arguments import ArgumentError
from pyvolcano.gpu.policies import POLICIES
from pyvolcano.plugins.gpu_policies import Fgd, policy_factory
from pyvolcano.runtime.cycle import schedule_objects
from pyvolcano.runtime.registry import default_registry

INDEX = "volcano.sh/gpu-index"


def node(name: str, gpus: int = 2) -> dict[str, Any]:
    res = {"cpu": "8", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"capacity": res, "allocatable": res}}


def pod(name: str, *, milli: int | None = None, whole: int = 0, node_name: str = "", index: str = "") -> dict[str, Any]:
    ann = {"scheduling.k8s.io/group-name": f"pg-{name}"}
    if milli is not None:
        ann["pyvolcano.io/gpu-milli"] = str(milli)
    if index:
        ann[INDEX] = index
    requests = {"cpu": "1", "memory": "1Gi"}
    if whole:
        requests["nvidia.com/gpu"] = str(whole)
    spec: dict[str, Any] = {"schedulerName": "volcano",
                            "containers": [{"name": "main", "resources": {"requests": requests}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns", "annotations": ann},
            "spec": spec, "status": {"phase": "Running" if node_name else "Pending"}}


def cache_of(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> SchedulerCache:
    groups = [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
               "metadata": {"name": f"pg-{p['metadata']['name']}", "namespace": "ns"},
               "spec": {"minMember": 1, "queue": "q"}, "status": {"phase": "Inqueue"}} for p in pods]
    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"},
             "spec": {"weight": 1}, "status": {"state": "Open"}}
    return SchedulerCache.from_objects(load_manifest_text(yaml.safe_dump_all([queue, *nodes, *groups, *pods]), "t"))


def conf(*policies: tuple[str, dict[str, Any]], deviceshare: bool = True) -> str:
    plugins: list[dict[str, Any]] = [{"name": "predicates"}]
    if deviceshare:
        plugins.append({"name": "deviceshare"})
    plugins += [{"name": name, "arguments": args} for name, args in policies]
    return yaml.safe_dump({"actions": "allocate", "tiers": [{"plugins": plugins}]})


def placement(cache: SchedulerCache, config: str, name: str, seed: int = 0) -> tuple[str, str | None]:
    schedule_objects(cache, load_scheduler_conf(config), default_registry(), sessions=1, seed=seed)
    p = next(p for p in cache.pods.values() if p.name == name)
    return p.node_name, p.annotations.get(INDEX)


def fgd_vs_bestfit_cluster() -> SchedulerCache:
    # x: GPU0 holds 700 (free [300, 1000]); y: GPU0 holds 500 (free [500, 1000]).
    # Typical pods (every pod known): 500-milli pods weight 2, the 700-milli pod weight 1.
    return cache_of([node("x"), node("y")], [
        pod("r700", milli=700, node_name="x", index="0"),
        pod("r500", milli=500, node_name="y", index="0"),
        pod("new", milli=500),
    ])


def test_fgd_fills_the_gpu_that_leaves_no_fragment() -> None:
    # On y GPU0 the new pod leaves [0, 1000]: F drops from 166.7 to 0 (score 54); on x GPU1
    # it leaves [300, 500] where no 700 pod fits any more (F 300 → 466.7, score 45).
    assert placement(fgd_vs_bestfit_cluster(), conf(("fgd", {})), "new") == ("y", "0")


def test_bestfit_takes_the_node_with_least_free_gpu() -> None:
    assert placement(fgd_vs_bestfit_cluster(), conf(("bestfit", {})), "new") == ("x", "1")


def test_gpupacking_prefers_an_already_shared_gpu() -> None:
    cache = cache_of([node("empty"), node("used")], [pod("r", milli=500, node_name="used", index="1"),
                                                     pod("new", milli=300)])
    assert placement(cache, conf(("gpupacking", {})), "new") == ("used", "1")


def test_gpuclustering_keeps_shared_pods_together() -> None:
    cache = cache_of([node("whole1", 4), node("share1", 4)], [
        pod("w", whole=1, node_name="whole1", index="0"),
        pod("s", milli=1000 - 1, node_name="share1", index="0"),
        pod("new", milli=200)])
    assert placement(cache, conf(("gpuclustering", {})), "new")[0] == "share1"


def test_dotprod_prefers_the_node_with_less_free_resources() -> None:
    cache = cache_of([node("big", 8), node("small", 2)], [pod("new", whole=1)])
    assert placement(cache, conf(("dotprod", {})), "new") == ("small", "0")


def test_random_spreads_over_feasible_nodes_with_the_session_rng() -> None:
    seen = set()
    for seed in range(12):
        cache = cache_of([node("a"), node("b"), node("c")], [pod("new", milli=400)])
        where, index = placement(cache, conf(("random", {})), "new", seed=seed)
        seen.add(where)
        assert index in ("0", "1")
    assert seen == {"a", "b", "c"}


@pytest.mark.parametrize(("tie_break", "distinct"), [("ordered", 1), ("random", 3)])
def test_ties_go_to_a_fixed_node_unless_random(tie_break: str, distinct: int) -> None:
    # A CPU-only pod changes no node's fragmentation: FGD scores 50 on every node.
    seen = set()
    for seed in range(12):
        cache = cache_of([node("a"), node("b"), node("c")], [pod("cpu")])
        seen.add(placement(cache, conf(("fgd", {"fgd.tieBreak": tie_break})), "cpu", seed=seed)[0])
    assert len(seen) == distinct


def test_the_heaviest_policy_chooses_the_gpu() -> None:
    config = conf(("bestfit", {"bestfit.weight": 1}), ("fgd", {"fgd.weight": 10}))
    assert placement(fgd_vs_bestfit_cluster(), config, "new") == ("y", "0")


def test_policy_checks_gpu_fit_itself_without_deviceshare() -> None:
    cache = cache_of([node("a", 1)], [pod("r", milli=500, node_name="a", index="0"), pod("new", milli=600)])
    assert placement(cache, conf(("bestfit", {}), deviceshare=False), "new") == ("", None)


@pytest.mark.parametrize("name", POLICIES)
def test_every_policy_runs_in_a_session_without_overcommitting(name: str) -> None:
    pods = [pod(f"p-{i}", milli=m) for i, m in enumerate([300, 700, 450, 550, 200, 800, 1000, 250])]
    cache = cache_of([node("a"), node("b", 4)], [*pods, pod("w", whole=2)])
    schedule_objects(cache, load_scheduler_conf(conf((name, {}))), default_registry(), sessions=2, seed=1)
    used: dict[tuple[str, int], int] = {}
    for p in cache.pods.values():
        if not p.node_name:
            continue
        milli = int(p.annotations.get("pyvolcano.io/gpu-milli", "1000"))
        for g in p.annotations[INDEX].split(","):
            used[(p.node_name, int(g))] = used.get((p.node_name, int(g)), 0) + milli
    assert used and max(used.values()) <= 1000


def test_registry_names_and_arguments() -> None:
    registry = default_registry()
    for name in POLICIES:
        assert registry.plugin(name)({}).name == name
        assert policy_factory(name)({}).name == name
    with pytest.raises(ArgumentError, match=r"fgd\.popularityThreshold"):
        Fgd({"fgd.popularityThreshold": 0})
    with pytest.raises(ArgumentError, match=r"fgd\.tieBreak"):
        Fgd({"fgd.tieBreak": "first"})
    with pytest.raises(ArgumentError, match=r"bestfit\.weight"):
        registry.plugin("bestfit")({"bestfit.weight": "heavy"})
