"""Specification tests for the preempt action (upstream actions/preempt/preempt.go).

Scenarios follow upstream's preempt_test.go: preemption between jobs of one queue by job
priority, within a job by task priority, gang protection of minAvailable, rollback of
evictions on nodes where the preemptor still does not fit, ``preemptionPolicy: Never``, and
the topology-aware mode's reprieve and candidate choice. A hypothesis property checks that
preemption and reclaim never overcommit a node.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import dump, node, pod, podgroup, queue
from pyvolcano.actions import BUILTIN_ACTIONS, preempt
from pyvolcano.api.manifest import load_manifest_text
from pyvolcano.api.resource import MIN_RESOURCE
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.framework.arguments import ArgumentError
from pyvolcano.framework.session import Session
from pyvolcano.plugins import BUILTIN_PLUGINS
from pyvolcano.runtime.cycle import schedule_objects
from pyvolcano.runtime.registry import Registry, default_registry


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value}


LOW = priority_class("low", 10)
HIGH = priority_class("high", 1000)
PREEMPTABLE = {"volcano.sh/preemptable": "true"}

PREEMPT_CONF = """
actions: "preempt"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: proportion
"""


def conf_with(arguments: str = "", *, gang_preemptable: bool = True, gang_starving: bool = True) -> str:
    text = PREEMPT_CONF
    if not gang_preemptable or not gang_starving:
        text = text.replace(
            "  - name: gang\n",
            "  - name: gang\n"
            f"    enablePreemptable: {str(gang_preemptable).lower()}\n"
            f"    enableJobStarving: {str(gang_starving).lower()}\n",
        )
    if arguments:
        text += f"configurations:\n- name: preempt\n  arguments:\n{arguments}"
    return text


TOPOLOGY_AWARE = "    enableTopologyAwarePreemption: true\n"


def run(*docs: dict[str, Any], conf: str = PREEMPT_CONF, seed: int = 0) -> dict[str, Any]:
    cache = SchedulerCache.from_objects(load_manifest_text(dump(*docs), "test.yaml"))
    return schedule_objects(cache, load_scheduler_conf(conf), default_registry(), sessions=1, seed=seed)


def running(name: str, group: str, node_name: str, cpu: str = "1", **kw: Any) -> dict[str, Any]:
    return pod(name, group, node_name=node_name, phase="Running", cpu=cpu, memory="1Gi", labels=PREEMPTABLE,
               **kw)


def pending(name: str, group: str, cpu: str = "1", **kw: Any) -> dict[str, Any]:
    return pod(name, group, cpu=cpu, memory="1Gi", **kw)


# --------------------------------------------------------------------------- between jobs


def test_preempt_evicts_lower_priority_job_of_same_queue_and_pipelines_preemptor() -> None:
    out = run(
        LOW, HIGH, queue("q"), node("n1", cpu="2", memory="4Gi"),
        podgroup("low", min_member=1, phase="Running", priorityClassName="low"),
        podgroup("high", min_member=1, priorityClassName="high"),
        running("low-0", "low", "n1"), running("low-1", "low", "n1"),
        pending("high-0", "high"),
    )
    # Gang lets one task go (2 ready > minMember 1); priority allows both; intersection
    # keeps the first candidate in UID order.
    assert out["evictions"] == ["ns/low-0"]
    assert out["pipelined"] == {"ns/high-0": "n1"}
    assert out["binds"] == {}


def test_preempt_never_evicts_when_preemptor_fits_idle_resources() -> None:
    out = run(
        LOW, HIGH, queue("q"), node("n1", cpu="3", memory="4Gi"),
        podgroup("low", min_member=1, phase="Running", priorityClassName="low"),
        podgroup("high", min_member=1, priorityClassName="high"),
        running("low-0", "low", "n1"), running("low-1", "low", "n1"),
        pending("high-0", "high"),
    )
    assert out["evictions"] == []
    assert out["pipelined"] == {"ns/high-0": "n1"}


def test_preempt_does_not_touch_equal_or_higher_priority_jobs() -> None:
    out = run(
        LOW, HIGH, queue("q"), node("n1", cpu="2", memory="4Gi"),
        podgroup("a", min_member=1, phase="Running", priorityClassName="high"),
        podgroup("b", min_member=1, priorityClassName="high"),
        running("a-0", "a", "n1"), running("a-1", "a", "n1"),
        pending("b-0", "b"),
    )
    assert out["evictions"] == []
    assert out["pipelined"] == {}


def test_preempt_only_takes_preemptable_victims_from_the_preemptors_queue() -> None:
    out = run(
        LOW, HIGH, queue("q"), queue("other"), node("n1", cpu="3", memory="4Gi"),
        podgroup("low", min_member=0, phase="Running", priorityClassName="low"),
        podgroup("foreign", queue="other", min_member=0, phase="Running", priorityClassName="low"),
        podgroup("high", min_member=1, priorityClassName="high"),
        pod("low-0", "low", node_name="n1", phase="Running", cpu="1", memory="1Gi"),  # not preemptable
        running("foreign-0", "foreign", "n1"),
        running("low-1", "low", "n1"),
        pending("high-0", "high"),
    )
    assert out["evictions"] == ["ns/low-1"]


def test_gang_protects_victim_job_at_min_available() -> None:
    docs = [
        LOW, HIGH, queue("q"), node("n1", cpu="2", memory="4Gi"),
        running("low-0", "low", "n1"), running("low-1", "low", "n1"),
        podgroup("high", min_member=1, priorityClassName="high"), pending("high-0", "high"),
    ]
    at_min = run(*docs, podgroup("low", min_member=2, phase="Running", priorityClassName="low"))
    above_min = run(*docs, podgroup("low", min_member=1, phase="Running", priorityClassName="low"))
    assert at_min["evictions"] == []
    assert len(above_min["evictions"]) == 1


def test_evictions_commit_only_when_preemptor_job_becomes_pipelined() -> None:
    # The gang needs two pods; only one can be placed by preemption, so nothing is evicted.
    out = run(
        LOW, HIGH, queue("q"), node("n1", cpu="2", memory="4Gi"),
        podgroup("low", min_member=0, phase="Running", priorityClassName="low"),
        podgroup("high", min_member=2, priorityClassName="high"),
        running("low-0", "low", "n1", cpu="2"),
        pending("high-0", "high", cpu="2"), pending("high-1", "high", cpu="2"),
    )
    assert out["evictions"] == []
    assert out["pipelined"] == {}


def test_evictions_roll_back_on_node_where_preemptor_still_does_not_fit() -> None:
    # Upstream "only commit evictions on the node where preemption succeeds": evicting the
    # 1-CPU victim on n1 leaves the queue over its 6-CPU capability, so n1's eviction is
    # undone and n2's 4-CPU victim makes room instead.
    out = run(
        LOW, HIGH, queue("q", capability={"cpu": "6", "memory": "6Gi"}),
        node("n1", cpu="3", memory="3Gi"), node("n2", cpu="4", memory="4Gi"),
        podgroup("pg1", min_member=0, phase="Running", priorityClassName="low"),
        podgroup("pg3", min_member=0, phase="Running", priorityClassName="low"),
        podgroup("pg2", min_member=1, priorityClassName="high"),
        running("preemptee1", "pg1", "n1"), running("preemptee2", "pg3", "n2", cpu="4"),
        pending("preemptor1", "pg2", cpu="3"),
    )
    assert out["evictions"] == ["ns/preemptee2"]
    assert out["pipelined"] == {"ns/preemptor1": "n2"}


def test_no_eviction_when_queue_capability_forbids_the_preemptor_anywhere() -> None:
    out = run(
        LOW, HIGH, queue("q", capability={"cpu": "3", "memory": "3Gi"}), node("n1", cpu="10", memory="10Gi"),
        podgroup("pg1", min_member=1, phase="Running", priorityClassName="low"),
        podgroup("pg2", min_member=1, priorityClassName="high"),
        running("preemptee-1", "pg1", "n1"), running("preemptee-2", "pg1", "n1"),
        pending("preemptor-1", "pg2", cpu="4"),
    )
    assert out["evictions"] == []


def test_preemption_policy_never_keeps_victims_running() -> None:
    docs = [
        LOW, HIGH, queue("q"), node("n1", cpu="1", memory="1Gi"),
        podgroup("low", min_member=0, phase="Running", priorityClassName="low"),
        podgroup("high", min_member=1, priorityClassName="high"),
        running("low-0", "low", "n1"),
    ]
    never = run(*docs, pending("high-0", "high", preemptionPolicy="Never"))
    lower = run(*docs, pending("high-0", "high", preemptionPolicy="PreemptLowerPriority"))
    assert never["evictions"] == []
    assert lower["evictions"] == ["ns/low-0"]


def test_preemptor_nominated_to_a_node_that_passes_predicates_does_not_preempt_again() -> None:
    docs = [
        LOW, HIGH, queue("q"), node("n1", cpu="1", memory="1Gi"),
        podgroup("low", min_member=0, phase="Running", priorityClassName="low"),
        podgroup("high", min_member=1, priorityClassName="high"),
        running("low-0", "low", "n1"),
    ]
    preemptor = pending("high-0", "high")
    preemptor["status"]["nominatedNodeName"] = "n1"
    assert run(*docs, preemptor)["evictions"] == []


PREEMPT_WITH_PREDICATES_CONF = PREEMPT_CONF + "  - name: predicates\n"


def test_preemptor_whose_nominated_node_is_unresolvable_preempts_elsewhere() -> None:
    preemptor = pending("high-0", "high", nodeSelector={"zone": "b"})
    preemptor["status"]["nominatedNodeName"] = "n1"
    out = run(
        LOW, HIGH, queue("q"),
        node("n1", cpu="1", memory="1Gi", labels={"zone": "a"}),
        node("n2", cpu="1", memory="1Gi", labels={"zone": "b"}),
        podgroup("low", min_member=0, phase="Running", priorityClassName="low"),
        podgroup("high", min_member=1, priorityClassName="high"),
        running("low-0", "low", "n1"), running("low-1", "low", "n2"),
        preemptor,
        conf=PREEMPT_WITH_PREDICATES_CONF,
    )
    assert out["evictions"] == ["ns/low-1"]
    assert out["pipelined"] == {"ns/high-0": "n2"}


def waiting_for_earlier_preemption(reason: str) -> dict[str, Any]:
    # n1 is full by pod count; one of its pods is still terminating.
    terminating = running("low-1", "low", "n1", priority=10)
    terminating["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    terminating["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True", "reason": reason}]
    preemptor = pending("high-0", "high", priority=1000)
    preemptor["status"]["nominatedNodeName"] = "n1"
    return run(
        LOW, HIGH, queue("q"), node("n1", cpu="4", memory="4Gi", pods="2"), node("n2", cpu="1", memory="1Gi"),
        podgroup("low", min_member=0, phase="Running", priorityClassName="low"),
        podgroup("high", min_member=1, priorityClassName="high"),
        pod("low-0", "low", node_name="n1", phase="Running", cpu="1", memory="1Gi", priority=10),
        terminating, running("low-2", "low", "n2", priority=10),
        preemptor,
        conf=PREEMPT_WITH_PREDICATES_CONF,
    )


def test_preemptor_waits_while_its_earlier_preemption_is_still_terminating() -> None:
    assert waiting_for_earlier_preemption("PreemptionByScheduler")["evictions"] == []
    assert waiting_for_earlier_preemption("EvictionByEvictionAPI")["evictions"] == ["ns/low-2"]


def test_best_effort_preemptor_only_preempts_best_effort_pods() -> None:
    docs = [
        LOW, HIGH, queue("q"), node("n1", cpu="4", memory="4Gi", pods="1"),
        podgroup("low", min_member=0, phase="Running", priorityClassName="low"),
        podgroup("high", min_member=1, priorityClassName="high"),
        pod("high-0", "high", cpu=None, memory=None),
    ]
    burstable = run(*docs, running("low-0", "low", "n1"))
    best_effort = run(*docs, pod("low-0", "low", node_name="n1", phase="Running", cpu=None, memory=None,
                                 labels=PREEMPTABLE))
    assert burstable["evictions"] == []
    assert best_effort["evictions"] == ["ns/low-0"]
    assert best_effort["pipelined"] == {"ns/high-0": "n1"}


# --------------------------------------------------------------------------- within a job


def test_preempt_within_job_evicts_lower_priority_task_of_same_job() -> None:
    out = run(
        queue("q"), node("n1", cpu="1", memory="2Gi"),
        podgroup("job", min_member=1, phase="Running"),
        running("job-0", "job", "n1", priority=1),
        pending("job-1", "job", priority=100),
        conf=conf_with(gang_preemptable=False, gang_starving=False),
    )
    assert out["evictions"] == ["ns/job-0"]
    assert out["pipelined"] == {"ns/job-1": "n1"}


def test_preempt_within_job_spares_tasks_of_equal_priority() -> None:
    out = run(
        queue("q"), node("n1", cpu="1", memory="2Gi"),
        podgroup("job", min_member=1, phase="Running"),
        running("job-0", "job", "n1", priority=5),
        pending("job-1", "job", priority=5),
        conf=conf_with(gang_preemptable=False, gang_starving=False),
    )
    assert out["evictions"] == []


# --------------------------------------------------------------------------- topology-aware mode


def reprieve_cluster() -> list[dict[str, Any]]:
    # Victim order (cheapest first) is v-1 then v-0; the preemptor needs 2 CPUs.
    return [
        LOW, HIGH, queue("q"), node("n1", cpu="3", memory="8Gi"),
        podgroup("v", min_member=0, phase="Running", priorityClassName="low"),
        podgroup("p", min_member=1, priorityClassName="high"),
        running("v-0", "v", "n1", cpu="2"), running("v-1", "v", "n1", cpu="1"),
        pending("p-0", "p", cpu="2"),
    ]


def test_normal_preemption_evicts_cheapest_first_until_the_preemptor_fits() -> None:
    out = run(*reprieve_cluster())
    assert sorted(out["evictions"]) == ["ns/v-0", "ns/v-1"]


def test_topology_aware_preemption_reprieves_victims_not_needed() -> None:
    out = run(*reprieve_cluster(), conf=conf_with(TOPOLOGY_AWARE))
    assert out["evictions"] == ["ns/v-0"]
    assert out["pipelined"] == {"ns/p-0": "n1"}


def test_topology_aware_preemption_picks_candidate_with_lowest_priority_victims() -> None:
    docs = [
        LOW, HIGH, queue("q"), node("n1", cpu="1", memory="2Gi"), node("n2", cpu="1", memory="2Gi"),
        podgroup("v", min_member=0, phase="Running", priorityClassName="low"),
        podgroup("p", min_member=1, priorityClassName="high"),
        running("v-0", "v", "n1", priority=5), running("v-1", "v", "n2", priority=1),
        pending("p-0", "p"),
    ]
    every_node = conf_with(TOPOLOGY_AWARE + "    minCandidateNodesPercentage: 100\n")
    for seed in range(4):  # whatever the random starting offset
        out = run(*docs, conf=every_node, seed=seed)
        assert out["evictions"] == ["ns/v-1"]
        assert out["pipelined"] == {"ns/p-0": "n2"}


def test_topology_aware_preemption_does_not_preempt_when_the_preemptor_already_fits() -> None:
    out = run(
        LOW, HIGH, queue("q", capability={"cpu": "6", "memory": "6G"}), node("n1", cpu="12", memory="12G"),
        podgroup("low", min_member=1, phase="Running", priorityClassName="low"),
        podgroup("high", min_member=1, priorityClassName="high"),
        running("low-0", "low", "n1", cpu="3"), pending("high-0", "high", cpu="3"),
        conf=conf_with(TOPOLOGY_AWARE),
    )
    assert out["evictions"] == []


def test_topology_aware_dry_run_leaves_the_session_unchanged_on_failure() -> None:
    # The victim cannot make room (queue capability), so nothing may be evicted or pipelined
    # and the node's accounting must be restored for the next session.
    docs = [
        LOW, HIGH, queue("q", capability={"cpu": "2", "memory": "8Gi"}), node("n1", cpu="4", memory="8Gi"),
        podgroup("low", min_member=0, phase="Running", priorityClassName="low"),
        podgroup("high", min_member=1, priorityClassName="high"),
        running("low-0", "low", "n1"), running("low-1", "low", "n1"), running("low-2", "low", "n1"),
        pending("high-0", "high", cpu="3"),
    ]
    cache = SchedulerCache.from_objects(load_manifest_text(dump(*docs), "test.yaml"))
    before = cache.nodes["n1"].used
    out = schedule_objects(cache, load_scheduler_conf(conf_with(TOPOLOGY_AWARE)), default_registry(),
                           sessions=1, seed=0)
    assert out["evictions"] == []
    assert out["pipelined"] == {}
    assert cache.nodes["n1"].used == before


WORKER_ANTI_AFFINITY = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"role": "worker"}}, "topologyKey": "kubernetes.io/hostname"}]}}


def anti_affinity_cluster() -> list[dict[str, Any]]:
    # Upstream predicates_test.go TestPodAntiAffinity: the node's hostname label differs from
    # its name; it is full by pod count; only evicting both "worker" pods would let p-0 in.
    return [
        LOW, HIGH, queue("q"),
        node("n1", cpu="12", memory="12Gi", pods="2", labels={"kubernetes.io/hostname": "node1"}),
        podgroup("v", min_member=0, phase="Running", priorityClassName="low"),
        podgroup("p", min_member=1, priorityClassName="high"),
        pod("w-0", "v", node_name="n1", phase="Running", cpu="3", labels={"role": "worker"},
            affinity=WORKER_ANTI_AFFINITY),
        pod("w-1", "v", node_name="n1", phase="Running", cpu="3"),
        pod("p-0", "p", cpu="3", labels={"role": "worker"}, affinity=WORKER_ANTI_AFFINITY),
    ]


def predicates_conf(predicates_flags: str) -> str:
    return f"""
actions: "preempt"
tiers:
- plugins:
  - name: priority
  - name: predicates
{predicates_flags}configurations:
- name: preempt
  arguments:
{TOPOLOGY_AWARE}"""


def test_topology_aware_dry_run_updates_inter_pod_affinity_when_predicates_simulates_removal() -> None:
    out = run(*anti_affinity_cluster(), conf=predicates_conf(""))
    assert out["evictions"] == ["ns/w-0"]
    assert out["pipelined"] == {"ns/p-0": "n1"}


def test_topology_aware_dry_run_keeps_removed_pods_for_inter_pod_affinity_without_simulate_hooks() -> None:
    # Neither enablePreemptable nor enabledAllocatable: upstream never calls the predicates
    # plugin's SimulateRemoveTask, so the removed w-0 still violates p-0's anti-affinity.
    flags = "    enablePreemptable: false\n    enabledAllocatable: false\n"
    out = run(*anti_affinity_cluster(), conf=predicates_conf(flags))
    assert out["evictions"] == []
    assert out["pipelined"] == {}


def test_preempt_rejects_malformed_arguments() -> None:
    with pytest.raises(ArgumentError, match="minCandidateNodesPercentage"):
        preempt.new({"minCandidateNodesPercentage": "many"})


def test_num_candidates_clamps_percentage_between_absolute_bounds() -> None:
    action = preempt.new({"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 3,
                  "maxCandidateNodesAbsolute": 50})
    assert action.num_candidates(2) == 2
    assert action.num_candidates(20) == 3
    assert action.num_candidates(200) == 20
    assert action.num_candidates(10_000) == 50


# --------------------------------------------------------------------------- property


@dataclass
class NodeInvariantCheck:
    """Test-only action: in-session node accounting never overcommits."""

    violations: list[str] = field(default_factory=list)
    name: str = "check-nodes"

    def execute(self, ssn: Session) -> None:
        table = ssn.node_table
        for d, dim in enumerate(table.dims):
            used = table.used[d][: table.n]
            alloc = table.allocatable[d][: table.n]
            future = table.future_idle(d)
            for i in np.flatnonzero(used > alloc + MIN_RESOURCE):
                self.violations.append(f"{ssn.node_list[i].name} {dim}: used {used[i]} > {alloc[i]}")
            for i in np.flatnonzero(future < -MIN_RESOURCE):
                self.violations.append(f"{ssn.node_list[i].name} {dim}: future idle {future[i]} < 0")


@st.composite
def clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Crowded clusters: running jobs that may be victims and pending jobs that may preempt."""
    nodes = [(f"n{i}", draw(st.integers(2, 6))) for i in range(draw(st.integers(1, 3)))]
    free = dict(nodes)
    queues = [f"q{i}" for i in range(draw(st.integers(1, 2)))]
    docs: list[dict[str, Any]] = [LOW, HIGH]
    docs += [queue(q, weight=draw(st.integers(1, 3)), reclaimable=draw(st.booleans())) for q in queues]
    docs += [node(name, cpu=str(cpu), memory="64Gi") for name, cpu in nodes]
    for j in range(draw(st.integers(2, 5))):
        group = f"j{j}"
        kind = draw(st.sampled_from(["running", "pending", "mixed"]))
        size = draw(st.integers(1, 3))
        pods: list[dict[str, Any]] = []
        for t in range(size):
            cpu = draw(st.integers(1, 3))
            wants_node = kind == "running" or (kind == "mixed" and t < size // 2 + 1)
            fitting = [n for n, _ in nodes if free[n] >= cpu] if wants_node else []
            labels = PREEMPTABLE if draw(st.integers(0, 3)) else {}
            spec: dict[str, Any] = {"cpu": str(cpu), "memory": "1Gi", "labels": labels,
                                    "priority": draw(st.integers(0, 3))}
            if fitting:
                chosen = draw(st.sampled_from(fitting))
                free[chosen] -= cpu
                spec.update(node_name=chosen, phase="Running")
            pods.append(pod(f"{group}-{t}", group, **spec))
        placed = any(p["status"]["phase"] == "Running" for p in pods)
        docs.append(podgroup(group, queue=draw(st.sampled_from(queues)),
                             min_member=draw(st.integers(0, size)),
                             phase="Running" if placed else "Inqueue",
                             priorityClassName=draw(st.sampled_from(["low", "high"]))))
        docs += pods
    return docs


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=clusters(), topology_aware=st.booleans(), seed=st.integers(0, 3))
def test_preempt_and_reclaim_never_overcommit_a_node(docs: list[dict[str, Any]], topology_aware: bool,
                                                       seed: int) -> None:
    conf = (
        'actions: "reclaim, preempt, check-nodes, allocate"\n'
        + PREEMPT_CONF.split("\n", 2)[2]
        + f"configurations:\n- name: preempt\n  arguments:\n"
        f"    enableTopologyAwarePreemption: {str(topology_aware).lower()}\n"
    )
    check = NodeInvariantCheck()

    def check_factory(arguments: Mapping[str, Any]) -> NodeInvariantCheck:
        return check

    registry = Registry(BUILTIN_PLUGINS, BUILTIN_ACTIONS, extra_actions={"check-nodes": check_factory})
    cache = SchedulerCache.from_objects(load_manifest_text(dump(*docs), "test.yaml"))
    schedule_objects(cache, load_scheduler_conf(conf), registry, sessions=2, seed=seed)
    assert check.violations == []
    for n in cache.node_list:
        assert n.used.less_equal(n.allocatable), n.name
