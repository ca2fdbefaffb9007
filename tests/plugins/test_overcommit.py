"""overcommit: enqueue admission against total × factor − used, with inqueue accounting."""

from __future__ import annotations

from typing import Any

import pytest

from builders import node, open_session, pod, podgroup, queue, schedule
from pyvolcano.framework.arguments import ArgumentError
from pyvolcano.plugins.overcommit import DEFAULT_OVERCOMMIT_FACTOR, Overcommit


def enqueue_conf(factor: object | None = None) -> str:
    args = "" if factor is None else f"\n    arguments:\n      overcommit-factor: {factor}"
    return f"""
actions: "enqueue"
tiers:
- plugins:
  - name: overcommit{args}
"""


def pending(name: str, cpu: str, memory: str | None = None) -> dict[str, Any]:
    min_resources = {"cpu": cpu} if memory is None else {"cpu": cpu, "memory": memory}
    return podgroup(name, phase="Pending", minResources=min_resources)


def test_second_job_is_rejected_once_inqueue_plus_min_exceeds_idle() -> None:
    # idle = 4 cpu × 1.5 = 6 cpu. a: 0 + 4 ≤ 6 → admitted (inqueue 4); b: 4 + 3 = 7 > 6 → rejected.
    out = schedule(queue("q"), node("n1", cpu="4"), pending("a", "4"), pending("b", "3"),
                   conf=enqueue_conf(1.5))
    assert out["podgroups"] == {"ns/a": "Inqueue", "ns/b": "Pending"}


def test_job_fitting_the_remaining_overcommitted_idle_is_admitted() -> None:
    # idle 6 cpu: 4 + 2 = 6 ≤ 6 (the bound is inclusive).
    out = schedule(queue("q"), node("n1", cpu="4"), pending("a", "4"), pending("b", "2"),
                   conf=enqueue_conf(1.5))
    assert out["podgroups"] == {"ns/a": "Inqueue", "ns/b": "Inqueue"}


def test_used_resources_of_running_pods_reduce_idle() -> None:
    # idle = 4 × 1.2 − 2 (running pod) = 2.8 cpu, so a 3-cpu job no longer fits.
    docs = [queue("q"), node("n1", cpu="4"), podgroup("run", phase="Running"),
            pod("run-0", "run", cpu="2", node_name="n1", phase="Running")]
    assert schedule(*docs, pending("a", "3"), conf=enqueue_conf())["podgroups"]["ns/a"] == "Pending"
    assert schedule(*docs, pending("a", "2.5"), conf=enqueue_conf())["podgroups"]["ns/a"] == "Inqueue"


def test_already_inqueue_podgroups_count_against_idle() -> None:
    # idle 4.8 cpu; the Inqueue group already reserves 4, so 4 + 1 > 4.8.
    docs = [queue("q"), node("n1", cpu="4"), podgroup("held", phase="Inqueue", minResources={"cpu": "4"})]
    assert schedule(*docs, pending("a", "1"), conf=enqueue_conf())["podgroups"]["ns/a"] == "Pending"
    assert schedule(*docs, pending("a", "0.5"), conf=enqueue_conf())["podgroups"]["ns/a"] == "Inqueue"


def test_running_podgroup_reserves_only_its_unallocated_min_resources() -> None:
    # The Running group holds 1 of its 3 min cpu with minMember 1 met: it reserves 2 more.
    # idle = 4.8 − 1 = 3.8; 2 + 2 = 4 > 3.8 rejects, 2 + 1.5 = 3.5 admits.
    docs = [queue("q"), node("n1", cpu="4"),
            podgroup("run", phase="Running", minResources={"cpu": "3"}),
            pod("run-0", "run", cpu="1", node_name="n1", phase="Running")]
    assert schedule(*docs, pending("a", "2"), conf=enqueue_conf())["podgroups"]["ns/a"] == "Pending"
    assert schedule(*docs, pending("a", "1.5"), conf=enqueue_conf())["podgroups"]["ns/a"] == "Inqueue"


def test_only_dimensions_requested_by_min_resources_are_compared() -> None:
    # cpu is already over-reserved, but the job asks for memory only.
    docs = [queue("q"), node("n1", cpu="4"), podgroup("held", phase="Inqueue", minResources={"cpu": "5"}),
            podgroup("mem", phase="Pending", minResources={"memory": "1Gi"})]
    assert schedule(*docs, conf=enqueue_conf())["podgroups"]["ns/mem"] == "Inqueue"


def test_factor_below_one_falls_back_to_default() -> None:
    assert Overcommit({"overcommit-factor": 0.5}).factor == DEFAULT_OVERCOMMIT_FACTOR
    # With 1.2: idle 4.8, a 4.5-cpu job fits (with 0.5 it would not).
    out = schedule(queue("q"), node("n1", cpu="4"), pending("a", "4.5"), conf=enqueue_conf(0.5))
    assert out["podgroups"]["ns/a"] == "Inqueue"


def test_malformed_factor_is_an_argument_error() -> None:
    with pytest.raises(ArgumentError, match="overcommit-factor"):
        Overcommit({"overcommit-factor": "lots"})


def test_vote_permits_without_min_resources_and_rejects_with_overused_event() -> None:
    ssn = open_session(queue("q"), node("n1", cpu="4"), podgroup("free", phase="Pending"),
                       pending("big", "10", "1Gi"), conf=enqueue_conf())
    assert ssn.job_enqueueable(ssn.jobs["ns/free"]) is True
    assert ssn.job_enqueueable(ssn.jobs["ns/big"]) is False
    events = ssn.podgroup_events["ns/big"]
    assert events == ["Normal Unschedulable resource in cluster is overused: overused cpu"]


def test_job_enqueued_adds_min_resources_to_inqueue() -> None:
    ssn = open_session(queue("q"), node("n1", cpu="4"), pending("a", "3"), pending("b", "3"),
                       conf=enqueue_conf())
    a, b = ssn.jobs["ns/a"], ssn.jobs["ns/b"]
    assert ssn.job_enqueueable(b) is True
    ssn.job_enqueued(a)
    assert ssn.job_enqueueable(b) is False
