"""The queue controller (``pkg/controllers/queue``) on the virtual clock.

At construction it makes sure the built-in queues exist, as upstream's scheduler cache does
at start-up: ``root`` (weight 1, not reclaimable) and ``default`` (weight 1, reclaimable).

Queue states are **Open**, **Closing**, **Closed** and **Unknown** (an empty state is Open).
Requests come from queue additions and parent changes (sync), from PodGroup additions,
phase changes and deletions (sync of the PodGroup's queue), and from ``bus.volcano.sh``
Commands targeting a ``scheduling.volcano.sh/v1beta1`` Queue (the Command is deleted, then
``OpenQueue`` / ``CloseQueue`` is executed):

=========  =======================  ==============================================  =====================
state      OpenQueue                CloseQueue                                      sync
=========  =======================  ==============================================  =====================
Open       Open                     Closed if the queue has no PodGroups, else      keep
                                    Closing (children closed too)
Closing    Open (children reopened) Closed if no PodGroups, else Closing            Closed once empty
Closed     Open (children reopened) Closed                                          keep
Unknown    Open                     Closed / Closing as for Open                    keep
=========  =======================  ==============================================  =====================

"PodGroups" are those the controller has seen for the queue, in any phase. Hierarchy: a
queue without ``spec.parent`` gets ``root``; closing a queue closes its open children and
annotates them ``volcano.sh/closed-by-parent=true``; opening reopens the children it had
closed (a child cannot open under a closed parent); a sync closes a child whose parent is
Closed/Closing and reopens a parent-closed child whose parent is Open. ``root`` cannot be
closed.

Deviation (on purpose): upstream at this commit only publishes the per-phase PodGroup
counts as metrics; here they are also written to ``status.pending`` / ``running`` /
``unknown`` / ``inqueue`` / ``completed`` (merge patch on the status subresource, so the
scheduler's ``status.allocated`` is untouched), as older Volcano releases did.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from dataclasses import dataclass
from typing import Any

from pyvolcano.api.names import CLOSED_BY_PARENT_KEY, SCHEDULING_API_VERSION
from pyvolcano.controllers._common import WorkQueue, annotations_of, name_of, namespace_of, spec, status
from pyvolcano.store.base import AlreadyExists, NotFound, Store, StoreError, Unavailable, WatchEvent

__all__ = ["QueueController", "ensure_default_queues"]

logger = logging.getLogger(__name__)

OPEN, CLOSING, CLOSED, UNKNOWN = "Open", "Closing", "Closed", "Unknown"
OPEN_QUEUE, CLOSE_QUEUE, SYNC_QUEUE = "OpenQueue", "CloseQueue", "SyncQueue"
_COUNTED_PHASES = {"Pending": "pending", "Running": "running", "Unknown": "unknown", "Inqueue": "inqueue",
                   "Completed": "completed"}


def ensure_default_queues(store: Store, default_queue: str = "default") -> None:
    """Create ``root`` and the default queue if they do not exist (``newDefaultAndRootQueue``)."""
    for name, reclaimable in (("root", False), (default_queue, True)):
        try:
            store.get("Queue", None, name)
            continue
        except NotFound:
            pass
        with contextlib.suppress(AlreadyExists):
            store.create({
                "apiVersion": SCHEDULING_API_VERSION,
                "kind": "Queue",
                "metadata": {"name": name},
                "spec": {"reclaimable": reclaimable, "weight": 1},
            })


@dataclass(frozen=True, slots=True)
class _Request:
    seq: int
    queue: str
    action: str


@dataclass(frozen=True, slots=True)
class _Command:
    seq: int
    namespace: str
    name: str
    action: str
    target: str


class _QueueError(Exception):
    pass


class QueueController:
    """Maintains queue states and counts (see the module docstring).

    Args:
        store: the object store.
        max_requeue: ``--max-requeue-num`` (15; -1 = unlimited).
        create_default_queues: create ``root`` and ``default_queue`` now.
    """

    name = "queue-controller"

    def __init__(
        self,
        *,
        store: Store,
        max_requeue: int = 15,
        default_queue: str = "default",
        create_default_queues: bool = True,
    ):
        self.store = store
        self.max_requeue = -1 if max_requeue < 0 else max_requeue
        self.queue: WorkQueue[_Request] = WorkQueue(dedup=False, max_delay=1000.0)
        self.commands: WorkQueue[_Command] = WorkQueue(dedup=False, max_delay=1000.0)
        self._seq = itertools.count()
        self.now = 0.0
        # Queue name -> keys ("ns/name") of the PodGroups seen in it.
        self.pod_groups: dict[str, set[str]] = {}
        self._pg_seen: dict[str, dict[str, Any]] = {}
        # Queue name -> status field -> PodGroups seen in that phase (kept from the events,
        # as upstream's lister is; a sync does not walk the queue's PodGroups).
        self._phase_counts: dict[str, dict[str, int]] = {}
        self._queue_seen: dict[str, dict[str, Any]] = {}
        if create_default_queues:
            ensure_default_queues(store, default_queue)

    # ================================================================== events
    def _enqueue(self, queue: str, action: str) -> None:
        self.queue.add(_Request(next(self._seq), queue, action))

    def on_event(self, ev: WatchEvent) -> None:
        obj = ev.object
        if ev.kind == "Queue":
            name = name_of(obj)
            old = self._queue_seen.get(name)
            if ev.type == "DELETED":
                self._queue_seen.pop(name, None)
                self.pod_groups.pop(name, None)
                return
            self._queue_seen[name] = obj
            if ev.type == "ADDED" or old is None or spec(old).get("parent") != spec(obj).get("parent"):
                self._enqueue(name, SYNC_QUEUE)
        elif ev.kind == "PodGroup":
            key = f"{namespace_of(obj)}/{name_of(obj)}"
            old = self._pg_seen.get(key)
            queue = str(spec(obj).get("queue") or "")
            if old is not None:
                self._count(old, -1)
            if ev.type == "DELETED":
                self._pg_seen.pop(key, None)
                self.pod_groups.get(queue, set()).discard(key)
                self._enqueue(queue, SYNC_QUEUE)
                return
            self._pg_seen[key] = obj
            self._count(obj, 1)
            if ev.type == "ADDED" or old is None or status(old).get("phase") != status(obj).get("phase"):
                self.pod_groups.setdefault(queue, set()).add(key)
                self._enqueue(queue, SYNC_QUEUE)
        elif ev.kind == "Command" and ev.type == "ADDED":
            target = obj.get("target")
            if (
                isinstance(target, dict)
                and target.get("apiVersion") == SCHEDULING_API_VERSION
                and target.get("kind") == "Queue"
            ):
                self.commands.add(_Command(next(self._seq), namespace_of(obj), name_of(obj),
                                           str(obj.get("action", "")), str(target.get("name", ""))))

    def _count(self, pg: dict[str, Any], delta: int) -> None:
        field = _COUNTED_PHASES.get(str(status(pg).get("phase") or ""))
        if field is not None:
            counts = self._phase_counts.setdefault(str(spec(pg).get("queue") or ""), {})
            counts[field] = counts.get(field, 0) + delta

    # ================================================================== processing
    def run(self, now: float) -> float | None:
        self.now = now
        for _ in range(1000):
            worked = False
            for cmd in self.commands.drain(now):
                worked = True
                self._handle_command(cmd)
            for req in self.queue.drain(now):
                worked = True
                self._handle_request(req)
            if not worked:
                break
        times = [t for t in (self.queue.next_wakeup(), self.commands.next_wakeup()) if t is not None]
        return min(times, default=None)

    def _handle_command(self, cmd: _Command) -> None:
        try:
            self.store.delete("Command", cmd.namespace, cmd.name)
        except NotFound:
            return
        except StoreError as e:
            if isinstance(e, Unavailable):
                self.commands.add_unavailable(cmd, self.now)
            elif self.max_requeue == -1 or self.commands.num_requeues(cmd) < self.max_requeue:
                self.commands.add_rate_limited(cmd, self.now)
            else:
                logger.error("dropping command %s/%s: %s", cmd.namespace, cmd.name, e)
                self.commands.forget(cmd)
            return
        self.commands.forget(cmd)
        self._enqueue(cmd.target, cmd.action)

    def _handle_request(self, req: _Request) -> None:
        try:
            queue = self.store.get("Queue", None, req.queue)
        except NotFound:
            self.queue.forget(req)
            return
        try:
            self._execute(queue, req.action)
        except (StoreError, _QueueError) as e:
            if isinstance(e, Unavailable):
                self.queue.add_unavailable(req, self.now)
            elif self.max_requeue == -1 or self.queue.num_requeues(req) < self.max_requeue:
                self.queue.add_rate_limited(req, self.now)
            else:
                logger.warning("%s queue %s failed for %s", req.action, req.queue, e)
                self.queue.forget(req)
            return
        self.queue.forget(req)

    def _pod_group_list(self, queue: str) -> list[str]:
        return sorted(self.pod_groups.get(queue, ()))

    # ------------------------------------------------------------------ state machine
    def _execute(self, queue: dict[str, Any], action: str) -> None:
        state = str(status(queue).get("state") or "")
        if state not in ("", OPEN, CLOSING, CLOSED, UNKNOWN):
            raise _QueueError(f"queue {name_of(queue)} state {state} is invalid")
        state = state or OPEN

        def closed_or_closing(pgs: list[str]) -> str:
            return CLOSING if pgs else CLOSED

        if action == OPEN_QUEUE:
            if state == OPEN:
                return self._sync_queue(queue, lambda pgs: OPEN)
            return self._open_queue(queue)
        if action == CLOSE_QUEUE:
            if state == CLOSING:
                return self._sync_queue(queue, closed_or_closing)
            if state == CLOSED:
                return self._sync_queue(queue, lambda pgs: CLOSED)
            return self._close_queue(queue, closed_or_closing)
        current = str(status(queue).get("state") or "")

        def keep(pgs: list[str]) -> str:
            if state == OPEN:
                if current in ("", OPEN):
                    return OPEN
                return closed_or_closing(pgs) if current == CLOSED else UNKNOWN
            if state == CLOSING:
                return closed_or_closing(pgs)
            if state == CLOSED:
                return CLOSED
            # Unknown
            return closed_or_closing(pgs) if current == CLOSED else (OPEN if current == OPEN else UNKNOWN)

        return self._sync_queue(queue, keep)

    def _patch_state(self, queue: dict[str, Any], new_state: str) -> dict[str, Any]:
        return self.store.patch("Queue", None, name_of(queue), {"status": {"state": new_state}}, subresource="status")

    def _sync_queue(self, queue: dict[str, Any], next_state: Any) -> None:
        queue = self._ensure_parent(queue)
        name = name_of(queue)
        counts = dict.fromkeys(_COUNTED_PHASES.values(), 0)
        counts.update(self._phase_counts.get(name, {}))
        # The PodGroups seen in the queue; a deletion event removes its key (as the lister's).
        pgs = list(self.pod_groups.get(name, ()))
        new_state = next_state(pgs)
        st = status(queue)
        patch: dict[str, Any] = {}
        if new_state != str(st.get("state") or ""):
            patch["state"] = new_state
        for field, n in counts.items():
            if int(st.get(field) or 0) != n:
                patch[field] = n if n else None
        if patch:
            queue = self.store.patch("Queue", None, name, {"status": patch}, subresource="status")
        self._sync_hierarchy(queue)

    def _ensure_parent(self, queue: dict[str, Any]) -> dict[str, Any]:
        if name_of(queue) == "root" or spec(queue).get("parent"):
            return queue
        return self.store.patch("Queue", None, name_of(queue), {"spec": {"parent": "root"}})

    def _annotate(self, queue: dict[str, Any], value: str) -> dict[str, Any]:
        if annotations_of(queue).get(CLOSED_BY_PARENT_KEY) == value:
            return queue
        return self.store.patch("Queue", None, name_of(queue),
                                {"metadata": {"annotations": {CLOSED_BY_PARENT_KEY: value}}})

    def _children(self, parent: str) -> list[dict[str, Any]]:
        return [q for q in self.store.list("Queue") if spec(q).get("parent") == parent]

    def _sync_hierarchy(self, queue: dict[str, Any]) -> None:
        if name_of(queue) == "root":
            return
        parent_name = str(spec(queue).get("parent") or "")
        try:
            parent = self.store.get("Queue", None, parent_name)
        except NotFound as e:
            raise _QueueError(f"parent queue {parent_name} of queue {name_of(queue)} not found") from e
        parent_state = str(status(parent).get("state") or "")
        state = str(status(queue).get("state") or "")
        if parent_state in (CLOSED, CLOSING):
            if state not in (CLOSED, CLOSING):
                self._annotate(queue, "true")
                self._enqueue(name_of(queue), CLOSE_QUEUE)
        elif (
            parent_state == OPEN
            and state in (CLOSED, CLOSING)
            and annotations_of(queue).get(CLOSED_BY_PARENT_KEY) == "true"
        ):
            self._enqueue(name_of(queue), OPEN_QUEUE)

    def _open_queue(self, queue: dict[str, Any]) -> None:
        name = name_of(queue)
        if str(status(queue).get("state") or "") != OPEN:
            parent_name = str(spec(queue).get("parent") or "")
            if parent_name and parent_name != "root":
                try:
                    parent = self.store.get("Queue", None, parent_name)
                except NotFound as e:
                    raise _QueueError(f"Failed to get parent queue {parent_name} of queue {name}") from e
                if str(status(parent).get("state") or "") in (CLOSING, CLOSED):
                    raise _QueueError(
                        f"Failed to open queue {name} because its parent queue {parent_name} is closing or closed. "
                        "Open the parent queue first."
                    )
            for child in self._children(name):
                if annotations_of(child).get(CLOSED_BY_PARENT_KEY) == "true":
                    self._enqueue(name_of(child), OPEN_QUEUE)
        if str(status(queue).get("state") or "") != OPEN:
            queue = self._patch_state(queue, OPEN)
        self._annotate(queue, "false")

    def _close_queue(self, queue: dict[str, Any], next_state: Any) -> None:
        name = name_of(queue)
        if str(status(queue).get("state") or "") not in (CLOSED, CLOSING):
            if name == "root":
                return
            for child in self._children(name):
                if str(status(child).get("state") or "") not in (CLOSED, CLOSING):
                    self._annotate(child, "true")
                    self._enqueue(name_of(child), CLOSE_QUEUE)
        new_state = next_state(self._pod_group_list(name))
        if str(status(queue).get("state") or "") != new_state:
            self._patch_state(queue, new_state)
