"""Human-readable output for the CLI (rich tables)."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.table import Table

from pyvolcano.cache.cache import SchedulerCache


def print_schedule_table(result: dict[str, Any], cache: SchedulerCache) -> None:
    # Never wrapped or truncated when stdout is not a terminal (kubectl's rule).
    console = Console() if sys.stdout.isatty() else Console(width=100_000)
    t = Table(title="Decisions", box=None)
    t.add_column("POD")
    t.add_column("DECISION")
    t.add_column("NODE")
    for pod, node in result["binds"].items():
        t.add_row(pod, "bind", node)
    for pod, node in result["pipelined"].items():
        t.add_row(pod, "pipelined", node)
    for pod in result["evictions"]:
        t.add_row(pod, "evict", "")
    console.print(t)
    pgs = Table(title="PodGroups", box=None)
    pgs.add_column("PODGROUP")
    pgs.add_column("PHASE")
    pgs.add_column("REASON", overflow="fold", min_width=len("NodeFit.InsufficientResource"))
    pgs.add_column("HINT", overflow="fold")
    diagnoses = result.get("diagnoses") or {}
    for pg in cache.podgroups():
        key = f"{pg.namespace}/{pg.name}"
        diag = diagnoses.get(key)
        reason, hint = (diag["reason"], diag["hint"]) if diag else ("", "")
        pgs.add_row(key, pg.phase, reason, hint)
    console.print(pgs)
    secs = result["stats"]["session_seconds"]
    console.print(f"{result['stats']['sessions']} session(s), {sum(secs):.3f}s")
