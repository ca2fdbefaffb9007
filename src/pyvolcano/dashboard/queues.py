"""The Queues view: the queue hierarchy with each queue's figures per resource.

One row per queue, in depth-first order of the hierarchy (children by name), each with its
``parent``, ``depth`` and ``children``; a queue whose parent is not given hangs under
``root`` when a ``root`` queue exists (upstream's hierarchy), else it is a root itself.

Per resource (cpu in cores, memory in bytes, extended resources in units such as GPUs; the
``pods`` dimension is left out): ``allocated``, ``deserved``, ``guarantee`` and
``capability``. ``allocated``, ``deserved`` and ``capability`` are the configured quota
plugin's figures for the session (:meth:`Analysis.quotas`: proportion's or capacity's
computation, not a copy of it); ``guarantee`` is the queue's spec. ``deserved`` and
``capability`` are None when unknown or unlimited. Without a quota plugin ``allocated`` is the
sum of the queue's jobs' allocations and ``deserved`` is the spec's, if any.
"""

from __future__ import annotations

from typing import Any

from pyvolcano.api.resource import Resource
from pyvolcano.dashboard.analysis import Analysis, user_amount
from pyvolcano.diagnosis.model import UNLIMITED

__all__ = ["PENDING_PHASES", "queues_view"]

PENDING_PHASES = ("Pending", "Inqueue")
HIDDEN = ("pods",)


def _dims(resources: list[Resource | None]) -> list[str]:
    names: list[str] = []
    for r in resources:
        if r is None:
            continue
        for name, v in r.items():
            if name not in names and name not in HIDDEN and (v > 0 and v < UNLIMITED):
                names.append(name)
    head = [n for n in ("cpu", "memory") if n in names]
    return head + sorted(n for n in names if n not in head)


def _value(r: Resource | None, name: str) -> float | None:
    if r is None:
        return None
    v = r.get(name)
    return None if v >= UNLIMITED else user_amount(name, v)


def queues_view(analysis: Analysis) -> dict[str, Any]:
    """``{"queues": [...], "plugin": "proportion" | "capacity" | None}``."""
    cache = analysis.cache()
    quotas = analysis.quotas()
    counts: dict[str, dict[str, int]] = {}
    summed: dict[str, Resource] = {}
    for job in cache.pg_jobs.values():
        if job.podgroup is None:
            continue
        by_phase = counts.setdefault(job.queue, {})
        by_phase[job.podgroup.phase] = by_phase.get(job.podgroup.phase, 0) + 1
        summed[job.queue] = summed.get(job.queue, Resource()).add(job.allocated)
    infos = cache.queues
    parent_of: dict[str, str | None] = {}
    for name, q in infos.items():
        parent = q.parent or ("root" if "root" in infos and name != "root" else None)
        parent_of[name] = parent if parent in infos else None
    children: dict[str | None, list[str]] = {}
    for name in sorted(infos):
        children.setdefault(parent_of[name], []).append(name)
    rows: list[dict[str, Any]] = []

    def visit(name: str, depth: int) -> None:
        q = infos[name]
        quota = quotas.get(name)
        allocated = quota.allocated if quota is not None else summed.get(name, Resource())
        deserved = quota.deserved if quota is not None else q.deserved()
        capability = quota.capability if quota is not None else q.capability()
        guarantee = None if q.queue.guarantee is None else Resource.from_list(q.queue.guarantee)
        phases = counts.get(name, {})
        rows.append({
            "name": name, "parent": parent_of[name], "depth": depth, "children": children.get(name, []),
            "state": q.state, "weight": q.weight, "priority": q.priority, "reclaimable": q.reclaimable,
            "running": phases.get("Running", 0), "pending": sum(phases.get(p, 0) for p in PENDING_PHASES),
            "phases": dict(sorted(phases.items())),
            "resources": [{"name": n, "allocated": _value(allocated, n), "deserved": _value(deserved, n),
                           "guarantee": _value(guarantee, n), "capability": _value(capability, n)}
                          for n in _dims([allocated, deserved, guarantee, capability])],
        })
        for child in children.get(name, []):
            visit(child, depth + 1)

    for root in children.get(None, []):
        visit(root, 0)
    plugin = next(iter(quotas.values())).plugin if quotas else None
    return {"queues": rows, "plugin": plugin}
