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


def _reference_score(ssn: Any, plugin: TaskTopologyPlugin, task: Any, node: Any) -> float:
    """Upstream's calcBucketScore and NodeOrderFn for one node, written the plain way."""
    room = node.idle.add(node.releasing)
    req = task.resreq
    never = (room.milli_cpu < req.milli_cpu or room.memory < req.memory
             or any(n not in room.scalars for n in req.scalars)
             or any(v < req.scalars.get(n, 0.0) for n, v in room.scalars.items()))
    manager = plugin.managers.get(task.job)
    if never or manager is None or manager.bucket(task) is None:
        return 0.0
    bucket = manager.bucket(task)
    score = bucket.nodes.get(node.name, 0)
    names = manager.node_names.get(node.name)
    if names:
        anti = manager.set_affinity(task.pod.annotations["volcano.sh/task-spec"], names, only_anti=True)
        score += min(anti, 0)
    score += len(bucket.tasks)
    if not bucket.request.less_equal(room):
        remains = bucket.request.clone()
        for uid, other in sorted(bucket.tasks.items()):
            if uid == task.uid:
                continue
            remains.sub_without_assert(other.resreq)
            score -= 1
            if remains.less_equal(room):
                break
    return float(score * plugin.weight) * 100 / manager.max_size


def test_the_vectorised_scores_are_upstreams_node_by_node() -> None:
    sizes = ["1", "3", "5", "8", "12"]
    docs = [queue("q"), *(node(f"n{i}", cpu=c, memory="32Gi") for i, c in enumerate(sizes)),
            *job({"volcano.sh/task-topology-affinity": "worker;ps,worker",
                  "volcano.sh/task-topology-anti-affinity": "ps"}, {"ps": 2, "worker": 5}, cpu="2")]
    big = docs[-1]
    big["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3"  # tasks of unequal size
    ssn = open_session(*docs, conf=CONF)
    plugin = next(p for _o, p in ssn.plugins if isinstance(p, TaskTopologyPlugin))
    idx = np.arange(len(ssn.node_list))
    tasks = sorted(ssn.jobs["ns/tf"].tasks.values(), key=lambda t: t.uid)
    # Place two tasks so that bucket nodes and placed task names count too.
    for task, n in ((tasks[0], 4), (tasks[3], 3)):
        task.node_name = ssn.node_list[n].name
        plugin.managers["ns/tf"].placed(task)
    for task in tasks:
        want = [_reference_score(ssn, plugin, task, node) for node in ssn.node_list]
        assert list(plugin.bucket_scores(ssn, task, idx)) == pytest.approx(want), task.name
