"""The session's topology view at open: soft constraints turned hard, tier names resolved, and
the allocated HyperNode recovered from where a job's tasks run (upstream framework/session.go)."""

from __future__ import annotations

from typing import Any

from builders import node, pod, podgroup, queue
from pyvolcano.api.sub_job import JobTopology
from pyvolcano.framework.session import Session
from topology_builders import hypernode, open_topology_session, sub_group, topology, two_racks

NODES = [node(n) for n in ("s0-n1", "s0-n2", "s1-n1", "s1-n2")]


def job_topology(*docs: dict[str, Any], hypernodes: list[dict[str, Any]] | None = None) -> JobTopology:
    ssn: Session = open_topology_session(queue("q"), *NODES, *(two_racks() if hypernodes is None else hypernodes),
                                         *docs)
    t = ssn.jobs["ns/pg"].topology
    assert t is not None
    return t


def test_top_tier_is_one_above_the_highest_real_tier() -> None:
    ssn = open_topology_session(queue("q"), *NODES, *two_racks())
    assert ssn.topology.top_tier == 3


def test_without_hypernodes_the_top_tier_is_one() -> None:
    ssn = open_topology_session(queue("q"), *NODES)
    assert ssn.topology.top_tier == 1


def test_soft_job_becomes_hard_with_the_top_tier() -> None:
    t = job_topology(podgroup("pg", networkTopology=topology("soft", 0)), pod("p", "pg"))
    assert t.hard_tier == 3


def test_soft_sub_group_takes_the_jobs_effective_tier() -> None:
    pg = podgroup("pg", networkTopology=topology("hard", 2),
                  subGroupPolicy=[sub_group("w", "role", nt=topology("soft", 0))])
    t = job_topology(pg, pod("p", "pg", labels={"role": "x"}))
    assert t.sub_jobs["ns/pg/w-x"].hard_tier == 2


def test_soft_sub_group_of_a_job_without_topology_takes_the_top_tier() -> None:
    pg = podgroup("pg", subGroupPolicy=[sub_group("w", "role", nt=topology("soft", 0))])
    t = job_topology(pg, pod("p", "pg", labels={"role": "x"}))
    assert t.hard_tier is None
    assert t.sub_jobs["ns/pg/w-x"].hard_tier == 3


def named_racks() -> list[dict[str, Any]]:
    return [hypernode("s0", 1, nodes=("s0-n1", "s0-n2"), tier_name="rack"),
            hypernode("s1", 1, nodes=("s1-n1", "s1-n2"), tier_name="rack"),
            hypernode("s2", 2, children=("s0", "s1"), tier_name="spine")]


def test_highest_tier_name_is_resolved_through_the_hypernodes_tier_names() -> None:
    t = job_topology(podgroup("pg", networkTopology=topology("hard", tier_name="spine")), pod("p", "pg"),
                     hypernodes=named_racks())
    assert t.hard_tier == 2


def test_unknown_tier_name_leaves_the_job_without_a_hard_constraint() -> None:
    t = job_topology(podgroup("pg", networkTopology=topology("hard", tier_name="cluster")), pod("p", "pg"),
                     hypernodes=named_racks())
    assert t.hard_tier is None
    assert not t.contains_hard_topology()


def test_allocated_hypernode_is_recovered_from_running_pods_not_the_annotation() -> None:
    pg = podgroup("pg", networkTopology=topology("hard", 2))
    pg["metadata"]["annotations"] = {"volcano.sh/job-allocated-hypernode": "s1"}
    t = job_topology(pg, pod("a", "pg", node_name="s0-n1", phase="Running"),
                     pod("b", "pg", node_name="s0-n2", phase="Running"), pod("c", "pg"))
    assert t.allocated_hypernode == "s0"


def test_pods_across_racks_recover_their_lowest_common_hypernode() -> None:
    t = job_topology(podgroup("pg", networkTopology=topology("hard", 2)),
                     pod("a", "pg", node_name="s0-n1", phase="Running"),
                     pod("b", "pg", node_name="s1-n1", phase="Running"))
    assert t.allocated_hypernode == "s2"


def test_racks_without_a_common_parent_meet_at_the_virtual_top() -> None:
    racks = two_racks()[:2]
    t = job_topology(podgroup("pg", networkTopology=topology("hard", 2)),
                     pod("a", "pg", node_name="s0-n1", phase="Running"),
                     pod("b", "pg", node_name="s1-n1", phase="Running"), hypernodes=racks)
    assert t.allocated_hypernode == "<cluster-top-hypernode>"


def test_job_allocated_hypernode_is_the_lca_of_its_sub_groups() -> None:
    pg = podgroup("pg", networkTopology=topology("hard", 2),
                  subGroupPolicy=[sub_group("w", "role", nt=topology("hard", 1))])
    t = job_topology(pg, pod("a", "pg", labels={"role": "x"}, node_name="s0-n1", phase="Running"),
                     pod("b", "pg", labels={"role": "y"}, node_name="s1-n2", phase="Running"))
    assert t.sub_jobs["ns/pg/w-x"].allocated_hypernode == "s0"
    assert t.sub_jobs["ns/pg/w-y"].allocated_hypernode == "s1"
    assert t.allocated_hypernode == "s2"


def test_pending_pods_recover_nothing() -> None:
    t = job_topology(podgroup("pg", networkTopology=topology("hard", 2)), pod("a", "pg"))
    assert t.allocated_hypernode == ""
