"""``pyvolcano sweep``: a grid of simulations in parallel, merged into one comparison.

The grid comes from a sweep file (docs/simulator.md states its fields) and/or the options,
an option replacing the file's field of the same name. Everything about the grid is checked
before a cell runs (exit 2 with one line naming the file or option, the field and what was
expected). Cells run on local worker processes (``--workers``, default: the file's
``workers`` or the number of CPUs), or on a Ray cluster with ``--ray ADDRESS|auto|local``.

Progress for the whole grid goes to stderr: a bar on a terminal, and one line per finished
cell (its id, its place in the grid, ``ok`` or the error). A failed cell does not stop the
others; the exit code is 1 at the end if any failed. stdout carries the merged result:
``-o json|yaml`` one document ``{"cells": [...], "groups": [...]}`` whose cells carry the
document ``simulate -o json`` prints for the same options (``result``), without wall-clock
figures unless ``--timings``; ``-o table|wide`` the tables. ``--csv FILE`` writes one row per
cell; ``--report DIR`` the report directory of :mod:`pyvolcano.simulator.sweep.comparison`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from pyvolcano.cli.output import console as make_console
from pyvolcano.cli.output import emit, error, one_line, strip_timings
from pyvolcano.conf import ConfigError
from pyvolcano.runtime.configuration import load_configuration
from pyvolcano.runtime.registry import default_registry
from pyvolcano.simulator.report.formatting import fmt_metric
from pyvolcano.simulator.sweep.cell import CellOutcome
from pyvolcano.simulator.sweep.comparison import METRICS, cell_rows, group_rows, write_csv, write_report
from pyvolcano.simulator.sweep.executors import ExecutorError, import_ray, run_local, run_ray
from pyvolcano.simulator.sweep.grid import Cell, SweepFileError, SweepSpec, load_sweep_file, spec_from_options

__all__ = ["run_sweep_command"]

_TABLE_METRICS = ("jobs", "completed", "never_started", "mean_wait_s", "p95_wait_s", "mean_jct_s",
                  "gpu_allocation_ratio", "makespan_s")


def run_sweep_command(
    *,
    sweep_file: Path | None,
    configs: list[str],
    seeds: list[str],
    traces: list[str],
    trace_format: str | None,
    nodes: list[str],
    clusters: list[str],
    workloads: list[str],
    until: str | None,
    default_duration: str | None,
    schedule_period: float | None,
    workers: int | None,
    ray: str | None,
    report: Path | None,
    csv_file: Path | None,
    output: str,
    timings: bool = False,
) -> int:
    try:
        base = load_sweep_file(sweep_file) if sweep_file is not None else None
        spec = spec_from_options(base, configs=configs, seeds=seeds, traces=traces, trace_format=trace_format,
                                 nodes=nodes, clusters=clusters, workloads=workloads, until=until,
                                 default_duration=default_duration, schedule_period=schedule_period,
                                 workers=workers)
        _check_configs(spec)
        if ray is not None:
            import_ray()
    except (SweepFileError, ConfigError, ExecutorError) as e:
        error(str(e))
        return 2
    cells = spec.cells()
    n_workers = spec.workers or os.cpu_count() or 1
    where = f"Ray cluster {ray}" if ray is not None else f"{min(n_workers, len(cells))} local worker process(es)"
    print(f"sweep: {len(cells)} cell(s) on {where}", file=sys.stderr, flush=True)
    errout = make_console(stderr=True)
    bar = Progress(TextColumn("[bold]sweep[/bold]"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("cells · {task.fields[failed]} failed"), TimeElapsedColumn(),
                   console=errout, disable=not errout.is_terminal)
    task = bar.add_task("sweep", total=len(cells), failed=0)
    failed = 0

    def on_done(outcome: CellOutcome) -> None:
        nonlocal failed
        cell = cells[outcome.index]
        if outcome.ok:
            line = f"cell {cell.id} ({cell.label}): ok in {outcome.seconds:.1f}s"
        else:
            failed += 1
            line = f"cell {cell.id} ({cell.label}): FAILED: {outcome.error}"
        bar.update(task, advance=1, failed=failed)
        if errout.is_terminal:
            bar.console.print(one_line(line), markup=False, highlight=False)
        else:
            print(one_line(line), file=sys.stderr, flush=True)

    try:
        with bar:
            if ray is not None:
                outcomes = run_ray(cells, address=ray, workers=spec.workers or os.cpu_count(),
                                   report=report is not None, on_done=on_done)
            else:
                outcomes = run_local(cells, workers=n_workers, report=report is not None, on_done=on_done)
    except ExecutorError as e:
        error(str(e))
        return 2
    documents = [None if o.document is None else (o.document if timings else strip_timings(o.document))
                 for o in outcomes]
    rows = cell_rows(cells, outcomes, timings=timings)
    if csv_file is not None:
        write_csv(rows, csv_file)
        print(f"wrote {csv_file}", file=sys.stderr)
    if report is not None:
        write_report(cells, outcomes, report, documents=documents, timings=timings)
        print(f"report written to {report / 'report.html'}", file=sys.stderr)
    if output in ("json", "yaml"):
        emit(_document(cells, outcomes, documents, rows, timings=timings), output)
    else:
        _print_tables(rows, wide=output == "wide")
    for cell, out in zip(cells, outcomes):
        if not out.ok:
            error(f"cell {cell.id} ({cell.label}) failed: {out.error}; run it alone with: pyvolcano simulate "
                  + " ".join(cell.simulate_arguments()))
    if failed:
        error(f"{failed} of {len(cells)} cell(s) failed")
        return 1
    return 0


def _check_configs(spec: SweepSpec) -> None:
    """Every configuration file loads (cheap), so a typo costs nothing before the grid runs."""
    registry = default_registry()
    for path in spec.configs:
        if path is not None:
            load_configuration(registry, path)


def _document(cells: list[Cell], outcomes: list[CellOutcome], documents: list[dict[str, Any] | None],
              rows: list[dict[str, Any]], *, timings: bool) -> dict[str, Any]:
    out_cells = []
    for cell, out, doc in zip(cells, outcomes, documents):
        entry: dict[str, Any] = {**cell.coordinates(), "status": "ok" if out.ok else "failed",
                                 "simulate": cell.simulate_arguments()}
        if out.ok:
            entry["result"] = doc
        else:
            entry["error"] = out.error
        if timings:
            entry["wall_seconds"] = round(out.seconds, 3)
            entry["worker"] = out.worker
        out_cells.append(entry)
    return {"cells": out_cells, "groups": group_rows(rows)}


def _print_tables(rows: list[dict[str, Any]], *, wide: bool) -> None:
    console = make_console()
    keys = [k for k, _ in METRICS] if wide else list(_TABLE_METRICS)
    titles = dict(METRICS)
    t = Table(title="Sweep: one row per cell", title_justify="left", box=None)
    for col in ("CELL", "CONFIG", "SEED", "INPUT", "CLUSTER", "STATUS"):
        t.add_column(col, no_wrap=True, justify="right" if col == "SEED" else "left")
    for k in keys:
        t.add_column(titles[k], justify="right")
    if wide and "wall_seconds" in rows[0]:
        t.add_column("WALL", justify="right")
    for r in rows:
        status = r["status"] if r["status"] == "ok" else "[red]failed[/red]"
        cells = [r["cell"], r["config"], str(r["seed"]), r["input"], r["cluster"], status]
        cells += ["-" if r[k] is None else fmt_metric(k, r[k]) for k in keys]
        if wide and "wall_seconds" in r:
            cells.append(f"{r['wall_seconds']:.1f}s")
        t.add_row(*cells)
    console.print(t)
    groups = group_rows(rows)
    if len(groups) < len(rows):
        g = Table(title="Means over seeds", title_justify="left", box=None)
        for col in ("CONFIG", "INPUT", "CLUSTER", "RUNS", "FAILED"):
            g.add_column(col, no_wrap=True, justify="right" if col in ("RUNS", "FAILED") else "left")
        for k in keys:
            g.add_column(titles[k], justify="right")
        for r in groups:
            g.add_row(r["config"], r["input"], r["cluster"], str(r["runs"]), str(r["failed"]),
                      *["-" if r[k] is None else fmt_metric(k, r[k]) for k in keys])
        console.print(g)
