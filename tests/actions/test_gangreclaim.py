"""Specification tests for the gangreclaim action (upstream actions/gangreclaim/gangreclaim.go).

A starving job takes room from jobs of *other* queues that allow reclaim, whole victim bundles
at a time, inside one HyperNode domain; capacity's UnifiedEvictable keeps a queue at its
guarantee. Scenarios convert upstream's gangreclaim_test.go (arguments, cross-queue and
reclaimable victims) and add the topology and capacity cases.
"""

from __future__ import annotations

from typing import Any

import pytest
from gang_cluster import HARD_TIER_1, Sessions, gang, racks, waiting

from builders import node, queue
from pyvolcano.actions import BUILTIN_ACTIONS
from pyvolcano.actions.gangreclaim import GangReclaim

CONF = """
actions: "allocate, gangreclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: network-topology-aware
"""

# UnifiedEvictable is decided by the first tier that yields victims, so capacity must share the
# first tier to filter them.
CAPACITY_CONF = CONF.replace("  - name: conformance\n", "  - name: conformance\n  - name: capacity\n")


def test_gangreclaim_is_a_builtin_action() -> None:
    assert BUILTIN_ACTIONS["gangreclaim"] == "pyvolcano.actions.gangreclaim"


def test_arguments_are_read_from_the_actions_configuration() -> None:
    action = GangReclaim({"maxDomains": 5, "allowWholeBundle": False})
    assert (action.max_domains, action.allow_whole_bundle) == (5, False)


@pytest.mark.parametrize("value", [0, -1])
def test_a_non_positive_max_domains_falls_back_to_eight(value: int) -> None:
    assert GangReclaim({"maxDomains": value}).max_domains == 8


def test_only_reclaimable_queues_other_than_the_reclaimers_lose_pods() -> None:
    docs = [
        queue("q1"), queue("q2"), queue("q3", reclaimable=False), node("n1", cpu="3", memory="8Gi"),
        *gang("same", ["n1"], queue="q1", cpu="1"),
        *gang("victim", ["n1"], queue="q2", cpu="1"),
        *gang("other", ["n1"], queue="q3", cpu="1"),
        *waiting("reclaimer", 1, queue="q1", cpu="1", priority_class=""),
    ]
    out = Sessions(docs, CONF).run()
    assert out.evictions == ["ns/victim-0"]
    assert out.pipelined == {"ns/reclaimer-0": "n1"}


def rack_cluster() -> list[dict[str, Any]]:
    return [
        queue("q1"), queue("q2"), *racks("r1", "r2"),
        *gang("a", ["r1-n0", "r1-n1"], queue="q1"),
        *gang("b", ["r2-n0", "r2-n1"], queue="q1"),
        *waiting("h", 2, queue="q2", topology=HARD_TIER_1, priority_class=""),
    ]


def test_hard_topology_gang_reclaims_one_whole_gang_inside_one_rack() -> None:
    run = Sessions(rack_cluster(), CONF)
    out = run.run()
    assert out.evictions == ["ns/a-0", "ns/a-1"]
    assert set(out.pipelined.values()) == {"r1-n0", "r1-n1"}
    assert run.job("ns/h").topology.default_sub_job.nominated_hypernode == "r1"
    second = run.run()
    assert dict(second.binds) == out.pipelined


def test_whole_gangs_of_other_queues_are_kept_when_whole_bundles_are_not_allowed() -> None:
    conf = CONF + "configurations:\n- name: gangreclaim\n  arguments:\n    allowWholeBundle: false\n"
    out = Sessions(rack_cluster(), conf).run()
    assert out.evictions == [] and out.pipelined == {}


def capacity_cluster(**victim_queue: Any) -> list[dict[str, Any]]:
    # q3 (not reclaimable) fills n2, so the reclaimer needs q2's pod on n1.
    return [
        queue("q1", deserved={"cpu": "1", "memory": "1Gi"}), queue("q2", **victim_queue),
        queue("q3", reclaimable=False),
        node("n1", cpu="1", memory="8Gi"), node("n2", cpu="1", memory="8Gi"),
        *gang("victim", ["n1"], queue="q2", cpu="1"),
        *gang("keeper", ["n2"], queue="q3", cpu="1"),
        *waiting("reclaimer", 1, queue="q1", cpu="1", priority_class=""),
    ]


def test_capacity_lets_a_queue_without_deserved_lose_its_pods() -> None:
    assert Sessions(capacity_cluster(), CAPACITY_CONF).run().evictions == ["ns/victim-0"]


def test_capacity_keeps_a_queue_at_its_guarantee() -> None:
    out = Sessions(capacity_cluster(guarantee={"resource": {"cpu": "1"}}), CAPACITY_CONF).run()
    assert out.evictions == [] and out.pipelined == {}
