"""Start-time estimates: a forward simulation of the cluster's current state.

The state is the scheduler's inputs as manifests (a snapshot file's documents, or the objects
a live cluster lists). :func:`forecast` loads them into a :class:`~pyvolcano.simulator.runtime.Simulation`
(the real scheduler, controllers and simulated kubelets) whose virtual clock starts at each
object's ``creationTimestamp`` (so job order ties break as they do on the cluster) and then
runs forward from ``now``.

The state is restored by :func:`~pyvolcano.simulator.restore.restore_state`, with the pods'
runtimes as :func:`~pyvolcano.simulator.restore.runtime_of` assumes them; its CronJobs,
JobTemplates and JobFlows too, so their controllers create in the forecast the jobs they would
create on the cluster: :attr:`Forecast.upcoming` says when each was created and started.

A tracked job *starts* at the first session after which it is ready (minAvailable pods
allocated or bound). A job that did not start while running pods of unknown runtime kept
running is re-tried with those pods ending at ``now``: if it starts then, its start depends on
their runtimes and no time is given (:attr:`Estimate.unknown_pods`). Everything is
deterministic: ``now`` and the seed are parameters.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyvolcano.conf.schema import SchedulerConfiguration
from pyvolcano.runtime.registry import Registry
from pyvolcano.simulator.restore import RuntimePolicy, assumptions, doc_key, restore_state, running_pods
from pyvolcano.store.base import StoreError

__all__ = [
    "DEFAULT_HORIZON",
    "Estimate",
    "Forecast",
    "Tracker",
    "Upcoming",
    "estimate_starts",
    "forecast",
    "format_seconds",
]

DEFAULT_HORIZON = 30 * 86400.0
"""How far ahead the simulation looks (seconds) unless told otherwise."""
Tracker = Callable[[Any], Mapping[str, str]]
"""Given the simulation's scheduler cache: job name → PodGroup key of the jobs to follow."""


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
    existing = {doc_key(d) for d in docs if d.get("kind") == "Job"}
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
    running = running_pods(docs)
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
