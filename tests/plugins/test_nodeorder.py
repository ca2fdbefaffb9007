"""nodeorder: kube-scheduler scorers with Volcano's weights, integer rounding and normalisation."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from pyvolcano.api.manifest import load_manifest_text
from pyvolcano.api.matching import count_intolerable_prefer_no_schedule, preferred_node_affinity_score
from pyvolcano.api.quantity import milli_value, value
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.framework.session import Session, open_session
from pyvolcano.runtime.cycle import schedule_objects
from pyvolcano.runtime.registry import default_registry

GI = 1024**3
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
ALL_ZERO = {"leastrequested.weight": 0, "mostrequested.weight": 0, "balancedresource.weight": 0,
            "nodeaffinity.weight": 0, "podaffinity.weight": 0, "tainttoleration.weight": 0,
            "imagelocality.weight": 0, "podtopologyspread.weight": 0}


# ----------------------------------------------------------------------------- scenario helpers


def node(name: str, cpu: str = "2", memory: str = "4Gi", *, labels: dict[str, str] | None = None,
         taints: list[dict[str, str]] | None = None, gpu: str | None = None) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": memory, "pods": "110"}
    if gpu is not None:
        alloc["nvidia.com/gpu"] = gpu
    doc: dict[str, Any] = {"apiVersion": "v1", "kind": "Node",
                           "metadata": {"name": name, "labels": labels or {}},
                           "status": {"capacity": alloc, "allocatable": alloc}}
    if taints:
        doc["spec"] = {"taints": taints}
    return doc


def pod(name: str, requests: dict[str, str] | None = None, *, node_name: str = "", phase: str = "",
        labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "labels": labels or {},
                     "annotations": {"scheduling.k8s.io/group-name": "pg"}},
        "spec": {"schedulerName": "volcano",
                 "containers": [{"name": "main", "resources": {"requests": requests or {}}}], **spec},
        "status": {"phase": phase or ("Running" if node_name else "Pending")},
    }
    if node_name:
        doc["spec"]["nodeName"] = node_name
    return doc


BASE = [
    {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"},
     "spec": {"weight": 1}, "status": {"state": "Open"}},
    {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
     "metadata": {"name": "pg", "namespace": "ns"},
     "spec": {"minMember": 1, "queue": "q"}, "status": {"phase": "Inqueue"}},
]


def conf(plugins: str = "nodeorder", **weights: int) -> str:
    args = {**ALL_ZERO, **{k.replace("_", "."): v for k, v in weights.items()}}
    return yaml.safe_dump({"actions": "allocate", "tiers": [{"plugins": [
        {"name": "gang"}, {"name": "predicates"},
        *[{"name": p, "arguments": args} for p in plugins.split(",")]]}]})


def session(docs: list[dict[str, Any]], conf_text: str) -> tuple[SchedulerCache, Session]:
    text = yaml.safe_dump_all([*BASE, *docs])
    cache = SchedulerCache.from_objects(load_manifest_text(text, "test.yaml"))
    config = load_scheduler_conf(conf_text)
    ssn = open_session(cache, config, default_registry().plugin_factories(config.plugin_names()), now=0.0,
                             rng=np.random.default_rng(0))
    return cache, ssn


def scores(ssn: Session, pod_name: str, nodes: list[str] | None = None) -> dict[str, float]:
    task = ssn.cache.tasks[f"ns-{pod_name}"]
    names = nodes or [n.name for n in ssn.node_list]
    idx = np.array([ssn.nodes[n].index for n in names], dtype=np.int64)
    return dict(zip(names, ssn.node_order_scores(task, idx).tolist()))


# ----------------------------------------------------------------------------- arguments


def test_all_weights_zero_registers_no_node_order_function() -> None:
    _cache, ssn = session([node("n1"), pod("p", {"cpu": "1"})], conf())
    assert not ssn.has("node_order")


def test_default_weights_match_upstream() -> None:
    from pyvolcano.plugins._node_scorers import Weights

    w = Weights.from_arguments({})
    assert (w.least_requested, w.most_requested, w.balanced_resource, w.node_affinity, w.pod_affinity,
            w.taint_toleration, w.image_locality, w.pod_topology_spread) == (1, 0, 1, 2, 2, 3, 1, 2)


def test_image_locality_weight_alone_scores_zero_without_node_images() -> None:
    _cache, ssn = session([node("n1"), node("n2"), pod("p", {"cpu": "1"})], conf(imagelocality_weight=5))
    assert not ssn.has("node_order")


# ----------------------------------------------------------------------------- NodeResourcesFit


def test_least_allocated_truncates_each_resource_then_the_weighted_mean() -> None:
    # n1: cpu (2000-1000)*100/2000 = 50, memory (4Gi-1e9)*100/4Gi = 76.7 -> 76, (50*50+76*50)/100 = 63
    # n2: cpu 75, memory (8Gi-1e9)*100/8Gi = 88.3 -> 88, (75*50+88*50)/100 = 81.5 -> 81
    docs = [node("n1", "2", "4Gi"), node("n2", "4", "8Gi"), pod("p", {"cpu": "1", "memory": "1G"})]
    _cache, ssn = session(docs, conf(leastrequested_weight=1))
    assert scores(ssn, "p") == {"n1": 63.0, "n2": 81.0}


def test_most_allocated_is_weighted_by_its_argument() -> None:
    # n1: cpu 50, memory 1e9*100/4Gi = 23.3 -> 23, (50+23)/2 = 36 (x2 = 72)
    # n2: cpu 25, memory 11, (25+11)/2 = 18 (x2 = 36)
    docs = [node("n1", "2", "4Gi"), node("n2", "4", "8Gi"), pod("p", {"cpu": "1", "memory": "1G"})]
    _cache, ssn = session(docs, conf(mostrequested_weight=2))
    assert scores(ssn, "p") == {"n1": 72.0, "n2": 36.0}


def test_pods_without_requests_count_as_100m_cpu_and_200mi_memory() -> None:
    # n1 holds a best-effort pod: cpu 200m of 2000m -> 90, memory 400Mi of 4Gi -> 90.2 -> 90
    # n2 is empty:                cpu 100m of 4000m -> 97.5 -> 97, memory 200Mi of 8Gi -> 97.5 -> 97
    docs = [node("n1", "2", "4Gi"), node("n2", "4", "8Gi"), pod("running", node_name="n1"), pod("p")]
    _cache, ssn = session(docs, conf(leastrequested_weight=1))
    assert scores(ssn, "p") == {"n1": 90.0, "n2": 97.0}


def test_explicit_zero_request_is_not_replaced_by_the_default() -> None:
    # cpu "0" stays 0 -> cpu 100; memory missing -> 200Mi of 4Gi -> 95.1 -> 95; (100+95)/2 = 97.5 -> 97
    _cache, ssn = session([node("n1", "2", "4Gi"), pod("p", {"cpu": "0"})], conf(leastrequested_weight=1))
    assert scores(ssn, "p") == {"n1": 97.0}


def test_node_without_allocatable_cpu_is_scored_on_memory_only() -> None:
    # cpu allocatable 0 is left out of the weighted mean: memory (4Gi-1Gi)*100/4Gi = 75
    _cache, ssn = session([node("n1", "0", "4Gi"), pod("p", {"cpu": "1", "memory": "1Gi"})],
                          conf(leastrequested_weight=1))
    assert scores(ssn, "p") == {"n1": 75.0}


def test_request_beyond_capacity_scores_zero_least_and_full_most() -> None:
    docs = [node("n1", "1", "4Gi"), pod("p", {"cpu": "2", "memory": "4Gi"})]
    assert scores(session(docs, conf(leastrequested_weight=1))[1], "p") == {"n1": 0.0}
    assert scores(session(docs, conf(mostrequested_weight=1))[1], "p") == {"n1": 100.0}


# ----------------------------------------------------------------------------- BalancedAllocation


def test_balanced_allocation_prefers_equal_cpu_and_memory_fractions() -> None:
    # n1: 0.5 / 0.5 -> std 0 -> 100; n2: 0.25 / 0.5 -> std 0.125 -> 87.5 -> 87
    docs = [node("n1", "2", "2Gi"), node("n2", "4", "2Gi"), pod("p", {"cpu": "1", "memory": "1Gi"})]
    _cache, ssn = session(docs, conf(balancedresource_weight=1))
    assert scores(ssn, "p") == {"n1": 100.0, "n2": 87.0}


def test_balanced_allocation_includes_gpu_when_requested() -> None:
    # fractions 0.25, 0.25, 0.5: population std = sqrt(1/72) = 0.1178 -> 88.2 -> 88
    docs = [node("n1", "4", "4Gi", gpu="2"),
            pod("p", {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"})]
    _cache, ssn = session(docs, conf(balancedresource_weight=1))
    assert scores(ssn, "p") == {"n1": 88.0}


def test_balanced_allocation_skips_best_effort_pods() -> None:
    _cache, ssn = session([node("n1", "4", "2Gi"), pod("p")], conf(balancedresource_weight=1))
    assert scores(ssn, "p") == {"n1": 0.0}


def test_balanced_allocation_counts_running_pods_real_requests() -> None:
    # running pod 1 cpu / 0 memory: cpu (1+1)/4 = 0.5, memory 1Gi/2Gi = 0.5 -> 100
    docs = [node("n1", "4", "2Gi"), pod("r", {"cpu": "1"}, node_name="n1"),
            pod("p", {"cpu": "1", "memory": "1Gi"})]
    _cache, ssn = session(docs, conf(balancedresource_weight=1))
    assert scores(ssn, "p") == {"n1": 100.0}


# ----------------------------------------------------------------------------- in-session changes


def test_pipelined_and_allocated_tasks_count_evicted_ones_do_not() -> None:
    docs = [node("n1", "4", "8Gi"), pod("r", {"cpu": "2", "memory": "4Gi"}, node_name="n1"),
            pod("a", {"cpu": "1", "memory": "1Gi"}), pod("p", {"cpu": "1", "memory": "1Gi"})]
    cache, ssn = session(docs, conf(leastrequested_weight=1))
    # r + p: cpu 3000 of 4000 -> 25; memory 5Gi of 8Gi -> 37; (25+37)/2 = 31
    assert scores(ssn, "p") == {"n1": 31.0}
    stmt = ssn.statement()
    stmt.evict(cache.tasks["ns-r"], "test")
    # r evicted in this session: only p -> cpu 75, memory 87 -> 81
    assert scores(ssn, "p") == {"n1": 81.0}
    stmt.pipeline(cache.tasks["ns-a"], "n1", True)
    # a pipelined onto n1: cpu 2000 -> 50, memory 2Gi -> 75 -> 62
    assert scores(ssn, "p") == {"n1": 62.0}
    stmt.discard()
    assert scores(ssn, "p") == {"n1": 31.0}


# ----------------------------------------------------------------------------- NodeAffinity


AFFINITY = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 3, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}},
    {"weight": 7, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}},
]}}


def test_node_affinity_normalises_to_the_best_candidate_with_integer_division() -> None:
    docs = [node("n1", labels={"zone": "a"}), node("n2", labels={"disk": "ssd"}),
            node("n3", labels={"zone": "a", "disk": "ssd"}), node("n4"),
            pod("p", {"cpu": "1"}, affinity=AFFINITY)]
    _cache, ssn = session(docs, conf(nodeaffinity_weight=2))
    # raw 3, 7, 10, 0 -> 30, 70, 100, 0 -> x2
    assert scores(ssn, "p") == {"n1": 60.0, "n2": 140.0, "n3": 200.0, "n4": 0.0}
    # normalised over the candidates only: raw 3, 7 -> 3*100/7 = 42.9 -> 42, 100
    assert scores(ssn, "p", ["n1", "n2"]) == {"n1": 84.0, "n2": 200.0}


def test_node_affinity_without_preferred_terms_scores_zero() -> None:
    docs = [node("n1", labels={"zone": "a"}), pod("p", {"cpu": "1"})]
    _cache, ssn = session(docs, conf(nodeaffinity_weight=2))
    assert scores(ssn, "p") == {"n1": 0.0}


# ----------------------------------------------------------------------------- TaintToleration


def _pns(key: str) -> dict[str, str]:
    return {"key": key, "value": "v", "effect": "PreferNoSchedule"}


def test_taint_toleration_reverse_normalises_untolerated_prefer_no_schedule_taints() -> None:
    docs = [node("n1"), node("n2", taints=[_pns("a")]), node("n3", taints=[_pns("a"), _pns("b")]),
            node("n4", taints=[_pns("c"), {"key": "x", "value": "v", "effect": "NoExecute"}]),
            pod("p", {"cpu": "1"}, tolerations=[{"key": "c", "operator": "Exists"},
                                                 {"key": "x", "operator": "Exists", "effect": "NoExecute"}])]
    _cache, ssn = session(docs, conf(tainttoleration_weight=3))
    # raw 0, 1, 2, 0 (c tolerated, NoExecute ignored) -> 100 - 100*raw/2 -> x3
    assert scores(ssn, "p") == {"n1": 300.0, "n2": 150.0, "n3": 0.0, "n4": 300.0}


def test_taint_toleration_rounding_and_untainted_clusters() -> None:
    docs = [node("n1", taints=[_pns("a")]), node("n2", taints=[_pns("a"), _pns("b"), _pns("c")]), node("n3"),
            pod("p", {"cpu": "1"})]
    _cache, ssn = session(docs, conf(tainttoleration_weight=1))
    # raw 1, 3, 0: 100 - 100*1/3 = 100 - 33 = 67
    assert scores(ssn, "p") == {"n1": 67.0, "n2": 0.0, "n3": 100.0}
    # no candidate tainted: all raw 0 -> every node gets the maximum
    assert scores(ssn, "p", ["n3"]) == {"n3": 100.0}


# ----------------------------------------------------------------------------- InterPodAffinity


def _pref_term(weight: int, labels: dict[str, str], key: str = "kubernetes.io/hostname") -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": labels}, "topologyKey": key}
    return {"weight": weight, "podAffinityTerm": term}


def test_pod_affinity_prefers_the_node_of_matching_pods() -> None:
    hosts = [node(f"n{i}", labels={"kubernetes.io/hostname": f"n{i}"}) for i in (1, 2, 3)]
    docs = [*hosts, pod("web", {"cpu": "1"}, node_name="n1", labels={"app": "web"}),
            pod("db", {"cpu": "1"}, node_name="n2", labels={"app": "db"}),
            pod("p", {"cpu": "1"}, affinity={
                "podAffinity": {PREFERRED: [_pref_term(10, {"app": "web"})]},
                "podAntiAffinity": {PREFERRED: [_pref_term(5, {"app": "db"})]},
            })]
    _cache, ssn = session(docs, conf(podaffinity_weight=2))
    # raw n1 +10, n2 -5, n3 0 -> (s - min) / (max - min): 100, 0, 33
    assert scores(ssn, "p") == {"n1": 200.0, "n2": 0.0, "n3": 66.0}


def test_existing_pods_preferred_anti_affinity_repels_the_incoming_pod() -> None:
    hosts = [node(f"n{i}", labels={"kubernetes.io/hostname": f"n{i}"}) for i in (1, 2)]
    anti = {"podAntiAffinity": {PREFERRED: [_pref_term(4, {"app": "p"})]}}
    docs = [*hosts, pod("loner", {"cpu": "1"}, node_name="n1", affinity=anti),
            pod("p", {"cpu": "1"}, labels={"app": "p"})]
    _cache, ssn = session(docs, conf(podaffinity_weight=1))
    assert scores(ssn, "p") == {"n1": 0.0, "n2": 100.0}


def test_existing_pods_required_affinity_adds_nothing_with_volcano_arguments() -> None:
    # Volcano passes InterPodAffinityArgs{}: hardPodAffinityWeight 0.
    hosts = [node(f"n{i}", labels={"kubernetes.io/hostname": f"n{i}"}) for i in (1, 2)]
    req = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "p"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    docs = [*hosts, pod("friend", {"cpu": "1"}, node_name="n1", affinity=req),
            pod("p", {"cpu": "1"}, labels={"app": "p"})]
    _cache, ssn = session(docs, conf(podaffinity_weight=1))
    assert scores(ssn, "p") == {"n1": 0.0, "n2": 0.0}


# ----------------------------------------------------------------------------- PodTopologySpread


def test_topology_spread_schedule_anyway_prefers_the_emptiest_zone() -> None:
    zones = [node(f"n{i}", labels={"zone": f"z{i}"}) for i in (1, 2, 3)]
    spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
               "labelSelector": {"matchLabels": {"app": "x"}}}]
    docs = [*zones, *[pod(f"x{i}", {"cpu": "1"}, node_name=n, labels={"app": "x"})
                      for i, n in enumerate(["n1", "n1", "n2"])],
            pod("p", {"cpu": "1"}, labels={"app": "x"}, topologySpreadConstraints=spread)]
    _cache, ssn = session(docs, conf(podtopologyspread_weight=2))
    # weight log(3+2); raw round(2*1.609) = 3, round(1.609) = 2, 0 -> 100*(3+0-raw)/3 = 0, 33, 100
    assert scores(ssn, "p") == {"n1": 0.0, "n2": 66.0, "n3": 200.0}


def test_pods_without_spread_constraints_are_not_spread() -> None:
    zones = [node(f"n{i}", labels={"zone": f"z{i}"}) for i in (1, 2)]
    docs = [*zones, pod("x", {"cpu": "1"}, node_name="n1", labels={"app": "x"}),
            pod("p", {"cpu": "1"}, labels={"app": "x"})]
    _cache, ssn = session(docs, conf(podtopologyspread_weight=2))
    assert scores(ssn, "p") == {"n1": 0.0, "n2": 0.0}


# ----------------------------------------------------------------------------- end to end


def test_allocate_spreads_a_job_with_least_requested_as_placements_accumulate() -> None:
    docs = [node("n1", "4", "8Gi"), node("n2", "4", "8Gi"),
            *[pod(f"p-{i}", {"cpu": "1", "memory": "1Gi"}) for i in range(4)]]
    text = yaml.safe_dump_all([*BASE, *docs])
    cache = SchedulerCache.from_objects(load_manifest_text(text, "test.yaml"))
    out = schedule_objects(cache, load_scheduler_conf(conf(leastrequested_weight=1)), default_registry(),
                           sessions=1, seed=0)
    per_node = [list(out["binds"].values()).count(n) for n in ("n1", "n2")]
    assert per_node == [2, 2]


# ----------------------------------------------------------------------------- property


def _go_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _nonzero(req: dict[str, str]) -> tuple[int, int]:
    cpu = milli_value(req["cpu"]) if "cpu" in req else 100
    mem = value(req["memory"]) if "memory" in req else 200 * 1024 * 1024
    return cpu, mem


def _real(req: dict[str, str]) -> tuple[int, int, int]:
    return (milli_value(req.get("cpu", "0")), value(req.get("memory", "0")),
            value(req.get("nvidia.com/gpu", "0")))


def _fit(requested: list[int], capacity: list[int], weights: tuple[int, int], most: bool) -> int:
    total = wsum = 0
    for r, c, w in zip(requested, capacity, weights):
        if c == 0:
            continue
        if most:
            s = min(r, c) * 100 // c
        else:
            s = 0 if r > c else (c - r) * 100 // c
        total += s * w
        wsum += w
    return _go_div(total, wsum) if wsum else 0


def _balanced(requested: list[int], capacity: list[int]) -> int:
    fr = [min(r / c, 1.0) for r, c in zip(requested, capacity) if c != 0]
    std = 0.0
    if len(fr) == 2:
        std = abs((fr[0] - fr[1]) / 2)
    elif len(fr) == 3:
        mean = (fr[0] + fr[1] + fr[2]) / 3
        std = math.sqrt(((fr[0] - mean) ** 2 + (fr[1] - mean) ** 2 + (fr[2] - mean) ** 2) / 3)
    return int((1 - std) * 100)


def _normalize(raw: list[int], reverse: bool) -> list[int]:
    top = max([0, *raw])
    if top == 0:
        return [100 if reverse else 0 for _ in raw]
    return [100 - 100 * r // top if reverse else 100 * r // top for r in raw]


TAINT_KEYS = ["t1", "t2", "t3"]
requests_st = st.fixed_dictionaries({}, optional={
    "cpu": st.integers(0, 4000).map(lambda m: f"{m}m"),
    "memory": st.integers(0, 8192).map(lambda m: f"{m}Mi"),
    "nvidia.com/gpu": st.integers(0, 2).map(str),
})
node_st = st.fixed_dictionaries({
    "cpu": st.integers(0, 8), "mem": st.integers(0, 16), "gpu": st.one_of(st.none(), st.integers(0, 4)),
    "zone": st.sampled_from(["a", "b", "c"]), "taints": st.lists(st.sampled_from(TAINT_KEYS), unique=True),
})
pref_st = st.lists(st.tuples(st.integers(1, 100), st.sampled_from(["a", "b", "c"])), max_size=3)


@settings(max_examples=60, deadline=None)
@given(nodes=st.lists(node_st, min_size=1, max_size=5),
       running=st.lists(st.tuples(requests_st, st.integers(0, 4)), max_size=8),
       incoming=requests_st, prefs=pref_st, tolerate=st.lists(st.sampled_from(TAINT_KEYS), unique=True),
       weights=st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3), st.integers(0, 3),
                         st.integers(0, 3)))
def test_vectorised_scores_equal_a_per_node_reference(nodes: list[dict[str, Any]],
                                                      running: list[tuple[dict[str, str], int]],
                                                      incoming: dict[str, str], prefs: list[tuple[int, str]],
                                                      tolerate: list[str],
                                                      weights: tuple[int, int, int, int, int]) -> None:
    docs: list[dict[str, Any]] = []
    for i, n in enumerate(nodes):
        gpu = None if n["gpu"] is None else str(n["gpu"])
        docs.append(node(f"n{i}", str(n["cpu"]), f"{n['mem']}Gi", labels={"zone": n["zone"]},
                         taints=[_pns(t) for t in n["taints"]], gpu=gpu))
    on_node: list[list[dict[str, str]]] = [[] for _ in nodes]
    for j, (req, at) in enumerate(running):
        k = at % len(nodes)
        on_node[k].append(req)
        docs.append(pod(f"r{j}", req, node_name=f"n{k}"))
    affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": w, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": [z]}]}}
        for w, z in prefs]}} if prefs else None
    tolerations = [{"key": t, "operator": "Exists"} for t in tolerate]
    docs.append(pod("p", incoming, affinity=affinity, tolerations=tolerations))
    least, most, balanced, naff, taint = weights
    _cache, ssn = session(docs, conf(leastrequested_weight=least, mostrequested_weight=most,
                                     balancedresource_weight=balanced, nodeaffinity_weight=naff,
                                     tainttoleration_weight=taint))
    names = [f"n{i}" for i in range(len(nodes))]
    got = scores(ssn, "p", names) if ssn.has("node_order") else dict.fromkeys(names, 0.0)

    pod_nz, pod_real = _nonzero(incoming), _real(incoming)
    raw_aff = [preferred_node_affinity_score(affinity, f"n{i}", {"zone": n["zone"]})
               for i, n in enumerate(nodes)]
    pod_tols = [t for t in tolerations if t.get("effect", "") in ("", "PreferNoSchedule")]
    raw_taint = [count_intolerable_prefer_no_schedule([_pns(t) for t in n["taints"]], pod_tols)
                 for n in nodes]
    norm_aff = _normalize(raw_aff, False) if prefs else [0] * len(nodes)
    norm_taint = _normalize(raw_taint, True)
    for i, n in enumerate(nodes):
        capacity = [n["cpu"] * 1000, n["mem"] * GI]
        nz = [pod_nz[k] + sum(_nonzero(r)[k] for r in on_node[i]) for k in range(2)]
        real = [pod_real[k] + sum(_real(r)[k] for r in on_node[i]) for k in range(3)]
        expected = least * _fit(nz, capacity, (50, 50), most=False)
        expected += most * _fit(nz, capacity, (1, 1), most=True)
        if any(pod_real):
            cap_b, req_b = list(capacity), real[:2]
            if pod_real[2]:
                cap_b.append(n["gpu"] or 0)
                req_b.append(real[2])
            expected += balanced * _balanced(req_b, cap_b)
        expected += naff * norm_aff[i] + taint * norm_taint[i]
        assert got[f"n{i}"] == pytest.approx(expected, abs=0), (i, got, expected)
