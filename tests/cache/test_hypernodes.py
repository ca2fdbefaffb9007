"""The cache keeps the HyperNode tree up to date: HyperNode events, and node events that change
what a regexMatch or labelMatch member selects. Nothing a session decides reads it yet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from builders import node
from pyvolcano.api.hypernode_tree import CLUSTER_TOP_HYPERNODE as TOP
from pyvolcano.api.manifest import load_manifest_text
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.cache.ingest import apply_event

TOPOLOGY_CASES = sorted((Path(__file__).parents[1] / "data" / "conformance_topology").glob("*/cluster.yaml"))


def hypernode(name: str, tier: int, *members: dict[str, Any], node_count: int = 0) -> dict[str, Any]:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": tier, "members": list(members)}, "status": {"nodeCount": node_count}}


def by_rack(rack: str) -> dict[str, Any]:
    return {"type": "Node", "selector": {"labelMatch": {"matchLabels": {"rack": rack}}}}


def child(name: str) -> dict[str, Any]:
    return {"type": "HyperNode", "selector": {"exactMatch": {"name": name}}}


def by_name(name: str) -> dict[str, Any]:
    return {"type": "Node", "selector": {"exactMatch": {"name": name}}}


def _cache() -> SchedulerCache:
    cache = SchedulerCache()
    for i in range(4):
        apply_event(cache, "ADDED", "Node", node(f"n{i}", labels={"rack": f"r{i // 2}"}))
    for obj in (hypernode("r0", 1, by_rack("r0")), hypernode("r1", 1, by_rack("r1")),
                hypernode("spine", 2, child("r0"), child("r1"))):
        assert apply_event(cache, "ADDED", "HyperNode", obj)
    return cache


def test_hypernode_events_build_the_tree() -> None:
    tree = _cache().hypernode_tree
    assert tree.ready
    assert tree.tiers() == (1, 2, 3)
    assert tree.nodes("r1") == {"n2", "n3"}
    assert tree.ancestors("r0") == ("r0", "spine", TOP)


def test_a_node_label_change_moves_it_between_label_hypernodes() -> None:
    cache = _cache()
    apply_event(cache, "MODIFIED", "Node", node("n0", labels={"rack": "r1"}))
    tree = cache.hypernode_tree
    assert tree.nodes("r0") == {"n1"}
    assert tree.nodes("r1") == {"n0", "n2", "n3"}
    assert tree.lca_of_nodes(["n0", "n2"]) == "r1"
    assert list(tree.rows("r1")) == sorted(cache.nodes[n].index for n in ("n0", "n2", "n3"))


def test_a_deleted_node_leaves_the_tree_and_a_new_one_joins_it() -> None:
    cache = _cache()
    apply_event(cache, "DELETED", "Node", node("n1", labels={"rack": "r0"}))
    assert cache.nodes["n1"].unschedulable  # the row stays, as before
    assert cache.hypernode_tree.nodes("r0") == {"n0"}
    assert "n1" not in cache.hypernode_tree.nodes(TOP)
    apply_event(cache, "ADDED", "Node", node("n4", labels={"rack": "r0"}))
    assert cache.hypernode_tree.nodes("spine") == {"n0", "n2", "n3", "n4"}
    apply_event(cache, "ADDED", "Node", node("n1", labels={"rack": "r0"}))
    assert cache.hypernode_tree.nodes("r0") == {"n0", "n1", "n4"}


def test_a_deleted_hypernode_leaves_the_tree() -> None:
    cache = _cache()
    assert apply_event(cache, "DELETED", "HyperNode", hypernode("r0", 1, by_rack("r0")))
    tree = cache.hypernode_tree
    assert "r0" not in tree and "r0" not in cache.hypernodes
    assert tree.nodes("spine") == {"n2", "n3"}
    assert tree.hypernodes_of("n0") == (TOP,)


def test_a_member_added_to_a_hypernode() -> None:
    cache = _cache()
    apply_event(cache, "ADDED", "Node", node("n9"))
    apply_event(cache, "MODIFIED", "HyperNode", hypernode("r0", 1, by_rack("r0"), by_name("n9")))
    assert cache.hypernode_tree.nodes("spine") == {"n0", "n1", "n2", "n3", "n9"}


def test_a_status_only_hypernode_update_is_quiet_and_a_selector_change_is_not() -> None:
    cache = _cache()
    assert not apply_event(cache, "MODIFIED", "HyperNode", hypernode("r0", 1, by_rack("r0"), node_count=2))
    assert apply_event(cache, "MODIFIED", "HyperNode", hypernode("r0", 1, by_rack("r1")))
    assert cache.hypernode_tree.nodes("r0") == {"n2", "n3"}


def test_a_cycle_marks_the_cached_topology_not_ready() -> None:
    cache = _cache()
    apply_event(cache, "MODIFIED", "HyperNode", hypernode("r0", 1, by_rack("r0"), child("spine")))
    assert not cache.hypernode_tree.ready
    apply_event(cache, "MODIFIED", "HyperNode", hypernode("r0", 1, by_rack("r0")))
    assert cache.hypernode_tree.ready


@pytest.mark.parametrize("path", TOPOLOGY_CASES, ids=lambda p: p.parent.name)
def test_conformance_topology_clusters_build_ready_trees(path: Path) -> None:
    objs = load_manifest_text(path.read_text(encoding="utf-8"))
    cache = SchedulerCache.from_objects(objs)
    tree = cache.hypernode_tree
    assert tree.ready
    assert set(cache.hypernodes) == {h.name for h in objs.hypernodes}
    assert tree.nodes(TOP) == {n.name for n in objs.nodes}
    if not objs.hypernodes:
        assert tree.tiers() == (1,)
        return
    # Two switches of two nodes each under one tier-2 HyperNode, below the virtual root.
    low, high = tree.tier("s0"), tree.tier("s2")
    assert tree.tiers() == (low, high, high + 1)
    assert tree.children("s2") == {"s0", "s1"} and tree.children(TOP) == {"s2"}
    assert tree.nodes("s0") == {"s0-n1", "s0-n2"} and tree.nodes("s1") == {"s1-n3", "s1-n4"}
    assert tree.lca_of_nodes(["s0-n1", "s1-n4"]) == "s2"
    assert list(tree.rows("s1")) == sorted(cache.nodes[n].index for n in ("s1-n3", "s1-n4"))
