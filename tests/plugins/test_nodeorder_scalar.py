"""The few-nodes scalar path of nodeorder scores exactly like the vectorised path."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import cache_of, node, pod, podgroup, queue
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.framework.registry import default_registry

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
    ssn = cache.open_session(config, default_registry().plugin_factories(["nodeorder"]), now=0.0,
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
