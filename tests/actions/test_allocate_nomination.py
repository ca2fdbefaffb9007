"""Specification tests for allocate's nomination fast path (upstream allocate.go
``allocateFromNomination``): a sub-job nominated a HyperNode by gangpreempt / gangreclaim is
placed on its pods' nominated nodes before any HyperNode search; any miss clears the
nomination and the pods' nominated nodes, and the normal search follows."""

from __future__ import annotations

from typing import Any

from gang_cluster import HARD_TIER_1, Sessions, racks

from builders import pod, podgroup, queue

CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: gang
- plugins:
  - name: predicates
  - name: network-topology-aware
"""


def cluster(*nominated: str) -> list[dict[str, Any]]:
    """r1 already runs a 1-CPU pod, so the HyperNode bin-packing score prefers it; the hard
    gang h (two 1-CPU pods) is nominated ``nominated`` nodes, in pod order."""
    pods = [pod(f"h-{i}", "h", cpu="1") for i in range(2)]
    for p, name in zip(pods, nominated, strict=False):
        p["status"]["nominatedNodeName"] = name
    return [
        queue("q"), *racks("r1", "r2"),
        podgroup("busy", min_member=1, phase="Running"),
        pod("busy-0", "busy", node_name="r1-n0", phase="Running", cpu="1"),
        podgroup("h", min_member=2, networkTopology=HARD_TIER_1), *pods,
    ]


def nominate(run: Sessions, hypernode: str) -> None:
    run.job("ns/h").topology.default_sub_job.nominated_hypernode = hypernode


def test_without_a_nomination_the_fuller_rack_wins() -> None:
    out = Sessions(cluster(), CONF).run()
    assert len(out.binds) == 2 and {node for _pod, node in out.binds} <= {"r1-n0", "r1-n1"}


def test_a_nominated_sub_job_is_placed_on_its_nominated_nodes() -> None:
    run = Sessions(cluster("r2-n1", "r2-n0"), CONF)
    nominate(run, "r2")
    out = run.run()
    assert sorted(out.binds) == [("ns/h-0", "r2-n1"), ("ns/h-1", "r2-n0")]
    sj = run.job("ns/h").topology.default_sub_job
    assert (sj.nominated_hypernode, sj.allocated_hypernode) == ("", "r2")


def test_a_pod_without_a_nominated_node_voids_the_nomination() -> None:
    run = Sessions(cluster("r2-n1"), CONF)
    nominate(run, "r2")
    out = run.run()
    assert len(out.binds) == 2 and {node for _pod, node in out.binds} <= {"r1-n0", "r1-n1"}
    assert run.job("ns/h").topology.default_sub_job.nominated_hypernode == ""
    assert run.pod("ns/h-0").nominated_node_name == ""


def test_a_nominated_node_outside_the_nominated_hypernode_voids_it() -> None:
    run = Sessions(cluster("r2-n1", "r1-n1"), CONF)
    nominate(run, "r2")
    out = run.run()
    assert len(out.binds) == 2 and {node for _pod, node in out.binds} <= {"r1-n0", "r1-n1"}
    assert run.job("ns/h").topology.default_sub_job.nominated_hypernode == ""


def test_the_nomination_survives_a_podgroup_update() -> None:
    run = Sessions(cluster(), CONF)
    nominate(run, "r2")
    job = run.job("ns/h")
    job.set_podgroup(job.podgroup)
    assert job.topology.default_sub_job.nominated_hypernode == "r2"
