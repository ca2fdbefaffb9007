"""Builders for network-topology tests: HyperNodes, PodGroups with ``networkTopology`` /
``subGroupPolicy``, and the plugin set upstream's allocate topology tests enable."""

from __future__ import annotations

from typing import Any

from builders import open_session
from pyvolcano.framework.session import Session
from pyvolcano.plugins.network_topology_aware import NetworkTopologyAware

# gang (job order/ready/pipelined/starving, sub-job ready/order), predicates and
# network-topology-aware (node order, HyperNode order, HyperNode gradient), the other flags off.
TOPOLOGY_CONF = """
actions: allocate
tiers:
- plugins:
  - name: gang
    enablePreemptable: false
    enableReclaimable: false
    enableTaskOrder: false
    enabledSubJobPipelined: false
    enabledHyperNodeOrder: false
    enabledHyperNodeGradient: false
  - name: predicates
    enableNodeOrder: false
  - name: network-topology-aware
"""


def hypernode(name: str, tier: int, *, nodes: tuple[str, ...] = (), children: tuple[str, ...] = (),
              tier_name: str = "") -> dict[str, Any]:
    members = [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in nodes]
    members += [{"type": "HyperNode", "selector": {"exactMatch": {"name": c}}} for c in children]
    spec: dict[str, Any] = {"tier": tier, "members": members}
    if tier_name:
        spec["tierName"] = tier_name
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
            "spec": spec}


def two_racks(*, rack_nodes: int = 2) -> list[dict[str, Any]]:
    """s0 and s1 (tier 1, ``rack_nodes`` nodes each, named s0-n1, s0-n2, s1-n1, ...) under s2 (tier 2)."""
    return [hypernode("s0", 1, nodes=tuple(f"s0-n{i + 1}" for i in range(rack_nodes))),
            hypernode("s1", 1, nodes=tuple(f"s1-n{i + 1}" for i in range(rack_nodes))),
            hypernode("s2", 2, children=("s0", "s1"))]


def topology(mode: str, tier: int | None = None, tier_name: str = "") -> dict[str, Any]:
    nt: dict[str, Any] = {"mode": mode}
    if tier is not None:
        nt["highestTierAllowed"] = tier
    if tier_name:
        nt["highestTierName"] = tier_name
    return nt


def sub_group(name: str, *keys: str, size: int = 1, min_groups: int = 0, nt: dict[str, Any] | None = None,
              selector: dict[str, Any] | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name, "subGroupSize": size, "minSubGroups": min_groups, "matchLabelKeys": list(keys)}
    if nt is not None:
        d["networkTopology"] = nt
    if selector is not None:
        d["labelSelector"] = selector
    return d


def nta(ssn: Session) -> NetworkTopologyAware:
    return next(p for _, p in ssn.plugins if isinstance(p, NetworkTopologyAware))


def open_topology_session(*docs: dict[str, Any], conf: str = TOPOLOGY_CONF) -> Session:
    return open_session(*docs, conf=conf)
