"""The job controller's PodGroup carries the Job's network topology, and a ``subGroupPolicy``
entry per task with a ``partitionPolicy`` (upstream's ``createOrUpdatePodGroup``)."""

from __future__ import annotations

from ctrl_harness import Harness, task, vcjob


def test_podgroup_gets_the_jobs_network_topology_and_one_sub_group_policy_per_partitioned_task() -> None:
    h = Harness()
    h.create(vcjob("j", task("t0", 8, partitionPolicy={
        "totalPartitions": 2, "partitionSize": 4, "minPartitions": 1,
        "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
    }), task("ps", 1), minAvailable=4, networkTopology={"mode": "hard", "highestTierAllowed": 2}))
    spec = h.pg_of("j")["spec"]
    assert spec["networkTopology"] == {"mode": "hard", "highestTierAllowed": 2}
    assert spec["subGroupPolicy"] == [{
        "name": "t0",
        "subGroupSize": 4,
        "minSubGroups": 1,
        "labelSelector": {"matchLabels": {"volcano.sh/task-spec": "t0"}},
        "matchLabelKeys": ["volcano.sh/partition-id"],
        "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
    }]
    assert spec["minTaskMember"] == {"t0": 4, "ps": 1}


def test_a_tier_name_is_carried_instead_of_a_tier() -> None:
    h = Harness()
    h.create(vcjob("j", task("t0", 2), minAvailable=2, networkTopology={"mode": "soft", "highestTierName": "spine"}))
    spec = h.pg_of("j")["spec"]
    assert spec["networkTopology"] == {"mode": "soft", "highestTierName": "spine"}
    assert "subGroupPolicy" not in spec


def test_a_job_without_topology_gives_a_podgroup_without_it() -> None:
    h = Harness()
    h.create(vcjob("j", task("t0", 2), minAvailable=2))
    spec = h.pg_of("j")["spec"]
    assert "networkTopology" not in spec and "subGroupPolicy" not in spec
