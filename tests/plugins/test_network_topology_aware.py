"""network-topology-aware: HyperNode gradients and their pre-filter, the HyperNode bin-packing
score and its tie rule, the node-level LCA score, and the fading score of normal pods
(upstream plugins/network-topology-aware)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from builders import node, pod, podgroup, queue
from pyvolcano.api.hypernode_tree import CLUSTER_TOP_HYPERNODE as TOP
from pyvolcano.framework.session import Session
from pyvolcano.framework.topology import PURPOSE_ALLOCATE
from topology_builders import nta, open_topology_session, sub_group, topology, two_racks

NODES = [node(n) for n in ("s0-n1", "s0-n2", "s1-n1", "s1-n2")]  # 4 cpu, 8Gi each; racks of 8 cpu


def session(*docs: dict[str, Any]) -> Session:
    return open_topology_session(queue("q"), *NODES, *two_racks(), *docs)


def job_gradient(ssn: Session, job: str = "ns/pg") -> list[list[str]]:
    return nta(ssn).gradient_for_job(ssn.jobs[job], TOP, PURPOSE_ALLOCATE)


def test_hard_job_gradient_lists_allowed_tiers_lowest_first() -> None:
    ssn = session(podgroup("pg", networkTopology=topology("hard", 2)), pod("p", "pg"))
    assert job_gradient(ssn) == [["s0", "s1"], ["s2"]]


def test_gradient_stops_at_the_highest_tier_allowed() -> None:
    ssn = session(podgroup("pg", networkTopology=topology("hard", 1)), pod("p", "pg"))
    assert job_gradient(ssn) == [["s0", "s1"]]


def test_job_without_hard_constraint_gets_the_given_hypernode_only() -> None:
    ssn = session(podgroup("pg", subGroupPolicy=[sub_group("p", "k")]), pod("p", "pg"))
    assert job_gradient(ssn) == [[TOP]]


def test_pre_filter_drops_hypernodes_whose_idle_cannot_hold_min_resources() -> None:
    ssn = session(podgroup("pg", networkTopology=topology("hard", 2), minResources={"cpu": "10"}), pod("p", "pg"))
    assert job_gradient(ssn) == [["s2"]]


def test_sub_job_pre_filter_uses_the_sum_of_its_pending_requests() -> None:
    pg = podgroup("pg", min_member=1, subGroupPolicy=[sub_group("w", "role", nt=topology("hard", 2))])
    ssn = session(pg, *(pod(f"p{i}", "pg", cpu="3", labels={"role": "w"}) for i in range(3)))
    sj = ssn.jobs["ns/pg"].topology.sub_jobs["ns/pg/w-w"]  # type: ignore[union-attr]
    assert nta(ssn).gradient_for_sub_job(sj, TOP, PURPOSE_ALLOCATE) == [["s2"]]


def test_allocated_hypernode_narrows_the_root_and_skips_the_pre_filter() -> None:
    running = pod("r", "pg", node_name="s0-n1", phase="Running")
    tier1 = session(podgroup("pg", networkTopology=topology("hard", 1), minResources={"cpu": "10"}), running,
                    pod("p", "pg"))
    tier2 = session(podgroup("pg", networkTopology=topology("hard", 2), minResources={"cpu": "10"}), running,
                    pod("p", "pg"))
    assert job_gradient(tier1) == [["s0"]]
    assert job_gradient(tier2) == [["s0", "s1"], ["s2"]]


def test_allocated_hypernode_above_the_allowed_tier_leaves_no_candidate() -> None:
    ssn = session(podgroup("pg", networkTopology=topology("hard", 1)),
                  pod("a", "pg", node_name="s0-n1", phase="Running"),
                  pod("b", "pg", node_name="s1-n1", phase="Running"), pod("p", "pg"))
    assert ssn.jobs["ns/pg"].topology.allocated_hypernode == "s2"  # type: ignore[union-attr]
    assert job_gradient(ssn) == []


def other_job_on(node_name: str) -> list[dict[str, Any]]:
    return [podgroup("other", phase="Running"),
            pod("o", "other", cpu="2", memory="4Gi", node_name=node_name, phase="Running")]


def default_sub_job_scores(ssn: Session, candidates: list[str]) -> dict[str, float]:
    sj = ssn.jobs["ns/pg"].topology.default_sub_job  # type: ignore[union-attr]
    return nta(ssn).hypernode_order(sj, candidates)


def test_hypernode_score_bin_packs_used_plus_all_requests_of_the_sub_job() -> None:
    ssn = session(*other_job_on("s0-n1"), podgroup("pg", min_member=2, networkTopology=topology("hard", 1)),
                  pod("a", "pg", cpu="2", memory="4Gi"), pod("b", "pg", cpu="2", memory="4Gi"))
    # s0: (2 + 4) / 8 cpu and (4 + 8) / 16 Gi -> 0.75; s1: 4 / 8 and 8 / 16 -> 0.5.
    assert default_sub_job_scores(ssn, ["s0", "s1"]) == pytest.approx({"s0": 75.0, "s1": 50.0})


def test_hypernode_score_is_zero_when_the_sub_job_would_overflow() -> None:
    ssn = session(podgroup("pg", min_member=3, networkTopology=topology("hard", 1)),
                  *(pod(f"p{i}", "pg", cpu="4", memory="1Gi") for i in range(3)))
    # 12 cpu overflow a rack (8); s2 holds them: (12 / 16 + 3 / 32) / 2.
    assert default_sub_job_scores(ssn, ["s0", "s1", "s2"]) == pytest.approx(
        {"s0": 0.0, "s1": 0.0, "s2": 100 * (12 / 16 + 3 / 32) / 2})


def test_tied_best_hypernodes_add_the_fraction_of_the_sub_job_already_inside() -> None:
    ssn = session(*other_job_on("s0-n1"), podgroup("pg", min_member=2, networkTopology=topology("hard", 1)),
                  pod("a", "pg", cpu="2", memory="4Gi", node_name="s1-n1", phase="Running"),
                  pod("b", "pg", cpu="2", memory="4Gi"))
    # Both racks use 2 cpu / 4Gi: 0.75 each; s1 holds one of the job's two tasks.
    assert default_sub_job_scores(ssn, ["s0", "s1"]) == pytest.approx({"s0": 75.0, "s1": 125.0})


def node_scores(ssn: Session, task_name: str) -> dict[str, float]:
    job = next(j for j in ssn.jobs.values() if any(t.name == task_name for t in j.tasks.values()))
    task = next(t for t in job.tasks.values() if t.name == task_name)
    idx = np.arange(len(ssn.node_list))
    scores = nta(ssn).batch_node_order(task, idx)
    return {ssn.node_list[i].name: float(s) for i, s in zip(idx, scores, strict=True)}


def test_node_score_follows_the_tier_of_the_lca_with_the_allocated_hypernode() -> None:
    ssn = session(podgroup("pg", networkTopology=topology("hard", 2)), pod("p", "pg"))
    task = next(iter(ssn.jobs["ns/pg"].tasks.values()))
    ssn.topology.task_hypernode[task.uid] = "s0"
    # Same HyperNode: 1; LCA s2 at tier 2 of tiers 1..3 (the virtual top): (3 - 2) / (3 - 1).
    assert node_scores(ssn, "p") == pytest.approx({"s0-n1": 100.0, "s0-n2": 100.0, "s1-n1": 50.0, "s1-n2": 50.0})


def test_node_score_is_zero_before_anything_is_allocated() -> None:
    ssn = session(podgroup("pg", networkTopology=topology("hard", 2)), pod("p", "pg"))
    assert set(node_scores(ssn, "p").values()) == {0.0}


def test_normal_pods_score_the_fading_mean_of_the_hypernodes_holding_the_node() -> None:
    ssn = session(*other_job_on("s0-n1"), podgroup("pg"), pod("p", "pg", cpu="2", memory="4Gi"))
    # Tiers 1, 2, 3 weigh 1, 0.8, 0.64. s0's nodes: s0 0.5, s2 0.25, top 0.25; s1's: 0.25 everywhere.
    s0 = (0.5 + 0.8 * 0.25 + 0.64 * 0.25) / 2.44
    assert node_scores(ssn, "p") == pytest.approx({"s0-n1": 100 * s0, "s0-n2": 100 * s0,
                                                   "s1-n1": 25.0, "s1-n2": 25.0})


def test_normal_pod_score_can_be_disabled() -> None:
    conf = """
actions: allocate
tiers:
- plugins:
  - name: network-topology-aware
    arguments:
      hypernode.binpack.normal-pod.enable: false
"""
    ssn = open_topology_session(queue("q"), *NODES, *two_racks(), *other_job_on("s0-n1"), podgroup("pg"),
                                pod("p", "pg", cpu="2", memory="4Gi"), conf=conf)
    assert set(node_scores(ssn, "p").values()) == {0.0}
