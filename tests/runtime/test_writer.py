"""The live scheduler and the simulator write a session's decisions the same way.

Both hand the session's result to one DecisionWriter; they differ only in how its writes
are carried out (worker pools or at once). Run the same cluster through one live session
and one simulated session, and the store ends up with the same binds, PodGroup status,
pending pods' PodScheduled conditions and Events. The live scheduler's one difference, a
PodGroup status whose only news is gang's ``Scheduled`` condition carried into the next
session's write, ends in the same objects one session later (tested below).
"""

from __future__ import annotations

from typing import Any

import pytest

from builders import node, pod, podgroup, queue
from pyvolcano.api.objects import PodGroup, PodGroupCondition
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.cache.ingest import apply_event
from pyvolcano.conf import default_configuration
from pyvolcano.kube.events import EventRecorder
from pyvolcano.runtime.cycle import SessionResult
from pyvolcano.runtime.registry import default_registry
from pyvolcano.runtime.scheduler import LiveScheduler
from pyvolcano.runtime.writer import DecisionWriter, _only_scheduled
from pyvolcano.simulator.runtime import Simulation
from pyvolcano.store.base import Store
from pyvolcano.store.memory import InMemoryStore

DOCS: list[dict[str, Any]] = [
    queue("default"),
    node("n1", cpu="4"),
    node("n2", cpu="4"),
    # fits: two 1-CPU pods
    podgroup("fits", queue="default", min_member=2),
    pod("fits-0", "fits"), pod("fits-1", "fits"),
    # never fits: a gang of two 8-CPU pods
    podgroup("big", queue="default", min_member=2),
    pod("big-0", "big", cpu="8"), pod("big-1", "big", cpu="8"),
    # only one of its three 3-CPU pods can wait for the others
    podgroup("half", queue="default", min_member=3),
    pod("half-0", "half", cpu="3"), pod("half-1", "half", cpu="3"), pod("half-2", "half", cpu="3"),
]


def _written(store: Store) -> dict[str, Any]:
    """What a session writes, without what differs by construction (Event names, object metadata)."""
    pods = {}
    for p in store.list("Pod"):
        conds = [{k: v for k, v in c.items() if k != "lastTransitionTime"}
                 for c in (p.get("status") or {}).get("conditions") or [] if c.get("type") == "PodScheduled"]
        pods[p["metadata"]["name"]] = ((p.get("spec") or {}).get("nodeName", ""), conds)
    podgroups = {pg["metadata"]["name"]: pg.get("status") for pg in store.list("PodGroup")}
    events = sorted((e["regarding"]["kind"], e["regarding"]["name"], e["type"], e["reason"], e["note"],
                     e["action"], e["reportingController"]) for e in store.list("Event"))
    return {"pods": pods, "podgroups": podgroups, "events": events}


def _live() -> dict[str, Any]:
    store = InMemoryStore(clock=lambda: 0.0)
    for doc in DOCS:
        store.create(doc)
    events = EventRecorder(store, controller="volcano", instance="live", clock=lambda: 0.0)
    sched = LiveScheduler(store, seed=0, clock=lambda: 0.0, events=events)
    sched.writer.carry_scheduled = False  # upstream's writes, one session (the carried status: below)
    try:
        sched.run_once()
    finally:
        sched.close(wait=True)
        events.flush()
        events.close()
    return _written(store)


def _simulated() -> dict[str, Any]:
    sim = Simulation(config=default_configuration(), registry=default_registry(), seed=0)
    for doc in DOCS:
        sim.restore(doc)
    sim.stop_when_done = False
    sim.run(until=0.5)  # the session at t=0, not the next one
    assert sim.sessions == 1
    return _written(sim.store)


def test_live_and_simulated_sessions_write_the_same_store_objects() -> None:
    live, simulated = _live(), _simulated()
    assert live["pods"] == simulated["pods"]
    assert live["podgroups"] == simulated["podgroups"]
    assert live["events"] == simulated["events"]


def test_a_session_writes_binds_conditions_status_and_events() -> None:
    written = _simulated()
    assert {name for name, (node_name, _c) in written["pods"].items() if node_name} == {"fits-0", "fits-1"}
    assert written["pods"]["big-0"][1] == [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                            "message": written["pods"]["big-0"][1][0]["message"]}]
    assert {name: status["conditions"][0]["type"] for name, status in written["podgroups"].items()} == {
        "fits": "Scheduled", "big": "Unschedulable", "half": "Unschedulable"}
    reasons = {(kind, name, reason) for kind, name, _t, reason, _n, _a, _c in written["events"]}
    assert reasons == {("Pod", "fits-0", "Scheduled"), ("Pod", "fits-1", "Scheduled"),
                       ("PodGroup", "big", "Unschedulable"), ("PodGroup", "half", "Unschedulable"),
                       *{("Pod", p, "FailedScheduling") for p in ("big-0", "big-1", "half-0", "half-1", "half-2")}}


class _AwayStore(InMemoryStore):
    """An in-memory store whose status writes fail as an unavailable API server's do while ``away``."""

    def __init__(self) -> None:
        super().__init__(clock=lambda: 0.0)
        self.away = False

    def patch(self, kind: str, namespace: str | None, name: str, patch: dict[str, Any], *,
              subresource: str | None = None) -> dict[str, Any]:
        if self.away and subresource == "status":
            from pyvolcano.store.base import Unavailable

            raise Unavailable(kind, f"{namespace}/{name}", "etcdserver: leader changed")
        return super().patch(kind, namespace, name, patch, subresource=subresource)


def test_status_and_conditions_an_unavailable_server_refused_are_written_with_the_next_session() -> None:
    store = _AwayStore()
    for doc in DOCS:
        store.create(doc)
    sched = LiveScheduler(store, seed=0, clock=lambda: 0.0, bind_workers=1)
    sched.writer.carry_scheduled = False

    def written_so_far() -> dict[str, Any]:
        sched._pool.submit(lambda: None).result()  # one bind worker: every earlier write is done
        return _written(store)

    try:
        store.away = True
        sched.run_once()
        assert written_so_far()["pods"]["big-0"][1] == []
        assert sched.writer.unwritten_podgroups == 3
        store.away = False
        sched.run_once()  # nothing changed in this session: only the refused writes go again
        written = written_so_far()
    finally:
        sched.close(wait=True)
    assert sched.writer.unwritten_podgroups == 0
    assert {name: status["conditions"][0]["type"] for name, status in written["podgroups"].items()} == {
        "fits": "Scheduled", "big": "Unschedulable", "half": "Unschedulable"}
    assert written["pods"]["big-0"][1][0]["reason"] == "Unschedulable"


class _CountingStore(InMemoryStore):
    """An in-memory store that counts status patches by kind."""

    def __init__(self) -> None:
        super().__init__(clock=lambda: 0.0)
        self.status_patches: list[tuple[str, str]] = []
        self.bodies: list[dict[str, Any]] = []

    def patch(self, kind: str, namespace: str | None, name: str, patch: dict[str, Any], *,
              subresource: str | None = None) -> dict[str, Any]:
        if subresource == "status":
            self.status_patches.append((kind, name))
            self.bodies.append(patch)
        return super().patch(kind, namespace, name, patch, subresource=subresource)


def test_a_restarted_scheduler_leaves_the_pending_pods_conditions_the_store_already_holds() -> None:
    # upstream's taskUnschedulable compares with the pod's stored condition (podConditionHaveUpdate)
    store = _CountingStore()
    for doc in [queue("default"), node("n1", cpu="4"), podgroup("big", queue="default", min_member=2),
                pod("big-0", "big", cpu="8"), pod("big-1", "big", cpu="8")]:
        store.create(doc)
    first = LiveScheduler(store, seed=0, clock=lambda: 0.0, bind_workers=1)
    try:
        first.run_once()
        first._pool.submit(lambda: None).result()  # one bind worker: every earlier write is done
    finally:
        first.close(wait=True)
    assert sorted(n for k, n in store.status_patches if k == "Pod") == ["big-0", "big-1"]
    store.status_patches.clear()
    restarted = LiveScheduler(store, seed=0, clock=lambda: 0.0, bind_workers=1)
    try:
        restarted.run_once()
        restarted._pool.submit(lambda: None).result()
    finally:
        restarted.close(wait=True)
    assert store.status_patches == []  # the conditions and the PodGroup status are as stored


def test_a_pipelined_pods_nomination_goes_with_its_condition_in_one_request() -> None:
    # upstream's taskUnschedulable writes the condition and nominatedNodeName in one status update
    store = _CountingStore()
    cache = SchedulerCache()
    for doc in [queue("default"), node("n1"), podgroup("pg", queue="default", min_member=2),
                pod("p0", "pg"), pod("p1", "pg")]:
        apply_event(cache, "ADDED", doc["kind"], store.create(doc))
    for task in cache.tasks.values():  # what session close derived for both pending pods
        task.pod.conditions = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                "message": "once resource is released"}]
    writer = DecisionWriter(store, cache, clock=lambda: 0.0)
    writer.write(SessionResult(nominated={"ns/p0": "n1"}))
    assert sorted(store.status_patches) == [("Pod", "p0"), ("Pod", "p1")]
    p0 = store.get("Pod", "ns", "p0")["status"]
    assert p0["nominatedNodeName"] == "n1" and p0["conditions"][0]["reason"] == "Unschedulable"
    store.status_patches.clear()
    writer.write(SessionResult(nominated={"ns/p1": "n1"}))  # conditions unchanged: the nomination alone
    assert store.status_patches == [("Pod", "p1")]
    assert store.bodies[-1] == {"status": {"nominatedNodeName": "n1"}}


def _conditions(store: Store, name: str) -> list[dict[str, Any]]:
    p = store.get("Pod", "ns", name)
    return [{k: v for k, v in c.items() if k != "lastTransitionTime"}
            for c in (p.get("status") or {}).get("conditions") or [] if c.get("type") == "PodScheduled"]


def test_a_running_jobs_pod_beyond_its_min_member_gets_the_podscheduled_condition_too() -> None:
    store = InMemoryStore(clock=lambda: 0.0)
    for doc in (queue("default"), node("n1", cpu="4"), podgroup("elastic", queue="default", min_member=1),
                pod("elastic-0", "elastic")):
        store.create(doc)
    sched = LiveScheduler(store, seed=0, clock=lambda: 0.0)
    try:
        sched.run_once()
        sched.run_once()
        assert store.get("PodGroup", "ns", "elastic")["status"]["phase"] == "Running"
        store.create(pod("elastic-1", "elastic", cpu="8"))  # a replica beyond minMember that cannot fit
        sched.run_once()
    finally:
        sched.close(wait=True)
    # upstream's RecordJobStatusEvent writes the condition for the pending pods of every job
    assert [(c["status"], c["reason"]) for c in _conditions(store, "elastic-1")] == [("False", "Unschedulable")]


def test_a_pending_pod_without_fit_errors_is_told_all_nodes_are_unavailable(tmp_path: Any) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: priority\n  - name: predicates\n'
                    "  - name: proportion\n")
    store = InMemoryStore(clock=lambda: 0.0)
    for doc in (queue("small", capability={"cpu": "1"}), node("n1", cpu="4"),
                podgroup("wide", queue="small", phase="Pending", minResources={"cpu": "2"}),
                pod("wide-0", "wide", cpu="2")):
        store.create(doc)
    sched = LiveScheduler(store, conf_path=conf, seed=0, clock=lambda: 0.0)
    try:
        sched.run_once()
    finally:
        sched.close(wait=True)
    # enqueue turned it away, so allocate never tried it: upstream's baseErrorMessage
    assert _conditions(store, "wide-0") == [{"type": "PodScheduled", "status": "False",
                                             "reason": "Unschedulable", "message": "all nodes are unavailable"}]


def _status_without_ids(store: Store, name: str) -> dict[str, Any]:
    st = dict(store.get("PodGroup", "ns", name).get("status") or {})
    st["conditions"] = [{k: v for k, v in c.items() if k not in ("transitionID", "lastTransitionTime")}
                        for c in st.get("conditions") or []]
    return st


def _two_sessions(carry: bool) -> tuple[_CountingStore, LiveScheduler]:
    store = _CountingStore()
    for doc in DOCS:
        store.create(doc)
    sched = LiveScheduler(store, seed=0, clock=lambda: 0.0, bind_workers=1)
    sched.writer.carry_scheduled = carry
    try:
        sched.run_once()  # "fits" is bound: Inqueue with gang's Scheduled condition
        sched._pool.submit(lambda: None).result()
        sched.run_once()  # its pods are bound: Running
        sched._pool.submit(lambda: None).result()
    finally:
        sched.close(wait=True)
    return store, sched


def test_a_scheduled_only_status_goes_with_the_next_sessions_write_and_ends_the_same() -> None:
    upstream, _ = _two_sessions(carry=False)
    carried, sched = _two_sessions(carry=True)
    assert [n for k, n in upstream.status_patches if k == "PodGroup"].count("fits") == 2
    assert [n for k, n in carried.status_patches if k == "PodGroup"].count("fits") == 1
    assert sched.writer.podgroups_carried == 1
    for name in ("fits", "big", "half"):
        assert _status_without_ids(carried, name) == _status_without_ids(upstream, name)
    assert _status_without_ids(carried, "fits")["phase"] == "Running"
    assert sorted(e["reason"] for e in carried.list("Event")) == sorted(e["reason"] for e in upstream.list("Event"))


def test_a_carried_status_is_written_alone_when_the_next_session_changes_nothing() -> None:
    store = _CountingStore()
    for doc in DOCS:
        store.create(doc)
    sched = LiveScheduler(store, seed=0, clock=lambda: 0.0, bind_workers=1)
    try:
        sched.run_once()
        sched._pool.submit(lambda: None).result()
        assert ("PodGroup", "fits") not in store.status_patches
        assert "status" not in store.get("PodGroup", "ns", "fits") or \
            store.get("PodGroup", "ns", "fits")["status"].get("conditions") in (None, [])
        sched.writer.write_decisions(SessionResult())  # a session that changed nothing
        sched._pool.submit(lambda: None).result()
    finally:
        sched.close(wait=True)
    assert store.status_patches.count(("PodGroup", "fits")) == 1
    st = store.get("PodGroup", "ns", "fits")["status"]
    assert st["phase"] == "Inqueue" and [c["type"] for c in st["conditions"]] == ["Scheduled"]


_SCHEDULED = PodGroupCondition("Scheduled", "True", "tasks in gang are ready to be scheduled")
_UNSCHEDULABLE = PodGroupCondition("Unschedulable", "True", "NotEnoughResources", "1/2 tasks in gang unschedulable")


@pytest.mark.parametrize(("phase", "conditions", "running", "carried"), [
    ("Inqueue", [_SCHEDULED], 0, True),
    ("Inqueue", [_UNSCHEDULABLE, _SCHEDULED], 0, False),  # its Unschedulable Event goes now, as upstream's
    ("Inqueue", [], 0, False),
    ("Inqueue", [_SCHEDULED], 1, False),
    ("Running", [_SCHEDULED], 0, False),
    ("Pending", [_SCHEDULED], 0, False),
])
def test_only_a_scheduled_condition_on_an_inqueue_podgroup_with_nothing_bound_is_carried(
        phase: str, conditions: list[PodGroupCondition], running: int, carried: bool) -> None:
    pg = PodGroup("ns", "pg", "uid", phase=phase, conditions=conditions, running=running)
    assert _only_scheduled(pg) is carried


def _arriving_gang(hold: bool, *, completes: bool) -> tuple[_CountingStore, LiveScheduler]:
    """A gang of four whose pods arrive two, then one (its creation stalls at three) or two (it
    is whole and fits), then none, a session each: what its pods get, with and without
    ``hold_arriving``."""
    store = _CountingStore()
    for doc in (queue("default"), node("n1", cpu="8"), podgroup("gang", queue="default", min_member=4),
                pod("gang-0", "gang"), pod("gang-1", "gang")):
        store.create(doc)
    events = EventRecorder(store, controller="volcano", instance="live", clock=lambda: 0.0)
    sched = LiveScheduler(store, seed=0, clock=lambda: 0.0, bind_workers=1, events=events)
    sched.writer.hold_arriving = hold
    try:
        for arriving in (["gang-2", "gang-3"] if completes else ["gang-2"], []):
            sched.run_once()
            sched._pool.submit(lambda: None).result()
            for name in arriving:
                store.create(pod(name, "gang"))
        sched.run_once()
        sched._pool.submit(lambda: None).result()
    finally:
        sched.close(wait=True)
        events.flush()
        events.close()
    return store, sched


def _pod_writes(store: _CountingStore) -> list[str]:
    return sorted(n for k, n in store.status_patches if k == "Pod")


def test_a_stalled_gangs_pending_pods_get_upstreams_condition_once_its_pods_stop_arriving() -> None:
    upstream, _ = _arriving_gang(hold=False, completes=False)
    held, sched = _arriving_gang(hold=True, completes=False)
    pods = ["gang-0", "gang-1", "gang-2"]
    assert _pod_writes(upstream) == _pod_writes(held) == pods
    assert held.status_patches[:2] == [("PodGroup", "gang"), ("PodGroup", "gang")]  # the pods' waited
    assert sched.writer.conditions_held == 2 + 3
    for name in pods:
        assert _conditions(held, name) == _conditions(upstream, name) != []
    assert _status_without_ids(held, "gang") == _status_without_ids(upstream, "gang")
    failed = [e for e in held.list("Event") if e["reason"] == "FailedScheduling"]
    assert sorted(e["regarding"]["name"] for e in failed) == pods


def test_a_gang_whole_by_the_next_session_is_bound_without_a_condition_on_its_pods() -> None:
    upstream, _ = _arriving_gang(hold=False, completes=True)
    held, _ = _arriving_gang(hold=True, completes=True)
    assert _pod_writes(upstream) == ["gang-0", "gang-1"]  # written in the first session, then bound
    assert _pod_writes(held) == []
    for store in (upstream, held):
        assert all(p["spec"].get("nodeName") == "n1" for p in store.list("Pod"))
    assert _status_without_ids(held, "gang") == _status_without_ids(upstream, "gang")
    failed = {s: [e["regarding"]["name"] for e in s.list("Event") if e["reason"] == "FailedScheduling"]
              for s in (upstream, held)}
    assert sorted(failed[upstream]) == ["gang-0", "gang-1"] and failed[held] == []
