"""``pyvolcano simulate``: run whole Volcano jobs on a simulated cluster.

Inputs are checked before anything runs: ``--workload`` needs ``--cluster`` and the other way
round, ``--nodes`` needs ``--trace``, a cluster must hold at least one Node and a workload at
least one object (exit 2 otherwise), and ``--report DIR`` must be writable (checked by its
option callback). ``--topology`` adds a network topology's HyperNodes (not to a snapshot; how
its hosts and the run's nodes combine: :mod:`pyvolcano.simulator.hypernodes`); a cluster needs
no Node of its own then. ``-o json|yaml`` prints one document without wall-clock timings unless
``--timings`` is given, so the same inputs and seed print the same bytes; ``-o table|wide``
prints tables (wide: a QUEUE column and the whole timeline), and notes go to stderr.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from pyvolcano.api.duration import DurationError, parse_duration_strict
from pyvolcano.api.manifest import ManifestError
from pyvolcano.cli.output import console as make_console
from pyvolcano.cli.output import emit, error, note, strip_timings
from pyvolcano.conf import ConfigError, load_configuration
from pyvolcano.framework.arguments import ArgumentError
from pyvolcano.framework.registry import default_registry
from pyvolcano.simulator.runtime import Simulation, SimulationResult, check_run_parameters
from pyvolcano.simulator.workload import ClusterEvent, Submission, load_workload, without_duration

__all__ = ["parse_default_duration", "parse_until", "run_simulate_command"]


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


def _warn_without_duration(subs: list[Submission], default: float | None, until: str | None) -> None:
    """One stderr line naming the jobs whose pods would run forever (first few and a count)."""
    keys = without_duration(subs)
    if not keys or default is not None:
        return
    shown = ", ".join(keys[:_NAMED])
    more = f" and {len(keys) - _NAMED} more" if len(keys) > _NAMED else ""
    end = f"until --until {until}" if until else "until nothing else can happen, and the run then stops"
    print(f"warning: {len(keys)} job(s) have pods without a pyvolcano.io/duration annotation: {shown}{more}; "
          f"their pods run {end} (give --default-duration, e.g. 10m, or annotate the pod templates)",
          file=sys.stderr)


_NAMED = 5


def _json(result: SimulationResult) -> dict[str, Any]:
    out = result.to_json()
    for r in out["rejected"]:
        r.pop("file", None)
        r.pop("at", None)
    return out


def _fmt_secs(s: float) -> str:
    if s == math.inf:
        return "∞"
    s = int(s)
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h{m:02d}m{sec:02d}s" if h else (f"{m}m{sec:02d}s" if m else f"{sec}s")


def print_simulation_table(result: SimulationResult, *, wide: bool = False, timings: bool = True) -> None:
    console = make_console()
    t = Table(title="Jobs", box=None)
    t.add_column("JOB", no_wrap=True)
    if wide:
        t.add_column("QUEUE", no_wrap=True)
    for col in ("PHASE", "RETRIES", "SUBMITTED", "STARTED", "FINISHED", "PODS P/R/S/F"):
        t.add_column(col, no_wrap=True)
    for key, r in sorted(result.jobs.items()):
        p = r.pods
        t.add_row(key, *([r.queue] if wide else []), r.phase, str(r.retry_count), _fmt_secs(r.submitted),
                  "-" if r.started is None else _fmt_secs(r.started),
                  "-" if r.finished is None else _fmt_secs(r.finished),
                  f"{p['pending']}/{p['running']}/{p['succeeded']}/{p['failed']}")
    console.print(t)
    waiting = [(key, r.why) for key, r in sorted(result.jobs.items()) if r.why is not None]
    if waiting:
        wt = Table(title="Why jobs never started", box=None)
        wt.add_column("JOB", no_wrap=True)
        wt.add_column("REASON", no_wrap=True)
        wt.add_column("HINT", overflow="fold")
        for key, why in waiting:
            wt.add_row(key, str(why.reason), why.hint)
        console.print(wt)
    if result.rejected:
        rt = Table(title="Rejected at submission", box=None)
        rt.add_column("DOC")
        rt.add_column("OBJECT")
        rt.add_column("ERROR", overflow="fold")
        for rej in result.rejected:
            rt.add_row(str(rej["document"]), f"{rej['kind']} {rej['name']}", rej["error"])
        console.print(rt)
    tl = Table(title="Timeline", box=None)
    tl.add_column("TIME")
    tl.add_column("EVENT", overflow="fold")
    shown = result.timeline if wide else result.timeline[:60]
    for when, what in shown:
        tl.add_row(_fmt_secs(when), what)
    if len(result.timeline) > len(shown):
        tl.add_row("…", f"{len(result.timeline) - len(shown)} more events (-o wide shows them all)")
    console.print(tl)
    console.print(f"virtual time {_fmt_secs(result.virtual_seconds)}, {result.sessions} sessions"
                  + (f", {result.wall_seconds:.2f}s wall" if timings else ""))


# ---------------------------------------------------------------------------- the full command


def run_simulate_command(
    *,
    cluster: Path | None,
    workload: Path | None,
    trace: Path | None,
    trace_format: str | None,
    nodes: Path | None,
    config: Path | None,
    compare: Path | None,
    until: str | None,
    seed: int,
    report: Path | None,
    output: str,
    schedule_period: float = 1.0,
    timings: bool = False,
    default_duration: str | None = None,
    topology: str | None = None,
) -> int:
    """Manifest mode (``--cluster/--workload``), trace mode (``--trace``) or the built-in scenario."""
    from pyvolcano.simulator.traces import TraceError, builtin_scenario, load_trace

    if workload is not None and cluster is None:
        error("--workload needs --cluster (the Nodes to run on)")
        return 2
    snapshot = cluster is not None and trace is None and _is_snapshot(cluster)
    if cluster is not None and workload is None and trace is None and not snapshot:
        error("--cluster needs --workload (the Jobs, PodGroups or Pods to run), unless it is a snapshot "
              "(`pyvolcano snapshot`) that holds them")
        return 2
    if trace is not None and (cluster is not None or workload is not None):
        error("--trace replaces --cluster/--workload; use --nodes for the trace's machines")
        return 2
    if nodes is not None and trace is None:
        error("--nodes needs --trace (it gives the machines a trace runs on)")
        return 2
    if trace_format is not None and trace is None:
        error("--trace-format needs --trace")
        return 2
    if topology is not None and cluster is not None and trace is None and snapshot:
        error("--topology does not apply to a snapshot: it runs with the HyperNodes it holds")
        return 2
    registry = default_registry()
    default_label = "default"
    state = None
    topo = None
    try:
        horizon = parse_until(until)
        check_run_parameters(seed=seed, schedule_period=schedule_period)
        pod_duration = parse_default_duration(default_duration)
        if topology is not None:
            from pyvolcano.simulator.hypernodes import load_cluster_topology

            topo = load_cluster_topology(topology)
        configs = [(config, load_configuration(registry, config))]
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
            from pyvolcano.forecast.state import state_from_snapshot

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
        if topo is not None:
            from pyvolcano.simulator.hypernodes import apply_topology

            own = nodes is not None if not manifest_mode else any(
                sub.kind == "Node" for sub in [*cluster_subs, *work_subs])
            cluster_subs, topo_notes = apply_topology(cluster_subs, topo, own_nodes=own,
                                                      replace_nodes=not manifest_mode, other_nodes=work_subs)
            notes += topo_notes
    except (ManifestError, ConfigError, ArgumentError, ValueError, TraceError) as e:
        error(str(e))
        return 2
    _warn_without_duration(work_subs if manifest_mode else cluster_subs, pod_duration, until)
    console = make_console(stderr=True)
    runs = []
    for path, conf in configs:
        label = path.name if path is not None else default_label
        res, metrics = _run_once(conf, registry, seed, cluster_subs, work_subs, events, horizon, console,
                                 label=label, show=console.is_terminal, period=schedule_period,
                                 default_duration=pod_duration, state=state)
        metrics.name = scenario
        metrics.config_name = label
        metrics.notes = notes
        bad = [r for r in res.rejected if cluster is not None and r.get("file") == str(cluster)]
        if state is not None and res.rejected and res.rejected[0].get("file") == str(cluster):
            r = res.rejected[0]
            error(f"{cluster}: {r['kind']} {r['name']}: {r['error']}")
            return 2
        if topo is not None and not bad:
            bad = [r for r in res.rejected if r.get("file") == topo.source]
        if bad:
            r = bad[0]
            error(f"{r['file']}: document {r['document']} ({r['kind']} {r['name']}): {r['error']}")
            return 2
        runs.append((res, metrics))
    from pyvolcano.simulator.report.console import print_summary
    from pyvolcano.simulator.report.directory import write_report
    from pyvolcano.simulator.report.stats import compare as compare_runs
    from pyvolcano.simulator.report.stats import summarize

    if report is not None:
        write_report(runs[0][1], report, other=runs[1][1] if len(runs) > 1 else None)
    if output in ("json", "yaml"):
        if len(runs) == 1:
            res, metrics = runs[0]
            out = summarize(metrics)
            out["stats"] = {"virtual_seconds": res.virtual_seconds, "sessions": res.sessions,
                            "wall_seconds": round(res.wall_seconds, 3), "end_reason": res.end_reason}
            if manifest_mode:
                full = _json(res)
                out["jobs"] = full["jobs"]
                out["podgroups"] = full["podgroups"]
                # Issue-3 shape ({"state": ...}) merged into the per-queue metrics.
                for q, st in full["queues"].items():
                    out["queues"].setdefault(q, {}).update(st)
                out["rejected"] = full["rejected"]
        else:
            out = compare_runs(runs[0][1], runs[1][1])
        emit(out if timings else strip_timings(out), output)
    else:
        if manifest_mode and len(runs) == 1:
            print_simulation_table(runs[0][0], wide=output == "wide")
        for n in notes:
            note(n)
        print_summary(runs[0][1], other=runs[1][1] if len(runs) > 1 else None, console=make_console())
    if report is not None:
        print(f"report written to {report / 'report.html'}", file=sys.stderr)
    return 0


def _is_snapshot(path: Path) -> bool:
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
                if isinstance(doc, dict) and doc.get("kind") in ("Pod", "PodGroup", "Job", "ConfigMap"):
                    return True
    except ManifestError:
        return False
    return False


def _run_once(conf: Any, registry: Any, seed: int, cluster_subs: list[Any], work_subs: list[Any], events: list[Any],
              horizon: float, console: Console, *, label: str, show: bool,
              period: float = 1.0, default_duration: float | None = None,
              state: Any = None) -> tuple[SimulationResult, Any]:
    progress = Progress(TextColumn(f"[bold]{label}[/bold] virtual {{task.fields[vt]}}"), BarColumn(),
                        TextColumn("{task.fields[jobs]}"), TimeElapsedColumn(),
                        console=console, disable=not show, transient=True)
    with progress:
        # No total until the first jobs exist: the bar pulses instead of showing "0/None".
        task_id = progress.add_task("simulate", total=None, vt="0s", jobs="")

        def on_progress(now: float, done: int, total: int) -> None:
            if total:
                progress.update(task_id, completed=done, total=total, vt=_fmt_secs(now),
                                jobs=f"{done}/{total} jobs")
            else:
                progress.update(task_id, vt=_fmt_secs(now))

        sim = Simulation(config=conf, registry=registry, seed=seed, progress=on_progress, schedule_period=period,
                         default_duration=default_duration)
        rejected: list[dict[str, Any]] = []
        if state is not None:
            from pyvolcano.forecast.eta import RuntimePolicy, restore_state

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
