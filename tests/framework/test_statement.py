"""Statement semantics: operations change the session at once; discard restores it exactly."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import cache_of, node, pod, podgroup, queue
from pyvolcano.api.task import TaskStatus
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.framework.session import open_session
from pyvolcano.runtime.registry import default_registry

CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
"""


def _session(cache):  # type: ignore[no-untyped-def]
    config = load_scheduler_conf(CONF)
    reg = default_registry()
    return open_session(cache, config, reg.plugin_factories(config.plugin_names()), now=0.0,
                              rng=np.random.default_rng(0))


def _snapshot(cache):  # type: ignore[no-untyped-def]
    t = cache.node_table
    arrays = tuple(tuple(float(x) for x in a[: t.n]) for f in t.FIELDS for a in getattr(t, f))
    tasks = tuple(sorted((k, int(v.status), v.node_name) for k, v in cache.tasks.items()))
    jobs = tuple(sorted((j.uid, tuple(sorted((k, v) for k, v in j.allocated.to_dict().items() if v)),
                         tuple(sorted((int(s), len(b)) for s, b in j.task_status_index.items() if b)))
                        for j in cache.jobs.values()))
    return arrays, tasks, jobs


def _cluster(n_nodes: int, n_pods: int, running: int):  # type: ignore[no-untyped-def]
    docs = [queue("q"), *[node(f"n{i}", cpu="4", memory="8Gi") for i in range(n_nodes)],
            podgroup("pg", min_member=1)]
    for i in range(n_pods):
        on = f"n{i % n_nodes}" if i < running else ""
        docs.append(pod(f"p-{i}", "pg", cpu="1", memory="1Gi", node_name=on,
                        phase="Running" if on else "Pending"))
    return cache_of(*docs)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(1, 8), st.integers(0, 4),
       st.lists(st.tuples(st.sampled_from(["allocate", "pipeline", "evict"]), st.integers(0, 7),
                          st.integers(0, 3)), max_size=12))
def test_discard_restores_session_state_exactly(n_nodes, n_pods, running, ops):  # type: ignore[no-untyped-def]
    cache = _cluster(n_nodes, n_pods, min(running, n_pods))
    ssn = _session(cache)
    before = _snapshot(cache)
    stmt = ssn.statement()
    tasks = sorted(cache.tasks.values(), key=lambda t: t.uid)
    for kind, ti, ni in ops:
        task = tasks[ti % len(tasks)]
        node_ = ssn.node_list[ni % n_nodes]
        if kind == "allocate" and task.status == TaskStatus.Pending:
            stmt.allocate(task, node_)
        elif kind == "pipeline" and task.status == TaskStatus.Pending:
            stmt.pipeline(task, node_.name, False)
        elif kind == "evict" and task.status == TaskStatus.Running:
            stmt.evict(task, "test")
    stmt.discard()
    assert _snapshot(cache) == before


def test_commit_dispatches_allocations_as_binds() -> None:
    cache = _cluster(1, 2, 0)
    ssn = _session(cache)
    stmt = ssn.statement()
    t = cache.tasks["ns-p-0"]
    stmt.allocate(t, ssn.node_list[0])
    stmt.commit()
    assert t.status == TaskStatus.Binding
    assert [(b.key, n) for b, n in ssn.binds] == [("ns/p-0", "n0")]


def test_evict_moves_request_to_releasing_and_back_on_discard() -> None:
    cache = _cluster(1, 1, 1)
    ssn = _session(cache)
    node_ = ssn.node_list[0]
    t = cache.tasks["ns-p-0"]
    stmt = ssn.statement()
    stmt.evict(t, "test")
    assert t.status == TaskStatus.Releasing
    assert node_.releasing.milli_cpu == 1000
    stmt.discard()
    assert t.status == TaskStatus.Running
    assert node_.releasing.milli_cpu == 0
    assert t.last_transaction is not None
