"""The inputs of one simulation, loaded and checked, then run: the body of ``pyvolcano simulate``.

``pyvolcano simulate`` and ``pyvolcano sweep`` both go through these three steps, so a sweep's
cell is the same computation as the simulate command given the same options:

* :func:`load_inputs` checks the combination of options (manifest mode ``cluster`` +
  ``workload``, a snapshot ``cluster`` alone, trace mode ``trace`` [+ ``nodes``], or the
  built-in scenario when none is given) and loads the files; bad input raises
  :class:`InputError` (or the loader's own ``ValueError``: ManifestError, ConfigError,
  TraceError, ArgumentError), whose message is one line naming the file and the field;
* :func:`run_simulation` runs one configuration of those inputs to its end;
* :func:`result_document` is the JSON/YAML document the command prints for one run.

Nothing here prints or reads the wall clock except the simulation's own ``wall_seconds``,
which the commands strip unless asked for timings.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyvolcano.api.duration import DurationError, parse_duration_strict
from pyvolcano.api.manifest import ManifestError
from pyvolcano.conf.schema import SchedulerConfiguration
from pyvolcano.runtime.configuration import load_configuration
from pyvolcano.runtime.registry import Registry, default_registry
from pyvolcano.simulator.metrics import RunMetrics
from pyvolcano.simulator.runtime import Simulation, SimulationResult, check_run_parameters
from pyvolcano.simulator.workload import ClusterEvent, Submission, endless_cronjobs, load_workload

if TYPE_CHECKING:
    from pyvolcano.simulator.state import ClusterState

__all__ = ["InputError", "SimulationInputs", "is_snapshot", "load_inputs", "parse_default_duration", "parse_until",
           "result_document", "run_simulation", "simulate_once"]

Progress = Callable[[float, int, int], None]


class InputError(ValueError):
    """A combination of inputs that cannot run; the message is one line for ``error:``."""


def parse_until(text: str | None) -> float:
    if text is None:
        return math.inf
    try:
        v = parse_duration_strict(text)
    except DurationError as e:
        raise ValueError(f"--until: {e}") from None
    if v <= 0:
        raise ValueError("--until: expected a positive duration such as 24h")
    return v


def parse_default_duration(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        v = parse_duration_strict(text)
    except DurationError as e:
        raise ValueError(f"--default-duration: {e}") from None
    if v <= 0:
        raise ValueError(f"--default-duration: got {text!r}; expected a positive duration such as 10m")
    return v


@dataclass
class SimulationInputs:
    """Everything one ``simulate`` invocation runs: the configurations (one, or two with
    ``--compare``) with their labels, and the workload they all see."""

    configs: list[tuple[str, SchedulerConfiguration]]
    registry: Registry
    seed: int
    horizon: float
    schedule_period: float
    pod_duration: float | None
    scenario: str
    cluster_subs: list[Submission]
    work_subs: list[Submission]
    events: list[ClusterEvent]
    notes: list[str]
    manifest_mode: bool
    cluster: Path | None = None
    state: ClusterState | None = None
    # The file of ``--topology`` (a name of a built-in topology has none): objects rejected
    # from it are bad input, like a cluster file's.
    topology_source: str | None = None


def load_inputs(
    *,
    cluster: Path | None,
    workload: Path | None,
    trace: Path | None,
    trace_format: str | None,
    nodes: Path | None,
    config: Path | None,
    compare: Path | None = None,
    until: str | None = None,
    seed: int = 0,
    schedule_period: float = 1.0,
    default_duration: str | None = None,
    topology: str | None = None,
) -> SimulationInputs:
    """Check the options' combination and load every file, as ``pyvolcano simulate`` does."""
    from pyvolcano.simulator.traces import builtin_scenario, load_trace

    if workload is not None and cluster is None:
        raise InputError("--workload needs --cluster (the Nodes to run on)")
    snapshot = cluster is not None and trace is None and is_snapshot(cluster)
    if cluster is not None and workload is None and trace is None and not snapshot:
        raise InputError("--cluster needs --workload (the Jobs, PodGroups or Pods to run), unless it is a snapshot "
                         "(`pyvolcano snapshot`) that holds them")
    if trace is not None and (cluster is not None or workload is not None):
        raise InputError("--trace replaces --cluster/--workload; use --nodes for the trace's machines")
    if nodes is not None and trace is None:
        raise InputError("--nodes needs --trace (it gives the machines a trace runs on)")
    if trace_format is not None and trace is None:
        raise InputError("--trace-format needs --trace")
    if topology is not None and cluster is not None and trace is None and snapshot:
        raise InputError("--topology does not apply to a snapshot: it runs with the HyperNodes it holds")
    registry = default_registry()
    default_label = "default"
    state = None
    horizon = parse_until(until)
    check_run_parameters(seed=seed, schedule_period=schedule_period)
    pod_duration = parse_default_duration(default_duration)
    topo = None
    if topology is not None:
        from pyvolcano.simulator.hypernodes import load_cluster_topology

        topo = load_cluster_topology(topology)
    configs: list[tuple[Path | None, SchedulerConfiguration]] = [(config, load_configuration(registry, config))]
    if compare is not None:
        configs.append((compare, load_configuration(registry, compare)))
    if trace is not None or cluster is None:
        tr = load_trace(trace, trace_format, nodes=nodes, seed=seed) if trace is not None else builtin_scenario()
        if config is None and tr.config is not None:
            # the scenario's own configuration
            configs[0] = (None, load_configuration(registry, text=tr.config, source=f"scenario {tr.name}"))
            default_label = "builtin.conf"
        scenario = tr.name
        cluster_subs = tr.submissions()
        work_subs: list[Submission] = []
        events: list[ClusterEvent] = []
        notes = list(tr.notes)
        manifest_mode = False
    elif snapshot:
        from pyvolcano.simulator.state import state_from_snapshot

        state = state_from_snapshot([cluster], registry)
        if config is None and state.config is not None:
            configs[0] = (None, state.config)  # the snapshot's scheduler ConfigMap
            default_label = "snapshot.conf"
        scenario = Path(cluster).stem
        cluster_subs = []
        work_subs, events = load_workload(workload) if workload is not None else ([], [])
        if not state.objects.nodes and not any(sub.kind == "Node" for sub in work_subs):
            raise ManifestError(f"{cluster}: no Node objects; a simulation needs at least one Node")
        notes = []
        manifest_mode = True
    else:
        assert workload is not None
        scenario = Path(workload).stem
        cluster_subs, _ = load_workload(cluster, cluster=True)
        work_subs, events = load_workload(workload)
        if topo is None and not any(sub.kind == "Node" for sub in [*cluster_subs, *work_subs]):
            raise ManifestError(f"{cluster}: no Node objects; a simulation needs at least one Node")
        if not work_subs and not events:
            raise ManifestError(f"{workload}: no objects passed to simulate")
        notes = []
        manifest_mode = True
    cron = endless_cronjobs(work_subs)
    if cron and math.isinf(horizon):
        raise InputError(f"{cron[0].source}: document {cron[0].document} (CronJob {cron[0].key}): a CronJob creates "
                         "jobs for as long as the run lasts; give --until (e.g. --until 1h) or suspend it")
    snapshot_cron = [d for d in (state.docs if state is not None else []) if d.get("kind") == "CronJob"
                     and (d.get("spec") or {}).get("suspend") is not True]
    if snapshot_cron and math.isinf(horizon):
        md = snapshot_cron[0].get("metadata") or {}
        raise InputError(f"{cluster}: CronJob {md.get('namespace') or 'default'}/{md.get('name')}: a CronJob creates "
                         "jobs for as long as the run lasts; give --until (e.g. --until 1h)")
    if topo is not None:
        from pyvolcano.simulator.hypernodes import apply_topology

        own = nodes is not None if not manifest_mode else any(
            sub.kind == "Node" for sub in [*cluster_subs, *work_subs])
        cluster_subs, topo_notes = apply_topology(cluster_subs, topo, own_nodes=own,
                                                  replace_nodes=not manifest_mode, other_nodes=work_subs)
        notes += topo_notes
    labelled = [(path.name if path is not None else default_label, conf) for path, conf in configs]
    return SimulationInputs(configs=labelled, registry=registry, seed=seed, horizon=horizon,
                            schedule_period=schedule_period, pod_duration=pod_duration, scenario=scenario,
                            cluster_subs=cluster_subs, work_subs=work_subs, events=events, notes=notes,
                            manifest_mode=manifest_mode, cluster=cluster, state=state,
                            topology_source=topo.source if topo is not None else None)


def is_snapshot(path: Path) -> bool:
    """Whether a ``--cluster`` file is a snapshot: it holds workload objects or the scheduler
    ConfigMap besides the cluster's Nodes, Queues and PriorityClasses (unreadable files are left
    to the loader to report)."""
    from pyvolcano.api.inputs import read_inputs
    from pyvolcano.api.manifest import iter_documents

    try:
        for source, text in read_inputs([path]):
            if isinstance(text, ManifestError):
                return False
            for _i, doc in iter_documents(text, source):
                if isinstance(doc, dict) and doc.get("kind") in ("Pod", "PodGroup", "Job", "ConfigMap", "CronJob",
                                                                 "JobFlow", "JobTemplate"):
                    return True
    except ManifestError:
        return False
    return False


def run_simulation(inputs: SimulationInputs, index: int = 0, *,
                   progress: Progress | None = None) -> tuple[SimulationResult, RunMetrics]:
    """Run configuration ``index`` of ``inputs`` to its end: the result and the run's metrics
    (named after the scenario and the configuration's label).

    A cluster file whose own objects were rejected is bad input (:class:`InputError`, naming
    the file, the document and the object), as ``simulate`` reports it."""
    label, conf = inputs.configs[index]
    res, metrics = simulate_once(conf, inputs.registry, inputs.seed, inputs.cluster_subs, inputs.work_subs,
                                 inputs.events, inputs.horizon, period=inputs.schedule_period,
                                 default_duration=inputs.pod_duration, state=inputs.state, progress=progress)
    metrics.name = inputs.scenario
    metrics.config_name = label
    metrics.notes = inputs.notes
    cluster = inputs.cluster
    if inputs.state is not None and res.rejected and res.rejected[0].get("file") == str(cluster):
        r = res.rejected[0]
        raise InputError(f"{cluster}: {r['kind']} {r['name']}: {r['error']}")
    bad = [r for r in res.rejected if cluster is not None and r.get("file") == str(cluster)]
    if inputs.topology_source is not None and not bad:
        bad = [r for r in res.rejected if r.get("file") == inputs.topology_source]
    if bad:
        r = bad[0]
        raise InputError(f"{r['file']}: document {r['document']} ({r['kind']} {r['name']}): {r['error']}")
    return res, metrics


def simulate_once(conf: SchedulerConfiguration, registry: Registry, seed: int, cluster_subs: list[Submission],
                  work_subs: list[Submission], events: list[ClusterEvent], horizon: float, *, period: float = 1.0,
                  default_duration: float | None = None, state: ClusterState | None = None,
                  progress: Progress | None = None) -> tuple[SimulationResult, RunMetrics]:
    """One simulation from loaded submissions (and, for a snapshot, its restored state)."""
    sim = Simulation(config=conf, registry=registry, seed=seed, progress=progress, schedule_period=period,
                     default_duration=default_duration)
    rejected: list[dict[str, Any]] = []
    if state is not None:
        from pyvolcano.simulator.restore import RuntimePolicy, restore_state

        rejected = restore_state(sim, state.docs, now=state.now, policy=RuntimePolicy(default=default_duration),
                                 at_timestamps=False)
        for r in rejected:
            r["file"] = state.source
    sim.submit(cluster_subs)
    sim.submit(work_subs)
    sim.cluster_events(events)
    res = sim.run(until=horizon)
    res.rejected[:0] = rejected
    return res, sim.metrics


def result_document(inputs: SimulationInputs, res: SimulationResult, metrics: RunMetrics) -> dict[str, Any]:
    """The document ``simulate -o json|yaml`` prints for one run (with its wall-clock figures)."""
    from pyvolcano.simulator.report.stats import summarize

    out = summarize(metrics)
    out["stats"] = {"virtual_seconds": res.virtual_seconds, "sessions": res.sessions,
                    "wall_seconds": round(res.wall_seconds, 3), "end_reason": res.end_reason}
    if inputs.manifest_mode:
        full = res.to_json()
        for r in full["rejected"]:
            r.pop("file", None)
            r.pop("at", None)
        out["jobs"] = full["jobs"]
        out["podgroups"] = full["podgroups"]
        # Issue-3 shape ({"state": ...}) merged into the per-queue metrics.
        for q, st in full["queues"].items():
            out["queues"].setdefault(q, {}).update(st)
        out["rejected"] = full["rejected"]
    return out
