"""The Job page: one PodGroup's ``job why`` diagnosis, its pods and nodes, its conditions and
recent Events.

``diagnosis`` is :meth:`Analysis.diagnoses`'s entry for the job (the document ``job why -o
json`` prints under ``diagnosis``: stage, reason code, message, hint, per-resource figures,
the nodes' predicate-failure histogram, the preemption analysis), None when nothing of the
job is pending. ``row`` is the job's line of the Jobs view (queue position, estimate).
``reservation`` is the nodes and start time the ``reservation`` plugin holds for the job
(:meth:`Analysis.reservations`), left out without one. ``events`` are the Events about the
PodGroup, its pods or its Volcano Job, newest first, at most :data:`MAX_EVENTS`; both ``v1``
Events (``involvedObject``, ``message``) and ``events.k8s.io/v1`` Events (``regarding``,
``note``) are read.
"""

from __future__ import annotations

from typing import Any

from pyvolcano.api.names import GROUP_NAME_KEY
from pyvolcano.dashboard.analysis import Analysis, object_time, user_amount
from pyvolcano.dashboard.jobs import jobs_view
from pyvolcano.store.base import from_rfc3339, to_rfc3339

__all__ = ["MAX_EVENTS", "event_row", "job_detail"]

MAX_EVENTS = 20


def _time(text: Any) -> float:
    if isinstance(text, str) and text:
        try:
            return from_rfc3339(text)
        except ValueError:
            return 0.0
    return 0.0


def event_row(ev: dict[str, Any]) -> dict[str, Any]:
    """One Event, either API version, as ``{time, type, reason, message, object, count}``."""
    target = ev.get("regarding") or ev.get("involvedObject") or {}
    series = ev.get("series") or {}
    when = max(_time(ev.get("eventTime")), _time(ev.get("lastTimestamp")), _time(ev.get("deprecatedLastTimestamp")),
               _time(series.get("lastObservedTime")), _time(ev.get("firstTimestamp")),
               _time((ev.get("metadata") or {}).get("creationTimestamp")))
    return {
        "time": to_rfc3339(when) if when else None, "seconds": when, "type": str(ev.get("type") or ""),
        "reason": str(ev.get("reason") or ""), "message": str(ev.get("note") or ev.get("message") or ""),
        "object": f"{target.get('kind', '')}/{target.get('name', '')}",
        "kind": str(target.get("kind") or ""), "name": str(target.get("name") or ""),
        "namespace": str(target.get("namespace") or (ev.get("metadata") or {}).get("namespace") or ""),
        "count": int(series.get("count") or ev.get("count") or ev.get("deprecatedCount") or 1),
    }


def job_detail(analysis: Analysis, key: str) -> dict[str, Any] | None:
    """The page of PodGroup ``key`` (``ns/name``), or None if the state has no such PodGroup."""
    cache = analysis.cache()
    job = cache.pg_jobs.get(key)
    pg = job.podgroup if job is not None else None
    if job is None or pg is None:
        return None
    row = next(r for r in jobs_view(analysis)["jobs"] if r["key"] == key)
    pods = []
    for t in sorted(job.tasks.values(), key=lambda t: t.name):
        pods.append({"name": t.name, "namespace": t.namespace, "role": t.role, "status": t.status.name,
                     "phase": t.pod.phase, "node": t.node_name or None,
                     "requests": {n: user_amount(n, v) for n, v in t.resreq.items() if v > 0 and n != "pods"}})
    pod_names = {p["name"] for p in pods}
    names = {("PodGroup", pg.name)} | {("Pod", n) for n in pod_names}
    if row["job"]:
        names.add(("Job", row["job"]))
    events = [event_row(e) for e in analysis.events]
    events = [e for e in events if e["namespace"] == pg.namespace and (e["kind"], e["name"]) in names]
    events.sort(key=lambda e: (-e["seconds"], e["object"], e["reason"]))
    conditions = [{"type": c.type, "status": c.status, "reason": c.reason, "message": c.message,
                   "time": object_time(c.last_transition_time)}
                  for c in pg.conditions]
    page: dict[str, Any] = {
        "key": key, "row": row, "min_member": pg.min_member, "phase": pg.phase, "queue": job.queue,
        "annotations": {k: v for k, v in sorted(pg.annotations.items()) if k != GROUP_NAME_KEY},
        "diagnosis": analysis.diagnoses().get(key), "pods": pods,
        "nodes": sorted({p["node"] for p in pods if p["node"]}), "conditions": conditions,
        "events": events[:MAX_EVENTS],
    }
    reservation = analysis.reservations().get(key)
    if reservation is not None:
        page["reservation"] = reservation
    return page
