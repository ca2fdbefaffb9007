"""binpack: weighted fill ratio of the requested resources, zero when anything does not fit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import open_session, plugin_conf
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.framework import session as framework_session
from pyvolcano.framework.arguments import ArgumentError, Arguments
from pyvolcano.framework.session import Session
from pyvolcano.plugins.binpack import Binpack, resource_weights
from pyvolcano.runtime.registry import default_registry


def node(name: str, cpu: str, memory: str, scalars: dict[str, str] | None = None) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": memory, "pods": "10", **(scalars or {})}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"capacity": alloc, "allocatable": alloc}}


def pod(name: str, requests: dict[str, str], node_name: str = "", phase: str = "Pending") -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "c1", "annotations": {"scheduling.k8s.io/group-name": "pg1"}},
        "spec": {"schedulerName": "volcano",
                 "containers": [{"name": "main", "resources": {"requests": requests}}]},
        "status": {"phase": phase},
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
    return open_session(*BASE, *docs, conf=plugin_conf("binpack", arguments))


def scores(ssn: Session, pod_uid: str) -> dict[str, float]:
    idx = ssn.all_node_indices()
    got = ssn.node_order_scores(ssn.cache.tasks[pod_uid], idx)
    return {ssn.node_list[i].name: float(s) for i, s in zip(idx, got)}


# Upstream binpack_test.go TestNode: p1 is bound to n1 and p2 to n3 (their own requests count as used).
CLUSTER = [
    node("n1", "2", "4Gi"), node("n2", "4", "16Gi", {"nvidia.com/gpu": "4"}),
    node("n3", "2", "4Gi", {"example.com/foo": "16"}),
    pod("p1", {"cpu": "1", "memory": "1Gi"}, "n1"), pod("p2", {"cpu": "1.5", "memory": "0Gi"}, "n3"),
    pod("p3", {"cpu": "2", "memory": "10Gi", "nvidia.com/gpu": "2"}),
    pod("p4", {"cpu": "3", "memory": "4Gi", "example.com/foo": "3"}),
]


@pytest.mark.parametrize(("arguments", "expected"), [
    ({"binpack.weight": 10, "binpack.cpu": 2, "binpack.memory": 3,
      "binpack.resources": "nvidia.com/gpu, example.com/foo",
      "binpack.resources.nvidia.com/gpu": 7, "binpack.resources.example.com/foo": 8},
     {"c1-p1": {"n1": 700, "n2": 137.5, "n3": 0},
      "c1-p2": {"n1": 0, "n2": 375, "n3": 0},
      "c1-p3": {"n1": 0, "n2": 531.25, "n3": 0},
      # foo: n2 has none (term 0, weight 8 still counts): (1.5 + 0.75) / 13 * 1000
      "c1-p4": {"n1": 0, "n2": 173.076923076923, "n3": 0}}),
    ({"binpack.weight": 1, "binpack.cpu": 1, "binpack.memory": 1, "binpack.resources": "nvidia.com/gpu",
      "binpack.resources.nvidia.com/gpu": 23},
     {"c1-p1": {"n1": 75, "n2": 15.625, "n3": 0},
      "c1-p2": {"n1": 0, "n2": 37.5, "n3": 0},
      "c1-p3": {"n1": 0, "n2": 50.5, "n3": 0},
      "c1-p4": {"n1": 0, "n2": 50, "n3": 0}}),
])
def test_binpack_scores_match_upstream_hand_computed_values(arguments: dict[str, Any],
                                                            expected: dict[str, dict[str, float]]) -> None:
    ssn = session(CLUSTER, arguments)
    for uid, want in expected.items():
        assert scores(ssn, uid) == pytest.approx(want, rel=1e-12, abs=1e-12), uid


def test_zero_weight_registers_no_node_order_function() -> None:
    assert not session(CLUSTER, {"binpack.weight": 0}).has("node_order")


def test_negative_weight_scales_scores_negatively() -> None:
    ssn = session(CLUSTER, {"binpack.weight": -1})
    assert scores(ssn, "c1-p1")["n1"] == pytest.approx(-75.0)


def test_resource_weights_defaults_negatives_and_cpu_memory_override() -> None:
    def weights(raw: dict[str, Any]) -> dict[str, int]:
        return resource_weights(Arguments(raw, owner="plugin binpack"))

    assert weights({}) == {"cpu": 1, "memory": 1}
    assert weights({"binpack.cpu": -5, "binpack.memory": 0, "binpack.resources": " a/b ,, c/d ",
                    "binpack.resources.a/b": -2}) == {"a/b": 1, "c/d": 1, "cpu": 1, "memory": 0}
    assert weights({"binpack.resources": "cpu", "binpack.resources.cpu": 9, "binpack.cpu": 2})["cpu"] == 2


def test_malformed_weight_is_reported_with_the_key() -> None:
    with pytest.raises(ArgumentError, match=r"plugin binpack: argument binpack.weight"):
        Binpack({"binpack.weight": "heavy"})


def test_pods_resource_is_scored_only_when_configured() -> None:
    # pods: n1 allocatable 10, p1 already counted in used: (1 + 1) / 10 = 0.2 with weight 10
    ssn = session(CLUSTER, {"binpack.resources": "pods", "binpack.resources.pods": 10})
    # cpu 1 + memory 0.5 + pods 0.2 * 10 = 3.5 over weights 12 -> 29.1666
    assert scores(ssn, "c1-p1")["n1"] == pytest.approx(3.5 / 12 * 100)


# ----------------------------------------------------------------------------- property


def _reference(ssn: Session, uid: str, weights: dict[str, int], binpack_weight: int) -> dict[str, float]:
    """A direct per-node transcription of upstream ``BinPackingScore``."""
    task = ssn.cache.tasks[uid]
    out = {}
    for n in ssn.node_list:
        allocatable, used = n.allocatable, n.used
        score, weight_sum, fits = 0.0, 0, True
        for name in task.resreq.resource_names():
            if name not in weights:
                continue
            request, cap, w = task.resreq.get(name), allocatable.get(name), weights[name]
            if cap != 0 and w != 0:
                if request + used.get(name) > cap:
                    fits = False
                    break
                score += (request + used.get(name)) * w / cap
            weight_sum += w
        if weight_sum > 0:
            score /= weight_sum
        out[n.name] = score * 100 * binpack_weight if fits else 0.0
    return out


req_st = st.fixed_dictionaries({}, optional={
    "cpu": st.integers(0, 3000).map(lambda m: f"{m}m"), "memory": st.integers(0, 6).map(lambda g: f"{g}Gi"),
    "nvidia.com/gpu": st.integers(0, 3).map(str)})
gpu_st = st.one_of(st.none(), st.integers(0, 4))


@settings(max_examples=60, deadline=None)
@given(nodes=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 8), gpu_st), min_size=1, max_size=4),
       running=st.lists(st.tuples(req_st, st.integers(0, 3)), max_size=6), incoming=req_st,
       w=st.tuples(st.integers(-2, 5), st.integers(-2, 5), st.integers(-2, 5), st.integers(-3, 3)))
def test_vectorised_scores_equal_a_per_node_reference(nodes: list[tuple[int, int, int | None]],
                                                      running: list[tuple[dict[str, str], int]],
                                                      incoming: dict[str, str],
                                                      w: tuple[int, int, int, int]) -> None:
    docs = [node(f"n{i}", str(c), f"{m}Gi", None if g is None else {"nvidia.com/gpu": str(g)})
            for i, (c, m, g) in enumerate(nodes)]
    docs += [pod(f"r{j}", req, f"n{at % len(nodes)}", "Running") for j, (req, at) in enumerate(running)]
    docs.append(pod("p", incoming))
    cpu, mem, gpu, bw = w
    arguments = {"binpack.weight": bw, "binpack.cpu": cpu, "binpack.memory": mem,
                 "binpack.resources": "nvidia.com/gpu", "binpack.resources.nvidia.com/gpu": gpu}
    ssn = session(docs, arguments)
    if bw == 0:
        assert not ssn.has("node_order")
        return
    weights = resource_weights(Arguments(arguments, owner="test"))
    assert scores(ssn, "c1-p") == pytest.approx(_reference(ssn, "c1-p", weights, bw), rel=1e-12, abs=1e-12)


def test_few_node_scalar_path_scores_exactly_like_the_vectorised_kernel() -> None:

    from builders import cache_of, node, pod, podgroup, queue

    docs = [queue("q"), podgroup("pg", min_member=1)]
    for i, (c, m) in enumerate([(4, 8), (16, 64), (2, 3), (32, 128), (8, 8), (1, 1)]):
        docs.append(node(f"n{i}", cpu=str(c), memory=f"{m}Gi", nvidia_com__gpu=str(i)))
        docs.append(pod(f"r-{i}", "pg", cpu=f"{300 * i}m", memory=f"{700 * i}Mi", node_name=f"n{i}", phase="Running"))
    docs.append(pod("p-0", "pg", cpu="1500m", memory="3Gi"))
    cache = cache_of(*docs)
    config = load_scheduler_conf("actions: allocate\ntiers:\n- plugins:\n  - name: binpack\n")
    ssn = framework_session.open_session(cache, config, default_registry().plugin_factories(["binpack"]), now=0.0,
                             rng=np.random.default_rng(0))
    task = next(t for t in cache.tasks.values() if t.name == "p-0")
    fn = ssn._callbacks["node_order"]["binpack"]
    idx = np.arange(6, dtype=np.int64)
    one_by_one = np.concatenate([fn(task, idx[k:k + 1]) for k in range(6)])
    assert np.array_equal(one_by_one, fn(task, idx))
