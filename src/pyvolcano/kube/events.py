"""Events (``events.k8s.io/v1``) with upstream's reasons and messages, written off the hot path.

The components record what upstream's do (``pkg/scheduler/cache/cache.go``): ``Scheduled``
(Normal, "Successfully assigned ns/pod to node") on a bound pod, ``FailedScheduling``
(Warning, the task's fit error) on a pending pod, ``Unschedulable`` (Warning,
"x/y tasks in gang unschedulable: ...") and ``Scheduled`` on PodGroups, ``Evict`` on an
evicted pod's PodGroup.

Like client-go's event correlator, a repeat of the same event (same object, type, reason
and note) does not create another Event: the first one's ``series`` is bumped instead, at
most once per ``series_interval`` seconds. Writes go through a small worker pool; a full
queue drops events (they are advisory) rather than slowing a session down. With
``workers=0`` (the simulator's) every event is written before :meth:`EventRecorder.event`
returns and Event names are numbered instead of random, so that a seeded run writes the same
Events every time.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import queue
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pyvolcano.store.base import Store, StoreError, to_rfc3339

__all__ = ["EventRecorder", "ObjectRef"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ObjectRef:
    kind: str
    api_version: str
    namespace: str
    name: str
    uid: str = ""

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ObjectRef:
        md = obj.get("metadata") or {}
        return cls(str(obj.get("kind", "")), str(obj.get("apiVersion", "")), str(md.get("namespace") or "default"),
                   str(md.get("name", "")), str(md.get("uid", "")))

    def to_dict(self) -> dict[str, str]:
        d = {"kind": self.kind, "apiVersion": self.api_version, "namespace": self.namespace, "name": self.name}
        if self.uid:
            d["uid"] = self.uid
        return d


def _micro(seconds: float) -> str:
    text = to_rfc3339(seconds)[:-1]
    whole, _, frac = text.partition(".")
    return f"{whole}.{frac:0<6}Z"


class EventRecorder:
    def __init__(self, store: Store, *, controller: str, instance: str, clock: Callable[[], float],
                 series_interval: float = 10.0, workers: int = 2, max_queue: int = 10_000):
        self.store = store
        self.controller = controller
        self.instance = instance
        self.clock = clock
        self.series_interval = series_interval
        self._seen: dict[tuple[Any, ...], tuple[str, int, float]] = {}  # key -> (event name, count, last write)
        self._lock = threading.Lock()
        self._inline = workers == 0
        self._created = 0
        self._queue: queue.Queue[Callable[[], None] | None] = queue.Queue(max_queue)
        self.dropped = 0
        self._threads = [threading.Thread(target=self._work, name=f"events-{i}", daemon=True) for i in range(workers)]
        for t in self._threads:
            t.start()

    def event(self, regarding: ObjectRef, type_: str, reason: str, note: str, action: str = "Scheduling") -> None:
        key = (regarding.kind, regarding.namespace, regarding.name, regarding.uid, type_, reason, note)
        now = self.clock()
        with self._lock:
            seen = self._seen.get(key)
            if seen is None:
                if self._inline:
                    self._created += 1
                    name = f"{regarding.name}.{self._created:016x}"
                else:
                    name = f"{regarding.name}.{uuid.uuid4().hex[:16]}"
                self._seen[key] = (name, 1, now)
                job: Callable[[], None] = functools.partial(self._create, name, regarding, type_, reason, note,
                                                            action, now)
            else:
                name, count, last = seen
                count += 1
                if now - last < self.series_interval:
                    self._seen[key] = (name, count, last)
                    return
                self._seen[key] = (name, count, now)
                job = functools.partial(self._bump, regarding.namespace, name, count, now)
            if len(self._seen) > 50_000:
                self._seen.clear()
        if self._inline:
            self._run(job)
            return
        try:
            self._queue.put_nowait(job)
        except queue.Full:
            self.dropped += 1

    def _create(self, name: str, ref: ObjectRef, type_: str, reason: str, note: str, action: str, now: float) -> None:
        self.store.create({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": name, "namespace": ref.namespace},
            "eventTime": _micro(now), "reportingController": self.controller, "reportingInstance": self.instance,
            "action": action, "reason": reason, "note": note[:1024], "type": type_, "regarding": ref.to_dict(),
        })

    def _bump(self, namespace: str, name: str, count: int, now: float) -> None:
        self.store.patch("Event", namespace, name, {"series": {"count": count, "lastObservedTime": _micro(now)}})

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            self._run(job)

    @staticmethod
    def _run(job: Callable[[], None]) -> None:
        try:
            job()
        except StoreError as e:
            logger.debug("event not written: %s", e)
        except Exception as e:  # an event must never take a component down
            logger.debug("event not written: %s", e)

    def flush(self, timeout: float = 5.0) -> None:
        """Wait (up to ``timeout``) until queued events are written (for tests and shutdown)."""
        if self._inline:
            return
        done = threading.Event()
        with contextlib.suppress(queue.Full):
            self._queue.put(done.set, timeout=timeout)
            done.wait(timeout)

    def close(self) -> None:
        for _ in self._threads:
            with contextlib.suppress(queue.Full):
                self._queue.put_nowait(None)
