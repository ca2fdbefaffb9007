"""Topology figures: a job's span and the topology fragmentation, on small hand-made trees."""

from __future__ import annotations

import numpy as np
import pytest

from pyvolcano.api.hypernode import HyperNode
from pyvolcano.api.hypernode_tree import HyperNodeTree
from pyvolcano.api.manifest import parse_object
from pyvolcano.simulator.topology_metrics import Gang, _fits, topology_fragmentation

GPU = 1000  # milli-GPUs


def hypernode(name: str, tier: int, members: list[str], kind: str = "Node") -> HyperNode:
    hn = parse_object({"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name},
                       "spec": {"tier": tier, "members": [{"type": kind, "selector": {"exactMatch": {"name": m}}}
                                                          for m in members]}})
    assert isinstance(hn, HyperNode)
    return hn


def two_racks() -> HyperNodeTree:
    """rack-a = {a0}, rack-b = {b0, b1}, both under spine (tier 2); rows a0=0, b0=1, b1=2."""
    return HyperNodeTree.build(
        [hypernode("rack-a", 1, ["a0"]), hypernode("rack-b", 1, ["b0", "b1"]),
         hypernode("spine", 2, ["rack-a", "rack-b"], kind="HyperNode")],
        [("a0", {}, 0), ("b0", {}, 1), ("b1", {}, 2)])


def idle(*gpus: float) -> np.ndarray:
    return np.asarray(gpus, dtype=float) * GPU


def test_a_rack_too_small_for_the_only_hard_tier1_gang_is_fragmented() -> None:
    gang = Gang((8 * GPU, 8 * GPU), tier=1)
    assert topology_fragmentation(two_racks(), idle(8, 8, 8), [gang]) == (8.0, 1)


def test_without_a_constraint_the_same_gang_can_use_every_rack() -> None:
    gang = Gang((8 * GPU, 8 * GPU), tier=None)
    assert topology_fragmentation(two_racks(), idle(8, 8, 8), [gang]) == (0.0, 0)


def test_a_hard_gang_allowed_up_to_the_spine_can_use_the_small_rack() -> None:
    gang = Gang((8 * GPU, 8 * GPU), tier=2)
    assert topology_fragmentation(two_racks(), idle(8, 8, 0), [gang]) == (0.0, 0)


def test_one_pending_job_that_fits_a_rack_makes_its_idle_gpus_usable() -> None:
    gangs = [Gang((8 * GPU, 8 * GPU), tier=1), Gang((4 * GPU,), tier=1)]
    assert topology_fragmentation(two_racks(), idle(8, 8, 8), gangs) == (0.0, 0)


def test_idle_gpus_too_few_on_each_node_for_any_pending_pod_are_fragmented() -> None:
    gang = Gang((8 * GPU,), tier=None)
    assert topology_fragmentation(two_racks(), idle(4, 8, 0), [gang]) == (4.0, 1)


def test_nothing_pending_means_nothing_fragmented() -> None:
    assert topology_fragmentation(two_racks(), idle(8, 1, 1), []) == (0.0, 0)


def test_a_gang_larger_than_the_whole_cluster_uses_nothing() -> None:
    gang = Gang((8 * GPU,) * 4, tier=None)
    assert topology_fragmentation(two_racks(), idle(8, 8, 8), [gang]) == (24.0, 2)


@pytest.mark.parametrize(("requests", "free", "fits"), [
    ((6, 6), (8, 8), True),
    ((6, 6), (12,), True),
    ((6, 6), (11,), False),
    ((6, 2, 2), (8, 2), True),
    ((6, 3), (8, 2), False),
])
def test_fit_is_first_fit_decreasing_on_idle_gpus(requests: tuple[int, ...], free: tuple[int, ...],
                                                 fits: bool) -> None:
    assert _fits(tuple(r * GPU for r in requests), np.asarray(free, dtype=np.int64) * GPU) is fits
