"""The API server's RuntimeClass admission plugin: a pod's RuntimeClass brings its overhead,
node selector and tolerations into the pod, so the scheduler places it with them."""

from __future__ import annotations

from typing import Any

import pytest

from builders import node, pod, podgroup, queue, schedule
from pyvolcano.store import Forbidden, InMemoryStore, Invalid

GVISOR = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "gvisor"},
          "handler": "runsc", "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
          "scheduling": {"nodeSelector": {"runtime": "gvisor"},
                         "tolerations": [{"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}]}}


def sandboxed(name: str = "p", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"},
            "spec": {"runtimeClassName": "gvisor", "containers": [{"name": "c", "image": "i"}], **spec}}


def test_the_runtime_class_brings_overhead_node_selector_and_tolerations(store: InMemoryStore) -> None:
    store.create(GVISOR)
    spec = store.create(sandboxed(nodeSelector={"zone": "a"}))["spec"]
    assert spec["overhead"] == {"cpu": "250m", "memory": "120Mi"}
    assert spec["nodeSelector"] == {"zone": "a", "runtime": "gvisor"}
    assert spec["tolerations"] == [{"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}]


def test_a_pod_naming_a_missing_runtime_class_is_forbidden(store: InMemoryStore) -> None:
    with pytest.raises(Forbidden) as e:
        store.create(sandboxed())
    assert str(e.value) == 'Pod ns/p: pod rejected: RuntimeClass "gvisor" not found'


def test_a_conflicting_node_selector_or_overhead_is_forbidden(store: InMemoryStore) -> None:
    store.create(GVISOR)
    with pytest.raises(Forbidden, match=r"conflict: runtimeClass.scheduling.nodeSelector\[runtime\] = gvisor; "
                                        r"pod.spec.nodeSelector\[runtime\] = kata"):
        store.create(sandboxed(nodeSelector={"runtime": "kata"}))
    with pytest.raises(Forbidden, match="pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"):
        store.create(sandboxed("q", overhead={"cpu": "1"}))


def test_overhead_without_a_runtime_class_is_forbidden(store: InMemoryStore) -> None:
    with pytest.raises(Forbidden, match="pod rejected: Pod Overhead set without corresponding RuntimeClass defined "
                                        "Overhead"):
        store.create({**sandboxed(), "spec": {"containers": [{"name": "c", "image": "i"}], "overhead": {"cpu": "1"}}})


def test_a_toleration_the_pod_already_has_is_not_added_twice(store: InMemoryStore) -> None:
    store.create(GVISOR)
    everything = {"operator": "Exists"}
    assert store.create(sandboxed(tolerations=[everything]))["spec"]["tolerations"] == [everything]


def test_a_runtime_class_has_a_dns_label_handler(store: InMemoryStore) -> None:
    with pytest.raises(Invalid) as e:
        store.create({**GVISOR, "handler": "Run_SC"})
    assert e.value.errors[0][0] == "handler"


def test_a_host_network_pods_container_ports_are_host_ports_and_conflict_on_a_node() -> None:
    def web(name: str) -> dict[str, Any]:
        return pod(name, "g", hostNetwork=True, containers=[
            {"name": "c", "ports": [{"containerPort": 8080}], "resources": {"requests": {"cpu": "1"}}}])

    result = schedule(queue("q"), node("n1"), podgroup("g", min_member=1), web("a"), web("b"))
    assert list(result["binds"].values()) == ["n1"]
