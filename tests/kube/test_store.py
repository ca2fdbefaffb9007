"""KubeStore against a transport-level fake API server: informers, writes and their errors."""

from __future__ import annotations

import time

import pytest

from kube.fakeapi import FakeApiServer, not_served
from pyvolcano.kube.client import Expired
from pyvolcano.kube.store import KubeStore
from pyvolcano.store.base import AlreadyExists, Conflict, NotFound
from waiting import wait_for


def _node(name: str, cpu: str = "4") -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu}, "capacity": {"cpu": cpu}}}


def _pod(name: str, ns: str = "default") -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"containers": [{"name": "c", "image": "x"}], "schedulerName": "volcano"}}




@pytest.fixture
def api() -> FakeApiServer:
    return FakeApiServer()


@pytest.fixture
def store(api: FakeApiServer):
    s = KubeStore(api.client(), ("Node", "Pod"))
    yield s
    s.stop()


def test_initial_list_arrives_as_added_events_before_sync_completes(api, store):
    api.store.create(_node("n1"))
    api.store.create(_pod("p1"))
    store.start()
    assert store.wait_for_sync(5)
    events = store.watch(0)
    assert sorted((e.type, e.kind) for e in events) == [("ADDED", "Node"), ("ADDED", "Pod")]
    assert store.get("Node", None, "n1")["kind"] == "Node"  # filled in although list items lack it


def test_objects_written_elsewhere_arrive_through_the_watch(api, store):
    store.start()
    assert store.wait_for_sync(5)
    rev = store.revision
    with api.lock:
        api.store.create(_pod("p2"))
        api.store.patch("Pod", "default", "p2", {"metadata": {"labels": {"a": "b"}}})
    wait_for(lambda: len(store.watch(rev)) == 2)
    assert [e.type for e in store.watch(rev)] == ["ADDED", "MODIFIED"]
    assert store.get("Pod", "default", "p2")["metadata"]["labels"] == {"a": "b"}


def test_list_is_read_in_chunks(api):
    for i in range(7):
        api.store.create(_node(f"n{i}"))
    s = KubeStore(api.client(), ("Node",))
    s.reflectors[0].list_and_replace()
    assert len(s.list("Node")) == 7
    items, rv = api.client().list(s.reflectors[0].res, chunk=3)
    assert len(items) == 7 and rv == str(api.store.revision)
    assert sum(1 for m, p in api.requests if p == "/api/v1/nodes") >= 3 + 1


def test_own_write_is_visible_at_once_and_reported_exactly_once(api, store):
    store.start()
    assert store.wait_for_sync(5)
    rev = store.revision
    store.create(_pod("p3"))
    assert store.get("Pod", "default", "p3")["metadata"]["name"] == "p3"  # before the watch delivers it
    time.sleep(0.3)  # the watch has long delivered the same version by now
    assert [(e.type, e.object["metadata"]["name"]) for e in store.watch(rev)] == [("ADDED", "p3")]


def test_relist_after_410_reports_deletions_made_while_disconnected(api):
    for name in ("a", "b", "c"):
        api.store.create(_pod(name))
    s = KubeStore(api.client(), ("Pod",))
    r = s.reflectors[0]
    r.list_and_replace()
    rev = s.revision
    with api.lock:  # while nobody watches: delete one, change one, compact the history away
        api.store.delete("Pod", "default", "b", grace_period_seconds=0)
        api.store.patch("Pod", "default", "c", {"metadata": {"labels": {"x": "y"}}})
        api.compacted = api.store.revision
    with pytest.raises(Expired):
        r.watch_once()
    r.list_and_replace()
    changes = sorted((e.type, e.object["metadata"]["name"]) for e in s.watch(rev))
    assert changes == [("DELETED", "b"), ("MODIFIED", "c")]
    assert r.relists == 2


def test_reflector_thread_relists_by_itself_on_410(api):
    api.store.create(_pod("a"))
    s = KubeStore(api.client(), ("Pod",))
    r = s.reflectors[0]
    r.list_and_replace()
    with api.lock:
        api.store.delete("Pod", "default", "a", grace_period_seconds=0)
        api.compacted = api.store.revision + 1
    s.start()
    try:
        wait_for(lambda: r.relists >= 3)
        assert not s.list("Pod")
    finally:
        s.stop()


def _hypernode(name: str) -> dict:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": "n1"}}}]}}


def test_an_optional_kind_the_server_does_not_serve_syncs_empty_and_is_logged_once(api, caplog):
    api.store.create(_node("n1"))
    api.faults.append(not_served("topology.volcano.sh"))
    s = KubeStore(api.client(), ("Node", "HyperNode"))
    s.reflectors[1].backoff = (0.01, 0.01)  # look for the CRD again every 10 ms
    with caplog.at_level("INFO", logger="pyvolcano.kube.store"):
        s.start()
        try:
            assert s.wait_for_sync(5)
            assert s.list("HyperNode") == [] and [n["metadata"]["name"] for n in s.list("Node")] == ["n1"]
            lists = lambda: sum(1 for m, p in api.requests if m == "GET" and p.endswith("/hypernodes"))  # noqa: E731
            wait_for(lambda: lists() >= 5, what="the HyperNode list to be tried again")
        finally:
            s.stop()
    said = [r for r in caplog.records if "does not serve topology.volcano.sh/v1alpha1 hypernodes" in r.getMessage()]
    assert len(said) == 1 and said[0].levelname == "INFO"
    assert not [r for r in caplog.records if r.levelname in ("WARNING", "ERROR")]


def test_a_required_kind_the_server_does_not_serve_never_syncs(api):
    api.faults.append(not_served("scheduling.volcano.sh"))
    s = KubeStore(api.client(), ("Queue",))
    s.reflectors[0].backoff = (0.01, 0.01)
    s.start()
    try:
        assert not s.wait_for_sync(0.3)
    finally:
        s.stop()


def test_a_crd_installed_later_is_listed_and_watched_and_one_removed_empties_the_kind(api):
    fault = not_served("topology.volcano.sh")
    api.faults.append(fault)
    s = KubeStore(api.client(), ("HyperNode",))
    r = s.reflectors[0]
    r.backoff = (0.01, 0.01)
    s.start()
    try:
        assert s.wait_for_sync(5) and not r.served
        api.store.create(_hypernode("rack-a"))
        api.faults.remove(fault)  # the CRD is installed
        wait_for(lambda: [h["metadata"]["name"] for h in s.list("HyperNode")] == ["rack-a"], what="rack-a")
        assert r.served
        api.store.create(_hypernode("rack-b"))  # through the watch
        wait_for(lambda: len(s.list("HyperNode")) == 2, what="rack-b")
        api.faults.append(fault)  # the CRD is removed: its objects go with it
        wait_for(lambda: s.list("HyperNode") == [], what="the HyperNodes to go")
        assert sorted((e.type, e.object["metadata"]["name"]) for e in s.watch(0)) == [
            ("ADDED", "rack-a"), ("ADDED", "rack-b"), ("DELETED", "rack-a"), ("DELETED", "rack-b")]
    finally:
        s.stop()


def test_bookmarks_move_the_resume_point_without_events(api, store):
    api.store.create(_node("n1"))
    api.store.create(_pod("other"))  # bumps the revision, but is not a Node
    s = KubeStore(api.client(), ("Node",))
    r = s.reflectors[0]
    r.resource_version = "0"
    r.watch_once()
    assert r.resource_version == str(api.store.revision)
    assert [e.object["metadata"]["name"] for e in s.watch(0)] == ["n1"]


def test_stale_update_is_a_conflict(api, store):
    store.start()
    assert store.wait_for_sync(5)
    created = store.create(_pod("p"))
    store.patch("Pod", "default", "p", {"metadata": {"labels": {"v": "1"}}})
    with pytest.raises(Conflict):
        store.update(created)  # carries the first resourceVersion


def test_create_of_existing_object_is_already_exists(api, store):
    store.create(_pod("p"))
    with pytest.raises(AlreadyExists):
        store.create(_pod("p"))


def test_binding_reply_is_a_status_and_a_second_bind_conflicts(api, store):
    store.start()
    assert store.wait_for_sync(5)
    store.create(_node("n1"))
    store.create(_pod("p"))
    reply = store.bind("default", "p", "n1")
    assert reply["kind"] == "Status" and reply["code"] == 201
    wait_for(lambda: store.get("Pod", "default", "p")["spec"].get("nodeName") == "n1")
    with pytest.raises(Conflict):
        store.bind("default", "p", "n1")


def test_get_of_unwatched_kind_goes_to_the_server(api, store):
    api.store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "ns"}})
    assert store.get("ConfigMap", "ns", "cm")["kind"] == "ConfigMap"
    with pytest.raises(NotFound):
        store.get("ConfigMap", "ns", "missing")


def test_a_late_event_does_not_resurrect_a_deleted_object(api):
    s = KubeStore(api.client(), ("Pod",))
    created = s.create(_pod("p"))
    s.delete("Pod", "default", "p", grace_period_seconds=0)
    assert s.apply("Pod", "ADDED", created) is False  # the creation's event, arriving late
    with pytest.raises(NotFound):
        s.get("Pod", "default", "p")


def test_compacted_events_are_not_returned_again(api, store):
    store.start()
    assert store.wait_for_sync(5)
    store.create(_pod("a"))
    store.create(_pod("b"))
    rev = store.revision
    store.compact(rev - 1)
    assert [e.object["metadata"]["name"] for e in store.watch(rev - 1)] == ["b"]


def test_every_request_takes_a_token_from_the_rate_limiter(api):
    from pyvolcano.kube.ratelimit import TokenBucket

    now = [0.0]
    slept: list[float] = []

    def sleep(d: float) -> None:
        slept.append(d)
        now[0] += d

    bucket = TokenBucket(10.0, 2, clock=lambda: now[0], sleep=sleep)
    s = KubeStore(api.client(limiter=bucket), ("Pod",))
    for i in range(4):
        s.create(_pod(f"p{i}"))
    # burst 2 goes at once; the next two wait 0.1 s each at 10 qps
    assert slept == pytest.approx([0.1, 0.1])


def test_calls_nested_in_a_concurrent_call_run_together_on_their_own_pool(store):
    # A job synced on the pool creates its pods: they must run concurrently (as upstream's
    # goroutines do), not one after the other in the job's worker. The barrier needs all three.
    import threading

    barrier = threading.Barrier(3, timeout=5)

    def pod() -> str:
        barrier.wait()
        return threading.current_thread().name

    def job() -> list:
        return store.map_concurrently([pod, pod, pod])

    (names,) = [r for r in store.map_concurrently([job]) if not isinstance(r, Exception)]
    assert len(set(names)) == 3
    assert all(n.startswith("kube-write-1") for n in names)


def test_calls_nested_twice_run_inline(store):
    import threading

    def inner() -> str:
        return threading.current_thread().name

    def middle() -> list:
        return store.map_concurrently([inner, inner])

    def outer() -> list:
        return store.map_concurrently([middle])

    (middles,) = store.map_concurrently([outer])
    (names,) = middles
    assert all(n.startswith("kube-write-1") for n in names)


def test_a_written_object_is_cached_and_the_caller_gets_a_copy_of_its_own(store):
    store.wait_for_sync(5)
    created = store.create(_pod("p"))
    cached = store.peek("Pod", "default", "p")
    assert created == cached and created is not cached
    created["metadata"]["labels"] = {"changed": "yes"}
    created["spec"]["containers"][0]["image"] = "other"
    assert "labels" not in store.peek("Pod", "default", "p")["metadata"]
    assert store.peek("Pod", "default", "p")["spec"]["containers"][0]["image"] == "x"
    patched = store.patch("Pod", "default", "p", {"metadata": {"labels": {"a": "b"}}})
    patched["metadata"]["labels"]["a"] = "c"
    assert store.peek("Pod", "default", "p")["metadata"]["labels"] == {"a": "b"}
