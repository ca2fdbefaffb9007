"""The topology stage of the pending diagnosis: a hard constraint no allowed HyperNode can meet."""

from __future__ import annotations

from typing import Any

from builders import node, pod, podgroup, queue, schedule
from topology_builders import hypernode

TOPO = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: network-topology-aware
"""


def fabric(racks: int = 4, per_rack: int = 4) -> list[dict[str, Any]]:
    """``racks`` racks of ``per_rack`` 8-GPU nodes; two racks per aggregation switch."""
    docs: list[dict[str, Any]] = [queue("q")]
    for r in range(racks):
        names = [f"r{r}-n{i}" for i in range(per_rack)]
        docs += [node(n, cpu="64", memory="512Gi", nvidia_com__gpu="8") for n in names]
        docs.append(hypernode(f"rack-{r}", 1, nodes=tuple(names)))
    for a in range(racks // 2):
        docs.append(hypernode(f"agg-{a}", 2, children=(f"rack-{2 * a}", f"rack-{2 * a + 1}")))
    return docs


def gang(name: str, size: int, **topology: Any) -> list[dict[str, Any]]:
    docs = [podgroup(name, min_member=size, networkTopology=topology)]
    for i in range(size):
        p = pod(f"{name}-{i}", name, cpu="8", memory="64Gi")
        p["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "8"
        docs.append(p)
    return docs


def test_hard_gang_wider_than_every_allowed_hypernode_names_the_best_and_the_wider_tier() -> None:
    out = schedule(*fabric(), *gang("big", 6, mode="hard", highestTierAllowed=1), conf=TOPO)
    assert out["binds"] == {}
    diag = out["diagnoses"]["ns/big"]
    assert (diag["stage"], diag["reason"]) == ("topology", "Topology.NoHyperNodeFits")
    assert diag["message"] == "the job needs 6 whole node(s) inside one HyperNode of tier 1"
    assert "the best, rack-0 (tier 1), has 4 free" in diag["hint"]
    assert "agg-0 at tier 2 has 8 free but highestTierAllowed is 1" in diag["hint"]
    assert "raise highestTierAllowed to 2" in diag["hint"]
    tiers = {f["tier"]: f for f in diag["topology"]}
    assert tiers[1] == {"tier": 1, "best": "rack-0", "room": 4, "allowed": True, "hypernodes": 4}
    assert tiers[2]["allowed"] is False and tiers[2]["room"] == 8


def test_the_same_gang_with_tier_two_allowed_is_placed_inside_one_aggregation_switch() -> None:
    out = schedule(*fabric(), *gang("big", 6, mode="hard", highestTierAllowed=2), conf=TOPO)
    nodes = set(out["binds"].values())
    assert len(nodes) == 6
    assert all(n.startswith(("r0-", "r1-")) for n in nodes) or all(n.startswith(("r2-", "r3-")) for n in nodes)
    assert "ns/big" not in out["diagnoses"]


def test_a_gang_larger_than_the_free_cluster_is_a_node_fit_problem_not_a_topology_one() -> None:
    out = schedule(*fabric(racks=2, per_rack=2), *gang("huge", 5, mode="hard", highestTierAllowed=1), conf=TOPO)
    assert out["diagnoses"]["ns/huge"]["stage"] != "topology"


def test_soft_mode_never_blocks_on_topology() -> None:
    out = schedule(*fabric(), *gang("big", 6, mode="soft"), conf=TOPO)
    assert len(out["binds"]) == 6


def test_a_topology_that_is_not_ready_holds_topology_jobs_and_says_so() -> None:
    docs = fabric(racks=2, per_rack=2)
    docs.append(hypernode("rack-x", 1, nodes=("r0-n0",)))  # r0-n0 claimed by rack-0 and rack-x
    docs.append(hypernode("loop-a", 3, children=("loop-b",)))
    docs.append(hypernode("loop-b", 3, children=("loop-a",)))
    out = schedule(*docs, *gang("g", 2, mode="hard", highestTierAllowed=1), conf=TOPO)
    assert out["binds"] == {}
    assert out["diagnoses"]["ns/g"]["reason"] == "Topology.NotReady"
