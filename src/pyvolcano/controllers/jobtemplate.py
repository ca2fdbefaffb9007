"""The JobTemplate controller (``pkg/controllers/jobtemplate``): which jobs a template made.

A JobTemplate's ``status.jobDependsOnList`` lists the Volcano Jobs of its namespace labelled
``volcano.sh/createdByJobTemplate: <namespace>.<template>`` (the JobFlow controller labels the
jobs it makes so). A sync is requested when a JobTemplate is added and when such a job is
added; a template without jobs keeps its status. As upstream's handler, a label value that does
not split on ``.`` into exactly two parts (a template name with a dot) requests nothing, and a
deleted job leaves the list until the next request. The list is sorted by name (upstream's
follows its lister's map order).
"""

from __future__ import annotations

import logging
from typing import Any

from pyvolcano.api.jobflow import object_string
from pyvolcano.api.names import CREATED_BY_JOB_TEMPLATE_KEY
from pyvolcano.controllers._common import WorkQueue, labels_of, name_of, namespace_of, status
from pyvolcano.store.base import NotFound, Store, StoreError, Unavailable, WatchEvent, clone

__all__ = ["JobTemplateController"]

logger = logging.getLogger(__name__)


class JobTemplateController:
    """Keeps ``status.jobDependsOnList`` of ``flow.volcano.sh/v1alpha1`` JobTemplates.

    Args:
        store: the object store.
        max_requeue: ``--max-requeue-num`` (15; -1 = unlimited).
    """

    name = "jobtemplate-controller"
    watches = frozenset({"JobTemplate", "Job"})

    def __init__(self, *, store: Store, max_requeue: int = 15):
        self.store = store
        self.max_requeue = -1 if max_requeue < 0 else max_requeue
        self.queue: WorkQueue[str] = WorkQueue(dedup=True, max_delay=1000.0)
        self._templates: dict[str, dict[str, Any]] = {}
        # Jobs labelled createdByJobTemplate, by the label's value then job name.
        self._jobs: dict[str, dict[str, str]] = {}

    def on_event(self, ev: WatchEvent) -> None:
        obj = ev.object
        if ev.kind == "JobTemplate":
            key = f"{namespace_of(obj)}/{name_of(obj)}"
            if ev.type == "DELETED":
                self._templates.pop(key, None)
                return
            self._templates[key] = obj
            if ev.type == "ADDED":
                self.queue.add(key)
        elif ev.kind == "Job":
            label = labels_of(obj).get(CREATED_BY_JOB_TEMPLATE_KEY)
            if not isinstance(label, str) or not label:
                return
            jobs = self._jobs.setdefault(label, {})
            if ev.type == "DELETED":
                jobs.pop(f"{namespace_of(obj)}/{name_of(obj)}", None)
                return
            jobs[f"{namespace_of(obj)}/{name_of(obj)}"] = name_of(obj)
            parts = label.split(".")
            if ev.type == "ADDED" and len(parts) == 2:
                self.queue.add(f"{parts[0]}/{parts[1]}")

    def run(self, now: float) -> float | None:
        if self.queue.idle():
            return None
        for key in self.queue.drain(now):
            try:
                self._sync(key)
            except StoreError as e:
                if isinstance(e, Unavailable):
                    self.queue.add_unavailable(key, now)
                elif self.max_requeue == -1 or self.queue.num_requeues(key) < self.max_requeue:
                    logger.info("Error syncing JobTemplate %s: %s", key, e)
                    self.queue.add_rate_limited(key, now)
                else:
                    logger.warning("Dropping JobTemplate %s out of the queue: %s", key, e)
                    self.queue.forget(key)
                continue
            self.queue.forget(key)
        return self.queue.next_wakeup()

    def _sync(self, key: str) -> None:
        cached = self._templates.get(key)
        if cached is None:
            return
        ns = namespace_of(cached)
        jobs = self._jobs.get(object_string(ns, name_of(cached)), {})
        names = sorted(name for job_key, name in jobs.items() if job_key.startswith(f"{ns}/"))
        if not names or status(cached).get("jobDependsOnList") == names:
            return
        template = clone(cached)
        template.setdefault("status", {})["jobDependsOnList"] = names
        try:
            self.store.update_status(template)
        except NotFound:
            return
