"""kube-controller-manager's ResourceClaim controller, as the simulator runs it."""

from __future__ import annotations

import random
from typing import Any

from pyvolcano.controllers.resourceclaim import POD_CLAIM_NAME_ANNOTATION, ResourceClaimController
from pyvolcano.simulator.seeded_entropy import SeededEntropy
from pyvolcano.store.memory import InMemoryStore

TEMPLATE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "gpu", "namespace": "ns"},
            "spec": {"metadata": {"labels": {"team": "a"}},
                     "spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu"}}]}}}}


def _pod(name: str = "p") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "image": "x"}],
                     "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "gpu"}]}}


class Harness:
    def __init__(self) -> None:
        self.store = InMemoryStore()
        self.controller = ResourceClaimController(store=self.store, entropy=SeededEntropy(random.Random(0)))
        self.revision = 0

    def settle(self) -> None:
        for _ in range(20):
            events = self.store.watch(self.revision)
            for ev in events:
                self.revision = ev.revision
                self.controller.on_event(ev)
            self.controller.run(0.0)
            if self.store.revision == self.revision:
                return


def test_a_pod_gets_a_claim_from_its_template_named_in_its_status() -> None:
    h = Harness()
    h.store.create(TEMPLATE)
    pod = h.store.create(_pod())
    h.settle()
    [claim] = h.store.list("ResourceClaim")
    assert claim["metadata"]["name"].startswith("p-gpus-")
    assert claim["metadata"]["annotations"][POD_CLAIM_NAME_ANNOTATION] == "gpus"
    assert claim["metadata"]["labels"] == {"team": "a"}
    assert claim["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
    assert claim["spec"] == TEMPLATE["spec"]["spec"]
    statuses = h.store.get("Pod", "ns", "p")["status"]["resourceClaimStatuses"]
    assert statuses == [{"name": "gpus", "resourceClaimName": claim["metadata"]["name"]}]
    h.settle()
    assert len(h.store.list("ResourceClaim")) == 1  # adopted, never created twice


def test_a_finished_pods_claim_is_released_deallocated_and_deleted() -> None:
    h = Harness()
    h.store.create(TEMPLATE)
    pod = h.store.create(_pod())
    h.settle()
    [claim] = h.store.list("ResourceClaim")
    claim["metadata"]["finalizers"] = ["resource.kubernetes.io/delete-protection"]
    claim = h.store.update(claim)
    claim["status"] = {"allocation": {"devices": {"results": [
        {"request": "g", "driver": "d", "pool": "n1", "device": "gpu-0"}]}},
        "reservedFor": [{"resource": "pods", "name": "p", "uid": pod["metadata"]["uid"]}]}
    h.store.update_status(claim)
    h.settle()
    assert h.store.list("ResourceClaim")[0]["status"]["reservedFor"]  # the pod still runs
    h.store.patch("Pod", "ns", "p", {"status": {"phase": "Succeeded"}}, subresource="status")
    h.settle()
    assert h.store.list("ResourceClaim") == []


def test_a_shared_claim_keeps_its_allocation_while_another_pod_holds_it() -> None:
    h = Harness()
    a = h.store.create({**_pod("a"), "spec": {"containers": [{"name": "c", "image": "x"}],
                                              "resourceClaims": [{"name": "g", "resourceClaimName": "shared"}]}})
    b = h.store.create({**_pod("b"), "spec": {"containers": [{"name": "c", "image": "x"}],
                                              "resourceClaims": [{"name": "g", "resourceClaimName": "shared"}]}})
    claim = h.store.create({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                            "metadata": {"name": "shared", "namespace": "ns",
                                         "finalizers": ["resource.kubernetes.io/delete-protection"]},
                            "spec": TEMPLATE["spec"]["spec"]})
    claim["status"] = {"allocation": {"devices": {"results": [
        {"request": "g", "driver": "d", "pool": "n1", "device": "gpu-0"}]}},
        "reservedFor": [{"resource": "pods", "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]}
                        for p in (a, b)]}
    h.store.update_status(claim)
    h.settle()
    h.store.delete("Pod", "ns", "a", grace_period_seconds=0)
    h.settle()
    got = h.store.get("ResourceClaim", "ns", "shared")
    assert [r["name"] for r in got["status"]["reservedFor"]] == ["b"]
    assert got["status"]["allocation"]
    h.store.delete("Pod", "ns", "b", grace_period_seconds=0)
    h.settle()
    got = h.store.get("ResourceClaim", "ns", "shared")
    assert "allocation" not in got["status"] and not got["status"]["reservedFor"]
    assert "finalizers" not in got["metadata"] or not got["metadata"]["finalizers"]
