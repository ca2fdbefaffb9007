"""HyperNodeTree: members resolved as upstream's scheduler does, the tree, the virtual root,
readiness, and incremental updates agreeing with a build from scratch."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyvolcano.api.hypernode import HyperNode, HyperNodeMember, MemberSelector, SelectorKind
from pyvolcano.api.hypernode_tree import CLUSTER_TOP_HYPERNODE as TOP
from pyvolcano.api.hypernode_tree import HyperNodeTree


def exact(name: str, kind: str = "Node") -> HyperNodeMember:
    return HyperNodeMember(kind, MemberSelector(SelectorKind.EXACT, name=name))


def regex(pattern: str, kind: str = "Node") -> HyperNodeMember:
    return HyperNodeMember(kind, MemberSelector(SelectorKind.REGEX, pattern=pattern))


def labels(selector: dict[str, Any], kind: str = "Node") -> HyperNodeMember:
    return HyperNodeMember(kind, MemberSelector(SelectorKind.LABEL, label_selector=selector))


def hn(name: str, tier: int, *members: HyperNodeMember, tier_name: str = "") -> HyperNode:
    return HyperNode(name=name, tier=tier, tier_name=tier_name, members=list(members))


def hns(name: str, tier: int, *children: str) -> HyperNode:
    return hn(name, tier, *(exact(c, "HyperNode") for c in children))


def nodes(*names: str, **labelled: dict[str, str]) -> list[tuple[str, dict[str, str], int]]:
    out = [(n, {}, i) for i, n in enumerate(names)]
    out += [(n, dict(lb), len(out) + i) for i, (n, lb) in enumerate(labelled.items())]
    return out


# ----------------------------------------------------------------------------- selectors


def test_exact_match_selects_the_named_node_if_it_exists() -> None:
    t = HyperNodeTree.build([hn("s0", 1, exact("n1"), exact("missing"))], nodes("n1", "n2"))
    assert t.nodes("s0") == {"n1"}
    assert list(t.rows("s0")) == [0]


def test_regex_match_is_an_unanchored_search_on_node_names() -> None:
    t = HyperNodeTree.build([hn("s0", 1, regex("rack1-")), hn("s1", 1, regex("^rack2-n[0-9]$"))],
                            nodes("rack1-n1", "x-rack1-n2", "rack2-n1", "rack2-n10"))
    assert t.nodes("s0") == {"rack1-n1", "x-rack1-n2"}
    assert t.nodes("s1") == {"rack2-n1"}


def test_regex_that_python_cannot_compile_selects_nothing() -> None:
    t = HyperNodeTree.build([hn("s0", 1, regex("("))], nodes("n1"))
    assert t.nodes("s0") == frozenset()


def test_label_match_with_match_labels_and_match_expressions() -> None:
    ns = nodes(a={"rack": "r1", "zone": "z"}, b={"rack": "r1"}, c={"rack": "r2", "zone": "z"}, d={})
    t = HyperNodeTree.build([
        hn("by-labels", 1, labels({"matchLabels": {"rack": "r1", "zone": "z"}})),
        hn("by-in", 1, labels({"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1", "r2"]}]})),
        hn("by-notin", 1, labels({"matchExpressions": [{"key": "rack", "operator": "NotIn", "values": ["r1"]}]})),
        hn("by-exists", 1, labels({"matchExpressions": [{"key": "zone", "operator": "Exists"}]})),
        hn("both", 1, labels({"matchLabels": {"zone": "z"},
                              "matchExpressions": [{"key": "rack", "operator": "DoesNotExist"}]})),
    ], ns)
    assert t.nodes("by-labels") == {"a"}
    assert t.nodes("by-in") == {"a", "b", "c"}
    assert t.nodes("by-notin") == {"c", "d"}
    assert t.nodes("by-exists") == {"a", "c"}
    assert t.nodes("both") == frozenset()


def test_empty_or_invalid_label_match_selects_nothing() -> None:
    t = HyperNodeTree.build([
        hn("empty", 1, labels({})),
        hn("bad", 1, labels({"matchExpressions": [{"key": "rack", "operator": "In", "values": []}]})),
    ], nodes(a={"rack": "r1"}))
    assert t.nodes("empty") == frozenset()
    assert t.nodes("bad") == frozenset()


def test_hypernode_members_are_exact_names_only() -> None:
    t = HyperNodeTree.build([hn("s0", 1, exact("n1")), hn("s1", 1, exact("n2")),
                             hn("up", 2, regex("s[01]", "HyperNode"), exact("s1", "HyperNode"))],
                            nodes("n1", "n2"))
    assert t.children("up") == {"s1"}
    assert t.parent("s0") == TOP
    assert t.nodes("up") == {"n2"}


# ----------------------------------------------------------------------------- a three-tier tree


def three_tier() -> HyperNodeTree:
    ns = [(f"n{i}", {"rack": f"r{i // 2}"}, i) for i in range(8)]  # 4 racks of 2 nodes
    racks = [hn(f"r{r}", 1, labels({"matchLabels": {"rack": f"r{r}"}}), tier_name="rack") for r in range(4)]
    blocks = [hns("b0", 2, "r0", "r1"), hns("b1", 2, "r2", "r3")]
    blocks[0].tier_name = blocks[1].tier_name = "block"
    return HyperNodeTree.build([*racks, *blocks, hns("spine", 3, "b0", "b1")], ns)


def test_three_tier_tree_structure() -> None:
    t = three_tier()
    assert t.ready
    assert t.tiers() == (1, 2, 3, 4)
    assert t.hypernodes_at(1) == {"r0", "r1", "r2", "r3"}
    assert t.hypernodes_at(4) == {TOP}
    assert t.tier_names() == {"rack": 1, "block": 2}
    assert t.parent("r2") == "b1" and t.parent("b1") == "spine" and t.parent("spine") == TOP
    assert t.parent(TOP) is None
    assert t.children("b0") == {"r0", "r1"}
    assert t.ancestors("r3") == ("r3", "b1", "spine", TOP)
    assert t.nodes("b1") == {"n4", "n5", "n6", "n7"}
    assert list(t.rows("b1")) == [4, 5, 6, 7]
    assert t.rows("spine").dtype == np.int64 and len(t.rows("spine")) == 8


def test_ancestors_of_a_node_per_tier() -> None:
    t = three_tier()
    assert t.hypernodes_of("n5") == ("r2", "b1", "spine", TOP)
    assert [t.ancestor("n5", tier) for tier in t.tiers()] == ["r2", "b1", "spine", TOP]
    assert t.ancestor("n5", 7) is None
    assert t.hypernodes_of("unknown") == ()


def test_lowest_common_ancestors() -> None:
    t = three_tier()
    assert t.lca("r0", "r1") == "b0"
    assert t.lca("r0", "r3") == "spine"
    assert t.lca("r0", "b0") == "b0"
    assert t.lca("r2", "r2") == "r2"
    assert t.lca(None, "r2") == "r2" and t.lca("r2", None) == "r2"
    assert t.lca_of_nodes(["n0", "n1"]) == "r0"
    assert t.lca_of_nodes(["n0", "n3"]) == "b0"
    assert t.lca_of_nodes(["n0", "n7"]) == "spine"
    assert t.lca_of_nodes([]) is None
    with pytest.raises(KeyError):
        t.lca("r0", "nope")


# ----------------------------------------------------------------------------- the virtual root


def test_virtual_root_without_hypernodes_has_tier_1_and_every_node() -> None:
    t = HyperNodeTree.build([], nodes("a", "b"))
    assert t.ready
    assert t.tiers() == (1,)
    assert t.tier(TOP) == 1
    assert t.nodes(TOP) == {"a", "b"}
    assert t.children(TOP) == frozenset()
    assert t.lca_of_nodes(["a", "b"]) == TOP


def test_virtual_root_is_above_the_highest_tier_and_adopts_every_parentless_hypernode() -> None:
    t = HyperNodeTree.build([hn("s0", 1, exact("a")), hn("s1", 5, exact("b")), hns("s2", 2, "s0")],
                            nodes("a", "b", "c"))
    assert t.tier(TOP) == 6
    assert t.children(TOP) == {"s1", "s2"}
    assert t.nodes(TOP) == {"a", "b", "c"}
    assert t.lca("s0", "s1") == TOP


def test_virtual_root_tier_is_1_when_every_tier_is_0() -> None:
    t = HyperNodeTree.build([hn("s0", 0, exact("a"))], nodes("a"))
    assert t.tiers() == (0, 1)


# ----------------------------------------------------------------------------- readiness


def test_two_parents_make_the_topology_not_ready() -> None:
    t = HyperNodeTree.build([hn("s0", 1, exact("a")), hns("s1", 2, "s0"), hns("s2", 3, "s0")], nodes("a"))
    assert not t.ready
    assert t.parent("s0") == "s1"  # the first claimant by name, to keep queries defined


def test_two_claims_of_a_missing_hypernode_make_the_topology_not_ready() -> None:
    t = HyperNodeTree.build([hns("s1", 2, "ghost"), hns("s2", 2, "ghost")], nodes())
    assert not t.ready


def test_a_cycle_makes_the_topology_not_ready_and_is_cut() -> None:
    t = HyperNodeTree.build([hn("s0", 1, exact("a")), hns("s1", 2, "s0", "s3"), hns("s2", 3, "s1"),
                             hns("s3", 4, "s2")], nodes("a"))
    assert not t.ready
    assert TOP in t.ancestors("s0")  # every walk up ends at the root
    t.set_hypernode(hns("s1", 2, "s0"))  # upstream's test: the cycle corrected
    assert t.ready
    assert t.ancestors("s0") == ("s0", "s1", "s2", "s3", TOP)
    assert t.nodes("s3") == {"a"}


def test_a_hypernode_claiming_itself_is_a_cycle() -> None:
    t = HyperNodeTree.build([hn("s0", 1, exact("a"), exact("s0", "HyperNode"))], nodes("a"))
    assert not t.ready
    assert t.parent("s0") == TOP


def test_multiple_parents_resolved_by_an_update() -> None:
    t = HyperNodeTree.build([hn("s0", 1, exact("a"), exact("b")), hns("s1", 2, "s0"), hns("s2", 3, "s0")],
                            nodes("a", "b"))
    assert not t.ready
    t.set_hypernode(hns("s2", 3, "s1"))
    assert t.ready
    assert t.ancestors("s0") == ("s0", "s1", "s2", TOP)
    assert t.nodes("s2") == {"a", "b"}


# ----------------------------------------------------------------------------- changes


def test_a_label_change_moves_a_node_between_label_hypernodes() -> None:
    t = three_tier()
    gen = t.generation
    assert t.set_node("n0", {"rack": "r3"}, 0)
    assert t.generation > gen
    assert t.nodes("r0") == {"n1"} and "n0" in t.nodes("r3")
    assert t.nodes("b0") == {"n1", "n2", "n3"}
    assert list(t.rows("b1")) == [0, 4, 5, 6, 7]
    assert t.hypernodes_of("n0") == ("r3", "b1", "spine", TOP)
    assert not t.set_node("n0", {"rack": "r3"}, 0)  # nothing changes


def test_removing_a_node_and_adding_one_a_regex_selects() -> None:
    t = HyperNodeTree.build([hn("s0", 1, regex("^a")), hns("s1", 2, "s0")], nodes("a1", "b1"))
    assert t.nodes("s1") == {"a1"}
    t.set_node("a2", {}, 7)
    assert t.nodes("s1") == {"a1", "a2"} and list(t.rows("s1")) == [0, 7]
    t.remove_node("a1")
    assert t.nodes("s1") == {"a2"} and t.nodes(TOP) == {"a2", "b1"}


def test_deleting_a_hypernode_makes_its_children_top_level() -> None:
    t = three_tier()
    t.remove_hypernode("b0")
    assert "b0" not in t
    assert t.parent("r0") == TOP
    assert t.children("spine") == {"b1"}
    assert t.nodes("spine") == {"n4", "n5", "n6", "n7"}
    assert t.hypernodes_of("n0") == ("r0", TOP)


def test_adding_a_member_and_a_missing_child_appearing() -> None:
    t = HyperNodeTree.build([hn("s0", 1, exact("a")), hns("up", 2, "s0", "s1")], nodes("a", "b"))
    assert t.nodes("up") == {"a"}
    t.set_hypernode(hn("s1", 1, exact("b")))
    assert t.parent("s1") == "up" and t.nodes("up") == {"a", "b"}
    t.set_hypernode(hn("s0", 1, exact("a"), exact("b")))
    assert t.nodes("s0") == {"a", "b"}
    t.set_hypernode(hn("s1", 4, exact("b")))  # a tier change
    assert t.hypernodes_at(1) == {"s0"} and t.tiers() == (1, 2, 4, 5)


# ----------------------------------------------------------------------------- incremental = scratch

_NODE_NAMES = [f"n{i}" for i in range(6)]
_HN_NAMES = ["h0", "h1", "h2", "h3"]
_member = st.one_of(
    st.builds(exact, st.sampled_from(_NODE_NAMES)),
    st.builds(regex, st.sampled_from(["n[0-2]", "^n5$", "4"])),
    st.builds(labels, st.sampled_from([
        {"matchLabels": {"rack": "x"}}, {"matchLabels": {"rack": "y"}},
        {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["x", "y"]}]},
        {"matchExpressions": [{"key": "rack", "operator": "NotIn", "values": ["x"]}]},
    ])),
    st.builds(lambda h: exact(h, "HyperNode"), st.sampled_from(_HN_NAMES)),
)
_hypernode = st.builds(lambda name, tier, ms: hn(name, tier, *ms), st.sampled_from(_HN_NAMES),
                       st.integers(0, 3), st.lists(_member, max_size=3))
_op = st.one_of(
    st.tuples(st.just("hn"), _hypernode),
    st.tuples(st.just("del-hn"), st.sampled_from(_HN_NAMES)),
    st.tuples(st.just("node"), st.sampled_from(_NODE_NAMES), st.sampled_from(["x", "y", None])),
    st.tuples(st.just("del-node"), st.sampled_from(_NODE_NAMES)),
)


def _answers(t: HyperNodeTree) -> dict[str, Any]:
    names = t.names()
    out: dict[str, Any] = {"ready": t.ready, "tiers": t.tiers(), "tier_names": t.tier_names(), "names": names}
    for h in names:
        out[h] = (t.tier(h), t.parent(h), t.children(h), t.nodes(h), t.rows(h).tolist(), t.ancestors(h))
    for n in _NODE_NAMES:
        out[n] = t.hypernodes_of(n)
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(_op, max_size=25))
def test_incremental_updates_agree_with_a_build_from_scratch(ops: list[tuple[Any, ...]]) -> None:
    t = HyperNodeTree()
    specs: dict[str, HyperNode] = {}
    live: dict[str, tuple[dict[str, str], int]] = {}
    for op in ops:
        if op[0] == "hn":
            specs[op[1].name] = op[1]
            t.set_hypernode(op[1])
        elif op[0] == "del-hn":
            specs.pop(op[1], None)
            t.remove_hypernode(op[1])
        elif op[0] == "node":
            lb = {} if op[2] is None else {"rack": op[2]}
            live[op[1]] = (lb, _NODE_NAMES.index(op[1]))
            t.set_node(op[1], lb, live[op[1]][1])
        else:
            live.pop(op[1], None)
            t.remove_node(op[1])
        _answers(t)  # fill the caches, so that the next change must invalidate them
    scratch = HyperNodeTree.build(specs.values(), [(n, lb, row) for n, (lb, row) in live.items()])
    assert _answers(t) == _answers(scratch)
