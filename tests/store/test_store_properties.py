"""Property: whatever sequence of writes happens, replaying the watch reconstructs the store."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyvolcano.store import InMemoryStore, StoreError, WatchEvent

KINDS = ("Pod", "ConfigMap", "Job", "Queue")
NAMES = ("a", "b", "c")
NAMESPACES = ("x", "y")

Key = tuple[str, str, str]


def key_of(obj: dict[str, Any]) -> Key:
    md = obj["metadata"]
    return (obj["kind"], md.get("namespace", ""), md["name"])


def current(store: InMemoryStore) -> dict[Key, dict[str, Any]]:
    return {key_of(o): o for kind in KINDS for o in store.list(kind)}


def replay(state: dict[Key, dict[str, Any]], evs: list[WatchEvent]) -> dict[Key, dict[str, Any]]:
    out = dict(state)
    for ev in evs:
        k = key_of(ev.object)
        if ev.type == "DELETED":
            assert k in out, f"DELETED for unknown {k}"
            del out[k]
        elif ev.type == "ADDED":
            assert k not in out, f"ADDED for existing {k}"
            out[k] = ev.object
        else:
            assert ev.type == "MODIFIED" and k in out, f"MODIFIED for unknown {k}"
            out[k] = ev.object
    return out


labels = st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(["1", "2"]), max_size=2)
target = st.tuples(st.sampled_from(KINDS), st.sampled_from(NAMESPACES), st.sampled_from(NAMES))

op = st.one_of(
    st.tuples(st.just("create"), target, labels, st.none() | st.integers(0, 20), st.booleans(), st.booleans()),
    st.tuples(st.just("update"), target, labels, st.booleans()),
    st.tuples(st.just("status"), target, st.sampled_from(["Pending", "Running", "Succeeded", "Failed"])),
    st.tuples(st.just("patch"), target, st.dictionaries(st.sampled_from(["app", "tier"]),
                                                        st.none() | st.sampled_from(["1", "3"]), max_size=2)),
    st.tuples(st.just("delete"), target, st.sampled_from([None, 0, 5]),
              st.sampled_from(["Background", "Foreground", "Orphan"])),
    st.tuples(st.just("bind"), target, st.sampled_from(["n1", "n2"])),
    st.tuples(st.just("snapshot")),
)


def apply(store: InMemoryStore, step: tuple[Any, ...]) -> None:
    name = step[0]
    if name == "snapshot":
        return
    kind, ns, obj_name = step[1]
    if name == "create":
        _, _, lab, owner_index, bound, finalizer = step
        md: dict[str, Any] = {"name": obj_name, "namespace": ns, "labels": lab}
        everything = [o for k in KINDS for o in store.list(k)]
        if owner_index is not None and everything:
            owner = everything[owner_index % len(everything)]
            md["ownerReferences"] = [{"apiVersion": "v1", "kind": owner["kind"], "name": owner["metadata"]["name"],
                                      "uid": owner["metadata"]["uid"]}]
        if finalizer and kind != "Pod":
            md["finalizers"] = ["test/hold"]
        obj: dict[str, Any] = {"kind": kind, "metadata": md, "spec": {}}
        if kind == "Pod" and bound:
            obj["spec"]["nodeName"] = "n0"
            obj["status"] = {"phase": "Running"}
        store.create(obj)
    elif name == "update":
        _, _, lab, keep_version = step
        cur = store.get(kind, ns, obj_name)
        cur["metadata"]["labels"] = lab
        cur["metadata"].pop("finalizers", None)
        cur["spec"] = {"n": len(lab)}
        if not keep_version:
            cur["metadata"]["resourceVersion"] = "1"  # usually stale: a Conflict
        store.update(cur)
    elif name == "status":
        cur = store.get(kind, ns, obj_name)
        cur["status"] = {"phase": step[2]}
        store.update_status(cur)
    elif name == "patch":
        store.patch(kind, ns, obj_name, {"metadata": {"labels": step[2]}})
    elif name == "delete":
        store.delete(kind, ns, obj_name, grace_period_seconds=step[2], propagation=step[3])
    elif name == "bind":
        store.bind(ns, obj_name, step[2])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, max_size=60))
def test_watch_replay_reconstructs_the_store(steps: list[tuple[Any, ...]]) -> None:
    store = InMemoryStore(clock=lambda: 0.0)
    snapshots: list[tuple[int, dict[Key, dict[str, Any]]]] = []
    for step in steps:
        if step[0] == "snapshot":
            snapshots.append((store.revision, current(store)))
            continue
        before = store.revision
        try:
            apply(store, step)
        except StoreError:
            assert store.revision == before, "a failed write must not change the store"
    final = current(store)
    evs = store.watch(0)
    assert replay({}, evs) == final
    for rev, snap in snapshots:
        assert replay(snap, store.watch(rev)) == final
    # one event per revision, in order, ending at the store's revision
    assert [e.revision for e in evs] == list(range(1, store.revision + 1))
    last_rev: dict[Key, int] = {}
    for e in evs:
        last_rev[key_of(e.object)] = e.revision
        assert e.object["metadata"]["resourceVersion"] == str(e.revision)
    for k, obj in final.items():
        assert obj["metadata"]["resourceVersion"] == str(last_rev[k])
    uids = {o["metadata"]["uid"] for o in final.values()}
    assert len(uids) == len(final)
    # garbage collection: an object whose owner is gone is itself on its way out
    for obj in final.values():
        refs = obj["metadata"].get("ownerReferences") or []
        if any(r["uid"] not in uids for r in refs):
            assert "deletionTimestamp" in obj["metadata"], obj
