"""HyperNode documents and a PodGroup's networkTopology / subGroupPolicy as typed objects."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyvolcano.api.hypernode import HyperNode, HyperNodeMember, MemberSelector, SelectorKind
from pyvolcano.api.manifest import ManifestError, load_manifest_file, load_manifest_text
from pyvolcano.api.network_topology import NetworkTopology, SubGroupPolicy

TOPOLOGY_CASES = sorted((Path(__file__).parents[1] / "data" / "conformance_topology").glob("*/cluster.yaml"))

HEAD = "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: s0}\n"


def hypernode(spec: str) -> HyperNode:
    [hn] = load_manifest_text(HEAD + spec, "hn.yaml").hypernodes
    return hn


@pytest.mark.parametrize("path", TOPOLOGY_CASES, ids=lambda p: p.parent.name)
def test_every_network_topology_conformance_cluster_loads(path: Path) -> None:
    objs = load_manifest_file(path)
    assert objs.other == []
    assert objs.podgroups and objs.nodes
    for hn in objs.hypernodes:
        assert hn.members and hn.tier >= 0
    assert all(("HyperNode", hn.name) in objs.documents for hn in objs.hypernodes)


def test_hypernode_fields_are_carried_as_written() -> None:
    hn = hypernode("spec:\n  tier: 2\n  tierName: spine\n  members:\n"
                   "  - {type: HyperNode, selector: {exactMatch: {name: s1}}}\n"
                   "  - {type: Node, selector: {regexMatch: {pattern: '^gpu-'}}}\n"
                   "  - {type: Node, selector: {labelMatch: {matchLabels: {rack: r1}}}}\n"
                   "status: {nodeCount: 5}\n")
    assert (hn.name, hn.tier, hn.tier_name, hn.node_count) == ("s0", 2, "spine", 5)
    assert hn.members == [
        HyperNodeMember("HyperNode", MemberSelector(SelectorKind.EXACT, name="s1")),
        HyperNodeMember("Node", MemberSelector(SelectorKind.REGEX, pattern="^gpu-")),
        HyperNodeMember("Node", MemberSelector(SelectorKind.LABEL, label_selector={"matchLabels": {"rack": "r1"}})),
    ]
    assert hn.members[2].selector.label_selector == {"matchLabels": {"rack": "r1"}}


def test_tier_defaults_to_zero_as_the_crd_allows() -> None:
    assert hypernode("spec:\n  members: [{type: Node, selector: {exactMatch: {name: n1}}}]\n").tier == 0


@pytest.mark.parametrize(("spec", "error"), [
    ("spec: {tier: -1}\n", "spec.tier: got -1; expected an integer >= 0"),
    ("spec: {tier: '1'}\n", "spec.tier: got '1' (str); expected a 32-bit integer"),
    ("spec: {members: [{type: Switch, selector: {exactMatch: {name: n}}}]}\n",
     "spec.members[0].type: got 'Switch' (str); expected one of Node, HyperNode"),
    ("spec: {members: [{type: Node, selector: {}}]}\n",
     "spec.members[0].selector: got none; expected exactly one of exactMatch, regexMatch or labelMatch"),
    ("spec: {members: [{type: Node, selector: {exactMatch: {name: a}, regexMatch: {pattern: b}}}]}\n",
     "spec.members[0].selector: got exactMatch and regexMatch; expected exactly one of"),
    ("spec: {members: [{type: Node, selector: {exactMatch: {name: ''}}}]}\n",
     "spec.members[0].selector.exactMatch.name: is required"),
    ("spec: {members: [{type: Node, selector: {regexMatch: {}}}]}\n",
     "spec.members[0].selector.regexMatch.pattern: is required"),
    ("spec: {members: [{type: Node, selector: {labelMatch: {matchLabels: {'bad key!': x}}}}]}\n",
     "spec.members[0].selector.labelMatch.matchLabels"),
    ("spec: {members: [oops]}\n", "spec.members[0]: got 'oops' (str); expected a mapping"),
])
def test_a_malformed_hypernode_is_an_error_naming_document_and_field(spec: str, error: str) -> None:
    with pytest.raises(ManifestError) as e:
        load_manifest_text(HEAD + spec, "hn.yaml")
    assert str(e.value).startswith("hn.yaml: document 0 (HyperNode s0): ")
    assert error in str(e.value)


def test_a_hypernode_name_may_appear_once() -> None:
    doc = HEAD + "spec: {members: [{type: Node, selector: {exactMatch: {name: n}}}]}\n"
    with pytest.raises(ManifestError, match="duplicate HyperNode s0"):
        load_manifest_text(doc + "---\n" + doc, "hn.yaml")


PG = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg, namespace: ns}\n"


def test_podgroup_network_topology_and_sub_group_policy() -> None:
    [pg] = load_manifest_text(PG + "spec:\n  minMember: 4\n  networkTopology: {mode: soft}\n  subGroupPolicy:\n"
                              "  - name: t0\n    subGroupSize: 2\n    minSubGroups: 1\n"
                              "    matchLabelKeys: [volcano.sh/partition-id]\n"
                              "    labelSelector: {matchLabels: {volcano.sh/task-spec: t0}}\n"
                              "    networkTopology: {mode: hard, highestTierAllowed: 1}\n"
                              "  - name: t1\n    matchLabelKeys: [a]\n    networkTopology: {highestTierName: leaf}\n",
                              "pg.yaml").podgroups
    assert pg.network_topology == NetworkTopology(mode="soft")
    assert pg.sub_group_policy == (
        SubGroupPolicy("t0", 2, 1, ("volcano.sh/partition-id",), {"matchLabels": {"volcano.sh/task-spec": "t0"}},
                       NetworkTopology("hard", 1)),
        SubGroupPolicy("t1", 1, 0, ("a",), None, NetworkTopology("hard", None, "leaf")),
    )


def test_a_podgroup_without_topology_has_none() -> None:
    [pg] = load_manifest_text(PG + "spec: {minMember: 1}\n", "pg.yaml").podgroups
    assert (pg.network_topology, pg.sub_group_policy) == (None, ())


@pytest.mark.parametrize(("spec", "error"), [
    ("spec: {networkTopology: {mode: strict}}\n",
     "spec.networkTopology.mode: got 'strict'; expected one of hard, soft"),
    ("spec: {networkTopology: {highestTierAllowed: -1}}\n",
     "spec.networkTopology.highestTierAllowed: got -1; expected an integer >= 0"),
    ("spec: {networkTopology: hard}\n", "spec.networkTopology: got 'hard' (str); expected a mapping"),
    ("spec: {subGroupPolicy: [{name: a, subGroupSize: 0}]}\n",
     "spec.subGroupPolicy[0].subGroupSize: got 0; expected an integer >= 1"),
    ("spec: {subGroupPolicy: [{name: a, minSubGroups: -1}]}\n",
     "spec.subGroupPolicy[0].minSubGroups: got -1; expected an integer >= 0"),
    ("spec: {subGroupPolicy: [{name: a, matchLabelKeys: key}]}\n",
     "spec.subGroupPolicy[0].matchLabelKeys: got 'key' (str); expected a list of label keys"),
    ("spec: {subGroupPolicy: [{name: a, networkTopology: {mode: x}}]}\n",
     "spec.subGroupPolicy[0].networkTopology.mode: got 'x'"),
])
def test_a_malformed_podgroup_topology_is_an_error_naming_the_field(spec: str, error: str) -> None:
    with pytest.raises(ManifestError) as e:
        load_manifest_text(PG + spec, "pg.yaml")
    assert error in str(e.value)
