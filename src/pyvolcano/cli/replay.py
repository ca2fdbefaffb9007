"""``pyvolcano replay DIR/SESSION``: re-run one session recorded by ``scheduler --record``.

The session is rebuilt from its directory (:mod:`pyvolcano.runtime.recorder`) and run once
with the recorded ``now``, RNG state and configuration. Its decisions are printed (``-o
json|yaml``: one document ``{"session", "identical", "binds", "evictions", "pipelined",
"nominated", "podgroups"}``; a table otherwise) and compared with the recorded ones: exit 0
when they are the same, 1 (and one ``error:`` line naming the first difference) when not, 2
for a directory that is not a recorded session.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from pyvolcano.cli import options
from pyvolcano.cli.output import console, emit, error, note

__all__ = ["first_difference", "replay"]


def first_difference(replayed: dict[str, Any], recorded: dict[str, Any]) -> str | None:
    for key in ("binds", "evictions", "pipelined", "nominated", "podgroups"):
        a, b = replayed.get(key), recorded.get(key)
        if a != b:
            return f"{key}: replayed {a!r}, recorded {b!r}"
    return None


def _table(name: str, decisions: dict[str, Any]) -> None:
    from rich.table import Table

    t = Table(title=f"Session {name}", box=None)
    for col in ("POD", "DECISION", "NODE"):
        t.add_column(col)
    for pod, node in decisions["binds"]:
        t.add_row(pod, "bind", node)
    for pod, node in decisions["pipelined"].items():
        t.add_row(pod, "pipelined", node)
    for ns, pod, reason in decisions["evictions"]:
        t.add_row(f"{ns}/{pod}", "evict", reason)
    for pod, node in decisions["nominated"].items():
        t.add_row(pod, "nominated", node)
    out = console()
    out.print(t)
    pgs = Table(box=None)
    pgs.add_column("PODGROUP")
    pgs.add_column("PHASE")
    for pg, phase in decisions["podgroups"].items():
        pgs.add_row(pg, phase)
    out.print(pgs)


def replay(
    session: Annotated[Path, typer.Argument(metavar="DIR/SESSION", help="A session directory written by "
                                            "scheduler --record, e.g. record/session-00000042")],
    output: Annotated[str | None, typer.Option("--output", "-o", metavar="FORMAT",
                                               callback=options.output_format(),
                                               help="json, yaml, table or wide (default: table on a terminal, "
                                               "else json)")] = None,
) -> None:
    """Re-run one recorded scheduler session and check it decides the same."""
    from pyvolcano.api.manifest import ManifestError
    from pyvolcano.conf import ConfigError
    from pyvolcano.framework.arguments import ArgumentError
    from pyvolcano.runtime.recorder import load_session, replay_session

    try:
        rec = load_session(session)
        decisions = replay_session(rec)
    except (ManifestError, ConfigError, ArgumentError) as e:
        error(str(e))
        raise typer.Exit(2) from None
    diff = first_difference(decisions, rec.result)
    if output in ("json", "yaml"):
        emit({"session": session.name, "identical": diff is None, **decisions}, str(output))
    else:
        _table(session.name, decisions)
    if diff is not None:
        error(f"{session}: the replay decided differently: {diff}")
        raise typer.Exit(1)
    if rec.session.get("incomplete"):
        note(f"{session}: the recording missed {rec.session['incomplete']} objects; decisions may differ from the "
             "live session's")
    note(f"{session}: same decisions as recorded")
