"""Human-readable output for the CLI (rich tables)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.cache.unplaceable import unplaceable_reason


def print_schedule_table(result: dict[str, Any], cache: SchedulerCache) -> None:
    console = Console()
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
    pgs.add_column("REASON", overflow="fold")
    for pg in cache.podgroups():
        reason = ""
        for c in pg.conditions:
            if c.type == "Unschedulable" and c.status == "True":
                reason = c.message
        if pg.phase in ("Pending", "Inqueue") and "Origin reason" not in reason:
            job = cache.pg_jobs.get(f"{pg.namespace}/{pg.name}")
            extra = unplaceable_reason(cache, job) if job is not None else ""
            reason = f"{reason} ({extra})" if reason and extra else (reason or extra)
        pgs.add_row(f"{pg.namespace}/{pg.name}", pg.phase, reason)
    console.print(pgs)
    secs = result["stats"]["session_seconds"]
    console.print(f"{result['stats']['sessions']} session(s), {sum(secs):.3f}s")
