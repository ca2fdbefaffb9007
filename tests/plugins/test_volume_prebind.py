"""Volume binding's pre-bind step: the PV and claim writes before a pod's bind, and their rollback."""

from __future__ import annotations

import pytest

from builders import local_pv, pvc
from pyvolcano.api.storage import ClaimRef, VolumeBindings
from pyvolcano.framework.prebind import BindTarget, PreBindError
from pyvolcano.plugins.predicates.volumebinding import VolumeBinder
from pyvolcano.store.memory import InMemoryStore

TARGET = BindTarget("ns", "p", "uid-p", "n1")


def _store(*docs: dict) -> InMemoryStore:
    store = InMemoryStore(clock=lambda: 0.0)
    for d in docs:
        store.create(d)
    return store


def test_pre_bind_sets_the_claim_ref_and_the_selected_node() -> None:
    store = _store(local_pv("pv-a", "n1"), pvc("a"), pvc("b", cls="dyn"))
    b = VolumeBindings("n1", static=(("pv-a", ClaimRef("ns", "a", "uid-a")),), provisions=(ClaimRef("ns", "b"),))
    VolumeBinder().pre_bind(store, TARGET, b)
    pv = store.get("PersistentVolume", None, "pv-a")
    assert pv["spec"]["claimRef"] == {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": "ns",
                                      "name": "a", "uid": "uid-a"}
    assert pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    claim = store.get("PersistentVolumeClaim", "ns", "b")
    assert claim["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == "n1"


def test_a_pv_taken_meanwhile_fails_the_pre_bind_and_undoes_what_was_written() -> None:
    store = _store(local_pv("pv-a", "n1"), local_pv("pv-b", "n1", claim="other/x"), pvc("a"), pvc("b"))
    b = VolumeBindings("n1", static=(("pv-a", ClaimRef("ns", "a")), ("pv-b", ClaimRef("ns", "b"))))
    binder = VolumeBinder()
    with pytest.raises(PreBindError, match=r'binding volumes: PersistentVolume "pv-b" is bound to another claim '
                                           r"other/x"):
        binder.pre_bind(store, TARGET, b)
    assert "claimRef" not in store.get("PersistentVolume", None, "pv-a")["spec"]
    assert store.get("PersistentVolume", None, "pv-b")["spec"]["claimRef"]["name"] == "x"
    assert binder.stale(b) == [("PersistentVolume", None, "pv-a"), ("PersistentVolume", None, "pv-b")]


def test_rollback_leaves_a_pv_the_pv_controller_already_bound() -> None:
    store = _store(local_pv("pv-a", "n1"), pvc("a"))
    b = VolumeBindings("n1", static=(("pv-a", ClaimRef("ns", "a")),))
    binder = VolumeBinder()
    binder.pre_bind(store, TARGET, b)
    pv = store.get("PersistentVolume", None, "pv-a")
    pv["status"] = {"phase": "Bound"}
    store.update_status(pv)
    binder.rollback(store, TARGET, b)
    assert store.get("PersistentVolume", None, "pv-a")["spec"]["claimRef"]["name"] == "a"


def test_pv_taken_before_the_bind_sends_the_pod_to_the_next_session_which_takes_another() -> None:
    import numpy as np

    from builders import claims, hostnode, pod, podgroup, queue, storage_class
    from pyvolcano.cache.cache import SchedulerCache
    from pyvolcano.cache.ingest import apply_event, resync_object, resync_pod
    from pyvolcano.conf import default_configuration
    from pyvolcano.kube.events import EventRecorder
    from pyvolcano.runtime.cycle import run_once
    from pyvolcano.runtime.registry import default_registry
    from pyvolcano.runtime.writer import DecisionWriter

    docs = [queue("q"), hostnode("n1"), hostnode("n2"), storage_class("local"), local_pv("pv-1", "n1"),
            pvc("data"), podgroup("g"), pod("p", "g", volumes=claims("data"))]
    store = _store(*docs)
    cache = SchedulerCache()
    for d in docs:
        apply_event(cache, "ADDED", d["kind"], d)
    config, registry = default_configuration(), default_registry()
    plugins, actions = registry.plugin_factories(config.plugin_names()), registry.action_factories(config.actions)
    events = EventRecorder(store, controller="volcano", instance="t", clock=lambda: 0.0, workers=0)
    writer = DecisionWriter(store, cache, clock=lambda: 0.0, events=events)
    rng = np.random.default_rng(0)

    first = run_once(cache, config, plugins, actions, now=0.0, rng=rng)
    assert first.binds == [("ns/p", "n1")]  # where its only PV is
    assert cache.volumes.pvs["pv-1"].claim_ref == ClaimRef("ns", "data")  # assumed
    taken = store.get("PersistentVolume", None, "pv-1")
    taken["spec"]["claimRef"] = {"namespace": "other", "name": "x"}
    store.update(taken)  # someone else's claim got it first
    writer.write(first)
    [(ns, name, why)] = writer.take_failures()
    assert why.startswith('running PreBind plugin "VolumeBinding": binding volumes: PersistentVolume "pv-1"')
    for kind, kns, kname in writer.take_stale():
        resync_object(cache, store, kind, kns, kname)
    resync_pod(cache, store, ns, name)
    assert "nodeName" not in store.get("Pod", "ns", "p")["spec"]
    notes = [e["note"] for e in store.list("Event") if e["reason"] == "FailedScheduling"]
    assert notes == [why]

    other = store.create(local_pv("pv-2", "n2"))
    apply_event(cache, "ADDED", "PersistentVolume", other)
    second = run_once(cache, config, plugins, actions, now=1.0, rng=rng)
    assert second.binds == [("ns/p", "n2")]
    writer.write(second)
    assert store.get("PersistentVolume", None, "pv-2")["spec"]["claimRef"]["name"] == "data"
    assert store.get("Pod", "ns", "p")["spec"]["nodeName"] == "n2"


def test_live_scheduler_drops_a_refused_volume_binding_and_binds_in_a_later_session() -> None:
    from typing import Any

    from builders import claims, hostnode, pod, podgroup, queue, storage_class
    from pyvolcano.runtime.scheduler import LiveScheduler
    from pyvolcano.store.base import Conflict

    class OnceRefusing(InMemoryStore):
        refused = 0

        def update(self, obj: dict[str, Any]) -> dict[str, Any]:
            if obj.get("kind") == "PersistentVolume" and not self.refused:
                self.refused += 1
                raise Conflict("PersistentVolume", obj["metadata"]["name"], "the object has been modified")
            return super().update(obj)

    store = OnceRefusing(clock=lambda: 0.0)
    for d in (queue("q"), hostnode("n1"), storage_class("local"), local_pv("pv", "n1"), pvc("data"),
              podgroup("g"), pod("p", "g", volumes=claims("data"))):
        store.create(d)
    sched = LiveScheduler(store, seed=0, clock=lambda: 0.0, bind_workers=1)
    sched.writer.submit = lambda write: write()  # the binds done when run_once returns
    try:
        first = sched.run_once()
        assert first.result.binds == [("ns/p", "n1")]  # decided, then refused at the PV update
        assert "nodeName" not in store.get("Pod", "ns", "p")["spec"]
        assert "claimRef" not in store.get("PersistentVolume", None, "pv")["spec"]
        second = sched.run_once()  # drops the assumptions (pod and PV re-read), places the pod again
    finally:
        sched.close(wait=True)
    assert second.bind_failures == [("ns/p", 'running PreBind plugin "VolumeBinding": binding volumes: '
                                         "PersistentVolume pv: the object has been modified")]
    assert second.result.binds == [("ns/p", "n1")]
    assert store.get("PersistentVolume", None, "pv")["spec"]["claimRef"]["name"] == "data"
    assert store.get("Pod", "ns", "p")["spec"]["nodeName"] == "n1"
