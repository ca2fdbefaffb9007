"""The Jobs view: every PodGroup with its queue, phase, age and, for a pending one, its
reason code, position and estimated start exactly as ``queue top`` computes them.

Rows are sorted by namespace and name (the front-end sorts and filters). ``position`` and
``queue_position`` count in the order the scheduler considers the pending jobs; ``start`` is
an RFC 3339 time, or None with ``start_message`` saying why (never, unknown runtimes). A job
that is not pending has no reason, position or estimate. ``job`` names the owning Volcano Job
when the PodGroup has one (``ownerReferences``), for the actions.
"""

from __future__ import annotations

import contextlib
from typing import Any

from pyvolcano.dashboard.analysis import Analysis
from pyvolcano.store.base import from_rfc3339

__all__ = ["jobs_view", "owner_job"]


def owner_job(refs: list[dict[str, Any]] | None) -> str | None:
    """The name of the Volcano Job in ``ownerReferences``, if any."""
    for ref in refs or []:
        if ref.get("kind") == "Job" and str(ref.get("apiVersion", "")).startswith("batch.volcano.sh/"):
            name = ref.get("name")
            return str(name) if name else None
    return None


def _owners_and_times(analysis: Analysis) -> tuple[dict[str, str], dict[str, float]]:
    """PodGroup key → its Volcano Job; → its creation time in the state's clock (``now``'s)."""
    owners: dict[str, str] = {}
    created: dict[str, float] = {}
    for d in analysis.state.docs:
        if d.get("kind") != "PodGroup":
            continue
        md = d.get("metadata") or {}
        key = f"{md.get('namespace', 'default')}/{md.get('name')}"
        name = owner_job(md.get("ownerReferences"))
        if name:
            owners[key] = name
        with contextlib.suppress(KeyError, ValueError):
            created[key] = from_rfc3339(md["creationTimestamp"])
    return owners, created


def jobs_view(analysis: Analysis) -> dict[str, Any]:
    """``{"now": seconds, "jobs": [...]}``."""
    now = analysis.state.now
    top = analysis.top()
    pending = {e["job"]: e for e in top["pending"]}
    owners, created = _owners_and_times(analysis)
    rows = []
    for pg in sorted(analysis.state.objects.podgroups, key=lambda p: (p.namespace, p.name)):
        key = pg.key
        e = pending.get(key)
        rows.append({
            "key": key, "namespace": pg.namespace, "name": pg.name, "job": owners.get(key), "queue": pg.queue or
            "default", "phase": pg.phase, "min_member": pg.min_member,
            "age_seconds": None if key not in created else round(max(now - created[key], 0.0), 3),
            "reason": None if e is None else e["reason"], "hint": None if e is None else e["hint"],
            "position": None if e is None else e["position"],
            "queue_position": None if e is None else e["queue_position"],
            "start": None if e is None else e["start"],
            "start_in_seconds": None if e is None else e["start_in_seconds"],
            "start_message": None if e is None else e["message"],
        })
    return {"now": top["now"], "jobs": rows}
