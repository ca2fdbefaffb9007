"""Specification tests for the gangpreempt action (upstream actions/gangpreempt/gangpreempt.go).

A starving job takes room from lower-priority jobs of its own queue, whole victim bundles at a
time, inside one HyperNode domain (the whole cluster for a job without a hard topology); the
job's statement is committed only when the job is JobPipelined, and each placed sub-job is
nominated its HyperNode, which allocate redeems in the next session through its nomination fast
path. Scenarios convert upstream's gangpreempt_test.go (arguments, domains, allowWholeBundle,
PodGroup preemptability) and add the topology cases.
"""

from __future__ import annotations

from typing import Any

import pytest
from gang_cluster import HARD_TIER_1, HIGH, LOW, Sessions, gang, racks, waiting

from builders import node, queue
from pyvolcano.actions import BUILTIN_ACTIONS
from pyvolcano.actions._simulate import pick_domains
from pyvolcano.actions.gangpreempt import GangPreempt
from pyvolcano.api.hypernode_tree import CLUSTER_TOP_HYPERNODE
from pyvolcano.framework.arguments import ArgumentError

CONF = """
actions: "allocate, gangpreempt"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: network-topology-aware
"""


def conf(**arguments: Any) -> str:
    if not arguments:
        return CONF
    lines = "".join(f"    {k}: {str(v).lower() if isinstance(v, bool) else v}\n" for k, v in arguments.items())
    return CONF + f"configurations:\n- name: gangpreempt\n  arguments:\n{lines}"


# --------------------------------------------------------------------------- arguments and domains


def test_gangpreempt_is_a_builtin_action() -> None:
    assert BUILTIN_ACTIONS["gangpreempt"] == "pyvolcano.actions.gangpreempt"


def test_arguments_are_read_from_the_actions_configuration() -> None:
    action = GangPreempt({"maxDomains": 3, "allowWholeBundle": False})
    assert (action.max_domains, action.allow_whole_bundle) == (3, False)
    assert (GangPreempt().max_domains, GangPreempt().allow_whole_bundle) == (8, True)


@pytest.mark.parametrize("value", [0, -1])
def test_a_non_positive_max_domains_falls_back_to_eight(value: int) -> None:
    assert GangPreempt({"maxDomains": value}).max_domains == 8


def test_a_malformed_argument_is_refused_with_its_name() -> None:
    with pytest.raises(ArgumentError, match="maxDomains"):
        GangPreempt({"maxDomains": "many"})


def test_domains_are_flattened_without_repeats_and_capped() -> None:
    assert pick_domains([["d1", "d2"], ["d2", "d3"]], 2, "") == ["d1", "d2"]
    assert pick_domains([["d1", "d2"], ["d2", "d3"]], 3, "") == ["d1", "d2", "d3"]


def test_no_domain_falls_back_to_the_cluster_root() -> None:
    assert pick_domains([], 8, CLUSTER_TOP_HYPERNODE) == [CLUSTER_TOP_HYPERNODE]
    assert pick_domains([], 8, "") == []


# --------------------------------------------------------------------------- victims (upstream's cases)


def one_victim(**victim_podgroup: Any) -> list[dict[str, Any]]:
    """A 1-CPU node held by a one-pod low-priority gang; a one-pod high-priority job waits."""
    return [
        LOW, HIGH, queue("q"), node("n1", cpu="1", memory="4Gi"),
        *gang("victim", ["n1"], cpu="1", **victim_podgroup),
        *waiting("preemptor", 1, cpu="1"),
    ]


def test_a_gang_at_its_minimum_is_evicted_whole_only_when_whole_bundles_are_allowed() -> None:
    allowed = Sessions(one_victim(), conf()).run()
    refused = Sessions(one_victim(), conf(allowWholeBundle=False)).run()
    assert allowed.evictions == ["ns/victim-0"]
    assert allowed.pipelined == {"ns/preemptor-0": "n1"}
    assert allowed.nominated == {"ns/preemptor-0": "n1"}
    assert refused.evictions == [] and refused.pipelined == {}


def test_a_podgroup_that_is_not_preemptable_loses_nothing() -> None:
    docs = one_victim()
    victim_pg = next(d for d in docs if d["kind"] == "PodGroup" and d["metadata"]["name"] == "victim")
    victim_pg["metadata"]["annotations"] = {"volcano.sh/preemptable": "false"}
    assert Sessions(docs, conf()).run().evictions == []


def test_a_podgroup_without_the_preemptable_key_may_lose_its_pods() -> None:
    # The pods carry no preemptable label either: both default to allowed.
    assert Sessions(one_victim(), conf()).run().evictions == ["ns/victim-0"]


def test_equal_priority_and_other_queues_are_never_victims() -> None:
    docs = [
        LOW, HIGH, queue("q"), queue("other"), node("n1", cpu="2", memory="4Gi"),
        *gang("peer", ["n1"], cpu="1", priority_class="high"),
        *gang("foreign", ["n1"], cpu="1", queue="other"),
        *waiting("preemptor", 1, cpu="1"),
    ]
    out = Sessions(docs, conf()).run()
    assert out.evictions == [] and out.pipelined == {}


def test_a_surplus_task_is_taken_before_a_gang_is_broken() -> None:
    # "z-gang" sits at its minimum (whole bundle only); "a-elastic" runs one pod above its
    # minimum (a safe bundle). The victim-job order alone would take z-gang first.
    docs = [
        LOW, HIGH, queue("q"), node("n1", cpu="2", memory="4Gi"), node("n2", cpu="2", memory="4Gi"),
        *gang("z-gang", ["n1", "n1"], cpu="1"),
        *gang("a-elastic", ["n2", "n2"], cpu="1", min_member=1),
        *waiting("preemptor", 1, cpu="1"),
    ]
    out = Sessions(docs, conf()).run()
    assert out.evictions == ["ns/a-elastic-0"]
    assert out.pipelined == {"ns/preemptor-0": "n2"}


def test_nothing_is_evicted_when_the_gang_cannot_be_pipelined() -> None:
    docs = [
        LOW, HIGH, queue("q"), node("n1", cpu="2", memory="4Gi"),
        *gang("victim", ["n1"]),
        *waiting("preemptor", 2),
    ]
    out = Sessions(docs, conf()).run()
    assert out.evictions == [] and out.pipelined == {}


# --------------------------------------------------------------------------- network topology


def rack_cluster(**preemptor: Any) -> list[dict[str, Any]]:
    """Racks r1 and r2 (two 2-CPU nodes each), each full with a low-priority gang of two; a
    high-priority gang of two 2-CPU pods must fit inside one rack."""
    return [
        LOW, HIGH, queue("q"), *racks("r1", "r2"),
        *gang("a", ["r1-n0", "r1-n1"]),
        *gang("b", ["r2-n0", "r2-n1"]),
        *waiting("h", 2, topology=HARD_TIER_1, **preemptor),
    ]


def test_hard_topology_gang_preempts_one_whole_gang_inside_one_rack() -> None:
    run = Sessions(rack_cluster(), conf())
    out = run.run()
    assert out.evictions == ["ns/a-0", "ns/a-1"]
    assert out.pipelined == {"ns/h-0": "r1-n0", "ns/h-1": "r1-n1"} or out.pipelined == {
        "ns/h-0": "r1-n1", "ns/h-1": "r1-n0"}
    assert out.nominated == out.pipelined
    topo = run.job("ns/h").topology
    assert topo.default_sub_job.nominated_hypernode == "r1"


def test_the_next_allocate_places_the_preemptor_through_its_nomination() -> None:
    run = Sessions(rack_cluster(), conf())
    first = run.run()
    second = run.run()
    assert dict(second.binds) == first.pipelined
    sj = run.job("ns/h").topology.default_sub_job
    assert (sj.nominated_hypernode, sj.allocated_hypernode) == ("", "r1")
    assert second.evictions == []


def test_while_victims_terminate_the_preemptor_waits_pipelined_on_its_nominated_nodes() -> None:
    run = Sessions(rack_cluster(), conf(), graceful=True)
    first = run.run()
    waiting_out = run.run()
    assert waiting_out.evictions == [] and waiting_out.binds == []
    assert waiting_out.pipelined == first.pipelined
    assert run.job("ns/h").topology.default_sub_job.nominated_hypernode == "r1"
    run.delete("ns/a-0", "ns/a-1")
    assert dict(run.run().binds) == first.pipelined
    assert run.job("ns/h").topology.default_sub_job.nominated_hypernode == ""


def test_whole_gangs_are_kept_when_whole_bundles_are_not_allowed() -> None:
    out = Sessions(rack_cluster(), conf(allowWholeBundle=False)).run()
    assert out.evictions == [] and out.pipelined == {}


def test_max_domains_caps_the_racks_tried() -> None:
    # r1's gang has the preemptor's priority, so only r2 offers victims; the eviction
    # gradient lists r1 first, and one domain is then not enough.
    docs = [
        LOW, HIGH, queue("q"), *racks("r1", "r2"),
        *gang("a", ["r1-n0", "r1-n1"], priority_class="high"),
        *gang("b", ["r2-n0", "r2-n1"]),
        *waiting("h", 2, topology=HARD_TIER_1),
    ]
    assert Sessions(docs, conf(maxDomains=1)).run().evictions == []
    assert Sessions(docs, conf()).run().evictions == ["ns/b-0", "ns/b-1"]


def test_plain_preempt_leaves_topology_jobs_alone() -> None:
    # The victims have no gang minimum: preempt would take them for a job without a topology.
    def cluster(topology: dict[str, Any] | None) -> list[dict[str, Any]]:
        return [LOW, HIGH, queue("q"), *racks("r1"), *gang("a", ["r1-n0", "r1-n1"], min_member=0),
                *waiting("h", 2, topology=topology)]

    preempt_conf = CONF.replace('"allocate, gangpreempt"', '"allocate, preempt"')
    assert Sessions(cluster(None), preempt_conf).run().evictions == ["ns/a-0", "ns/a-1"]
    out = Sessions(cluster(HARD_TIER_1), preempt_conf).run()
    assert out.evictions == [] and out.pipelined == {}
    soft = Sessions(cluster({"mode": "soft"}), preempt_conf).run()
    assert soft.evictions == []


def test_a_flat_job_is_nominated_the_cluster_root_and_redeems_it() -> None:
    run = Sessions(one_victim(), conf())
    run.run()
    assert run.job("ns/preemptor").nominated_hypernode == CLUSTER_TOP_HYPERNODE
    second = run.run()
    assert second.binds == [("ns/preemptor-0", "n1")]
    assert run.job("ns/preemptor").nominated_hypernode == ""
