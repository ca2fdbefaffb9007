"""InMemoryStore: Kubernetes API semantics (revisions, conflicts, subresources, watch, deletion)."""

from __future__ import annotations

from typing import Any

import pytest

from pyvolcano.store import (
    AlreadyExists,
    Conflict,
    Forbidden,
    InMemoryStore,
    Invalid,
    NotFound,
    Store,
    clone,
    from_rfc3339,
    json_merge_patch,
    to_rfc3339,
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def pod(name: str, ns: str = "ns", *, node: str = "", phase: str | None = None, owner: dict[str, Any] | None = None,
        grace: int | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    md: dict[str, Any] = {"name": name, "namespace": ns}
    if labels:
        md["labels"] = labels
    if owner is not None:
        md["ownerReferences"] = [owner_ref(owner)]
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}
    if phase:
        obj["status"] = {"phase": phase}
    return obj


def owner_ref(owner: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": owner.get("apiVersion", "v1"), "kind": owner["kind"], "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def configmap(name: str, ns: str = "ns", owner: dict[str, Any] | None = None, **data: str) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": ns}
    if owner is not None:
        md["ownerReferences"] = [owner_ref(owner)]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": dict(data)}


def job(name: str, ns: str = "ns") -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": ns},
            "spec": {"minAvailable": 1, "tasks": [{"name": "t", "replicas": 1}]}}


def events(store: InMemoryStore, since: int = 0) -> list[tuple[str, str, str]]:
    return [(e.type, e.kind, e.object["metadata"]["name"]) for e in store.watch(since)]


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(clock: Clock) -> InMemoryStore:
    return InMemoryStore(clock=clock)


# ----------------------------------------------------------------------------- create / get / list


def test_satisfies_the_store_protocol(store: InMemoryStore) -> None:
    assert isinstance(store, Store)


def test_create_sets_server_fields_from_revision_and_clock(store: InMemoryStore, clock: Clock) -> None:
    clock.now = 90.5
    created = store.create(pod("p"))
    md = created["metadata"]
    assert md["uid"] == "uid-1"
    assert md["resourceVersion"] == "1"
    assert md["generation"] == 1
    assert md["creationTimestamp"] == "2024-01-01T00:01:30.5Z"
    assert created["status"] == {"phase": "Pending"}  # the API server's default for a new pod
    assert store.revision == 1
    assert store.get("Pod", "ns", "p") == created


def test_namespaces_default_and_cluster_scoped_kinds_have_none(store: InMemoryStore) -> None:
    p = store.create({"kind": "Pod", "metadata": {"name": "p"}})
    assert p["metadata"]["namespace"] == "default"
    q = store.create({"kind": "Queue", "metadata": {"name": "q", "namespace": "ignored"}})
    assert "namespace" not in q["metadata"]
    assert store.get("Queue", None, "q")["metadata"]["name"] == "q"
    assert store.get("Queue", "whatever", "q")["metadata"]["name"] == "q"


def test_create_ignores_client_supplied_server_fields(store: InMemoryStore) -> None:
    obj = pod("p")
    obj["metadata"].update(uid="mine", resourceVersion="77", deletionTimestamp="2030-01-01T00:00:00Z")
    md = store.create(obj)["metadata"]
    assert (md["uid"], md["resourceVersion"]) == ("uid-1", "1")
    assert "deletionTimestamp" not in md


def test_create_twice_is_already_exists_naming_the_object(store: InMemoryStore) -> None:
    store.create(pod("p"))
    with pytest.raises(AlreadyExists, match=r"^Pod ns/p: already exists$"):
        store.create(pod("p"))
    assert store.revision == 1


def test_missing_name_is_invalid(store: InMemoryStore) -> None:
    with pytest.raises(Invalid) as e:
        store.create({"kind": "Pod", "metadata": {"namespace": "ns"}})
    assert e.value.field == "metadata.name"
    assert str(e.value).startswith("Pod ns/?: metadata.name: Required value")


def test_get_unknown_is_not_found_naming_kind_and_key(store: InMemoryStore) -> None:
    with pytest.raises(NotFound, match=r"^Pod ns/nope: not found$") as e:
        store.get("Pod", "ns", "nope")
    assert (e.value.kind, e.value.key) == ("Pod", "ns/nope")
    with pytest.raises(NotFound, match=r"^Queue q: not found$"):
        store.get("Queue", None, "q")


def test_results_are_copies(store: InMemoryStore) -> None:
    obj = pod("p")
    created = store.create(obj)
    obj["spec"]["containers"][0]["image"] = "changed"
    created["spec"]["containers"][0]["image"] = "changed"
    store.get("Pod", "ns", "p")["spec"]["nodeName"] = "n"
    store.list("Pod")[0]["metadata"]["labels"] = {"a": "b"}
    store.watch(0)[0].object["spec"]["nodeName"] = "x"
    got = store.get("Pod", "ns", "p")
    assert got["spec"] == {"containers": [{"name": "c", "image": "busybox"}]}
    assert "labels" not in got["metadata"]
    assert "nodeName" not in store.watch(0)[0].object["spec"]


def test_list_is_sorted_and_filters_namespace_and_labels(store: InMemoryStore) -> None:
    for ns, name, labels in [("b", "p1", {"app": "x"}), ("a", "p2", {"app": "y"}), ("a", "p1", {"app": "x"})]:
        store.create(pod(name, ns, labels=labels))
    assert [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in store.list("Pod")] == [
        ("a", "p1"), ("a", "p2"), ("b", "p1")]
    assert [p["metadata"]["name"] for p in store.list("Pod", "a")] == ["p1", "p2"]
    assert [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in
            store.list("Pod", label_selector={"app": "x"})] == [("a", "p1"), ("b", "p1")]
    assert store.list("Pod", "a", label_selector={"app": "x", "tier": "web"}) == []
    assert store.list("Node") == []


# ----------------------------------------------------------------------------- generateName


def test_generate_name_is_deterministic_and_unique(clock: Clock) -> None:
    def run() -> list[str]:
        s = InMemoryStore(clock=clock)
        return [s.create({"kind": "ConfigMap", "metadata": {"generateName": "cm-", "namespace": "ns"}})
                ["metadata"]["name"] for _ in range(20)]

    names = run()
    assert names == run()
    assert len(set(names)) == 20
    for n in names:
        assert n.startswith("cm-") and len(n) == 8
        assert all(ch in "bcdfghjklmnpqrstvwxz2456789" for ch in n[3:])


def test_explicit_name_wins_over_generate_name(store: InMemoryStore) -> None:
    created = store.create({"kind": "ConfigMap", "metadata": {"name": "x", "generateName": "cm-"}})
    assert created["metadata"]["name"] == "x"


# ----------------------------------------------------------------------------- update / concurrency


def test_resource_version_increments_on_each_write(store: InMemoryStore) -> None:
    store.create(configmap("other"))
    c = store.create(configmap("c", a="1"))
    assert c["metadata"]["resourceVersion"] == "2"
    c["data"]["a"] = "2"
    c = store.update(c)
    assert c["metadata"]["resourceVersion"] == "3"
    c["data"]["a"] = "3"
    c = store.update(c)
    assert c["metadata"]["resourceVersion"] == "4"
    assert store.revision == 4


def test_stale_update_is_conflict(store: InMemoryStore) -> None:
    first = store.create(configmap("c", a="1"))
    second = store.get("ConfigMap", "ns", "c")
    first["data"]["a"] = "2"
    store.update(first)
    second["data"]["a"] = "3"
    with pytest.raises(Conflict, match=r"^ConfigMap ns/c: the object has been modified"):
        store.update(second)
    assert store.get("ConfigMap", "ns", "c")["data"] == {"a": "2"}


def test_update_without_resource_version_is_last_write_wins(store: InMemoryStore) -> None:
    store.create(configmap("c", a="1"))
    obj = configmap("c", a="9")
    assert store.update(obj)["data"] == {"a": "9"}


def test_update_of_a_recreated_object_with_old_uid_is_conflict(store: InMemoryStore) -> None:
    old = store.create(configmap("c"))
    store.delete("ConfigMap", "ns", "c")
    store.create(configmap("c"))
    del old["metadata"]["resourceVersion"]
    with pytest.raises(Conflict, match="uid"):
        store.update(old)


def test_update_missing_object_is_not_found(store: InMemoryStore) -> None:
    with pytest.raises(NotFound):
        store.update(configmap("nope"))


def test_noop_update_changes_nothing(store: InMemoryStore) -> None:
    c = store.create(configmap("c", a="1"))
    again = store.update(c)
    assert again == c
    assert store.revision == 1
    assert len(store.watch(0)) == 1


def test_update_cannot_change_identity_or_server_fields(store: InMemoryStore) -> None:
    c = store.create(configmap("c"))
    c["metadata"].update(uid="uid-1", creationTimestamp="2030-01-01T00:00:00Z", generation=40)
    c["data"] = {"x": "y"}
    out = store.update(c)
    assert out["metadata"]["creationTimestamp"] == "2024-01-01T00:00:00Z"
    assert out["metadata"]["generation"] == 2


def test_generation_counts_spec_changes_only(store: InMemoryStore) -> None:
    p = store.create(pod("p"))
    p["metadata"]["labels"] = {"a": "b"}
    p = store.update(p)
    assert p["metadata"]["generation"] == 1
    p["status"] = {"phase": "Running"}
    p = store.update_status(p)
    assert p["metadata"]["generation"] == 1
    p["spec"]["priority"] = 5
    assert store.update(p)["metadata"]["generation"] == 2


# ----------------------------------------------------------------------------- status subresource


@pytest.mark.parametrize("kind", ["Pod", "Node", "PodGroup", "Queue", "Job"])
def test_update_keeps_stored_status_for_status_subresource_kinds(store: InMemoryStore, kind: str) -> None:
    obj = {"kind": kind, "metadata": {"name": "x", "namespace": "ns"}, "spec": {"a": 1}, "status": {"s": "old"}}
    created = store.create(obj)
    created["spec"]["a"] = 2
    created["status"] = {"s": "new"}
    out = store.update(created)
    assert out["spec"]["a"] == 2
    assert out["status"]["s"] == "old"


def test_update_status_changes_only_status(store: InMemoryStore) -> None:
    p = store.create(pod("p"))
    p["spec"]["nodeName"] = "sneaky"
    p["metadata"]["labels"] = {"sneaky": "yes"}
    p["status"] = {"phase": "Running"}
    out = store.update_status(p)
    assert out["status"] == {"phase": "Running"}
    assert "nodeName" not in out["spec"]
    assert "labels" not in out["metadata"]
    assert [e.type for e in store.watch(1)] == ["MODIFIED"]


def test_update_status_with_stale_version_is_conflict(store: InMemoryStore) -> None:
    p = store.create(pod("p"))
    stale = dict(p)
    p["status"] = {"phase": "Running"}
    store.update_status(p)
    stale["status"] = {"phase": "Failed"}
    with pytest.raises(Conflict):
        store.update_status(stale)


def test_kinds_without_status_subresource_update_status_normally(store: InMemoryStore) -> None:
    c = store.create({"kind": "Command", "metadata": {"name": "c", "namespace": "ns"}, "action": "AbortJob"})
    c["status"] = {"done": True}
    assert store.update(c)["status"] == {"done": True}


# ----------------------------------------------------------------------------- patch


def test_json_merge_patch_rfc7386_examples() -> None:
    cases = [
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        (["a", "b"], ["c", "d"], ["c", "d"]),
        ({"a": "b"}, ["c"], ["c"]),
        ({"a": "foo"}, None, None),
        ({"a": "foo"}, "bar", "bar"),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ]
    for target, patch, expected in cases:
        assert json_merge_patch(target, patch) == expected


def test_patch_merges_and_removes_keys(store: InMemoryStore) -> None:
    store.create(configmap("c", a="1", b="2"))
    out = store.patch("ConfigMap", "ns", "c", {"data": {"a": None, "c": "3"}, "metadata": {"labels": {"x": "y"}}})
    assert out["data"] == {"b": "2", "c": "3"}
    assert out["metadata"]["labels"] == {"x": "y"}


def test_patch_main_resource_ignores_status_and_status_patch_ignores_the_rest(store: InMemoryStore) -> None:
    store.create(pod("p"))
    out = store.patch("Pod", "ns", "p", {"status": {"phase": "Running"}, "metadata": {"labels": {"a": "b"}}})
    assert out["status"]["phase"] == "Pending"
    assert out["metadata"]["labels"] == {"a": "b"}
    out = store.patch("Pod", "ns", "p", {"status": {"phase": "Running"}, "metadata": {"labels": None}},
                      subresource="status")
    assert out["status"]["phase"] == "Running"
    assert out["metadata"]["labels"] == {"a": "b"}


def test_patch_with_stale_resource_version_is_conflict(store: InMemoryStore) -> None:
    store.create(configmap("c", a="1"))
    store.patch("ConfigMap", "ns", "c", {"data": {"a": "2"}})
    with pytest.raises(Conflict):
        store.patch("ConfigMap", "ns", "c", {"metadata": {"resourceVersion": "1"}, "data": {"a": "3"}})
    store.patch("ConfigMap", "ns", "c", {"metadata": {"resourceVersion": "2"}, "data": {"a": "3"}})
    assert store.get("ConfigMap", "ns", "c")["data"] == {"a": "3"}


def test_patch_rejects_unknown_subresource(store: InMemoryStore) -> None:
    store.create(configmap("c"))
    with pytest.raises(ValueError, match="subresource"):
        store.patch("ConfigMap", "ns", "c", {}, subresource="scale")


# ----------------------------------------------------------------------------- bind


def test_bind_sets_node_annotations_and_condition(store: InMemoryStore, clock: Clock) -> None:
    store.create(pod("p"))
    clock.now = 3
    out = store.bind("ns", "p", "n1", annotations={"scheduling.k8s.io/group-name": "pg"})
    assert out["spec"]["nodeName"] == "n1"
    assert out["metadata"]["annotations"] == {"scheduling.k8s.io/group-name": "pg"}
    assert out["status"]["conditions"] == [{"type": "PodScheduled", "status": "True",
                                            "lastTransitionTime": "2024-01-01T00:00:03Z"}]
    assert [e.type for e in store.watch(1)] == ["MODIFIED"]


def test_binding_a_bound_pod_is_conflict(store: InMemoryStore) -> None:
    store.create(pod("p"))
    store.bind("ns", "p", "n1")
    with pytest.raises(Conflict, match="already assigned to node 'n1'"):
        store.bind("ns", "p", "n2")
    assert store.get("Pod", "ns", "p")["spec"]["nodeName"] == "n1"


def test_binding_a_deleting_pod_is_conflict(store: InMemoryStore) -> None:
    store.create(pod("p", node="n1"))
    with pytest.raises(NotFound):
        store.bind("ns", "nope", "n1")
    p = store.create(pod("q"))
    p["metadata"]["finalizers"] = ["x"]
    store.update(p)
    store.delete("Pod", "ns", "q")
    with pytest.raises(Conflict, match="being deleted"):
        store.bind("ns", "q", "n1")


# ----------------------------------------------------------------------------- watch


def test_watch_replays_in_order_from_any_revision(store: InMemoryStore) -> None:
    store.create(configmap("a"))
    c = store.create(configmap("b"))
    c["data"] = {"k": "v"}
    store.update(c)
    store.delete("ConfigMap", "ns", "a")
    all_events = store.watch(0)
    assert [(e.type, e.object["metadata"]["name"], e.revision) for e in all_events] == [
        ("ADDED", "a", 1), ("ADDED", "b", 2), ("MODIFIED", "b", 3), ("DELETED", "a", 4)]
    assert [e.revision for e in store.watch(2)] == [3, 4]
    assert store.watch(4) == []
    deleted = all_events[-1].object
    assert deleted["metadata"]["resourceVersion"] == "4"
    assert deleted["metadata"]["uid"] == "uid-1"


def test_watch_filters_kinds(store: InMemoryStore) -> None:
    store.create(configmap("a"))
    store.create(pod("p"))
    store.create({"kind": "Queue", "metadata": {"name": "q"}})
    assert [e.kind for e in store.watch(0, ["Pod", "Queue"])] == ["Pod", "Queue"]
    assert [e.revision for e in store.watch(1, {"ConfigMap"})] == []



def test_watch_without_copies_shares_the_recorded_events_and_the_same_filter(store: InMemoryStore) -> None:
    store.create(configmap("a"))
    store.create(pod("p"))
    store.update({**store.get("Pod", "ns", "p"), "metadata": {**store.get("Pod", "ns", "p")["metadata"],
                                                              "labels": {"a": "b"}}})
    shared = store.watch(0, copy=False)
    assert [(e.type, e.kind, e.object, e.revision) for e in shared] == [
        (e.type, e.kind, e.object, e.revision) for e in store.watch(0)]
    assert shared[-1].object is store.peek("Pod", "ns", "p")
    assert [e.revision for e in store.watch(1, ["Pod"], copy=False)] == [2, 3]

def test_status_writes_and_bindings_leave_every_earlier_version_and_each_result_unchanged(
    store: InMemoryStore, clock: Clock,
) -> None:
    store.create(pod("p"))
    created = clone(store.peek("Pod", "ns", "p"))
    bound = store.bind("ns", "p", "n1", annotations={"a": "1"})
    after_bind = clone(store.peek("Pod", "ns", "p"))
    clock.now = 5.0
    running = store.patch("Pod", "ns", "p", {"status": {"phase": "Running"}}, subresource="status")
    after_patch = clone(store.peek("Pod", "ns", "p"))
    done = store.update_status({**running, "status": {**running["status"], "phase": "Succeeded"}})
    for result in (bound, running, done):  # the caller's copies: changing them changes nothing stored
        result["spec"]["containers"][0]["image"] = "changed"
        result["metadata"]["annotations"]["a"] = "changed"
        result["status"]["conditions"].append({"type": "X"})
    events = [e.object for e in store.watch(0, copy=False)]
    assert events[:3] == [created, after_bind, after_patch]
    assert created["spec"] == {"containers": [{"name": "c", "image": "busybox"}]}
    assert after_bind["spec"]["nodeName"] == "n1" and after_bind["metadata"]["annotations"] == {"a": "1"}
    assert [c["type"] for c in after_bind["status"]["conditions"]] == ["PodScheduled"]
    assert after_patch["status"]["phase"] == "Running"
    final = store.get("Pod", "ns", "p")
    assert final["status"]["phase"] == "Succeeded" and final["spec"] == after_bind["spec"]
    assert final["metadata"]["annotations"] == {"a": "1"}
    assert [c["type"] for c in final["status"]["conditions"]] == ["PodScheduled"]


# ----------------------------------------------------------------------------- graceful pod deletion


def test_bound_running_pod_is_deleted_gracefully_then_finalised(store: InMemoryStore, clock: Clock) -> None:
    store.create(pod("p", node="n1", phase="Running"))
    clock.now = 10
    out = store.delete("Pod", "ns", "p")
    assert out is not None
    assert out["metadata"]["deletionTimestamp"] == to_rfc3339(40)
    assert out["metadata"]["deletionGracePeriodSeconds"] == 30
    assert store.get("Pod", "ns", "p")["metadata"]["deletionTimestamp"] == to_rfc3339(40)
    assert events(store, 1) == [("MODIFIED", "Pod", "p")]
    # deleting again changes nothing; a status update keeps it; grace 0 finalises it
    assert store.delete("Pod", "ns", "p") == store.get("Pod", "ns", "p")
    store.patch("Pod", "ns", "p", {"status": {"phase": "Succeeded"}}, subresource="status")
    assert store.get("Pod", "ns", "p")
    final = store.delete("Pod", "ns", "p", grace_period_seconds=0)
    assert final is not None and final["status"]["phase"] == "Succeeded"
    with pytest.raises(NotFound):
        store.get("Pod", "ns", "p")
    assert events(store, 1) == [("MODIFIED", "Pod", "p"), ("MODIFIED", "Pod", "p"), ("DELETED", "Pod", "p")]


def test_pod_grace_period_comes_from_the_pod_and_can_only_shrink(store: InMemoryStore, clock: Clock) -> None:
    store.create(pod("p", node="n1", phase="Running", grace=100))
    out = store.delete("Pod", "ns", "p")
    assert out is not None and out["metadata"]["deletionGracePeriodSeconds"] == 100
    out = store.delete("Pod", "ns", "p", grace_period_seconds=200)
    assert out is not None and out["metadata"]["deletionGracePeriodSeconds"] == 100
    clock.now = 1
    out = store.delete("Pod", "ns", "p", grace_period_seconds=5)
    assert out is not None and out["metadata"]["deletionGracePeriodSeconds"] == 5
    assert from_rfc3339(out["metadata"]["deletionTimestamp"]) == 6


@pytest.mark.parametrize("kwargs", [{}, {"node": "n1", "phase": "Succeeded"}, {"node": "n1", "phase": "Failed"}])
def test_unbound_or_finished_pods_go_at_once(store: InMemoryStore, kwargs: dict[str, Any]) -> None:
    store.create(pod("p", **kwargs))
    store.delete("Pod", "ns", "p", grace_period_seconds=30)
    assert store.list("Pod") == []


def test_explicit_zero_grace_forces_deletion(store: InMemoryStore) -> None:
    store.create(pod("p", node="n1", phase="Running"))
    store.delete("Pod", "ns", "p", grace_period_seconds=0)
    assert store.list("Pod") == []


# ----------------------------------------------------------------------------- finalizers and owners


def test_finalizers_hold_an_object_until_removed(store: InMemoryStore) -> None:
    c = configmap("c")
    c["metadata"]["finalizers"] = ["example.com/hold"]
    store.create(c)
    out = store.delete("ConfigMap", "ns", "c")
    assert out is not None and "deletionTimestamp" in out["metadata"]
    held = store.get("ConfigMap", "ns", "c")
    held["metadata"]["finalizers"] = []
    store.update(held)
    with pytest.raises(NotFound):
        store.get("ConfigMap", "ns", "c")
    assert [e.type for e in store.watch(0)] == ["ADDED", "MODIFIED", "MODIFIED", "DELETED"]


def test_background_deletion_removes_owner_then_dependents_in_order(store: InMemoryStore) -> None:
    owner = store.create(job("j"))
    for name in ("j-b", "j-a"):
        store.create(configmap(name, owner=owner))
    store.create(pod("j-t-0", owner=owner))
    store.create(configmap("unrelated"))
    since = store.revision
    out = store.delete("Job", "ns", "j")
    assert out is not None and out["metadata"]["name"] == "j"
    assert events(store, since) == [("DELETED", "Job", "j"), ("DELETED", "ConfigMap", "j-a"),
                                    ("DELETED", "ConfigMap", "j-b"), ("DELETED", "Pod", "j-t-0")]
    assert [c["metadata"]["name"] for c in store.list("ConfigMap")] == ["unrelated"]


def test_background_deletion_cascades_through_levels_and_lets_running_pods_terminate(store: InMemoryStore) -> None:
    owner = store.create(job("j"))
    pg = store.create({"kind": "PodGroup", "metadata": {"name": "pg", "namespace": "ns",
                                                         "ownerReferences": [owner_ref(owner)]}})
    store.create(configmap("deep", owner=pg))
    store.create(pod("running", node="n1", phase="Running", owner=owner))
    since = store.revision
    store.delete("Job", "ns", "j")
    # dependents go in (kind, namespace, name) order, each one's own dependents right after it
    assert events(store, since) == [("DELETED", "Job", "j"), ("MODIFIED", "Pod", "running"),
                                    ("DELETED", "PodGroup", "pg"), ("DELETED", "ConfigMap", "deep")]
    assert "deletionTimestamp" in store.get("Pod", "ns", "running")["metadata"]


def test_foreground_deletion_removes_dependents_first(store: InMemoryStore) -> None:
    owner = store.create(job("j"))
    store.create(configmap("a", owner=owner))
    store.create(pod("p", owner=owner))
    since = store.revision
    out = store.delete("Job", "ns", "j", propagation="Foreground")
    assert out is not None and out["metadata"]["name"] == "j"
    assert events(store, since) == [("MODIFIED", "Job", "j"), ("DELETED", "ConfigMap", "a"),
                                    ("DELETED", "Pod", "p"), ("DELETED", "Job", "j")]
    assert store.list("Job") == []


def test_foreground_owner_waits_for_terminating_pods(store: InMemoryStore) -> None:
    owner = store.create(job("j"))
    store.create(pod("p", node="n1", phase="Running", owner=owner))
    out = store.delete("Job", "ns", "j", propagation="Foreground")
    assert out is not None
    assert out["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert "deletionTimestamp" in out["metadata"]
    assert "deletionTimestamp" in store.get("Pod", "ns", "p")["metadata"]
    since = store.revision
    store.delete("Pod", "ns", "p", grace_period_seconds=0)
    assert events(store, since) == [("DELETED", "Pod", "p"), ("DELETED", "Job", "j")]


def test_foreground_deletion_without_dependents_is_immediate(store: InMemoryStore) -> None:
    store.create(job("j"))
    store.delete("Job", "ns", "j", propagation="Foreground")
    assert [e.type for e in store.watch(0)] == ["ADDED", "DELETED"]


def test_orphan_deletion_keeps_dependents_without_the_reference(store: InMemoryStore) -> None:
    owner = store.create(job("j"))
    store.create(configmap("a", owner=owner))
    store.delete("Job", "ns", "j", propagation="Orphan")
    left = store.get("ConfigMap", "ns", "a")
    assert "ownerReferences" not in left["metadata"]
    with pytest.raises(ValueError, match="propagation"):
        store.delete("ConfigMap", "ns", "a", propagation="Sideways")


def test_delete_unknown_is_not_found(store: InMemoryStore) -> None:
    with pytest.raises(NotFound):
        store.delete("Pod", "ns", "nope")


# ----------------------------------------------------------------------------- admission hook


class RecordingAdmission:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, bool]] = []

    def admit(self, op: str, obj: dict[str, Any], old: dict[str, Any] | None, store: Store) -> dict[str, Any]:
        self.calls.append((op, obj["metadata"]["name"], old is not None))
        if obj["metadata"]["name"] == "forbidden" and op == "DELETE":
            raise Forbidden(obj["kind"], obj["metadata"]["name"], "no")
        if obj.get("data", {}).get("bad"):
            raise Invalid(obj["kind"], obj["metadata"]["name"], "data.bad", "is bad")
        obj.setdefault("data", {})["defaulted"] = "yes"
        return obj


def test_admission_sees_create_update_delete_but_not_status_or_binding(clock: Clock) -> None:
    adm = RecordingAdmission()
    store = InMemoryStore(clock=clock, admission=adm)
    created = store.create(configmap("c"))
    assert created["data"] == {"defaulted": "yes"}
    patched = store.patch("ConfigMap", "ns", "c", {"data": {"x": "1"}})
    store.update_status({**patched, "status": {"a": 1}})
    store.create(pod("p"))
    store.bind("ns", "p", "n")
    store.delete("ConfigMap", "ns", "c")
    assert adm.calls == [("CREATE", "c", False), ("UPDATE", "c", True), ("CREATE", "p", False),
                         ("DELETE", "c", True)]


def test_rejected_writes_consume_no_revision(clock: Clock) -> None:
    store = InMemoryStore(clock=clock, admission=RecordingAdmission())
    with pytest.raises(Invalid, match=r"data\.bad: is bad"):
        store.create(configmap("c", bad="1"))
    store.create(configmap("forbidden"))
    with pytest.raises(Forbidden):
        store.delete("ConfigMap", "ns", "forbidden")
    assert store.revision == 1
    assert store.get("ConfigMap", "ns", "forbidden")


# ----------------------------------------------------------------------------- timestamps


def test_rfc3339_helpers() -> None:
    assert to_rfc3339(0) == "2024-01-01T00:00:00Z"
    assert to_rfc3339(86400 + 61.25) == "2024-01-02T00:01:01.25Z"
    assert from_rfc3339("2024-01-02T00:01:01.25Z") == pytest.approx(86461.25)
    assert from_rfc3339("2024-01-01T02:00:00+01:00") == 3600
    assert from_rfc3339("2023-12-31T23:59:59Z") == -1
    with pytest.raises(ValueError, match="RFC 3339"):
        from_rfc3339("yesterday")


def test_compact_drops_consumed_history_but_keeps_the_newest_events() -> None:
    from pyvolcano.store.memory import InMemoryStore

    store = InMemoryStore(clock=lambda: 0.0)
    for i in range(30):
        store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"}})
    assert len(store.watch(0)) == 30
    dropped = store.compact(store.revision, keep=10)
    assert dropped == 20
    events = store.watch(0)
    assert [e.object["metadata"]["name"] for e in events] == [f"n{i}" for i in range(20, 30)]
    assert store.compact(5, keep=0) == 0  # nothing at or before revision 5 is left
