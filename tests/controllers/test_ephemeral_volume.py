"""kube-controller-manager's ephemeral volume controller, as the simulator runs it: a pod's
generic ephemeral volume gets its claim ``<pod>-<volume>``, owned by the pod."""

from __future__ import annotations

from typing import Any

import pytest

from pyvolcano.admission import VolcanoAdmission
from pyvolcano.controllers.ephemeral_volume import EphemeralVolumeController
from pyvolcano.store import NotFound
from pyvolcano.store.memory import InMemoryStore

TEMPLATE = {"metadata": {"labels": {"type": "scratch"}, "annotations": {"note": "x"}},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                     "resources": {"requests": {"storage": "1Gi"}}}}


def _pod(name: str = "p") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "image": "x"}],
                     "volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": TEMPLATE}},
                                 {"name": "cfg", "configMap": {"name": "c"}}]}}


class Harness:
    def __init__(self) -> None:
        self.store = InMemoryStore(clock=lambda: 0.0, admission=VolcanoAdmission())
        self.controller = EphemeralVolumeController(store=self.store)
        self.revision = 0

    def settle(self) -> None:
        for _ in range(20):
            for ev in self.store.watch(self.revision):
                self.revision = ev.revision
                if ev.kind in self.controller.watches:
                    self.controller.on_event(ev)
            self.controller.run(0.0)
            if self.store.revision == self.revision:
                return


def test_an_ephemeral_volume_gets_a_claim_named_after_pod_and_volume_owned_by_the_pod() -> None:
    h = Harness()
    pod = h.store.create(_pod())
    h.settle()
    claim = h.store.get("PersistentVolumeClaim", "ns", "p-scratch")
    assert claim["spec"]["resources"] == {"requests": {"storage": "1Gi"}}
    assert (claim["metadata"]["labels"], claim["metadata"]["annotations"]) == ({"type": "scratch"}, {"note": "x"})
    [owner] = claim["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == ("Pod", "p", pod["metadata"]["uid"],
                                                                                 True)
    assert [c["metadata"]["name"] for c in h.store.list("PersistentVolumeClaim")] == ["p-scratch"]


def test_a_claim_of_that_name_the_pod_does_not_own_is_left_alone() -> None:
    h = Harness()
    other = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "p-scratch", "namespace": "ns"},
             "spec": TEMPLATE["spec"]}
    h.store.create(other)
    h.store.create(_pod())
    h.settle()
    assert "ownerReferences" not in h.store.get("PersistentVolumeClaim", "ns", "p-scratch")["metadata"]


def test_a_deleted_claim_is_made_again_and_a_deleted_pods_claims_go() -> None:
    h = Harness()
    h.store.create(_pod())
    h.settle()
    h.store.delete("PersistentVolumeClaim", "ns", "p-scratch")
    h.settle()
    assert h.store.get("PersistentVolumeClaim", "ns", "p-scratch")
    h.store.delete("Pod", "ns", "p")
    h.settle()
    with pytest.raises(NotFound):
        h.store.get("PersistentVolumeClaim", "ns", "p-scratch")
