"""Volcano's controller-manager equivalents: job, queue, PodGroup (plain pods), garbage collection,
HyperNode (node counts, discovery from node labels), and the workflow controllers: CronJob,
JobFlow and JobTemplate.

Every controller follows one small protocol so that the runtime can drive them on a virtual
clock: :meth:`Controller.on_event` takes a store watch event and only records work (a
controller with a ``watches`` set of kinds is given only those kinds' events: :func:`watching`);
:meth:`Controller.run` does all queued work at a virtual instant, writing through the store,
and returns the next virtual time it needs to run again (retries, policy timeouts, TTLs) or
``None``. Controllers read objects as plain manifest-shaped dicts, take the store by keyword,
and never read a wall clock; the job and HyperNode controllers also take the runtime's
:class:`~pyvolcano.controllers.entropy.Entropy` (generated names and SSH keys), which the
runtime chooses: the operating system's randomness live, a seeded generator in the simulator.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pyvolcano.controllers.cronjob import CronJobController
from pyvolcano.controllers.entropy import Entropy
from pyvolcano.controllers.gc import GarbageCollector
from pyvolcano.controllers.hypernode import HyperNodeController
from pyvolcano.controllers.job.controller import JobController
from pyvolcano.controllers.jobflow import JobFlowController
from pyvolcano.controllers.jobtemplate import JobTemplateController
from pyvolcano.controllers.podgroup import PodGroupController
from pyvolcano.controllers.queue import QueueController, ensure_default_queues
from pyvolcano.store.base import Store, WatchEvent

__all__ = [
    "Controller",
    "CronJobController",
    "GarbageCollector",
    "HyperNodeController",
    "JobController",
    "JobFlowController",
    "JobTemplateController",
    "PodGroupController",
    "QueueController",
    "default_controllers",
    "ensure_default_queues",
    "watching",
]


class Controller(Protocol):
    name: str

    def on_event(self, ev: WatchEvent) -> None: ...

    def run(self, now: float) -> float | None: ...


def watching(controllers: Sequence[Controller], kind: str) -> list[Controller]:
    """The controllers that take events of ``kind``, in their order: those whose ``watches``
    names it, and those without ``watches`` (every kind)."""
    return [c for c in controllers if kind in getattr(c, "watches", (kind,))]


def default_controllers(*, store: Store, entropy: Entropy) -> list[Controller]:
    """The controllers ``vc-controller-manager`` runs by default, in a fixed order.

    The queue controller comes first: its constructor creates the ``root`` and ``default``
    queues that job and PodGroup admission look up. Upstream's default ``--controllers``
    (``*,-sharding-controller``) includes the HyperNode, JobFlow, JobTemplate and CronJob
    controllers, so the simulator runs them too (they act on nothing else, and write nothing
    for a workload without their kinds).
    """
    return [
        QueueController(store=store),
        JobController(store=store, entropy=entropy),
        PodGroupController(store=store),
        GarbageCollector(store=store),
        HyperNodeController(store=store, entropy=entropy),
        JobFlowController(store=store),
        JobTemplateController(store=store),
        CronJobController(store=store),
    ]
