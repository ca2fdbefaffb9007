"""pyvolcano fake-nodes over the fake API server: nodes kept Ready, pods run for their duration."""

from __future__ import annotations

import threading
import time

import pytest

from kube.fakeapi import FakeApiServer
from pyvolcano.kube.store import KubeStore
from pyvolcano.runtime.fake_nodes import FakeNodes, make_nodes
from waiting import wait_for


def _pod(name: str, node: str, annotations: dict[str, str] | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "annotations": annotations or {}},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 30,
                     "containers": [{"name": "c", "image": "x"}]}, "status": {"phase": "Pending"}}


@pytest.fixture
def running():
    started = []

    def start(api: FakeApiServer, nodes: list[dict], **kw) -> FakeNodes:
        store = KubeStore(api.client(), ("Pod",)).start()
        assert store.wait_for_sync(5)
        fake = FakeNodes(store, nodes, **kw)
        fake.register()
        stop = threading.Event()
        t = threading.Thread(target=fake.run, args=(stop,), daemon=True)
        t.start()
        started.append((store, stop, t))
        return fake

    yield start
    for store, stop, t in started:
        stop.set()
        store.stop()
        t.join(5)


def _phase(api: FakeApiServer, name: str) -> str | None:
    with api.lock:
        try:
            return api.store.get("Pod", "ns", name)["status"].get("phase")
        except Exception:
            return None


def test_count_nodes_are_registered_ready_with_a_lease_each(running):
    api = FakeApiServer()
    running(api, make_nodes(3, cpu="8", memory="32Gi", gpus=4))
    with api.lock:
        nodes = api.store.list("Node")
        leases = api.store.list("Lease", "kube-node-lease")
    assert [n["metadata"]["name"] for n in nodes] == ["fake-node-0", "fake-node-1", "fake-node-2"]
    assert nodes[0]["status"]["allocatable"]["nvidia.com/gpu"] == "4"
    assert [c["status"] for c in nodes[0]["status"]["conditions"] if c["type"] == "Ready"] == ["True"]
    assert sorted(lease["spec"]["holderIdentity"] for lease in leases) == [n["metadata"]["name"] for n in nodes]


def test_bound_pod_runs_for_its_duration_scaled_by_speed(running):
    api = FakeApiServer()
    running(api, make_nodes(1), speed=100.0)
    with api.lock:
        api.store.create(_pod("p", "fake-node-0", {"pyvolcano.io/duration": "2s", "pyvolcano.io/exit-code": "3"}))
    wait_for(lambda: _phase(api, "p") == "Running")
    wait_for(lambda: _phase(api, "p") == "Failed", timeout=3)  # 2 s / 100
    with api.lock:
        st = api.store.get("Pod", "ns", "p")["status"]
    assert st["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3


def test_pods_on_other_nodes_are_left_alone(running):
    api = FakeApiServer()
    running(api, make_nodes(1), speed=100.0)
    with api.lock:
        api.store.create(_pod("elsewhere", "real-node", {"pyvolcano.io/duration": "1s"}))
    time.sleep(0.3)
    assert _phase(api, "elsewhere") == "Pending"


def test_default_duration_applies_to_pods_without_the_annotation(running):
    api = FakeApiServer()
    running(api, make_nodes(1), speed=100.0, default_duration="1s")
    with api.lock:
        api.store.create(_pod("p", "fake-node-0"))
    wait_for(lambda: _phase(api, "p") == "Succeeded", timeout=3)


def test_deleted_pod_terminates_after_its_grace_period(running):
    api = FakeApiServer()
    running(api, make_nodes(1), speed=100.0)
    with api.lock:
        api.store.create(_pod("p", "fake-node-0"))
    wait_for(lambda: _phase(api, "p") == "Running")
    with api.lock:
        api.store.delete("Pod", "ns", "p")  # grace 30 s -> 0.3 s at speed 100
        assert api.store.get("Pod", "ns", "p")["metadata"]["deletionTimestamp"]
    wait_for(lambda: _phase(api, "p") is None, timeout=3)


def test_restarted_fake_nodes_adopts_running_pods_and_ends_them_on_time(running):
    api = FakeApiServer()
    with api.lock:
        api.store.create(_pod("p", "fake-node-0", {"pyvolcano.io/duration": "1s"}))
        api.store.patch("Pod", "ns", "p", {"status": {"phase": "Running", "startTime": "2024-01-01T00:00:00Z"}},
                        subresource="status")
    running(api, make_nodes(1))  # long past its end: it finishes at once
    wait_for(lambda: _phase(api, "p") == "Succeeded", timeout=3)


def test_make_nodes_rejects_absurd_counts():
    with pytest.raises(ValueError, match="--count"):
        make_nodes(0)


def test_a_pod_that_ends_while_the_api_server_is_down_finishes_once_it_is_back(running):
    """The status write a refused API server drops is kept and re-sent: the pod does not stay
    Running forever (the lost kubelet write of a real-API-server restart)."""
    import httpx2

    api = FakeApiServer()
    outage = threading.Event()

    def unavailable(request: httpx2.Request) -> httpx2.Response | None:
        if outage.is_set() and request.method != "GET":
            return httpx2.Response(503, json={"kind": "Status", "status": "Failure", "code": 503,
                                              "reason": "ServiceUnavailable", "message": "etcd is down"})
        return None

    api.faults.append(unavailable)
    fake = running(api, make_nodes(1), speed=10.0)
    with api.lock:
        api.store.create(_pod("p", "fake-node-0", {"pyvolcano.io/duration": "5s"}))
    wait_for(lambda: _phase(api, "p") == "Running")
    outage.set()
    wait_for(lambda: fake.kubelets.write_retries >= 2, timeout=10)
    assert _phase(api, "p") == "Running"  # the end of its run was refused, not lost
    assert fake.kubelets.unwritten() == 1
    outage.clear()
    wait_for(lambda: _phase(api, "p") == "Succeeded", timeout=30)
    wait_for(lambda: fake.kubelets.unwritten() == 0)
