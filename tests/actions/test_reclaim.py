"""Specification tests for the reclaim action (upstream actions/reclaim/reclaim.go).

Reclaim lets a starving job take resources back from *other* queues: only Running,
preemptable tasks of queues that allow reclaim and (with proportion) hold more than their
deserved share are victims; the reclaiming queue must stay within its own share
(``Preemptive``); evictions are committed only when the reclaiming job becomes pipelined.
"""

from __future__ import annotations

from typing import Any

from builders import dump, node, pod, podgroup, queue
from pyvolcano.api.manifest import load_manifest_text
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.runtime.cycle import schedule_objects
from pyvolcano.runtime.registry import default_registry

PREEMPTABLE = {"volcano.sh/preemptable": "true"}

# The tier of upstream's reclaim tests: victims are the intersection of the plugins' answers.
RECLAIM_CONF = """
actions: "reclaim"
tiers:
- plugins:
  - name: conformance
  - name: gang
  - name: proportion
  - name: priority
"""


def run(*docs: dict[str, Any], conf: str = RECLAIM_CONF) -> dict[str, Any]:
    cache = SchedulerCache.from_objects(load_manifest_text(dump(*docs), "test.yaml"))
    return schedule_objects(cache, load_scheduler_conf(conf), default_registry(), sessions=1, seed=0)


def running(name: str, group: str, node_name: str, cpu: str = "1") -> dict[str, Any]:
    return pod(name, group, node_name=node_name, phase="Running", cpu=cpu, memory="1Gi", labels=PREEMPTABLE)


def pending(name: str, group: str, cpu: str = "1", **spec: Any) -> dict[str, Any]:
    return pod(name, group, cpu=cpu, memory="1Gi", **spec)


def three_queues(*, q1: dict[str, Any] | None = None, n1_cpu: str = "3",
                 reclaimer: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """q1 holds 5 CPUs (deserved 4), q3 holds 1 CPU (deserved 1), q2 wants 1 CPU."""
    return [
        queue("q1", **(q1 or {})), queue("q2"), queue("q3"),
        node("n1", cpu=n1_cpu, memory="8Gi"), node("n2", cpu="3", memory="8Gi"),
        podgroup("a", queue="q1", min_member=1, phase="Running"),
        podgroup("c", queue="q3", min_member=0, phase="Running"),
        podgroup("b", queue="q2", min_member=1),
        running("a-0", "a", "n1"), running("a-1", "a", "n1"),
        running("a-2", "a", "n2"), running("a-3", "a", "n2"), running("a-4", "a", "n2"),
        running("c-0", "c", "n1"),
        reclaimer or pending("b-0", "b"),
    ]


def test_reclaim_evicts_only_from_queues_over_deserved() -> None:
    out = run(*three_queues())
    # q1 is one CPU above its share: exactly one of its tasks goes; q3's task is at its
    # share and stays although it sits on the same node.
    assert out["evictions"] == ["ns/a-0"]
    assert out["pipelined"] == {"ns/b-0": "n1"}
    assert out["binds"] == {}


def test_reclaim_respects_queues_that_are_not_reclaimable() -> None:
    out = run(*three_queues(q1={"reclaimable": False}))
    assert out["evictions"] == []
    assert out["pipelined"] == {}


def test_reclaim_pipelines_without_eviction_when_node_already_fits() -> None:
    out = run(*three_queues(n1_cpu="4"))
    assert out["evictions"] == []
    assert out["pipelined"] == {"ns/b-0": "n1"}


def test_reclaim_preemption_policy_never_takes_nothing() -> None:
    out = run(*three_queues(reclaimer=pending("b-0", "b", preemptionPolicy="Never")))
    assert out["evictions"] == []
    assert out["pipelined"] == {}


def test_reclaim_never_takes_from_the_reclaimers_own_queue() -> None:
    out = run(
        queue("q1"), node("n1", cpu="2", memory="8Gi"),
        podgroup("a", queue="q1", min_member=0, phase="Running"),
        podgroup("b", queue="q1", min_member=1),
        running("a-0", "a", "n1"), running("a-1", "a", "n1"),
        pending("b-0", "b"),
    )
    assert out["evictions"] == []


def test_reclaim_is_refused_when_the_reclaiming_queue_would_exceed_its_share() -> None:
    out = run(
        queue("q1"), queue("q2"), node("n1", cpu="2", memory="8Gi"),
        podgroup("a", queue="q1", min_member=0, phase="Running"),
        podgroup("b", queue="q2", min_member=0, phase="Running"),
        podgroup("b2", queue="q2", min_member=1),
        running("a-0", "a", "n1"), running("b-0", "b", "n1"),
        pending("b2-0", "b2"),
    )
    assert out["evictions"] == []


def gang_cluster(min_member: int) -> list[dict[str, Any]]:
    # q1 holds 6 CPUs with a share of 3; q2's gang asks for 1 + 1 + 4 CPUs.
    return [
        queue("q1"), queue("q2"),
        node("n1", cpu="3", memory="8Gi"), node("n2", cpu="3", memory="8Gi"),
        podgroup("a", queue="q1", min_member=0, phase="Running"),
        podgroup("b", queue="q2", min_member=min_member),
        running("a-0", "a", "n1"), running("a-1", "a", "n1"), running("a-2", "a", "n1"),
        running("a-3", "a", "n2"), running("a-4", "a", "n2"), running("a-5", "a", "n2"),
        pending("b-0", "b"), pending("b-1", "b"), pending("b-2", "b", cpu="4"),
    ]


def test_reclaim_commits_evictions_only_when_the_job_becomes_pipelined() -> None:
    whole_gang = run(*gang_cluster(min_member=3))
    two_of_three = run(*gang_cluster(min_member=2))
    assert whole_gang["evictions"] == []
    assert whole_gang["pipelined"] == {}
    assert len(two_of_three["evictions"]) == 2
    assert set(two_of_three["pipelined"]) == {"ns/b-0", "ns/b-1"}


def test_reclaim_evicts_cheapest_victims_first_and_stops_once_the_task_fits() -> None:
    out = run(*gang_cluster(min_member=2))
    # Victims of one job go in reverse task order: the highest pod index first.
    assert sorted(out["evictions"]) == ["ns/a-1", "ns/a-2"]
    assert out["pipelined"] == {"ns/b-0": "n1", "ns/b-1": "n1"}
