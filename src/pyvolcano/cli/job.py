"""``pyvolcano job …``: commands about one job (``why``: the pending diagnosis).

The ``job`` sub-app is :data:`job_app`; ``cli/app.py`` mounts it. Each verb is one function
here, registered with ``@job_app.command``; further verbs (``run``, ``list``) join the same
sub-app.

``job why NAME`` runs scheduling sessions offline on the cluster's scheduler inputs — a
snapshot file (``--cluster``) or a live cluster read through the Kubernetes store
(``--kubeconfig``) — and prints the job's diagnosis (docs/reasons.md), with the scheduler
configuration ``--config`` names, else the snapshot's or the cluster's scheduler ConfigMap,
else upstream's default. It is read-only: the sessions run on an in-memory cache and nothing
is written back.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pyvolcano.cli.options import Group
from pyvolcano.cli.queue import (
    ClusterOption,
    ConfigOption,
    ContextOption,
    KubeconfigOption,
    OutputOption,
    SeedOption,
    StateError,
    TimeoutOption,
)

if TYPE_CHECKING:
    from pyvolcano.cache.cache import SchedulerCache
    from pyvolcano.conf.schema import SchedulerConfiguration
    from pyvolcano.runtime.registry import Registry

__all__ = ["job_app", "resolve_podgroup", "run_why", "why_document"]

job_app = typer.Typer(help="Jobs: why one is pending; what running one would do.", no_args_is_help=True, cls=Group)


@job_app.command("why")
def why(
    name: Annotated[str, typer.Argument(help="The job: its PodGroup's name, or a vcjob's name")],
    namespace: Annotated[str, typer.Option("--namespace", "-n", help="The job's namespace")] = "default",
    cluster: ClusterOption = None,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    config: ConfigOption = None,
    sessions: Annotated[int, typer.Option("--sessions", min=1, help="Sessions to run before answering")] = 1,
    output: OutputOption = None,
    seed: SeedOption = 0,
    timeout: TimeoutOption = 30.0,
) -> None:
    """Why a job is pending: the stage, reason code, figures and the change that would unblock it."""
    assert output is not None  # set by the callback
    raise typer.Exit(run_why(name, namespace, cluster=cluster, kubeconfig=kubeconfig, context=context,
                             config_path=config, sessions=sessions, output=output, seed=seed, timeout=timeout))


def run_why(name: str, namespace: str, *, cluster: str | None, kubeconfig: str | None, context: str | None,
            config_path: Path | None, sessions: int, output: str, seed: int, timeout: float) -> int:
    from pyvolcano.api.manifest import ManifestError
    from pyvolcano.cache.cache import SchedulerCache
    from pyvolcano.cli.output import emit, error
    from pyvolcano.cli.queue import load_state
    from pyvolcano.conf import ConfigError
    from pyvolcano.framework.arguments import ArgumentError
    from pyvolcano.runtime.registry import default_registry
    from pyvolcano.simulator.state import LiveReadError

    registry = default_registry()
    try:
        state, config = load_state(cluster=cluster, kubeconfig=kubeconfig, context=context, config_path=config_path,
                                   registry=registry, timeout=timeout, now=None, user_agent="pyvolcano-job-why")
        cache = SchedulerCache.from_objects(state.objects)
        key = resolve_podgroup(cache, name, namespace, state.source)
    except (StateError, ManifestError, ConfigError, ArgumentError, ValueError) as e:
        error(str(e))
        return 2
    except LiveReadError as e:
        error(str(e))
        return 1
    doc = why_document(cache, key, config, registry, sessions=sessions, seed=seed, now=state.now)
    if output in ("json", "yaml"):
        emit(doc, output)
    else:
        from pyvolcano.cli.output import console

        console().print(render_why(doc), end="", markup=False)
    return 0


def why_document(cache: SchedulerCache, key: str, config: SchedulerConfiguration, registry: Registry, *,
                 sessions: int, seed: int, now: float | None = None) -> dict[str, Any]:
    """Run ``sessions`` sessions on ``cache`` and return ``job why``'s document for PodGroup ``key``:
    ``{"job", "phase", "queue", "diagnosis", "notes"}`` (``diagnosis`` null when nothing is
    pending; ``notes``: the fields of the job's queue, PodGroup, pods and their ResourceClaims
    that change placement upstream and that nothing in this configuration acts on,
    :mod:`pyvolcano.api.plugin_fields`)."""
    from pyvolcano.api.plugin_fields import placement_notes
    from pyvolcano.runtime.cycle import schedule_objects

    result = schedule_objects(cache, config, registry, sessions=sessions, seed=seed, now=now)
    job = cache.pg_jobs[key]
    assert job.podgroup is not None
    queue = cache.queues.get(job.queue)
    pods = sorted((t.pod for t in job.tasks.values()), key=lambda p: p.name)
    claim_keys = sorted({f"{p.namespace}/{c.resource_claim_name or p.resource_claim_statuses.get(c.name, '')}"
                         for p in pods for c in p.resource_claims})
    claims = [c for c in (cache.dra.claim(k) for k in claim_keys) if c is not None]
    notes = placement_notes(queue.queue if queue is not None else None, job.podgroup, pods,
                            config.plugin_names(), claims)
    return {"job": key, "phase": job.podgroup.phase, "queue": job.queue, "diagnosis": result["diagnoses"].get(key),
            "notes": notes}


def resolve_podgroup(cache: SchedulerCache, name: str, namespace: str, source: str) -> str:
    """The PodGroup key for ``name``: the PodGroup itself, or the one a vcjob ``name`` owns
    (the controller names it ``<job>-<job uid>``)."""
    key = f"{namespace}/{name}"
    if key in cache.pg_jobs:
        return key
    owned = sorted(k for k in cache.pg_jobs if k.startswith(f"{key}-"))
    if len(owned) == 1:
        return owned[0]
    if owned:
        raise StateError(f"{source}: {len(owned)} PodGroups in namespace {namespace} start with {name}- "
                       f"({', '.join(k.partition('/')[2] for k in owned)}); name one of them")
    raise StateError(f"{source}: no PodGroup {name} in namespace {namespace}")


def render_why(doc: dict[str, Any]) -> str:
    """The diagnosis for people: a short key/value block, then the figures and the histogram."""
    from pyvolcano.api.quantity import format_quantity

    def amount(res: str, v: float | None) -> str:
        if v is None:
            return "-"
        return format_quantity(v, binary=True) if res == "memory" else f"{v:g}"

    diag = doc["diagnosis"]
    lines = [f"JOB       {doc['job']}  (PodGroup {doc['phase']}, queue {doc['queue']})"]
    lines += [f"NOTE      {note}" for note in doc.get("notes", ())]
    if diag is None:
        lines.append("PENDING   no: every pod the job needs is placed or running")
        return "\n".join(lines) + "\n"
    t = diag["tasks"]
    lines += [
        f"STAGE     {diag['stage']}",
        f"REASON    {diag['reason']}",
        f"MESSAGE   {diag['message']}",
        f"HINT      {diag['hint']}",
        f"PODS      {t['total']} total, minAvailable {t['min_available']}, {t['placed']} placed, "
        f"{t['unplaced']} unplaced, {t['gated']} gated",
    ]
    if diag["task"]:
        lines.append(f"POD       {diag['task']}  (figures per {diag['scope']})")
    if diag["resources"]:
        rows = [("RESOURCE", "REQUESTED", "FREE IN QUEUE", "FREE IN CLUSTER", "FREE ON BEST NODE", "BEST NODE",
                 "SHORTFALL")]
        for r in diag["resources"]:
            n = r["name"]
            rows.append((n, amount(n, r["requested"]), amount(n, r["free_in_queue"]),
                         amount(n, r["free_in_cluster"]), amount(n, r["free_on_best_node"]),
                         r["best_node"] or "-", amount(n, r["shortfall"])))
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines.append("")
        lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    if diag.get("limits"):
        limit_rows: list[tuple[str, ...]] = [("PLUGIN", "LIMITED", "NAME", "LIMIT", "USED", "REQUESTED")]
        for f in diag["limits"]:
            n = f["name"]
            limit_rows.append((f["plugin"], f["object"], n, amount(n, f["limit"]), amount(n, f["used"]),
                               amount(n, f["requested"])))
        widths = [max(len(row[i]) for row in limit_rows) for i in range(len(limit_rows[0]))]
        lines.append("")
        lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in limit_rows]
    plugin = diag.get("plugin")
    if plugin:
        lines += ["", f"PLUGIN    {plugin['name']}"]
        lines += [f"  {name}: {_figure(value)}" for name, value in plugin["figures"].items()]
    if diag.get("volumes"):
        lines += ["", "CLAIM / PV" + " " * 20 + "DETAIL"]
        for v in diag["volumes"]:
            size = format_quantity(v["requested"], binary=True)
            lines.append(f"  {v['claim']:<28}{v['status']}, class {v['class'] or '-'} "
                         f"({v['binding_mode'] or 'no such class'}), {size}"
                         + (f", volume {v['volume']}" if v["volume"] else ""))
            lines += [f"    {p['name']:<26}{'on ' + p['nodes'] if p['nodes'] else 'any node'}: {p['state']}"
                      for p in v["pvs"]]
    if diag.get("devices"):
        lines += ["", "CLAIM / REQUEST" + " " * 15 + "DETAIL"]
        for c in diag["devices"]:
            lines.append(f"  {c['claim']:<28}{c['status']}")
            for r in c["requests"]:
                detail = r["note"] or (
                    f"wants {r['wants']} of class {r['class']}: {r['matching']} match, {r['free']} free"
                    + (f", {r['free_on_best_node']} on {r['best_node']}" if r["best_node"] else ""))
                lines.append(f"    {r['request']:<26}{detail}")
    if diag["node_failures"]:
        lines += ["", f"NODES     {diag['nodes']['failed']}/{diag['nodes']['total']} failed:"]
        lines += [f"  {count:>5}  {reason}" for reason, count in diag["node_failures"].items()]
    pre = diag["preemption"]
    if pre["why_not"]:
        verdict = f"{pre['action']} could help" if pre["could_help"] else "would not help"
        lines += ["", f"PREEMPTION  {verdict}: {pre['why_not']}"]
        if pre["victims"]:
            lines.append(f"  victims: {', '.join(pre['victims'])}")
    return "\n".join(lines) + "\n"


def _figure(value: object) -> str:
    """A plugin figure on one line: mappings and lists as compact JSON, ``-`` for none."""
    import json

    if value is None:
        return "-"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def _register_run() -> None:
    from pyvolcano.cli.job_run import run

    job_app.command("run")(run)


_register_run()
