"""The API client against a real kube-apiserver: objects reach the informers' caches without
``metadata.managedFields``, and what pyvolcano writes back from them leaves the API server's
managed fields as they were (a PUT or a status write without the field keeps them); a status
update sent as a merge patch of what changed leaves the same object as upstream's whole-object
``UpdateStatus`` and is refused the same way when stale.

Needs ``KUBEBUILDER_ASSETS`` (etcd, kube-apiserver); skipped with the reason otherwise.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from pyvolcano.kube import connect
from pyvolcano.kube.envtest import ASSETS_ENV, ControlPlane, assets_dir
from pyvolcano.kube.resources import RESOURCES
from pyvolcano.store import Conflict

pytestmark = pytest.mark.skipif(assets_dir() is None, reason=f"no real kube-apiserver: set {ASSETS_ENV} to a "
                                "directory with etcd and kube-apiserver")


KINDS = ("Pod", "Node", "Job", "Queue")


@pytest.fixture(scope="module")
def control_plane() -> Iterator[ControlPlane]:
    with ControlPlane() as cp:
        bundle = subprocess.run([sys.executable, "-m", "pyvolcano", "install"], check=True, capture_output=True,
                                text=True).stdout
        crds = [d for d in yaml.safe_load_all(bundle) if d and d["kind"] == "CustomResourceDefinition"]
        kubectl = shutil.which("kubectl") or str(assets_dir() / "kubectl")  # type: ignore[operator]
        for args, text in ((("apply", "-f", "-"), yaml.safe_dump_all(crds)),
                           (("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"), None)):
            subprocess.run([kubectl, "--kubeconfig", str(cp.kubeconfig), *args], input=text, check=True,
                           capture_output=True, text=True, timeout=120)
        yield cp


@pytest.fixture(scope="module")
def store(control_plane: ControlPlane) -> Iterator[Any]:
    s = connect(kubeconfig=str(control_plane.kubeconfig), kinds=KINDS, user_agent="pyvolcano-test")
    try:
        assert s.wait_for_sync(30)
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="module")
def uncached(control_plane: ControlPlane) -> Iterator[Any]:
    """A store that watches nothing: its status updates are whole-object PUTs, as upstream's."""
    s = connect(kubeconfig=str(control_plane.kubeconfig), kinds=(), user_agent="pyvolcano-test")
    try:
        yield s
    finally:
        s.stop()


def _on_server(store: Any, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    """The object as the API server holds it, managed fields included."""
    path = RESOURCES[kind].object_path(namespace, name)
    return json.loads(store.client._exchange("GET", path, None, None, "application/json", (kind, name)))


def _without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "managedFields"}}


def _managers(obj: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(m["manager"], m["operation"], m.get("subresource", "")) for m in obj["metadata"]["managedFields"]}


def _wait(cond: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _node(name: str) -> dict[str, Any]:
    res = {"cpu": "8", "memory": "16Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"pool": "a"}},
            "status": {"capacity": res, "allocatable": res}}


def test_cached_objects_are_the_servers_without_managed_fields_and_writes_from_them_keep_the_servers(
        store: Any) -> None:
    created = store.create(_node("n1"))
    assert "managedFields" not in created["metadata"]
    cached = store.get("Node", None, "n1")
    cached["metadata"]["labels"]["pool"] = "b"
    store.update(cached)  # a PUT of the whole object, without managedFields
    status = store.get("Node", None, "n1")
    status["status"]["allocatable"] = {**status["status"]["allocatable"], "cpu": "7"}
    store.update_status(status)

    on_server = _on_server(store, "Node", "n1")
    assert on_server["metadata"]["labels"] == {"pool": "b"} and on_server["status"]["allocatable"]["cpu"] == "7"
    assert {("pyvolcano-test", "Update", ""), ("pyvolcano-test", "Update", "status")} <= _managers(on_server)
    assert store.peek("Node", None, "n1") == _without_managed_fields(on_server)


def test_watched_objects_reach_the_cache_without_managed_fields(store: Any) -> None:
    # written by another client: the cache learns of it from the watch only
    body = json.dumps(_node("n2")).encode()
    store.client.transport.request("POST", RESOURCES["Node"].collection_path(None), content=body,
                                   headers={"Content-Type": "application/json", "Accept": "application/json"})
    _wait(lambda: any(n["metadata"]["name"] == "n2" for n in store.list("Node")))
    on_server = _on_server(store, "Node", "n2")
    assert on_server["metadata"]["managedFields"]
    assert store.peek("Node", None, "n2") == _without_managed_fields(on_server)
    listed, _ = store.client.list(RESOURCES["Node"])
    assert {n["metadata"]["name"] for n in listed} >= {"n1", "n2"}
    assert all("managedFields" not in n["metadata"] for n in listed)


def _vcjob(name: str) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minAvailable": 1, "schedulerName": "volcano", "queue": "default",
                     "tasks": [{"name": "t", "replicas": 1, "template": {"spec": {
                         "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}]}}


# A job's status as the job controller writes it, one update after the other: phases, counts
# that appear and disappear, a map emptied, a list replaced.
JOB_STATUSES: list[dict[str, Any]] = [
    {"state": {"phase": "Pending", "lastTransitionTime": "2026-12-04T10:00:00Z"}, "minAvailable": 1,
     "controlledResources": {}},
    {"state": {"phase": "Pending", "lastTransitionTime": "2026-12-04T10:00:00Z"}, "minAvailable": 1, "pending": 1,
     "taskStatusCount": {"t": {"phase": {"Pending": 1}}}, "controlledResources": {"plugin-svc": "svc"}},
    {"state": {"phase": "Running", "lastTransitionTime": "2026-12-04T10:00:02Z"}, "minAvailable": 1, "running": 1,
     "taskStatusCount": {"t": {"phase": {"Running": 1}}}, "controlledResources": {"plugin-svc": "svc"},
     "conditions": [{"status": "Pending", "lastTransitionTime": "2026-12-04T10:00:00Z"},
                    {"status": "Running", "lastTransitionTime": "2026-12-04T10:00:02Z"}]},
    {"state": {"phase": "Completed", "lastTransitionTime": "2026-12-04T10:01:00Z"}, "minAvailable": 1,
     "succeeded": 1, "version": 1, "taskStatusCount": {}, "controlledResources": {},
     "conditions": [{"status": "Completed", "lastTransitionTime": "2026-12-04T10:01:00Z"}]},
]


def test_status_updates_sent_as_patches_leave_the_objects_whole_object_updates_leave(
        store: Any, uncached: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("patched", "put"):
        store.create(_vcjob(name))
    _wait(lambda: {j["metadata"]["name"] for j in store.list("Job", "default")} >= {"patched", "put"})
    sent: list[str] = []
    exchange = store.client._exchange

    def spy(method: str, path: str, *args: Any) -> bytes:
        if method != "GET":
            sent.append(f"{method} {path.rsplit('/', 2)[-2]}/{path.rsplit('/', 1)[-1]}")
        return exchange(method, path, *args)

    monkeypatch.setattr(store.client, "_exchange", spy)
    for st in JOB_STATUSES:
        patched = store.update_status({**store.get("Job", "default", "patched"), "status": st})
        put = uncached.update_status({**_without_managed_fields(_on_server(store, "Job", "put", "default")),
                                      "status": st})
        assert patched["status"] == put["status"]
        a, b = (_on_server(store, "Job", n, "default") for n in ("patched", "put"))
        assert a["status"] == b["status"] and a["spec"] == b["spec"]
        assert a["metadata"]["resourceVersion"] == patched["metadata"]["resourceVersion"]
    assert sent == ["PATCH patched/status"] * len(JOB_STATUSES)


def test_a_stale_status_update_is_a_conflict_whether_patched_or_put(store: Any, uncached: Any) -> None:
    store.create(_node("stale"))
    _wait(lambda: any(n["metadata"]["name"] == "stale" for n in store.list("Node")))
    old = store.get("Node", None, "stale")
    rv = old["metadata"]["resourceVersion"]
    fresh = store.get("Node", None, "stale")
    fresh["status"]["allocatable"] = {**fresh["status"]["allocatable"], "cpu": "6"}
    store.update_status(fresh)
    old["status"]["allocatable"] = {**old["status"]["allocatable"], "cpu": "5"}
    for writer in (store, uncached):
        with pytest.raises(Conflict):
            writer.update_status(old)
    # the precondition a patch carries: the API server refuses it at a stale version
    with pytest.raises(Conflict):
        store.patch("Node", None, "stale", {"metadata": {"resourceVersion": rv},
                                            "status": {"allocatable": {"cpu": "5"}}}, subresource="status")
    assert _on_server(store, "Node", "stale")["status"]["allocatable"]["cpu"] == "6"
