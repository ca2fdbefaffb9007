"""``pyvolcano queue top``: pending jobs in scheduling order, with reason codes and start estimates.

Read-only, on a snapshot (``--cluster``) or a live cluster (``--kubeconfig``); see
:mod:`pyvolcano.forecast.queue_top` for the order and :mod:`pyvolcano.forecast.eta` for the
estimate. The helpers here (:func:`load_state`, :func:`runtime_policy`) are shared with
``job run --dry-run``. The wall clock is read only here, at the edge, for a live cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pyvolcano.cli import options
from pyvolcano.cli.options import Group

if TYPE_CHECKING:
    from pyvolcano.conf.schema import SchedulerConfiguration
    from pyvolcano.runtime.registry import Registry
    from pyvolcano.simulator.restore import RuntimePolicy
    from pyvolcano.simulator.state import ClusterState

__all__ = ["load_state", "queue_app", "render_top", "runtime_policy"]

queue_app = typer.Typer(help="Queues: the pending jobs in scheduling order.", no_args_is_help=True, cls=Group)

FORMATS = ("json", "yaml", "table")
RUNTIME_HELP = ("Runtime of a pod that declares none: QUEUE=DURATION for one queue, DURATION for every other "
                "(repeatable; default: unknown)")

# The options of every command that reads the cluster's state through :func:`load_state`
# (``queue top``, ``job why``, ``job run --dry-run``).
ClusterOption = Annotated[str | None, typer.Option("--cluster", help="A snapshot: YAML file, directory or - "
                                                   "(as `schedule` reads)")]
KubeconfigOption = Annotated[str | None, typer.Option("--kubeconfig", help="The live cluster's kubeconfig (default: "
                                                      "in-cluster, $KUBECONFIG, ~/.kube/config); read-only")]
ContextOption = Annotated[str | None, typer.Option("--context", help="The kubeconfig context")]
ConfigOption = Annotated[Path | None, typer.Option("--config", "-c", help="volcano-scheduler.conf (default: the "
                                                   "snapshot's or the live cluster's scheduler ConfigMap, else "
                                                   "upstream's built-in)")]
OutputOption = Annotated[str | None, typer.Option("--output", "-o", callback=options.output_format(FORMATS),
                                                  help="table, json or yaml (default: table on a terminal, "
                                                       "else json)")]
SeedOption = Annotated[int, typer.Option("--seed", callback=options.seed,
                                         help="Seed for random tie-breaking between equal nodes")]
TimeoutOption = Annotated[float, typer.Option("--request-timeout", help="Seconds to wait for the live cluster")]
DefaultRuntimeOption = Annotated[list[str] | None, typer.Option("--default-runtime", metavar="[QUEUE=]DURATION",
                                                                help=RUNTIME_HELP)]
HorizonOption = Annotated[str, typer.Option("--horizon", help="How far ahead to simulate")]
NowOption = Annotated[str | None, typer.Option("--now", help="The state's instant, RFC 3339 (default: a snapshot's "
                                               "newest timestamp; live: the clock)")]


class StateError(Exception):
    """A user mistake on the command line (exit status 2)."""


def runtime_policy(values: list[str] | None) -> RuntimePolicy:
    """``--default-runtime`` values as a policy; raises :class:`StateError` naming the bad value."""
    from pyvolcano.api.duration import DurationError, parse_duration_strict
    from pyvolcano.simulator.restore import RuntimePolicy

    per_queue: dict[str, float] = {}
    default: float | None = None
    for value in values or []:
        queue, sep, text = value.rpartition("=")
        try:
            seconds = parse_duration_strict(text)
        except DurationError as e:
            raise StateError(f"--default-runtime {value!r}: {e}") from None
        if seconds <= 0:
            raise StateError(f"--default-runtime {value!r}: expected a positive duration such as 30m")
        if sep and not queue:
            raise StateError(f"--default-runtime {value!r}: expected QUEUE=DURATION or DURATION")
        if sep:
            per_queue[queue] = seconds
        else:
            default = seconds
    return RuntimePolicy(per_queue=per_queue, default=default)


def load_state(*, cluster: str | None, kubeconfig: str | None, context: str | None, config_path: Path | None,
               registry: Registry, timeout: float, now: str | None, user_agent: str
               ) -> tuple[ClusterState, SchedulerConfiguration]:
    """The options' state and configuration (:func:`pyvolcano.simulator.state.load_state`), the
    live cluster's notes printed."""
    from pyvolcano.cli.output import note
    from pyvolcano.runtime.clock import wall_seconds
    from pyvolcano.simulator import state as cluster_state
    from pyvolcano.store.base import from_rfc3339

    if cluster is not None and (kubeconfig is not None or context is not None):
        raise StateError("give --cluster FILE (a snapshot) or a live cluster (--kubeconfig, --context), not both")
    at: float | None = None
    if now is not None:
        try:
            at = from_rfc3339(now)
        except ValueError as e:
            raise StateError(f"--now: {e}") from None
    state, config = cluster_state.load_state(registry, cluster=cluster, kubeconfig=kubeconfig, context=context,
                                             config_path=config_path, timeout=timeout, now=at,
                                             user_agent=user_agent, wall_clock=wall_seconds)
    if cluster is None:
        for text in state.notes:
            note(text)
    return state, config


def duration_option(value: str) -> float:
    from pyvolcano.api.duration import DurationError, parse_duration_strict

    try:
        seconds = parse_duration_strict(value)
    except DurationError as e:
        raise typer.BadParameter(str(e)) from None
    if seconds <= 0:
        raise typer.BadParameter(f"got {value!r}; expected a positive duration such as 24h")
    return seconds


@queue_app.command("top")
def top(
    queue: Annotated[str | None, typer.Argument(help="Only this queue's jobs (positions stay global)")] = None,
    cluster: ClusterOption = None,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    config: ConfigOption = None,
    default_runtime: DefaultRuntimeOption = None,
    horizon: HorizonOption = "720h",
    now: NowOption = None,
    output: OutputOption = None,
    seed: SeedOption = 0,
    timeout: TimeoutOption = 30.0,
) -> None:
    """Pending jobs in the order the scheduler considers them: position, reason code, estimated start."""
    assert output is not None
    raise typer.Exit(run_top(queue, cluster=cluster, kubeconfig=kubeconfig, context=context, config_path=config,
                             default_runtime=default_runtime, horizon=horizon, now=now, output=output, seed=seed,
                             timeout=timeout))


def run_top(queue: str | None, *, cluster: str | None, kubeconfig: str | None, context: str | None,
            config_path: Path | None, default_runtime: list[str] | None, horizon: str, now: str | None,
            output: str, seed: int, timeout: float) -> int:
    from pyvolcano.api.manifest import ManifestError
    from pyvolcano.cli.output import console, emit, error
    from pyvolcano.conf import ConfigError
    from pyvolcano.forecast.queue_top import queue_top_document
    from pyvolcano.framework.arguments import ArgumentError
    from pyvolcano.runtime.registry import default_registry
    from pyvolcano.simulator.state import LiveReadError

    registry = default_registry()
    try:
        policy = runtime_policy(default_runtime)
        ahead = _horizon(horizon)
        state, config = load_state(cluster=cluster, kubeconfig=kubeconfig, context=context, config_path=config_path,
                                   registry=registry, timeout=timeout, now=now, user_agent="pyvolcano-queue-top")
        if queue is not None and queue not in {q.name for q in state.objects.queues} | {"default"}:
            raise StateError(f"{state.source}: no Queue {queue}")
    except (StateError, ManifestError, ConfigError, ArgumentError, ValueError) as e:
        error(str(e))
        return 2
    except LiveReadError as e:
        error(str(e))
        return 1
    doc = queue_top_document(state, config, registry, queue=queue, policy=policy, seed=seed, horizon=ahead)
    if output in ("json", "yaml"):
        emit(doc, output)
    else:
        console().print(render_top(doc), end="", markup=False)
    return 0


def _horizon(text: str) -> float:
    try:
        return duration_option(text)
    except typer.BadParameter as e:
        raise StateError(f"--horizon: {e}") from None


def table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Left-aligned columns, never truncated."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def start_text(entry: dict[str, Any]) -> str:
    from pyvolcano.forecast.eta import format_seconds

    if entry["start"] is None:
        return str(entry["message"])
    seconds = entry["start_in_seconds"]
    return f"{entry['start']} ({'now' if seconds < 1e-9 else 'in ' + format_seconds(seconds)})"


def render_top(doc: dict[str, Any]) -> str:
    from pyvolcano.forecast.eta import format_seconds

    lines = [f"NOW  {doc['now']}", ""]
    if doc["pending"]:
        rows: list[tuple[str, ...]] = [("POS", "QUEUE", "#", "JOB", "PHASE", "REASON", "ESTIMATED START")]
        rows += [(str(e["position"]), e["queue"], str(e["queue_position"]), e["job"], e["phase"], e["reason"] or "-",
                  start_text(e)) for e in doc["pending"]]
        lines += table(rows)
    else:
        lines.append("no pending jobs")
    reserved = [e for e in doc["pending"] if e.get("reservation")]
    if reserved:
        rows = [("RESERVED JOB", "NODES", "STARTS BY")]
        rows += [(e["job"], ",".join(e["reservation"]["nodes"]),
                  f"{e['reservation']['start']} (in {format_seconds(e['reservation']['start_in_seconds'])})")
                 for e in reserved]
        lines += ["", *table(rows)]
    if doc["running"]:
        rows = [("RUNNING JOB", "QUEUE", "PODS", "RUNTIME FROM", "ENDS")]
        rows += [(r["job"], r["queue"], str(r["pods"]), ", ".join(r["sources"]),
                  "unknown" if r["ends_in_seconds"] is None else f"in {format_seconds(r['ends_in_seconds'])}")
                 for r in doc["running"]]
        lines += ["", *table(rows)]
    if doc.get("upcoming"):
        rows = [("UPCOMING JOB", "CREATED BY", "CREATED", "ESTIMATED START")]
        rows += [(u["job"], u["created_by"], f"{u['created']} (in {format_seconds(u['created_in_seconds'])})",
                  "-" if u["start"] is None else f"{u['start']} (in {format_seconds(u['start_in_seconds'])})")
                 for u in doc["upcoming"]]
        lines += ["", *table(rows)]
    return "\n".join(lines) + "\n"
