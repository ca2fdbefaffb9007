"""The Workflows view: each JobFlow as a small DAG of its steps, each CronJob with its runs and
its next run.

``{"now": time, "workflows": [...]}``, one entry per JobFlow and CronJob sorted by kind and key
(:class:`pyvolcano.simulator.workflows.Workflow`, whose ``to_dict`` shape it extends):

* a JobFlow's ``steps`` carry ``name``, ``job``, ``phase`` (``""`` while the step's job does not
  exist), ``targets`` and ``layer`` (the column the front-end draws the step in: one more than its
  deepest target), and for a step still to come the forecast's ``created`` / ``start`` times
  (``queue top``'s ``upcoming``), or None beyond the horizon;
* a CronJob's ``steps`` are the jobs it created, oldest first; ``schedule`` (with its time zone),
  ``next_run`` and ``last_schedule`` are RFC 3339 times, and ``upcoming`` the runs the forecast
  makes with when each starts.

A cluster state's view (:func:`workflows_view`) comes from the state's objects and the
:class:`~pyvolcano.dashboard.analysis.Analysis`' forecast; a simulation run's at ``t``
(:func:`run_workflows_view`) from the run's recorded workflows and job times.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyvolcano.dashboard.analysis import Analysis
from pyvolcano.simulator.workflows import job_runs, workflows_of
from pyvolcano.store.base import to_rfc3339

__all__ = ["run_workflows_view", "workflows_view"]


def _time(t: float | None) -> str | None:
    return None if t is None else to_rfc3339(t)


def workflows_view(analysis: Analysis) -> dict[str, Any]:
    state = analysis.state
    docs = state.docs
    if not any(d.get("kind") in ("JobFlow", "CronJob") for d in docs):
        return {"now": to_rfc3339(state.now), "workflows": []}
    flows = workflows_of(docs, job_runs(d for d in docs if d.get("kind") == "Job"), state.now)
    upcoming: dict[str, list[dict[str, Any]]] = {}
    for u in analysis.top().get("upcoming") or []:
        upcoming.setdefault(u["created_by"], []).append(u)
    out = []
    for w in flows:
        entry = w.to_dict()
        coming = {u["job"]: u for u in upcoming.get(w.group, [])}
        ns = w.key.partition("/")[0]
        if w.kind == "JobFlow":
            for step in entry["steps"]:
                if not step["phase"]:
                    u = coming.get(f"{ns}/{step['job']}")
                    step["created"] = None if u is None else u["created"]
                    step["start"] = None if u is None else u["start"]
        else:
            entry["next_run"], entry["last_schedule"] = _time(w.next_run), _time(w.last_schedule)
            entry["upcoming"] = [{"job": u["job"].partition("/")[2], "created": u["created"], "start": u["start"]}
                                 for u in upcoming.get(w.group, [])]
        out.append(entry)
    return {"now": to_rfc3339(state.now), "workflows": out}


def run_workflows_view(workflows: list[Mapping[str, Any]], jobs: Mapping[str, Mapping[str, Any]],
                       t: float) -> dict[str, Any]:
    """The run's workflows (``run.json``'s) at ``t``: each step's phase from its job's times
    (``jobs``: key → ``submit``, ``start``, ``end``, final ``phase``); a job not yet created at
    ``t`` is a step still to come, or no CronJob run yet."""
    out = []
    for w in workflows:
        ns = str(w["name"]).partition("/")[0]
        steps = []
        for step in w["steps"]:
            j = jobs.get(f"{ns}/{step['job']}")
            phase = _phase_at(j, t)
            if w["kind"] == "CronJob" and not phase:
                continue
            steps.append({**step, "phase": phase})
        entry = {**w, "steps": steps}
        if w["kind"] == "JobFlow":
            done = [s["phase"] for s in steps]
            entry["phase"] = ("Succeed" if done and all(p == "Completed" for p in done) else
                              "Failed" if any(p in ("Failed", "Terminated") for p in done) else
                              "Running" if any(done) else "Pending")
        else:
            later = [j["submit"] for s in w["steps"] if (j := jobs.get(f"{ns}/{s['job']}")) and j["submit"] > t]
            nxt = min(later) if later else w.get("next_run")
            entry.update({"next_run": _time(nxt), "last_schedule": None, "upcoming": []})
        out.append(entry)
    return {"now": to_rfc3339(t), "workflows": out}


def _phase_at(job: Mapping[str, Any] | None, t: float) -> str:
    if job is None or job["submit"] > t:
        return ""
    if job["end"] is not None and job["end"] <= t:
        return str(job["phase"])
    if job["start"] is not None and job["start"] <= t:
        return "Running"
    return "Pending"
