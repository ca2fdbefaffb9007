"""``job run --dry-run``: what submitting a job would do, without submitting it.

Four answers, each from the code that would act on the real submission:

* **admission**: the job's documents are created, after the state's Queues and
  PriorityClasses, in an in-memory store with :class:`~pyvolcano.admission.VolcanoAdmission`
  (what ``validate`` uses); a refusal is reported with the webhook's message and nothing else
  is tried;
* **placed now**: the state is *frozen* (none of its pods ends) and the job is submitted at
  ``now``; it is placed now if the controllers and the scheduler start it within
  :data:`NOW_WINDOW` seconds (the job controller creates the PodGroup, a session enqueues it,
  the controller creates the pods, a session binds them). Otherwise the diagnosis of its first
  session left short says why;
* **preemptions and reclaims**: the evictions of that frozen run that a frozen run without the
  job does not make (other pending jobs may preempt on their own);
* **when**: the estimate of :mod:`pyvolcano.forecast.eta` with the job added; it counts the jobs
  the cluster's JobFlows and CronJobs create meanwhile, and ``upcoming`` lists those created
  before the job starts (all of them within the horizon when it does not start).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyvolcano.api.names import JOB_API_VERSION, SCHEDULING_API_VERSION
from pyvolcano.conf.schema import SchedulerConfiguration
from pyvolcano.forecast.eta import DEFAULT_HORIZON, estimate_starts, forecast
from pyvolcano.runtime.registry import Registry
from pyvolcano.simulator.restore import RuntimePolicy
from pyvolcano.simulator.state import ClusterState
from pyvolcano.store.base import StoreError, clone, to_rfc3339

__all__ = ["NOW_WINDOW", "DryRunError", "dry_run_document", "job_of"]

NOW_WINDOW = 10.0
"""Seconds of a frozen state within which a job that starts counts as placed now."""


class DryRunError(Exception):
    """The job file does not hold exactly one job (exit status 2)."""


def job_of(docs: Sequence[Mapping[str, Any]], source: str) -> tuple[str, str]:
    """``(kind, ns/name)`` of the one Job (or PodGroup) in ``docs``; raises :class:`DryRunError`."""
    kinds = ((JOB_API_VERSION, "Job"), (SCHEDULING_API_VERSION, "PodGroup"))
    jobs = [d for d in docs if (d.get("apiVersion"), d.get("kind")) in kinds]
    if len(jobs) != 1:
        raise DryRunError(f"{source}: expected one {JOB_API_VERSION} Job (or one {SCHEDULING_API_VERSION} PodGroup "
                          f"with its Pods); found {len(jobs)}")
    md = jobs[0].get("metadata") or {}
    if not isinstance(md, dict) or not isinstance(md.get("name"), str) or not md["name"]:
        raise DryRunError(f"{source}: {jobs[0].get('kind')}: metadata.name: expected the job's name")
    return str(jobs[0]["kind"]), f"{md.get('namespace') or 'default'}/{md['name']}"


def _admit(state: ClusterState, docs: Sequence[Mapping[str, Any]]) -> list[str]:
    from pyvolcano.admission import VolcanoAdmission
    from pyvolcano.store.memory import InMemoryStore

    store = InMemoryStore(clock=lambda: state.now, admission=VolcanoAdmission())
    for d in state.docs:
        if d.get("kind") in ("Queue", "PriorityClass"):
            try:
                store.restore(clone(dict(d)))
            except StoreError:
                continue  # root/default given twice: the first stays
    errors = []
    for job_doc in docs:
        try:
            store.create(clone(dict(job_doc)))
        except StoreError as e:
            errors.append(str(e))
    return errors


def dry_run_document(state: ClusterState, docs: Sequence[Mapping[str, Any]], source: str,
                     config: SchedulerConfiguration, registry: Registry, *, policy: RuntimePolicy, seed: int = 0,
                     horizon: float = DEFAULT_HORIZON) -> dict[str, Any]:
    """``job run --dry-run``'s document (see the module docstring)."""
    kind, name = job_of(docs, source)
    errors = _admit(state, docs)
    doc: dict[str, Any] = {"job": name, "kind": kind, "now": to_rfc3339(state.now),
                           "admission": {"allowed": not errors, "errors": errors}}
    if errors:
        return doc
    ns, _, short = name.partition("/")
    existing = {d_key(d) for d in state.docs if d.get("kind") == "PodGroup"}

    def resolve(cache: Any) -> Mapping[str, str]:
        if kind == "PodGroup":
            return {name: name} if name in cache.pg_jobs else {}
        owned = sorted(k for k in cache.pg_jobs if k.startswith(f"{ns}/{short}-") and k not in existing)
        return {name: owned[0]} if owned else {}

    frozen = forecast(state.docs, config, registry, now=state.now, policy=policy, track=resolve, seed=seed,
                      horizon=NOW_WINDOW, extra=docs, freeze=True)
    baseline = forecast(state.docs, config, registry, now=state.now, policy=policy, track=lambda _c: {},
                        seed=seed, horizon=NOW_WINDOW, freeze=True)
    before = {(pod, reason) for _t, pod, reason in baseline.evictions}
    placed = name in frozen.starts
    evictions = [{"pod": pod, "action": reason} for _t, pod, reason in frozen.evictions
                 if (pod, reason) not in before and reason in ("preempt", "reclaim", "gangpreempt", "gangreclaim")]
    estimates, fc = estimate_starts(state.docs, [name], config, registry, now=state.now, policy=policy, seed=seed,
                                    horizon=horizon, extra=docs, resolve=resolve)
    e = estimates[name]
    start = frozen.starts[name] if placed else e.start
    upcoming = [u.to_dict(state.now) for u in fc.upcoming if start is None or u.created <= start]
    doc.update({
        "placed_now": placed,
        "start": None if start is None else to_rfc3339(start),
        "start_in_seconds": None if start is None else round(start - state.now, 6),
        "unknown_pods": 0 if placed else e.unknown_pods,
        "message": "now" if placed else e.message,
        "diagnosis": None if placed else frozen.first_diagnoses.get(name),
        "evictions": sorted(evictions, key=lambda v: (v["action"], v["pod"])),
        "upcoming": upcoming,
    })
    return doc


def d_key(d: Mapping[str, Any]) -> str:
    md = d.get("metadata") or {}
    return f"{md.get('namespace') or 'default'}/{md.get('name')}"
