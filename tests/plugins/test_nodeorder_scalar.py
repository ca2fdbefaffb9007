"""The few-nodes scalar path of nodeorder scores exactly like the vectorised path."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import cache_of, node, pod, podgroup, queue
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.framework.session import open_session
from pyvolcano.runtime.registry import default_registry

CONF = "actions: allocate\ntiers:\n- plugins:\n  - name: nodeorder\n"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 64), st.integers(1, 256), st.integers(0, 8)), min_size=1, max_size=6),
       st.integers(0, 4000), st.integers(0, 8192), st.integers(0, 2),
       st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3000), st.integers(0, 4096)), max_size=8))
def test_scalar_scores_equal_vectorised_scores(nodes, cpu_m, mem_mi, gpus, placed):  # type: ignore[no-untyped-def]
    docs = [queue("q"), podgroup("pg", min_member=1)]
    for i, (c, m, g) in enumerate(nodes):
        extra = {"nvidia.com__gpu": str(g)} if g else {}
        docs.append(node(f"n{i}", cpu=str(c), memory=f"{m}Gi", **extra))
    for k, (ni, c, m) in enumerate(placed):
        docs.append(pod(f"r-{k}", "pg", cpu=f"{c}m" if c else None, memory=f"{m}Mi" if m else None,
                        node_name=f"n{ni % len(nodes)}", phase="Running"))
    docs.append(pod("p-0", "pg", cpu=f"{cpu_m}m" if cpu_m else None, memory=f"{mem_mi}Mi" if mem_mi else None))
    cache = cache_of(*docs)
    config = load_scheduler_conf(CONF)
    ssn = open_session(cache, config, default_registry().plugin_factories(["nodeorder"]), now=0.0,
                             rng=np.random.default_rng(0))
    task = next(t for t in cache.tasks.values() if t.name == "p-0")
    fn = ssn._callbacks["node_order"]["nodeorder"]
    idx = np.arange(len(nodes), dtype=np.int64)
    vector = np.concatenate([fn(task, idx[k:k + 1]) for k in range(len(idx))]) if len(idx) <= 8 else None
    # Force the vectorised path by asking for more than the scalar threshold at once.
    big = np.tile(idx, 3)
    full = fn(task, big)[: len(idx)]
    assert vector is not None
    assert np.array_equal(vector, full), (vector, full)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 64), st.integers(0, 256), st.integers(0, 8)), min_size=9, max_size=14),
       st.integers(0, 4000), st.integers(0, 8192), st.integers(0, 2),
       st.lists(st.tuples(st.integers(0, 13), st.integers(0, 30000), st.integers(0, 40960)), max_size=12),
       st.sampled_from(["", "    arguments:\n      mostrequested.weight: 2\n      balancedresource.weight: 3\n"]))
def test_node_local_vector_scores_equal_the_sum_of_every_weighted_scorer(  # type: ignore[no-untyped-def]
    nodes, cpu_m, mem_mi, gpus, placed, arguments
):
    from pyvolcano.plugins._k8s_node_view import K8sNodeView
    from pyvolcano.plugins._node_scorers import NodeScorers, Weights

    docs = [queue("q"), podgroup("pg", min_member=1)]
    for i, (c, m, g) in enumerate(nodes):
        extra = {"nvidia.com__gpu": str(g)} if g else {}
        docs.append(node(f"n{i}", cpu=str(c), memory=f"{m}Gi", **extra))
    for k, (ni, c, m) in enumerate(placed):
        docs.append(pod(f"r-{k}", "pg", cpu=f"{c}m" if c else None, memory=f"{m}Mi" if m else None,
                        node_name=f"n{ni % len(nodes)}", phase="Running"))
    p0 = pod("p-0", "pg", cpu=f"{cpu_m}m" if cpu_m else None, memory=f"{mem_mi}Mi" if mem_mi else None)
    if gpus:
        p0["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = str(gpus)
    docs.append(p0)
    cache = cache_of(*docs)
    config = load_scheduler_conf(CONF + arguments)
    ssn = open_session(cache, config, default_registry().plugin_factories(["nodeorder"]), now=0.0,
                             rng=np.random.default_rng(0))
    task = next(t for t in cache.tasks.values() if t.name == "p-0")
    fn = ssn._callbacks["node_order"]["nodeorder"]
    idx = np.arange(len(nodes), dtype=np.int64)
    scorers = NodeScorers(ssn, K8sNodeView(ssn))
    w = Weights.from_arguments(config.tiers[0].plugins[0].arguments)
    general = np.zeros(len(idx), dtype=np.float64)
    for weight, scorer in ((w.least_requested, scorers.least_allocated), (w.most_requested, scorers.most_allocated),
                           (w.balanced_resource, scorers.balanced_allocation), (w.node_affinity, scorers.node_affinity),
                           (w.pod_affinity, scorers.pod_affinity), (w.taint_toleration, scorers.taint_toleration),
                           (w.pod_topology_spread, scorers.pod_topology_spread)):
        if weight:
            general += scorer(task, idx) * float(weight)
    assert np.array_equal(fn(task, idx), general)
