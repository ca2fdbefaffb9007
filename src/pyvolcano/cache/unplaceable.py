"""Requests that no node of the cluster could ever hold.

Upstream's messages name no resource when a task is refused before any node is tried: the
queue check (proportion's deserved share of a resource the nodes do not have is 0, so
``Allocatable`` fails and allocate moves on) or enqueue (the PodGroup's ``minResources`` do
not fit, so it stays Pending and its pods are never created). The PodGroup condition then
says only ``Pending: 1 Unschedulable``. This module names the dimensions behind such a job,
as the predicates would: ``Insufficient ephemeral-storage`` when a pending pod asks for more
than the largest node has allocatable, or, for a PodGroup without pods yet, when its
``minResources`` exceed what the whole cluster has.

It reads the cache only and never changes a decision; callers add its text next to
upstream's message, never in place of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from pyvolcano.api.quantity import format_quantity
from pyvolcano.api.resource import CPU, MEMORY, PODS, Resource
from pyvolcano.api.task import TaskStatus
from pyvolcano.api.unschedule import insufficient_reason

if TYPE_CHECKING:
    from pyvolcano.api.job import JobInfo
    from pyvolcano.cache.cache import SchedulerCache

__all__ = ["unplaceable_reason", "unplaceable_resources"]

_EPS = 1e-9


def _capacity(cache: SchedulerCache, name: str, *, total: bool) -> float:
    table = cache.node_table
    d = table.dim_index.get(name)
    if d is None or table.n == 0:
        return 0.0
    col = table.allocatable[d][: table.n]
    return float(col.sum()) if total else float(np.max(col))


def _over(cache: SchedulerCache, request: Resource, *, total: bool) -> list[tuple[str, float, float]]:
    out = []
    for name, amount in request.items():
        if name == PODS or amount <= _EPS:
            continue
        cap = _capacity(cache, name, total=total)
        if amount > cap + _EPS:
            out.append((name, amount, cap))
    return out


def unplaceable_resources(cache: SchedulerCache, job: JobInfo) -> list[tuple[str, float, float]]:
    """``(resource, requested, available)`` for the first pending pod of ``job`` that asks for
    more than the largest node has, or (no pods yet) for its ``minResources`` against the
    cluster's total; empty when every request could fit somewhere."""
    pending = sorted(job.tasks_in(TaskStatus.Pending).values(), key=lambda t: t.name)
    for task in pending:
        over = _over(cache, task.resreq, total=False)
        if over:
            return over
    if not job.tasks and job.has_min_resources():
        return _over(cache, job.min_resources(), total=True)
    return []


def _fmt(name: str, amount: float) -> str:
    if name == CPU:
        return format_quantity(amount, milli=True)
    if name == MEMORY:
        return format_quantity(amount, binary=True)
    whole = amount / 1000
    return format_quantity(whole, binary=True) if whole >= 1024 else format_quantity(amount, milli=True)


def unplaceable_reason(cache: SchedulerCache, job: JobInfo) -> str:
    """``Insufficient <resource>: a pod requests 10Gi, the largest node has 0`` (or, without
    pods, ``minResources`` against the cluster), or ``""`` when nothing is out of reach."""
    over = unplaceable_resources(cache, job)
    if not over:
        return ""
    name, amount, cap = over[0]
    where = ("a pod requests {a}, the largest node has {c}" if job.tasks
             else "minResources need {a}, the cluster has {c}")
    return f"{insufficient_reason([name])}: " + where.format(a=_fmt(name, amount), c=_fmt(name, cap))
