"""Workflows as the operator views show them: a JobFlow's steps and a CronJob's runs.

A **JobFlow** is shown as its steps in flow order, each with its targets and the phase of its job
``<flow>-<step>`` (empty when the job does not exist yet: the step waits for its targets, or its
job was deleted by ``jobRetainPolicy: delete``), and the flow's phase. A **CronJob** is shown as
the jobs it created, in creation order, with its next run (:func:`pyvolcano.controllers.cronjob.next_run`)
and last scheduled time. A job belongs to a workflow through its controller owner reference
(:func:`group_of`).

The simulator, the dashboard and ``queue top`` build these from plain manifests, so a live
cluster, a snapshot and a simulated run look the same. Everything here is a pure function of
its inputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyvolcano.api.jobflow import flow_job_name, flow_steps, topological_order
from pyvolcano.controllers.cronjob import next_run
from pyvolcano.store.base import from_rfc3339

__all__ = ["JobRun", "Workflow", "WorkflowStep", "group_of", "workflows_of"]

_WORKFLOW_KINDS = ("CronJob", "JobFlow")


@dataclass(frozen=True, slots=True)
class JobRun:
    """A job as a workflow sees it."""

    key: str       # namespace/name
    group: str     # "JobFlow ns/name", "CronJob ns/name" or "" (see group_of)
    phase: str     # its job phase ("" before the job controller wrote one)
    created: float | None = None


@dataclass(frozen=True, slots=True)
class WorkflowStep:
    name: str
    job: str                          # the job's name
    phase: str                        # its job's phase; "" while it does not exist
    targets: tuple[str, ...] = ()
    layer: int = 0                    # the step's depth in the flow's graph (0: no targets)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "job": self.job, "phase": self.phase, "targets": list(self.targets),
                "layer": self.layer}


@dataclass(frozen=True, slots=True)
class Workflow:
    kind: str                         # "JobFlow" or "CronJob"
    key: str                          # namespace/name
    phase: str                        # a JobFlow's phase; a CronJob's "Suspended" or "Active"
    steps: tuple[WorkflowStep, ...]   # a JobFlow's flows, a CronJob's jobs (name = job name)
    schedule: str = ""                # a CronJob's schedule (with its time zone)
    next_run: float | None = None     # a CronJob's next run, virtual seconds
    last_schedule: float | None = None

    @property
    def group(self) -> str:
        return f"{self.kind} {self.key}"

    @property
    def waiting(self) -> tuple[WorkflowStep, ...]:
        """The steps whose job is still to come (a JobFlow's steps without a job)."""
        return tuple(s for s in self.steps if not s.phase) if self.kind == "JobFlow" else ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "name": self.key, "phase": self.phase,
                               "steps": [s.to_dict() for s in self.steps]}
        if self.kind == "CronJob":
            out.update({"schedule": self.schedule, "next_run": self.next_run, "last_schedule": self.last_schedule})
        return out


def group_of(job: Mapping[str, Any]) -> str:
    """``"<kind> <namespace>/<name>"`` of the CronJob or JobFlow controlling ``job``, else ``""``."""
    md = job.get("metadata") or {}
    for ref in md.get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") is True and ref.get("kind") in _WORKFLOW_KINDS:
            return f"{ref['kind']} {md.get('namespace') or 'default'}/{ref.get('name')}"
    return ""


def _key(obj: Mapping[str, Any]) -> str:
    md = obj.get("metadata") or {}
    return f"{md.get('namespace') or 'default'}/{md.get('name')}"


def _time(text: Any) -> float | None:
    try:
        return from_rfc3339(text) if isinstance(text, str) else None
    except ValueError:
        return None


def job_runs(jobs: Iterable[Mapping[str, Any]]) -> list[JobRun]:
    """:class:`JobRun` of each Volcano Job manifest."""
    return [JobRun(_key(j), group_of(j), str(((j.get("status") or {}).get("state") or {}).get("phase") or ""),
                   _time((j.get("metadata") or {}).get("creationTimestamp"))) for j in jobs]


def workflows_of(objects: Iterable[Mapping[str, Any]], jobs: Sequence[JobRun], now: float) -> list[Workflow]:
    """The JobFlows and CronJobs among ``objects`` (other kinds are ignored), sorted by kind and
    key, with ``jobs`` (every job known, the deleted ones a simulation remembers included)."""
    by_key = {j.key: j for j in jobs}
    by_group: dict[str, list[JobRun]] = {}
    for j in jobs:
        if j.group:
            by_group.setdefault(j.group, []).append(j)
    out: list[Workflow] = []
    for obj in objects:
        kind = obj.get("kind")
        if kind == "JobFlow":
            out.append(_jobflow(obj, by_key))
        elif kind == "CronJob":
            out.append(_cronjob(obj, by_group.get(f"CronJob {_key(obj)}", []), now))
    return sorted(out, key=lambda w: (w.kind, w.key))


def _jobflow(flow: Mapping[str, Any], jobs: Mapping[str, JobRun]) -> Workflow:
    key = _key(flow)
    ns, _, name = key.partition("/")
    steps = flow_steps(flow)
    layer = {n: i for i, names in enumerate(topological_order(steps)) for n in names}
    out = []
    for s in steps:
        job = flow_job_name(name, s.name)
        run = jobs.get(f"{ns}/{job}")
        out.append(WorkflowStep(s.name, job, run.phase or "Pending" if run is not None else "", s.targets,
                                layer.get(s.name, 0)))
    phase = str(((flow.get("status") or {}).get("state") or {}).get("phase") or "Pending")
    return Workflow("JobFlow", key, phase, tuple(out))


def _cronjob(cj: Mapping[str, Any], runs: list[JobRun], now: float) -> Workflow:
    spec = cj.get("spec") or {}
    st = cj.get("status") or {}
    ordered = sorted(runs, key=lambda r: (r.created if r.created is not None else float("inf"), r.key))
    steps = tuple(WorkflowStep(r.key.partition("/")[2], r.key.partition("/")[2], r.phase or "Pending")
                  for r in ordered)
    zone = spec.get("timeZone")
    schedule = str(spec.get("schedule") or "") + (f" ({zone})" if zone else "")
    phase = "Suspended" if spec.get("suspend") is True else "Active"
    return Workflow("CronJob", _key(cj), phase, steps, schedule=schedule, next_run=next_run(cj, now),
                    last_schedule=_time(st.get("lastScheduleTime")))
