"""Session-open construction of the capacity plugin's queue attributes.

Mirrors ``buildQueueAttrs`` (flat), ``buildHierarchicalQueueAttrs``, ``updateAncestors`` and
``checkHierarchicalQueue`` of upstream ``pkg/scheduler/plugins/capacity/capacity.go``.

Flat mode: only queues with jobs get attributes. ``deserved`` is the queue's explicit
``spec.deserved``; ``realCapability = min_dim(ExceededPart(total, Σ guarantee of all
queues) + guarantee, capability)`` where capability cpu/memory ≤ 0 mean unlimited and
unspecified scalar dimensions do not cap; finally ``deserved = max(min_dim(deserved,
realCapability), guarantee)``.

Hierarchical mode: every queue gets attributes, linked to ``spec.parent`` (default
``root``). The tree is *ready* only if every parent exists, no parent chain loops, the
``root`` queue exists and no job sits in a non-leaf queue; a tree that is not ready makes
the plugin reject everything. Each job's usage is charged to its leaf queue and to every
ancestor. Walking down from the root: a child's deserved becomes ``max(deserved,
guarantee)``; it inherits every capability dimension it leaves unset (cpu/memory ≤ 0,
missing scalars) from its parent; its ``realCapability = min_dim(ExceededPart(parent
realCapability, Σ siblings' guarantee) + own guarantee, own capability)``. The root's
capability is unlimited unless set, its realCapability is its capability, and its deserved
and guarantee are the sums over its children.

Invariant: queues, jobs and children are visited in name / UID order, so sums are
accumulated in a stable order.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from pyvolcano.api.job import JobInfo
from pyvolcano.api.queue import QueueInfo
from pyvolcano.api.resource import DimensionDefault, Resource
from pyvolcano.plugins._util import capability_resource, max_resource
from pyvolcano.plugins.capacity.attrs import (
    ROOT_QUEUE,
    QueueAttr,
    exceeded_part,
    infinite_resource,
    job_usage,
)

__all__ = ["build_flat", "build_hierarchy"]

logger = logging.getLogger(__name__)

INF = DimensionDefault.INFINITY


def build_flat(
    queues: Mapping[str, QueueInfo], jobs: Mapping[str, JobInfo], total: Resource
) -> dict[str, QueueAttr]:
    """Attributes of every queue that has a job (upstream ``buildQueueAttrs``)."""
    total_guarantee = Resource()
    for name in sorted(queues):
        guarantee = queues[name].guarantee()
        if guarantee is not None:
            total_guarantee.add(guarantee)
    headroom = exceeded_part(total, total_guarantee)

    def new_attr(queue: QueueInfo) -> QueueAttr:
        capability = capability_resource(queue.queue.capability)
        attr = QueueAttr(queue, capability=capability or Resource())
        attr.real_capability = headroom.clone().add(attr.guarantee)
        if capability is not None:
            attr.real_capability.min_dimension(capability, INF)
        return attr

    attrs: dict[str, QueueAttr] = {}
    for uid in sorted(jobs):
        job = jobs[uid]
        attr = attrs.get(job.queue)
        if attr is None:
            attr = attrs[job.queue] = new_attr(queues[job.queue])
        attr.charge(job_usage(job))
    for attr in attrs.values():
        attr.deserved.min_dimension(attr.real_capability, INF)
        attr.deserved = max_resource(attr.deserved, attr.guarantee)
        attr.update_share()
    return attrs


def build_hierarchy(
    queues: Mapping[str, QueueInfo], jobs: Mapping[str, JobInfo], total: Resource
) -> tuple[dict[str, QueueAttr], bool]:
    """Attributes of every queue, linked into a tree, and whether the tree is ready."""
    attrs = {
        name: QueueAttr(queues[name], capability=Resource.from_list(queues[name].queue.capability))
        for name in sorted(queues)
    }
    ready = _link(queues, attrs)
    for uid in sorted(jobs):
        job = jobs[uid]
        attr = attrs.get(job.queue)
        if attr is None:
            continue
        if not attr.is_leaf:
            logger.warning("capacity: queue %s of job %s is not a leaf queue", attr.name, job.uid)
            ready = False
        usage = job_usage(job)
        attr.charge(usage)
        for ancestor in attr.ancestors:
            attrs[ancestor].charge(usage)
    root = attrs.get(ROOT_QUEUE)
    if root is None:
        logger.warning("capacity: root queue %r not found; hierarchy is not ready", ROOT_QUEUE)
        return attrs, False
    # Upstream: the root is not limited by the current cluster size unless the user says so.
    if root.capability.is_empty():
        root.capability = infinite_resource(total)
    root.real_capability = root.capability.clone()
    _settle_children(root, is_root=True)
    for attr in attrs.values():
        attr.update_share()
    return attrs, ready


def _link(queues: Mapping[str, QueueInfo], attrs: dict[str, QueueAttr]) -> bool:
    """Set ``ancestors`` / ``children``; False if a parent is missing or a chain loops.

    Upstream's ``updateAncestors`` keeps a visited set for cycle detection, but never
    revisits a queue it has already created, so a loop of queues is not reported there: it
    only leaves those queues non-leaf and detached from the root. Here a loop makes the tree
    not ready, as the upstream code intends.
    """
    ok = True
    resolved: dict[str, tuple[str, ...]] = {ROOT_QUEUE: ()}

    def parent_of(name: str) -> str:
        return queues[name].parent or ROOT_QUEUE

    def resolve(name: str) -> tuple[str, ...] | None:
        chain: list[str] = []
        current = name
        while current not in resolved:
            if current in chain:
                logger.warning("capacity: cycle in queue hierarchy at queue %s", current)
                return None
            chain.append(current)
            parent = parent_of(current)
            if parent not in queues:
                logger.warning("capacity: queue %s has invalid parent queue %s", current, parent)
                return None
            current = parent
        for queue_name in reversed(chain):
            parent = parent_of(queue_name)
            resolved[queue_name] = (*resolved[parent], parent)
        return resolved[name]

    for name in attrs:
        if name == ROOT_QUEUE:
            continue
        ancestors = resolve(name)
        if ancestors is None:
            ok = False
            continue
        attrs[name].ancestors = ancestors
        attrs[ancestors[-1]].children[name] = attrs[name]
    return ok


def _settle_children(parent: QueueAttr, *, is_root: bool) -> None:
    """Upstream ``checkHierarchicalQueue``: deserved, inherited capability and realCapability downwards."""
    children = [parent.children[name] for name in sorted(parent.children)]
    total_guarantee, total_deserved = Resource(), Resource()
    for child in children:
        child.deserved = max_resource(child.deserved, child.guarantee)
        total_deserved.add(child.deserved)
        total_guarantee.add(child.guarantee)
        _inherit_capability(child.capability, parent.capability)
        if not child.capability.less_equal(parent.capability, INF):
            logger.debug("capacity: capability of queue %s exceeds its parent %s", child.name, parent.name)
    if is_root:
        parent.guarantee = total_guarantee.clone()
        parent.deserved = total_deserved.clone()
    if not total_guarantee.less_equal(parent.guarantee, DimensionDefault.ZERO):
        logger.debug("capacity: the guarantees of the children of %s exceed its own", parent.name)
    headroom = exceeded_part(parent.real_capability, total_guarantee)
    for child in children:
        child.real_capability = headroom.clone().add(child.guarantee).min_dimension(child.capability, INF)
    for child in children:
        _settle_children(child, is_root=False)


def _inherit_capability(child: Resource, parent: Resource) -> None:
    """Dimensions the child leaves unset (cpu/memory ≤ 0, absent scalars) take the parent's value."""
    if child.milli_cpu <= 0:
        child.milli_cpu = parent.milli_cpu
    if child.memory <= 0:
        child.memory = parent.memory
    for name, amount in parent.scalars.items():
        child.scalars.setdefault(name, amount)
