"""Helpers shared by queue-quota plugins (upstream pkg/scheduler/plugins/util/util.go)."""

from __future__ import annotations

import math

from pyvolcano.api.job import JobInfo
from pyvolcano.api.resource import CPU, MEMORY, PODS, Resource, is_scalar_resource_name
from pyvolcano.api.task import ALLOCATED_STATUS

__all__ = [
    "calculate_allocated_task_num",
    "capability_resource",
    "inqueue_resource",
    "max_resource",
    "queue_reservation",
    "replicas_within",
    "running_reservation",
]


def calculate_allocated_task_num(job: JobInfo) -> int:
    return job.count(ALLOCATED_STATUS)


def replicas_within(allocated: Resource, limit: Resource, req: Resource, k: int) -> int:
    """How many of ``k`` replicas requesting ``req`` pass, one after another, the check
    ``allocated + req`` ≤ ``limit`` (``Resource.less_equal_with_dimension``: the dimensions
    where ``req`` > 0, ``pods`` aside, no ε), ``allocated`` growing by ``req`` after each
    admitted one as its allocate event adds it. The sums are formed one addition at a time,
    as the events form them, so the count is the per-replica verdicts' exactly.
    """
    dims: list[tuple[float, float]] = []
    values: list[float] = []
    if req.milli_cpu > 0:
        dims.append((req.milli_cpu, limit.milli_cpu))
        values.append(allocated.milli_cpu)
    if req.memory > 0:
        dims.append((req.memory, limit.memory))
        values.append(allocated.memory)
    for name, v in req.scalars.items():
        if name == PODS or v <= 0:
            continue
        dims.append((v, limit.scalars.get(name, 0.0)))
        values.append(allocated.scalars.get(name, 0.0))
    if not dims:
        return k
    exact = _exact_count(dims, values, k)
    if exact is not None:
        return exact
    n = 0
    while n < k:
        for j, (v, bound) in enumerate(dims):
            if values[j] + v > bound:
                return n
        for j, (v, _bound) in enumerate(dims):
            values[j] += v
        n += 1
    return n


_EXACT = float(2**53)


def _exact_count(dims: list[tuple[float, float]], values: list[float], k: int) -> int | None:
    """:func:`replicas_within`'s count without the loop, where every sum is exact: integral
    start and step with ``start + k * step`` below 2**53, so the sum after ``i`` additions
    is ``start + i * step`` exactly; None otherwise."""
    n = k
    for (v, bound), x in zip(dims, values, strict=True):
        if not (x.is_integer() and v.is_integer() and abs(x) + k * v < _EXACT and math.isfinite(bound)):
            return None
        # The largest c with x + c * v <= bound (exact integer products, compared exactly).
        c = math.floor((bound - x) / v)
        c = max(min(c, k), -1)
        while c >= 0 and x + c * v > bound:
            c -= 1
        while c < k and x + (c + 1) * v <= bound:
            c += 1
        # Replica i passes while x + (i + 1) * v <= bound: c of them.
        n = min(n, max(c, 0))
    return n


def running_reservation(job: JobInfo) -> Resource | None:
    """What a Running PodGroup still reserves: minResources not covered by its allocated tasks,
    gated pods deducted; None when it reserves nothing.

    Upstream (plugins/overcommit/overcommit.go, plugins/proportion/proportion.go): only while
    the gang holds minMember allocated tasks, so a group whose gang finished (e.g. a completed
    Spark driver) does not reserve again.
    """
    pg = job.podgroup
    if pg is None or pg.phase != "Running" or pg.min_resources is None:
        return None
    if calculate_allocated_task_num(job) < pg.min_member:
        return None
    return job.deduct_sch_gated_resources(inqueue_resource(job, job.allocated))


def queue_reservation(job: JobInfo) -> Resource | None:
    """A job's part of its queue's ``inqueue`` (proportion, capacity): for an Inqueue PodGroup,
    and for a Running one as :func:`running_reservation`, minResources not covered by its
    allocated tasks, gated pods deducted; None when it reserves nothing."""
    pg = job.podgroup
    if pg is not None and pg.phase == "Inqueue" and pg.min_resources is not None:
        return job.deduct_sch_gated_resources(inqueue_resource(job, job.allocated))
    return running_reservation(job)


def inqueue_resource(job: JobInfo, allocated: Resource) -> Resource:
    """Upstream ``GetInqueueResource``: min resources not yet covered by allocated tasks."""
    assert job.podgroup is not None and job.podgroup.min_resources is not None
    min_res = job.min_resources()
    out = Resource()
    for name in job.podgroup.min_resources:
        if name == CPU:
            out.milli_cpu = max(min_res.milli_cpu - allocated.milli_cpu, 0.0)
        elif name == MEMORY:
            out.memory = max(min_res.memory - allocated.memory, 0.0)
        elif name == PODS:
            reserved = min_res.scalars.get(PODS, 0.0) - allocated.scalars.get(PODS, 0.0)
            if reserved > 0:
                out.scalars[PODS] = reserved
        else:
            if name.startswith("count/") or not is_scalar_resource_name(name):
                continue
            reserved = min_res.scalars.get(name, 0.0)
            if name not in allocated.scalars:
                out.scalars[name] = reserved
            elif reserved - allocated.scalars[name] > 0:
                out.scalars[name] = reserved - allocated.scalars[name]
    return out


def max_resource(l: Resource, r: Resource) -> Resource:
    """Upstream ``helpers.Max``: per-dimension max; negative scalars are ignored."""
    out = Resource(max(l.milli_cpu, r.milli_cpu), max(l.memory, r.memory))
    for n, v in l.scalars.items():
        if v >= 0:
            out.scalars[n] = v
    for n, v in r.scalars.items():
        if v >= 0:
            out.scalars[n] = max(v, out.scalars.get(n, 0.0))
    return out


def capability_resource(rl: dict[str, object] | None) -> Resource | None:
    """A queue capability: cpu/memory ≤ 0 mean unlimited (``math.MaxFloat64``)."""
    if not rl:
        return None
    cap = Resource.from_list(rl)
    if cap.milli_cpu <= 0:
        cap.milli_cpu = _MAX_FLOAT
    if cap.memory <= 0:
        cap.memory = _MAX_FLOAT
    return cap


_MAX_FLOAT = 1.7976931348623157e308
assert math.isfinite(_MAX_FLOAT)
