"""``vcctl queue create|delete|operate|list|get`` (upstream ``pkg/cli/queue``).

Queues are cluster-scoped, so upstream's ``-n`` is ``--name`` here, not a namespace (kept for
compatibility; a queue may also be named positionally). ``operate -a open|close`` creates an
``OpenQueue`` / ``CloseQueue`` Command in ``default`` for the queue controller;
``-a update -w N`` patches ``spec.weight``. ``list`` and ``get`` count the queue's
PodGroups by phase (Inqueue, Pending, Running, Unknown, Completed) from all namespaces.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from pyvolcano.api.names import SCHEDULING_API_VERSION
from pyvolcano.cli.options import UsageError
from pyvolcano.controllers.commands import operate_queue as operate_queue_object
from pyvolcano.vcctl.common import (
    Cluster,
    Context,
    Kubeconfig,
    Master,
    NoHeaders,
    Output,
    SelectorText,
    open_source,
    selector_of,
    writer,
)
from pyvolcano.vcctl.printing import age, print_objects, print_table

__all__ = ["queue_app"]

queue_app = typer.Typer(help="Queue Operations", no_args_is_help=True)

PHASES = ("Inqueue", "Pending", "Running", "Unknown", "Completed")
COLUMNS = [("Name", 25), ("Weight", 8), ("State", 8), ("Parent", 8), ("Inqueue", 8), ("Pending", 8),
           ("Running", 8), ("Unknown", 8), ("Completed", 8)]

NameOpt = Annotated[str | None, typer.Option("--name", "-n", metavar="NAME", help="the name of queue")]
NameArg = Annotated[str | None, typer.Argument(metavar="[NAME]", help="the name of queue (the same as --name)")]


def _name(positional: str | None, flag: str | None, message: str) -> str:
    if positional and flag and positional != flag:
        raise UsageError(f"got the queue name {positional!r} and --name {flag!r}; give one")
    name = positional or flag
    if not name:
        raise UsageError(message)
    return name


def _stats(podgroups: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Upstream's ``PodGroupStatistics`` per queue."""
    out: dict[str, dict[str, int]] = {}
    for pg in podgroups:
        queue = str((pg.get("spec") or {}).get("queue") or "")
        phase = (pg.get("status") or {}).get("phase")
        counts = out.setdefault(queue, dict.fromkeys(PHASES, 0))
        if phase in counts:
            counts[phase] += 1
    return out


def _print_queues(queues: list[dict[str, Any]], stats: dict[str, dict[str, int]], *, wide: bool,
                  headers: bool, now: float) -> None:
    columns = list(COLUMNS)
    if wide:
        columns += [("Priority", 10), ("Reclaimable", 13), ("Capability", 30), ("Deserved", 30), ("Age", 8)]
    rows = []
    for q in queues:
        spec, md = q.get("spec") or {}, q.get("metadata") or {}
        counts = stats.get(str(md.get("name", ""))) or dict.fromkeys(PHASES, 0)
        row: list[Any] = [md.get("name", ""), spec.get("weight", 0), (q.get("status") or {}).get("state", ""),
                          spec.get("parent", ""), *(counts[p] for p in PHASES)]
        if wide:
            reclaimable = spec.get("reclaimable")
            row += [spec.get("priority", 0), "" if reclaimable is None else str(reclaimable).lower(),
                    _resources(spec.get("capability")), _resources(spec.get("deserved")),
                    age(md.get("creationTimestamp"), now)]
        rows.append(row)
    print_table(columns, rows, headers=headers)


def _resources(res: Any) -> str:
    if not isinstance(res, dict) or not res:
        return "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(res.items()))


@queue_app.command("list")
def list_queues(
    ctx: typer.Context,
    selector: SelectorText = None,
    output: Output = "table",
    no_headers: NoHeaders = False,
    kubeconfig: Kubeconfig = None,
    master: Master = None,
    context: Context = None,
    cluster: Cluster = None,
) -> None:
    """lists all the queue"""
    sel = selector_of(selector)
    src = open_source(ctx, kubeconfig, master, context, cluster)
    queues = src.list("Queue", None, sel)
    if output in ("json", "yaml", "name"):
        print_objects(queues, output)
        return
    if not queues:
        print("No resources found", file=sys.stderr)
        return
    stats = _stats(src.list("PodGroup", None))
    _print_queues(queues, stats, wide=output == "wide", headers=not no_headers, now=src.now())


@queue_app.command("get")
def get_queue(
    ctx: typer.Context,
    queue: NameArg = None,
    name: NameOpt = None,
    output: Output = "table",
    no_headers: NoHeaders = False,
    kubeconfig: Kubeconfig = None,
    master: Master = None,
    context: Context = None,
    cluster: Cluster = None,
) -> None:
    """get a queue"""
    queue_name = _name(queue, name, "name is mandatory to get the particular queue details")
    src = open_source(ctx, kubeconfig, master, context, cluster)
    obj = src.get("Queue", None, queue_name)
    if output in ("json", "yaml", "name"):
        print_objects([obj], output, single=True)
        return
    pgs = [pg for pg in src.list("PodGroup", None) if (pg.get("spec") or {}).get("queue") == queue_name]
    _print_queues([obj], _stats(pgs), wide=output == "wide", headers=not no_headers, now=src.now())


@queue_app.command("create")
def create_queue(
    ctx: typer.Context,
    queue: NameArg = None,
    name: NameOpt = None,
    weight: Annotated[int, typer.Option("--weight", "-w", metavar="N", help="the weight of the queue")] = 1,
    state: Annotated[str, typer.Option("--state", "-S", metavar="STATE", help="the state of queue")] = "Open",
    kubeconfig: Kubeconfig = None,
    master: Master = None,
    context: Context = None,
    cluster: Cluster = None,
) -> None:
    """creates queue"""
    if queue and name and queue != name:
        raise UsageError(f"got the queue name {queue!r} and --name {name!r}; give one")
    queue_name = queue or name or "test"  # upstream's default name
    src = open_source(ctx, kubeconfig, master, context, cluster, verb="queue create")
    writer(src).create({"apiVersion": SCHEDULING_API_VERSION, "kind": "Queue", "metadata": {"name": queue_name},
                        "spec": {"weight": weight}, "status": {"state": state}})


@queue_app.command("delete")
def delete_queue(
    ctx: typer.Context,
    queue: NameArg = None,
    name: NameOpt = None,
    kubeconfig: Kubeconfig = None,
    master: Master = None,
    context: Context = None,
    cluster: Cluster = None,
) -> None:
    """delete queue"""
    queue_name = _name(queue, name, "queue name must be specified")
    src = open_source(ctx, kubeconfig, master, context, cluster, verb="queue delete")
    writer(src).delete("Queue", None, queue_name)




@queue_app.command("operate")
def operate_queue(
    ctx: typer.Context,
    queue: NameArg = None,
    name: NameOpt = None,
    weight: Annotated[int, typer.Option("--weight", "-w", metavar="N", help="the weight of the queue")] = 0,
    action: Annotated[str, typer.Option("--action", "-a", metavar="ACTION",
                                        help="operate action to queue, valid actions are open, "
                                        "close, update")] = "",
    kubeconfig: Kubeconfig = None,
    master: Master = None,
    context: Context = None,
    cluster: Cluster = None,
) -> None:
    """operate queue"""
    queue_name = _name(queue, name, "queue name must be specified")
    if action == "":
        raise UsageError("action can not be null")
    if action not in ("open", "close", "update"):
        raise UsageError(f"action {action} invalid, valid actions are open, close and update")
    if action == "update" and weight <= 0:
        raise UsageError(f"when update queue {queue_name}, weight must be specified, the value must be greater "
                         "than 0")
    src = open_source(ctx, kubeconfig, master, context, cluster, verb="queue operate")
    store = writer(src)
    if action == "update":
        store.patch("Queue", None, queue_name, {"spec": {"weight": weight}})
        return
    operate_queue_object(store, queue_name, action)
