"""Start-time estimates: a forward simulation of the cluster's current state.

The state is the scheduler's inputs as manifests (a snapshot file's documents, or the objects
a live cluster lists). :func:`forecast` loads them into a :class:`~pyvolcano.simulator.runtime.Simulation`
(the real scheduler, controllers and simulated kubelets) whose virtual clock starts at each
object's ``creationTimestamp`` (so job order ties break as they do on the cluster) and then
runs forward from ``now``.

Runtimes (:func:`runtime_of`): a pod runs for ``pyvolcano.io/duration``, else its
``spec.activeDeadlineSeconds`` (the job's deadline, copied into every pod of the job), else
the default of its queue, else the global default, else for ever ("unknown"). A running pod
counts its runtime from ``status.startTime``; one already past it ends at ``now``. Pending pods
get the same rule, written to their duration annotation so the kubelets honour it.

The state's CronJobs, JobTemplates and JobFlows are restored too, with the finished jobs a
workflow owns (a flow's completed targets), so their controllers create in the forecast the jobs
they would create on the cluster: a flow's next steps once their targets complete, a CronJob's
runs at its scheduled times. Those jobs' pods get the same runtime rule through their templates;
:attr:`Forecast.upcoming` says when each was created and started.

A tracked job *starts* at the first session after which it is ready (minAvailable pods
allocated or bound). A job that did not start while running pods of unknown runtime kept
running is re-tried with those pods ending at ``now``: if it starts then, its start depends on
their runtimes and no time is given (:attr:`Estimate.unknown_pods`). Everything is
deterministic: ``now`` and the seed are parameters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyvolcano.api.duration import parse_duration
from pyvolcano.api.names import GROUP_NAME_KEY, JOB_API_VERSION
from pyvolcano.conf.schema import SchedulerConfiguration
from pyvolcano.framework.registry import Registry
from pyvolcano.simulator.kubelet import DURATION
from pyvolcano.store.base import StoreError, from_rfc3339

__all__ = [
    "DEFAULT_HORIZON",
    "Estimate",
    "Forecast",
    "RuntimeAssumption",
    "RuntimePolicy",
    "Tracker",
    "Upcoming",
    "assumptions",
    "estimate_starts",
    "forecast",
    "format_seconds",
    "restore_state",
    "runtime_of",
]

DEFAULT_HORIZON = 30 * 86400.0
"""How far ahead the simulation looks (seconds) unless told otherwise."""
Tracker = Callable[[Any], Mapping[str, str]]
"""Given the simulation's scheduler cache: job name → PodGroup key of the jobs to follow."""
# Creation order for objects without a creationTimestamp (and ties): what must exist first.
_KIND_RANK = {"PriorityClass": 0, "Queue": 1, "Node": 2, "HyperNode": 3, "StorageClass": 4, "CSIDriver": 4,
              "CSINode": 4, "PersistentVolume": 5, "CSIStorageCapacity": 5, "PersistentVolumeClaim": 6, "PodGroup": 7,
              "Job": 8, "Pod": 9, "JobTemplate": 8, "JobFlow": 8, "CronJob": 8}


@dataclass(frozen=True, slots=True)
class RuntimePolicy:
    """Runtimes for pods that declare none: per queue, then global (seconds; None: unknown)."""

    per_queue: Mapping[str, float] = field(default_factory=dict)
    default: float | None = None


@dataclass(frozen=True, slots=True)
class RuntimeAssumption:
    """How long one pod is assumed to run, and why."""

    pod: str
    job: str
    queue: str
    source: str
    """``duration`` (its annotation), ``activeDeadlineSeconds``, ``queue default``, ``default`` or ``unknown``."""
    runtime: float | None
    ends_at: float | None
    """Absolute virtual time the pod ends (running pods only); None if unknown or not running."""

    def to_dict(self, now: float) -> dict[str, Any]:
        return {"pod": self.pod, "job": self.job, "queue": self.queue, "source": self.source,
                "runtime_seconds": self.runtime,
                "ends_in_seconds": None if self.ends_at is None else round(self.ends_at - now, 6)}


@dataclass(slots=True)
class Forecast:
    """One forward simulation's answer."""

    now: float
    starts: dict[str, float]
    """Tracked PodGroup key → absolute virtual time it became ready."""
    evictions: list[tuple[float, str, str]]
    """(time, ``ns/pod``, reason) of every eviction the sessions asked for."""
    rejected: list[dict[str, Any]]
    """Objects the store refused (admission), as :attr:`Simulation.rejected` records them."""
    end_reason: str
    first_diagnoses: dict[str, dict[str, Any]]
    """Tracked key → its diagnosis in the first session it was left short (``Diagnosis.to_dict``)."""
    upcoming: list[Upcoming] = field(default_factory=list)
    """The jobs a JobFlow or CronJob created during the forecast, in creation order."""


@dataclass(frozen=True, slots=True)
class Upcoming:
    """A job that does not exist yet but that a workflow creates within the forecast."""

    job: str            # namespace/name
    created_by: str     # "JobFlow ns/name" or "CronJob ns/name"
    created: float      # absolute virtual time
    started: float | None

    def to_dict(self, now: float) -> dict[str, Any]:
        return {"job": self.job, "created_by": self.created_by, "created_in_seconds": round(self.created - now, 6),
                "start_in_seconds": None if self.started is None else round(self.started - now, 6)}


@dataclass(frozen=True, slots=True)
class Estimate:
    """When one pending job is expected to start."""

    job: str
    start: float | None
    """Absolute virtual time, or None."""
    unknown_pods: int = 0
    """Pods without a runtime its start depends on (``start`` is then None)."""
    message: str = ""

    def to_dict(self, now: float) -> dict[str, Any]:
        return {"start_in_seconds": None if self.start is None else round(self.start - now, 6),
                "unknown_pods": self.unknown_pods, "message": self.message}


def _md(doc: Mapping[str, Any]) -> dict[str, Any]:
    md = doc.get("metadata")
    return md if isinstance(md, dict) else {}


def _key(doc: Mapping[str, Any]) -> str:
    md = _md(doc)
    return f"{md.get('namespace') or 'default'}/{md.get('name')}"


def _pod_queue(pod: Mapping[str, Any], pg_queues: Mapping[str, str]) -> tuple[str, str]:
    md = _md(pod)
    group = str((md.get("annotations") or {}).get(GROUP_NAME_KEY, ""))
    job = f"{md.get('namespace') or 'default'}/{group}" if group else _key(pod)
    return job, pg_queues.get(job, "default")


def runtime_of(pod: Mapping[str, Any], queue: str, policy: RuntimePolicy) -> tuple[str, float | None]:
    """``(source, seconds)`` of a pod's assumed runtime (see the module docstring)."""
    ann = _md(pod).get("annotations") or {}
    if DURATION in ann:
        seconds = parse_duration(str(ann[DURATION]))
        return ("duration", seconds) if seconds is not None else ("unknown", None)
    deadline = (pod.get("spec") or {}).get("activeDeadlineSeconds")
    if isinstance(deadline, int | float) and not isinstance(deadline, bool) and deadline > 0:
        return "activeDeadlineSeconds", float(deadline)
    if queue in policy.per_queue:
        return "queue default", policy.per_queue[queue]
    if policy.default is not None:
        return "default", policy.default
    return "unknown", None


def _go_duration(seconds: float) -> str:
    text = f"{seconds:.6f}".rstrip("0").rstrip(".")
    return f"{text}s"


def _timestamp(doc: Mapping[str, Any], path: tuple[str, str]) -> float | None:
    value = (doc.get(path[0]) or {}).get(path[1])
    if not isinstance(value, str):
        return None
    try:
        return from_rfc3339(value)
    except ValueError:
        return None


def _is_running(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName")) and (pod.get("status") or {}).get("phase") == "Running"


def assumptions(docs: Sequence[Mapping[str, Any]], policy: RuntimePolicy, now: float) -> list[RuntimeAssumption]:
    """The runtime assumption of every pod in ``docs`` (running pods carry their end time), and
    of every pod a Volcano Job of ``docs`` has still to create (named as its controller names
    them, ``<job>-<task>-<index>``; they are not running)."""
    pg_queues = {_key(d): str((d.get("spec") or {}).get("queue") or "default")
                 for d in docs if d.get("kind") == "PodGroup"}
    out = []
    pods: set[str] = set()
    for d in docs:
        if d.get("kind") != "Pod":
            continue
        pods.add(_key(d))
        if (d.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        job, queue = _pod_queue(d, pg_queues)
        source, seconds = runtime_of(d, queue, policy)
        ends_at = None
        if _is_running(d) and seconds is not None:
            started = _timestamp(d, ("status", "startTime")) or _timestamp(d, ("metadata", "creationTimestamp"))
            ends_at = max(now, (started if started is not None else now) + seconds)
        out.append(RuntimeAssumption(_key(d), job, queue, source, seconds, ends_at))
    for d in docs:
        if not _is_live_vcjob(d):
            continue
        md, spec = _md(d), d.get("spec") or {}
        ns, queue = str(md.get("namespace") or "default"), str(spec.get("queue") or "default")
        group = f"{ns}/{md.get('name')}-{md.get('uid')}"
        for task in _tasks(d):
            template = task.get("template")
            source, seconds = runtime_of(template if isinstance(template, dict) else {}, queue, policy)
            for i in range(_replicas(task)):
                key = f"{ns}/{md.get('name')}-{task.get('name')}-{i}"
                if key not in pods:
                    out.append(RuntimeAssumption(key, group, queue, source, seconds, None))
    return out


# Volcano Job phases after which its controller creates no more pods.
_FINISHED_JOB_PHASES = frozenset({"Completed", "Failed", "Terminated", "Aborted"})


def _is_live_vcjob(doc: Mapping[str, Any]) -> bool:
    """A Volcano Job that still has pods to create or run (not finished, and with a uid)."""
    if doc.get("kind") != "Job" or doc.get("apiVersion") != JOB_API_VERSION or not _md(doc).get("uid"):
        return False
    phase = ((doc.get("status") or {}).get("state") or {}).get("phase")
    return phase not in _FINISHED_JOB_PHASES


def _tasks(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    tasks = (job.get("spec") or {}).get("tasks")
    return [t for t in tasks if isinstance(t, dict)] if isinstance(tasks, list) else []


def _replicas(task: Mapping[str, Any]) -> int:
    n = task.get("replicas", 1)
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 0


def forecast(docs: Sequence[Mapping[str, Any]], config: SchedulerConfiguration, registry: Registry, *,
             now: float, policy: RuntimePolicy, track: Tracker,
             seed: int = 0, horizon: float = DEFAULT_HORIZON, extra: Sequence[Mapping[str, Any]] = (),
             unknown_end_now: bool = False, freeze: bool = False, wanted: Sequence[str] | None = None) -> Forecast:
    """Simulate ``docs`` (plus ``extra``, created at ``now``) forward from ``now``.

    ``track(cache)`` maps the names of the jobs whose start is wanted to their PodGroup keys;
    it is asked after every session (a dry-run job's PodGroup appears only once its controller
    has created it). ``freeze`` keeps the state as it is: none of its pods ends. With
    ``wanted`` (those names), the run ends once every one has started and every open workflow
    has shown what it does next, not at the horizon: every CronJob has created one more job
    (or will create none), after which the forecast suspends the CronJobs (they would create jobs
    for ever), and every JobFlow has ended.
    """
    from pyvolcano.simulator.runtime import Simulation
    from pyvolcano.simulator.workload import Submission

    sim = Simulation(config=config, registry=registry, seed=seed)
    sim.stop_when_done = False  # plain PodGroups and Volcano Jobs may both be waiting
    rejected = restore_state(sim, docs, now=now, policy=policy, unknown_end_now=unknown_end_now, freeze=freeze)
    if extra:
        sim.submit([Submission(at=sim.loop.now, document=i, source="dry-run", obj=dict(d))
                    for i, d in enumerate(extra)])
    starts: dict[str, float] = {}
    evictions: list[tuple[float, str, str]] = []
    diagnoses: dict[str, dict[str, Any]] = {}

    def on_session(t: float, result: Any) -> None:
        for ns, name, reason in result.evict_requests:
            evictions.append((t, f"{ns}/{name}", reason))
        for name, key in track(sim.cache).items():
            job = sim.cache.pg_jobs.get(key)
            if job is None or name in starts:
                continue
            if key in result.diagnoses and name not in diagnoses:
                diagnoses[name] = result.diagnoses[key].to_dict(session=False)
            if job.is_ready():
                starts[name] = t

    sim.on_session = on_session
    if wanted is not None:
        names = list(wanted)

        def answered() -> bool:
            if not all(n in starts for n in names):
                return False
            runs = sim.workflow_runs_after(now)
            crons = [g for g in runs if g.startswith("CronJob ")]
            if not all(runs[g] > 0 or _cron_idle(sim, g) for g in crons):
                return False
            for group in crons:
                ns, _, name = group.partition(" ")[2].partition("/")
                sim.store.patch("CronJob", ns, name, {"spec": {"suspend": True}})
            return len(crons) == len(runs)  # no JobFlow left open

        sim.stop_when = answered
    existing = {_key(d) for d in docs if d.get("kind") == "Job"}
    res = sim.run(until=now + horizon)
    upcoming = sorted((Upcoming(k, r.group, r.submitted, r.started) for k, r in res.jobs.items()
                       if r.group and k not in existing), key=lambda u: (u.created, u.job))
    return Forecast(now=now, starts=starts, evictions=evictions, rejected=rejected + res.rejected,
                    end_reason=res.end_reason, first_diagnoses=diagnoses, upcoming=upcoming)


def _cron_idle(sim: Any, group: str) -> bool:
    """A CronJob that will create nothing more (suspended, or no next time)."""
    from pyvolcano.controllers.cronjob import next_run

    ns, _, name = group.partition(" ")[2].partition("/")
    try:
        cj = sim.store.get("CronJob", ns, name)
    except StoreError:
        return True
    return next_run(cj, sim.loop.now) is None


def restore_state(sim: Any, docs: Sequence[Mapping[str, Any]], *, now: float, policy: RuntimePolicy,
                  unknown_end_now: bool = False, freeze: bool = False, at_timestamps: bool = True
                  ) -> list[dict[str, Any]]:
    """Create the state ``docs`` (taken at ``now``) in the simulation ``sim`` as objects that
    already exist, and return those its store refused.

    With ``at_timestamps`` the virtual clock moves to each object's ``creationTimestamp`` before
    it is created (job-order ties break as on the cluster) and ends at ``now``; without it,
    everything is created at the clock's current instant (time 0 of a ``simulate`` run), in
    creation order, and every time of the state moves with it: a running pod ends after the
    runtime it has left. Runtimes follow :func:`runtime_of` (see the module docstring)."""
    from pyvolcano.simulator.workflows import group_of

    plan = {a.pod: a for a in assumptions(docs, policy, now)}
    job_uids = {str(_md(d)["uid"]) for d in docs if _is_live_vcjob(d)}
    # A workflow's finished jobs stay: a flow creates a step's job only once its targets' jobs
    # exist and completed, and a CronJob counts them in its history.
    kept_finished = {str(_md(d).get("uid")) for d in docs if d.get("kind") == "Job" and group_of(d)}
    created: list[tuple[float, int, str, dict[str, Any]]] = []
    for d in docs:
        ts = _timestamp(d, ("metadata", "creationTimestamp"))
        created.append((min(ts if ts is not None else -math.inf, now), _KIND_RANK.get(str(d.get("kind")), 10),
                        _key(d), dict(d)))
    created.sort(key=lambda c: (c[0], c[1], c[2]))
    offset = 0.0 if at_timestamps else sim.loop.now - now
    if at_timestamps:
        sim.loop.advance_to(next((c[0] for c in created if math.isfinite(c[0])), now))
    exits: list[tuple[str, str, str, float]] = []
    rejected: list[dict[str, Any]] = []
    for ts, _rank, key, doc in created:
        if at_timestamps and math.isfinite(ts) and ts > sim.loop.now:
            sim.loop.advance_to(ts)
        uid = str(_md(doc).get("uid"))
        if doc.get("kind") == "Job" and uid not in job_uids and uid not in kept_finished:
            continue  # a finished Volcano Job: its controller has nothing left to do
        doc = _prepared(doc, None if freeze else plan.get(key), unknown_end_now, freeze, job_uids | kept_finished)
        if doc.get("kind") in ("Job", "JobTemplate"):
            doc = _prepared_job(doc, policy, unknown_end_now, freeze)
        elif doc.get("kind") == "CronJob":
            template = dict((doc.get("spec") or {}).get("jobTemplate") or {})
            prepared = _prepared_job(template, policy, unknown_end_now, freeze)
            doc = {**doc, "spec": {**(doc.get("spec") or {}), "jobTemplate": prepared}}
        try:
            obj = sim.restore(doc)
        except StoreError as e:
            rejected.append({"kind": doc.get("kind"), "name": key, "error": str(e)})
            continue
        a = plan.get(key)
        if doc.get("kind") == "Pod" and _is_running(doc) and not freeze:
            end = now if unknown_end_now and a is not None and a.source == "unknown" else (
                a.ends_at if a is not None else None)
            if end is not None:
                md = _md(obj)
                exits.append((str(md.get("namespace") or "default"), str(md["name"]), str(md.get("uid")),
                              end + offset))
    if at_timestamps:
        sim.loop.advance_to(max(now, sim.loop.now))
    for ns, name, uid, end in exits:
        sim.kubelets.adopt_running(ns, name, uid, end)
    return rejected


def _prepared(doc: dict[str, Any], a: RuntimeAssumption | None, unknown_end_now: bool,
              freeze: bool = False, job_uids: frozenset[str] | set[str] = frozenset()) -> dict[str, Any]:
    """The document as the simulation creates it: owners it does not hold dropped (a Volcano Job
    owner is kept when the state has the Job, ``job_uids``), runtimes written (with
    ``unknown_end_now``, a pending pod of unknown runtime ends as soon as it starts; with
    ``freeze``, no pod of the state ends)."""
    md = dict(_md(doc))
    if freeze and DURATION in (md.get("annotations") or {}):
        md["annotations"] = {k: v for k, v in md["annotations"].items() if k != DURATION}
    refs = [r for r in md.get("ownerReferences") or []
            if isinstance(r, dict) and (r.get("kind") != "Job" or str(r.get("uid")) in job_uids)]
    if refs:
        md["ownerReferences"] = refs
    else:
        md.pop("ownerReferences", None)
    if doc.get("kind") == "Pod" and a is not None and a.source != "duration" and not _is_running(doc):
        duration = _assumed_duration(a.runtime, unknown_end_now)
        if duration is not None:
            md["annotations"] = {**(md.get("annotations") or {}), DURATION: duration}
    return {**doc, "metadata": md}


def _assumed_duration(seconds: float | None, unknown_end_now: bool) -> str | None:
    """The duration annotation of a pod assumed to run ``seconds`` (None: unknown, so none, or
    ``0s`` with ``unknown_end_now``)."""
    runtime = 0.0 if seconds is None and unknown_end_now else seconds
    return None if runtime is None else _go_duration(runtime)


def _prepared_job(doc: dict[str, Any], policy: RuntimePolicy, unknown_end_now: bool, freeze: bool
                  ) -> dict[str, Any]:
    """A Volcano Job as the simulation creates it: each task template carries the runtime its
    pods are assumed to run (as :func:`_prepared` writes it on pending pods), or none with
    ``freeze``."""
    queue = str((doc.get("spec") or {}).get("queue") or "default")
    tasks = []
    for task in _tasks(doc):
        template = dict(task.get("template") or {}) if isinstance(task.get("template"), dict) else {}
        tmd = dict(_md(template))
        ann = {k: v for k, v in (tmd.get("annotations") or {}).items() if not (freeze and k == DURATION)}
        if not freeze and DURATION not in ann:
            duration = _assumed_duration(runtime_of(template, queue, policy)[1], unknown_end_now)
            if duration is not None:
                ann[DURATION] = duration
        if ann:
            tmd["annotations"] = ann
        else:
            tmd.pop("annotations", None)
        tasks.append({**task, "template": {**template, "metadata": tmd}})
    return {**doc, "spec": {**(doc.get("spec") or {}), "tasks": tasks}}


def estimate_starts(docs: Sequence[Mapping[str, Any]], keys: Sequence[str], config: SchedulerConfiguration,
                    registry: Registry, *, now: float, policy: RuntimePolicy, seed: int = 0,
                    horizon: float = DEFAULT_HORIZON, extra: Sequence[Mapping[str, Any]] = (),
                    resolve: Tracker | None = None) -> tuple[dict[str, Estimate], Forecast]:
    """The estimated start of each job ``keys`` (see the module docstring): PodGroup keys, or the
    names ``resolve(cache)`` maps to PodGroup keys (jobs of ``extra``, created at ``now``)."""

    def track(cache: Any) -> Mapping[str, str]:
        return resolve(cache) if resolve is not None else {k: k for k in keys}

    fc = forecast(docs, config, registry, now=now, policy=policy, track=track, seed=seed, horizon=horizon,
                  extra=extra, wanted=keys)
    unknown = [a for a in assumptions(docs, policy, now) if a.source == "unknown"]
    running = _running_pods(docs)
    late = [k for k in keys if k not in fc.starts]
    probe: Forecast | None = None
    if late and unknown:
        groups = {a.job: a.job for a in unknown}

        def track_probe(cache: Any) -> Mapping[str, str]:
            return {**groups, **{k: v for k, v in track(cache).items() if k in late}}

        probe = forecast(docs, config, registry, now=now, policy=policy, track=track_probe, seed=seed,
                         horizon=horizon, extra=extra, unknown_end_now=True)
    out: dict[str, Estimate] = {}
    for key in keys:
        if key in fc.starts:
            out[key] = Estimate(key, fc.starts[key], message=_when(fc.starts[key] - now))
        elif probe is not None and key in probe.starts:
            at = probe.starts[key]
            before = [a for a in unknown
                      if a.job != key and (a.pod in running or probe.starts.get(a.job, at + 1) <= at)]
            n_running = sum(1 for a in before if a.pod in running)
            n_later = len(before) - n_running
            text = f"{n_running} running pod{'' if n_running == 1 else 's'}" if n_running else ""
            if n_later:
                text += f"{' and ' if text else ''}{n_later} pod{'' if n_later == 1 else 's'} starting before it"
            out[key] = Estimate(key, None, len(before), f"unknown: depends on runtimes of {text} without a duration")
        elif fc.end_reason == "until":
            out[key] = Estimate(key, None, message=f"not within {format_seconds(horizon)}")
        else:
            out[key] = Estimate(key, None, message="never: the simulated cluster cannot start it")
    return out, fc


def _running_pods(docs: Sequence[Mapping[str, Any]]) -> set[str]:
    return {_key(d) for d in docs if d.get("kind") == "Pod" and _is_running(d)}


def _when(seconds: float) -> str:
    return "now" if seconds < 1e-9 else f"in {format_seconds(seconds)}"


def format_seconds(seconds: float) -> str:
    """``1h2m3s``-style text of a non-negative number of seconds (sub-second part kept if any)."""
    s = max(0.0, seconds)
    whole = int(s)
    frac = s - whole
    d, rest = divmod(whole, 86400)
    h, rest = divmod(rest, 3600)
    m, sec = divmod(rest, 60)
    parts = [f"{d}d" if d else "", f"{h}h" if h else "", f"{m}m" if m else ""]
    tail = f"{sec + frac:.3f}".rstrip("0").rstrip(".") if frac > 1e-9 else str(sec)
    if tail != "0" or not any(parts):
        parts.append(f"{tail}s")
    return "".join(parts)
