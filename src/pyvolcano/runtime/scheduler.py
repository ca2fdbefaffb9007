"""The live scheduler loop (upstream's ``pkg/scheduler/scheduler.go`` on a wall clock).

Every ``--schedule-period`` it folds the informers' events into the
:class:`~pyvolcano.cache.cache.SchedulerCache`, runs one session (the same
``SchedulerCache.run_session`` the simulator runs) and writes its decisions:

* **binds** go to a worker pool and never hold up the next session. The cache treats a bind
  as done once it is sent (upstream's "assumed" pod); if the API server refuses it (a 409
  because the pod is already bound, a deleted pod, a node gone), the failure is handed back
  to the loop, which re-reads the pod from the informer cache so the assumption is dropped
  and the pod is scheduled again. A refused bind is not retried as such.
* **evictions** are pod deletions with the pod's own grace period, as upstream's
  ``Evict`` does;
* **PodGroup status** is written at session close, and only for PodGroups whose status
  changed in the session.

The configuration file is re-read when it changes (upstream watches it and reloads it before
the next session); a file that fails to load keeps the previous configuration and logs why.
Nothing here reads the wall clock except through ``clock``.

An optional ``recorder`` (:class:`pyvolcano.runtime.recorder.SessionRecorder`, from
``--record DIR``) sees every event folded into the cache and keeps each session's inputs and
decisions, so that ``pyvolcano replay`` can re-run the session.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pyvolcano.api.names import SCHEDULER_KINDS
from pyvolcano.api.task import TaskStatus
from pyvolcano.cache.cache import BindRequest, SchedulerCache, SchedulerOptions, SessionResult
from pyvolcano.cache.ingest import apply_event, podgroup_status, resync_pod
from pyvolcano.conf import ConfigError, default_configuration, load_configuration
from pyvolcano.conf.schema import SchedulerConfiguration
from pyvolcano.framework.registry import Registry, default_registry
from pyvolcano.kube.events import ObjectRef
from pyvolcano.runtime.clock import wall_seconds
from pyvolcano.store.base import Compactable, Store, StoreError, to_rfc3339

__all__ = ["LiveScheduler", "SessionReport"]

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class SessionReport:
    """What one live session did (for logs, metrics and tests)."""

    at: float
    seconds: float
    result: SessionResult
    bind_failures: list[tuple[str, str]] = field(default_factory=list)


def _pod_ref(ns: str, name: str, uid: str) -> ObjectRef:
    return ObjectRef("Pod", "v1", ns, name, uid)


class LiveScheduler:
    def __init__(self, store: Store, *, conf_path: Path | None = None, registry: Registry | None = None,
                 options: SchedulerOptions | None = None, period: float = 1.0, seed: int | None = None,
                 bind_workers: int = 16, clock: Callable[[], float] = wall_seconds,
                 timer: Callable[[], float] = time.perf_counter, metrics: Any = None,
                 node_selector: Collection[str] = (), events: Any = None, recorder: Any = None):
        self.store = store
        self.registry = registry or default_registry()
        self.conf_path = conf_path
        self.options = options or SchedulerOptions()
        self.period = period
        self.clock = clock
        self.timer = timer
        self.metrics = metrics  # a pyvolcano.metrics.scheduler.SchedulerMetrics, or None
        self._observer: Any = None
        if metrics is not None:
            from pyvolcano.metrics.scheduler import SessionMetricsObserver

            self._observer = SessionMetricsObserver(metrics, timer)
        # --node-selector key:value pairs: a node is ours when any of its labels is listed.
        self.node_selector = frozenset(node_selector)
        self.events = events  # an EventRecorder, or None
        self.recorder = recorder  # a pyvolcano.runtime.recorder.SessionRecorder, or None
        self._pod_conditions: dict[str, tuple[str, str]] = {}  # pod uid -> (reason, message) written
        self.rng = np.random.default_rng(seed)
        self.cache = SchedulerCache(self.options)
        self.cache.evictions_delete_immediately = False
        self.revision = 0
        self.sessions = 0
        self.binds_sent = 0
        self.binds_failed = 0
        self._conf_stamp: tuple[int, int] | None = None
        self.config: SchedulerConfiguration = default_configuration()
        self.config_text: str | None = None  # the text self.config was loaded from (None: the default)
        self._plugins: Any = None
        self._actions: Any = None
        self._load_config(initial=True)
        self._pool = ThreadPoolExecutor(max_workers=bind_workers, thread_name_prefix="bind")
        self._status_pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="status")
        self._failures: queue.SimpleQueue[tuple[str, str, str]] = queue.SimpleQueue()
        self._inflight = 0
        self._inflight_lock = threading.Lock()

    # ------------------------------------------------------------------ configuration
    def _stamp(self) -> tuple[int, int] | None:
        if self.conf_path is None:
            return None
        try:
            st = os.stat(self.conf_path)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def _load_config(self, *, initial: bool = False) -> None:
        stamp = self._stamp()
        if not initial and stamp == self._conf_stamp:
            return
        try:
            text = None
            if self.conf_path is not None:
                with contextlib.suppress(OSError, UnicodeDecodeError):
                    text = Path(self.conf_path).read_text(encoding="utf-8")
            # Without the text, the file loader says why the file cannot be read.
            config = load_configuration(self.registry, self.conf_path, text=text)
            plugins = self.registry.plugin_factories(config.plugin_names())
            actions = self.registry.action_factories(config.actions)
        except (ConfigError, OSError) as e:
            if initial:
                raise
            logger.error("scheduler configuration %s not reloaded: %s", self.conf_path, e)
            self._conf_stamp = stamp
            return
        if not initial:
            logger.info("scheduler configuration %s reloaded: actions %s", self.conf_path, ", ".join(config.actions))
        self.config, self._plugins, self._actions, self._conf_stamp = config, plugins, actions, stamp
        self.config_text = text

    # ------------------------------------------------------------------ one session
    def ingest(self) -> int:
        events = self.store.watch(self.revision, SCHEDULER_KINDS)
        for ev in events:
            if ev.kind == "Node" and self.node_selector and not self._selected(ev.object):
                continue  # upstream's nodeCanAddCache: ignored on add, update and delete
            if self.recorder is not None:
                self.recorder.observe(ev.type, ev.kind, ev.object)
            apply_event(self.cache, ev.type, ev.kind, ev.object)
        self.revision = max(self.revision, self.store.revision if not events else events[-1].revision)
        if isinstance(self.store, Compactable):
            self.store.compact(self.revision)
        return len(events)

    def _selected(self, node: Mapping[str, Any]) -> bool:
        labels = (node.get("metadata") or {}).get("labels") or {}
        return any(f"{k}:{v}" in self.node_selector for k, v in labels.items())

    def _drop_failed_assumptions(self) -> list[tuple[str, str]]:
        failed: list[tuple[str, str]] = []
        while True:
            try:
                ns, name, why = self._failures.get_nowait()
            except queue.Empty:
                return failed
            failed.append((f"{ns}/{name}", why))
            self._resync_pod(ns, name)

    def _resync_pod(self, ns: str, name: str) -> None:
        obj = resync_pod(self.cache, self.store, ns, name)
        if self.recorder is not None:
            self.recorder.observe("DELETED" if obj is None else "MODIFIED", "Pod",
                                  obj or {"metadata": {"namespace": ns, "name": name}})

    def run_once(self) -> SessionReport:
        self._load_config()
        self.ingest()
        failures = self._drop_failed_assumptions()
        now = self.clock()
        capture = None if self.recorder is None else self.recorder.capture(
            self.cache, now=now, rng=self.rng, config_text=self.config_text, options=self.options)
        t0 = self.timer()
        result = self.cache.run_session(self.config, self._plugins, self._actions, now=now, rng=self.rng,
                                        observer=self._observer)
        self.sessions += 1
        self._write(result, now)
        seconds = self.timer() - t0
        if capture is not None:
            try:
                self.recorder.commit(capture, result)
            except OSError as e:  # a full disk must not stop scheduling
                logger.error("recorder: session %d not recorded: %s", self.sessions, e)
        if self.metrics is not None:
            self.metrics.update_e2e_duration(seconds)
            self.metrics.observe_result(result)
            if failures:
                self.metrics.register_schedule_attempts("error", len(failures))
        return SessionReport(now, seconds, result, failures)

    # ------------------------------------------------------------------ writing decisions
    def _write(self, result: SessionResult, now: float) -> None:
        for b in result.bind_requests:
            self._submit_bind(b)
        for ns, name, reason in result.evict_requests:
            logger.info("evicting %s/%s: %s", ns, name, reason)
            self._pool.submit(self._evict, ns, name)
            if self.events is not None:
                self._evict_event(ns, name, reason)
        for key, node in result.nominated.items():
            ns, name = key.split("/", 1)
            self._pool.submit(self._nominate, ns, name, node)
        # upstream's jobUpdater: the changed PodGroups are written by 16 workers, and the session
        # closes when they are all written (so two sessions' writes of one PodGroup never race)
        futures = [self._status_pool.submit(self._write_podgroup, pg) for pg in result.changed_podgroups]
        for f in futures:
            f.result()
        self._write_pod_conditions()

    def _write_podgroup(self, pg: Any) -> None:
        status = podgroup_status(pg)
        try:
            self.store.patch("PodGroup", pg.namespace, pg.name, {"status": status}, subresource="status")
        except StoreError as e:
            logger.warning("PodGroup %s/%s status not written: %s", pg.namespace, pg.name, e)
        if self.events is not None:
            self._podgroup_event(pg)

    # ------------------------------------------------------------------ what users see in kubectl describe
    def _podgroup_event(self, pg: Any) -> None:
        ref = ObjectRef("PodGroup", "scheduling.volcano.sh/v1beta1", pg.namespace, pg.name, pg.uid)
        if pg.phase in ("Pending", "Inqueue", "Unknown"):
            for c in pg.conditions:
                if c.type == "Unschedulable" and c.status == "True":
                    self.events.event(ref, "Warning", "Unschedulable", c.message)
        elif pg.phase == "Running":
            self.events.event(ref, "Normal", "Scheduled", "pod group is ready")

    def _evict_event(self, ns: str, name: str, reason: str) -> None:
        for t in self.cache.tasks.values():
            if t.namespace == ns and t.name == name:
                job = self.cache.jobs.get(t.job) if t.job else None
                pg = getattr(job, "podgroup", None)
                if pg is not None:
                    ref = ObjectRef("PodGroup", "scheduling.volcano.sh/v1beta1", pg.namespace, pg.name, pg.uid)
                    self.events.event(ref, "Normal", "Evict", reason, action="Preempting")
                return

    def _write_pod_conditions(self) -> None:
        """Pending pods of unschedulable gangs get upstream's PodScheduled=False condition (and a
        FailedScheduling event) when its reason or message changed (``taskUnschedulable``)."""
        seen: set[str] = set()
        for job in self.cache.pg_jobs.values():
            pg = job.podgroup
            if pg is None or pg.phase not in ("Pending", "Inqueue", "Unknown"):
                continue
            for status in (TaskStatus.Pending, TaskStatus.Allocated, TaskStatus.Pipelined):
                for task in job.tasks_in(status).values():
                    if task.sch_gated:
                        continue
                    cond = next((c for c in task.pod.conditions if c.get("type") == "PodScheduled"), None)
                    if cond is None or cond.get("status") != "False":
                        continue
                    seen.add(task.uid)
                    want = (str(cond.get("reason") or ""), str(cond.get("message") or ""))
                    if self._pod_conditions.get(task.uid) == want:
                        continue
                    self._pod_conditions[task.uid] = want
                    self._pool.submit(self._patch_condition, task.namespace, task.name, want)
                    if self.events is not None:
                        self.events.event(_pod_ref(task.namespace, task.name, task.uid), "Warning",
                                          "FailedScheduling", want[1])
        for uid in [u for u in self._pod_conditions if u not in seen]:
            del self._pod_conditions[uid]

    def _patch_condition(self, ns: str, name: str, want: tuple[str, str]) -> None:
        cond = {"type": "PodScheduled", "status": "False", "reason": want[0], "message": want[1],
                "lastTransitionTime": to_rfc3339(self.clock())}
        with contextlib.suppress(StoreError):
            self.store.patch("Pod", ns, name, {"status": {"conditions": [cond]}}, subresource="status")

    def _submit_bind(self, b: BindRequest) -> None:
        with self._inflight_lock:
            self._inflight += 1
        self.binds_sent += 1
        self._pool.submit(self._bind, b)

    def _bind(self, b: BindRequest) -> None:
        try:
            self.store.bind(b.namespace, b.name, b.node, annotations=b.annotations or None)
            if self.events is not None:
                self.events.event(_pod_ref(b.namespace, b.name, b.uid), "Normal", "Scheduled",
                                  f"Successfully assigned {b.namespace}/{b.name} to {b.node}", action="Binding")
        except StoreError as e:
            self.binds_failed += 1
            logger.warning("bind %s/%s to %s refused: %s", b.namespace, b.name, b.node, e)
            self._failures.put((b.namespace, b.name, str(e)))
        except Exception as e:  # transport trouble: drop the assumption all the same
            self.binds_failed += 1
            logger.warning("bind %s/%s to %s failed: %s", b.namespace, b.name, b.node, e)
            self._failures.put((b.namespace, b.name, str(e)))
        finally:
            with self._inflight_lock:
                self._inflight -= 1

    def _evict(self, ns: str, name: str) -> None:
        try:
            self.store.delete("Pod", ns, name)
        except StoreError as e:
            logger.warning("evict %s/%s failed: %s", ns, name, e)
            self._failures.put((ns, name, str(e)))

    def _nominate(self, ns: str, name: str, node: str) -> None:
        with contextlib.suppress(StoreError):
            self.store.patch("Pod", ns, name, {"status": {"nominatedNodeName": node}}, subresource="status")

    @property
    def inflight_binds(self) -> int:
        with self._inflight_lock:
            return self._inflight

    # ------------------------------------------------------------------ the loop
    def run(self, stop: threading.Event, *, leading: Callable[[], bool] | None = None) -> None:
        """A session every period until ``stop`` is set; while ``leading()`` is False no
        session runs (a standby keeps its informers warm but decides nothing)."""
        next_at = time.monotonic()
        while not stop.is_set():
            if leading is None or leading():
                try:
                    report = self.run_once()
                    if report.result.binds or report.result.evictions:
                        logger.info("session %d: %d binds, %d evictions, %.1f ms", self.sessions,
                                    len(report.result.binds), len(report.result.evictions), report.seconds * 1e3)
                except Exception:
                    logger.exception("session failed")
            else:
                self.ingest()
            next_at += self.period
            delay = next_at - time.monotonic()
            if delay < 0:
                next_at = time.monotonic()
                delay = 0.0
            stop.wait(delay)

    def close(self, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=not wait)
        self._status_pool.shutdown(wait=wait, cancel_futures=not wait)
