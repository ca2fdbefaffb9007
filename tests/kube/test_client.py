"""KubeClient: which failure statuses mean "try again later" (Unavailable) and which do not; objects
decoded for the caches without ``metadata.managedFields``."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyvolcano.kube.client import ApiError, Expired, KubeClient, ServerUnavailable, decode_object, status_error
from pyvolcano.kube.resources import RESOURCES
from pyvolcano.store.base import Conflict, NotFound, Unavailable


@pytest.mark.parametrize("code", [429, 500, 502, 503, 504])
def test_429_and_5xx_are_unavailable(code: int) -> None:
    err = status_error(code, {"message": "etcdserver: leader changed"}, ("Pod", "ns/p"))
    assert isinstance(err, ServerUnavailable) and isinstance(err, Unavailable) and isinstance(err, ApiError)
    assert err.code == code and "etcdserver: leader changed" in str(err)


@pytest.mark.parametrize(("code", "kind"), [(404, NotFound), (409, Conflict), (410, Expired), (400, ApiError)])
def test_refusals_of_the_request_itself_are_not_unavailable(code: int, kind: type) -> None:
    err = status_error(code, {"message": "no"}, ("Pod", "ns/p"))
    assert isinstance(err, kind) and not isinstance(err, Unavailable)


def test_a_connection_that_fails_is_unavailable_with_code_0() -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("[Errno 111] Connection refused", request=request)

    client = KubeClient(http=httpx2.Client(transport=httpx2.MockTransport(refuse), base_url="https://api"))
    with pytest.raises(ServerUnavailable) as info:
        client.request("GET", "/api/v1/pods", what=("Pod", ""))
    assert info.value.code == 0


# ---------------------------------------------------------------- objects decoded without managedFields

_MANAGED = [{"manager": "vc-controller-manager", "operation": "Update", "apiVersion": "v1",
             "time": "2026-12-01T10:00:00Z", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:containers": {}}}}]

_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)
_META_KEYS = ["name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
              "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
              "ownerReferences", "finalizers"]


def _without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "managedFields"}}


@given(meta=st.fixed_dictionaries({}, optional={k: _json for k in _META_KEYS}),
       body=st.dictionaries(st.sampled_from(["apiVersion", "kind", "spec", "status", "data"]), _json, max_size=4),
       at=st.integers(min_value=0, max_value=14))
def test_an_object_decodes_as_its_json_without_managed_fields_key_order_kept(
        meta: dict[str, Any], body: dict[str, Any], at: int) -> None:
    # the API server writes ObjectMeta's fields in Go's order (managedFields last; any position decodes the same)
    items = sorted(meta.items(), key=lambda kv: _META_KEYS.index(kv[0]))
    items.insert(min(at, len(items)), ("managedFields", _MANAGED))
    obj = {**body, "metadata": dict(items)}
    content = json.dumps(obj).encode()
    got = decode_object(content)
    want = _without_managed_fields(json.loads(content))
    assert got == want
    assert list(got) == list(want) and list(got["metadata"]) == list(want["metadata"])


@pytest.mark.parametrize("content", [
    b'[1, "managedFields"]',
    b'{"kind": "Status", "message": "managedFields is not a field here"}',
    b'{"metadata": null, "spec": {"managedFields": 1}}',
    b'{"metadata": ["managedFields"]}',
    b'{"metadata": {"name": 3, "managedFields": "x"}, "status": {}}',
])
def test_anything_else_decodes_as_is_but_for_metadatas_managed_fields(content: bytes) -> None:
    want = json.loads(content)
    if isinstance(want, dict) and isinstance(want.get("metadata"), dict):
        want["metadata"].pop("managedFields", None)
    assert decode_object(content) == want


def _api_with_pods(n: int) -> KubeClient:
    """An API whose pod list comes in chunks of 2, whose watch sends every pod once, and whose
    POST returns the pod: each object as the API server sends it, with managedFields."""
    pods = [{"metadata": {"name": f"p{i}", "namespace": "a", "resourceVersion": str(10 + i),
                          "labels": {"app": "x"}, "managedFields": _MANAGED},
             "spec": {"nodeName": "n1"}} for i in range(n)]

    def reply(request: httpx2.Request) -> httpx2.Response:
        if request.url.params.get("watch") == "true":
            lines = b"".join(json.dumps({"type": "MODIFIED", "object": p}).encode() + b"\n" for p in pods)
            return httpx2.Response(200, content=lines)
        if request.method == "POST":
            return httpx2.Response(201, json={"kind": "Pod", "apiVersion": "v1", **pods[0]})
        start = int(request.url.params.get("continue") or 0)
        more = {"continue": str(start + 2)} if start + 2 < n else {}
        return httpx2.Response(200, json={"kind": "PodList", "metadata": {"resourceVersion": "99", **more},
                                          "items": pods[start:start + 2]})

    return KubeClient(http=httpx2.Client(transport=httpx2.MockTransport(reply), base_url="https://api"))


def test_listed_watched_and_written_objects_reach_the_caches_without_managed_fields() -> None:
    client = _api_with_pods(5)
    items, rv = client.list(RESOURCES["Pod"], chunk=2)
    assert rv == "99" and [p["metadata"]["name"] for p in items] == ["p0", "p1", "p2", "p3", "p4"]
    assert items[3] == {"metadata": {"name": "p3", "namespace": "a", "resourceVersion": "13", "labels": {"app": "x"}},
                        "spec": {"nodeName": "n1"}, "apiVersion": "v1", "kind": "Pod"}
    watched = [w.object for w in client.watch(RESOURCES["Pod"], "99")]
    assert watched == items
    cached, mine = client.request_twice("POST", "/api/v1/namespaces/a/pods", body={})
    assert cached == mine == items[0] and cached is not mine and cached["metadata"] is not mine["metadata"]


def test_a_status_patch_rbac_refuses_falls_back_to_whole_object_updates_for_that_kind() -> None:
    from pyvolcano.kube.store import KubeStore

    sent: list[str] = []
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
           "metadata": {"name": "j", "namespace": "a", "resourceVersion": "5"},
           "status": {"state": {"phase": "Pending"}}}

    def reply(request: httpx2.Request) -> httpx2.Response:
        sent.append(request.method)
        if request.method == "PATCH":  # a role with upstream's verb only: update on jobs/status
            return httpx2.Response(403, json={"kind": "Status", "code": 403, "reason": "Forbidden",
                                              "message": 'cannot patch resource "jobs/status"'})
        body = json.loads(request.content)
        body["metadata"]["resourceVersion"] = str(int(body["metadata"]["resourceVersion"]) + 1)
        return httpx2.Response(200, json=body)

    store = KubeStore(KubeClient(http=httpx2.Client(transport=httpx2.MockTransport(reply), base_url="https://api")),
                      ("Job",))
    store.apply("Job", "ADDED", job)
    first = store.update_status({**job, "status": {"state": {"phase": "Running"}}})
    assert sent == ["PATCH", "PUT"] and first["status"] == {"state": {"phase": "Running"}}
    store.update_status({**first, "status": {"state": {"phase": "Completed"}}})
    assert sent == ["PATCH", "PUT", "PUT"]
    assert store.peek("Job", "a", "j")["status"] == {"state": {"phase": "Completed"}}
