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

from pyvolcano.cli.schedule import run_schedule

app = typer.Typer(
    name="pyvolcano",
    help="A Volcano-compatible batch scheduler for Kubernetes, in Python.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """pyvolcano: Volcano's scheduler, runnable on manifests and traces."""


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
    fmt = output or ("table" if sys.stdout.isatty() else "json")
    if fmt not in ("json", "table"):
        _usage_error(f"--output: got {fmt!r}; expected json or table")
    code = run_schedule(cluster, config, sessions=sessions, output=fmt, seed=seed)
    raise typer.Exit(code)


def _usage_error(msg: str) -> None:
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(2)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
