"""The live scheduler and controller manager over the fake API server: same decisions, real I/O."""

from __future__ import annotations

import time
from typing import Any

import httpx2
import pytest

from kube.fakeapi import FakeApiServer, not_served
from pyvolcano.actions.allocate.tasks import TaskPlacement
from pyvolcano.api.names import SCHEDULER_KINDS
from pyvolcano.cache.cache import SchedulerOptions
from pyvolcano.kube.store import KubeStore
from pyvolcano.runtime.controller_manager import CONTROLLER_KINDS, LiveControllerManager, build_controllers
from pyvolcano.runtime.scheduler import LiveScheduler
from pyvolcano.store.base import WatchEvent, clone
from waiting import wait_for


def _cluster(api: FakeApiServer, *, nodes: int = 2, pods: int = 2) -> None:
    s = api.store
    for i in range(nodes):
        s.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
                  "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"},
                             "capacity": {"cpu": "2", "memory": "4Gi", "pods": "110"}}})
    s.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
              "spec": {"weight": 1}, "status": {"state": "Open"}})
    s.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
              "metadata": {"name": "pg", "namespace": "ns"},
              "spec": {"minMember": pods, "queue": "default"}, "status": {"phase": "Pending"}})
    for i in range(pods):
        s.create({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": f"p{i}", "namespace": "ns",
                               "annotations": {"scheduling.k8s.io/group-name": "pg"}},
                  "spec": {"schedulerName": "volcano",
                           "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}}}]},
                  "status": {"phase": "Pending"}})


def _scheduler(api: FakeApiServer) -> tuple[KubeStore, LiveScheduler]:
    store = KubeStore(api.client(), SCHEDULER_KINDS).start()
    assert store.wait_for_sync(5)
    return store, LiveScheduler(store, seed=0, bind_workers=4)


def _bound(api: FakeApiServer) -> dict[str, str]:
    with api.lock:
        return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in api.store.list("Pod", "ns")}


def test_live_scheduler_binds_a_gang_through_pods_binding():
    api = FakeApiServer()
    _cluster(api)
    store, sched = _scheduler(api)
    try:
        for _ in range(3):  # enqueue, then allocate
            sched.run_once()
        wait_for(lambda: sched.inflight_binds == 0)
        assert sorted(_bound(api).values()) == ["n0", "n1"]
        assert any(p.endswith("/binding") for _m, p in api.requests)
        with api.lock:
            assert api.store.get("PodGroup", "ns", "pg")["status"]["phase"] in ("Inqueue", "Running")
    finally:
        sched.close()
        store.stop()


def test_refused_bind_drops_the_assumption_and_the_pod_is_scheduled_again():
    api = FakeApiServer()
    _cluster(api, nodes=2, pods=2)
    refused: list[str] = []

    def refuse_first_bind_of_p1(request: httpx2.Request) -> httpx2.Response | None:
        if request.url.path.endswith("/pods/p1/binding") and not refused:
            refused.append("p1")
            return httpx2.Response(409, json={"kind": "Status", "code": 409, "reason": "Conflict",
                                              "message": "Operation cannot be fulfilled on pods/binding"})
        return None

    api.faults.append(refuse_first_bind_of_p1)
    store, sched = _scheduler(api)
    try:
        failures: list[str] = []
        for _ in range(20):
            report = sched.run_once()
            failures += [key for key, _why in report.bind_failures]
            wait_for(lambda: sched.inflight_binds == 0)
            if _bound(api)["p1"] and failures:
                break
        # the refusal came back to the loop, p1 went Pending again and was placed anew
        assert refused == ["p1"] and failures == ["ns/p1"]
        assert _bound(api)["p1"] in ("n0", "n1") and _bound(api)["p1"] != _bound(api)["p0"]
    finally:
        sched.close()
        store.stop()


@pytest.mark.parametrize("skip", [False, True])
def test_skip_unchanged_unschedulable_retries_a_gang_only_once_a_node_arrives(monkeypatch, skip):
    api = FakeApiServer()
    _cluster(api, nodes=2, pods=3)  # three pods of 2 CPUs, two nodes of 2 CPUs: the gang cannot fit
    attempts: list[str] = []
    place = TaskPlacement.allocate_resources_for_tasks

    def counted(self: TaskPlacement, job: Any, *args: Any, **kwargs: Any) -> Any:
        attempts.append(job.uid)
        return place(self, job, *args, **kwargs)

    monkeypatch.setattr(TaskPlacement, "allocate_resources_for_tasks", counted)
    store = KubeStore(api.client(), SCHEDULER_KINDS).start()
    assert store.wait_for_sync(5)
    sched = LiveScheduler(store, seed=0, bind_workers=2, options=SchedulerOptions(skip_unchanged_unschedulable=skip))
    try:
        for _ in range(3):  # the first attempt, and one more once the PodGroup's new status comes back
            sched.run_once()
        tried = len(attempts)
        for _ in range(3):
            sched.run_once()
        # upstream retries the gang every session; the option does not while nothing changes
        assert len(attempts) - tried == (0 if skip else 3)
        with api.lock:
            api.store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"},
                              "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"},
                                         "capacity": {"cpu": "2", "memory": "4Gi", "pods": "110"}}})
        wait_for(lambda: len(store.list("Node")) == 3)
        sched.run_once()
        wait_for(lambda: sched.inflight_binds == 0)
        assert sorted(_bound(api).values()) == ["n0", "n1", "n2"]
    finally:
        sched.close()
        store.stop()


def _vcjob(name: str, replicas: int) -> dict:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "ns"},
            "spec": {"minAvailable": replicas, "schedulerName": "volcano", "queue": "default",
                     "tasks": [{"name": "worker", "replicas": replicas, "template": {"spec": {
                         "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}]}}


def _enqueue_podgroups(api: FakeApiServer) -> int:
    """Play the scheduler's enqueue action: the job controller creates pods only then."""
    with api.lock:
        pgs = api.store.list("PodGroup", "ns")
        for pg in pgs:
            if (pg.get("status") or {}).get("phase", "Pending") == "Pending":
                api.store.patch("PodGroup", "ns", pg["metadata"]["name"], {"status": {"phase": "Inqueue"}},
                                subresource="status")
        return len(api.store.list("Pod", "ns"))


def _manager(api: FakeApiServer) -> tuple[KubeStore, LiveControllerManager]:
    store = KubeStore(api.client(), CONTROLLER_KINDS).start()
    assert store.wait_for_sync(5)
    return store, LiveControllerManager(store, build_controllers(store))


def test_controller_manager_creates_the_podgroup_and_pods_of_a_vcjob():
    api = FakeApiServer()
    store, cm = _manager(api)
    try:
        with api.lock:
            api.store.create(_vcjob("j", 3))
        wait_for(lambda: (cm.step(), _enqueue_podgroups(api))[1] == 3)
        with api.lock:
            names = sorted(p["metadata"]["name"] for p in api.store.list("Pod", "ns"))
            assert names == ["j-worker-0", "j-worker-1", "j-worker-2"]
            assert len(api.store.list("PodGroup", "ns")) == 1
            assert api.store.get("Queue", None, "default")  # the queue controller made it
    finally:
        store.stop()


def test_restarted_controller_manager_adopts_existing_pods_and_creates_no_duplicate():
    api = FakeApiServer()
    store, cm = _manager(api)
    with api.lock:
        api.store.create(_vcjob("j", 2))
    wait_for(lambda: (cm.step(), _enqueue_podgroups(api))[1] == 2)
    store.stop()  # the process dies here
    with api.lock:
        before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in api.store.list("Pod", "ns")}
    creates_before = sum(1 for m, p in api.requests if m == "POST" and p.endswith("/pods"))
    store2, cm2 = _manager(api)
    try:
        for _ in range(20):
            cm2.step()
            time.sleep(0.02)
        with api.lock:
            after = {p["metadata"]["name"]: p["metadata"]["uid"] for p in api.store.list("Pod", "ns")}
            pgs = api.store.list("PodGroup", "ns")
        assert after == before and len(pgs) == 1
        assert sum(1 for m, p in api.requests if m == "POST" and p.endswith("/pods")) == creates_before
    finally:
        store2.stop()


def test_scheduler_records_upstreams_events_and_the_pending_pods_condition():
    from pyvolcano.kube.events import EventRecorder

    api = FakeApiServer()
    _cluster(api, nodes=1, pods=2)  # a gang of two 2-CPU pods on one 2-CPU node: never fits
    with api.lock:
        api.store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "solo", "namespace": "ns", "annotations": {"scheduling.k8s.io/group-name": "pg-solo"}},
            "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "x"}]}})
        api.store.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                          "metadata": {"name": "pg-solo", "namespace": "ns"},
                          "spec": {"minMember": 1, "queue": "default"}, "status": {"phase": "Pending"}})
    store = KubeStore(api.client(), SCHEDULER_KINDS).start()
    assert store.wait_for_sync(5)
    events = EventRecorder(store, controller="volcano", instance="test", clock=time.time)
    sched = LiveScheduler(store, seed=0, bind_workers=2, events=events)
    try:
        for _ in range(3):
            sched.run_once()
        wait_for(lambda: sched.inflight_binds == 0)
        events.flush()
        with api.lock:
            evs = api.store.list("Event", "ns")
            gang = [api.store.get("Pod", "ns", n) for n in ("p0", "p1")]
        by_reason = {}
        for e in evs:
            by_reason.setdefault(e["reason"], []).append(e)
        assert [e["note"] for e in by_reason["Scheduled"] if e["regarding"]["kind"] == "Pod"] == [
            "Successfully assigned ns/solo to n0"]
        assert any(e["regarding"]["name"] == "pg" and "tasks in gang unschedulable" in e["note"]
                   for e in by_reason["Unschedulable"])
        assert {e["regarding"]["name"] for e in by_reason["FailedScheduling"]} == {"p0", "p1"}
        conds = [c for p in gang for c in p["status"]["conditions"] if c["type"] == "PodScheduled"]
        # upstream's taskUnschedulable: the task that found a node waits for minAvailable
        assert sorted(c["reason"] for c in conds) == ["Schedulable", "Unschedulable"]
        assert all(c["status"] == "False" for c in conds)
        n_events = len(evs)
        sched.run_once()  # nothing changed: no new Event objects
        events.flush()
        with api.lock:
            assert len(api.store.list("Event", "ns")) == n_events
    finally:
        sched.close()
        events.close()
        store.stop()


def _hypernode(name: str, tier: int, member_type: str, *names: str) -> dict:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": tier, "members": [{"type": member_type, "selector": {"exactMatch": {"name": n}}}
                                               for n in names]}}


def test_live_scheduler_keeps_its_hypernode_tree_from_the_hypernode_informer():
    from pyvolcano.api.hypernode_tree import CLUSTER_TOP_HYPERNODE

    api = FakeApiServer()
    _cluster(api, nodes=3, pods=0)
    with api.lock:
        for hn in (_hypernode("rack-a", 1, "Node", "n0"), _hypernode("rack-b", 1, "Node", "n1", "n2"),
                   _hypernode("spine", 2, "HyperNode", "rack-a", "rack-b")):
            api.store.create(hn)
    store, sched = _scheduler(api)
    tree = sched.cache.hypernode_tree

    def ingest_until(cond) -> None:
        wait_for(lambda: sched.ingest() >= 0 and cond(), what="the HyperNode change to reach the cache")

    try:
        sched.run_once()
        assert sorted(sched.cache.hypernodes) == ["rack-a", "rack-b", "spine"]
        assert [tree.ancestor(n, 1) for n in ("n0", "n1", "n2")] == ["rack-a", "rack-b", "rack-b"]
        assert tree.parent("rack-a") == "spine" and tree.nodes("spine") == {"n0", "n1", "n2"}
        with api.lock:  # n2 moves to its own rack: an update and an add, through the watch
            api.store.create(_hypernode("rack-c", 1, "Node", "n2"))
            rack_b = api.store.get("HyperNode", None, "rack-b")
            rack_b["spec"] = _hypernode("rack-b", 1, "Node", "n1")["spec"]
            api.store.update(rack_b)
        ingest_until(lambda: tree.ancestor("n2", 1) == "rack-c")
        assert tree.nodes("rack-b") == {"n1"} and tree.parent("rack-c") == CLUSTER_TOP_HYPERNODE  # no spine above
        with api.lock:
            api.store.delete("HyperNode", None, "rack-b")
        ingest_until(lambda: "rack-b" not in sched.cache.hypernodes)
        assert "rack-b" not in tree and tree.ancestor("n1", 1) is None
        assert tree.nodes("spine") == {"n0"}
    finally:
        sched.close()
        store.stop()


def test_live_scheduler_runs_on_a_cluster_without_the_hypernode_crd(caplog):
    api = FakeApiServer()
    _cluster(api)
    api.faults.append(not_served("topology.volcano.sh"))
    with caplog.at_level("INFO", logger="pyvolcano.kube.store"):
        store, sched = _scheduler(api)
        try:
            for _ in range(3):
                sched.run_once()
            wait_for(lambda: sched.inflight_binds == 0)
            assert sorted(_bound(api).values()) == ["n0", "n1"]
            assert sched.cache.hypernodes == {} and len(sched.cache.hypernode_tree) == 1  # the virtual root
        finally:
            sched.close()
            store.stop()
    assert sum("does not serve topology.volcano.sh/v1alpha1 hypernodes" in r.getMessage()
               for r in caplog.records if r.levelname == "INFO") == 1


def test_scheduler_configuration_is_reloaded_when_the_file_changes(tmp_path):
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n')
    api = FakeApiServer()
    store = KubeStore(api.client(), SCHEDULER_KINDS).start()
    assert store.wait_for_sync(5)
    sched = LiveScheduler(store, conf_path=conf, seed=0)
    try:
        assert list(sched.config.actions) == ["enqueue", "allocate"]
        conf.write_text('actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: priority\n'
                        '  - name: gang\n  - name: conformance\n')
        sched.run_once()
        assert list(sched.config.actions) == ["enqueue", "allocate", "backfill"]
        conf.write_text('actions: "enqueue, no-such-action"\n')  # a broken edit keeps the last good one
        sched.run_once()
        assert list(sched.config.actions) == ["enqueue", "allocate", "backfill"]
    finally:
        sched.close()
        store.stop()


def test_scheduler_metrics_use_upstreams_names():
    from pyvolcano.metrics.scheduler import SchedulerMetrics

    api = FakeApiServer()
    _cluster(api)
    store = KubeStore(api.client(), SCHEDULER_KINDS).start()
    assert store.wait_for_sync(5)
    metrics = SchedulerMetrics()
    sched = LiveScheduler(store, seed=0, bind_workers=2, metrics=metrics)
    try:
        for _ in range(3):
            sched.run_once()
        reg = metrics.registry
        assert reg.get_sample_value("volcano_e2e_scheduling_latency_milliseconds_count") == 3
        assert reg.get_sample_value("volcano_schedule_attempts_total", {"result": "scheduled"}) == 2
        assert reg.get_sample_value("volcano_action_scheduling_latency_milliseconds_count",
                                    {"action": "allocate"}) == 3
    finally:
        sched.close()
        store.stop()


def test_live_commands_refuse_a_missing_kubeconfig_with_one_line(tmp_path):
    import subprocess
    import sys

    for cmd in ("scheduler", "controller-manager", "fake-nodes"):
        extra = ["--count", "1"] if cmd == "fake-nodes" else ["--leader-elect=false"]
        r = subprocess.run([sys.executable, "-m", "pyvolcano", cmd, "--kubeconfig", str(tmp_path / "nope"), *extra],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2, (cmd, r.stderr)
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("error: ") and "nope" in r.stderr


def test_controller_manager_discovers_hypernodes_from_node_labels_and_counts_their_nodes():
    from pyvolcano.api.names import NETWORK_TOPOLOGY_SOURCE_KEY

    api = FakeApiServer()
    with api.lock:
        for i, rack in enumerate(("r1", "r1", "r2")):
            api.store.create({"apiVersion": "v1", "kind": "Node",
                              "metadata": {"name": f"n{i}", "labels": {"example.com/rack": rack}}})
        api.store.create({"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
                          "metadata": {"name": "hand-made"},
                          "spec": {"tier": 1,
                                   "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": "n"}}}]}})
        api.store.create({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": "volcano-controller-configmap", "namespace": "volcano-system"},
                          "data": {"volcano-controller.conf": (
                              "networkTopologyDiscovery:\n- source: label\n  enabled: true\n  config:\n"
                              "    networkTopologyTypes:\n      rack:\n      - nodeLabel: example.com/rack\n"
                              "      - nodeLabel: kubernetes.io/hostname\n")}})
    store, cm = _manager(api)

    def counts() -> dict[str, int]:
        cm.step()
        with api.lock:
            return {(hn["metadata"].get("labels") or {}).get("example.com/rack", hn["metadata"]["name"]):
                    (hn.get("status") or {}).get("nodeCount", 0) for hn in api.store.list("HyperNode")}

    try:
        wait_for(lambda: counts() == {"hand-made": 3, "r1": 2, "r2": 1})
        with api.lock:
            discovered = [hn for hn in api.store.list("HyperNode") if hn["metadata"]["name"] != "hand-made"]
        assert all(hn["metadata"]["labels"][NETWORK_TOPOLOGY_SOURCE_KEY] == "label" for hn in discovered)
        assert all(hn["metadata"]["name"].startswith("hypernode-rack-tier1-") for hn in discovered)
        assert any(m in ("PUT", "PATCH") and p.endswith("/status") and "/hypernodes/" in p for m, p in api.requests)
    finally:
        store.stop()


class _SharingCheckedStore(KubeStore):
    """Hands out shared event objects as asked and remembers each with a copy of how it was."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.shared: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def watch(self, since_revision: int, kinds: Any = None, *, copy: bool = True) -> list[WatchEvent]:
        events = super().watch(since_revision, kinds, copy=copy)
        if not copy:
            self.shared.extend((e.object, clone(e.object)) for e in events)
        return events


def test_live_components_only_read_the_watch_events_they_share_with_the_cache():
    api = FakeApiServer()
    _cluster(api, nodes=3, pods=0)
    cm_store = _SharingCheckedStore(api.client(), CONTROLLER_KINDS).start()
    sched_store = _SharingCheckedStore(api.client(), SCHEDULER_KINDS).start()
    assert cm_store.wait_for_sync(5) and sched_store.wait_for_sync(5)
    cm = LiveControllerManager(cm_store, build_controllers(cm_store))
    sched = LiveScheduler(sched_store, seed=0, bind_workers=2)
    try:
        with api.lock:
            api.store.create(_vcjob("j", 3))

        def progressed() -> bool:
            cm.step()
            sched.run_once()
            return sched.inflight_binds == 0 and sorted(v for v in _bound(api).values() if v) != [] and \
                all(_bound(api).get(f"j-worker-{i}") for i in range(3))

        wait_for(progressed)
        cm.step()
        assert cm_store.shared and sched_store.shared
        for obj, before in cm_store.shared + sched_store.shared:
            assert obj == before, (obj.get("kind"), (obj.get("metadata") or {}).get("name"))
    finally:
        sched.close()
        sched_store.stop()
        cm_store.stop()


def test_reserved_gang_carries_reservation_held_on_its_podgroup_condition(tmp_path):
    """Live path of the reservation plugin: a pod's declared runtime (activeDeadlineSeconds) plans
    the reservation, and the PodGroup's Unschedulable condition names it."""
    import datetime

    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: reservation\n"
                    "- plugins:\n  - name: predicates\n  - name: proportion\n")
    api = FakeApiServer()
    with api.lock:
        _cluster(api, nodes=2, pods=2)  # a gang of two 2-CPU pods on two 2-CPU nodes
        started = (datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=60)).strftime(
            "%Y-%m-%dT%H:%M:%SZ")
        api.store.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                          "metadata": {"name": "pg-busy", "namespace": "ns"},
                          "spec": {"minMember": 1, "queue": "default"}, "status": {"phase": "Running"}})
        api.store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "busy", "namespace": "ns", "annotations": {"scheduling.k8s.io/group-name": "pg-busy"}},
            "spec": {"schedulerName": "volcano", "nodeName": "n0", "activeDeadlineSeconds": 600,
                     "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]},
            "status": {"phase": "Running", "startTime": started}})
        pg = api.store.get("PodGroup", "ns", "pg")
        pg["status"]["phase"] = "Inqueue"
        api.store.update(pg)
    store = KubeStore(api.client(), SCHEDULER_KINDS).start()
    assert store.wait_for_sync(5)
    sched = LiveScheduler(store, seed=0, bind_workers=2, conf_path=conf)
    try:
        for _ in range(3):
            sched.run_once()
        wait_for(lambda: sched.inflight_binds == 0)

        def condition() -> dict[str, Any] | None:
            with api.lock:
                conds = api.store.get("PodGroup", "ns", "pg").get("status", {}).get("conditions") or []
            return next((c for c in conds if c["type"] == "Unschedulable"), None)

        wait_for(lambda: (condition() or {}).get("reason") == "Reservation.Held")
        message = condition()["message"]  # type: ignore[index]
        assert "n0, n1 are held for it from in 8m" in message or "n0, n1 are held for it from in 9m" in message
        assert _bound(api) == {"busy": "n0", "p0": "", "p1": ""}
    finally:
        sched.close()
        store.stop()
