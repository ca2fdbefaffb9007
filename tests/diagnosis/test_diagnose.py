"""Pending diagnosis: one small case per stage and reason code (docs/reasons.md)."""

from __future__ import annotations

from typing import Any

import numpy as np

from builders import cache_of, node, pod, podgroup, queue, schedule
from pyvolcano.cache.cache import SchedulerCache, SchedulerOptions
from pyvolcano.conf import default_configuration, load_scheduler_conf
from pyvolcano.diagnosis import STAGE_OF, Reason, Stage
from pyvolcano.runtime.cycle import run_once
from pyvolcano.runtime.registry import default_registry

ALLOC = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""

CAPACITY = ALLOC.replace("name: proportion", "name: capacity")
PREEMPT = ALLOC.replace('"enqueue, allocate"', '"enqueue, allocate, preempt"')


def gpu_node(name: str, gpus: str, cpu: str = "16") -> dict[str, Any]:
    return node(name, cpu=cpu, memory="64Gi", nvidia_com__gpu=gpus)


def gpu_pod(name: str, group: str, gpus: str, **kw: Any) -> dict[str, Any]:
    d = pod(name, group, **kw)
    d["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = gpus
    return d


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value}


def diagnoses(*docs: dict[str, Any], conf: str | None = ALLOC, sessions: int = 1) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = schedule(*docs, conf=conf, sessions=sessions)["diagnoses"]
    return out


def figure(diag: dict[str, Any], name: str) -> dict[str, Any]:
    return next(r for r in diag["resources"] if r["name"] == name)


# --------------------------------------------------------------------------- node fit


def test_gang_short_on_one_resource_on_every_node_although_the_cluster_total_is_enough() -> None:
    d = diagnoses(queue("q"), gpu_node("n1", "2"), gpu_node("n2", "2"), gpu_node("n3", "2"),
                  podgroup("pg", min_member=2), gpu_pod("p-0", "pg", "3"), gpu_pod("p-1", "pg", "3"))["ns/pg"]
    assert d["stage"] == "node-fit"
    assert d["reason"] == "NodeFit.InsufficientResource"
    assert d["node_failures"] == {"Insufficient nvidia.com/gpu": 3}
    gpu = figure(d, "nvidia.com/gpu")
    assert gpu["free_in_cluster"] == 6.0
    assert gpu["free_on_best_node"] == 2.0
    assert gpu["requested"] == 6.0  # the two pods the gang still needs
    assert gpu["shortfall"] == 4.0  # on one node: room for both pods
    assert d["hint"] == ("needs 3 nvidia.com/gpu on one node; the largest free block is 2 on n1 (2 such pods "
                         "needed); the cluster has 6 nvidia.com/gpu free in all, but not on one node")
    assert d["preemption"]["could_help"] is False


def test_single_pod_shortfall_is_what_the_best_node_lacks() -> None:
    d = diagnoses(queue("q"), gpu_node("n1", "4"), gpu_node("n2", "6"),
                  podgroup("pg"), gpu_pod("p-0", "pg", "8"))["ns/pg"]
    gpu = figure(d, "nvidia.com/gpu")
    assert (gpu["best_node"], gpu["free_on_best_node"], gpu["shortfall"]) == ("n2", 6.0, 2.0)
    assert d["scope"] == "task"
    assert d["hint"].startswith("needs 8 nvidia.com/gpu on one node; the largest free block is 6 on n2")


def test_predicate_failure_names_the_most_common_predicate() -> None:
    d = diagnoses(queue("q"), node("n1", labels={"zone": "a"}), node("n2", labels={"zone": "a"}),
                  podgroup("pg"), pod("p-0", "pg", nodeSelector={"zone": "b"}))["ns/pg"]
    assert d["reason"] == "NodeFit.PredicateFailed"
    assert d["node_failures"] == {"node(s) didn't match Pod's node affinity/selector": 2}
    assert "no node passes the predicates of p-0" in d["hint"]
    assert d["resources"] == []


# --------------------------------------------------------------------------- queue


def test_queue_over_capability_on_one_dimension_at_enqueue() -> None:
    d = diagnoses(queue("q", capability={"nvidia.com/gpu": "2"}), gpu_node("n1", "8"),
                  podgroup("pg", phase="Pending", minResources={"cpu": "1", "nvidia.com/gpu": "4"}),
                  gpu_pod("p-0", "pg", "4"))["ns/pg"]
    assert d["stage"] == "queue-capability"
    assert d["reason"] == "Queue.OverCapability"
    assert d["scope"] == "minResources"
    gpu = figure(d, "nvidia.com/gpu")
    assert (gpu["requested"], gpu["free_in_queue"], gpu["shortfall"]) == (4.0, 2.0, 2.0)
    assert figure(d, "cpu")["shortfall"] == 0.0
    assert "raise the queue's capability on nvidia.com/gpu" in d["hint"]


def test_queue_over_capability_at_allocate_with_the_capacity_plugin() -> None:
    d = diagnoses(queue("q", capability={"cpu": "2", "memory": "64Gi"}), node("n1", cpu="8"),
                  podgroup("pg", min_member=3), pod("p-0", "pg"), pod("p-1", "pg"), pod("p-2", "pg"),
                  conf=CAPACITY)["ns/pg"]
    assert d["reason"] == "Queue.OverCapability"
    assert d["scope"] == "gang"
    cpu = figure(d, "cpu")
    assert (cpu["requested"], cpu["free_in_queue"], cpu["shortfall"]) == (3.0, 2.0, 1.0)


def test_queue_over_its_deserved_share() -> None:
    # 1 CPU split between two equal-weight queues: each deserves 500m, so neither 1-CPU pod fits.
    out = diagnoses(queue("a"), queue("b"), node("n1", cpu="1"),
                    podgroup("a", queue="a"), podgroup("b", queue="b"), pod("a-0", "a"), pod("b-0", "b"))
    for key in ("ns/a", "ns/b"):
        assert out[key]["stage"] == "queue-deserved"
        assert out[key]["reason"] == "Queue.OverDeserved"
        assert figure(out[key], "cpu")["free_in_queue"] == 0.5


def test_a_deserved_share_capped_by_the_queue_capability_names_the_capability() -> None:
    # Alone on an 8-CPU node the queue would deserve its whole 2-CPU request, but proportion caps
    # the share at the 1-CPU capability: a larger weight cannot help, a larger capability can.
    d = diagnoses(queue("q", capability={"cpu": "1"}), node("n1", cpu="8"),
                  podgroup("pg"), pod("p-0", "pg", cpu="2"))["ns/pg"]
    assert (d["stage"], d["reason"]) == ("queue-capability", "Queue.OverCapability")
    assert d["message"] == "queue q would exceed its capability on cpu"
    cpu = figure(d, "cpu")
    assert (cpu["requested"], cpu["free_in_queue"], cpu["shortfall"]) == (2.0, 1.0, 1.0)
    assert "within its capability of 1 cpu, which caps its deserved share; raise its capability on cpu" in d["hint"]
    assert "weight" not in d["hint"]


def test_a_share_below_the_capability_is_still_over_deserved() -> None:
    out = diagnoses(queue("a", capability={"cpu": "4"}), queue("b"), node("n1", cpu="1"),
                    podgroup("a", queue="a"), podgroup("b", queue="b"), pod("a-0", "a"), pod("b-0", "b"))
    assert out["ns/a"]["reason"] == "Queue.OverDeserved"
    assert "raise its weight" in out["ns/a"]["hint"]


def test_a_request_larger_than_the_whole_cluster_says_so() -> None:
    d = diagnoses(queue("q"), node("n1", cpu="1"), podgroup("pg"), pod("p-0", "pg", cpu="2"))["ns/pg"]
    assert d["reason"] == "Queue.OverDeserved"
    assert "the whole cluster has 1 cpu, so no share of it can hold them" in d["hint"]


def test_closed_queue() -> None:
    q = queue("q")
    q["status"]["state"] = "Closed"
    d = diagnoses(q, node("n1"), podgroup("pg", phase="Pending"), pod("p-0", "pg"))["ns/pg"]
    assert (d["stage"], d["reason"]) == ("queue-state", "Queue.Closed")


# --------------------------------------------------------------------------- enqueue, gang, gates


def test_enqueue_rejected_by_overcommit_on_a_full_cluster() -> None:
    # proportion admits (2 ≤ the queue's 4 CPU), overcommit does not (idle 0 × 1.2 < 2).
    busy = pod("other", "", node_name="n1", phase="Running", cpu="4")
    busy["metadata"]["annotations"] = {}
    d = diagnoses(queue("q"), node("n1", cpu="4"), busy,
                  podgroup("pg", phase="Pending", minResources={"cpu": "2"}), pod("p-0", "pg", cpu="2"),
                  conf=None)["ns/pg"]
    assert (d["stage"], d["reason"]) == ("enqueue", "Enqueue.Rejected")
    assert "overcommit" in d["hint"]


def test_gang_without_enough_pods_for_min_available() -> None:
    d = diagnoses(queue("q"), node("n1"), podgroup("pg", min_member=3), pod("p-0", "pg"), pod("p-1", "pg"))["ns/pg"]
    assert (d["stage"], d["reason"]) == ("gang", "Gang.MinAvailableNotMet")
    assert "2 valid pod(s) for minAvailable 3" in d["hint"]


def test_job_blocked_only_by_a_scheduling_gate() -> None:
    d = diagnoses(queue("q"), node("n1"), podgroup("pg", min_member=2), pod("p-0", "pg"),
                  pod("p-1", "pg", schedulingGates=[{"name": "example.com/quota"}]))["ns/pg"]
    assert (d["stage"], d["reason"]) == ("scheduling-gate", "SchedulingGated")
    assert d["tasks"]["gated"] == 1
    assert d["hint"] == "remove the scheduling gates example.com/quota from 1 pod(s)"


def test_job_the_session_never_tried() -> None:
    d = diagnoses(queue("q"), node("n1"), podgroup("pg"), pod("p-0", "pg"),
                  conf=ALLOC.replace('"enqueue, allocate"', '"enqueue"'))["ns/pg"]
    assert (d["stage"], d["reason"]) == ("session", "Session.NotAttempted")
    assert d["hint"] == "add allocate to the scheduler's actions"


# --------------------------------------------------------------------------- preemption


def _priority_inversion(victim_labels: dict[str, str]) -> list[dict[str, Any]]:
    return [
        priority_class("low", 10), priority_class("high", 1000), queue("q"), node("n1", cpu="2"),
        podgroup("low", min_member=0, phase="Running", priorityClassName="low"),
        pod("low-0", "low", node_name="n1", phase="Running", cpu="2", labels=victim_labels),
        podgroup("high", priorityClassName="high"), pod("high-0", "high", cpu="2"),
    ]


def test_preemption_that_could_help_but_the_preempt_action_is_absent() -> None:
    d = diagnoses(*_priority_inversion({}))["ns/high"]
    assert (d["stage"], d["reason"]) == ("preemption", "Preemption.NotAllowed")
    pre = d["preemption"]
    assert pre == {"could_help": True, "action": "preempt", "enabled": False,
                   "why_not": "neither the preempt nor the gangpreempt action is configured "
                              "(actions: enqueue, allocate)",
                   "victims": ["ns/low-0"]}
    assert d["hint"].startswith("neither the preempt nor the gangpreempt action is configured")


def test_preemption_that_policy_forbids_because_victims_are_not_preemptable() -> None:
    d = diagnoses(*_priority_inversion({"volcano.sh/preemptable": "false"}), conf=PREEMPT)["ns/high"]
    assert d["reason"] == "Preemption.NotAllowed"
    assert d["preemption"]["enabled"] is True
    assert d["preemption"]["why_not"] == \
        "the candidate victims are not preemptable (volcano.sh/preemptable: false)"


def test_preemptor_pipelined_onto_an_evicted_pod_waits_for_release() -> None:
    d = diagnoses(*_priority_inversion({}), conf=PREEMPT)["ns/high"]
    assert (d["stage"], d["reason"]) == ("preemption", "Preemption.WaitingForRelease")
    assert "n1" in d["hint"]


# --------------------------------------------------------------------------- condition and contract


def _cache_and_run(*docs: dict[str, Any], options: SchedulerOptions | None = None
                   ) -> tuple[SchedulerCache, Any]:
    cache = cache_of(*docs)
    if options is not None:
        cache.options = options
    config = load_scheduler_conf(ALLOC)
    reg = default_registry()
    plugins, actions = reg.plugin_factories(config.plugin_names()), reg.action_factories(config.actions)
    rng = np.random.default_rng(0)

    def run(now: float) -> Any:
        return run_once(cache, config, plugins, actions, now=now, rng=rng)

    return cache, run


def test_condition_carries_the_reason_code_and_the_hint_after_upstreams_message() -> None:
    cache, run = _cache_and_run(queue("q"), node("n1", cpu="1"), node("n2", cpu="1"), podgroup("pg"),
                                pod("p-0", "pg", cpu="2"))
    res = run(0.0)
    cond = next(c for c in next(iter(cache.podgroups())).conditions if c.type == "Unschedulable")
    assert cond.reason == "NodeFit.InsufficientResource"
    assert cond.message.startswith("1/1 tasks in gang unschedulable: pod group is not ready")
    assert cond.message.endswith(" Hint: " + res.diagnoses["ns/pg"].hint)
    assert [pg.name for pg in res.changed_podgroups] == ["pg"]


def test_condition_is_written_only_when_it_changes() -> None:
    _cache, run = _cache_and_run(queue("q"), node("n1", cpu="1"), node("n2", cpu="1"), podgroup("pg"),
                                pod("p-0", "pg", cpu="2"))
    run(0.0)
    second = run(1.0)
    assert second.changed_podgroups == []
    assert second.diagnoses["ns/pg"].reason == Reason.NODE_FIT_INSUFFICIENT_RESOURCE


def test_diagnosis_off_keeps_upstreams_reason() -> None:
    cache, run = _cache_and_run(queue("q"), node("n1", cpu="1"), node("n2", cpu="1"), podgroup("pg"),
                                pod("p-0", "pg", cpu="2"),
                                options=SchedulerOptions(diagnose=False))
    res = run(0.0)
    cond = next(c for c in next(iter(cache.podgroups())).conditions if c.type == "Unschedulable")
    assert cond.reason == "NotEnoughResources"
    assert "Hint:" not in cond.message
    assert res.diagnoses == {}


def test_jobs_that_got_everything_have_no_diagnosis() -> None:
    out = diagnoses(queue("q"), node("n1"), podgroup("pg"), pod("p-0", "pg"))
    assert out == {}


def test_same_input_gives_the_same_diagnoses() -> None:
    docs = [queue("q"), gpu_node("n1", "2"), gpu_node("n2", "2"), podgroup("pg", min_member=2),
            gpu_pod("p-0", "pg", "3"), gpu_pod("p-1", "pg", "3")]
    first = diagnoses(*docs, conf=None)
    assert first == diagnoses(*docs, conf=None)
    assert first["ns/pg"]["session"] == "session-1"


def test_every_reason_has_one_stage_and_a_documented_entry() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "reasons.md").read_text()
    assert set(STAGE_OF) == set(Reason)
    for reason in Reason:
        assert f"`{reason}`" in doc
    for stage in Stage:
        assert f"`{stage}`" in doc
    assert default_configuration().actions  # the default configuration the doc's examples use


def test_amounts_are_written_as_people_write_them() -> None:
    from pyvolcano.diagnosis.diagnose import format_amount

    assert format_amount("cpu", 2500.0) == "2500m"
    assert format_amount("memory", 8 * 2**30) == "8Gi"
    assert format_amount("nvidia.com/gpu", 8000.0) == "8"
    assert format_amount("ephemeral-storage", 10 * 2**30 * 1000.0) == "10Gi"
    assert format_amount("pods", 3.0) == "3"
