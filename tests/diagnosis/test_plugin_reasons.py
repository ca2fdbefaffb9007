"""Pending diagnosis of jobs a plugin's own limit holds back: a ResourceQuota (resourcequota), a
queue's node groups (nodegroup), a PodDisruptionBudget (pdb), a cooldown (cdp). Each has its
reason code, figures and a hint (docs/reasons.md)."""

from __future__ import annotations

from typing import Any

from builders import node, pdb, pod, podgroup, queue, resource_quota, schedule

GROUP = "volcano.sh/nodegroup-name"


def diagnosis(*docs: dict[str, Any], conf: str, job: str = "ns/pg") -> dict[str, Any]:
    out: dict[str, Any] = schedule(*docs, conf=conf)["diagnoses"][job]
    return out


ENQUEUE = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: resourcequota
"""


def test_a_podgroup_the_resource_quota_cannot_hold() -> None:
    d = diagnosis(queue("q"), node("n1"), resource_quota("rq", {"cpu": "4", "pods": "10"}, {"cpu": "3"}),
                  podgroup("pg", phase="Pending", minResources={"cpu": "2", "pods": "1"}), pod("p-0", "pg", cpu="2"),
                  conf=ENQUEUE)
    assert (d["stage"], d["reason"]) == ("enqueue", "Enqueue.ResourceQuotaExceeded")
    assert d["limits"] == [{"plugin": "resourcequota", "object": "ResourceQuota ns/rq", "name": "cpu",
                            "limit": 4.0, "used": 3.0, "requested": 2.0}]
    assert d["message"] == ("resource quota insufficient, requested: map[cpu:2], used: map[cpu:3], "
                            "limited: map[cpu:4]")
    assert d["hint"].startswith("minResources ask 2 cpu but ResourceQuota ns/rq has 1 left of its 4 (3 used)")


ALLOCATE = """
actions: "allocate"
tiers:
- plugins:
  - name: gang
  - name: nodegroup
"""


def grouped(name: str, group: str | None) -> dict[str, Any]:
    return node(name, cpu="4", memory="8Gi", labels={GROUP: group} if group else {})


def ruled(*, limits: str | None = None) -> dict[str, Any]:
    q = queue("q", affinity={"nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["gpu"]}})
    if limits is not None:
        q["metadata"]["annotations"] = {"volcano.sh/nodegroup-resource-limits": limits}
    return q


def test_a_job_whose_queue_admits_none_of_the_node_groups() -> None:
    d = diagnosis(ruled(), grouped("a", "cpu"), grouped("b", "cpu"), grouped("c", None),
                  podgroup("pg"), pod("p-0", "pg"), conf=ALLOCATE)
    assert (d["stage"], d["reason"]) == ("node-fit", "NodeGroup.AffinityUnsatisfied")
    assert d["node_failures"] == {"node does not satisfy the node group affinity": 2,
                                  "node group label not found": 1}
    assert "admits node groups gpu (present among the nodes: none)" in d["hint"]
    assert "the nodes' groups are cpu (2) and 1 node(s) have no volcano.sh/nodegroup-name label" in d["hint"]


def test_a_job_whose_queue_has_no_node_group_rules() -> None:
    d = diagnosis(queue("q"), grouped("a", "cpu"), podgroup("pg"), pod("p-0", "pg"), conf=ALLOCATE)
    assert d["reason"] == "NodeGroup.AffinityUnsatisfied"
    assert d["hint"].startswith("queue q has no node-group rules (spec.affinity)")


def test_a_job_over_its_queues_node_group_limit() -> None:
    running = [podgroup("old", phase="Running"), pod("old-0", "old", cpu="2", node_name="g", phase="Running")]
    d = diagnosis(ruled(limits='{"gpu": {"cpu": "3"}}'), grouped("g", "gpu"), *running, podgroup("pg"),
                  pod("p-0", "pg", cpu="2"), conf=ALLOCATE)
    assert (d["stage"], d["reason"]) == ("node-fit", "NodeGroup.ResourceLimitExceeded")
    assert d["limits"] == [{"plugin": "nodegroup", "object": "Queue q: node group gpu", "name": "cpu",
                            "limit": 3.0, "used": 2.0, "requested": 2.0}]
    assert d["hint"].startswith("queue q may use 3 cpu on node group gpu")


def test_a_job_whose_queue_limit_annotation_is_broken() -> None:
    d = diagnosis(ruled(limits='{"gpu": '), grouped("g", "gpu"), podgroup("pg"), pod("p-0", "pg"), conf=ALLOCATE)
    assert d["reason"] == "NodeGroup.InvalidResourceLimits"
    assert "cannot be read" in d["hint"]


PREEMPT = """
actions: "allocate, preempt"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: {plugin}
- plugins:
  - name: predicates
"""


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value}


def held(victim: dict[str, Any], *extra: dict[str, Any]) -> list[dict[str, Any]]:
    """A low-priority pod fills n1; the high-priority pod of 'pg' needs its room."""
    return [priority_class("low", 10), priority_class("high", 1000), queue("q"), node("n1", cpu="2"), *extra,
            podgroup("low", min_member=0, phase="Running", priorityClassName="low"), victim,
            podgroup("pg", priorityClassName="high"), pod("p-0", "pg", cpu="2")]


def test_a_job_whose_victims_a_disruption_budget_protects() -> None:
    victim = pod("low-0", "low", node_name="n1", phase="Running", cpu="2", labels={"app": "db"})
    d = diagnosis(*held(victim, pdb("db", {"app": "db"}, 0)), conf=PREEMPT.format(plugin="pdb"))
    assert (d["stage"], d["reason"]) == ("preemption", "Preemption.DisruptionBudget")
    assert d["limits"] == [{"plugin": "pdb", "object": "PodDisruptionBudget ns/db", "name": "disruptionsAllowed",
                            "limit": 0.0, "used": None, "requested": 1.0}]
    assert d["hint"].startswith("PodDisruptionBudget ns/db allows 0 disruption(s) but making room would evict 1")
    assert d["preemption"]["could_help"] and d["preemption"]["enabled"]


def test_a_job_whose_victims_are_in_their_cooldown() -> None:
    victim = pod("low-0", "low", node_name="n1", phase="Running", cpu="2",
                 labels={"volcano.sh/cooldown-time": "876000h"})
    victim["status"]["conditions"] = [{"type": "PodScheduled", "status": "True",
                                       "lastTransitionTime": "2025-01-01T00:00:00Z"}]
    d = diagnosis(*held(victim), conf=PREEMPT.format(plugin="cdp"))
    assert (d["stage"], d["reason"]) == ("preemption", "Preemption.CooldownProtected")
    (fig,) = d["limits"]
    assert (fig["object"], fig["name"], fig["limit"], fig["used"]) == ("Pod ns/low-0", "cooldown seconds",
                                                                       876000 * 3600.0, 0.0)
    assert "1 pod(s) holding the room are in their cooldown (volcano.sh/cooldown-time)" in d["hint"]


def test_without_the_plugin_the_same_job_would_be_preempted_for() -> None:
    victim = pod("low-0", "low", node_name="n1", phase="Running", cpu="2", labels={"app": "db"})
    out = schedule(*held(victim, pdb("db", {"app": "db"}, 0)), conf=PREEMPT.format(plugin="conformance"))
    assert out["evictions"] == ["ns/low-0"]
