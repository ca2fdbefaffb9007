"""capacity: explicit deserved / capability / guarantee quotas, flat and hierarchical.

Quantities: cpu in milli-cores, memory in bytes, ``nvidia.com/gpu`` in milli-units (as the
scheduler stores them). Every expected value below is computed by hand in the comment next
to it. ``pods`` (1 per task) is requested by every task but never checked against quotas.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import builders
from builders import node, pod, podgroup, queue, schedule
from pyvolcano.actions.enqueue import Enqueue
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import TaskInfo
from pyvolcano.framework.arguments import ArgumentError
from pyvolcano.framework.session import Session
from pyvolcano.plugins.capacity import Capacity, CapacitySession
from pyvolcano.plugins.capacity.attrs import MAX_FLOAT, MAX_INT64, QueueAttr, exceeded_part
from pyvolcano.util.priority_queue import PriorityQueue

GI = float(1 << 30)
GPU = "nvidia.com/gpu"


def conf(actions: str, *, hierarchy: bool = False, level: int | None = None) -> str:
    flags = "\n    enableHierarchy: true" if hierarchy else ""
    args = "" if level is None else f"\n    arguments:\n      ancestorReclaimLevel: {level}"
    return f"""
actions: "{actions}"
tiers:
- plugins:
  - name: gang
    enableReclaimable: false
    enablePreemptable: false
  - name: capacity{flags}{args}
  - name: predicates
"""


FLAT = conf("enqueue, allocate")
HIER = conf("enqueue, allocate", hierarchy=True)


def task_pod(name: str, group: str, *, cpu: str | None = "1", memory: str | None = None,
             gpu: str | None = None, on: str = "") -> dict[str, Any]:
    """A pod of PodGroup ``group``; Running on node ``on`` if given, else Pending."""
    d = pod(name, group, cpu=cpu, memory=memory, node_name=on, phase="Running" if on else "Pending")
    if gpu is not None:
        d["spec"]["containers"][0]["resources"]["requests"][GPU] = gpu
    return d


def job(name: str, q: str, *, running: int = 0, pending: int = 0, phase: str | None = None,
        **request: str | None) -> list[dict[str, Any]]:
    """A PodGroup (minMember 1) with ``running`` tasks on n1 and ``pending`` unplaced ones."""
    pg_phase = phase or ("Running" if running else "Inqueue")
    docs = [podgroup(name, queue=q, phase=pg_phase)]
    docs += [task_pod(f"{name}-r{i}", name, on="n1", **request) for i in range(running)]
    docs += [task_pod(f"{name}-p{i}", name, **request) for i in range(pending)]
    return docs


def closed(q: dict[str, Any]) -> dict[str, Any]:
    q["status"]["state"] = "Closed"
    return q


def open_session(*docs: dict[str, Any], conf_text: str = FLAT) -> Session:
    return builders.open_session(*docs, conf=conf_text)


def capacity_of(ssn: Session) -> CapacitySession:
    plugin = next(p for opt, p in ssn.plugins if opt.name == "capacity")
    assert isinstance(plugin, Capacity) and plugin.session is not None
    return plugin.session


def attrs_of(ssn: Session) -> dict[str, QueueAttr]:
    return capacity_of(ssn).opts


def task(ssn: Session, name: str) -> TaskInfo:
    return next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == name)


def tasks(ssn: Session, *names: str) -> list[TaskInfo]:
    return [task(ssn, n) for n in names]


def queue_order(ssn: Session, *names: str) -> list[str]:
    pq: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn, (ssn.queues[n] for n in names))
    return [pq.pop().name for _ in names]


def res(cpu: float = 0.0, memory: float = 0.0, *, gpu: float | None = None,
        pods: float | None = None) -> Resource:
    scalars = {name: v for name, v in ((GPU, gpu), ("pods", pods)) if v is not None}
    return Resource(cpu, memory, scalars)


# =========================================================================== flat: attributes


def test_real_capability_is_total_minus_all_guarantees_plus_own_capped_by_capability() -> None:
    # total cpu 8000, mem 16Gi, pods 110; Σ guarantee (qa, qb and the jobless qc) = cpu 4000, mem 3Gi.
    # qa: (4000, 13Gi, 110) + (2000, 2Gi) = (6000, 15Gi, 110), capped by capability cpu 6000
    #     (memory unset ⇒ unlimited). qb: (4000, 13Gi) + (1000, 1Gi) = (5000, 14Gi), no capability.
    ssn = open_session(
        node("n1", cpu="8", memory="16Gi"),
        queue("qa", guarantee={"resource": {"cpu": "2", "memory": "2Gi"}}, capability={"cpu": "6"},
              deserved={"cpu": "3", "memory": "20Gi"}),
        queue("qb", guarantee={"resource": {"cpu": "1", "memory": "1Gi"}}, deserved={"cpu": "1"}),
        queue("qc", guarantee={"resource": {"cpu": "1"}}),
        *job("ja", "qa", running=1, pending=1, memory="1Gi"),
        *job("jb", "qb", pending=1),
    )
    opts = attrs_of(ssn)
    assert sorted(opts) == ["qa", "qb"]  # flat mode: only queues with jobs
    qa, qb = opts["qa"], opts["qb"]
    assert qa.real_capability == res(6000, 15 * GI, pods=110)
    assert qb.real_capability == res(5000, 14 * GI, pods=110)
    # qa deserved (3000, 20Gi) capped by realCapability → (3000, 15Gi); qb (1000, 0) raised to guarantee.
    assert qa.deserved == res(3000, 15 * GI)
    assert qb.deserved == res(1000, 1 * GI)
    assert qa.allocated == res(1000, 1 * GI, pods=1)
    assert qa.request == res(2000, 2 * GI, pods=2)
    assert qa.share == pytest.approx(1 / 3)  # max(1000/3000, 1Gi/15Gi)
    assert qb.share == 0.0


def test_exceeded_part_drops_scalar_dimensions_that_do_not_exceed() -> None:
    out = exceeded_part(res(4000, 2 * GI, gpu=2000), res(1000, 4 * GI, gpu=2000))
    assert (out.milli_cpu, out.memory, out.scalars) == (3000.0, 0.0, {})


def test_deserved_scalar_is_not_capped_when_others_guarantee_all_of_it() -> None:
    # Every gpu is guaranteed to qg, so ExceededPart(total, Σ guarantee) has no gpu dimension
    # and q's realCapability has none either: min_dim(..., INFINITY) leaves deserved gpu at 1000.
    ssn = open_session(
        node("n1", nvidia_com__gpu="2"),
        queue("qg", guarantee={"resource": {GPU: "2"}}),
        queue("q", deserved={GPU: "1"}),
        *job("j", "q", pending=1),
        *job("g", "qg", pending=1),
    )
    q = attrs_of(ssn)["q"]
    assert GPU not in q.real_capability.scalars
    assert q.deserved.get(GPU) == 1000.0


def test_capability_cpu_or_memory_of_zero_means_unlimited() -> None:
    ssn = open_session(node("n1"), queue("q", capability={"cpu": "0", "memory": "1Gi"}),
                       *job("j", "q", pending=1))
    q = attrs_of(ssn)["q"]
    assert q.capability.milli_cpu == MAX_FLOAT
    assert q.real_capability.milli_cpu == 4000.0 and q.real_capability.memory == GI


def test_queue_without_deserved_is_best_effort_with_share_one() -> None:
    ssn = open_session(node("n1"), queue("be"), *job("j", "be", pending=1))
    assert attrs_of(ssn)["be"].share == 1.0


# =========================================================================== flat: order


def test_queue_order_is_priority_then_lower_share_then_deserved_before_best_effort() -> None:
    # low: 1000/4000 = 0.25; full: 4000/4000 = 1; be: best effort = 1; prio: share 1 but priority 5.
    ssn = open_session(
        node("n1", cpu="16", memory="32Gi"),
        queue("be"),
        queue("full", deserved={"cpu": "4"}),
        queue("low", deserved={"cpu": "4"}),
        queue("prio", deserved={"cpu": "4"}, priority=5),
        *job("a", "be", running=1),
        *job("b", "full", running=4),
        *job("c", "low", running=1),
        *job("d", "prio", running=4),
    )
    assert queue_order(ssn, "be", "full", "low", "prio") == ["prio", "low", "full", "be"]


# =========================================================================== flat: allocate


def test_allocate_lets_a_queue_borrow_beyond_deserved_up_to_capability() -> None:
    docs = [node("n1", cpu="8"), queue("q", deserved={"cpu": "1"}, capability={"cpu": "3"})]
    for i in range(4):
        docs += job(f"j{i}", "q", pending=1)
    out = schedule(*docs, conf=FLAT)
    assert len(out["binds"]) == 3


def test_allocate_checks_only_the_dimensions_the_task_requests() -> None:
    # q holds 2Gi of its 2Gi memory capability: a cpu-only task still fits, a 1Gi task does not.
    out = schedule(
        node("n1", cpu="8", memory="16Gi"),
        queue("q", capability={"cpu": "4", "memory": "2Gi"}),
        *job("held", "q", running=1, memory="2Gi"),
        *job("cpu-only", "q", pending=1),
        *job("with-mem", "q", pending=1, memory="1Gi"),
        conf=FLAT,
    )
    assert out["binds"] == {"ns/cpu-only-p0": "n1"}


def test_closed_queue_gets_no_allocation_and_no_admission() -> None:
    out = schedule(
        node("n1"),
        closed(queue("q")),
        *job("inq", "q", pending=1),
        podgroup("pend", queue="q", phase="Pending", minResources={"cpu": "1"}),
        conf=FLAT,
    )
    assert out["binds"] == {}
    assert out["podgroups"]["ns/pend"] == "Pending"


# =========================================================================== flat: enqueue


def test_enqueue_counts_allocated_and_inqueue_against_real_capability() -> None:
    # held: 2000 allocated, minResources 2000 ⇒ elastic 0 and nothing left to reserve.
    # first: 2000 + 2000 + 0 ≤ 4000 → Inqueue (inqueue 2000); second: 1000 + 2000 + 2000 > 4000.
    ssn = open_session(
        node("n1", cpu="8"),
        queue("q", capability={"cpu": "4"}),
        podgroup("held", queue="q", phase="Running", minResources={"cpu": "2"}),
        task_pod("held-r0", "held", on="n1"),
        task_pod("held-r1", "held", on="n1"),
        podgroup("first", queue="q", phase="Pending", minResources={"cpu": "2"}),
        podgroup("second", queue="q", phase="Pending", minResources={"cpu": "1"}),
    )
    Enqueue().execute(ssn)
    phases = {uid: j.podgroup.phase for uid, j in ssn.jobs.items() if j.podgroup is not None}
    assert phases == {"ns/held": "Running", "ns/first": "Inqueue", "ns/second": "Pending"}
    assert attrs_of(ssn)["q"].inqueue.milli_cpu == 2000.0
    assert ssn.podgroup_events["ns/second"] == [
        "Normal Unschedulable queue resource quota insufficient: insufficient cpu"
    ]


def test_elastic_resources_of_running_jobs_do_not_block_admission() -> None:
    # grown: 3000 allocated, minResources 1000 ⇒ elastic 2000. new: 2000 + 3000 − 2000 ≤ 4000.
    out = schedule(
        node("n1", cpu="8"),
        queue("q", capability={"cpu": "4"}),
        podgroup("grown", queue="q", phase="Running", minResources={"cpu": "1"}),
        *(task_pod(f"grown-r{i}", "grown", on="n1") for i in range(3)),
        podgroup("new", queue="q", phase="Pending", minResources={"cpu": "2"}),
        conf=conf("enqueue"),
    )
    assert out["podgroups"]["ns/new"] == "Inqueue"


# =========================================================================== flat: preemptive


def test_preemptive_needs_room_under_capability_and_some_dimension_within_deserved() -> None:
    # q: allocated (2000, 1Gi), deserved (2000, 4Gi), capability (4000, 8Gi).
    ssn = open_session(
        node("n1", cpu="16", memory="32Gi"),
        queue("q", deserved={"cpu": "2", "memory": "4Gi"}, capability={"cpu": "4", "memory": "8Gi"}),
        *job("held", "q", running=1, cpu="2", memory="1Gi"),
        *job("small", "q", pending=1, memory="1Gi"),
        *job("big-mem", "q", pending=1, memory="4Gi"),
        *job("too-big", "q", pending=1, cpu="3"),
    )
    q = ssn.queues["q"]
    cs = capacity_of(ssn)
    assert cs.preemptive(q, [task(ssn, "small-p0")])  # memory 2Gi ≤ 4Gi
    assert not cs.preemptive(q, [task(ssn, "big-mem-p0")])  # cpu 3000 > 2000, memory 5Gi > 4Gi
    assert not cs.preemptive(q, [task(ssn, "too-big-p0")])  # cpu 5000 > capability 4000


# =========================================================================== flat: reclaimable


def reclaim_scene(victim_queue: dict[str, Any], *, reclaimer: dict[str, str | None] | None = None,
                  victim: dict[str, str | None] | None = None) -> Session:
    """qr reclaims from victim queue qv, which runs four tasks (1 cpu each unless ``victim`` says)."""
    return open_session(
        node("n1", cpu="8", memory="16Gi", nvidia_com__gpu="4"),
        queue("qr", deserved={"cpu": "4", GPU: "4"}),
        victim_queue,
        *job("r", "qr", pending=1, **(reclaimer or {})),
        *job("v", "qv", running=4, **(victim or {})),
    )


def victims(ssn: Session, reclaimer: str, *candidates: str) -> list[str]:
    chosen, _vote = capacity_of(ssn).reclaimable(task(ssn, reclaimer), tasks(ssn, *candidates))
    return sorted(t.name for t in chosen)


ALL_V = ("v-r0", "v-r1", "v-r2", "v-r3")


def test_reclaimable_takes_victims_only_while_their_queue_stays_above_deserved() -> None:
    # qv holds 4000 against deserved 2000: two victims bring it down to deserved.
    ssn = reclaim_scene(queue("qv", deserved={"cpu": "2"}))
    assert len(victims(ssn, "r-p0", *ALL_V)) == 2


def test_reclaimable_never_takes_a_queue_below_its_guarantee() -> None:
    # Tasks of (1000, 2Gi); qv holds (4000, 8Gi) against deserved (2000, 8Gi). Cpu alone would
    # allow two victims, but the 6Gi memory guarantee allows only one: 8Gi − 2Gi = 6Gi.
    qv = queue("qv", deserved={"cpu": "2", "memory": "8Gi"}, guarantee={"resource": {"memory": "6Gi"}})
    ssn = reclaim_scene(qv, victim={"memory": "2Gi"})
    assert len(victims(ssn, "r-p0", *ALL_V)) == 1


def test_task_sharing_no_dimension_with_its_queue_deserved_is_an_immediate_victim() -> None:
    # qv deserves only gpu; its cpu tasks are victims however little it holds.
    ssn = reclaim_scene(queue("qv", deserved={GPU: "1"}))
    assert victims(ssn, "r-p0", *ALL_V) == sorted(ALL_V)


def test_reclaimable_skips_candidates_sharing_no_dimension_with_the_reclaimer() -> None:
    # The reclaimer asks for gpu only; the cpu tasks of qv cannot help it.
    ssn = reclaim_scene(queue("qv", deserved={GPU: "1"}), reclaimer={"cpu": None, "gpu": "1"})
    assert victims(ssn, "r-p0", *ALL_V) == []


def test_reclaim_action_evicts_from_the_queue_over_deserved_and_pipelines_the_reclaimer() -> None:
    # n1 is full with qv's four tasks (4000 > deserved 2000); qr (deserved 2000) is starving.
    out = schedule(
        node("n1", cpu="4", memory="8Gi"),
        queue("qr", deserved={"cpu": "2"}),
        queue("qv", deserved={"cpu": "2"}),
        *job("v", "qv", running=4),
        *job("r", "qr", pending=1),
        conf=conf("reclaim"),
    )
    assert len(out["evictions"]) == 1 and out["evictions"][0].startswith("ns/v-r")
    assert out["pipelined"] == {"ns/r-p0": "n1"}


# =========================================================================== hierarchy: attributes
#
#                root
#             /        \
#      p (cap 8/8Gi/4gpu, g cpu 2, d cpu 4)     q (g 1/1Gi, d cpu 2)
#        /            \
#   c (cap cpu 2,     d (g cpu 1)
#      d 1/1Gi)


def tree_scene(*extra: dict[str, Any], conf_text: str = HIER) -> Session:
    return open_session(
        node("n1", cpu="16", memory="32Gi", nvidia_com__gpu="8"),
        queue("root"),
        queue("p", parent="root", capability={"cpu": "8", "memory": "8Gi", GPU: "4"},
              guarantee={"resource": {"cpu": "2"}}, deserved={"cpu": "4"}),
        queue("q", guarantee={"resource": {"cpu": "1", "memory": "1Gi"}}, deserved={"cpu": "2"}),
        queue("c", parent="p", capability={"cpu": "2"}, deserved={"cpu": "1", "memory": "1Gi"}),
        queue("d", parent="p", guarantee={"resource": {"cpu": "1"}}),
        *job("jc", "c", running=1, memory="1Gi"),
        *job("jd", "d", pending=1, memory="1Gi"),
        *extra,
        conf_text=conf_text,
    )


def test_hierarchy_links_every_queue_to_its_parent_defaulting_to_root() -> None:
    opts = attrs_of(tree_scene())
    assert sorted(opts) == ["c", "d", "p", "q", "root"]
    assert opts["c"].ancestors == ("root", "p") and opts["q"].ancestors == ("root",)
    assert sorted(opts["p"].children) == ["c", "d"] and sorted(opts["root"].children) == ["p", "q"]


def test_root_is_unlimited_and_sums_its_childrens_deserved_and_guarantee() -> None:
    root = attrs_of(tree_scene())["root"]
    assert root.capability == Resource(MAX_FLOAT, MAX_FLOAT, {GPU: MAX_INT64, "pods": MAX_INT64})
    assert root.real_capability == root.capability
    assert root.guarantee == res(3000, 1 * GI)  # p (2000) + q (1000, 1Gi)
    assert root.deserved == res(6000, 1 * GI)  # p (4000) + q max(2000, guarantee) = (2000, 1Gi)


def test_child_inherits_unset_capability_dimensions_from_its_parent() -> None:
    opts = attrs_of(tree_scene())
    assert opts["c"].capability == Resource(2000, 8 * GI, {GPU: 4000, "pods": MAX_INT64})
    assert opts["d"].capability == Resource(8000, 8 * GI, {GPU: 4000, "pods": MAX_INT64})


def test_child_real_capability_is_parent_headroom_after_sibling_guarantees_capped_by_capability() -> None:
    # p.real = min(unlimited, p.cap) = (8000, 8Gi, gpu 4000). Σ guarantee of c and d = cpu 1000:
    # headroom (7000, 8Gi, 4000); c: + 0 → capped at cpu 2000; d: + 1000 → (8000, 8Gi, 4000).
    opts = attrs_of(tree_scene())
    assert opts["p"].real_capability == Resource(8000, 8 * GI, {GPU: 4000, "pods": MAX_INT64})
    assert opts["c"].real_capability == Resource(2000, 8 * GI, {GPU: 4000, "pods": MAX_INT64})
    assert opts["d"].real_capability == Resource(8000, 8 * GI, {GPU: 4000, "pods": MAX_INT64})
    assert opts["d"].deserved == res(1000)  # raised to its guarantee


def test_allocations_are_charged_to_every_ancestor_and_follow_events() -> None:
    ssn = tree_scene()
    opts = attrs_of(ssn)
    for name in ("c", "p", "root"):
        assert opts[name].allocated == res(1000, 1 * GI, pods=1)
    assert opts["d"].allocated == Resource() and opts["p"].request == res(2000, 2 * GI, pods=2)
    shares = (opts["c"].share, opts["p"].share, opts["root"].share)
    assert shares == (1.0, 0.25, 1.0)  # c: 1000/1000; p: 1000/4000; root: max(1/6, 1Gi/1Gi)
    stmt = ssn.statement()
    stmt.allocate(task(ssn, "jd-p0"), ssn.nodes["n1"])
    assert opts["p"].allocated == res(2000, 2 * GI, pods=2) and opts["root"].allocated.milli_cpu == 2000.0
    assert opts["d"].share == 1.0
    # Upstream: ancestors keep their session-open share.
    assert opts["p"].share == 0.25
    stmt.discard()
    assert opts["p"].allocated == res(1000, 1 * GI, pods=1)


# =========================================================================== hierarchy: readiness


BROKEN = {
    "missing-parent": [queue("x", parent="nowhere")],
    "cycle": [queue("x", parent="y"), queue("y", parent="x")],
    "job-in-non-leaf": [queue("x"), queue("x1", parent="x"), *job("in-x", "x", pending=1)],
}


@pytest.mark.parametrize("breakage", [None, *BROKEN])
def test_broken_tree_makes_every_quota_check_reject(breakage: str | None) -> None:
    docs = [
        node("n1"),
        queue("root"),
        queue("ok", deserved={"cpu": "2"}),
        *job("fits", "ok", pending=1),
        podgroup("admit", queue="ok", phase="Pending", minResources={"cpu": "1"}),
        *(BROKEN[breakage] if breakage else []),
    ]
    ssn = open_session(*docs, conf_text=HIER)
    cs = capacity_of(ssn)
    ok = ssn.queues["ok"]
    fits = task(ssn, "fits-p0")
    verdicts = (
        cs.allocatable(ok, fits),
        cs.preemptive(ok, [fits]),
        cs.job_enqueueable(ssn.jobs["ns/admit"]) > 0,
        cs.reclaimable(fits, [])[1] > 0,
    )
    assert verdicts == ((True,) * 4 if breakage is None else (False,) * 4)
    out = schedule(*docs, conf=HIER)
    assert out["binds"] == ({"ns/fits-p0": "n1"} if breakage is None else {})
    assert out["podgroups"]["ns/admit"] == ("Inqueue" if breakage is None else "Pending")


def test_missing_root_queue_makes_the_tree_not_ready() -> None:
    ssn = open_session(node("n1"), queue("ok"), *job("fits", "ok", pending=1), conf_text=HIER)
    assert not capacity_of(ssn).ready


# =========================================================================== hierarchy: order
#
#            root
#          /      \
#     A (d 4)     B (d 4)
#     /     \         \
#  a1 (d 4) a2 (d 4)  b1 (d 1)


def order_scene(*extra: dict[str, Any]) -> Session:
    return open_session(
        node("n1", cpu="16", memory="32Gi"),
        queue("root"),
        queue("A", deserved={"cpu": "4"}),
        queue("B", deserved={"cpu": "4"}),
        queue("a1", parent="A", deserved={"cpu": "4"}),
        queue("a2", parent="A", deserved={"cpu": "4"}),
        queue("b1", parent="B", deserved={"cpu": "1"}),
        *job("ja1", "a1", pending=1),
        *job("ja2", "a2", running=3),
        *job("jb1", "b1", running=1),
        *extra,
        conf_text=HIER,
    )


def test_leaves_are_compared_through_their_ancestors_below_the_common_one() -> None:
    # a1 (share 0) vs b1 (share 1) is decided by A (3000/4000) against B (1000/4000): b1 first.
    # a1 vs a2 share parent A, so their own shares decide: a1 (0) before a2 (0.75).
    ssn = order_scene()
    assert queue_order(ssn, "a1", "b1") == ["b1", "a1"]
    assert queue_order(ssn, "a2", "a1") == ["a1", "a2"]


def test_leaf_queues_come_before_non_leaf_queues() -> None:
    ssn = order_scene()
    assert queue_order(ssn, "B", "A", "a2") == ["a2", "B", "A"]


def test_victim_queue_sharing_a_deeper_ancestor_with_the_preemptor_goes_first() -> None:
    ssn = order_scene()
    a1, a2, b1 = (ssn.queues[n] for n in ("a1", "a2", "b1"))
    assert ssn.victim_queue_order_fn(a2, b1, a1) and not ssn.victim_queue_order_fn(b1, a2, a1)


# =========================================================================== hierarchy: quotas


def test_allocation_must_fit_the_real_capability_of_every_ancestor() -> None:
    # x and y each allow 2 cpu, but their parent P allows 2 cpu in total and x holds both.
    def run(x_running: int) -> dict[str, Any]:
        return schedule(
            node("n1", cpu="8"),
            queue("root"),
            queue("P", capability={"cpu": "2"}),
            queue("x", parent="P", capability={"cpu": "2"}),
            queue("y", parent="P", capability={"cpu": "2"}),
            *(job("jx", "x", running=x_running) if x_running else []),
            *job("jy", "y", pending=1),
            conf=HIER,
        )

    assert run(x_running=2)["binds"] == {}
    assert run(x_running=1)["binds"] == {"ns/jy-p0": "n1"}


def preempt_scene(level: int) -> Session:
    # x holds its whole deserved (1000); its parent P holds 1000 of 4000.
    return open_session(
        node("n1", cpu="16", memory="32Gi"),
        queue("root"),
        queue("P", deserved={"cpu": "4"}),
        queue("x", parent="P", deserved={"cpu": "1"}),
        *job("held", "x", running=1),
        *job("more", "x", pending=1),
        conf_text=conf("reclaim", hierarchy=True, level=level),
    )


@pytest.mark.parametrize(("level", "expected"), [(0, False), (1, True)])
def test_preemptive_consults_ancestors_within_the_reclaim_level(level: int, expected: bool) -> None:
    ssn = preempt_scene(level)
    assert capacity_of(ssn).preemptive(ssn.queues["x"], [task(ssn, "more-p0")]) is expected


def ancestor_reclaim_scene(level: int, *, reclaimer_parent: str, reclaimer_deserved: str | None = "2",
                           victim_deserved: str | None = "1") -> Session:
    """Reclaimer queue r (under ``reclaimer_parent``) against victim queue v under P2 holding 3 cpu.

    P2 deserves 6000 and holds 3000: it is not over deserved.
    """
    def deserved(cpu: str | None) -> dict[str, Any]:
        return {} if cpu is None else {"deserved": {"cpu": cpu}}

    return open_session(
        node("n1", cpu="3", memory="8Gi"),
        queue("root"),
        queue("P1", deserved={"cpu": "2"}),
        queue("P2", deserved={"cpu": "6"}),
        queue("r", parent=reclaimer_parent, **deserved(reclaimer_deserved)),
        queue("v", parent="P2", **deserved(victim_deserved)),
        *job("jr", "r", pending=1),
        *job("jv", "v", running=3),
        conf_text=conf("reclaim", hierarchy=True, level=level),
    )


V3 = ("jv-r0", "jv-r1", "jv-r2")


@pytest.mark.parametrize(("level", "count"), [(0, 2), (1, 0)])
def test_cross_parent_reclaim_requires_the_victims_parent_to_be_over_deserved(level: int, count: int) -> None:
    # Leaf v: 3000 > deserved 1000, two victims at level 0. Level 1 also checks P2: 3000 ≤ 6000.
    ssn = ancestor_reclaim_scene(level, reclaimer_parent="P1")
    assert len(victims(ssn, "jr-p0", *V3)) == count


def test_ancestor_shared_with_the_reclaimer_is_not_checked() -> None:
    ssn = ancestor_reclaim_scene(1, reclaimer_parent="P2")
    assert len(victims(ssn, "jr-p0", *V3)) == 2


@pytest.mark.parametrize(("reclaimer_deserved", "count"), [(None, 0), ("2", 3)])
def test_immediate_victims_under_a_shared_ancestor_need_a_reclaimer_with_deserved(
    reclaimer_deserved: str | None, count: int
) -> None:
    # v has no deserved: all its tasks are immediate victims, unless r (same parent P2) has no
    # deserved on what it asks for either.
    ssn = ancestor_reclaim_scene(1, reclaimer_parent="P2", reclaimer_deserved=reclaimer_deserved,
                                 victim_deserved=None)
    assert len(victims(ssn, "jr-p0", *V3)) == count


# =========================================================================== arguments


def test_negative_ancestor_reclaim_level_falls_back_to_zero() -> None:
    assert Capacity({"ancestorReclaimLevel": -3}).ancestor_reclaim_level == 0


def test_non_integer_ancestor_reclaim_level_is_rejected() -> None:
    with pytest.raises(ArgumentError, match="ancestorReclaimLevel"):
        Capacity({"ancestorReclaimLevel": "high"})


# =========================================================================== property

_CPU = st.integers(min_value=1, max_value=4)
_MEM = st.sampled_from([None, "1Gi", "2Gi"])
_GPU = st.sampled_from([None, None, "1", "2"])


PodSpec = tuple[str, int, str | None, str | None]  # queue, cpu, memory, gpu
Scenario = tuple[bool, dict[str, dict[str, int]], list[PodSpec]]


@st.composite
def quota_scenarios(draw: st.DrawFn) -> Scenario:
    hierarchy = draw(st.booleans())
    caps = {
        name: draw(st.fixed_dictionaries({}, optional={"cpu": st.integers(1, 8), "memory": st.integers(1, 8),
                                                        GPU: st.integers(0, 4)}))
        for name in ("qa", "qb", "qc")
    }
    pods = draw(st.lists(st.tuples(st.sampled_from(["qa", "qb"]), _CPU, _MEM, _GPU), min_size=1, max_size=12))
    return hierarchy, caps, pods


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(quota_scenarios())
def test_allocate_never_takes_a_queue_beyond_its_capability_on_a_requested_dimension(
    scenario: Scenario,
) -> None:
    hierarchy, caps, pods = scenario
    # Hierarchical: qc is the parent of qa and qb, so its capability bounds their sum.
    docs: list[dict[str, Any]] = [node("n1", cpu="16", memory="32Gi", nvidia_com__gpu="8"),
                                  node("n2", cpu="16", memory="32Gi", nvidia_com__gpu="8"), queue("root")]
    for name, cap in caps.items():
        parent = {"parent": "qc"} if hierarchy and name != "qc" else {}
        capability = {k: (f"{v}Gi" if k == "memory" else str(v)) for k, v in cap.items()}
        docs.append(queue(name, capability=capability, **parent))
    requests: dict[str, tuple[str, Resource]] = {}
    for i, (q, cpu, memory, gpu) in enumerate(pods):
        docs += job(f"j{i}", q, pending=1, cpu=str(cpu), memory=memory, gpu=gpu)
        request = {"cpu": str(cpu), "memory": memory or "0", GPU: gpu or "0"}
        requests[f"ns/j{i}-p0"] = (q, Resource.from_list(request))
    out = schedule(*docs, conf=HIER if hierarchy else FLAT)
    used = {name: Resource() for name in caps}
    for key in out["binds"]:
        q, req = requests[key]
        used[q].add(req)
        if hierarchy:
            used["qc"].add(req)
    for name, cap in caps.items():
        limit = Resource.from_list({k: (f"{v}Gi" if k == "memory" else str(v)) for k, v in cap.items()})
        for dim in ("cpu", "memory", GPU):
            spec_has = dim in cap and (dim == GPU or cap[dim] > 0)
            if spec_has and used[name].get(dim) > 0:
                assert used[name].get(dim) <= limit.get(dim), (name, dim, used[name], cap)
