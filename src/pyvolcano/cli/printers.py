"""Human-readable output for the CLI (rich tables; ``wide`` adds columns, as kubectl's ``-o wide``)."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.cache.unplaceable import unplaceable_reason
from pyvolcano.cli.output import console


def print_schedule_table(result: dict[str, Any], cache: SchedulerCache, *, wide: bool = False) -> None:
    out = console()
    group_of = {f"{p.namespace}/{p.name}": f"{p.namespace}/{p.group_name}" if p.group_name else ""
                for p in cache.pods.values()}
    t = Table(title="Decisions", box=None)
    t.add_column("POD")
    t.add_column("DECISION")
    t.add_column("NODE")
    if wide:
        t.add_column("PODGROUP")

    def row(pod: str, decision: str, node: str) -> None:
        t.add_row(pod, decision, node, *([group_of.get(pod, "")] if wide else []))

    for pod, node in result["binds"].items():
        row(pod, "bind", node)
    for pod, node in result["pipelined"].items():
        row(pod, "pipelined", node)
    for pod in result["evictions"]:
        row(pod, "evict", "")
    out.print(t)
    pgs = Table(title="PodGroups", box=None)
    pgs.add_column("PODGROUP")
    pgs.add_column("PHASE")
    if wide:
        for col in ("QUEUE", "MINMEMBER"):
            pgs.add_column(col)
    pgs.add_column("REASON", overflow="fold")
    pgs.add_column("HINT", overflow="fold")
    diagnoses = result.get("diagnoses") or {}
    for pg in cache.podgroups():
        key = f"{pg.namespace}/{pg.name}"
        diag = diagnoses.get(key)
        reason, hint = (diag["reason"], diag["hint"]) if diag else ("", "")
        if pg.phase in ("Pending", "Inqueue") and (diag is None or diag["stage"] != "node-fit"):
            job = cache.pg_jobs.get(key)
            note = unplaceable_reason(cache, job) if job is not None else ""
            hint = f"{hint} ({note})" if hint and note else (hint or note)
        extra = [pg.queue, str(pg.min_member)] if wide else []
        pgs.add_row(key, pg.phase, *extra, reason, hint)
    out.print(pgs)
    secs = result["stats"]["session_seconds"]
    out.print(f"{result['stats']['sessions']} session(s), {sum(secs):.3f}s")
