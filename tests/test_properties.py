"""Scheduler-wide invariants checked on random clusters (hypothesis)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import cache_of, node, pod, podgroup, queue
from pyvolcano.api.resource import Resource
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.conf.defaults import DEFAULT_SCHEDULER_CONF
from pyvolcano.runtime.cycle import schedule_objects
from pyvolcano.runtime.registry import default_registry

CONF = DEFAULT_SCHEDULER_CONF + "  - name: binpack\n"  # upstream's default plus binpack

CPUS = ["500m", "1", "2", "3"]
MEMS = ["512Mi", "1Gi", "2Gi", "3Gi"]


@st.composite
def clusters(draw: Any) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    n_queues = draw(st.integers(1, 3))
    for q in range(n_queues):
        docs.append(queue(f"q{q}", weight=draw(st.integers(1, 4))))
    for i in range(draw(st.integers(1, 5))):
        docs.append(node(f"n{i}", cpu=str(draw(st.integers(1, 8))), memory=f"{draw(st.integers(1, 16))}Gi",
                         pods=str(draw(st.integers(1, 20)))))
    for j in range(draw(st.integers(1, 6))):
        size = draw(st.integers(1, 5))
        docs.append(podgroup(f"pg{j}", queue=f"q{draw(st.integers(0, n_queues - 1))}",
                             min_member=draw(st.integers(0, size)),
                             phase=draw(st.sampled_from(["Pending", "Inqueue"]))))
        cpu, mem = draw(st.sampled_from(CPUS)), draw(st.sampled_from(MEMS))
        for k in range(size):
            docs.append(pod(f"pg{j}-p-{k}", f"pg{j}", cpu=cpu, memory=mem, priority=draw(st.integers(0, 3))))
    return docs


def run(docs: list[dict[str, Any]], sessions: int = 2, seed: int = 0) -> tuple[Any, dict[str, Any]]:
    cache = cache_of(*docs)
    out = schedule_objects(cache, load_scheduler_conf(CONF), default_registry(), sessions=sessions, seed=seed)
    return cache, out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_no_node_is_ever_overcommitted(docs: list[dict[str, Any]]) -> None:
    cache, _ = run(docs)
    for n in cache.node_list:
        used = Resource()
        for t in n.tasks.values():
            used.add(t.resreq)
        assert used.less_equal(n.allocatable), (n.name, used, n.allocatable)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_a_gang_with_binds_has_at_least_min_available_placed(docs: list[dict[str, Any]]) -> None:
    cache, out = run(docs)
    bound_groups = {key.split("/")[1].rsplit("-p-", 1)[0] for key in out["binds"]}
    for job in cache.jobs.values():
        if job.name in bound_groups:
            placed = sum(1 for t in job.tasks.values() if t.node_name)
            assert placed >= job.min_available, (job.uid, placed, job.min_available)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.integers(0, 2**32 - 1))
def test_same_input_and_seed_give_the_same_json(docs: list[dict[str, Any]], seed: int) -> None:
    _, a = run(docs, seed=seed)
    _, b = run(docs, seed=seed)
    a.pop("stats")
    b.pop("stats")
    assert json.dumps(a) == json.dumps(b)
