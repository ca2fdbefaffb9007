"""resource-strategy-fit: per-resource Least/MostAllocated scores, SRA and the proportional predicate."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import open_session, plugin_conf
from pyvolcano.api.manifest import load_manifest_text
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.framework.arguments import ArgumentError
from pyvolcano.framework.session import Session
from pyvolcano.plugins.resource_strategy_fit import (
    ResourceStrategyFit,
    Strategy,
    find_strategy,
    valid_wildcard_pattern,
)
from pyvolcano.runtime.registry import default_registry

LEAST, MOST = "LeastAllocated", "MostAllocated"


def node(name: str, cpu: str, memory: str, scalars: dict[str, str] | None = None,
         labels: dict[str, str] | None = None, pods: str | None = "10") -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": memory, **({"pods": pods} if pods else {}), **(scalars or {})}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "status": {"capacity": alloc, "allocatable": alloc}}


def pod(name: str, requests: dict[str, str], node_name: str = "",
        annotations: dict[str, str] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "c1",
                     "annotations": {"scheduling.k8s.io/group-name": "pg1", **(annotations or {})}},
        "spec": {"schedulerName": "volcano",
                 "containers": [{"name": "main", "resources": {"requests": requests}}]},
        "status": {"phase": "Running" if node_name else "Pending"},
    }
    if node_name:
        doc["spec"]["nodeName"] = node_name
    return doc


BASE = [
    {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "c1"},
     "spec": {"weight": 1}, "status": {"state": "Open"}},
    {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
     "metadata": {"name": "pg1", "namespace": "c1"},
     "spec": {"minMember": 0, "queue": "c1"}, "status": {"phase": "Inqueue"}},
]


def session(docs: list[dict[str, Any]], arguments: dict[str, Any]) -> Session:
    return open_session(*BASE, *docs, conf=plugin_conf("resource-strategy-fit", arguments))


def scores(ssn: Session, name: str = "p") -> dict[str, float]:
    idx = ssn.all_node_indices()
    got = ssn.node_order_scores(ssn.cache.tasks[f"c1-{name}"], idx)
    return {ssn.node_list[i].name: float(s) for i, s in zip(idx, got)}


def strategies(weight: int, **per: tuple[str, int]) -> dict[str, Any]:
    return {"resourceStrategyFitWeight": weight,
            "resources": {name: {"type": t, "weight": w} for name, (t, w) in per.items()}}


# ----------------------------------------------------------------------------- Score
# Upstream resource_strategy_fit_test.go TestScore: task 100m / 100 bytes, node used 200m / 200 bytes.


def _one_node(cpu: str, memory: str, used: tuple[str, str] = ("200m", "200"),
              request: tuple[str, str] = ("100m", "100"),
              annotations: dict[str, str] | None = None) -> list[dict[str, Any]]:
    req = {k: v for k, v in zip(("cpu", "memory"), request) if v != "0"}
    return [node("n1", cpu, memory), pod("used", {"cpu": used[0], "memory": used[1]}, "n1"),
            pod("p", req, annotations=annotations)]


@pytest.mark.parametrize(("cluster", "arguments", "expected"), [
    (_one_node("500m", "500"), strategies(10, cpu=(LEAST, 1), memory=(LEAST, 1)), 400),
    (_one_node("400m", "400"), strategies(10, cpu=(LEAST, 1), memory=(LEAST, 1)), 250),
    (_one_node("500m", "500"), strategies(10, cpu=(MOST, 1), memory=(MOST, 1)), 600),
    (_one_node("400m", "400"), strategies(10, cpu=(MOST, 1), memory=(MOST, 1)), 750),
    (_one_node("500m", "500"), strategies(10, cpu=(LEAST, 2), memory=(MOST, 1)), 1400 / 3),
    (_one_node("500m", "500"), strategies(10, cpu=(LEAST, 1), memory=(MOST, 2)), 1600 / 3),
    # no cpu requested: cpu is not scored at all
    (_one_node("500m", "500", request=("0", "100")), strategies(10, cpu=(LEAST, 1), memory=(MOST, 2)), 600),
    # cpu allocatable 0: cpu contributes 0 but its weight counts: 1.5 / 3
    (_one_node("0", "400"), strategies(10, cpu=(LEAST, 1), memory=(MOST, 2)), 500),
    (_one_node("500m", "500"), strategies(10, memory=(MOST, 2)), 600),
    (_one_node("500m", "500", used=("500m", "500")), strategies(10, cpu=(LEAST, 1), memory=(LEAST, 1)), 0),
    (_one_node("500m", "500"), strategies(10, cpu=(LEAST, 3), memory=(MOST, 1)), 450),
    (_one_node("500m", "500"), strategies(20, cpu=(LEAST, 5), memory=(LEAST, 5)), 800),
])
def test_score_matches_upstream_hand_computed_values(cluster: list[dict[str, Any]], arguments: dict[str, Any],
                                                     expected: float) -> None:
    assert scores(session(cluster, arguments))["n1"] == pytest.approx(expected, rel=1e-12)


TYPE_KEY, WEIGHT_KEY = "volcano.sh/resource-strategy-scoring-type", "volcano.sh/resource-strategy-weight"


@pytest.mark.parametrize(("pod_type", "pod_weights", "expected"), [
    (LEAST, '{"cpu": 2, "memory": 1}', 400),
    (MOST, '{"cpu": 1, "memory": 2}', 600),
    (LEAST, "invalid-json", 0),
    (LEAST, '{"cpu": 1.5}', 0),
    (LEAST, None, 0),
    (LEAST, '{"cpu": 2}', 400),
    # an unknown type contributes 0 per resource while its weight still divides
    ("Other", '{"cpu": 1}', 0),
])
def test_pod_annotations_replace_the_configured_strategies(pod_type: str, pod_weights: str | None,
                                                           expected: float) -> None:
    annotations = {TYPE_KEY: pod_type, **({} if pod_weights is None else {WEIGHT_KEY: pod_weights})}
    cluster = _one_node("500m", "500", annotations=annotations)
    assert scores(session(cluster, strategies(10, cpu=(MOST, 7))))["n1"] == pytest.approx(expected)


def test_wildcard_strategy_applies_to_matching_scalar_resources() -> None:
    docs = [node("n1", "4", "8Gi", {"example.com/foo": "10"}), pod("used", {"example.com/foo": "5"}, "n1"),
            pod("p", {"cpu": "1", "example.com/foo": "1"})]
    # foo: (1 + 5) / 10 * 2 = 1.2, cpu not configured -> 1.2 / 2 * 1000
    ssn = session(docs, strategies(10, **{"example.com/*": (MOST, 2), "example.*": (LEAST, 9)}))
    assert scores(ssn)["n1"] == pytest.approx(600)


def test_resource_that_does_not_fit_zeroes_the_node() -> None:
    docs = [node("n1", "1", "8Gi"), node("n2", "4", "8Gi"), pod("p", {"cpu": "2", "memory": "1Gi"})]
    got = scores(session(docs, {}))
    assert got["n1"] == 0
    # default strategies: cpu and memory LeastAllocated weight 1: (0.5 + 0.875) / 2 * 1000
    assert got["n2"] == pytest.approx(687.5)


# ----------------------------------------------------------------------------- arguments


def test_argument_defaults_and_normalisation() -> None:
    p = ResourceStrategyFit({})
    assert p.weight == 10
    assert p.strategies == {"cpu": Strategy(LEAST, 1), "memory": Strategy(LEAST, 1)}
    p = ResourceStrategyFit({"resourceStrategyFitWeight": -3, "resources": {
        "cpu": {"type": "Bogus", "weight": 0}, "nvidia.com/gpu/*": {"Type": MOST, "WEIGHT": 3},
        "*": {"type": MOST}, "a*b": {}, "cloudml.gpu**": {}}})
    assert p.weight == 10
    assert p.strategies == {"cpu": Strategy(LEAST, 1), "nvidia.com/gpu/*": Strategy(MOST, 3)}
    assert ResourceStrategyFit({"resourceStrategyFitWeight": 0}).weight == 0


def test_zero_weight_without_sra_registers_no_node_order_function() -> None:
    ssn = session(_one_node("500m", "500"), {"resourceStrategyFitWeight": 0})
    assert not ssn.has("node_order")


def test_malformed_nested_arguments_are_reported() -> None:
    with pytest.raises(ArgumentError, match=r"resources.cpu"):
        ResourceStrategyFit({"resources": {"cpu": "MostAllocated"}})
    with pytest.raises(ArgumentError, match=r"sra"):
        ResourceStrategyFit({"sra": {"enable": True, "weight": "lots"}})


def test_wildcards_and_longest_prefix() -> None:
    patterns = ("cpu", "a/*", "*", "a*b", "a**")
    assert [valid_wildcard_pattern(p) for p in patterns] == [True, True, False, False, False]
    table = {"nvidia.com/*": Strategy(MOST, 1), "nvidia.*": Strategy(LEAST, 2),
             "nvidia.com/gpu": Strategy(LEAST, 3)}
    assert find_strategy("nvidia.com/gpu", table) == Strategy(LEAST, 3)
    assert find_strategy("nvidia.com/mig", table) == Strategy(MOST, 1)
    assert find_strategy("nvidia.io/x", table) == Strategy(LEAST, 2)
    assert find_strategy("amd.com/gpu", table) is None


# ----------------------------------------------------------------------------- SRA


SRA = {"resourceStrategyFitWeight": 0,
       "sra": {"enable": True, "resources": "nvidia.com/gpu", "weight": 10,
               "resourceWeight": {"nvidia.com/gpu": 1}}}


def test_sra_keeps_pods_without_scarce_requests_off_scarce_nodes() -> None:
    docs = [node("gpu", "4", "8Gi", {"nvidia.com/gpu": "4"}), node("cpu", "4", "8Gi"), pod("p", {"cpu": "1"})]
    assert scores(session(docs, SRA)) == {"gpu": 0.0, "cpu": 1000.0}


def test_sra_scores_zero_on_nodes_lacking_a_requested_resource() -> None:
    # the task requests a GPU; the cpu node has none -> 0; the gpu node has it -> (1 - 1/1) -> 0 too
    docs = [node("gpu", "4", "8Gi", {"nvidia.com/gpu": "4"}), node("cpu", "4", "8Gi"),
            pod("p", {"cpu": "1", "nvidia.com/gpu": "1"})]
    assert scores(session(docs, SRA)) == {"gpu": 0.0, "cpu": 0.0}


def test_sra_treats_a_node_without_pods_allocatable_as_lacking_the_pods_request() -> None:
    # Upstream quirk: ResourceNames includes "pods"; a node with no pods allocatable scores 0.
    docs = [node("nopods", "4", "8Gi", pods=None), node("cpu", "4", "8Gi"), pod("p", {"cpu": "1"})]
    assert scores(session(docs, SRA)) == {"nopods": 0.0, "cpu": 1000.0}


def test_sra_disabled_or_zero_weight_scores_nothing() -> None:
    docs = [node("gpu", "4", "8Gi", {"nvidia.com/gpu": "4"}), pod("p", {"cpu": "1"})]
    assert not session(docs, {**SRA, "sra": {**SRA["sra"], "enable": False}}).has("node_order")
    assert not session(docs, {**SRA, "sra": {**SRA["sra"], "weight": 0}}).has("node_order")


# ----------------------------------------------------------------------------- proportional


PROPORTIONAL = {"proportional": {"enable": True, "resources": "nvidia.com/gpu",
                                 "resourceProportion": {"nvidia.com/gpu.cpu": 2, "nvidia.com/gpu.memory": 4}}}


@pytest.mark.parametrize(("requests", "rejected"), [
    # idle gpu 2 reserves 4 cpu and 8G memory: 8 - 5 < 4 -> rejected
    ({"cpu": "5", "memory": "1G"}, True),
    ({"cpu": "4", "memory": "8G"}, False),
    ({"cpu": "1", "memory": "9G"}, True),
    # a task that asks for the scarce resource is never held back
    ({"cpu": "7", "memory": "1G", "nvidia.com/gpu": "1"}, False),
])
def test_proportional_predicate_reserves_cpu_and_memory_per_idle_scarce_unit(requests: dict[str, str],
                                                                             rejected: bool) -> None:
    docs = [node("gpu", "8", "16G", {"nvidia.com/gpu": "2"}), node("cpu", "8", "16G"), pod("p", requests)]
    ssn = session(docs, {**PROPORTIONAL, "resourceStrategyFitWeight": 0})
    ok, groups = ssn.predicate_failures(ssn.cache.tasks["c1-p"], ssn.all_node_indices())
    assert ok.tolist() == [not rejected, True]
    if rejected:
        assert [(g[0].code.name, g[0].reason) for g in groups] == [
            ("UnschedulableAndUnresolvable", "proportional of resource nvidia.com/gpu check failed")]


def test_proportional_predicate_end_to_end_keeps_a_cpu_job_off_the_gpu_node() -> None:
    from pyvolcano.runtime.cycle import schedule_objects

    docs = [node("gpu", "8", "16G", {"nvidia.com/gpu": "2"}), pod("p", {"cpu": "5"})]
    cache = SchedulerCache.from_objects(load_manifest_text(yaml.safe_dump_all([*BASE, *docs]), "t.yaml"))
    config = load_scheduler_conf(yaml.safe_dump({"actions": "allocate", "tiers": [{"plugins": [
        {"name": "gang"}, {"name": "resource-strategy-fit", "arguments": PROPORTIONAL}]}]}))
    assert schedule_objects(cache, config, default_registry(), sessions=1, seed=0)["binds"] == {}


# ----------------------------------------------------------------------------- property


def _reference(ssn: Session, uid: str, p: ResourceStrategyFit) -> dict[str, float]:
    """A direct per-node transcription of upstream ``Score``."""
    task = ssn.cache.tasks[uid]
    annotations = task.pod.annotations
    out = {}
    for n in ssn.node_list:
        allocatable, used = n.allocatable, n.used
        score, weight_sum, fits = 0.0, 0, True
        pod_type = annotations.get("volcano.sh/resource-strategy-scoring-type", "")
        pod_weights = json.loads(annotations.get("volcano.sh/resource-strategy-weight", "{}"))
        for name in task.resreq.resource_names():
            if pod_type:
                if name not in pod_weights:
                    continue
                kind, w = pod_type, pod_weights[name]
            else:
                s = find_strategy(name, p.strategies)
                if s is None:
                    continue
                kind, w = s.type, s.weight
            request, cap = task.resreq.get(name), allocatable.get(name)
            term = 0.0
            if kind in (LEAST, MOST) and w != 0 and cap != 0:
                final = request + used.get(name)
                if final > cap:
                    fits = False
                    break
                term = (final if kind == MOST else cap - final) * w / cap
            score += term
            weight_sum += w
        if weight_sum > 0:
            score /= weight_sum
        out[n.name] = score * 100 * p.weight if fits else 0.0
    return out


req_st = st.fixed_dictionaries({}, optional={
    "cpu": st.integers(0, 3000).map(lambda m: f"{m}m"), "memory": st.integers(0, 6).map(lambda g: f"{g}Gi"),
    "nvidia.com/gpu": st.integers(0, 3).map(str)})
gpu_st = st.one_of(st.none(), st.integers(0, 4))
strategy_st = st.tuples(st.sampled_from([LEAST, MOST, "Other"]), st.integers(-1, 4))


@settings(max_examples=60, deadline=None)
@given(nodes=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 8), gpu_st), min_size=1, max_size=4),
       running=st.lists(st.tuples(req_st, st.integers(0, 3)), max_size=6), incoming=req_st,
       config=st.dictionaries(st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "nvidia.com/*", "pods"]),
                              strategy_st, max_size=4),
       pod_level=st.one_of(st.none(), st.tuples(
           st.sampled_from([LEAST, MOST, "Other"]),
           st.dictionaries(st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), st.integers(-2, 4)))),
       weight=st.integers(1, 20))
def test_vectorised_scores_equal_a_per_node_reference(nodes: list[tuple[int, int, int | None]],
                                                      running: list[tuple[dict[str, str], int]],
                                                      incoming: dict[str, str],
                                                      config: dict[str, tuple[str, int]],
                                                      pod_level: tuple[str, dict[str, int]] | None,
                                                      weight: int) -> None:
    docs = [node(f"n{i}", str(c), f"{m}Gi", None if g is None else {"nvidia.com/gpu": str(g)})
            for i, (c, m, g) in enumerate(nodes)]
    docs += [pod(f"r{j}", req, f"n{at % len(nodes)}") for j, (req, at) in enumerate(running)]
    annotations = None if pod_level is None else {
        "volcano.sh/resource-strategy-scoring-type": pod_level[0],
        "volcano.sh/resource-strategy-weight": json.dumps(pod_level[1])}
    docs.append(pod("p", incoming, annotations=annotations))
    arguments = {"resourceStrategyFitWeight": weight,
                 "resources": {k: {"type": t, "weight": w} for k, (t, w) in config.items()}}
    ssn = session(docs, arguments)
    expected = _reference(ssn, "c1-p", ResourceStrategyFit(arguments))
    assert scores(ssn) == pytest.approx(expected, rel=1e-12, abs=1e-12)
