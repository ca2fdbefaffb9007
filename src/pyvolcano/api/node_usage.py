"""A node's measured load (upstream ``api.NodeUsage``): average CPU and memory use in percent.

Upstream's cache keeps, per node, the time the metrics were collected and the averages by
period; the collector fills only :data:`NODE_METRICS_PERIOD` (``10m``), so a plugin that reads
another period (rescheduling's default ``metricsPeriod: 5m``) finds 0 there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

__all__ = ["NODE_METRICS_PERIOD", "NodeUsage"]

NODE_METRICS_PERIOD: Final = "10m"


@dataclass(frozen=True, slots=True)
class NodeUsage:
    """Collected at ``metrics_time`` (the scheduler's clock); ``cpu`` / ``memory``: period -> percent."""

    metrics_time: float
    cpu: Mapping[str, float] = field(default_factory=dict)
    memory: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, metrics_time: float, cpu: float, memory: float) -> NodeUsage:
        return cls(metrics_time, {NODE_METRICS_PERIOD: cpu}, {NODE_METRICS_PERIOD: memory})
