"""vc-controller-manager metrics, derived from the watch events the controllers receive."""

from __future__ import annotations

import pytest

from pyvolcano.metrics.controllers import ControllerMetrics
from pyvolcano.store import InMemoryStore, from_rfc3339
from pyvolcano.store.base import WatchEvent


def value(m: ControllerMetrics, name: str, **labels: str) -> float | None:
    return m.registry.get_sample_value(name, labels)


def test_queue_status_counts_become_gauges_and_go_with_the_queue():
    m = ControllerMetrics()
    q = {"kind": "Queue", "metadata": {"name": "q"}, "status": {"state": "Open", "running": 2, "inqueue": 1}}
    m.observe_event(WatchEvent("MODIFIED", "Queue", q, 5), lambda ns, name: None)
    assert value(m, "volcano_queue_pod_group_running_count", queue_name="q") == 2
    assert value(m, "volcano_queue_pod_group_inqueue_count", queue_name="q") == 1
    assert value(m, "volcano_queue_pod_group_pending_count", queue_name="q") == 0
    assert value(m, "volcano_queue_pod_group_completed_count", queue_name="q") == 0
    m.observe_event(WatchEvent("DELETED", "Queue", q, 6), lambda ns, name: None)
    assert value(m, "volcano_queue_pod_group_running_count", queue_name="q") is None


def test_job_to_pod_creation_latency_from_pod_added_events():
    clock = [10.0]
    store = InMemoryStore(clock=lambda: clock[0])
    job = store.create({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                        "metadata": {"name": "j", "namespace": "ns"}, "spec": {}})
    clock[0] = 10.75
    owner = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "j", "uid": job["metadata"]["uid"],
             "controller": True}
    store.create({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": "j-w-0", "namespace": "ns", "ownerReferences": [owner]}, "spec": {}})
    store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain", "namespace": "ns"}, "spec": {}})
    m = ControllerMetrics()

    def job_created(ns: str, name: str) -> float | None:
        return from_rfc3339(store.get("Job", ns, name)["metadata"]["creationTimestamp"])

    for ev in store.watch(0):
        m.observe_event(ev, job_created)
    assert value(m, "volcano_controller_job_to_pod_creation_latency_milliseconds_count") == 1
    assert value(m, "volcano_controller_job_to_pod_creation_latency_milliseconds_sum") == pytest.approx(750.0)
    text_buckets = next(b for b in m.registry.collect() if b.name.startswith("volcano_controller_job_to_pod"))
    assert sum(1 for s in text_buckets.samples if s.name.endswith("_bucket")) == 31
