"""vc-controller-manager's Prometheus metrics (upstream ``pkg/controllers/metrics``).

* ``volcano_controller_job_to_pod_creation_latency_milliseconds`` (histogram,
  ``ExponentialBucketsRange(50, 60000, 30)``): per pod the job controller creates, the time
  from the vcjob's creation to the pod's;
* ``volcano_queue_pod_group_{inqueue,pending,running,unknown,completed}_count{queue_name}``
  (gauges): the PodGroup counts the queue controller writes into a Queue's status.

:meth:`ControllerMetrics.update_queue_status` takes a Queue's ``status`` as written (the
``pending`` / ``running`` / ``unknown`` / ``inqueue`` / ``completed`` counts, missing = 0),
:meth:`ControllerMetrics.delete_queue` forgets a deleted queue, as upstream's handlers do.
:meth:`ControllerMetrics.observe_event` derives all of them from the watch events the
controllers already receive, so no controller needs to know about metrics: a Queue event
updates (or deletes) its gauges, and a Pod ADDED with a controller owner reference to a
``batch.volcano.sh`` Job observes the pod's creation time minus the job's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any, Final

from prometheus_client import CollectorRegistry, Gauge, Histogram

from pyvolcano.metrics.buckets import exponential_buckets_range
from pyvolcano.store.base import WatchEvent, from_rfc3339

__all__ = ["ControllerMetrics"]

_STATES: Final = ("inqueue", "pending", "running", "unknown", "completed")


class ControllerMetrics:
    """Every vc-controller-manager metric, in a registry of its own (``registry`` or a new one)."""

    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = reg = registry if registry is not None else CollectorRegistry()
        self.job_to_pod_creation_latency = Histogram(
            "controller_job_to_pod_creation_latency_milliseconds",
            "Latency from VCJob creation to pod created in milliseconds",
            namespace="volcano", registry=reg, buckets=exponential_buckets_range(50, 60000, 30))
        self.queue_pod_groups = {
            state: Gauge(f"queue_pod_group_{state}_count", f"The number of {state.capitalize()} PodGroup in this queue",
                         ["queue_name"], namespace="volcano", registry=reg)
            for state in _STATES
        }

    def observe_job_to_pod_creation_latency(self, seconds: float) -> None:
        self.job_to_pod_creation_latency.observe(seconds * 1000.0)

    def update_queue_status(self, queue: str, status: Mapping[str, Any] | None) -> None:
        status = status or {}
        for state, gauge in self.queue_pod_groups.items():
            value = status.get(state)
            gauge.labels(queue).set(float(value) if isinstance(value, int | float) else 0.0)

    def observe_event(self, event: WatchEvent, job_created: Callable[[str, str], float | None]) -> None:
        """Update from one watch event; ``job_created(namespace, name)`` gives a Job's creation
        time in store seconds (None when unknown)."""
        obj = event.object
        md = obj.get("metadata") or {}
        if event.kind == "Queue":
            if event.type == "DELETED":
                self.delete_queue(str(md.get("name", "")))
            else:
                self.update_queue_status(str(md.get("name", "")), obj.get("status"))
            return
        if event.kind != "Pod" or event.type != "ADDED":
            return
        owner = next((o for o in md.get("ownerReferences") or [] if isinstance(o, Mapping) and o.get("controller")
                      and o.get("kind") == "Job" and str(o.get("apiVersion", "")).startswith("batch.volcano.sh/")),
                     None)
        created = md.get("creationTimestamp")
        if owner is None or not isinstance(created, str):
            return
        job_time = job_created(str(md.get("namespace") or "default"), str(owner.get("name", "")))
        if job_time is None:
            return
        try:
            pod_time = from_rfc3339(created)
        except ValueError:
            return
        self.observe_job_to_pod_creation_latency(max(pod_time - job_time, 0.0))

    def delete_queue(self, queue: str) -> None:
        for gauge in self.queue_pod_groups.values():
            with contextlib.suppress(KeyError):
                gauge.remove(queue)
