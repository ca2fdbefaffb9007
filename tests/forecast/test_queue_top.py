"""``queue top``'s order and document (pyvolcano.forecast.queue_top)."""

from __future__ import annotations

from typing import Any

from builders import dump, node, pod, podgroup, queue
from kube.fakeapi import FakeApiServer, not_served
from pyvolcano.api.manifest import load_manifest_text
from pyvolcano.api.names import SCHEDULER_KINDS
from pyvolcano.conf import default_configuration
from pyvolcano.forecast.queue_top import pending_order, queue_top_document
from pyvolcano.kube.store import KubeStore
from pyvolcano.runtime.registry import default_registry
from pyvolcano.simulator.restore import RuntimePolicy
from pyvolcano.simulator.state import ClusterState, state_from_store
from pyvolcano.store.base import to_rfc3339
from pyvolcano.store.memory import InMemoryStore


def _state(*docs: dict[str, Any], now: float = 1000.0) -> ClusterState:
    return ClusterState(list(docs), load_manifest_text(dump(*docs), "test.yaml"), None, now, "test.yaml")


def _created(doc: dict[str, Any], at: float) -> dict[str, Any]:
    doc["metadata"]["creationTimestamp"] = to_rfc3339(at)
    return doc


def _busy_cluster() -> list[dict[str, Any]]:
    """Queue busy runs a 2-cpu job on a 4-cpu node; idle runs nothing; three 2-cpu jobs wait."""
    running = pod("r-0", "r", cpu="2", node_name="n1", phase="Running", queue="busy")
    running["status"]["startTime"] = to_rfc3339(900.0)
    running["metadata"]["annotations"]["pyvolcano.io/duration"] = "150s"
    return [
        queue("busy"), queue("idle"), node("n1", cpu="4"),
        _created(podgroup("r", queue="busy", phase="Running"), 800.0), running,
        # Submitted first, but priority and queue share put it last.
        _created(podgroup("early", queue="busy"), 810.0), pod("early-0", "early", cpu="2"),
        _created(podgroup("urgent", queue="busy", priorityClassName="high"), 820.0),
        pod("urgent-0", "urgent", cpu="2", priority=1000),
        _created(podgroup("other", queue="idle"), 830.0), pod("other-0", "other", cpu="2"),
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
         "value": 1000},
    ]


def test_order_is_the_sessions_queue_then_job_order_not_submission_order() -> None:
    order = pending_order(_state(*_busy_cluster()), default_configuration(), default_registry())
    # proportion: the idle queue (share 0) first; priority: urgent before early in busy.
    assert [(o.position, o.queue, o.queue_position, o.job) for o in order] == [
        (1, "idle", 1, "ns/other"), (2, "busy", 1, "ns/urgent"), (3, "busy", 2, "ns/early")]


def test_document_carries_reason_and_estimate_per_job_and_runtime_assumptions() -> None:
    doc = queue_top_document(_state(*_busy_cluster()), default_configuration(), default_registry(), queue=None,
                             policy=RuntimePolicy(default=60.0))
    rows = {e["job"]: e for e in doc["pending"]}
    # other fits now (no reason) and runs for the default 60 s; busy holds its deserved 2 cpus
    # until r-0 ends at 900 + 150 s (urgent, by priority, takes them); early gets the cpus
    # other frees, once idle has no demand left.
    assert (rows["ns/other"]["reason"], rows["ns/other"]["message"]) == (None, "now")
    assert rows["ns/urgent"]["reason"] == "Preemption.NotAllowed"  # r-0 is a gang of one: not a victim
    assert rows["ns/early"]["reason"] == "Queue.OverDeserved"
    assert rows["ns/urgent"]["start_in_seconds"] == 50.0
    assert rows["ns/early"]["start_in_seconds"] == 60.0
    assert rows["ns/early"]["start"] == to_rfc3339(1060.0)
    assert doc["running"] == [{"job": "ns/r", "queue": "busy", "pods": 1, "sources": ["duration"],
                               "ends_in_seconds": 50.0}]


def test_one_queue_keeps_global_positions() -> None:
    doc = queue_top_document(_state(*_busy_cluster()), default_configuration(), default_registry(), queue="busy",
                             policy=RuntimePolicy(default=60.0))
    assert [(e["position"], e["job"]) for e in doc["pending"]] == [(2, "ns/urgent"), (3, "ns/early")]


def test_live_state_is_read_through_the_kubernetes_store_and_nothing_is_written() -> None:
    api = FakeApiServer(InMemoryStore(clock=lambda: 100.0))  # the cluster's clock: its timestamps
    for d in _busy_cluster():
        api.store.create(_with_image(d) if d["kind"] == "Pod" else d)
    store = KubeStore(api.client(), SCHEDULER_KINDS).start()
    try:
        state = state_from_store(store, 5.0, "the test cluster", now=1000.0)
    finally:
        store.stop()
    doc = queue_top_document(state, default_configuration(), default_registry(), queue=None,
                             policy=RuntimePolicy(default=60.0))
    assert [e["job"] for e in doc["pending"]] == ["ns/other", "ns/urgent", "ns/early"]
    assert all(e["start"] is not None for e in doc["pending"])
    assert [r for r in api.requests if r[0] != "GET"] == []


def test_live_state_of_a_cluster_without_the_hypernode_crd_forecasts_as_without_hypernodes() -> None:
    api = FakeApiServer(InMemoryStore(clock=lambda: 100.0))
    for d in _busy_cluster():
        api.store.create(_with_image(d) if d["kind"] == "Pod" else d)
    api.faults.append(not_served("topology.volcano.sh"))
    store = KubeStore(api.client(), SCHEDULER_KINDS).start()
    try:
        state = state_from_store(store, 5.0, "the test cluster", now=1000.0)
    finally:
        store.stop()
    assert state.objects.hypernodes == [] and "HyperNode" not in {d["kind"] for d in state.docs}
    doc = queue_top_document(state, default_configuration(), default_registry(), queue=None,
                             policy=RuntimePolicy(default=60.0))
    assert [e["job"] for e in doc["pending"]] == ["ns/other", "ns/urgent", "ns/early"]


def test_live_state_carries_the_clusters_hypernodes_into_the_forecast() -> None:
    api = FakeApiServer(InMemoryStore(clock=lambda: 100.0))
    for d in _busy_cluster():
        api.store.create(_with_image(d) if d["kind"] == "Pod" else d)
    api.store.create({"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": "rack"},
                      "spec": {"tier": 1,
                               "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": ".*"}}}]}})
    store = KubeStore(api.client(), SCHEDULER_KINDS).start()
    try:
        state = state_from_store(store, 5.0, "the test cluster", now=1000.0)
    finally:
        store.stop()
    assert [h.name for h in state.objects.hypernodes] == ["rack"]
    assert [d["metadata"]["name"] for d in state.docs if d["kind"] == "HyperNode"] == ["rack"]
    doc = queue_top_document(state, default_configuration(), default_registry(), queue=None,
                             policy=RuntimePolicy(default=60.0))
    assert [e["job"] for e in doc["pending"]] == ["ns/other", "ns/urgent", "ns/early"]
    assert all(e["start"] is not None for e in doc["pending"])


def _with_image(d: dict[str, Any]) -> dict[str, Any]:
    d["spec"]["containers"][0]["image"] = "busybox"
    return d


def test_a_job_waiting_for_a_volume_held_by_a_running_job_gets_a_volume_reason_and_no_start() -> None:
    from builders import claims, hostnode, local_pv, pvc, storage_class

    held = pod("r-0", "r", node_name="n1", phase="Running", queue="q", volumes=claims("held"))
    held["status"]["startTime"] = to_rfc3339(900.0)
    held["metadata"]["annotations"]["pyvolcano.io/duration"] = "200s"
    docs = [queue("q"), hostnode("n1"), storage_class("local"),
            local_pv("pv", "n1", claim="ns/held"), pvc("held", volume="pv", bound=True), pvc("wants"),
            _created(podgroup("r", queue="q", phase="Running"), 800.0), held,
            _created(podgroup("w", queue="q"), 810.0), pod("w-0", "w", queue="q", volumes=claims("wants"))]
    doc = queue_top_document(_state(*docs), default_configuration(), default_registry(), queue=None,
                             policy=RuntimePolicy(default=60.0))
    [row] = doc["pending"]
    assert row["job"] == "ns/w" and row["reason"] == "Volume.NoMatchingPV"
    assert "pv (on n1: bound to ns/held)" in row["hint"]
    # The PV stays bound to its claim after r-0 ends (the claim outlives the pod): never.
    assert (row["start"], row["message"]) == (None, "never: the simulated cluster cannot start it")


def test_document_shows_the_reservation_a_blocked_gang_holds() -> None:
    from pyvolcano.conf import load_scheduler_conf

    docs: list[dict[str, Any]] = [queue("q"), node("n1", cpu="8"), node("n2", cpu="8"),
                                  _created(podgroup("r", queue="q", phase="Running"), 800.0)]
    for name, where, runtime in (("r-0", "n1", "150s"), ("r-1", "n2", "300s")):
        p = pod(name, "r", cpu="4", node_name=where, phase="Running", queue="q")
        p["status"]["startTime"] = to_rfc3339(900.0)
        p["metadata"]["annotations"]["pyvolcano.io/duration"] = runtime
        docs.append(p)
    docs += [_created(podgroup("gang", queue="q", min_member=2), 950.0),
             pod("gang-0", "gang", cpu="8"), pod("gang-1", "gang", cpu="8")]
    conf = load_scheduler_conf("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n"
                               "  - name: reservation\n")
    doc = queue_top_document(_state(*docs), conf, default_registry(), queue=None, policy=RuntimePolicy())
    gang = next(e for e in doc["pending"] if e["job"] == "ns/gang")
    assert gang["reason"] == "Reservation.Held"
    assert gang["reservation"]["nodes"] == ["n1", "n2"]
    assert 100 <= gang["reservation"]["start_in_seconds"] <= 200   # r-1 ends at 900 + 300 s
