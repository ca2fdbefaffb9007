"""The ``pyvolcano`` command line.

stdout carries results only (one JSON or YAML document with ``-o json|yaml``, tables with
``-o table|wide``); logs, notes, warnings and progress go to stderr (:mod:`pyvolcano.cli.output`).
Exit codes: 0 success, 1 a failed run, 2 bad input or usage — with a one-line error naming the
file, the document and the field, never a traceback for a user mistake. Usage errors are
printed by :func:`run`, the single entry point; option values are checked where they enter
(:mod:`pyvolcano.cli.options`). Every Typer app here is built with ``cls=Group``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from pyvolcano.cli import options
from pyvolcano.cli.admission import admission as admission_command
from pyvolcano.cli.go_flags import WEBHOOK_MANAGER, go_command
from pyvolcano.cli.install import install
from pyvolcano.cli.options import Group
from pyvolcano.cli.replay import replay
from pyvolcano.cli.snapshot import snapshot

app = typer.Typer(
    name="pyvolcano",
    help="A Volcano-compatible batch scheduler for Kubernetes, in Python.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=Group,
)
experiment_app = typer.Typer(help="Reproducible scheduling experiments.", no_args_is_help=True, cls=Group)
app.add_typer(experiment_app, name="experiment")
app.command("admission", cls=go_command(WEBHOOK_MANAGER))(admission_command)
app.command("install")(install)
app.command("snapshot")(snapshot)
app.command("replay")(replay)

OUTPUT_HELP = "json, yaml, table or wide (default: table on a terminal, else json)"
TIMINGS_HELP = "Add wall-clock timings to the JSON/YAML output (they differ from run to run)"


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("pyvolcano")
        except PackageNotFoundError:
            from pyvolcano import __version__ as number
        typer.echo(f"pyvolcano {number}")
        raise typer.Exit(0)


def _register_kube_commands() -> None:
    from pyvolcano.cli.kube import register

    register(app)


_register_kube_commands()


def _register_job_commands() -> None:
    from pyvolcano.cli.job import job_app

    app.add_typer(job_app, name="job")


_register_job_commands()


def _register_queue_commands() -> None:
    from pyvolcano.cli.queue import queue_app

    app.add_typer(queue_app, name="queue")


_register_queue_commands()


def _register_dashboard_command() -> None:
    from pyvolcano.cli.dashboard import dashboard

    app.command("dashboard")(dashboard)


_register_dashboard_command()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit")] = False,
) -> None:
    """pyvolcano: Volcano's scheduler, runnable on manifests and traces."""


@app.command()
def schedule(
    cluster: Annotated[
        list[Path] | None,
        typer.Argument(help="Multi-document YAML: Nodes, Pods, PodGroups, Queues, PriorityClasses; a directory "
                       "stands for its *.yaml/*.yml/*.json files; - reads stdin"),
    ] = None,
    filename: Annotated[
        list[Path] | None, typer.Option("--filename", "-f", metavar="FILE", help="The same as CLUSTER (repeatable)")
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", "-c", metavar="FILE",
                                  help="volcano-scheduler.conf (default: upstream's built-in)")
    ] = None,
    sessions: Annotated[int, typer.Option("--sessions", "-n", min=1, metavar="N",
                                          help="Scheduling sessions to run")] = 1,
    output: Annotated[
        str | None, typer.Option("--output", "-o", metavar="FORMAT", callback=options.output_format(),
                                 help=OUTPUT_HELP)
    ] = None,
    seed: Annotated[int, typer.Option("--seed", metavar="N", callback=options.seed,
                                      help="Seed for random tie-breaking between equal nodes")] = 0,
    timings: Annotated[bool, typer.Option("--timings", help=TIMINGS_HELP)] = False,
) -> None:
    """Run scheduling sessions on a cluster snapshot and print the decisions."""
    from pyvolcano.cli.schedule import run_schedule

    sources = [*(cluster or []), *(filename or [])]
    if not sources:
        raise options.UsageError("Missing argument 'CLUSTER': a file, a directory or - for stdin (or -f FILE)")
    raise typer.Exit(run_schedule(sources, config, sessions=sessions, output=str(output), seed=seed,
                                  timings=timings))


@app.command()
def validate(
    files: Annotated[
        list[Path] | None,
        typer.Argument(help="Manifests to admit (Jobs, Queues, PodGroups, Pods, ...); a directory stands for its "
                       "*.yaml/*.yml/*.json files; - reads stdin"),
    ] = None,
    filename: Annotated[
        list[Path] | None, typer.Option("--filename", "-f", metavar="FILE", help="The same as FILES (repeatable)")
    ] = None,
    output: Annotated[
        str | None, typer.Option("--output", "-o", metavar="FORMAT",
                                 help="json or yaml: print the admitted objects with their defaults; wide: name "
                                 "the file and document on every line (default: one line per object)")
    ] = None,
) -> None:
    """Run admission (upstream's webhooks) on manifests without running anything."""
    from pyvolcano.cli.validate import run_validate

    sources = [*(files or []), *(filename or [])]
    if not sources:
        raise options.UsageError("Missing argument 'FILES': a file, a directory or - for stdin (or -f FILE)")
    if output is not None and output not in ("json", "yaml", "wide"):
        raise typer.BadParameter(f"got {output!r}; expected json, yaml or wide", param_hint="'--output' / '-o'")
    raise typer.Exit(run_validate(sources, output=output))


@app.command()
def simulate(
    cluster: Annotated[Path | None, typer.Option("--cluster", metavar="FILE",
                                                 help="CLUSTER.yaml: Nodes, Queues, PriorityClasses; or a "
                                                      "snapshot, run forward from its instant")] = None,
    workload: Annotated[Path | None, typer.Option("--workload", metavar="FILE",
                                                  help="WORKLOAD.yaml: Jobs, PodGroups, Pods, ...")] = None,
    trace: Annotated[Path | None, typer.Option("--trace", metavar="FILE",
                                               help="A trace CSV (philly, openb, kalos, dlrm, csv)")] = None,
    trace_format: Annotated[str | None, typer.Option("--trace-format", metavar="FORMAT",
                                                     help="philly|openb|kalos|dlrm|csv")] = None,
    nodes: Annotated[Path | None, typer.Option("--nodes", metavar="FILE",
                                               help="Machine list CSV or CLUSTER.yaml for --trace")] = None,
    topology: Annotated[str | None, typer.Option(
        "--topology", metavar="NAME|FILE",
        help="HyperNodes of a network topology: a shipped one (lingjun), a topology CSV or a YAML of "
             "HyperNodes; its hosts are the nodes unless --cluster or --nodes gives them")] = None,
    config: Annotated[Path | None, typer.Option("--config", "-c", metavar="FILE",
                                                help="volcano-scheduler.conf")] = None,
    compare: Annotated[Path | None, typer.Option("--compare", metavar="FILE",
                                                 help="A second volcano-scheduler.conf to compare")] = None,
    until: Annotated[str | None, typer.Option("--until", metavar="DURATION", callback=options.until,
                                              help="Stop at this virtual time, e.g. 24h")] = None,
    default_duration: Annotated[str | None, typer.Option(
        "--default-duration", metavar="DURATION",
        help="Run time of pods without a pyvolcano.io/duration annotation, e.g. 10m "
        "(default: they run until --until, or until nothing else can happen)")] = None,
    seed: Annotated[int, typer.Option("--seed", metavar="N", callback=options.seed,
                                      help="Seed for every random choice")] = 0,
    schedule_period: Annotated[float, typer.Option("--schedule-period", metavar="SECONDS",
                                                   callback=options.schedule_period,
                                                   help="Seconds between scheduling sessions")] = 1.0,
    report: Annotated[Path | None, typer.Option("--report", metavar="DIR", callback=options.report_dir,
                                                help="Write CSVs, plots and report.html here")] = None,
    output: Annotated[str | None, typer.Option("--output", "-o", metavar="FORMAT",
                                               callback=options.output_format(), help=OUTPUT_HELP)] = None,
    timings: Annotated[bool, typer.Option("--timings", help=TIMINGS_HELP)] = False,
) -> None:
    """Run workloads to completion on a simulated cluster (default: a built-in Philly scenario)."""
    from pyvolcano.cli.simulate import run_simulate_command

    raise typer.Exit(run_simulate_command(
        cluster=cluster, workload=workload, trace=trace, trace_format=trace_format, nodes=nodes, config=config,
        compare=compare, until=until, seed=seed, report=report, output=str(output),
        schedule_period=schedule_period, timings=timings, default_duration=default_duration, topology=topology,
    ))


@app.command()
def sweep(
    sweep_file: Annotated[Path | None, typer.Argument(
        metavar="SWEEP", help="A sweep file (YAML): the grid's axes and settings; options replace its fields")] = None,
    config: Annotated[list[str] | None, typer.Option(
        "--config", "-c", metavar="FILE", help="A volcano-scheduler.conf, or default (repeatable: an axis)")] = None,
    seed: Annotated[list[str] | None, typer.Option(
        "--seed", metavar="N", help="A seed or a range such as 0-4 (repeatable: an axis)")] = None,
    trace: Annotated[list[str] | None, typer.Option(
        "--trace", metavar="FILE", help="A trace CSV, or philly|openb|kalos|dlrm (repeatable: an axis)")] = None,
    trace_format: Annotated[str | None, typer.Option("--trace-format", metavar="FORMAT",
                                                     help="philly|openb|kalos|dlrm|csv, for every trace")] = None,
    nodes: Annotated[list[str] | None, typer.Option(
        "--nodes", metavar="FILE", help="A machine list or CLUSTER.yaml for the traces (repeatable: an axis)")] = None,
    cluster: Annotated[list[str] | None, typer.Option(
        "--cluster", metavar="FILE", help="A CLUSTER.yaml or snapshot (repeatable: an axis)")] = None,
    workload: Annotated[list[str] | None, typer.Option(
        "--workload", metavar="FILE", help="A WORKLOAD.yaml (repeatable: an axis)")] = None,
    until: Annotated[str | None, typer.Option("--until", metavar="DURATION", callback=options.until,
                                              help="Stop every run at this virtual time, e.g. 24h")] = None,
    default_duration: Annotated[str | None, typer.Option(
        "--default-duration", metavar="DURATION",
        help="Run time of pods without a pyvolcano.io/duration annotation, e.g. 10m")] = None,
    schedule_period: Annotated[float | None, typer.Option("--schedule-period", metavar="SECONDS",
                                                          help="Seconds between scheduling sessions")] = None,
    workers: Annotated[int | None, typer.Option("--workers", "-j", metavar="N",
                                                help="Local worker processes (default: the number of CPUs)")] = None,
    ray: Annotated[str | None, typer.Option(
        "--ray", metavar="ADDRESS", help="Run the cells on a Ray cluster: its address, auto, or local to start one "
        "(needs pip install 'pyvolcano\\[ray]')")] = None,
    report: Annotated[Path | None, typer.Option("--report", metavar="DIR", callback=options.report_dir,
                                                help="Write every cell's report and one combined report.html here")
                      ] = None,
    csv_file: Annotated[Path | None, typer.Option("--csv", metavar="FILE", help="Write one row per cell here")
                        ] = None,
    output: Annotated[str | None, typer.Option("--output", "-o", metavar="FORMAT",
                                               callback=options.output_format(), help=OUTPUT_HELP)] = None,
    timings: Annotated[bool, typer.Option("--timings", help=TIMINGS_HELP)] = False,
) -> None:
    """Run a grid of simulations (configurations × seeds × traces or workloads × clusters) in parallel."""
    from pyvolcano.cli.sweep import run_sweep_command

    raise typer.Exit(run_sweep_command(
        sweep_file=sweep_file, configs=config or [], seeds=seed or [], traces=trace or [], trace_format=trace_format,
        nodes=nodes or [], clusters=cluster or [], workloads=workload or [], until=until,
        default_duration=default_duration, schedule_period=schedule_period, workers=workers, ray=ray, report=report,
        csv_file=csv_file, output=str(output), timings=timings,
    ))


@experiment_app.command("fgd")
def experiment_fgd(
    nodes: Annotated[Path | None, typer.Option("--nodes", metavar="FILE",
                                               help="openb node list CSV (default: shipped)")] = None,
    pods: Annotated[Path | None, typer.Option("--pods", metavar="FILE",
                                              help="openb pod list CSV (default: shipped)")] = None,
    policy: Annotated[str, typer.Option("--policy", metavar="LIST", help="Comma list of random, dotprod, "
                                        "gpuclustering, gpupacking, bestfit, fgd; or all")] = "all",
    seed: Annotated[str, typer.Option("--seed", metavar="SEEDS", help="Seeds: 42, 42-51 or 42-44,50")] = "42-51",
    tune: Annotated[float, typer.Option("--tune", metavar="RATIO",
                                        help="Inflate the workload to tune × GPU capacity")] = 1.3,
    tie_break: Annotated[str, typer.Option("--tie-break", metavar="RULE",
                                           help="rank (the paper's) or random (Volcano's)")] = "rank",
    output: Annotated[str | None, typer.Option("--output", "-o", metavar="FORMAT",
                                               callback=options.output_format(), help=OUTPUT_HELP)] = None,
    report: Annotated[Path | None, typer.Option("--report", metavar="DIR", callback=options.report_dir,
                                                help="Write curves (CSV, PNG) here")] = None,
    timings: Annotated[bool, typer.Option("--timings", help=TIMINGS_HELP)] = False,
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
    raise typer.Exit(run_experiment_fgd(nodes, pods, policies, seeds, tune, str(output), report,
                                        tie_break=tie_break, timings=timings))


def run(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv`` (default: ``sys.argv[1:]``) and return the exit code.

    The one place where usage errors are printed: a missing argument, an unknown option or
    command, or a value refused by its type or callback becomes one ``error:`` line on
    stderr and exit code 2 (instead of the usage box of the underlying library). A library
    warning logged while no logging is set up (the live components set it up) is printed as the
    commands print theirs: ``warning: <message>``."""
    import logging

    from pyvolcano.cli.kube import normalize_go_bools
    from pyvolcano.cli.output import UnconfiguredLogs

    logging.lastResort = UnconfiguredLogs()

    command = typer.main.get_command(app)
    args = normalize_go_bools(list(argv) if argv is not None else sys.argv[1:])
    try:
        result = command.main(args=args, prog_name="pyvolcano",
                              standalone_mode=False)
    except typer.TyperException as e:
        if type(e).__name__ == "NoArgsIsHelpError":  # the help is already printed
            return 2
        ctx = getattr(e, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None and e.exit_code == 2 else ""
        message = " ".join(e.format_message().split())
        print(f"error: {message}{hint}", file=sys.stderr)
        return int(e.exit_code)
    except typer.Abort:
        print("error: aborted", file=sys.stderr)
        return 1
    return result if isinstance(result, int) else 0


def main() -> None:
    sys.exit(run())


if __name__ == "__main__":
    main()
