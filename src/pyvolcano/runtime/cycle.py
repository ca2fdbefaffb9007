"""One scheduling cycle (upstream ``pkg/scheduler/scheduler.go`` ``runOnce``).

:func:`run_once` is the body of every scheduling loop: it opens a session on the cache
(:func:`~pyvolcano.framework.session.open_session`), runs the configured actions, closes the
session (:meth:`~pyvolcano.framework.session.Session.close`), applies the committed effects to
the cache (a bind makes the task Bound, an eviction deletes or terminates the pod) and hands
back the decisions as a :class:`SessionResult`. The live scheduler, the simulator,
``pyvolcano schedule``, ``replay`` and the forecasts all run their sessions through it;
what differs between them is only where the decisions are written
(:mod:`pyvolcano.runtime.writer`), the clock and the wake-ups.

:func:`schedule_objects` runs cycles one after another on a cache built from a snapshot and
returns ``pyvolcano schedule``'s JSON object: binds, evictions, pipelined tasks, PodGroup
phases and the last session's pending diagnoses, each sorted, so that the same inputs and seed
give the same document. The snapshot is taken "now", at its newest object; each further
session is one schedule period (one second) later. Wall-clock timings are kept apart
(``stats.session_seconds``).

Invariants: no other module outside the framework opens or closes a session; the result
lists binds in dispatch order, evictions in the order the session made them, and only the
PodGroups whose written status (phase, counts, conditions) changed since it was last
handed back.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from pyvolcano.api.manifest import parse_time
from pyvolcano.api.names import COOLDOWN_KEY
from pyvolcano.api.objects import Pod, PodGroup
from pyvolcano.api.resource import Resource
from pyvolcano.api.task import TaskStatus
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf.schema import SchedulerConfiguration
from pyvolcano.diagnosis.model import Diagnosis
from pyvolcano.framework.interfaces import ActionFactory, DeservedExporter, PluginFactory, TimedPlugin
from pyvolcano.framework.observer import SessionObserver
from pyvolcano.framework.prebind import BindTarget, PreBindStep
from pyvolcano.framework.session import Session, open_session
from pyvolcano.runtime.registry import Registry

__all__ = ["BindRequest", "SessionResult", "run_once", "schedule_objects"]


@dataclass(slots=True)
class BindRequest:
    namespace: str
    name: str
    node: str
    annotations: dict[str, str]
    uid: str = ""
    # The plugins' pre-bind steps, run before the bind (framework/prebind.py).
    pre_binds: tuple[PreBindStep, ...] = ()


@dataclass(slots=True)
class SessionResult:
    binds: list[tuple[str, str]] = field(default_factory=list)
    evictions: list[str] = field(default_factory=list)
    pipelined: dict[str, str] = field(default_factory=dict)
    podgroup_phases: dict[str, str] = field(default_factory=dict)
    # What a backend must write: bind requests, evictions (namespace, name, reason), and the
    # PodGroups whose status the session changed.
    bind_requests: list[BindRequest] = field(default_factory=list)
    evict_requests: list[tuple[str, str, str]] = field(default_factory=list)
    changed_podgroups: list[PodGroup] = field(default_factory=list)
    nominated: dict[str, str] = field(default_factory=dict)
    # Deserved resources per queue, from plugins that compute it (proportion, capacity).
    deserved: dict[str, Resource] = field(default_factory=dict)
    # Why each job left short is blocked, by job key (pyvolcano.diagnosis).
    diagnoses: dict[str, Diagnosis] = field(default_factory=dict)
    # The earliest time a plugin's verdict changes with the clock alone (Session.revisit_at):
    # a loop that runs sessions only when something changed runs one then too.
    revisit: float | None = None
    # The soonest time a plugin on its own clock would act again (TimedPlugin), or None.
    next_wakeup: float | None = None


@functools.cache
def _timed(cls: type) -> bool:
    """``isinstance(plugin, TimedPlugin)`` decided once per plugin class."""
    return issubclass(cls, TimedPlugin)


@functools.cache
def _exports_deserved(cls: type) -> bool:
    """``isinstance(plugin, DeservedExporter)`` decided once per plugin class (a protocol's
    instance check inspects its members on every call, once per plugin per session)."""
    return issubclass(cls, DeservedExporter)


def run_once(
    cache: SchedulerCache,
    config: SchedulerConfiguration,
    plugins: Mapping[str, PluginFactory],
    actions: Mapping[str, ActionFactory],
    *,
    now: float,
    rng: np.random.Generator,
    observer: SessionObserver | None = None,
    action_names: Sequence[str] | None = None,
    while_open: Callable[[Session], None] | None = None,
) -> SessionResult:
    """One session on ``cache``: open, run ``action_names`` (default: the configured
    actions), call ``while_open`` (optional, e.g. to read the session's orderings), close,
    apply the effects to the cache. ``observer`` (optional) times the phases for metrics."""
    cache.status_only_changes.clear()
    memo = cache.memo
    t0 = observer.timer() if observer is not None else 0.0
    ssn = open_session(cache, config, plugins, now=now, rng=rng, observer=observer)
    if observer is not None:
        observer.session_opened(observer.timer() - t0)
    for name in config.actions if action_names is None else action_names:
        action = actions[name](config.action_arguments(name))
        if observer is None:
            action.execute(ssn)
        else:
            t0 = observer.timer()
            action.execute(ssn)
            observer.action_done(name, observer.timer() - t0)
    if while_open is not None:
        while_open(ssn)
    result = SessionResult()
    # Only a job this session changed can hold pipelined tasks (the last close reverted them).
    for job in ssn.changed_jobs_in_order():
        if job.count(TaskStatus.Pipelined):
            for t in job.tasks_in(TaskStatus.Pipelined).values():
                result.pipelined[t.key] = t.node_name
    for _opt, plugin in ssn.plugins:
        if not result.deserved and _exports_deserved(type(plugin)):
            result.deserved = cast(DeservedExporter, plugin).deserved_snapshot()
        if _timed(type(plugin)):
            wake = cast(TimedPlugin, plugin).next_wakeup(ssn)
            if wake is not None and (result.next_wakeup is None or wake < result.next_wakeup):
                result.next_wakeup = wake
    if observer is not None:
        observer.session_closing(ssn)
    ssn.close()
    result.nominated = dict(ssn.nominated)
    result.diagnoses = ssn.diagnoses
    result.revisit = ssn.revisit
    _apply_binds(cache, ssn, result)
    for task, reason in ssn.evictions:
        result.evictions.append(task.key)
        result.evict_requests.append((task.namespace, task.name, reason))
        cache.evict(task, now)
    result.podgroup_phases = {uid: job.podgroup.phase for uid, job in ssn.jobs.items()
                              if job.podgroup is not None}
    for uid in ssn.unsettled:  # close left the others' status as it was
        job = ssn.jobs[uid]
        if job.podgroup is not None and memo.podgroup_status_changed(job):
            result.changed_podgroups.append(job.podgroup)
    return result


def _apply_binds(cache: SchedulerCache, ssn: Session, result: SessionResult) -> None:
    """Apply the session's binds to the cache and list them in ``result``, in order.

    A run of binds of one template's replicas without bind annotations or pre-bind steps is
    applied with one status change of their job (``SchedulerCache.bind_many``, with
    ``SchedulerOptions.batch_statement``); the effect is that of one bind at a time. A task's
    pre-bind steps assume their effect in the cache before its bind is applied.
    """
    binds = ssn.binds
    annotations = ssn.bind_annotations
    extensions = ssn.bind_contexts.extensions
    bulk = cache.options.batch_statement
    i, n = 0, len(binds)
    while i < n:
        task, node_name = binds[i]
        i += 1
        if task.status != TaskStatus.Binding:
            continue
        tpl = task.template
        if bulk and tpl is not None and task.uid not in annotations and task.uid not in extensions:
            j = i
            while (j < n and binds[j][0].template is tpl and binds[j][0].status == TaskStatus.Binding
                   and binds[j][0].uid not in annotations and binds[j][0].uid not in extensions):
                j += 1
            if j > i:
                run = [task, *(t for t, _node in binds[i:j])]
                names = [node_name, *(nn for _t, nn in binds[i:j])]
                i = j
                cache.bind_many(run, names)
                for t, nn in zip(run, names, strict=True):
                    result.binds.append((t.key, nn))
                    result.bind_requests.append(BindRequest(t.namespace, t.name, nn, {}, t.uid))
                continue
        ann = annotations.get(task.uid) or {}
        steps: tuple[PreBindStep, ...] = ()
        if task.uid in extensions:
            steps = ssn.bind_contexts.steps(task.uid)
            target = BindTarget(task.namespace, task.name, task.uid, node_name)
            for step in steps:
                step.binder.assume(cache, target, step.extension)
        cache.bind(task, node_name, ann)
        result.binds.append((task.key, node_name))
        result.bind_requests.append(BindRequest(task.namespace, task.name, node_name, dict(ann), task.uid, steps))


def _cooldown_starts(pods: Iterable[Pod]) -> Iterator[float]:
    """The ``PodScheduled`` transition times of the pods that carry ``volcano.sh/cooldown-time``."""
    for pod in pods:
        if COOLDOWN_KEY in pod.labels or COOLDOWN_KEY in pod.annotations:
            for c in pod.conditions:
                if c.get("type") == "PodScheduled":
                    t = parse_time(c.get("lastTransitionTime"))
                    if t is not None:
                        yield t


def schedule_objects(cache: SchedulerCache, config: SchedulerConfiguration, registry: Registry, *,
                     sessions: int, seed: int, now: float | None = None) -> dict[str, Any]:
    """Run ``sessions`` sessions and return the contract's JSON object (without timings).

    ``now``: the time of the first session when it is known (a live cluster read at that
    time); it is never earlier than the snapshot's newest time.

    ``diagnoses`` holds the last session's pending diagnosis of every job left short, by
    PodGroup key (the schema of :meth:`pyvolcano.diagnosis.Diagnosis.to_dict`).
    """
    plugins = registry.plugin_factories(config.plugin_names())
    actions = registry.action_factories(config.actions)
    rng = np.random.default_rng(seed)
    # The snapshot is taken "now": no earlier than its newest object, nor than the time a pod
    # with a cooldown was scheduled (the one condition time a decision reads: plugins/cdp.py);
    # each further session is one second later (upstream's default --schedule-period).
    base = max([0.0, *(p.creation_timestamp for p in cache.pods.values()),
                *(pg.creation_timestamp for pg in cache.podgroups()), *_cooldown_starts(cache.pods.values()),
                *(() if now is None else (now,))])
    binds: dict[str, str] = {}
    evictions: list[str] = []
    pipelined: dict[str, str] = {}
    timings: list[float] = []
    diagnoses: dict[str, Any] = {}
    for i in range(sessions):
        t0 = time.perf_counter()
        res = run_once(cache, config, plugins, actions, now=base + float(i), rng=rng)
        timings.append(time.perf_counter() - t0)
        for key, node in res.binds:
            binds[key] = node
        evictions.extend(res.evictions)
        pipelined = res.pipelined
        diagnoses = {key: d.to_dict() for key, d in sorted(res.diagnoses.items())}
    podgroups = {f"{pg.namespace}/{pg.name}": pg.phase for pg in cache.podgroups()}
    return {
        "binds": dict(sorted(binds.items())),
        "evictions": sorted(evictions),
        "pipelined": dict(sorted(pipelined.items())),
        "podgroups": dict(sorted(podgroups.items())),
        "diagnoses": diagnoses,
        "stats": {"sessions": sessions, "session_seconds": [round(t, 6) for t in timings]},
    }
