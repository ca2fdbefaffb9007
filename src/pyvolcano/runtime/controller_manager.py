"""The live controller manager (vc-controller-manager) on a wall clock.

The controllers are the simulator's (:mod:`pyvolcano.controllers`), driven the same way:
each watch event goes to every controller's ``on_event``, then each controller's ``run(now)``
does its queued work and says when it next needs to run. Here "now" is the wall clock, and
the loop sleeps until a new event arrives or the earliest requested wake-up is due.

Restart safety comes from the controllers themselves: the first events after start are the
informers' initial lists (every existing object of the watched kinds as ADDED), so
a restarted manager adopts the pods and PodGroups that exist (owner references and upstream's
labels and annotations identify them), and the job controller's pod names are deterministic
(``<job>-<task>-<index>``), so it never creates a duplicate pod: a create that races an
existing pod is refused by the API server as AlreadyExists.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Collection
from typing import Any

from pyvolcano.runtime.clock import wall_seconds
from pyvolcano.store.base import Compactable, Store, Waitable

__all__ = ["CONTROLLERS", "CONTROLLER_KINDS", "UPSTREAM_CONTROLLERS", "LiveControllerManager", "build_controllers"]

logger = logging.getLogger(__name__)

CONTROLLER_KINDS = ("Queue", "PriorityClass", "Job", "PodGroup", "Pod", "Command", "HyperNode", "Node", "ConfigMap",
                    "JobFlow", "JobTemplate", "CronJob", "ReplicaSet", "StatefulSet")
"""What vc-controller-manager's informers watch (HyperNode, Node and ConfigMap for the HyperNode
controller: node counts and the discovery ConfigMap; JobFlow, JobTemplate and CronJob for the
workflow controllers; ReplicaSet and StatefulSet for the PodGroup controller, as upstream's
WorkLoadSupport feature, on by default)."""

CONTROLLERS = ("queue-controller", "job-controller", "pg-controller", "gc-controller", "hyperNode-controller",
               "jobflow-controller", "jobtemplate-controller", "cronjob-controller")
"""Upstream's controller names (``--controllers``), in the order they run; upstream's default
(``*,-sharding-controller``) enables all of them."""

UPSTREAM_CONTROLLERS = ("colocation-config-controller", "cronjob-controller", "gc-controller", "hyperNode-controller",
                        "job-controller", "jobflow-controller", "jobtemplate-controller", "pg-controller",
                        "queue-controller", "sharding-controller")
"""Every controller upstream's vc-controller-manager registers; ``--controllers`` may name them."""


def build_controllers(store: Store, enabled: Collection[str] = CONTROLLERS,
                      *, scheduler_names: Collection[str] = ("volcano",),
                      inherit_owner_annotations: bool = True,
                      job_sync_batch_period: float = 0.0) -> list[Any]:
    """The enabled controllers, in upstream's order. Their generated names and SSH keys come
    from the operating system's randomness (:class:`SystemEntropy`); nothing here is seeded.
    ``inherit_owner_annotations`` is ``--inherit-owner-annotations`` (the PodGroup controller);
    ``job_sync_batch_period``: the job controller's ``sync_batch_period``."""
    from pyvolcano.controllers import (
        CronJobController,
        GarbageCollector,
        JobController,
        JobFlowController,
        JobTemplateController,
        PodGroupController,
        QueueController,
    )
    from pyvolcano.controllers.hypernode import HyperNodeController
    from pyvolcano.controllers.hypernode.discovery import DEFAULT_NAMESPACE, DEFAULT_RELEASE_NAME, configmap_name
    from pyvolcano.controllers.system_entropy import SystemEntropy

    entropy = SystemEntropy()
    # Upstream finds the discovery ConfigMap from the pod's namespace and the Helm release name.
    config_namespace = os.environ.get("KUBE_POD_NAMESPACE") or DEFAULT_NAMESPACE
    config_name = configmap_name(os.environ.get("HELM_RELEASE_NAME") or DEFAULT_RELEASE_NAME)

    factories: dict[str, Callable[[], Any]] = {
        "queue-controller": lambda: QueueController(store=store),
        "job-controller": lambda: JobController(store=store, entropy=entropy,
                                                sync_batch_period=job_sync_batch_period),
        "pg-controller": lambda: PodGroupController(store=store, scheduler_names=tuple(scheduler_names),
                                                    inherit_owner_annotations=inherit_owner_annotations),
        "gc-controller": lambda: GarbageCollector(store=store),
        "hyperNode-controller": lambda: HyperNodeController(store=store, entropy=entropy,
                                                            config_namespace=config_namespace,
                                                            config_name=config_name),
        "jobflow-controller": lambda: JobFlowController(store=store),
        "jobtemplate-controller": lambda: JobTemplateController(store=store),
        "cronjob-controller": lambda: CronJobController(store=store),
    }
    unknown = [c for c in enabled if c not in factories]
    if unknown:
        raise ValueError(f"--controllers: unknown controller {unknown[0]!r}; expected some of {', '.join(CONTROLLERS)}")
    return [factories[name]() for name in CONTROLLERS if name in enabled]


class LiveControllerManager:
    def __init__(self, store: Store, controllers: list[Any], *, clock: Callable[[], float] = wall_seconds,
                 max_idle: float = 1.0, metrics: Any = None):
        self.store = store
        self.metrics = metrics  # a pyvolcano.metrics.controllers.ControllerMetrics, or None
        self.controllers = controllers
        self.clock = clock
        self.max_idle = max_idle
        self.revision = 0
        self.wakeups: dict[int, float] = {}

    def step(self) -> float | None:
        """Dispatch new events and run every controller once; returns the earliest wake-up."""
        events = self.store.watch(self.revision, CONTROLLER_KINDS, copy=False)
        for ev in events:
            self.revision = ev.revision
            if self.metrics is not None:
                self.metrics.observe_event(ev, self._job_created)
            for c in self.controllers:
                if ev.kind not in getattr(c, "watches", (ev.kind,)):
                    continue
                try:
                    c.on_event(ev)
                except Exception:
                    logger.exception("%s: event %s %s", getattr(c, "name", c), ev.type, ev.kind)
        if isinstance(self.store, Compactable):
            self.store.compact(self.revision)
        now = self.clock()
        for i, c in enumerate(self.controllers):
            try:
                wake = c.run(now)
            except Exception:
                logger.exception("%s: run failed", getattr(c, "name", c))
                wake = now + 1.0
            if wake is not None:
                self.wakeups[i] = wake
            else:
                self.wakeups.pop(i, None)
        return min(self.wakeups.values(), default=None)

    def _job_created(self, namespace: str, name: str) -> float | None:
        from pyvolcano.store.base import StoreError, from_rfc3339

        try:
            job = self.store.get("Job", namespace, name)
            return from_rfc3339(str((job.get("metadata") or {}).get("creationTimestamp")))
        except (StoreError, ValueError):
            return None

    def run(self, stop: threading.Event, *, leading: Callable[[], bool] | None = None) -> None:
        wait = self.store.wait if isinstance(self.store, Waitable) else None
        while not stop.is_set():
            if leading is not None and not leading():
                stop.wait(0.2)
                continue
            wake = self.step()
            timeout = self.max_idle if wake is None else min(self.max_idle, max(0.0, wake - self.clock()))
            if wait is not None:
                wait(self.revision, timeout)
            else:
                time.sleep(timeout)
