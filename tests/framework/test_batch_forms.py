"""The batch forms of the per-pod bookkeeping leave exactly what one task at a time leaves.

``Resource.add_times`` (the plugins' batched allocate events), ``replicas_within`` (the
queue-quota count), ``JobInfo.update_tasks_status`` (bulk status changes) and
``NodeInfo.add_replicas`` (a chunk's node accounting) are each compared with the per-task
operation they replace, on generated values where float sums are not exact.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import cache_of, node, pod, podgroup, queue
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import TaskStatus
from pyvolcano.plugins._util import replicas_within

amounts = st.one_of(st.integers(0, 10**6).map(float), st.floats(0.0, 1e6, allow_nan=False),
                    st.sampled_from([0.1, 0.3, 1e15 + 1.0, 2.0**53 - 1.0]))


def _key(r: Resource) -> tuple[float, float, tuple[tuple[str, float], ...]]:
    return (r.milli_cpu, r.memory, tuple(sorted(r.scalars.items())))


@given(start=st.tuples(amounts, amounts, amounts), step=st.tuples(amounts, amounts, amounts), k=st.integers(1, 60))
def test_add_times_is_k_additions_in_a_row(
    start: tuple[float, float, float], step: tuple[float, float, float], k: int
) -> None:
    a = Resource(start[0], start[1], {"nvidia.com/gpu": start[2]})
    b = a.clone()
    req = Resource(step[0], step[1], {"nvidia.com/gpu": step[2], "pods": 1.0})
    for _ in range(k):
        a.add(req)
    assert _key(b.add_times(req, k)) == _key(a)
    for _ in range(k):
        a.sub(req)
    assert _key(b.sub_times(req, k)) == _key(a)


@given(allocated=st.tuples(amounts, amounts), limit=st.tuples(amounts, amounts), req=st.tuples(amounts, amounts),
       k=st.integers(0, 60))
def test_replicas_within_counts_the_per_replica_checks(
    allocated: tuple[float, float], limit: tuple[float, float], req: tuple[float, float], k: int
) -> None:
    alloc = Resource(allocated[0], 0.0, {"nvidia.com/gpu": allocated[1]})
    lim = Resource(limit[0], 0.0, {"nvidia.com/gpu": limit[1]})
    request = Resource(req[0], 0.0, {"nvidia.com/gpu": req[1], "pods": 1.0})
    expected = 0
    state = alloc.clone()
    while expected < k and state.clone().add(request).less_equal_with_dimension(lim, request)[0]:
        state.add(request)
        expected += 1
    assert replicas_within(alloc, lim, request, k) == expected


def _job_state(job):  # type: ignore[no-untyped-def]
    return (_key(job.allocated), _key(job.pending_request), job.pending_best_effort, list(job.status_counts),
            sorted(job.role_status.items()),
            {s: list(b) for s, b in job.task_status_index.items()}, job.version)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 8), cpu=st.sampled_from(["300m", "1", None]))
def test_update_tasks_status_moves_the_aggregates_as_one_task_at_a_time(n: int, cpu: str | None) -> None:
    docs = [queue("q"), podgroup("g", queue="q", min_member=1)]
    docs += [pod(f"g-{r}", "g", cpu=cpu, memory="333Mi" if cpu else None) for r in range(n)]
    one, bulk = cache_of(*docs), cache_of(*docs)
    for cache, batched in ((one, False), (bulk, True)):
        job = cache.jobs["ns/g"]
        tasks = sorted(job.tasks.values(), key=lambda t: t.uid)[1:]
        for status in (TaskStatus.Allocated, TaskStatus.Binding, TaskStatus.Pending):
            if batched:
                job.update_tasks_status(tasks, status)
            else:
                for t in tasks:
                    job.update_task_status(t, status)
    assert _job_state(one.jobs["ns/g"]) == _job_state(bulk.jobs["ns/g"])


def test_add_replicas_accounts_each_node_as_add_task() -> None:
    docs = [queue("q"), podgroup("g", queue="q", min_member=1)]
    docs += [node(f"n{i}", cpu="7", memory="9Gi", nvidia__com__gpu="2") for i in range(5)]
    for r in range(4):
        p = pod(f"g-{r}", "g", cpu="300m", memory="1234Mi")
        p["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1"
        docs.append(p)
    one, bulk = cache_of(*docs), cache_of(*docs)
    order = [3, 0, 4, 1]
    for cache, batched in ((one, False), (bulk, True)):
        tasks = sorted(cache.jobs["ns/g"].tasks.values(), key=lambda t: t.uid)
        for t in tasks:
            t.status = TaskStatus.Allocated
        nodes = [cache.node_list[i] for i in order]
        if batched:
            type(nodes[0]).add_replicas(nodes, tasks)
        else:
            for n, t in zip(nodes, tasks, strict=True):
                n.add_task(t)
    a, b = one.node_table, bulk.node_table
    for name in ("idle", "used", "future", "pipelined"):
        for x, y in zip(getattr(a, name), getattr(b, name), strict=True):
            assert np.array_equal(x, y), name
    assert np.array_equal(a.nonzero_cpu, b.nonzero_cpu) and np.array_equal(a.task_count, b.task_count)
    assert a.rows_changed_since(0) == b.rows_changed_since(0)
    assert [sorted(n.tasks) for n in one.node_list] == [sorted(n.tasks) for n in bulk.node_list]
