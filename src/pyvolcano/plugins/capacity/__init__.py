"""capacity plugin: queue quotas by explicit deserved / capability / guarantee (upstream plugins/capacity).

Unlike proportion, capacity does not compute deserved by fair-share water-filling: each
queue states its ``spec.deserved`` (what it may keep under contention), ``spec.capability``
(the hard limit) and ``spec.guarantee`` (what is never reclaimed). A queue may borrow idle
resources up to its *real capability*; the reclaim action pulls it back towards deserved.
With ``enableHierarchy: true`` queues form a tree through ``spec.parent`` and every limit
applies to the queue and to all its ancestors.

Layout: :mod:`.attrs` (per-queue state and resource rules), :mod:`.build` (flat and
hierarchical construction at session open), :mod:`.plugin` (the callbacks).

Arguments (:data:`ARGUMENTS`): ``ancestorReclaimLevel`` (int, default 0, negative ⇒ 0);
``capacity.DynamicResourceAllocationEnable`` (default true, as the GA feature gate: the DRA
quota of :mod:`.dra`); ``capacity.DRAConsumableCapacityEnable`` is refused unless false
(consumable device capacity is not counted against queues). Flag: ``enableHierarchy`` (default
false).

Not modelled:

* The consumable-capacity DRA quota keys (``<dim>.deviceclass/<class>``): read, not enforced.
* Scheduling-gate queue admission (feature gate ``SchedulingGatesQueueAdmission``, off by
  default upstream): no capacity is reserved for tasks whose queue gate was lifted.
* The Simulate* callbacks of topology-aware preemption: the framework has no such
  extension points yet.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyvolcano.plugins.capacity.plugin import ARGUMENTS, NAME, Capacity, CapacitySession

__all__ = ["ARGUMENTS", "NAME", "Capacity", "CapacitySession", "new"]


def new(arguments: Mapping[str, Any] | None) -> Capacity:
    return Capacity(arguments)
