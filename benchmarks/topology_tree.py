"""Benchmark: the HyperNode tree of a 10,000-node, 3-tier cluster (issue: network topology).

Racks of 16 nodes (tier 1, each selecting its nodes by ``--rack-selector``: a ``labelMatch`` on
a rack label, the default, an ``exactMatch`` per node, or a ``regexMatch`` on the node names),
aggregation blocks of 25 racks (tier 2), spines of 5 blocks (tier 3), the virtual root above.
Prints: the build from scratch, the same tree fed one object at a time (nodes, then
HyperNodes, as the cache's events do), the first computation of every HyperNode's row set,
one node's label change moving it to another rack (the update, then recomputing the row sets
it made stale), and lowest-common-ancestor lookups per second (of two racks, and of two
nodes). Not a test: it never fails on timing.

    python benchmarks/topology_tree.py [--nodes N] [--rack-selector label|exact|regex]
"""

from __future__ import annotations

import argparse
import random
import time

from pyvolcano.api.hypernode import HyperNode, HyperNodeMember, MemberSelector, SelectorKind
from pyvolcano.api.hypernode_tree import HyperNodeTree

NODES_PER_RACK = 16
RACKS_PER_BLOCK = 25
BLOCKS_PER_SPINE = 5


def _member(kind: str, sel: MemberSelector) -> HyperNodeMember:
    return HyperNodeMember(kind, sel)


def cluster(n_nodes: int, rack_selector: str) -> tuple[list[tuple[str, dict[str, str], int]], list[HyperNode]]:
    nodes = [(f"r{i // NODES_PER_RACK:04d}-n{i % NODES_PER_RACK:02d}", {"rack": f"r{i // NODES_PER_RACK:04d}"}, i)
             for i in range(n_nodes)]
    n_racks = -(-n_nodes // NODES_PER_RACK)
    hypernodes = []
    for r in range(n_racks):
        rack = f"r{r:04d}"
        if rack_selector == "label":
            selector = {"matchLabels": {"rack": rack}}
            members = [_member("Node", MemberSelector(SelectorKind.LABEL, label_selector=selector))]
        elif rack_selector == "regex":
            members = [_member("Node", MemberSelector(SelectorKind.REGEX, pattern=f"^{rack}-"))]
        else:
            members = [_member("Node", MemberSelector(SelectorKind.EXACT, name=name))
                       for name, _labels, row in nodes[r * NODES_PER_RACK:(r + 1) * NODES_PER_RACK]]
        hypernodes.append(HyperNode(name=rack, tier=1, tier_name="rack", members=members))
    n_blocks = -(-n_racks // RACKS_PER_BLOCK)
    for b in range(n_blocks):
        racks = range(b * RACKS_PER_BLOCK, min((b + 1) * RACKS_PER_BLOCK, n_racks))
        hypernodes.append(HyperNode(name=f"block{b:03d}", tier=2, tier_name="block", members=[
            _member("HyperNode", MemberSelector(SelectorKind.EXACT, name=f"r{r:04d}")) for r in racks]))
    for s in range(-(-n_blocks // BLOCKS_PER_SPINE)):
        blocks = range(s * BLOCKS_PER_SPINE, min((s + 1) * BLOCKS_PER_SPINE, n_blocks))
        hypernodes.append(HyperNode(name=f"spine{s:02d}", tier=3, tier_name="spine", members=[
            _member("HyperNode", MemberSelector(SelectorKind.EXACT, name=f"block{b:03d}")) for b in blocks]))
    return nodes, hypernodes


def _timed(label: str, fn, *args):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    out = fn(*args)
    print(f"{label:<58} {1000 * (time.perf_counter() - t0):9.2f} ms")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--rack-selector", choices=("label", "exact", "regex"), default="label")
    ap.add_argument("--lookups", type=int, default=100_000)
    args = ap.parse_args()
    nodes, hypernodes = cluster(args.nodes, args.rack_selector)
    print(f"{len(nodes)} nodes, {len(hypernodes)} HyperNodes ({args.rack_selector}Match racks)")

    tree = _timed("build from scratch", HyperNodeTree.build, hypernodes, nodes)

    def one_at_a_time() -> HyperNodeTree:
        t = HyperNodeTree()
        for name, labels, row in nodes:
            t.set_node(name, labels, row)
        for hn in hypernodes:
            t.set_hypernode(hn)
        return t

    _timed("the same, one object at a time", one_at_a_time)
    names = tree.names()
    _timed("row sets of every HyperNode, first time", lambda: [tree.rows(h) for h in names])
    _timed("row sets again (cached)", lambda: [tree.rows(h) for h in names])

    name, labels, row = nodes[0]
    moved = dict(labels, rack=hypernodes[1].name)  # with labelMatch racks, it moves to the second rack
    _timed("one node's label change (set_node)", tree.set_node, name, moved, row)
    _timed("row sets of every HyperNode after it", lambda: [tree.rows(h) for h in names])
    if args.rack_selector == "label":
        assert name in tree.nodes(hypernodes[1].name)

    rng = random.Random(7)
    racks = sorted(tree.hypernodes_at(1))
    pairs = [(rng.choice(racks), rng.choice(racks)) for _ in range(args.lookups)]
    t0 = time.perf_counter()
    for a, b in pairs:
        tree.lca(a, b)
    dt = time.perf_counter() - t0
    print(f"{'lca of two racks':<58} {args.lookups / dt:9.0f} /s")
    node_pairs = [(rng.choice(nodes)[0], rng.choice(nodes)[0]) for _ in range(args.lookups)]
    t0 = time.perf_counter()
    for a, b in node_pairs:
        tree.lca_of_nodes((a, b))
    dt = time.perf_counter() - t0
    print(f"{'lca_of_nodes of two nodes':<58} {args.lookups / dt:9.0f} /s")


if __name__ == "__main__":
    main()
