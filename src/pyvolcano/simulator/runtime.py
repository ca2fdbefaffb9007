"""The simulation runtime: store, controllers, scheduler and kubelets on one event loop.

Order of work at each virtual instant:

1. fire due timers (workload submissions, kubelet transitions, cluster events);
2. *settle*: drain the store's watch stream to the scheduler cache, the controllers and the
   kubelets, and run the controllers, until no new events appear;
3. if the scheduler is due (a multiple of ``schedule_period``) and anything it reads has
   changed since its last session, run one session and write its decisions back to the
   store through the live scheduler's :class:`~pyvolcano.runtime.writer.DecisionWriter`
   (binds, evictions, nominations, PodGroup status, pending pods' PodScheduled condition and
   the Events, written synchronously), then settle again.

Virtual time then jumps to the earliest of: the next timer, the controllers' requested
wake-ups, and the next scheduler tick if there is unseen change. A session therefore runs
only when something changed (upstream runs one every period regardless; the decisions are
the same because the inputs are). A pod update that only confirms a bind counts as a change
when it completes its gang: the next session sets the PodGroup Running, and enqueue reads
that phase (see ``cache.ingest``). The run ends when every submitted Job has finished
(and nothing else is pending: no JobFlow short of a final phase, no CronJob that is not
suspended), at ``until``, or when nothing left could change anything (no
timer, no wake-up, no unseen change: pods without a duration, jobs that cannot be placed);
:attr:`SimulationResult.end_reason` says which, and every unfinished job gets a ``reason``
(:meth:`Simulation.explain_unfinished`). Metrics are sampled after the events of an instant
have settled, so a session's binds count once the pods have started.

Jobs that a CronJob or a JobFlow creates are followed from their creation like submitted ones;
their :class:`JobRecord` names the workflow (``group``), and the result lists the workflows
(:mod:`pyvolcano.simulator.workflows`). A CronJob's schedule runs on the virtual clock: its
controller's wake-up at the next scheduled time is one of the times the clock jumps to.

Everything is deterministic: the store's revisions order events, timers break ties by
insertion order, and all randomness comes from one seeded generator.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyvolcano.api.duration import MAX_DURATION_SECONDS
from pyvolcano.api.names import GROUP_NAME_KEY, JOB_NAME_KEY, SCHEDULER_KINDS
from pyvolcano.cache.cache import SchedulerCache, SchedulerOptions
from pyvolcano.cache.ingest import apply_event, resync_object, resync_pod
from pyvolcano.conf.metrics import read_metrics
from pyvolcano.conf.schema import SchedulerConfiguration
from pyvolcano.controllers import watching
from pyvolcano.controllers.entropy import Entropy
from pyvolcano.diagnosis.model import Diagnosis
from pyvolcano.kube.events import EventRecorder
from pyvolcano.runtime.cycle import SessionResult, run_once
from pyvolcano.runtime.event_loop import EventLoop
from pyvolcano.runtime.kubelet import DURATION, Kubelets
from pyvolcano.runtime.numa_exporter import NumaExporter, NumaLayout
from pyvolcano.runtime.registry import Registry
from pyvolcano.runtime.writer import DecisionWriter
from pyvolcano.simulator.collector import MetricsCollector
from pyvolcano.simulator.metrics import ENDLESS, RunMetrics
from pyvolcano.simulator.node_load import derived_usage
from pyvolcano.simulator.pv_controller import PersistentVolumeController
from pyvolcano.simulator.seeded_entropy import SeededEntropy
from pyvolcano.simulator.workflows import JobRun, Workflow, group_of, workflows_of
from pyvolcano.simulator.workload import ClusterEvent, Submission
from pyvolcano.store.base import AlreadyExists, Compactable, StoreError, WatchEvent

__all__ = ["JobRecord", "Simulation", "SimulationResult"]

logger = logging.getLogger(__name__)

FINAL_JOB_PHASES = {"Completed", "Failed", "Terminated", "Aborted"}
FINAL_JOBFLOW_PHASES = frozenset({"Succeed", "Failed", "Terminating"})
# HyperNodes too: the cache keeps the HyperNode tree the topology-aware scheduler and the
# collector's topology figures read.
_SCHEDULER_KIND_SET = frozenset((*SCHEDULER_KINDS, "HyperNode"))
# Sessions in a row that a plugin's wake-up made due and that decided nothing, before its
# wake-ups are no longer followed until something else changes.
_IDLE_WAKEUPS = 16
MAX_SEED = 2**64 - 1  # numpy's default_rng takes any non-negative int; keep seeds printable and portable


@dataclass(slots=True)
class JobRecord:
    key: str
    submitted: float
    phase: str = "Pending"
    retry_count: int = 0
    started: float | None = None
    finished: float | None = None
    pods: dict[str, int] = field(default_factory=lambda: {"pending": 0, "running": 0, "succeeded": 0, "failed": 0})
    queue: str = ""
    reason: str | None = None
    """Why an unfinished job had not started or not ended when the run stopped (see
    :meth:`Simulation.explain_unfinished`); None for finished jobs."""
    # Why a job that never started was pending, from its last session (pyvolcano.diagnosis).
    why: Diagnosis | None = None
    # With HyperNodes in the cluster: the HyperNodes its pods span (pyvolcano.simulator.topology_metrics).
    span: dict[str, Any] | None = None
    group: str = ""
    """The CronJob or JobFlow that created the job (``"JobFlow ns/name"``), or ``""``."""


@dataclass(slots=True)
class SimulationResult:
    jobs: dict[str, JobRecord]
    podgroups: dict[str, str]
    queues: dict[str, dict[str, Any]]
    rejected: list[dict[str, Any]]
    virtual_seconds: float
    sessions: int
    wall_seconds: float
    session_seconds: list[float]
    timeline: list[tuple[float, str]]
    end_reason: str = "finished"
    """Why the run stopped: ``finished`` (every job reached a final phase), ``until`` (the
    horizon), or ``stalled`` (nothing left that could change anything: pods without a
    duration run forever, or jobs can never be scheduled)."""
    topology: bool = False
    """The cluster had HyperNodes: each job's record says what its pods span (``span``)."""
    workflows: list[Workflow] = field(default_factory=list)
    """The JobFlows and CronJobs at the end of the run (:mod:`pyvolcano.simulator.workflows`)."""

    def to_json(self) -> dict[str, Any]:
        out = {
            "jobs": {
                k: {"phase": r.phase, "retryCount": r.retry_count, "submitted": r.submitted, "started": r.started,
                    "finished": r.finished, "pods": dict(r.pods), "reason": r.reason,
                    "why": None if r.why is None else r.why.to_dict(),
                    **({"span": r.span} if self.topology else {}), **({"group": r.group} if r.group else {})}
                for k, r in sorted(self.jobs.items())
            },
            "podgroups": dict(sorted(self.podgroups.items())),
            "queues": dict(sorted(self.queues.items())),
            "rejected": self.rejected,
            "stats": {"virtual_seconds": self.virtual_seconds, "sessions": self.sessions,
                      "wall_seconds": round(self.wall_seconds, 3), "end_reason": self.end_reason},
        }
        if self.workflows:
            out["workflows"] = [w.to_dict() for w in self.workflows]
        return out


def check_run_parameters(*, seed: int, schedule_period: float) -> None:
    """Refuse a seed the generators cannot take and a period that would never (or always) tick.

    Raises ``ValueError`` with one line naming the parameter; the CLI calls it before loading.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed: got {seed!r}; expected an integer from 0 to 2^64-1")
    if (isinstance(schedule_period, bool) or not isinstance(schedule_period, int | float)
            or not math.isfinite(schedule_period) or not 0 < schedule_period <= MAX_DURATION_SECONDS):
        raise ValueError(f"schedule period: got {schedule_period!r} seconds; "
                         "expected a positive finite duration such as 1 (upstream's --schedule-period 1s)")


class Simulation:
    """Wire a store, controllers, the scheduler and kubelets together and run them."""

    def __init__(
        self,
        *,
        config: SchedulerConfiguration,
        registry: Registry,
        seed: int = 0,
        schedule_period: float = 1.0,
        termination_seconds: float = 1.0,
        controllers_factory: Callable[..., list[Any]] | None = None,
        progress: Callable[[float, int, int], None] | None = None,
        skip_unchanged_unschedulable: bool = True,
        default_duration: float | None = None,
        numa_layout: NumaLayout | None = None,
    ):
        from pyvolcano.admission import VolcanoAdmission
        from pyvolcano.simulator.disruption import DisruptionController
        from pyvolcano.simulator.quota import QuotaAdmission, ResourceQuotas
        from pyvolcano.store.memory import InMemoryStore

        check_run_parameters(seed=seed, schedule_period=schedule_period)
        self.loop = EventLoop()
        # kube-controller-manager's quota controller and the API server's quota admission.
        quotas = ResourceQuotas()
        self.store = InMemoryStore(clock=lambda: self.loop.now, admission=QuotaAdmission(VolcanoAdmission(), quotas))
        quotas.store = self.store
        self.config = config
        self.registry = registry
        self.plugins = registry.plugin_factories(config.plugin_names())
        self.actions = registry.action_factories(config.actions)
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.period = schedule_period
        self.cache = SchedulerCache(SchedulerOptions(skip_unchanged_unschedulable=skip_unchanged_unschedulable))
        self.cache.evictions_delete_immediately = False
        # The live scheduler's writer and Events, written synchronously at virtual time.
        self.events = EventRecorder(self.store, controller="volcano", instance="simulation",
                                    clock=lambda: self.loop.now, workers=0)
        self.writer = DecisionWriter(self.store, self.cache, clock=lambda: self.loop.now, events=self.events,
                                     quiet=True)
        # Store revisions (after, up to) of the last session's PodScheduled condition writes.
        self._own_condition_writes = (0, 0)
        self.kubelets = Kubelets(self.store, self.loop, termination_seconds=termination_seconds,
                                 default_duration=default_duration)
        # Each node with a NUMA layout gets a Numatopology, kept as pods take exclusive CPUs.
        self.numa = NumaExporter(self.store, default=numa_layout)
        # Node load for the usage and rescheduling plugins (simulator/node_load.py), and the
        # time of its last collection.
        self.metrics_conf = read_metrics(config.metrics)
        self._usage_collected: float | None = None
        self._usage_due: float | None = None
        self._usage_checked = -1
        # When a plugin on its own clock (tdm, rescheduling) would act next (TimedPlugin).
        self._plugin_wakeup: float | None = None
        self._woken = False
        self._idle_wakeups = 0
        factory = controllers_factory or _default_controllers
        self.controllers = factory(store=self.store, entropy=SeededEntropy(random.Random(seed)))
        # kube-controller-manager's PV binder and the classes' provisioners (the cluster's, not Volcano's),
        # and its resource quota and disruption controllers, whose status the scheduler reads.
        self.controllers.append(PersistentVolumeController(store=self.store))
        self.controllers += [quotas, DisruptionController(self.store)]
        self._controllers_of: dict[str, list[Any]] = {}  # by kind: the controllers its events go to
        self.revision = 0
        self.dirty = True
        self.last_session: float | None = None
        self.sessions = 0
        self.session_seconds: list[float] = []
        self.jobs: dict[str, JobRecord] = {}
        self.rejected: list[dict[str, Any]] = []
        self.timeline: list[tuple[float, str]] = []
        self._outstanding = 0
        self._finished_jobs = 0  # JobRecords in a final phase (kept by _set_phase)
        self._wakeups: dict[int, float] = {}
        # JobFlows short of a final phase and CronJobs not suspended: the run goes on for them.
        self._open_workflows: set[tuple[str, str]] = set()
        self._progress = progress
        self.on_session: Callable[[float, SessionResult], None] | None = None
        # False: run until nothing is left to happen (or ``until``), not until the jobs finish.
        self.stop_when_done = True
        # Asked after every instant has settled: True ends the run there (a forecast that has
        # its answers; end_reason "finished").
        self.stop_when: Callable[[], bool] | None = None
        self.metrics = RunMetrics(name="simulation", config_name="default", seed=seed)
        self.collector = MetricsCollector(self.cache, self.metrics)
        self._unsampled: SessionResult | None = None
        self.end_reason = "finished"

    # ------------------------------------------------------------------ inputs
    def submit(self, subs: Sequence[Submission]) -> None:
        for sub in sorted(subs, key=lambda s: (s.at, s.source, s.document)):
            self._outstanding += 1
            self.loop.at(sub.at, _bind(self._create, sub), f"submit {sub.kind} {sub.key}")

    def restore(self, doc: dict[str, Any]) -> dict[str, Any]:
        """Create ``doc`` now as an object that already exists on a cluster (a snapshot's; see
        :meth:`InMemoryStore.restore`). A Volcano Job is followed as a submitted one is, so the
        run lasts until it finishes. Raises StoreError."""
        obj = self._put(doc, self.store.restore)
        if obj.get("kind") == "Job":
            self._record_job(obj)
        return obj

    def _put(self, doc: dict[str, Any], create: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        """``create(doc)``; root and default exist from the start (queue controller), so a Queue
        that exists already takes ``doc``'s spec instead. Raises StoreError."""
        try:
            return create(doc)
        except AlreadyExists:
            if doc.get("kind") != "Queue":
                raise
            current = self.store.get("Queue", None, doc["metadata"]["name"])
            current["spec"] = dict(doc.get("spec") or {})
            return self.store.update(current)

    def _record_job(self, obj: dict[str, Any]) -> str:
        """Follow the Volcano Job ``obj`` from now (a fresh :class:`JobRecord`); returns its key."""
        md = obj["metadata"]
        key = f"{md.get('namespace', 'default')}/{md['name']}"
        replaced = self.jobs.get(key)
        if replaced is not None and replaced.phase in FINAL_JOB_PHASES:
            self._finished_jobs -= 1  # a job of the same name, created again after deletion
        self.jobs[key] = JobRecord(key, self.loop.now, queue=str((obj.get("spec") or {}).get("queue", "")),
                                   group=group_of(obj))
        return key

    def cluster_events(self, events: Sequence[ClusterEvent]) -> None:
        for ev in sorted(events, key=lambda e: (e.at, e.document)):
            self.loop.at(ev.at, _bind(self._cluster_event, ev), f"{ev.action} {ev.node}")

    def _create(self, sub: Submission) -> None:
        self._outstanding -= 1
        try:
            obj = self._put(sub.obj, self.store.create)
        except StoreError as e:
            self.rejected.append({"document": sub.document, "kind": sub.kind, "name": sub.key, "error": str(e),
                                  "file": sub.source, "at": sub.at})
            self.timeline.append((self.loop.now, f"rejected {sub.kind} {sub.key}: {e}"))
            return
        if sub.kind == "Job":
            key = self._record_job(obj)
            self.timeline.append((self.loop.now, f"job {key} submitted"))

    def _cluster_event(self, ev: ClusterEvent) -> None:
        self.timeline.append((self.loop.now, f"{ev.action} {ev.node}"))
        if ev.action == "NodeDown":
            self.kubelets.node_down(ev.node)
        else:
            self.kubelets.node_up(ev.node)

    # ------------------------------------------------------------------ the loop
    def _dispatch(self, ev: WatchEvent) -> None:
        self._idle_wakeups = 0
        if ev.kind in _SCHEDULER_KIND_SET and apply_event(self.cache, ev.type, ev.kind, ev.object) and not (
                ev.kind == "Pod" and self._own_condition_writes[0] < ev.revision <= self._own_condition_writes[1]):
            self.dirty = True
        self.kubelets.on_event(ev)
        self.numa.on_event(ev)
        self.collector.on_event(ev, self.loop.now)
        interested = self._controllers_of.get(ev.kind)
        if interested is None:
            interested = self._controllers_of[ev.kind] = watching(self.controllers, ev.kind)
        for c in interested:
            c.on_event(ev)
        if ev.kind == "Job":
            self._track_job(ev)
        elif ev.kind in ("JobFlow", "CronJob"):
            self._track_workflow(ev)

    def _collect_usage(self) -> None:
        """A collection of node load, as the collector running every ``metrics.interval`` would
        make it (before a session, once an interval has passed since the last one)."""
        last = self._usage_collected
        if last is not None and self.loop.now - last < self.metrics_conf.interval:
            return
        self._usage_collected = self.loop.now
        self._usage_due = None
        self.cache.set_node_usage(derived_usage(self.cache, self.loop.now))

    def _usage_changed(self) -> None:
        """When pods started or ended since the last collection, the next collection (one
        interval after it) would see another load: make it a time a session is due. Load that
        no longer changes makes nothing due, so a simulation with nothing left to do can end."""
        if self._usage_due is not None or self._usage_checked == self.store.revision:
            return
        self._usage_checked = self.store.revision
        seen = self.cache.node_usage
        now = derived_usage(self.cache, self.loop.now)
        if any(seen.get(n) is None or (seen[n].cpu, seen[n].memory) != (u.cpu, u.memory) for n, u in now.items()):
            last = self._usage_collected
            self._usage_due = self.loop.now if last is None else last + self.metrics_conf.interval

    def _settle(self) -> None:
        for _ in range(10_000):
            # Every consumer (cache ingest, kubelets, collector, controllers) only reads event
            # objects and keeps them as its informer view: they are shared, not copied.
            events = self.store.watch(self.revision, copy=False)
            for ev in events:
                self.revision = ev.revision
                self._dispatch(ev)
            progressed = bool(events)
            for i, c in enumerate(self.controllers):
                wake = c.run(self.loop.now)
                if wake is not None and wake > self.loop.now:
                    self._wakeups[i] = wake
                else:
                    self._wakeups.pop(i, None)
            if self.store.revision != self.revision:
                progressed = True
            if self.loop.fire_due():
                progressed = True
            if not progressed:
                return
        raise RuntimeError("simulation did not settle (controllers keep writing)")

    def _compact(self) -> None:
        # Everything up to self.revision has been dispatched: the store need not keep it.
        if isinstance(self.store, Compactable):
            self.store.compact(self.revision)

    def _schedule(self) -> None:
        if self.metrics_conf.enabled:
            self._collect_usage()
        t0 = time.perf_counter()
        result = run_once(self.cache, self.config, self.plugins, self.actions, now=self.loop.now, rng=self.rng)
        self.session_seconds.append(time.perf_counter() - t0)
        self.sessions += 1
        self.last_session = self.loop.now
        self.dirty = False
        # A plugin's wake-up that keeps deciding nothing is not followed for ever: after
        # _IDLE_WAKEUPS sessions in a row without a bind or an eviction, only a change does.
        if self._woken:
            self._idle_wakeups = 0 if (result.binds or result.evictions) else self._idle_wakeups + 1
        self._woken = False
        wake = result.next_wakeup
        useful = wake is not None and wake > self.loop.now and self._idle_wakeups < _IDLE_WAKEUPS
        self._plugin_wakeup = wake if useful else None
        for ns, name, reason in result.evict_requests:
            self.collector.on_eviction(ns, name)
            self.timeline.append((self.loop.now, f"evict {ns}/{name} ({reason})"))
        self.writer.write_decisions(result)
        if result.revisit is not None:  # a verdict changes with the clock alone (a cooldown ends)
            self.loop.at(result.revisit, self._revisit, "revisit")
        # The pending pods' PodScheduled conditions are only what the session just derived: the
        # watch events of these writes do not make the scheduler due again.
        first = self.store.revision
        self.writer.write_pod_conditions()
        self._own_condition_writes = (first, self.store.revision)
        for ns, name, _why in self.writer.take_failures():
            self._resync_pod(ns, name)
        for kind, ns_, name in self.writer.take_stale():
            resync_object(self.cache, self.store, kind, ns_, name)
        # Sampled once the decisions have settled (pods started, jobs Running), not before.
        self._unsampled = result
        if self.sessions % 100 == 0:
            self._compact()
        if self.on_session is not None:
            self.on_session(self.loop.now, result)

    def _resync_pod(self, ns: str, name: str) -> None:
        resync_pod(self.cache, self.store, ns, name)

    def _revisit(self) -> None:
        self.dirty = True

    def _track_workflow(self, ev: WatchEvent) -> None:
        md = ev.object.get("metadata") or {}
        ident = (ev.kind, f"{md.get('namespace', 'default')}/{md.get('name')}")
        obj = ev.object
        if ev.kind == "JobFlow":
            phase = ((obj.get("status") or {}).get("state") or {}).get("phase")
            open_ = phase not in FINAL_JOBFLOW_PHASES
        else:
            open_ = (obj.get("spec") or {}).get("suspend") is not True
        if ev.type != "DELETED" and open_:
            self._open_workflows.add(ident)
        else:
            self._open_workflows.discard(ident)

    def _track_job(self, ev: WatchEvent) -> None:
        md = ev.object.get("metadata") or {}
        key = f"{md.get('namespace', 'default')}/{md.get('name')}"
        rec = self.jobs.get(key)
        if ev.type == "ADDED" and (rec is None or rec.phase in FINAL_JOB_PHASES) and (group := group_of(ev.object)):
            # A job a CronJob or a JobFlow created: followed from now, like a submitted one.
            self._record_job(ev.object)
            self.timeline.append((self.loop.now, f"job {key} created by {group}"))
            rec = self.jobs[key]
        if rec is None:
            return
        if ev.type == "DELETED":
            if rec.finished is None:
                rec.finished = self.loop.now
                self._set_phase(rec, rec.phase if rec.phase in FINAL_JOB_PHASES else "Terminated")
            return
        status = ev.object.get("status") or {}
        phase = (status.get("state") or {}).get("phase") or rec.phase
        if phase != rec.phase:
            self.timeline.append((self.loop.now, f"job {key} {rec.phase} -> {phase}"))
        self._set_phase(rec, phase)
        rec.retry_count = int(status.get("retryCount", 0) or 0)
        pods = {k: int(status.get(k, 0) or 0) for k in ("pending", "running", "succeeded", "failed")}
        # Upstream's final KillJob writes zero counts (retained pods are not counted); keep the
        # last real counts so the report says how the job's pods ended.
        if phase not in ("Pending", "Running") and not any(pods.values()):
            pods = {**rec.pods, "pending": 0, "running": 0}
        rec.pods = pods
        if phase == "Running" and rec.started is None:
            rec.started = self.loop.now
        if phase in FINAL_JOB_PHASES and rec.finished is None:
            rec.finished = self.loop.now
        elif phase not in FINAL_JOB_PHASES:
            rec.finished = None

    def _set_phase(self, rec: JobRecord, phase: str) -> None:
        was, now = rec.phase in FINAL_JOB_PHASES, phase in FINAL_JOB_PHASES
        if was != now:
            self._finished_jobs += 1 if now else -1
        rec.phase = phase

    def _all_done(self) -> bool:
        if self._outstanding or self._open_workflows:
            return False
        if self.jobs:
            return self._finished_jobs == len(self.jobs)
        # No vcjobs: done when every pod has finished.
        return all(t.status.name in ("Succeeded", "Failed") for t in self.cache.tasks.values()) and bool(
            self.cache.tasks
        )

    def _next_tick(self) -> float:
        now = self.loop.now
        tick = math.ceil(now / self.period - 1e-9) * self.period
        if self.last_session is not None and tick <= self.last_session + 1e-9:
            tick = self.last_session + self.period
        return max(tick, now)

    def run(self, until: float = math.inf) -> SimulationResult:
        wall0 = time.perf_counter()
        self.loop.fire_due()
        self.end_reason = "stalled"
        while True:
            self._settle()
            if self._unsampled is not None:
                self.collector.sample(self.loop.now, self._unsampled)
                self._unsampled = None
            elif self.collector.counts_changed and not (self.dirty and self._next_tick() <= self.loop.now + 1e-9):
                self.collector.sample(self.loop.now)  # a session due now samples after itself
            if (self.stop_when_done and self._all_done()) or (self.stop_when is not None and self.stop_when()):
                self.end_reason = "finished"
                break
            next_times = [t for t in (self.loop.next_time(), *self._wakeups.values()) if t is not None]
            if not self.dirty and self.cache.take_status_changes():
                self.dirty = True
            if self.metrics_conf.enabled:
                self._usage_changed()
            for due in ("_plugin_wakeup", "_usage_due"):
                at = getattr(self, due)
                if at is None:
                    continue
                if at <= self.loop.now + 1e-9:
                    if due == "_plugin_wakeup":
                        self._plugin_wakeup = None
                        self._woken = not self.dirty
                    self.dirty = True
                else:
                    next_times.append(at)
            if self.dirty:
                tick = self._next_tick()
                if tick <= self.loop.now + 1e-9:
                    self._schedule()
                    continue
                next_times.append(tick)
            if not next_times:
                break
            nxt = min(next_times)
            if nxt > until:
                self.loop.advance_to(until)
                self.end_reason = "until"
                break
            self.loop.advance_to(nxt)
            self.loop.fire_due()
            if self._progress is not None:
                self._progress(self.loop.now, self._finished_jobs, len(self.jobs))
        return self._result(time.perf_counter() - wall0)

    def _result(self, wall: float) -> SimulationResult:
        self.collector.sample(self.loop.now)
        reasons = self.explain_unfinished()
        for key, why in reasons.items():
            if key in self.jobs:
                self.jobs[key].reason = why
        self.collector.set_reasons(reasons)
        m = self.metrics
        m.end_reason = self.end_reason
        m.session_seconds = list(self.session_seconds)
        m.virtual_seconds = self.loop.now
        m.wall_seconds = wall
        m.sessions = self.sessions
        podgroups = {}
        diagnosed: dict[str, Diagnosis] = {}
        for pg in self.store.list("PodGroup"):
            md = pg["metadata"]
            key = f"{md.get('namespace', 'default')}/{md['name']}"
            podgroups[key] = (pg.get("status") or {}).get("phase", "Pending")
            job = self.cache.pg_jobs.get(key)
            diagnosis = self.cache.memo.diagnosis(job) if job is not None else None
            if diagnosis is not None:
                owner = next((r.get("name") for r in md.get("ownerReferences") or [] if r.get("kind") == "Job"), None)
                diagnosed[f"{md.get('namespace', 'default')}/{owner}" if owner else key] = diagnosis
        # Jobs that never started say why: the diagnosis of their last session.
        for key, rec in self.jobs.items():
            rec.why = diagnosed.get(key) if rec.started is None else None
        for jm in m.jobs:
            d = diagnosed.get(jm.key) if jm.start is None else None
            jm.pending_reason, jm.pending_hint = (str(d.reason), d.hint) if d is not None else ("", "")
        self.collector.set_spans()
        self.collector.record_cluster()
        if m.topology:
            spans = {j.key: j for j in m.jobs}
            for key, rec in self.jobs.items():
                sj = spans.get(key)
                rec.span = None if sj is None or not sj.span_nodes else {
                    "nodes": sj.span_nodes, "domains": sj.span_domains, "hypernode": sj.span_hypernode,
                    "tier": sj.span_tier}
        queues = {}
        for q in self.store.list("Queue"):
            st = q.get("status") or {}
            queues[q["metadata"]["name"]] = {"state": st.get("state", "Open")}
        workflows = self.workflows()
        m.workflows = workflows
        return SimulationResult(
            jobs=self.jobs, podgroups=podgroups, queues=queues, rejected=self.rejected,
            virtual_seconds=self.loop.now, sessions=self.sessions, wall_seconds=wall,
            session_seconds=self.session_seconds, timeline=self.timeline, end_reason=self.end_reason,
            topology=m.topology, workflows=workflows,
        )

    def workflow_runs_after(self, t: float) -> dict[str, int]:
        """Open workflow (``"JobFlow ns/name"`` or ``"CronJob ns/name"``) → how many jobs it created
        after ``t``: a forecast's measure of whether it has seen what a workflow does next."""
        counts = {f"{kind} {key}": 0 for kind, key in self._open_workflows}
        for r in self.jobs.values():
            if r.group in counts and r.submitted > t:
                counts[r.group] += 1
        return counts

    def workflows(self) -> list[Workflow]:
        """The JobFlows and CronJobs in the store now, with every job they created (deleted ones too)."""
        objects = [*self.store.list("JobFlow"), *self.store.list("CronJob")]
        if not objects:
            return []
        runs = [JobRun(k, r.group, r.phase, r.submitted) for k, r in self.jobs.items() if r.group]
        return workflows_of(objects, runs, self.loop.now)

    def explain_unfinished(self) -> dict[str, str]:
        """Job key → why it had not finished when the run stopped.

        Jobs are the vcjobs, or for workloads of plain PodGroups, the PodGroups. A job that
        never started gets its PodGroup's ``Unschedulable`` condition (upstream's fit-error
        text) or, without one, the PodGroup's phase; either way followed by the resource no
        node could hold (:mod:`pyvolcano.cache.unplaceable`), if any. A job still running gets
        :data:`ENDLESS` when some of its pods have no duration, otherwise why the run stopped.
        """
        from pyvolcano.cache.unplaceable import unplaceable_reason

        if self.jobs:
            started = {k: r.started is not None for k, r in self.jobs.items() if r.phase not in FINAL_JOB_PHASES}
        else:
            started = {k: jm.start is not None for k, jm in self.collector.jobs.items() if jm.end is None}
        if not started:
            return {}
        endless: set[str] = set()
        if self.kubelets.default_duration is None:
            for pod in self.store.list("Pod"):
                md = pod.get("metadata") or {}
                ann = md.get("annotations") or {}
                if (pod.get("status") or {}).get("phase") == "Running" and DURATION not in ann:
                    owner = (ann.get(JOB_NAME_KEY) or (md.get("labels") or {}).get(JOB_NAME_KEY)
                             or ann.get(GROUP_NAME_KEY))
                    if owner:
                        endless.add(f"{md.get('namespace', 'default')}/{owner}")
        groups: dict[str, dict[str, Any]] = {}
        for obj in self.store.list("PodGroup"):
            md = obj.get("metadata") or {}
            ns = md.get("namespace", "default")
            groups.setdefault(f"{ns}/{md.get('name')}", obj)
            for ref in md.get("ownerReferences") or []:
                if ref.get("kind") == "Job":
                    groups[f"{ns}/{ref.get('name')}"] = obj
        out: dict[str, str] = {}
        for key, has_started in started.items():
            if key in endless:  # some of its pods run (a plain PodGroup may not be Running yet)
                out[key] = ENDLESS
                continue
            if has_started:
                if self.end_reason == "until":
                    out[key] = "still running when the run stopped at --until"
                continue
            pg = groups.get(key)
            if pg is None:
                out[key] = "no PodGroup was created"
                continue
            status = pg.get("status") or {}
            why = next((str(c.get("message") or c.get("reason") or "") for c in status.get("conditions") or []
                        if c.get("type") == "Unschedulable" and c.get("status") == "True"), "")
            if not why:
                phase = status.get("phase", "Pending")
                why = "PodGroup Pending: not enqueued" if phase == "Pending" else f"PodGroup {phase}"
            md = pg["metadata"]
            job = self.cache.pg_jobs.get(f"{md.get('namespace', 'default')}/{md['name']}")
            extra = unplaceable_reason(self.cache, job) if job is not None else ""
            out[key] = f"{why} ({extra})" if extra else why
        return out


def _bind(fn: Callable[[Any], None], arg: Any) -> Callable[[], None]:
    def call() -> None:
        fn(arg)

    return call


def _default_controllers(*, store: Any, entropy: Entropy) -> list[Any]:
    from pyvolcano.controllers import default_controllers
    from pyvolcano.controllers.ephemeral_volume import EphemeralVolumeController
    from pyvolcano.controllers.resourceclaim import ResourceClaimController
    from pyvolcano.runtime.dra_driver import GpuDriver

    # kube-controller-manager's ResourceClaim and ephemeral volume controllers and a GPU
    # driver's ResourceSlices (once the cluster has a DeviceClass): the simulated cluster has no
    # others.
    return [*default_controllers(store=store, entropy=entropy), ResourceClaimController(store=store, entropy=entropy),
            EphemeralVolumeController(store=store), GpuDriver(store=store, gated=True)]

