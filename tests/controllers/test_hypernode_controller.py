"""The HyperNode controller: status.nodeCount and auto-discovery from node labels."""

from __future__ import annotations

from typing import Any

import pytest
from tests.controllers.ctrl_harness import Harness

from pyvolcano.api.names import NETWORK_TOPOLOGY_SOURCE_KEY
from pyvolcano.controllers.hypernode.discovery import CONFIG_KEY, configmap_name, label_tiers, parse_discovery_config
from pyvolcano.controllers.hypernode.members import NodeSets
from pyvolcano.store.base import NotFound

RACK = "example.com/rack"
BLOCK = "example.com/block"


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels)}}


def member(kind: str, how: str, value: Any) -> dict[str, Any]:
    key = {"exactMatch": "name", "regexMatch": "pattern"}.get(how)
    return {"type": kind, "selector": {how: {key: value} if key else value}}


def hypernode(name: str, tier: int, *members: dict[str, Any], **labels: str) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name}
    if labels:
        md["labels"] = dict(labels)
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": md,
            "spec": {"tier": tier, "members": list(members)}}


def discovery_configmap(*types: tuple[str, list[str]], enabled: bool = True) -> dict[str, Any]:
    lines = ["networkTopologyDiscovery:", "  - source: label", f"    enabled: {str(enabled).lower()}",
             "    config:", "      networkTopologyTypes:"]
    for name, keys in types:
        lines.append(f"        {name}:")
        lines += [f"          - nodeLabel: {k}" for k in keys]
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"namespace": "volcano-system", "name": configmap_name()},
            "data": {CONFIG_KEY: "\n".join(lines) + "\n"}}


def node_count(h: Harness, name: str) -> int:
    return int((h.get("HyperNode", None, name).get("status") or {}).get("nodeCount", 0))


def hypernodes(h: Harness) -> dict[str, dict[str, Any]]:
    return {hn["metadata"]["name"]: hn for hn in h.store.list("HyperNode")}


@pytest.fixture
def h() -> Harness:
    harness = Harness(hypernodes=True)
    for i in range(4):
        harness.store.create(node(f"n{i}", zone="east" if i < 2 else "west"))
    harness.settle()
    return harness


# ---------------------------------------------------------------------- status.nodeCount
def test_node_count_counts_nodes_picked_by_each_selector_kind(h: Harness) -> None:
    h.create(hypernode("exact", 1, member("Node", "exactMatch", "n0"), member("Node", "exactMatch", "n1")))
    h.create(hypernode("regex", 1, member("Node", "regexMatch", "n[12]")))
    h.create(hypernode("label", 1, member("Node", "labelMatch", {"matchLabels": {"zone": "west"}})))
    h.create(hypernode("mixed", 1, member("Node", "exactMatch", "n0"), member("Node", "regexMatch", "^n[01]$"),
                       member("Node", "labelMatch", {"matchExpressions": [
                           {"key": "zone", "operator": "In", "values": ["west"]}]})))
    assert [node_count(h, n) for n in ("exact", "regex", "label", "mixed")] == [2, 2, 2, 4]


def test_node_count_ignores_names_that_are_not_nodes(h: Harness) -> None:
    h.create(hypernode("rack", 1, member("Node", "exactMatch", "n0"), member("Node", "exactMatch", "ghost")))
    h.create(hypernode("empty-label", 1, member("Node", "labelMatch", {})))
    assert node_count(h, "rack") == 1
    assert "nodeCount" not in (h.get("HyperNode", None, "empty-label").get("status") or {})


def test_a_hypernode_member_counts_its_own_nodes(h: Harness) -> None:
    h.create(hypernode("rack-a", 1, member("Node", "regexMatch", "n[01]")))
    h.create(hypernode("rack-b", 1, member("Node", "labelMatch", {"matchLabels": {"zone": "west"}})))
    h.create(hypernode("block", 2, member("HyperNode", "regexMatch", "^rack-")))
    h.create(hypernode("spine", 3, member("HyperNode", "exactMatch", "block"),
                       member("HyperNode", "exactMatch", "rack-a")))
    assert [node_count(h, n) for n in ("rack-a", "rack-b", "block", "spine")] == [2, 2, 4, 4]


def test_node_count_follows_member_changes_of_a_nested_hypernode(h: Harness) -> None:
    h.create(hypernode("rack", 1, member("Node", "exactMatch", "n0")))
    h.create(hypernode("block", 2, member("HyperNode", "exactMatch", "rack")))
    rack = h.get("HyperNode", None, "rack")
    rack["spec"]["members"].append(member("Node", "exactMatch", "n3"))
    h.store.update(rack)
    h.settle()
    assert (node_count(h, "rack"), node_count(h, "block")) == (2, 2)


def test_node_count_follows_node_labels_and_deletions(h: Harness) -> None:
    h.create(hypernode("west", 1, member("Node", "labelMatch", {"matchLabels": {"zone": "west"}})))
    h.create(hypernode("block", 2, member("HyperNode", "exactMatch", "west")))
    assert node_count(h, "block") == 2
    h.store.patch("Node", None, "n0", {"metadata": {"labels": {"zone": "west"}}})
    h.settle()
    assert (node_count(h, "west"), node_count(h, "block")) == (3, 3)
    h.store.delete("Node", None, "n2")
    h.settle()
    assert (node_count(h, "west"), node_count(h, "block")) == (2, 2)


def test_status_is_written_only_when_the_count_changes(h: Harness) -> None:
    h.create(hypernode("rack", 1, member("Node", "exactMatch", "n0")))
    rv = h.get("HyperNode", None, "rack")["metadata"]["resourceVersion"]
    h.store.patch("Node", None, "n0", {"metadata": {"labels": {"extra": "x"}}})
    h.settle()
    assert h.get("HyperNode", None, "rack")["metadata"]["resourceVersion"] == rv


def test_a_cycle_of_hypernodes_counts_each_node_once() -> None:
    hns = {"a": hypernode("a", 2, member("HyperNode", "exactMatch", "b"), member("Node", "exactMatch", "n0")),
           "b": hypernode("b", 2, member("HyperNode", "exactMatch", "a"), member("Node", "exactMatch", "n1"))}
    sets = NodeSets({"n0": {}, "n1": {}}, hns)
    assert (sets.node_count("a"), sets.node_count("b")) == (2, 2)


# ---------------------------------------------------------------------- the ConfigMap
def test_config_lists_tiers_from_tier_one_upwards_and_skips_bad_types() -> None:
    cfg = parse_discovery_config(discovery_configmap(
        ("twotier", [BLOCK, RACK, "kubernetes.io/hostname"]),
        ("dup", [RACK, RACK, "kubernetes.io/hostname"]),
        ("a-name-longer-than-twenty", [RACK, "kubernetes.io/hostname"])))
    assert [(c.source, c.enabled) for c in cfg] == [("label", True)]
    assert label_tiers(cfg[0].config) == {"twotier": (RACK, BLOCK)}


# ---------------------------------------------------------------------- discovery
def racks(h: Harness, layout: dict[str, tuple[str, str]]) -> None:
    for name, (rack, block) in layout.items():
        h.store.patch("Node", None, name, {"metadata": {"labels": {RACK: rack, BLOCK: block}}})


def by_label(h: Harness, key: str) -> dict[str, dict[str, Any]]:
    return {hn["metadata"]["labels"][key]: hn for hn in hypernodes(h).values() if key in hn["metadata"]["labels"]}


def members_of(hn: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["type"], m["selector"]["exactMatch"]["name"]) for m in hn["spec"]["members"]]


def test_discovery_builds_a_two_tier_tree_from_node_labels(h: Harness) -> None:
    racks(h, {"n0": ("r1", "b1"), "n1": ("r1", "b1"), "n2": ("r2", "b1"), "n3": ("r3", "b2")})
    h.create(discovery_configmap(("gpu", [BLOCK, RACK, "kubernetes.io/hostname"])))
    rack, block = by_label(h, RACK), by_label(h, BLOCK)
    assert sorted(rack) == ["r1", "r2", "r3"] and sorted(block) == ["b1", "b2"]
    r1 = rack["r1"]
    assert r1["metadata"]["name"].startswith("hypernode-gpu-tier1-") and len(r1["metadata"]["name"]) == 25
    assert r1["metadata"]["labels"] == {NETWORK_TOPOLOGY_SOURCE_KEY: "label", RACK: "r1"}
    assert (r1["spec"]["tier"], r1["spec"]["tierName"]) == (1, RACK)
    assert members_of(r1) == [("Node", "n0"), ("Node", "n1")]
    b1 = block["b1"]
    assert b1["metadata"]["name"].startswith("hypernode-gpu-tier2-")
    assert (b1["spec"]["tier"], b1["spec"]["tierName"]) == (2, BLOCK)
    assert members_of(b1) == sorted([("HyperNode", rack["r1"]["metadata"]["name"]),
                                     ("HyperNode", rack["r2"]["metadata"]["name"])])
    assert node_count(h, b1["metadata"]["name"]) == 3
    assert node_count(h, block["b2"]["metadata"]["name"]) == 1


def test_discovery_updates_the_tree_when_labels_change_and_keeps_names(h: Harness) -> None:
    racks(h, {"n0": ("r1", "b1"), "n1": ("r1", "b1"), "n2": ("r2", "b1"), "n3": ("r2", "b1")})
    h.create(discovery_configmap(("gpu", [BLOCK, RACK, "kubernetes.io/hostname"])))
    names = {v: hn["metadata"]["name"] for v, hn in by_label(h, RACK).items()}
    h.store.patch("Node", None, "n1", {"metadata": {"labels": {RACK: "r2"}}})
    h.settle()
    rack = by_label(h, RACK)
    assert {v: hn["metadata"]["name"] for v, hn in rack.items()} == names
    assert members_of(rack["r1"]) == [("Node", "n0")]
    assert members_of(rack["r2"]) == [("Node", "n1"), ("Node", "n2"), ("Node", "n3")]
    assert (node_count(h, names["r1"]), node_count(h, names["r2"])) == (1, 3)


def test_discovery_deletes_hypernodes_whose_label_values_disappear(h: Harness) -> None:
    racks(h, {"n0": ("r1", "b1"), "n1": ("r1", "b1"), "n2": ("r2", "b2"), "n3": ("r2", "b2")})
    h.create(discovery_configmap(("gpu", [BLOCK, RACK, "kubernetes.io/hostname"])))
    assert sorted(by_label(h, BLOCK)) == ["b1", "b2"]
    for n in ("n2", "n3"):
        h.store.patch("Node", None, n, {"metadata": {"labels": {RACK: "r1", BLOCK: "b1"}}})
    h.settle()
    assert sorted(by_label(h, RACK)) == ["r1"] and sorted(by_label(h, BLOCK)) == ["b1"]
    h.store.delete("Node", None, "n0")
    h.store.patch("Node", None, "n1", {"metadata": {"labels": {RACK: None, BLOCK: None}}})
    h.settle()
    assert members_of(by_label(h, RACK)["r1"]) == [("Node", "n2"), ("Node", "n3")]


def test_discovery_recreates_a_deleted_hypernode(h: Harness) -> None:
    racks(h, {"n0": ("r1", "b1")})
    h.create(discovery_configmap(("gpu", [BLOCK, RACK, "kubernetes.io/hostname"])))
    name = by_label(h, RACK)["r1"]["metadata"]["name"]
    h.store.delete("HyperNode", None, name)
    h.settle()
    assert members_of(by_label(h, RACK)["r1"]) == [("Node", "n0")]


def test_discovery_leaves_hand_made_hypernodes_alone(h: Harness) -> None:
    h.create(hypernode("hand-made", 1, member("Node", "exactMatch", "n0"), **{RACK: "r1"}))
    racks(h, {"n0": ("r1", "b1"), "n1": ("r1", "b1")})
    h.create(discovery_configmap(("gpu", [BLOCK, RACK, "kubernetes.io/hostname"])))
    hand = h.get("HyperNode", None, "hand-made")
    assert members_of(hand) == [("Node", "n0")] and NETWORK_TOPOLOGY_SOURCE_KEY not in hand["metadata"]["labels"]
    discovered = [n for n, hn in hypernodes(h).items() if n != "hand-made"]
    assert len(discovered) == 2
    for n in ("n0", "n1"):
        h.store.patch("Node", None, n, {"metadata": {"labels": {RACK: None, BLOCK: None}}})
    h.settle()
    assert list(hypernodes(h)) == ["hand-made"]


def test_disabling_discovery_stops_it_and_keeps_its_hypernodes(h: Harness) -> None:
    racks(h, {"n0": ("r1", "b1")})
    cm = h.create(discovery_configmap(("gpu", [BLOCK, RACK, "kubernetes.io/hostname"])))
    before = sorted(hypernodes(h))
    cm["data"] = discovery_configmap(("gpu", [BLOCK, RACK, "kubernetes.io/hostname"]), enabled=False)["data"]
    h.store.update(cm)
    h.settle()
    h.store.patch("Node", None, "n1", {"metadata": {"labels": {RACK: "r9", BLOCK: "b9"}}})
    h.settle()
    assert sorted(hypernodes(h)) == before


def test_no_configmap_means_no_discovery(h: Harness) -> None:
    racks(h, {"n0": ("r1", "b1")})
    h.settle()
    assert hypernodes(h) == {}
    with pytest.raises(NotFound):
        h.get("ConfigMap", "volcano-system", configmap_name())


def test_an_unreadable_configmap_is_retried_until_it_is_fixed(h: Harness) -> None:
    racks(h, {"n0": ("r1", "b1")})
    good = discovery_configmap(("gpu", [BLOCK, RACK, "kubernetes.io/hostname"]))
    cm = h.create({**good, "data": {"other.conf": "x"}})
    h.advance(1.0)
    assert hypernodes(h) == {}
    assert h.hypernodes is not None and h.hypernodes.discovery_queue.next_wakeup() is not None
    cm["data"] = good["data"]
    h.store.update(cm)
    h.settle()
    assert sorted(by_label(h, RACK)) == ["r1"]
