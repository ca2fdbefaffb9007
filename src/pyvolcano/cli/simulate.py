"""``pyvolcano simulate``: run whole Volcano jobs on a simulated cluster."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from pyvolcano.api.duration import DurationError, parse_duration_strict
from pyvolcano.api.manifest import ManifestError
from pyvolcano.cli.schedule import load_config
from pyvolcano.conf import ConfigError
from pyvolcano.framework.arguments import ArgumentError
from pyvolcano.framework.registry import default_registry
from pyvolcano.simulator.runtime import Simulation, SimulationResult
from pyvolcano.simulator.workload import load_workload

__all__ = ["parse_until", "run_simulate"]


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


def run_simulate(cluster: Path, workload: Path | None, config_path: Path | None, *, until: str | None,
                 seed: int, output: str, schedule_period: float = 1.0) -> int:
    registry = default_registry()
    try:
        horizon = parse_until(until)
        config = load_config(config_path, registry)
        for tier in config.tiers:
            for opt in tier.plugins:
                registry.plugin(opt.name)(opt.arguments)
        for name in config.actions:
            registry.action(name)(config.action_arguments(name))
        cluster_subs, _ = load_workload(cluster, cluster=True)
        work_subs, events = load_workload(workload) if workload is not None else ([], [])
    except (ManifestError, ConfigError, ArgumentError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    console = Console(stderr=True)
    show = console.is_terminal and output == "table"
    progress = Progress(TextColumn("virtual {task.fields[vt]}"), BarColumn(),
                        TextColumn("{task.completed}/{task.total} jobs"), TimeElapsedColumn(),
                        console=console, disable=not show, transient=True)
    with progress:
        task_id = progress.add_task("simulate", total=None, vt="0s")

        def on_progress(now: float, done: int, total: int) -> None:
            progress.update(task_id, completed=done, total=max(total, 1), vt=_fmt_secs(now))

        sim = Simulation(config=config, registry=registry, seed=seed, schedule_period=schedule_period,
                         progress=on_progress)
        # Cluster objects exist from the start; their admission errors are fatal (bad input).
        sim.submit([s for s in cluster_subs])
        sim.submit(work_subs)
        sim.cluster_events(events)
        result = sim.run(until=horizon)
    cluster_rejected = [r for r in result.rejected if r.get("file") == str(cluster)]
    if cluster_rejected:
        r = cluster_rejected[0]
        print(f"error: {r['file']}: document {r['document']} ({r['kind']} {r['name']}): {r['error']}",
              file=sys.stderr)
        return 2
    if output == "json":
        sys.stdout.write(json.dumps(_json(result)) + "\n")
    else:
        print_simulation_table(result)
    return 0


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


def print_simulation_table(result: SimulationResult) -> None:
    console = Console()
    t = Table(title="Jobs", box=None)
    for col in ("JOB", "PHASE", "RETRIES", "SUBMITTED", "STARTED", "FINISHED", "PODS (P/R/S/F)"):
        t.add_column(col)
    for key, r in sorted(result.jobs.items()):
        p = r.pods
        t.add_row(key, r.phase, str(r.retry_count), _fmt_secs(r.submitted),
                  "-" if r.started is None else _fmt_secs(r.started),
                  "-" if r.finished is None else _fmt_secs(r.finished),
                  f"{p['pending']}/{p['running']}/{p['succeeded']}/{p['failed']}")
    console.print(t)
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
    for when, what in result.timeline[:60]:
        tl.add_row(_fmt_secs(when), what)
    if len(result.timeline) > 60:
        tl.add_row("…", f"{len(result.timeline) - 60} more events")
    console.print(tl)
    console.print(f"virtual time {_fmt_secs(result.virtual_seconds)}, {result.sessions} sessions, "
                  f"{result.wall_seconds:.2f}s wall")
