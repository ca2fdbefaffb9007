"""``queue top``: pending jobs in the order the scheduler will consider them, with start estimates.

The order is the session's own: a session is opened on a cache built from the state, and its
``queue_order_fn`` and ``job_order_fn`` (the configured plugins' combinators, as the allocate
action uses them) sort the queues and, within each, the pending jobs. Position counts queue by
queue in that order: the allocate action takes the queues in this order at the start of a
session (as placements raise a queue's share, proportion may interleave them later).

Each job carries the reason code of the diagnosis of one session on the state (as
``job why`` shows it; none when the session would place it) and the estimate of
:mod:`pyvolcano.forecast.eta`; a job the ``reservation`` plugin holds nodes for after
that session also carries its ``reservation`` (nodes, start at the latest). The running
jobs' runtime assumptions are listed too, and the jobs still to come from JobFlows and
CronJobs (``upcoming``: a flow's next steps once their targets complete, a CronJob's next
runs), with when the forecast creates and starts them; the pending jobs' estimates already
count them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from pyvolcano.conf.schema import SchedulerConfiguration
from pyvolcano.forecast.eta import DEFAULT_HORIZON, estimate_starts
from pyvolcano.runtime.registry import Registry
from pyvolcano.simulator.restore import RuntimePolicy, assumptions
from pyvolcano.simulator.state import ClusterState
from pyvolcano.store.base import to_rfc3339

if TYPE_CHECKING:
    from pyvolcano.framework.session import Session

__all__ = ["OrderedJob", "pending_order", "queue_top_document"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class OrderedJob:
    position: int
    queue: str
    queue_position: int
    job: str
    phase: str


def _sorted(items: list[T], less: Callable[[T, T], bool]) -> list[T]:
    def cmp(a: T, b: T) -> int:
        return -1 if less(a, b) else 1 if less(b, a) else 0

    return sorted(items, key=functools.cmp_to_key(cmp))


def pending_order(state: ClusterState, config: SchedulerConfiguration, registry: Registry, *,
                  seed: int = 0) -> list[OrderedJob]:
    """The pending jobs (PodGroup not ready) in the order the session's combinators give."""
    from pyvolcano.cache.cache import SchedulerCache
    from pyvolcano.runtime.cycle import run_once

    out: list[OrderedJob] = []

    def read_order(ssn: Session) -> None:
        by_queue: dict[str, list[Any]] = {}
        for _key, job in sorted(ssn.jobs.items()):
            if job.podgroup is None or job.is_ready() or job.podgroup.phase not in ("Pending", "Inqueue"):
                continue
            by_queue.setdefault(job.queue, []).append(job)
        queues = _sorted([q for name, q in sorted(ssn.queues.items()) if name in by_queue], ssn.queue_order_fn)
        missing = sorted(set(by_queue) - {q.uid for q in queues})  # jobs of a queue the session does not know
        for qname in [q.uid for q in queues] + missing:
            for i, job in enumerate(_sorted(by_queue[qname], ssn.job_order_fn), start=1):
                assert job.podgroup is not None
                out.append(OrderedJob(len(out) + 1, qname, i, f"{job.podgroup.namespace}/{job.podgroup.name}",
                                      job.podgroup.phase))

    # A session with no actions: only its orderings are read, while it is open.
    run_once(SchedulerCache.from_objects(state.objects), config, registry.plugin_factories(config.plugin_names()),
             {}, now=state.now, rng=np.random.default_rng(seed), action_names=(), while_open=read_order)
    return out


def queue_top_document(state: ClusterState, config: SchedulerConfiguration, registry: Registry, *,
                       queue: str | None, policy: RuntimePolicy, seed: int = 0,
                       horizon: float = DEFAULT_HORIZON) -> dict[str, Any]:
    """``queue top``'s document: ``now``, ``pending`` (in order) and ``running`` (runtime assumptions)."""
    from pyvolcano.cache.cache import SchedulerCache
    from pyvolcano.runtime.cycle import schedule_objects

    order = pending_order(state, config, registry, seed=seed)
    cache = SchedulerCache.from_objects(state.objects)
    diagnoses = schedule_objects(cache, config, registry, sessions=1, seed=seed)["diagnoses"]
    # The reservation plugin's reservations after that session (plugins/reservation.py), by PodGroup key.
    reserved = {f"{job.podgroup.namespace}/{job.podgroup.name}": r for key, r in cache.memo.reservations.held.items()
                if (job := cache.jobs.get(key)) is not None and job.podgroup is not None}
    shown = [o for o in order if queue is None or o.queue == queue]
    estimates, fc = estimate_starts(state.docs, [o.job for o in shown], config, registry, now=state.now,
                                    policy=policy, seed=seed, horizon=horizon)
    pending = []
    for o in shown:
        d = diagnoses.get(o.job)
        e = estimates[o.job]
        pending.append({
            "position": o.position, "queue": o.queue, "queue_position": o.queue_position, "job": o.job,
            "phase": o.phase, "reason": None if d is None else d["reason"], "hint": None if d is None else d["hint"],
            "start": None if e.start is None else to_rfc3339(e.start), **e.to_dict(state.now),
        })
        held = reserved.get(o.job)
        if held is not None:
            pending[-1]["reservation"] = {**held.to_dict(state.now), "start": to_rfc3339(max(held.start, state.now))}
    running: dict[str, dict[str, Any]] = {}
    on_nodes = {p.key for p in state.objects.pods if p.phase == "Running" and p.node_name}
    for a in assumptions(state.docs, policy, state.now):
        if a.ends_at is None and a.source != "unknown":
            continue  # a pending pod: its runtime matters only once it starts
        if queue is not None and a.queue != queue:
            continue
        if a.pod not in on_nodes:
            continue
        r = running.setdefault(a.job, {"job": a.job, "queue": a.queue, "pods": 0, "sources": [],
                                       "ends_in_seconds": 0.0})
        r["pods"] += 1
        if a.source not in r["sources"]:
            r["sources"].append(a.source)
        end = None if a.ends_at is None else round(a.ends_at - state.now, 6)
        r["ends_in_seconds"] = None if end is None or r["ends_in_seconds"] is None else max(r["ends_in_seconds"], end)
    upcoming = [{**u.to_dict(state.now), "created": to_rfc3339(u.created),
                  "start": None if u.started is None else to_rfc3339(u.started)}
                 for u in fc.upcoming if queue is None or _queue_of(state, u.created_by, u.job) == queue]
    return {"now": to_rfc3339(state.now), "queue": queue, "pending": pending,
            "running": [running[k] for k in sorted(running)], "upcoming": upcoming}


def _queue_of(state: ClusterState, group: str, job: str) -> str:
    """The queue the job ``job`` of workflow ``group`` runs in: its template's ``spec.queue``."""
    kind, _, key = group.partition(" ")
    ns, _, name = key.partition("/")
    docs = {(d.get("kind"), (d.get("metadata") or {}).get("namespace") or "default", (d.get("metadata") or {})
             .get("name")): d for d in state.docs}
    if kind == "CronJob":
        spec = ((((docs.get(("CronJob", ns, name)) or {}).get("spec") or {}).get("jobTemplate") or {})
                .get("spec") or {})
    else:
        step = job.partition("/")[2][len(name) + 1:]
        spec = (docs.get(("JobTemplate", ns, step)) or {}).get("spec") or {}
    return str(spec.get("queue") or "default")
