"""Scheduler, controller manager and fake nodes through API server and etcd outages (hermetic).

The three live components run in-process, each on its own informers and client of one fake API
server, while a few dozen two-pod vcjobs flow; the fake API server then refuses connections,
answers 5xx or 429, expires every watch during a burst, restarts, or cuts the scheduler off.
Each run must end with every job Completed, no job with more pods than its replicas, no pod
bound twice, PodGroup and queue status matching their pods and PodGroups, and binding resumed
soon after the fault ended (:mod:`pyvolcano.kube.chaos`). The same scenarios against a real
kube-apiserver and etcd are in ``tests/chaos``.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from kube.fakeapi import FakeApiServer
from pyvolcano.api.names import SCHEDULER_KINDS
from pyvolcano.kube.chaos import Observer, check, snapshot, vcjob
from pyvolcano.kube.store import KubeStore
from pyvolcano.runtime.controller_manager import CONTROLLER_KINDS, LiveControllerManager, build_controllers
from pyvolcano.runtime.fake_nodes import FakeNodes, make_nodes
from pyvolcano.runtime.scheduler import LiveScheduler
from waiting import wait_for

NS = "chaos"
JOBS = 30
SPEED = 10.0  # fake-nodes runs a "5s" pod for half a second


@dataclass
class Cluster:
    """The live components on one fake API server, each with its own client name."""

    api: FakeApiServer
    stop: threading.Event = field(default_factory=threading.Event)
    stores: list[KubeStore] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)
    observer: Observer | None = None
    scheduler: LiveScheduler | None = None

    def _store(self, client: str, kinds: tuple[str, ...]) -> KubeStore:
        store = KubeStore(self.api.client(client), kinds).start()
        assert store.wait_for_sync(5)
        self.stores.append(store)
        return store

    def _thread(self, name: str, target: Callable[[threading.Event], None]) -> None:
        t = threading.Thread(target=target, args=(self.stop,), name=name, daemon=True)
        t.start()
        self.threads.append(t)

    def start(self) -> Cluster:
        nodes = FakeNodes(self._store("fake-nodes", ("Pod",)), make_nodes(4, cpu="8", memory="32Gi"), speed=SPEED)
        nodes.register()
        self._thread("fake-nodes", nodes.run)
        cm_store = self._store("controller-manager", CONTROLLER_KINDS)
        self._thread("controller-manager", LiveControllerManager(cm_store, build_controllers(cm_store)).run)
        self.scheduler = LiveScheduler(self._store("scheduler", SCHEDULER_KINDS), seed=0, period=0.05,
                                       bind_workers=4)
        self._thread("scheduler", self.scheduler.run)
        obs_store = self._store("observer", ("Pod", "Job"))
        for r in obs_store.reflectors:
            r.backoff = (0.05, 0.2)
        self.observer = Observer(obs_store).start()
        return self

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(5)
        if self.observer is not None:
            self.observer.stop()
        if self.scheduler is not None:
            self.scheduler.close(wait=False)
        for s in self.stores:
            s.stop()

    # ------------------------------------------------------------------ the workload
    def submit(self, names: list[str]) -> None:
        with self.api.lock:
            for name in names:
                self.api.store.create(vcjob(name, namespace=NS, cpu="2"))

    def finished(self) -> int:
        with self.api.lock:
            jobs = self.api.store.list("Job", NS)
        return sum(1 for j in jobs if ((j.get("status") or {}).get("state") or {}).get("phase") == "Completed")

    def problems(self) -> list[str]:
        with self.api.lock:
            snap = snapshot(self.api.store, NS)
        assert self.observer is not None
        twice = [uid for uid, n in Counter(uid for _t, uid, _k, _n in self.api.bindings).items() if n > 1]
        return check(snap, max_live_pods=self.observer.max_live_pods, double_binds=twice)

    def binds_after(self, t: float) -> list[float]:
        return [at for at, *_ in self.api.bindings if at >= t]


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster(FakeApiServer(watch_wait=0.05)).start()
    try:
        yield c
    finally:
        c.close()


def _run_through(cluster: Cluster, fault: Callable[[FakeApiServer], float], *, jobs: int = JOBS) -> float | None:
    """Submit ``jobs`` vcjobs, inject ``fault`` once a few have finished (it returns how long
    the fault lasts), and wait until every job is done and every status settled. Returns the
    seconds from the fault's end to the first bind after it (None: all were bound before)."""
    names = [f"j{i:03d}" for i in range(jobs)]
    cluster.submit(names[: jobs // 2])
    wait_for(lambda: cluster.finished() >= 3, 20, "the first jobs to finish")
    seconds = fault(cluster.api)
    cluster.submit(names[jobs // 2:])  # the user goes on submitting; the store takes them
    fault_end = time.monotonic() + seconds
    # A generous deadline: how long this takes is measured by benchmarks/chaos_recovery.py, not here.
    wait_for(lambda: cluster.finished() == jobs, 240 + seconds, f"all {jobs} jobs to complete")
    problems: list[str] = []

    def settled() -> bool:
        problems[:] = cluster.problems()
        return not problems

    try:
        wait_for(settled, 15, "PodGroup and queue status to settle", interval=0.1)
    except AssertionError:
        raise AssertionError("\n".join(problems)) from None
    after = cluster.binds_after(fault_end)
    return min(after) - fault_end if after else None


def test_a_run_without_faults_keeps_every_invariant(cluster: Cluster) -> None:
    _run_through(cluster, lambda api: 0.0)  # asserts the invariants itself


def test_an_api_server_that_refuses_connections_loses_no_job(cluster: Cluster) -> None:
    def down(api: FakeApiServer) -> float:
        api.refuse_connections(3.0)
        return 3.0

    recovery = _run_through(cluster, down)
    assert cluster.api.refused > 0
    assert recovery is not None  # binds resumed after the fault (its time is measured by the chaos suite)


@pytest.mark.parametrize(("code", "reason", "message"), [
    (503, "ServiceUnavailable", "the server is currently unable to handle the request"),
    (500, "InternalError", "etcdserver: leader changed"),
    (504, "Timeout", "etcdserver: request timed out"),
    (429, "TooManyRequests", "too many requests, please try again later"),
    # a restarted kube-apiserver refuses everything until its RBAC authorizer has synced
    (403, "Forbidden", 'podgroups.scheduling.volcano.sh is forbidden: User "system:serviceaccount:x" cannot patch'),
], ids=["503", "etcd-leader-changed", "etcd-timeout", "429", "403-until-rbac-syncs"])
def test_failure_statuses_for_a_while_lose_no_job(cluster: Cluster, code: int, reason: str, message: str) -> None:
    def failing(api: FakeApiServer) -> float:
        api.fail_requests(3.0, code, reason, message)
        return 3.0

    recovery = _run_through(cluster, failing)
    assert cluster.api.refused > 0
    assert recovery is not None  # binds resumed after the fault (its time is measured by the chaos suite)


def test_watches_that_expire_during_a_burst_lose_no_job(cluster: Cluster) -> None:
    relists_before = sum(r.relists for s in cluster.stores for r in s.reflectors)

    def compacting(api: FakeApiServer) -> float:
        def burst() -> None:
            for _ in range(20):
                api.expire_watches()
                time.sleep(0.1)

        threading.Thread(target=burst, daemon=True).start()
        return 2.0

    _run_through(cluster, compacting)
    assert sum(r.relists for s in cluster.stores for r in s.reflectors) > relists_before


def test_a_restarted_api_server_loses_no_job(cluster: Cluster) -> None:
    def restart(api: FakeApiServer) -> float:
        api.restart(2.0)
        return 2.0

    recovery = _run_through(cluster, restart)
    assert recovery is not None  # binds resumed after the fault (its time is measured by the chaos suite)


def test_a_scheduler_cut_off_from_the_api_server_resumes_binding(cluster: Cluster) -> None:
    def cut(api: FakeApiServer) -> float:
        api.cut_off("scheduler", 4.0)
        return 4.0

    recovery = _run_through(cluster, cut)
    assert recovery is not None  # binds resumed after the fault (its time is measured by the chaos suite)


def test_check_names_every_broken_invariant() -> None:
    job = vcjob("j", namespace=NS)
    job["status"] = {"state": {"phase": "Running"}}
    pods: list[dict[str, Any]] = [
        {"metadata": {"name": f"j-worker-{i}", "namespace": NS, "uid": f"u{i}",
                      "labels": {"volcano.sh/job-name": "j"}, "annotations": {"scheduling.k8s.io/group-name": "pg"}},
         "spec": {"nodeName": "n"}, "status": {"phase": "Running"}} for i in range(3)]
    pg = {"metadata": {"name": "pg", "namespace": NS}, "spec": {"queue": "default"},
          "status": {"phase": "Running", "running": 2}}
    queue = {"metadata": {"name": "default"}, "status": {"running": 0}}
    from pyvolcano.kube.chaos import Snapshot

    problems = check(Snapshot([job], pods, [pg], [queue], NS), double_binds=["u0"])
    assert problems == [
        f"job {NS}/j is Running, not finished",
        f"job {NS}/j had 3 live pods, more than its 2 replicas",
        "pod u0 was bound twice",
        f"PodGroup {NS}/pg status says {{'running': 2, 'succeeded': 0, 'failed': 0}}, its pods "
        "{'running': 3, 'succeeded': 0, 'failed': 0}",
        "queue default status says {'pending': 0, 'running': 0, 'inqueue': 0, 'completed': 0}, its PodGroups "
        "{'pending': 0, 'running': 1, 'inqueue': 0, 'completed': 0}",
    ]


def test_a_cut_relay_resets_its_connections_and_refuses_new_ones_until_healed() -> None:
    import socket

    from pyvolcano.kube.faults import Relay

    server = socket.create_server(("127.0.0.1", 0))

    def echo() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=lambda c=conn: [c.sendall(d) for d in iter(lambda: c.recv(1024), b"")],
                             daemon=True).start()

    threading.Thread(target=echo, daemon=True).start()
    relay = Relay(server.getsockname()[:2])
    try:
        def roundtrip(conn: socket.socket) -> bytes:
            conn.sendall(b"ping")
            return conn.recv(16)

        live = socket.create_connection(("127.0.0.1", relay.port), timeout=2)
        assert roundtrip(live) == b"ping"
        relay.cut(3.0)
        wait_for(lambda: live.recv(16) == b"", 2, "the cut connection to close")
        refused = socket.create_connection(("127.0.0.1", relay.port), timeout=2)
        assert refused.recv(16) == b""  # accepted and closed at once
        time.sleep(3.1)
        healed = socket.create_connection(("127.0.0.1", relay.port), timeout=2)
        assert roundtrip(healed) == b"ping"
        for c in (live, refused, healed):
            c.close()
    finally:
        relay.close()
        server.close()
