"""The ``pyvolcano`` command line.

stdout carries results only (one JSON object with ``-o json``); logs and progress go to
stderr. Exit codes: 0 success, 1 a failed run, 2 bad input or usage — with a one-line
error naming the file, the document and the field, never a traceback for a user mistake.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    name="pyvolcano",
    help="A Volcano-compatible batch scheduler for Kubernetes, in Python.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
experiment_app = typer.Typer(help="Reproducible scheduling experiments.", no_args_is_help=True)
app.add_typer(experiment_app, name="experiment")


def _register_kube_commands() -> None:
    from pyvolcano.cli.kube import register

    register(app)


_register_kube_commands()


def _register_job_commands() -> None:
    from pyvolcano.cli.job import job_app

    app.add_typer(job_app, name="job")


_register_job_commands()


@app.callback()
def _root() -> None:
    """pyvolcano: Volcano's scheduler, runnable on manifests and traces."""


def _output(output: str | None) -> str:
    fmt = output or ("table" if sys.stdout.isatty() else "json")
    if fmt not in ("json", "table"):
        typer.echo(f"error: --output: got {fmt!r}; expected json or table", err=True)
        raise typer.Exit(2)
    return fmt


@app.command()
def schedule(
    cluster: Annotated[
        Path, typer.Argument(help="Multi-document YAML: Nodes, Pods, PodGroups, Queues, PriorityClasses")
    ],
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="volcano-scheduler.conf (default: upstream's built-in)")
    ] = None,
    sessions: Annotated[int, typer.Option("--sessions", "-n", min=1, help="Scheduling sessions to run")] = 1,
    output: Annotated[
        str | None, typer.Option("--output", "-o", help="json or table (default: table on a terminal, else json)")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed for random tie-breaking between equal nodes")] = 0,
) -> None:
    """Run scheduling sessions on a cluster snapshot and print the decisions."""
    from pyvolcano.cli.schedule import run_schedule

    raise typer.Exit(run_schedule(cluster, config, sessions=sessions, output=_output(output), seed=seed))


@app.command()
def validate(
    files: Annotated[list[Path], typer.Argument(help="Manifests to admit (Jobs, Queues, PodGroups, Pods, ...)")],
) -> None:
    """Run admission (upstream's webhooks) on manifests without running anything."""
    from pyvolcano.cli.validate import run_validate

    raise typer.Exit(run_validate(list(files)))


@app.command()
def simulate(
    cluster: Annotated[Path | None, typer.Option("--cluster", help="CLUSTER.yaml: Nodes, Queues, PriorityClasses")]
    = None,
    workload: Annotated[Path | None, typer.Option("--workload", help="WORKLOAD.yaml: Jobs, PodGroups, Pods, ...")]
    = None,
    trace: Annotated[Path | None, typer.Option("--trace", help="A trace CSV (philly, openb, kalos, dlrm, csv)")]
    = None,
    trace_format: Annotated[str | None, typer.Option("--trace-format", help="philly|openb|kalos|dlrm|csv")] = None,
    nodes: Annotated[Path | None, typer.Option("--nodes", help="Machine list CSV or CLUSTER.yaml for --trace")]
    = None,
    config: Annotated[Path | None, typer.Option("--config", "-c", help="volcano-scheduler.conf")] = None,
    compare: Annotated[Path | None, typer.Option("--compare", help="A second volcano-scheduler.conf to compare")]
    = None,
    until: Annotated[str | None, typer.Option("--until", help="Stop at this virtual time, e.g. 24h")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed for every random choice")] = 0,
    schedule_period: Annotated[float, typer.Option("--schedule-period", min=0.001,
                                                   help="Seconds between scheduling sessions")] = 1.0,
    report: Annotated[Path | None, typer.Option("--report", help="Write CSVs, plots and report.html here")] = None,
    output: Annotated[str | None, typer.Option("--output", "-o", help="json or table")] = None,
) -> None:
    """Run workloads to completion on a simulated cluster (default: a built-in Philly scenario)."""
    from pyvolcano.cli.simulate import run_simulate_command

    raise typer.Exit(run_simulate_command(
        cluster=cluster, workload=workload, trace=trace, trace_format=trace_format, nodes=nodes, config=config,
        compare=compare, until=until, seed=seed, report=report, output=_output(output),
        schedule_period=schedule_period,
    ))


@experiment_app.command("fgd")
def experiment_fgd(
    nodes: Annotated[Path | None, typer.Option("--nodes", help="openb node list CSV (default: shipped)")] = None,
    pods: Annotated[Path | None, typer.Option("--pods", help="openb pod list CSV (default: shipped)")] = None,
    policy: Annotated[str, typer.Option("--policy", help="Comma list of random, dotprod, gpuclustering, "
                                        "gpupacking, bestfit, fgd; or all")] = "all",
    seed: Annotated[str, typer.Option("--seed", help="Seeds: 42, 42-51 or 42-44,50")] = "42-51",
    tune: Annotated[float, typer.Option("--tune", help="Inflate the workload to tune × GPU capacity")] = 1.3,
    tie_break: Annotated[str, typer.Option("--tie-break", help="rank (the paper's) or random (Volcano's)")]
    = "rank",
    output: Annotated[str | None, typer.Option("--output", "-o", help="json or table")] = None,
    report: Annotated[Path | None, typer.Option("--report", help="Write curves (CSV, PNG) here")] = None,
) -> None:
    """The FGD paper's experiment (USENIX ATC'23): GPU allocation and fragmentation curves."""
    from pyvolcano.cli.experiment import parse_policies, parse_seeds, run_experiment_fgd

    try:
        seeds = parse_seeds(seed)
        policies = parse_policies(policy)
    except ValueError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    if tie_break not in ("rank", "random"):
        typer.echo(f"error: --tie-break: got {tie_break!r}; expected rank or random", err=True)
        raise typer.Exit(2)
    raise typer.Exit(run_experiment_fgd(nodes, pods, policies, seeds, tune, _output(output), report,
                                        tie_break=tie_break))


def main() -> None:
    from pyvolcano.cli.kube import normalize_go_bools

    sys.argv[1:] = normalize_go_bools(sys.argv[1:])
    app()


if __name__ == "__main__":
    main()
