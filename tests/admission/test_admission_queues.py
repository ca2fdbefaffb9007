"""Queue admission: defaults, resource ordering, states, hierarchy, deletion."""

from __future__ import annotations

from typing import Any

import pytest

from pyvolcano.admission import VolcanoAdmission
from pyvolcano.store import Forbidden, InMemoryStore, Invalid


def queue(name: str, *, annotations: dict[str, str] | None = None, state: str | None = None,
          **spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                           "metadata": {"name": name}, "spec": spec}
    if annotations:
        obj["metadata"]["annotations"] = annotations
    if state:
        obj["status"] = {"state": state}
    return obj


def rejected(store: InMemoryStore, obj: dict[str, Any], field: str, message: str, *, update: bool = False) -> None:
    with pytest.raises(Invalid) as e:
        store.update(obj) if update else store.create(obj)
    assert str(e.value).startswith(f"Queue {obj['metadata']['name']}: "), str(e.value)
    assert any(f == field and message in m for f, m in e.value.errors), e.value.errors


def test_defaults(store: InMemoryStore) -> None:
    created = store.create(queue("q", annotations={"volcano.sh/hierarchy": "eng/dev",
                                                   "volcano.sh/hierarchy-weights": "2/3"}))
    assert created["spec"] == {"reclaimable": True, "weight": 1}
    assert created["metadata"]["annotations"] == {"volcano.sh/hierarchy": "root/eng/dev",
                                                  "volcano.sh/hierarchy-weights": "1/2/3"}
    kept = store.create(queue("k", weight=4, reclaimable=False))
    assert kept["spec"] == {"reclaimable": False, "weight": 4}


CREATE_RULES: list[tuple[str, dict[str, Any], str, str]] = [
    ("weight too small", queue("q", weight=-1), "spec.weight", "Invalid value: -1: queue weight must be between 1"),
    ("weight too large", queue("q", weight=70000), "spec.weight", "must be between 1 and 65535"),
    ("negative priority", queue("q", priority=-1), "spec.priority", "must be greater than or equal to 0"),
    ("parent syntax", queue("q", parent="Bad_Parent"), "spec.parent", "a lowercase RFC 1123 subdomain"),
    ("bad quantity", queue("q", capability={"cpu": "many"}), "spec.capability.cpu",
     'Invalid value: "many": quantities must match the regular expression'),
    ("negative capability", queue("q", capability={"cpu": "-10"}), "spec.capability.cpu",
     'Invalid value: "-10": must be greater than or equal to 0'),
    ("negative deserved", queue("q", deserved={"cpu": "-5"}), "spec.deserved.cpu",
     'Invalid value: "-5": must be greater than or equal to 0'),
    ("guarantee without deserved", queue("q", guarantee={"resource": {"cpu": "1"}}), "spec.deserved.cpu",
     'Invalid value: "<nil>": deserved[cpu] must be >= guarantee[cpu]=1'),
    ("negative guarantee", queue("q", guarantee={"resource": {"cpu": "-2"}}), "spec.guarantee.resource.cpu",
     'Invalid value: "-2": must be greater than or equal to 0'),
    ("deserved above capability", queue("q", capability={"cpu": "1"}, deserved={"cpu": "2"}), "spec.deserved.cpu",
     'Invalid value: "2": deserved[cpu]=2 must be <= capability[cpu]=1'),
    ("deserved below guarantee", queue("q", deserved={"memory": "1Gi"}, guarantee={"resource": {"memory": "3Gi"}}),
     "spec.deserved.memory", 'Invalid value: "1Gi": deserved[memory]=1Gi must be >= guarantee[memory]=3Gi'),
    ("state", queue("q", state="Closing"), "status.state",
     'Invalid value: "Closing": queue state must be in [Open Closed]'),
    ("hierarchy lengths", queue("q", annotations={"volcano.sh/hierarchy": "root/a",
                                                  "volcano.sh/hierarchy-weights": "1"}),
     "metadata.annotations", "volcano.sh/hierarchy must have the same length with volcano.sh/hierarchy-weights"),
    ("hierarchy weight number", queue("q", annotations={"volcano.sh/hierarchy": "root/a",
                                                        "volcano.sh/hierarchy-weights": "1/x"}),
     "metadata.annotations", 'x in the 1/x is invalid number: strconv.ParseFloat: parsing "x": invalid syntax'),
    ("hierarchy weight positive", queue("q", annotations={"volcano.sh/hierarchy": "root/a",
                                                          "volcano.sh/hierarchy-weights": "1/0"}),
     "metadata.annotations", "0 in the 1/0 must be larger than 0"),
    ("self parent", queue("q", parent="q"), "spec.parent", "queue q cannot use itself as parent"),
    ("missing parent", queue("q", parent="nope"), "spec.parent",
     'failed to get parent queue of queue q: queues.scheduling.volcano.sh "nope" not found'),
    ("weight as text", queue("q", weight="1"), "spec.weight", 'Invalid value: "1": expected an integer'),
    ("name", queue("Q"), "metadata.name", 'Invalid value: "Q": a lowercase RFC 1123 subdomain'),
]


@pytest.mark.parametrize(("obj", "field", "message"), [c[1:] for c in CREATE_RULES], ids=[c[0] for c in CREATE_RULES])
def test_create_rule(store: InMemoryStore, obj: dict[str, Any], field: str, message: str) -> None:
    rejected(store, obj, field, message)


def test_valid_resources_pass(store: InMemoryStore) -> None:
    store.create(queue("q", capability={"cpu": "8", "memory": "16Gi"}, deserved={"cpu": "4000m", "memory": "8Gi"},
                       guarantee={"resource": {"cpu": 2}}, state="Closed"))


def test_hierarchy_sub_path_conflict(store: InMemoryStore) -> None:
    store.create(queue("dev", annotations={"volcano.sh/hierarchy": "root/sci/dev",
                                           "volcano.sh/hierarchy-weights": "1/2/3"}))
    rejected(store, queue("sci", annotations={"volcano.sh/hierarchy": "root/sci",
                                              "volcano.sh/hierarchy-weights": "1/2"}),
             "metadata.annotations", "root/sci is not allowed to be in the sub path of root/sci/dev of queue dev")
    store.create(queue("scidev", annotations={"volcano.sh/hierarchy": "root/scidev",
                                              "volcano.sh/hierarchy-weights": "1/2"}))


def test_depth_limit(store: InMemoryStore) -> None:
    store.create(queue("l1"))
    for i in range(2, 6):
        store.create(queue(f"l{i}", parent=f"l{i - 1}"))
    rejected(store, queue("l6", parent="l5"), "spec.parent", "queue l6 exceeds the maximum allowed depth of 5")
    deep = InMemoryStore(admission=VolcanoAdmission(max_queue_depth=10))
    deep.create(queue("a"))
    deep.create(queue("b", parent="a"))


def test_parent_cycles_are_refused(store: InMemoryStore) -> None:
    store.create(queue("a"))
    store.create(queue("b", parent="a"))
    a = store.get("Queue", None, "a")
    a["spec"]["parent"] = "b"
    rejected(store, a, "spec.parent", "queue a cannot have parent b: the parent chain a -> b -> a is a cycle",
             update=True)


def test_a_parent_for_root_is_refused_as_the_cycle_it_makes(store: InMemoryStore) -> None:
    # Upstream's walk stops at "root" and accepts this; every queue descends from root.
    store.create(queue("a"))
    store.create(queue("b", parent="a"))
    root = store.get("Queue", None, "root")
    root["spec"]["parent"] = "b"
    rejected(store, root, "spec.parent", "the root queue cannot have a parent: queue b descends from root, so the "
                                         "parent chain root -> b -> a -> root would be a cycle", update=True)


def _running_pod_in(store: InMemoryStore, queue_name: str) -> None:
    store.create({"kind": "PodGroup", "metadata": {"name": "pg", "namespace": "ns"},
                  "spec": {"minMember": 1, "queue": queue_name}})
    store.create({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns",
                                              "annotations": {"scheduling.k8s.io/group-name": "pg"}},
                  "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
                  "status": {"phase": "Running"}})


def test_a_leaf_with_allocated_pods_cannot_become_a_parent(store: InMemoryStore) -> None:
    store.create(queue("busy"))
    _running_pod_in(store, "busy")
    rejected(store, queue("child", parent="busy"), "spec.parent",
             "queue busy cannot be the parent queue of queue child because it has allocated Pods: 1")
    store.create(queue("counted", state="Open"))
    store.update_status({**store.get("Queue", None, "counted"),
                         "status": {"state": "Open", "allocated": {"cpu": "1", "pods": "2"}}})
    rejected(store, queue("child", parent="counted"), "spec.parent",
             "queue counted cannot be the parent queue of queue child because it has allocated Pods: 2")


def test_a_parent_that_already_has_children_accepts_more(store: InMemoryStore) -> None:
    store.create(queue("p"))
    store.create(queue("c1", parent="p"))
    _running_pod_in(store, "p")
    store.create(queue("c2", parent="p"))


def test_child_capability_may_not_exceed_its_ancestors(store: InMemoryStore) -> None:
    store.create(queue("top", capability={"cpu": "10"}))
    store.create(queue("mid", parent="top"))
    rejected(store, queue("leaf", parent="mid", capability={"cpu": "20"}), "spec.capability.cpu",
             "queue leaf capability[cpu]=20 exceeds its ancestor's capability=10")


def test_siblings_sum_may_not_exceed_parent(store: InMemoryStore) -> None:
    store.create(queue("p", deserved={"cpu": "8", "memory": "16Gi"}, guarantee={"resource": {"cpu": "8",
                                                                                              "memory": "16Gi"}}))
    store.create(queue("a", parent="p", deserved={"cpu": "5", "memory": "8Gi"},
                       guarantee={"resource": {"cpu": "5", "memory": "8Gi"}}))
    rejected(store, queue("b", parent="p", deserved={"cpu": "4", "memory": "10Gi"},
                          guarantee={"resource": {"cpu": "4", "memory": "10Gi"}}),
             "spec.guarantee.resource",
             "parent queue p validation failed: sum of children's guarantee (cpu 9000.00, memory 19327352832.00) "
             "exceeds parent's guarantee limit (cpu 8000.00, memory 17179869184.00)")
    rejected(store, queue("b", parent="p", deserved={"cpu": "4"}), "spec.deserved",
             "parent queue p validation failed: sum of children's deserved (cpu 9000.00, memory 8589934592.00) "
             "exceeds parent's deserved limit (cpu 8000.00, memory 17179869184.00)")


def test_parent_updates_are_checked_against_children(store: InMemoryStore) -> None:
    store.create(queue("p", capability={"cpu": "20"}, deserved={"cpu": "10"}, guarantee={"resource": {"cpu": "10"}}))
    store.create(queue("c", parent="p", capability={"cpu": "12"}, deserved={"cpu": "8"},
                       guarantee={"resource": {"cpu": "8"}}))
    p = store.get("Queue", None, "p")
    p["spec"]["capability"] = {"cpu": "10"}
    rejected(store, p, "spec.capability.cpu",
             "queue p capability[cpu]=10 is smaller than its descendants' max capability=12", update=True)
    p = store.get("Queue", None, "p")
    p["spec"]["deserved"] = {"cpu": "6"}
    p["spec"]["guarantee"] = {"resource": {"cpu": "6"}}
    rejected(store, p, "spec.guarantee.resource", "queue p validation failed: sum of children's guarantee", update=True)


def test_unchanged_resources_are_not_rechecked_on_update(store: InMemoryStore) -> None:
    store.create(queue("p", deserved={"cpu": "10"}))
    store.create(queue("c", parent="p", deserved={"cpu": "8"}))
    c = store.get("Queue", None, "c")
    c["spec"]["weight"] = 5
    store.update(c)


def test_root_queue_resources_are_protected(store: InMemoryStore) -> None:
    root = store.get("Queue", None, "root")
    root["spec"]["capability"] = {"cpu": "100"}
    rejected(store, root, "spec", "root queue's resource attributes (capability, deserved, guarantee) cannot be "
                                  "modified", update=True)
    relaxed = InMemoryStore(admission=VolcanoAdmission(enable_root_queue_protection=False))
    relaxed.create(queue("root"))
    r = relaxed.get("Queue", None, "root")
    r["spec"]["capability"] = {"cpu": "100"}
    relaxed.update(r)


def test_closing_queues_can_still_be_updated(store: InMemoryStore) -> None:
    store.create(queue("q"))
    store.patch("Queue", None, "q", {"status": {"state": "Closing"}}, subresource="status")
    store.patch("Queue", None, "q", {"spec": {"parent": "root"}})
    assert store.get("Queue", None, "q")["spec"]["parent"] == "root"


@pytest.mark.parametrize("name", ["root", "default"])
def test_builtin_queues_cannot_be_deleted(store: InMemoryStore, name: str) -> None:
    with pytest.raises(Forbidden, match=f"^Queue {name}: `{name}` queue can not be deleted$"):
        store.delete("Queue", None, name)
    assert store.get("Queue", None, name)


def test_queue_with_children_cannot_be_deleted(store: InMemoryStore) -> None:
    store.create(queue("p"))
    store.create(queue("c", parent="p"))
    with pytest.raises(Forbidden, match="queue p can not be deleted because it has 1 child queues: c"):
        store.delete("Queue", None, "p")
    store.delete("Queue", None, "c")
    store.delete("Queue", None, "p")


def test_allocated_pods_block_deletion_only_when_enabled() -> None:
    for enabled in (False, True):
        s = InMemoryStore(admission=VolcanoAdmission(enable_queue_allocated_pods_check=enabled))
        s.create(queue("default"))
        s.create(queue("busy"))
        _running_pod_in(s, "busy")
        if enabled:
            with pytest.raises(Forbidden, match="queue busy cannot be deleted because it has allocated Pods: 1"):
                s.delete("Queue", None, "busy")
        else:
            s.delete("Queue", None, "busy")
