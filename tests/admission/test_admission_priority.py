"""The API server's Priority admission plugin, pod defaulting and PriorityClass validation."""

from __future__ import annotations

from typing import Any

import pytest

from pyvolcano.store import Forbidden, InMemoryStore, Invalid


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "image": "i"}], **spec}}


def pc(name: str, value: int, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, **extra}


def test_pod_without_class_gets_priority_zero_when_no_class_is_the_default(store: InMemoryStore) -> None:
    spec = store.create(pod("p"))["spec"]
    assert (spec["priority"], spec["preemptionPolicy"], spec.get("priorityClassName")) == (
        0, "PreemptLowerPriority", None)


def test_lowest_global_default_class_is_used(store: InMemoryStore) -> None:
    store.create(pc("a", 50, globalDefault=True, preemptionPolicy="Never"))
    spec = store.create(pod("p"))["spec"]
    assert (spec["priorityClassName"], spec["priority"], spec["preemptionPolicy"]) == ("a", 50, "Never")


def test_pod_naming_a_missing_class_is_forbidden(store: InMemoryStore) -> None:
    with pytest.raises(Forbidden) as e:
        store.create(pod("p", priorityClassName="no-such-pc"))
    assert str(e.value) == "Pod ns/p: no PriorityClass with name no-such-pc was found"


def test_system_classes_always_exist(store: InMemoryStore) -> None:
    assert store.create(pod("p", priorityClassName="system-cluster-critical"))["spec"]["priority"] == 2_000_000_000


def test_pod_priority_differing_from_its_class_is_forbidden(store: InMemoryStore) -> None:
    store.create(pc("high", 1000))
    assert store.create(pod("same", priorityClassName="high", priority=1000))["spec"]["priority"] == 1000
    with pytest.raises(Forbidden) as e:
        store.create(pod("p", priorityClassName="high", priority=5))
    assert "the integer value of priority (5) must not be provided in pod spec; priority admission controller " \
           "computed 1000 from the given PriorityClass name" in str(e.value)
    with pytest.raises(Forbidden, match="the string value of PreemptionPolicy \\(Never\\)"):
        store.create(pod("q", priorityClassName="high", preemptionPolicy="Never"))


def test_update_keeps_the_admitted_priority(store: InMemoryStore) -> None:
    store.create(pc("high", 1000))
    created = store.create(pod("p", priorityClassName="high"))
    del created["spec"]["priority"]
    created["metadata"]["labels"] = {"a": "b"}
    assert store.update(created)["spec"]["priority"] == 1000


def test_pod_requests_are_defaulted_from_limits_on_create(store: InMemoryStore) -> None:
    p = pod("p")
    p["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "2", "nvidia.com/gpu": 1}, "requests": {"cpu": "1"}}
    res = store.create(p)["spec"]["containers"][0]["resources"]
    assert res["requests"] == {"cpu": "1", "nvidia.com/gpu": 1}


def test_pod_spec_is_validated_on_create(store: InMemoryStore) -> None:
    with pytest.raises(Invalid) as e:
        store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
                      "spec": {"containers": []}})
    assert e.value.field == "spec.containers" and e.value.message == "Required value"


@pytest.mark.parametrize(("obj", "field", "fragment"), [
    (pc("p", 10**20), "value", "expected a 32-bit integer"),
    (pc("p", 10**9 + 1), "value", "Forbidden: maximum allowed value of a user defined priority is 1000000000"),
    (pc("system-p", 1), "metadata.name", "reserved for system use only"),
    (pc("system-node-critical", 1), "metadata.name", "value of system-node-critical PriorityClass must be 2000001000"),
    (pc("p", 1, preemptionPolicy="Later"), "preemptionPolicy", "Unsupported value"),
])
def test_priority_class_validation(store: InMemoryStore, obj: dict[str, Any], field: str, fragment: str) -> None:
    with pytest.raises(Invalid) as e:
        store.create(obj)
    assert e.value.field == field and fragment in e.value.message


def test_priority_class_preemption_policy_defaults(store: InMemoryStore) -> None:
    assert store.create(pc("p", 1))["preemptionPolicy"] == "PreemptLowerPriority"


def test_second_global_default_is_forbidden(store: InMemoryStore) -> None:
    store.create(pc("a", 1, globalDefault=True))
    with pytest.raises(Forbidden, match=r"PriorityClass a is already marked as default\. Only one default can exist"):
        store.create(pc("b", 2, globalDefault=True))
    a = store.get("PriorityClass", None, "a")
    a["description"] = "still the default"
    store.update(a)  # updating the default itself is fine


@pytest.mark.parametrize("kind", ["Queue", "Job", "PodGroup", "Pod"])
def test_non_string_annotations_are_invalid_before_any_mutation(store: InMemoryStore, kind: str) -> None:
    obj = {"apiVersion": "x", "kind": kind, "metadata": {"name": "o", "namespace": "ns",
                                                         "annotations": {"volcano.sh/hierarchy": ["root"]}}}
    with pytest.raises(Invalid) as e:
        store.create(obj)
    assert e.value.field == "metadata.annotations[volcano.sh/hierarchy]"
