"""The live scheduler loop (upstream's ``pkg/scheduler/scheduler.go`` on a wall clock).

Every ``--schedule-period`` it folds the informers' events into the
:class:`~pyvolcano.cache.cache.SchedulerCache`, runs one session (the same
:func:`pyvolcano.runtime.cycle.run_once` the simulator runs) and writes its decisions:

through the :class:`~pyvolcano.runtime.writer.DecisionWriter` the simulator uses too, here with
its writes submitted to worker pools:

* **binds** (and evictions, nominations, pod conditions) go to a pool of ``bind_workers`` and
  never hold up the next session. The cache treats a bind as done once it is sent (upstream's
  "assumed" pod); if the API server refuses it (a 409 because the pod is already bound, a
  deleted pod, a node gone), the failure is handed back to the loop, which re-reads the pod
  from the informer cache so the assumption is dropped and the pod is scheduled again. A
  refused bind is not retried as such.
* **evictions** are pod deletions with the pod's own grace period, as upstream's
  ``Evict`` does;
* **PodGroup status** is written at session close by 16 status workers, only for PodGroups
  whose status changed in the session, and the next session waits until all are written.

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
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pyvolcano.api.names import SCHEDULER_KINDS
from pyvolcano.cache.cache import SchedulerCache, SchedulerOptions
from pyvolcano.cache.ingest import apply_event, resync_object, resync_pod
from pyvolcano.conf import ConfigError, default_configuration
from pyvolcano.conf.metrics import read_metrics
from pyvolcano.conf.schema import SchedulerConfiguration
from pyvolcano.framework.interfaces import ActionFactory, PluginFactory
from pyvolcano.metrics.source import UsageCollector
from pyvolcano.runtime.clock import wall_seconds
from pyvolcano.runtime.configuration import load_configuration
from pyvolcano.runtime.cycle import SessionResult, run_once
from pyvolcano.runtime.registry import Registry, default_registry
from pyvolcano.runtime.writer import DecisionWriter, EventSink, Write
from pyvolcano.store.base import Compactable, Store, StoreError

if TYPE_CHECKING:
    from pyvolcano.metrics.scheduler import SchedulerMetrics, SessionMetricsObserver
    from pyvolcano.runtime.recorder import SessionRecorder

__all__ = ["LiveScheduler", "SessionReport"]

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class SessionReport:
    """What one live session did (for logs, metrics and tests)."""

    at: float
    seconds: float
    result: SessionResult
    bind_failures: list[tuple[str, str]] = field(default_factory=list)


class LiveScheduler:
    def __init__(self, store: Store, *, conf_path: Path | None = None, registry: Registry | None = None,
                 options: SchedulerOptions | None = None, period: float = 1.0, seed: int | None = None,
                 bind_workers: int = 16, clock: Callable[[], float] = wall_seconds,
                 timer: Callable[[], float] = time.perf_counter, metrics: SchedulerMetrics | None = None,
                 node_selector: Collection[str] = (), events: EventSink | None = None,
                 recorder: SessionRecorder | None = None):
        self.store = store
        self.registry = registry or default_registry()
        self.conf_path = conf_path
        self.options = options or SchedulerOptions()
        self.period = period
        self.clock = clock
        self.timer = timer
        self.metrics = metrics
        self._observer: SessionMetricsObserver | None = None
        if metrics is not None:
            from pyvolcano.metrics.scheduler import SessionMetricsObserver

            self._observer = SessionMetricsObserver(metrics, timer)
        # --node-selector key:value pairs: a node is ours when any of its labels is listed.
        self.node_selector = frozenset(node_selector)
        self.events = events
        self.recorder = recorder
        self.rng = np.random.default_rng(seed)
        self.cache = SchedulerCache(self.options)
        self.cache.evictions_delete_immediately = False
        self.revision = 0
        self.sessions = 0
        self._conf_stamp: tuple[int, int] | None = None
        self.config: SchedulerConfiguration = default_configuration()
        self.config_text: str | None = None  # the text self.config was loaded from (None: the default)
        self._plugins: dict[str, PluginFactory] = {}
        self._actions: dict[str, ActionFactory] = {}
        # Node load from the configuration's metrics source (metrics/source.py), or None.
        self._usage: UsageCollector | None = None
        self._load_config(initial=True)
        self._pool = ThreadPoolExecutor(max_workers=bind_workers, thread_name_prefix="bind")
        self._status_pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="status")
        self.writer = DecisionWriter(store, self.cache, clock=clock, events=events, submit=self._pool.submit,
                                     write_all=self._submit_status_writes, carry_scheduled=True,
                                     hold_arriving=True)

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
        self._sync_usage_collector()

    def _sync_usage_collector(self) -> None:
        """Start, restart or stop collecting node load as the configuration's metrics section says."""
        wanted = read_metrics(self.config.metrics)
        current = self._usage
        if current is not None and current.conf == wanted:
            return
        if current is not None:
            current.stop()
            self._usage = None
        if wanted.enabled:
            self._usage = UsageCollector(wanted, clock=self.clock).start()

    # ------------------------------------------------------------------ one session
    def ingest(self) -> int:
        events = self.store.watch(self.revision, SCHEDULER_KINDS, copy=False)
        for ev in events:
            if ev.kind == "Node" and self.node_selector and not self._selected(ev.object):
                continue  # upstream's nodeCanAddCache: ignored on add, update and delete
            if self.recorder is not None:
                self.recorder.observe(ev.type, ev.kind, ev.object)
            if ev.kind == "Node" and ev.type == "DELETED":
                self._delete_numatopology(str((ev.object.get("metadata") or {}).get("name", "")))
            apply_event(self.cache, ev.type, ev.kind, ev.object)
        self.revision = max(self.revision, self.store.revision if not events else events[-1].revision)
        if isinstance(self.store, Compactable):
            self.store.compact(self.revision)
        return len(events)

    def _delete_numatopology(self, node: str) -> None:
        """Upstream's cache deletes a deleted node's Numatopology (``deleteNode``)."""
        if node not in self.cache.numatopologies:
            return
        try:
            self.store.delete("Numatopology", None, node)
        except StoreError as e:
            logger.error("delete numatopo %s failed: %s", node, e)

    def _selected(self, node: Mapping[str, Any]) -> bool:
        labels = (node.get("metadata") or {}).get("labels") or {}
        return any(f"{k}:{v}" in self.node_selector for k, v in labels.items())

    def _drop_failed_assumptions(self) -> list[tuple[str, str]]:
        failed: list[tuple[str, str]] = []
        for ns, name, why in self.writer.take_failures():
            failed.append((f"{ns}/{name}", why))
            self._resync_pod(ns, name)
        for kind, ns_, name in self.writer.take_stale():
            event, obj = resync_object(self.cache, self.store, kind, ns_, name)
            if self.recorder is not None:
                self.recorder.observe(event, kind, obj)
        return failed

    def _resync_pod(self, ns: str, name: str) -> None:
        obj = resync_pod(self.cache, self.store, ns, name)
        if self.recorder is not None:
            self.recorder.observe("DELETED" if obj is None else "MODIFIED", "Pod",
                                  obj or {"metadata": {"namespace": ns, "name": name}})

    def run_once(self) -> SessionReport:
        self._load_config()
        self.ingest()
        if self._usage is not None:
            self._usage.set_nodes([info.name for info in self.cache.node_list])
            usage = self._usage.take()
            if usage is not None:
                self.cache.set_node_usage(usage)
        failures = self._drop_failed_assumptions()
        now = self.clock()
        capture = None if self.recorder is None else self.recorder.capture(
            self.cache, now=now, rng=self.rng, config_text=self.config_text, options=self.options)
        t0 = self.timer()
        result = run_once(self.cache, self.config, self._plugins, self._actions, now=now, rng=self.rng,
                          observer=self._observer)
        self.sessions += 1
        self.writer.write(result)
        seconds = self.timer() - t0
        if capture is not None and self.recorder is not None:
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
    def _submit_status_writes(self, writes: Sequence[Write]) -> None:
        # upstream's jobUpdater: the changed PodGroups are written by 16 workers, and the session
        # closes when they are all written (so two sessions' writes of one PodGroup never race)
        for f in [self._status_pool.submit(w) for w in writes]:
            f.result()

    @property
    def binds_sent(self) -> int:
        return self.writer.binds_sent

    @property
    def binds_failed(self) -> int:
        return self.writer.binds_failed

    @property
    def inflight_binds(self) -> int:
        return self.writer.inflight_binds

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
        if self._usage is not None:
            self._usage.stop()
        self._pool.shutdown(wait=wait, cancel_futures=not wait)
        self._status_pool.shutdown(wait=wait, cancel_futures=not wait)
