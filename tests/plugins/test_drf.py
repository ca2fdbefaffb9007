"""drf: dominant-share job order and preemptable rule; hierarchical DRF queue order and reclaim.

Clusters here have one node of 10 cpu / 10 Gi / 100 pods, so a task of 1 cpu or 1 Gi is a
share of exactly 0.1 and the ``pods`` dimension (1 per task) never dominates.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from builders import open_session, pod, podgroup, queue, schedule
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import TaskInfo
from pyvolcano.framework.session import Session
from pyvolcano.plugins._hdrf import HierarchicalDrf

FLAT = """
actions: "allocate"
tiers:
- plugins:
  - name: drf
"""

HIERARCHY = """
actions: "allocate"
tiers:
- plugins:
  - name: drf
    enableHierarchy: true
"""


def big_node() -> dict[str, Any]:
    res = {"cpu": "10", "memory": "10Gi", "pods": "100"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"capacity": res, "allocatable": res}}


def hqueue(name: str, path: str, weights: str) -> dict[str, Any]:
    q = queue(name)
    q["metadata"]["annotations"] = {"volcano.sh/hierarchy": path, "volcano.sh/hierarchy-weights": weights}
    return q


def job(name: str, q: str, *, running: int, pending: int = 1, cpu: str | None = "1",
        memory: str | None = None) -> list[dict[str, Any]]:
    """A PodGroup with ``running`` tasks on n1 and ``pending`` unplaced ones, all alike."""
    docs = [podgroup(name, queue=q, phase="Running")]
    for i in range(running):
        docs.append(pod(f"{name}-r{i}", name, cpu=cpu, memory=memory, node_name="n1", phase="Running"))
    for i in range(pending):
        docs.append(pod(f"{name}-p{i}", name, cpu=cpu, memory=memory))
    return docs


def task(ssn: Session, key: str) -> TaskInfo:
    job_name = key.rsplit("-", 1)[0]
    return next(t for t in ssn.jobs[f"ns/{job_name}"].tasks.values() if t.name == key)


def tasks(ssn: Session, *keys: str) -> list[TaskInfo]:
    return [task(ssn, k) for k in keys]


def names(victims: list[TaskInfo]) -> list[str]:
    return [t.name for t in victims]


# --------------------------------------------------------------------------- flat drf


def test_job_with_smaller_dominant_share_comes_first() -> None:
    # small: 2 cpu (0.2); big: 1 cpu + 3 Gi, dominant memory 0.3.
    ssn = open_session(queue("q"), big_node(), *job("small", "q", running=2),
                       *job("big", "q", running=1, cpu="1", memory="3Gi"), conf=FLAT)
    small, big = ssn.jobs["ns/small"], ssn.jobs["ns/big"]
    assert ssn.job_order_fn(small, big) and not ssn.job_order_fn(big, small)


def test_job_order_follows_allocations_made_in_the_session() -> None:
    ssn = open_session(queue("q"), big_node(), *job("a", "q", running=1, pending=3),
                       *job("b", "q", running=2), conf=FLAT)
    a, b = ssn.jobs["ns/a"], ssn.jobs["ns/b"]
    assert ssn.job_order_fn(a, b)
    stmt = ssn.statement()
    for t in tasks(ssn, "a-p0", "a-p1"):
        stmt.allocate(t, ssn.nodes["n1"])
    assert ssn.job_order_fn(b, a)  # a now holds 3 cpu against b's 2
    stmt.discard()
    assert ssn.job_order_fn(a, b)


def test_preemptable_keeps_victims_while_preemptor_share_stays_at_most_victim_share() -> None:
    # Preemptor job p holds 2 cpu; with its 1-cpu task it would hold 0.3. Victim job v holds
    # 0.6 and loses 0.1 per victim (cumulatively): 0.5, 0.4, 0.3 (tie within 1e-6), 0.2.
    ssn = open_session(queue("q"), big_node(), *job("p", "q", running=2),
                       *job("v", "q", running=6, pending=0), conf=FLAT)
    candidates = tasks(ssn, "v-r0", "v-r1", "v-r2", "v-r3")
    assert names(ssn.preemptable(task(ssn, "p-p0"), candidates)) == ["v-r0", "v-r1", "v-r2"]


def test_preemptable_spares_jobs_whose_share_would_drop_below_the_preemptor() -> None:
    # w holds 0.3: after losing a task it is at 0.2 < 0.3, so it is not a victim.
    ssn = open_session(queue("q"), big_node(), *job("p", "q", running=2),
                       *job("v", "q", running=6, pending=0), *job("w", "q", running=3, pending=0), conf=FLAT)
    candidates = tasks(ssn, "w-r0", "v-r0")
    assert names(ssn.preemptable(task(ssn, "p-p0"), candidates)) == ["v-r0"]


# --------------------------------------------------------------------------- hierarchical drf
#
#            root
#          /      \
#       eng(1)   sci(w)
#       /    \
#   dev(1)  prod(1)


def hierarchy(sci_weight: int = 1) -> list[dict[str, Any]]:
    """Queues named so that the fallback order (by name: prod, sci, dev) differs from every
    order the tests expect."""
    return [big_node(),
            hqueue("c-dev", "root/eng/dev", "1/1/1"),
            hqueue("a-prod", "root/eng/prod", "1/1/1"),
            hqueue("b-sci", "root/sci", f"1/{sci_weight}")]


def order(ssn: Session, *queue_names: str) -> list[str]:
    """Queue names sorted by the session's QueueOrder."""
    qs = [ssn.queues[n] for n in queue_names]
    for i in range(len(qs)):
        for j in range(len(qs) - 1 - i):
            if ssn.queue_order_fn(qs[j + 1], qs[j]):
                qs[j], qs[j + 1] = qs[j + 1], qs[j]
    return [q.name for q in qs]


def test_inner_node_share_is_its_smallest_unsaturated_child_share() -> None:
    # dev 0.2 (cpu), prod 0.4 (memory): eng rescales prod to 0.2, so eng = 0.2 < sci 0.3 and
    # prod's queue goes before sci's although prod's own share is higher.
    ssn = open_session(*hierarchy(), *job("dev", "c-dev", running=2),
                       *job("prod", "a-prod", running=4, cpu=None, memory="1Gi"),
                       *job("sci", "b-sci", running=3), conf=HIERARCHY)
    assert order(ssn, "b-sci", "a-prod", "c-dev") == ["c-dev", "a-prod", "b-sci"]


def test_hierarchy_weight_divides_the_share() -> None:
    # sci weighs 2: 0.3 / 2 = 0.15 < eng 0.2.
    ssn = open_session(*hierarchy(sci_weight=2), *job("dev", "c-dev", running=2),
                       *job("prod", "a-prod", running=4, cpu=None, memory="1Gi"),
                       *job("sci", "b-sci", running=3), conf=HIERARCHY)
    assert order(ssn, "c-dev", "a-prod", "b-sci") == ["b-sci", "c-dev", "a-prod"]


def test_saturated_job_sorts_after_unsaturated_siblings_and_stops_rescaling() -> None:
    # dev has nothing pending: it holds its whole request and is saturated. eng then takes
    # prod's 0.4 unscaled plus dev's allocation, so eng = 0.4 > sci 0.3.
    ssn = open_session(*hierarchy(), *job("dev", "c-dev", running=2, pending=0),
                       *job("prod", "a-prod", running=4, cpu=None, memory="1Gi"),
                       *job("sci", "b-sci", running=3), conf=HIERARCHY)
    assert order(ssn, "c-dev", "a-prod", "b-sci") == ["b-sci", "a-prod", "c-dev"]


def test_queue_order_follows_allocations_made_in_the_session() -> None:
    ssn = open_session(*hierarchy(), *job("dev", "c-dev", running=1, pending=3),
                       *job("sci", "b-sci", running=2), conf=HIERARCHY)
    dev, sci = ssn.queues["c-dev"], ssn.queues["b-sci"]
    assert ssn.queue_order_fn(dev, sci)
    stmt = ssn.statement()
    for t in tasks(ssn, "dev-p0", "dev-p1"):
        stmt.allocate(t, ssn.nodes["n1"])
    assert ssn.queue_order_fn(sci, dev)
    stmt.discard()
    assert ssn.queue_order_fn(dev, sci)


def test_reclaim_takes_from_queues_that_would_still_rank_after_the_reclaimer() -> None:
    # dev 0.1 reclaims 1 cpu → dev 0.2, eng = min(dev, prod) = 0.2.
    #   sci task: sci 0.5 → 0.4; at root eng 0.2 < sci 0.4 → victim.
    #   prod task: prod 0.2 → 0.1; under eng dev 0.2 > prod 0.1 → not a victim.
    # Each candidate is weighed against its job's live allocation, so both sci tasks qualify.
    ssn = open_session(*hierarchy(), *job("dev", "c-dev", running=1, pending=2),
                       *job("prod", "a-prod", running=2, cpu=None, memory="1Gi"),
                       *job("sci", "b-sci", running=5), conf=HIERARCHY)
    candidates = tasks(ssn, "prod-r0", "sci-r0", "sci-r1")
    assert names(ssn.reclaimable(task(ssn, "dev-p0"), candidates)) == ["sci-r0", "sci-r1"]


def test_reclaim_leaves_the_live_tree_untouched() -> None:
    ssn = open_session(*hierarchy(), *job("dev", "c-dev", running=1, pending=2),
                       *job("prod", "a-prod", running=2, cpu=None, memory="1Gi"),
                       *job("sci", "b-sci", running=5), conf=HIERARCHY)
    before = order(ssn, "b-sci", "a-prod", "c-dev")
    ssn.reclaimable(task(ssn, "dev-p0"), tasks(ssn, "prod-r0", "prod-r1", "sci-r0", "dev-r0"))
    assert order(ssn, "b-sci", "a-prod", "c-dev") == before == ["c-dev", "a-prod", "b-sci"]


def test_hdrf_tree_rescales_and_restores_exactly() -> None:
    # Direct check of the tree values: dev 0.2 cpu, prod 0.4 memory under eng.
    ssn = open_session(*hierarchy(), *job("dev", "c-dev", running=2),
                       *job("prod", "a-prod", running=4, cpu=None, memory="1Gi"), conf=HIERARCHY)
    tree = HierarchicalDrf(ssn.total_resource)
    for j in ssn.jobs.values():
        tree.add_job(j, j.allocated, ssn.queues[j.queue])
    dev_q: QueueInfo = ssn.queues["c-dev"]
    assert tree.compare_queues(dev_q, ssn.queues["a-prod"]) == -1
    eng = tree.root.children["eng"]  # type: ignore[index]
    gib = float(1 << 30)
    assert (eng.share, eng.allocated.milli_cpu, eng.allocated.memory) == (0.2, 2000.0, 2 * gib)
    snapshot = (eng.share, eng.allocated.to_dict(), tree.root.share)
    tree.reclaimable(ssn, task(ssn, "dev-p0"), tasks(ssn, "prod-r0", "dev-r0"))
    assert (eng.share, eng.allocated.to_dict(), tree.root.share) == snapshot
    assert (tree.total_allocated.milli_cpu, tree.total_allocated.memory) == (2000.0, 4 * gib)


def test_queues_without_hierarchy_annotations_hang_off_the_root_and_tie() -> None:
    ssn = open_session(big_node(), queue("a"), queue("b"), *job("ja", "a", running=5),
                       *job("jb", "b", running=1), conf=HIERARCHY)
    tree = HierarchicalDrf(ssn.total_resource)
    for j in ssn.jobs.values():
        tree.add_job(j, j.allocated, ssn.queues[j.queue])
    assert tree.compare_queues(ssn.queues["a"], ssn.queues["b"]) == 0


def test_incremental_updates_match_a_tree_rebuilt_from_scratch() -> None:
    # prod's pending tasks exhaust memory part-way, which flips the demanding set and with it
    # every leaf's saturation: the incremental tree must still equal a fresh one at each step.
    ssn = open_session(*hierarchy(), *job("dev", "c-dev", running=3, pending=4),
                       *job("prod", "a-prod", running=6, pending=4, cpu=None, memory="1Gi"),
                       *job("sci", "b-sci", running=1, pending=2), conf=HIERARCHY)
    live = HierarchicalDrf(ssn.total_resource)
    extra = {uid: Resource() for uid in ssn.jobs}
    for j in ssn.jobs.values():
        live.add_job(j, j.allocated, ssn.queues[j.queue])
    pending = [t for j in ssn.jobs.values() for t in j.tasks.values() if t.node_name == ""]
    placed: list[TaskInfo] = []
    rng = np.random.default_rng(3)
    for _step in range(40):
        if placed and (not pending or rng.random() < 0.3):
            t = placed.pop(int(rng.integers(len(placed))))
            live.task_removed(ssn, t)
            extra[t.job].sub(t.resreq)
            pending.append(t)
        else:
            t = pending.pop(int(rng.integers(len(pending))))
            live.task_added(ssn, t)
            extra[t.job].add(t.resreq)
            placed.append(t)
        fresh = HierarchicalDrf(ssn.total_resource)
        for j in ssn.jobs.values():
            fresh.add_job(j, j.allocated.clone().add(extra[j.uid]), ssn.queues[j.queue])
        fresh.compare_queues(ssn.queues["c-dev"], ssn.queues["b-sci"])  # forces the computation
        live.compare_queues(ssn.queues["c-dev"], ssn.queues["b-sci"])
        assert _dump(live.root) == _dump(fresh.root)


def _dump(node: Any) -> list[tuple[Any, ...]]:
    out = [(node.name, node.share, node.saturated, sorted(node.allocated.to_dict().items()))]
    for child in node.ordered_children() if node.children is not None else []:
        out.extend(_dump(child))
    return out


# --------------------------------------------------------------------------- allocate with hdrf
# Scenarios of upstream's TestHDRF (plugins/drf/hdrf_test.go): drf orders queues and jobs,
# proportion contributes only queue order / enqueued / reclaim (its Allocatable is off), so
# HDRF alone decides how one node is split.

_FLAGS = ("enableJobOrder", "enableJobReady", "enableJobPipelined", "enableTaskOrder", "enablePreemptable",
          "enableReclaimable", "enablePreemptive", "enableQueueOrder", "enablePredicate", "enableNodeOrder",
          "enableJobEnqueued", "enableJobStarving", "enabledOverused", "enabledAllocatable")


def _flags(*on: str) -> str:
    return "".join(f"    {f}: {'true' if f in on else 'false'}\n" for f in _FLAGS)


HDRF_ALLOCATE = (
    'actions: "allocate"\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true\n'
    + _flags("enableJobOrder", "enableQueueOrder")
    + "- plugins:\n  - name: proportion\n"
    + _flags("enableJobEnqueued", "enableQueueOrder", "enableReclaimable")
)


def _node(cpu: str, memory: str, pods: str) -> dict[str, Any]:
    res = {"cpu": cpu, "memory": memory, "pods": pods}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
            "status": {"capacity": res, "allocatable": res}}


def _group(name: str, q: str, count: int, cpu: str, memory: str) -> list[dict[str, Any]]:
    return [podgroup(name, ns="default", queue=q, min_member=0),
            *[pod(f"{name}-p{i}", name, ns="default", cpu=cpu, memory=memory) for i in range(count)]]


def _bound_per_group(out: dict[str, Any]) -> dict[str, int]:
    return dict(Counter(key.split("/")[1].rsplit("-", 1)[0] for key in out["binds"]))


def test_allocate_splits_a_node_by_rescaled_dominant_shares() -> None:
    # sci uses cpu+memory, eng/dev cpu only, eng/prod memory only: each gets half of what it uses.
    docs = [_node("10", "10G", "50"),
            hqueue("root-sci", "root/sci", "100/50"),
            hqueue("root-eng-dev", "root/eng/dev", "100/50/50"),
            hqueue("root-eng-prod", "root/eng/prod", "100/50/50"),
            *_group("pg1", "root-sci", 10, "1", "1G"),
            *_group("pg21", "root-eng-dev", 10, "1", "0G"),
            *_group("pg22", "root-eng-prod", 10, "0", "1G")]
    assert _bound_per_group(schedule(*docs, conf=HDRF_ALLOCATE)) == {"pg1": 5, "pg21": 5, "pg22": 5}


def test_allocate_gives_saturated_resources_to_the_still_demanding_queues() -> None:
    # Three cpu-only groups exhaust cpu at 10 each; the memory-only groups then split memory.
    docs = [_node("30", "30G", "500"),
            hqueue("root-pg1", "root/pg1", "100/25"),
            hqueue("root-pg2", "root/pg2", "100/25"),
            hqueue("root-pg3-pg31", "root/pg3/pg31", "100/25/50"),
            hqueue("root-pg3-pg32", "root/pg3/pg32", "100/25/50"),
            hqueue("root-pg4", "root/pg4", "100/25"),
            *_group("pg1", "root-pg1", 30, "1", "0G"),
            *_group("pg2", "root-pg2", 30, "1", "0G"),
            *_group("pg31", "root-pg3-pg31", 30, "1", "0G"),
            *_group("pg32", "root-pg3-pg31", 30, "0", "1G"),
            *_group("pg4", "root-pg4", 30, "0", "1G")]
    out = _bound_per_group(schedule(*docs, conf=HDRF_ALLOCATE))
    assert out == {"pg1": 10, "pg2": 10, "pg31": 10, "pg32": 15, "pg4": 15}


def test_reclaim_action_evicts_from_the_queue_above_the_reclaimer_in_the_hierarchy() -> None:
    # sci holds the whole node; eng/dev starts empty, so every sci task is a victim and the
    # reclaim action evicts one to pipeline dev's first task (gang is then satisfied).
    conf = """
actions: "reclaim"
tiers:
- plugins:
  - name: gang
    enableReclaimable: false
    enablePreemptable: false
- plugins:
  - name: drf
    enableHierarchy: true
  - name: predicates
"""
    docs = [big_node(), hqueue("sci", "root/sci", "1/1"), hqueue("dev", "root/eng/dev", "1/1/1"),
            *job("s", "sci", running=10, pending=0), podgroup("d", queue="dev"),
            *[pod(f"d-{i}", "d", cpu="1", memory=None) for i in range(3)]]
    out = schedule(*docs, conf=conf)
    assert len(out["evictions"]) == 1 and out["evictions"][0].startswith("ns/s-r")
    assert out["pipelined"] == {"ns/d-0": "n1"}


def test_drf_share_counts_pipelined_tasks_whether_built_before_or_after_the_event() -> None:
    docs = [big_node(), queue("q"), *job("a", "q", running=1, pending=2), *job("b", "q", running=1, pending=2)]
    ssn = open_session(*docs, conf=FLAT)
    drf = next(p for _opt, p in ssn.plugins if p.name == "drf")
    before = drf.job_attrs["ns/a"].share  # built at 1 cpu, then follows events
    assert before == 0.1
    stmt = ssn.statement()
    stmt.pipeline(task(ssn, "a-p0"), "n1", False)
    stmt.pipeline(task(ssn, "b-p0"), "n1", False)
    # "a" was followed through the event; "b" is built now, from its allocated + pipelined tasks
    assert drf.job_attrs["ns/a"].allocated.milli_cpu == 2000
    assert drf.job_attrs["ns/b"].allocated.milli_cpu == 2000
    assert drf.job_attrs["ns/a"].share == drf.job_attrs["ns/b"].share == 0.2
