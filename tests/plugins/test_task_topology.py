"""task-topology: buckets of a job's tasks that should share a node, their order and node scores;
upstream's parsing tests run as conformance cases, these check the bucket mechanics."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

from builders import node, open_session, pod, podgroup, queue, schedule
from pyvolcano.framework.arguments import ArgumentError
from pyvolcano.plugins.task_topology import TaskTopologyPlugin, TopologyError, read_topology

CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: task-topology
"""


def job(annotations: dict[str, str], roles: dict[str, int], cpu: str = "1") -> list[dict[str, Any]]:
    pg = podgroup("tf", min_member=0, phase="Inqueue")
    pg["metadata"]["annotations"] = annotations
    pods = []
    for role, n in roles.items():
        for i in range(n):
            p = pod(f"tf-{role}-{i}", "tf", cpu=cpu, memory="1Gi")
            p["metadata"]["annotations"]["volcano.sh/task-spec"] = role
            pods.append(p)
    return [pg, *pods]


PS_WORKER = {"volcano.sh/task-topology-affinity": "ps,worker", "volcano.sh/task-topology-anti-affinity": "ps"}


def nodes(n: int, cpu: str = "8") -> list[dict[str, Any]]:
    return [node(f"n{i}", cpu=cpu, memory="32Gi") for i in range(n)]


def test_each_ps_takes_its_workers_to_its_own_node() -> None:
    binds = schedule(queue("q"), *nodes(3), *job(PS_WORKER, {"ps": 2, "worker": 2}), conf=CONF)["binds"]
    assert binds["ns/tf-ps-0"] == binds["ns/tf-worker-0"] != binds["ns/tf-ps-1"] == binds["ns/tf-worker-1"]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_buckets_hold_for_every_tie_break(seed: int) -> None:
    out = schedule(queue("q"), *nodes(4), *job(PS_WORKER, {"ps": 2, "worker": 2}), conf=CONF, seed=seed)["binds"]
    assert out["ns/tf-ps-0"] == out["ns/tf-worker-0"] and out["ns/tf-ps-1"] == out["ns/tf-worker-1"]
    assert out["ns/tf-ps-0"] != out["ns/tf-ps-1"]


def test_bucketed_tasks_come_first_and_the_bigger_bucket_first() -> None:
    ssn = open_session(queue("q"), *nodes(2), *job(PS_WORKER | {"volcano.sh/task-topology-task-order": "ps,worker"},
                                                   {"ps": 2, "worker": 3, "eval": 1}), conf=CONF)
    tasks = sorted(ssn.jobs["ns/tf"].tasks.values(), key=lambda t: t.uid)
    order = [t.name for t in sorted(tasks, key=functools.cmp_to_key(ssn.task_compare))]
    # Buckets, in the order the tasks are sorted (ps first, then by name): ps-0 opens A, ps-1
    # opens B (self anti-affinity), worker-0 ties and stays with A, worker-1 ties and goes to the
    # lighter B, worker-2 ties and goes to A (A and B weigh the same then): A = {ps-0, worker-0,
    # worker-2} goes before B = {ps-1, worker-1}; eval has no topology and goes last.
    assert order == ["tf-ps-0", "tf-worker-0", "tf-worker-2", "tf-ps-1", "tf-worker-1", "tf-eval-0"]


def test_a_topology_naming_an_unknown_task_is_refused() -> None:
    ssn = open_session(queue("q"), *nodes(1), *job({"volcano.sh/task-topology-affinity": "ps,chief"},
                                                   {"ps": 1}), conf=CONF)
    with pytest.raises(TopologyError, match="chief"):
        read_topology(ssn.jobs["ns/tf"])


def test_the_weight_scales_the_score() -> None:
    docs = [queue("q"), *nodes(2), *job(PS_WORKER, {"ps": 1, "worker": 1})]
    one = open_session(*docs, conf=CONF)
    ten = open_session(*docs, conf=CONF.replace("task-topology\n", "task-topology\n    arguments:\n"
                                                "      task-topology.weight: 10\n"))
    task = one.jobs["ns/tf"].tasks["ns-tf-ps-0"]
    idx = np.arange(2)
    assert list(ten.node_order_scores(task, idx)) == [10 * s for s in one.node_order_scores(task, idx)]


def test_a_malformed_weight_is_refused_with_its_name() -> None:
    with pytest.raises(ArgumentError, match=r"task-topology\.weight"):
        TaskTopologyPlugin({"task-topology.weight": "heavy"})
