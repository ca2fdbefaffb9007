"""The API client against a real kube-apiserver: objects reach the informers' caches without
``metadata.managedFields``, and what pyvolcano writes back from them leaves the API server's
managed fields as they were (a PUT or a status write without the field keeps them).

Needs ``KUBEBUILDER_ASSETS`` (etcd, kube-apiserver); skipped with the reason otherwise.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pyvolcano.kube import connect
from pyvolcano.kube.envtest import ASSETS_ENV, ControlPlane, assets_dir
from pyvolcano.kube.resources import RESOURCES

pytestmark = pytest.mark.skipif(assets_dir() is None, reason=f"no real kube-apiserver: set {ASSETS_ENV} to a "
                                "directory with etcd and kube-apiserver")


@pytest.fixture(scope="module")
def store() -> Iterator[Any]:
    with ControlPlane() as cp:
        s = connect(kubeconfig=str(cp.kubeconfig), kinds=("Pod", "Node"), user_agent="pyvolcano-test")
        try:
            assert s.wait_for_sync(30)
            yield s
        finally:
            s.stop()


def _on_server(store: Any, kind: str, name: str) -> dict[str, Any]:
    """The object as the API server holds it, managed fields included."""
    path = RESOURCES[kind].object_path(None, name)
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
