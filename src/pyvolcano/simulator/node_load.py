"""Node load in a simulation: what a metrics source would report, derived from the running pods.

A simulated pod does no work, so there is no Prometheus to ask. When the scheduler
configuration has a ``metrics`` section (any ``type``; the ``address`` is not contacted), the
simulator collects every ``metrics.interval`` of virtual time, as upstream's cache does, and
sets each node's load to the share of its capacity the *requests* of its Running pods take:
``cpu% = 100 × Σ cpu requests / cpu capacity`` and the same for memory (pods that use exactly
what they request). The usage and rescheduling plugins read these figures as they read
Prometheus's on a cluster.
"""

from __future__ import annotations

from pyvolcano.api.node_usage import NodeUsage
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import TaskStatus
from pyvolcano.cache.cache import SchedulerCache

__all__ = ["derived_usage"]


def derived_usage(cache: SchedulerCache, now: float) -> dict[str, NodeUsage]:
    """Every node's load from the requests of its Running pods, stamped ``now``."""
    out: dict[str, NodeUsage] = {}
    for info in cache.node_list:
        capacity = Resource.from_list(info.node.capacity or info.node.allocatable)
        cpu = memory = 0.0
        for task in info.tasks.values():
            if task.status == TaskStatus.Running:
                cpu += task.resreq.milli_cpu
                memory += task.resreq.memory
        out[info.name] = NodeUsage.of(
            now,
            100.0 * cpu / capacity.milli_cpu if capacity.milli_cpu > 0 else 0.0,
            100.0 * memory / capacity.memory if capacity.memory > 0 else 0.0,
        )
    return out
