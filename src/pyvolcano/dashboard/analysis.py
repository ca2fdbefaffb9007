"""One cluster state, analysed once: the scheduler's own answers the views are made of.

:class:`Analysis` wraps a :class:`~pyvolcano.simulator.state.ClusterState` with the scheduler
configuration to read it with, and computes on first use, each at most once:

* ``quotas`` — each queue's quota as the configured quota plugin (proportion or capacity)
  computes it in a session opened on the state (``Session.queue_quotas``):
  allocated, deserved, capability; no action runs, so nothing is decided;
* ``diagnoses`` — ``job why``'s pending diagnosis of every job left short, by PodGroup key
  (:func:`~pyvolcano.runtime.cycle.schedule_objects`, one session, as ``job why`` runs it);
* ``reservations`` — the ``reservation`` plugin's reservations after that session, by
  PodGroup key (nodes held, start at the latest; empty without the plugin);
* ``top`` — ``queue top``'s document (:func:`~pyvolcano.forecast.queue_top.queue_top_document`):
  the pending jobs' order, reason codes and estimated starts.

Each works on its own deep copy of the state's objects (a session writes PodGroup status and
binds into the objects its cache was built from), so none sees another's decisions and the
state stays as it was read. A new state makes a new analysis (:mod:`.sources`).
Everything is deterministic: the clock is the state's ``now`` and the seed is given.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.schema import SchedulerConfiguration
from pyvolcano.runtime.registry import Registry
from pyvolcano.simulator.restore import RuntimePolicy
from pyvolcano.simulator.state import ClusterState
from pyvolcano.store.base import to_rfc3339

if TYPE_CHECKING:
    from pyvolcano.diagnosis.model import QueueQuota
    from pyvolcano.framework.session import Session

__all__ = ["Analysis", "object_time", "user_amount"]

T = TypeVar("T")
HORIZON = 30 * 86400.0


def user_amount(name: str, amount: float) -> float:
    """An internal amount (milli-units; memory and pods whole) in the user's unit, as the
    diagnosis reports its figures: cores, bytes, pods, GPUs."""
    return round(amount, 6) if name in ("memory", "pods") else round(amount / 1000.0, 6)


def object_time(seconds: float) -> str | None:
    """An object's timestamp as parsed from a manifest (Unix seconds) in RFC 3339, None for 0."""
    if not seconds:
        return None
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Analysis:
    state: ClusterState
    config: SchedulerConfiguration
    registry: Registry
    policy: RuntimePolicy = field(default_factory=RuntimePolicy)
    seed: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)
    """Kubernetes Events of the state (core/v1 or events.k8s.io/v1), for the job page."""
    _memo: dict[str, Any] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _once(self, name: str, compute: Callable[[], T]) -> T:
        with self._lock:
            if name not in self._memo:
                self._memo[name] = compute()
            value: T = self._memo[name]
            return value

    def fresh_state(self) -> ClusterState:
        """The state with a private copy of its objects, for one computation to change."""
        return dataclasses.replace(self.state, objects=copy.deepcopy(self.state.objects))

    def fresh_cache(self) -> SchedulerCache:
        return SchedulerCache.from_objects(self.fresh_state().objects)

    def cache(self) -> SchedulerCache:
        """A scheduler cache of the state as it is (no session has run on it); not to be changed."""
        return self._once("cache", self.fresh_cache)

    def quotas(self) -> dict[str, QueueQuota]:
        """Queue name → the quota plugin's figures (empty without proportion or capacity)."""
        return self._once("quotas", self._read_quotas)

    def _read_quotas(self) -> dict[str, QueueQuota]:
        from pyvolcano.runtime.cycle import run_once

        out: dict[str, QueueQuota] = {}

        def read(ssn: Session) -> None:
            out.update(ssn.queue_quotas())

        run_once(self.fresh_cache(), self.config,
                 self.registry.plugin_factories(self.config.plugin_names()), {}, now=self.state.now,
                 rng=np.random.default_rng(self.seed), action_names=(), while_open=read)
        return out

    def diagnoses(self) -> dict[str, dict[str, Any]]:
        """PodGroup key → ``job why``'s diagnosis (jobs left short only)."""
        return self._session()[0]

    def reservations(self) -> dict[str, dict[str, Any]]:
        """PodGroup key → the ``reservation`` plugin's reservation after that same session
        (``Reservation.to_dict`` with ``start``, RFC 3339); empty unless the plugin is configured."""
        if "reservation" not in self.config.plugin_names():
            return {}
        return self._session()[1]

    def _session(self) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
        from pyvolcano.runtime.cycle import schedule_objects

        def compute() -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
            cache = self.fresh_cache()
            doc = schedule_objects(cache, self.config, self.registry, sessions=1, seed=self.seed)
            diagnoses: dict[str, dict[str, Any]] = doc["diagnoses"]
            held: dict[str, dict[str, Any]] = {}
            for key, r in sorted(cache.memo.reservations.held.items()):
                # Planned in that one session: start_in_seconds counts from its clock.
                held[key] = {**r.to_dict(r.planned_at), "start": to_rfc3339(r.start),
                             "reason": "Reservation.Held"}
            return diagnoses, held

        return self._once("session", compute)

    def top(self) -> dict[str, Any]:
        """``queue top``'s document for every queue."""
        from pyvolcano.forecast.queue_top import queue_top_document

        return self._once("top", lambda: queue_top_document(self.fresh_state(), self.config, self.registry, queue=None,
                                                            policy=self.policy, seed=self.seed, horizon=HORIZON))
