"""``job run --dry-run``'s answers (pyvolcano.forecast.dryrun)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from builders import dump, node, pod, podgroup, queue
from kube.fakeapi import FakeApiServer
from pyvolcano.api.manifest import load_manifest_text
from pyvolcano.api.names import SCHEDULER_KINDS
from pyvolcano.conf import default_configuration, load_scheduler_conf
from pyvolcano.forecast.dryrun import DryRunError, dry_run_document, job_of
from pyvolcano.kube.store import KubeStore
from pyvolcano.runtime.registry import default_registry
from pyvolcano.simulator.restore import RuntimePolicy
from pyvolcano.simulator.state import ClusterState, state_from_store
from pyvolcano.store.memory import InMemoryStore

PREEMPT_CONF = """
actions: "enqueue, allocate, preempt, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
"""
HIGH = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}


def _img(d: dict[str, Any], duration: str | None = None) -> dict[str, Any]:
    d["spec"]["containers"][0]["image"] = "busybox"
    if duration is not None:
        d["metadata"]["annotations"]["pyvolcano.io/duration"] = duration
    return d


def _vcjob(name: str, *, cpu: str, queue_name: str = "q", priority_class: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "m", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}
    job: dict[str, Any] = {"schedulerName": "volcano", "minAvailable": 1, "queue": queue_name,
                           "tasks": [{"name": "w", "replicas": 1, "template": {"spec": spec}}]}
    if priority_class:
        job["priorityClassName"] = spec["priorityClassName"] = priority_class
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "ns"},
            "spec": job}


def _low_running(duration: str | None = None) -> list[dict[str, Any]]:
    return [queue("q"), node("n1", cpu="2"), podgroup("low", phase="Running"), HIGH,
            _img(pod("low-0", "low", cpu="1", node_name="n1", phase="Running", priority=10), duration),
            _img(pod("low-1", "low", cpu="1", node_name="n1", phase="Running", priority=10), duration)]


def _state(docs: list[dict[str, Any]], now: float = 100.0) -> ClusterState:
    return ClusterState(docs, load_manifest_text(dump(*docs), "test.yaml"), None, now, "test.yaml")


def test_a_higher_priority_job_is_placed_now_by_preempting_one_low_pod() -> None:
    doc = dry_run_document(_state(_low_running()), [_vcjob("hi", cpu="1", priority_class="high")], "job.yaml",
                           load_scheduler_conf(PREEMPT_CONF), default_registry(), policy=RuntimePolicy())
    assert doc["admission"] == {"allowed": True, "errors": []}
    assert doc["placed_now"] is True and doc["message"] == "now"
    assert doc["diagnosis"] is None
    assert len(doc["evictions"]) == 1 and doc["evictions"][0]["action"] == "preempt"
    assert doc["evictions"][0]["pod"] in ("ns/low-0", "ns/low-1")


def test_a_job_that_must_wait_says_why_and_when_and_evicts_nothing() -> None:
    doc = dry_run_document(_state(_low_running("50s")), [_vcjob("wait", cpu="2")], "job.yaml",
                           default_configuration(), default_registry(), policy=RuntimePolicy())
    assert doc["placed_now"] is False
    assert doc["diagnosis"]["reason"] == "Enqueue.Rejected"  # the queue has no room for its minResources
    # low's pods started at 100 (the state's now, no startTime) and end 50 s later; the session
    # then enqueues the job, its controller creates the pod and the next session binds it.
    assert doc["start_in_seconds"] == 51.0 and doc["message"] == "in 51s"
    assert doc["evictions"] == []


def test_admission_refusal_is_the_answer_and_nothing_is_simulated() -> None:
    doc = dry_run_document(_state(_low_running()), [_vcjob("lost", cpu="1", queue_name="nosuch")], "job.yaml",
                           default_configuration(), default_registry(), policy=RuntimePolicy())
    assert doc["admission"]["allowed"] is False
    assert "unable to find job queue" in doc["admission"]["errors"][0]
    assert "placed_now" not in doc


def test_the_job_file_must_hold_exactly_one_job() -> None:
    with pytest.raises(DryRunError, match=re.escape("job.yaml: expected one batch.volcano.sh/v1alpha1 Job")):
        job_of([_vcjob("a", cpu="1"), _vcjob("b", cpu="1")], "job.yaml")
    assert job_of([podgroup("pg"), pod("pg-0", "pg")], "job.yaml") == ("PodGroup", "ns/pg")


def test_dry_run_on_a_live_cluster_writes_nothing() -> None:
    api = FakeApiServer(InMemoryStore(clock=lambda: 100.0))  # the cluster's clock: its timestamps
    for d in _low_running("50s"):
        api.store.create(d)
    store = KubeStore(api.client(), SCHEDULER_KINDS).start()
    try:
        state = state_from_store(store, 5.0, "the test cluster", now=100.0)
    finally:
        store.stop()
    doc = dry_run_document(state, [_vcjob("wait", cpu="2")], "job.yaml", default_configuration(),
                           default_registry(), policy=RuntimePolicy())
    assert doc["admission"]["allowed"] and doc["placed_now"] is False
    assert doc["diagnosis"]["reason"] == "Enqueue.Rejected"
    assert doc["start_in_seconds"] == 51.0
    assert [r for r in api.requests if r[0] != "GET"] == []
