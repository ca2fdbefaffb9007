"""The dashboard's writes, behind ``--allow-actions``: upstream vcctl's job and queue operations.

Each action is the vcctl operation of :mod:`pyvolcano.controllers.commands` on the live source's
store, so it runs with the credentials of the kubeconfig the dashboard was started with and
the API server's RBAC decides: ``suspend`` / ``resume`` create an ``AbortJob`` /
``ResumeJob`` Command for a Volcano Job, ``delete`` deletes it, ``open`` / ``close`` create an
``OpenQueue`` / ``CloseQueue`` Command for a Queue. :func:`perform` returns the HTTP status and
the answer to show: 200 with what was created or deleted, or the API server's refusal with its
code (403 Forbidden, 404 NotFound, 409 Conflict, ...). With actions off, or on a source that
cannot be written (a snapshot, a simulation run), the answer is 403 and says why.
"""

from __future__ import annotations

from typing import Any

from pyvolcano.controllers.commands import delete_job, operate_job, operate_queue
from pyvolcano.store.base import AlreadyExists, Conflict, Forbidden, Invalid, NotFound, Store, StoreError

__all__ = ["JOB_VERBS", "QUEUE_VERBS", "perform"]

JOB_VERBS = ("suspend", "resume", "delete")
QUEUE_VERBS = ("open", "close")


def _code(e: StoreError) -> int:
    code = getattr(e, "code", None)
    if isinstance(code, int) and 400 <= code < 600:
        return code
    for cls, status in ((NotFound, 404), (Forbidden, 403), (AlreadyExists, 409), (Conflict, 409), (Invalid, 422)):
        if isinstance(e, cls):
            return status
    return 500


def perform(store: Store | None, request: dict[str, Any], *, allowed: bool) -> tuple[int, dict[str, Any]]:
    """Run one action request ``{"target": "job"|"queue", "verb", "namespace"?, "name"}``."""
    if not allowed:
        return 403, {"ok": False, "message": "actions are disabled: start the dashboard with --allow-actions"}
    if store is None:
        return 403, {"ok": False, "message": "this source is read-only: actions need a live cluster"}
    target, verb, name = request.get("target"), request.get("verb"), request.get("name")
    namespace = request.get("namespace") or "default"
    if not isinstance(name, str) or not name or not isinstance(namespace, str):
        return 400, {"ok": False, "message": "expected a name (and for a job, a namespace)"}
    try:
        if target == "job" and verb in JOB_VERBS:
            if verb == "delete":
                delete_job(store, namespace, name)
                return 200, {"ok": True, "message": f"deleted job {namespace}/{name}"}
            cmd = operate_job(store, namespace, name, str(verb))
            created = (cmd.get("metadata") or {}).get("name", "")
            return 200, {"ok": True, "message": f"{verb}: created Command {namespace}/{created} ({cmd.get('action')})"}
        if target == "queue" and verb in QUEUE_VERBS:
            cmd = operate_queue(store, name, str(verb))
            created = (cmd.get("metadata") or {}).get("name", "")
            return 200, {"ok": True, "message": f"{verb}: created Command default/{created} ({cmd.get('action')})"}
    except StoreError as e:
        return _code(e), {"ok": False, "message": str(e), "code": _code(e)}
    return 400, {"ok": False, "message": f"unknown action {target!r} {verb!r}; expected job {'|'.join(JOB_VERBS)} "
                 f"or queue {'|'.join(QUEUE_VERBS)}"}
