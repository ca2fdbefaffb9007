"""nodegroup: a queue's spec.affinity pins its jobs to node groups (predicate and score), its
resource-limit annotation caps what it uses per group; upstream's unit tests run as
conformance cases (tests/data/conformance_plugins), these add what they do not cover."""

from __future__ import annotations

from typing import Any

import pytest

from builders import node, pod, podgroup, queue, schedule
from pyvolcano.framework.arguments import ArgumentError
from pyvolcano.plugins.nodegroup import NodeGroup

GROUP = "volcano.sh/nodegroup-name"


def conf(hierarchy: bool = False, **arguments: Any) -> str:
    args = "".join(f"\n      {k}: {str(v).lower()}" for k, v in arguments.items())
    return f"""
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: nodegroup
    enableHierarchy: {str(hierarchy).lower()}{"" if not args else chr(10) + "    arguments:" + args}
"""


def affinity(required: list[str] | None = None, preferred: list[str] | None = None) -> dict[str, Any]:
    rules: dict[str, Any] = {}
    if required:
        rules["requiredDuringSchedulingIgnoredDuringExecution"] = required
    if preferred:
        rules["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    return {"nodeGroupAffinity": rules}


def grouped(name: str, group: str | None, cpu: str = "8") -> dict[str, Any]:
    return node(name, cpu=cpu, memory="32Gi", labels={GROUP: group} if group else {})


def job(name: str, replicas: int, *, queue_name: str = "q", cpu: str = "2") -> list[dict[str, Any]]:
    return [podgroup(name, queue=queue_name, min_member=replicas),
            *(pod(f"{name}-{i}", name, cpu=cpu, memory="1Gi") for i in range(replicas))]


def test_pods_land_only_on_nodes_of_the_required_groups() -> None:
    docs = [queue("q", affinity=affinity(["gpu"])), grouped("a", "cpu"), grouped("b", "gpu"), grouped("c", None),
            *job("train", 3)]
    assert set(schedule(*docs, conf=conf())["binds"].values()) == {"b"}


def test_the_preferred_group_is_filled_first_then_the_others() -> None:
    docs = [queue("q", affinity=affinity(["fixed", "spot"], ["fixed"])), grouped("f", "fixed", cpu="4"),
            grouped("s", "spot", cpu="8"), *job("train", 3)]
    binds = schedule(*docs, conf=conf())["binds"]
    assert sorted(binds.values()) == ["f", "f", "s"]


def test_a_group_limit_holds_for_replicas_placed_in_one_session() -> None:
    # Three 2-cpu replicas, at most 5 cpu of them on group "fixed": two there, one on "spot".
    q = queue("q", affinity=affinity(["fixed", "spot"], ["fixed"]))
    q["metadata"]["annotations"] = {"volcano.sh/nodegroup-resource-limits": '{"fixed": {"cpu": "5"}}'}
    docs = [q, grouped("f1", "fixed"), grouped("f2", "fixed"), grouped("s", "spot"), *job("train", 3)]
    binds = schedule(*docs, conf=conf())["binds"]
    assert sorted(n[0] for n in binds.values()) == ["f", "f", "s"]


def test_the_limit_counts_what_the_queue_already_runs_on_the_group() -> None:
    q = queue("q", affinity=affinity(["fixed", "spot"], ["fixed"]))
    q["metadata"]["annotations"] = {"volcano.sh/nodegroup-resource-limits": '{"fixed": {"cpu": "3"}}'}
    running = [podgroup("old", phase="Running"), pod("old-0", "old", cpu="2", node_name="f1", phase="Running")]
    docs = [q, grouped("f1", "fixed"), grouped("s", "spot"), *running, *job("new", 1)]
    assert schedule(*docs, conf=conf())["binds"] == {"ns/new-0": "s"}


def test_other_queues_are_not_limited_by_a_queues_annotation() -> None:
    limited = queue("q", affinity=affinity(["fixed"]))
    limited["metadata"]["annotations"] = {"volcano.sh/nodegroup-resource-limits": '{"fixed": {"cpu": "1"}}'}
    docs = [limited, queue("free", affinity=affinity(["fixed"])), grouped("f", "fixed"),
            *job("a", 1), *job("b", 1, queue_name="free")]
    assert schedule(*docs, conf=conf())["binds"] == {"ns/b-0": "f"}


def test_hierarchy_stops_at_a_missing_parent_or_a_cycle() -> None:
    docs = [queue("root", affinity=affinity(["g"])), queue("orphan", parent="nowhere"),
            queue("x", parent="y"), queue("y", parent="x"), grouped("n", "g"),
            *job("a", 1, queue_name="orphan"), *job("b", 1, queue_name="x")]
    assert schedule(*docs, conf=conf(hierarchy=True))["binds"] == {}


def test_hierarchy_is_off_unless_enabled() -> None:
    docs = [queue("root", affinity=affinity(["g"])), queue("child", parent="root"), grouped("n", "g"),
            *job("a", 1, queue_name="child")]
    assert schedule(*docs, conf=conf())["binds"] == {}
    assert schedule(*docs, conf=conf(hierarchy=True))["binds"] == {"ns/a-0": "n"}


def test_strict_false_admits_unlabelled_nodes_only_for_queues_without_rules() -> None:
    docs = [queue("q"), queue("ruled", affinity=affinity(["g"])), grouped("plain", None), grouped("n", "other"),
            *job("a", 1), *job("b", 1, queue_name="ruled")]
    assert schedule(*docs, conf=conf(strict=False))["binds"] == {"ns/a-0": "plain"}


@pytest.mark.parametrize("key", ["strict", "enablePreferredOrder"])
def test_a_malformed_argument_is_refused_with_its_name(key: str) -> None:
    with pytest.raises(ArgumentError, match=key):
        NodeGroup({key: "perhaps"})
