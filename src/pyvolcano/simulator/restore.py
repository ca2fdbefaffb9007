"""A cluster's state restored in a simulation: objects that already exist, pods that already run.

:func:`restore_state` creates the manifests of a state (a snapshot's documents, or what a
live cluster lists) in a :class:`~pyvolcano.simulator.runtime.Simulation` as objects that
exist already: Volcano Jobs that still have pods to create or run, their PodGroups and pods,
running pods adopted by the kubelets with the end time their runtime gives. ``simulate
--cluster <snapshot>`` and the forecasts (:mod:`pyvolcano.forecast.eta`) start from it.

Runtimes (:func:`runtime_of`): a pod runs for ``pyvolcano.io/duration``, else its
``spec.activeDeadlineSeconds`` (the job's deadline, copied into every pod of the job), else
the default of its queue, else the global default, else for ever ("unknown"). A running pod
counts its runtime from ``status.startTime``; one already past it ends at ``now``. Pending pods
get the same rule, written to their duration annotation so the kubelets honour it.

The state's CronJobs, JobTemplates and JobFlows are restored too, with the finished jobs a
workflow owns (a flow's completed targets), so their controllers create in the simulation the
jobs they would create on the cluster: a flow's next steps once their targets complete, a
CronJob's runs at its scheduled times. Those jobs' pods get the same runtime rule through their
templates.

Invariants: deterministic (objects created in creation-timestamp order, then by kind and
name); the documents given are not modified.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyvolcano.api.duration import parse_duration
from pyvolcano.api.names import GROUP_NAME_KEY, JOB_API_VERSION
from pyvolcano.runtime.kubelet import DURATION
from pyvolcano.store.base import StoreError, from_rfc3339

if TYPE_CHECKING:
    from pyvolcano.simulator.runtime import Simulation

__all__ = ["RuntimeAssumption", "RuntimePolicy", "assumptions", "doc_key", "restore_state", "running_pods",
           "runtime_of"]

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


def _md(doc: Mapping[str, Any]) -> dict[str, Any]:
    md = doc.get("metadata")
    return md if isinstance(md, dict) else {}


def doc_key(doc: Mapping[str, Any]) -> str:
    """``namespace/name`` of a manifest (``default`` when it names no namespace)."""
    md = _md(doc)
    return f"{md.get('namespace') or 'default'}/{md.get('name')}"


def _pod_queue(pod: Mapping[str, Any], pg_queues: Mapping[str, str]) -> tuple[str, str]:
    md = _md(pod)
    group = str((md.get("annotations") or {}).get(GROUP_NAME_KEY, ""))
    job = f"{md.get('namespace') or 'default'}/{group}" if group else doc_key(pod)
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
    pg_queues = {doc_key(d): str((d.get("spec") or {}).get("queue") or "default")
                 for d in docs if d.get("kind") == "PodGroup"}
    out = []
    pods: set[str] = set()
    for d in docs:
        if d.get("kind") != "Pod":
            continue
        pods.add(doc_key(d))
        if (d.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        job, queue = _pod_queue(d, pg_queues)
        source, seconds = runtime_of(d, queue, policy)
        ends_at = None
        if _is_running(d) and seconds is not None:
            started = _timestamp(d, ("status", "startTime")) or _timestamp(d, ("metadata", "creationTimestamp"))
            ends_at = max(now, (started if started is not None else now) + seconds)
        out.append(RuntimeAssumption(doc_key(d), job, queue, source, seconds, ends_at))
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


def restore_state(sim: Simulation, docs: Sequence[Mapping[str, Any]], *, now: float, policy: RuntimePolicy,
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
                        doc_key(d), dict(d)))
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


def running_pods(docs: Sequence[Mapping[str, Any]]) -> set[str]:
    """The ``namespace/name`` of the running pods of ``docs``."""
    return {doc_key(d) for d in docs if d.get("kind") == "Pod" and _is_running(d)}
