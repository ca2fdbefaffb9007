"""Upstream Volcano's network-topology and sub-group allocate tests, converted to manifests.

Each case under ``tests/data/conformance_topology/<case>/`` holds ``cluster.yaml`` (Queues,
Nodes, HyperNodes, PodGroups with ``networkTopology`` / ``subGroupPolicy``, Pods),
``scheduler.yaml`` and ``expected.yaml``; the rules are those of the README next to the cases:
exact ``binds`` or a ``bind_count``, no evictions, ``hypernode_bind_counts`` (binds grouped by
the lowest-tier HyperNode holding the node), and the ``derived`` placement constraints.
"""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyvolcano.api.manifest import load_manifest_file
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf import load_scheduler_conf_file
from pyvolcano.runtime.cycle import schedule_objects
from pyvolcano.runtime.registry import default_registry

CASES = Path(__file__).parent / "data" / "conformance_topology"
CASE_NAMES = sorted(p.name for p in CASES.iterdir() if p.is_dir())


def run_case(case: Path, seed: int = 0) -> tuple[dict[str, Any], SchedulerCache]:
    registry = default_registry()
    config = load_scheduler_conf_file(case / "scheduler.yaml", known_actions=registry.action_names,
                                      known_plugins=registry.plugin_names)
    cache = SchedulerCache.from_objects(load_manifest_file(case / "cluster.yaml"))
    exp = yaml.safe_load((case / "expected.yaml").read_text()) or {}
    return schedule_objects(cache, config, registry, sessions=int(exp.get("sessions", 1)), seed=seed), cache


def differences(case: Path, got: dict[str, Any], cache: SchedulerCache) -> list[str]:
    exp = yaml.safe_load((case / "expected.yaml").read_text()) or {}
    binds: dict[str, str] = got["binds"]
    diffs = []
    if "binds" in exp and binds != (exp["binds"] or {}):
        diffs.append(f"binds {binds} != {exp['binds']}")
    if "bind_count" in exp and len(binds) != exp["bind_count"]:
        diffs.append(f"bind count {len(binds)} != {exp['bind_count']}")
    if "evictions" in exp and collections.Counter(got["evictions"]) != collections.Counter(exp["evictions"] or []):
        diffs.append(f"evictions {got['evictions']} != {exp['evictions']}")
    tree = cache.hypernode_tree
    if "hypernode_bind_counts" in exp:
        real = [h for h in tree.names() if h in cache.hypernodes]
        lowest = min((tree.tier(h) for h in real), default=None)
        groups: collections.Counter[str] = collections.Counter()
        for node in binds.values():
            holder = next((h for h in sorted(real) if tree.tier(h) == lowest and node in tree.nodes(h)), "")
            groups[holder] += 1
        if sorted(groups.values()) != sorted(exp["hypernode_bind_counts"]):
            diffs.append(f"per-HyperNode bind counts {dict(groups)} != {exp['hypernode_bind_counts']}")
    derived = exp.get("derived") or {}
    for pod, nodes in (derived.get("bind_node_sets") or {}).items():
        if binds.get(pod) not in nodes:
            diffs.append(f"{pod} bound to {binds.get(pod)}, expected one of {nodes}")
    for group in derived.get("colocated") or []:
        placed = [binds.get(p) for p in group["pods"]]
        if None in placed or not any(set(placed) <= tree.nodes(h) for h in group["within_one_of"]):
            diffs.append(f"{group['pods']} on {placed}, not inside one of {group['within_one_of']}")
    return diffs


@pytest.mark.parametrize("case", CASE_NAMES)
def test_upstream_topology_case(case: str) -> None:
    got, cache = run_case(CASES / case)
    assert differences(CASES / case, got, cache) == []


@pytest.mark.parametrize("case", CASE_NAMES)
def test_upstream_topology_case_holds_for_other_tie_breaks(case: str) -> None:
    for seed in (1, 7, 42):
        got, cache = run_case(CASES / case, seed=seed)
        assert differences(CASES / case, got, cache) == [], seed


def test_topology_case_output_is_deterministic() -> None:
    case = CASES / "allocate-topology-hard-multiple-hypernodes-available"
    first, second = run_case(case, seed=3)[0], run_case(case, seed=3)[0]
    assert first["binds"] == second["binds"] and first["podgroups"] == second["podgroups"]
