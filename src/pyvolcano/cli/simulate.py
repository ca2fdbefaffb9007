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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from pyvolcano.api.manifest import ManifestError
from pyvolcano.cli.output import console as make_console
from pyvolcano.cli.output import emit, error, note, strip_timings
from pyvolcano.conf import ConfigError
from pyvolcano.framework.arguments import ArgumentError
from pyvolcano.simulator.inputs import (
    InputError,
    SimulationInputs,
    load_inputs,
    parse_default_duration,
    parse_until,
    result_document,
    run_simulation,
    simulate_once,
)
from pyvolcano.simulator.runtime import SimulationResult
from pyvolcano.simulator.workload import Submission, without_duration

__all__ = ["parse_default_duration", "parse_until", "run_simulate_command"]


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
    grouped = any(r.group for r in result.jobs.values())
    if grouped:
        t.add_column("CREATED BY", no_wrap=True)
    if wide:
        t.add_column("QUEUE", no_wrap=True)
    for col in ("PHASE", "RETRIES", "SUBMITTED", "STARTED", "FINISHED", "PODS P/R/S/F"):
        t.add_column(col, no_wrap=True)
    # A workflow's jobs are listed together, in the order they were created.
    for key, r in sorted(result.jobs.items(), key=lambda kv: (kv[1].group, kv[1].submitted if kv[1].group else 0,
                                                                kv[0])):
        p = r.pods
        t.add_row(key, *([r.group or "-"] if grouped else []), *([r.queue] if wide else []), r.phase,
                  str(r.retry_count), _fmt_secs(r.submitted),
                  "-" if r.started is None else _fmt_secs(r.started),
                  "-" if r.finished is None else _fmt_secs(r.finished),
                  f"{p['pending']}/{p['running']}/{p['succeeded']}/{p['failed']}")
    console.print(t)
    if result.workflows:
        console.print(_workflow_table(result))
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


def _workflow_table(result: SimulationResult) -> Table:
    """One row per JobFlow (its steps as ``name:phase``, layer by layer) and per CronJob (its
    schedule, runs and next run)."""
    wt = Table(title="Workflows", box=None)
    for col in ("WORKFLOW", "PHASE", "STEPS / RUNS"):
        wt.add_column(col, no_wrap=col != "STEPS / RUNS", overflow="fold")
    for w in result.workflows:
        if w.kind == "JobFlow":
            layers: dict[int, list[str]] = {}
            for step in w.steps:
                layers.setdefault(step.layer, []).append(f"{step.name}:{step.phase or 'waiting'}")
            text = " -> ".join(", ".join(names) for _layer, names in sorted(layers.items()))
        else:
            nxt = "-" if w.next_run is None else _fmt_secs(w.next_run)
            text = f"{w.schedule}; {len(w.steps)} run(s); next {nxt}"
        wt.add_row(w.group, w.phase, text)
    return wt


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
    try:
        inputs = load_inputs(cluster=cluster, workload=workload, trace=trace, trace_format=trace_format, nodes=nodes,
                             config=config, compare=compare, until=until, seed=seed, schedule_period=schedule_period,
                             default_duration=default_duration, topology=topology)
    except (ManifestError, ConfigError, ArgumentError, ValueError) as e:
        error(str(e))
        return 2
    _warn_without_duration(inputs.work_subs if inputs.manifest_mode else inputs.cluster_subs, inputs.pod_duration,
                           until)
    console = make_console(stderr=True)
    runs = []
    for index, (label, _conf) in enumerate(inputs.configs):
        try:
            runs.append(_run_once_with_progress(inputs, index, console, label=label, show=console.is_terminal))
        except InputError as e:
            error(str(e))
            return 2
    from pyvolcano.simulator.report.console import print_summary
    from pyvolcano.simulator.report.directory import write_report
    from pyvolcano.simulator.report.stats import compare as compare_runs

    if report is not None:
        write_report(runs[0][1], report, other=runs[1][1] if len(runs) > 1 else None)
    if output in ("json", "yaml"):
        if len(runs) == 1:
            out = result_document(inputs, *runs[0])
        else:
            out = compare_runs(runs[0][1], runs[1][1])
        emit(out if timings else strip_timings(out), output)
    else:
        if inputs.manifest_mode and len(runs) == 1:
            print_simulation_table(runs[0][0], wide=output == "wide")
        for n in inputs.notes:
            note(n)
        print_summary(runs[0][1], other=runs[1][1] if len(runs) > 1 else None, console=make_console())
    if report is not None:
        print(f"report written to {report / 'report.html'}", file=sys.stderr)
    return 0


def _progress_bar(label: str, console: Console, show: bool) -> tuple[Progress, Callable[[float, int, int], None]]:
    progress = Progress(TextColumn(f"[bold]{label}[/bold] virtual {{task.fields[vt]}}"), BarColumn(),
                        TextColumn("{task.fields[jobs]}"), TimeElapsedColumn(),
                        console=console, disable=not show, transient=True)
    # No total until the first jobs exist: the bar pulses instead of showing "0/None".
    task_id = progress.add_task("simulate", total=None, vt="0s", jobs="")

    def on_progress(now: float, done: int, total: int) -> None:
        if total:
            progress.update(task_id, completed=done, total=total, vt=_fmt_secs(now), jobs=f"{done}/{total} jobs")
        else:
            progress.update(task_id, vt=_fmt_secs(now))

    return progress, on_progress


def _run_once_with_progress(inputs: SimulationInputs, index: int, console: Console, *, label: str,
                            show: bool) -> tuple[SimulationResult, Any]:
    progress, on_progress = _progress_bar(label, console, show)
    with progress:
        return run_simulation(inputs, index, progress=on_progress)


def _run_once(conf: Any, registry: Any, seed: int, cluster_subs: list[Any], work_subs: list[Any], events: list[Any],
              horizon: float, console: Console, *, label: str, show: bool,
              period: float = 1.0, default_duration: float | None = None,
              state: Any = None) -> tuple[SimulationResult, Any]:
    progress, on_progress = _progress_bar(label, console, show)
    with progress:
        return simulate_once(conf, registry, seed, cluster_subs, work_subs, events, horizon, period=period,
                             default_duration=default_duration, state=state, progress=on_progress)
