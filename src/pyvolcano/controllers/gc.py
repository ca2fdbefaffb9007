"""The garbage collector for finished jobs (``pkg/controllers/garbagecollector``).

A vcjob with ``spec.ttlSecondsAfterFinished`` whose phase is Completed, Failed or Terminated
(not Aborted) is deleted, with foreground propagation, once ``status.state.lastTransitionTime
+ ttl`` has passed. The decision is re-checked on a fresh copy from the store right before
deleting. Until then the job is re-queued
for the moment it expires, which :meth:`GarbageCollector.run` reports as its next wake-up.
"""

from __future__ import annotations

import logging
from typing import Any

from pyvolcano.controllers._common import WorkQueue, meta, name_of, namespace_of, spec, status
from pyvolcano.store.base import NotFound, Store, StoreError, Unavailable, WatchEvent, from_rfc3339

__all__ = ["GarbageCollector", "needs_cleanup"]

logger = logging.getLogger(__name__)

_FINISHED = ("Completed", "Failed", "Terminated")


def needs_cleanup(job: dict[str, Any]) -> bool:
    return spec(job).get("ttlSecondsAfterFinished") is not None and (
        (status(job).get("state") or {}).get("phase") in _FINISHED
    )


class _TTLError(Exception):
    pass


class GarbageCollector:
    name = "gc-controller"

    def __init__(self, *, store: Store):
        self.store = store
        self.queue: WorkQueue[str] = WorkQueue(dedup=True, max_delay=1000.0)
        self._jobs: dict[str, dict[str, Any]] = {}
        self.now = 0.0

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind != "Job":
            return
        key = f"{namespace_of(ev.object)}/{name_of(ev.object)}"
        if ev.type == "DELETED":
            self._jobs.pop(key, None)
            return
        self._jobs[key] = ev.object
        if not meta(ev.object).get("deletionTimestamp") and needs_cleanup(ev.object):
            self.queue.add(key)

    def run(self, now: float) -> float | None:
        self.now = now
        for key in self.queue.drain(now):
            try:
                self._process(key)
            except (StoreError, _TTLError) as e:
                logger.error("error cleaning up job %s: %s", key, e)
                if isinstance(e, Unavailable):
                    self.queue.add_unavailable(key, now)
                else:
                    self.queue.add_rate_limited(key, now)
                continue
            self.queue.forget(key)
        return self.queue.next_wakeup()

    def _expired(self, key: str, job: dict[str, Any]) -> bool:
        """``processTTL``: True once expired; otherwise re-queue for the expiry time."""
        if meta(job).get("deletionTimestamp") or not needs_cleanup(job):
            return False
        finished = (status(job).get("state") or {}).get("lastTransitionTime")
        if not finished:
            raise _TTLError(f"unable to find the time when the Job {key} finished")
        try:
            expire_at = from_rfc3339(str(finished)) + float(spec(job)["ttlSecondsAfterFinished"])
        except (TypeError, ValueError) as e:
            raise _TTLError(f"job {key}: bad finish time or ttl: {e}") from e
        if expire_at <= self.now:
            return True
        self.queue.add_after(key, expire_at)
        return False

    def _process(self, key: str) -> None:
        cached = self._jobs.get(key)
        if cached is None or not self._expired(key, cached):
            return
        ns, _, name = key.partition("/")
        try:
            fresh = self.store.get("Job", ns, name)
        except NotFound:
            return
        if not self._expired(key, fresh):
            return
        logger.info("Cleaning up Job %s", key)
        try:
            self.store.delete("Job", ns, name, propagation="Foreground")
        except NotFound:
            return
