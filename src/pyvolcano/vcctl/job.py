"""``vcctl job run|list|view|suspend|resume|delete`` (upstream ``pkg/cli/job``).

``suspend`` and ``resume`` create ``AbortJob`` and ``ResumeJob`` Commands; the job controller
acts on them. Upstream's flags are kept (``-N/--name``, ``-n/--namespace`` defaulting to
``default``, ``-q/--queue``, ``-S/--scheduler``, ``--all-namespaces``); a job may also be named
positionally (``vcctl job view NAME``), and ``-l/--selector`` is kubectl's label selector.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from pyvolcano.api.names import JOB_API_VERSION, JOB_TYPE_KEY
from pyvolcano.api.quantity import QuantityError, parse_quantity
from pyvolcano.cli.options import UsageError
from pyvolcano.controllers.commands import delete_job as delete_job_object
from pyvolcano.controllers.commands import operate_job
from pyvolcano.vcctl.common import (
    AllNamespaces,
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
from pyvolcano.vcctl.printing import age, creation_date, print_objects, print_table

__all__ = ["job_app"]

job_app = typer.Typer(help="vcctl command line operation job", no_args_is_help=True)

Namespace = Annotated[str | None, typer.Option("--namespace", "-n", metavar="NAMESPACE",
                                               help="the namespace of job (default: the context's, else default)")]
NameOpt = Annotated[str | None, typer.Option("--name", "-N", metavar="NAME", help="the name of job")]
NameArg = Annotated[str | None, typer.Argument(metavar="[NAME]", help="the name of job (the same as --name)")]


def _name(positional: str | None, flag: str | None, message: str) -> str:
    if positional and flag and positional != flag:
        raise UsageError(f"got the job name {positional!r} and --name {flag!r}; give one")
    name = positional or flag
    if not name:
        raise UsageError(message)
    return name


def _spec(o: dict[str, Any]) -> dict[str, Any]:
    return o.get("spec") or {}


def _status(o: dict[str, Any]) -> dict[str, Any]:
    return o.get("status") or {}


def _md(o: dict[str, Any]) -> dict[str, Any]:
    return o.get("metadata") or {}


# ---------------------------------------------------------------------------- list
@job_app.command("list")
def list_jobs(
    ctx: typer.Context,
    queue: Annotated[str | None, typer.Option("--queue", "-q", metavar="QUEUE",
                                              help="list job with specified queue name")] = None,
    namespace: Namespace = None,
    scheduler: Annotated[str | None, typer.Option("--scheduler", "-S", metavar="NAME",
                                                  help="list job with specified scheduler name")] = None,
    all_namespaces: AllNamespaces = False,
    selector: SelectorText = None,
    output: Output = "table",
    no_headers: NoHeaders = False,
    kubeconfig: Kubeconfig = None,
    master: Master = None,
    context: Context = None,
    cluster: Cluster = None,
) -> None:
    """list job information"""
    sel = selector_of(selector)
    src = open_source(ctx, kubeconfig, master, context, cluster)
    ns = None if all_namespaces else (namespace or src.default_namespace)
    jobs = [j for j in src.list("Job", ns, sel)
            if (not queue or _spec(j).get("queue") == queue)
            and (not scheduler or _spec(j).get("schedulerName") == scheduler)]
    if output in ("json", "yaml", "name"):
        print_objects(jobs, output)
        return
    if not jobs:
        print("No resources found", file=sys.stderr)
        return
    name_w = max(len("Name"), *(len(str(_md(j).get("name", ""))) for j in jobs)) + 3
    columns = [("Name", name_w), ("Creation", 15), ("Phase", 12), ("JobType", 12), ("Replicas", 12), ("Min", 6),
               ("Pending", 10), ("Running", 10), ("Succeeded", 12), ("Failed", 10), ("Unknown", 12),
               ("RetryCount", 10)]
    if all_namespaces:
        ns_w = max(len("Namespace"), *(len(str(_md(j).get("namespace", ""))) for j in jobs)) + 3
        columns.insert(0, ("Namespace", ns_w))
    wide = output == "wide"
    if wide:
        columns += [("Queue", max(len("Queue"), *(len(str(_spec(j).get("queue", ""))) for j in jobs)) + 3),
                    ("Scheduler", 12), ("Age", 8)]
    rows = []
    for j in jobs:
        st = _status(j)
        replicas = sum(int(t.get("replicas") or 0) for t in _spec(j).get("tasks") or ())
        row: list[Any] = [_md(j).get("name", ""), creation_date(j), (st.get("state") or {}).get("phase", ""),
                          (_md(j).get("labels") or {}).get(JOB_TYPE_KEY) or "Batch", replicas,
                          st.get("minAvailable", 0), st.get("pending", 0), st.get("running", 0),
                          st.get("succeeded", 0), st.get("failed", 0), st.get("unknown", 0),
                          st.get("retryCount", 0)]
        if all_namespaces:
            row.insert(0, _md(j).get("namespace", ""))
        if wide:
            row += [_spec(j).get("queue", ""), _spec(j).get("schedulerName", ""),
                    age(_md(j).get("creationTimestamp"), src.now())]
        rows.append(row)
    print_table(columns, rows, headers=not no_headers)


# ---------------------------------------------------------------------------- view
def _line(level: int, text: str) -> None:
    sys.stdout.write("  " * level + text + "\n")


def _print_job_info(job: dict[str, Any]) -> None:
    md, spec, st = _md(job), _spec(job), _status(job)
    _line(0, f"Name:       \t{md.get('name', '')}")
    _line(0, f"Namespace:  \t{md.get('namespace', '')}")
    labels, annotations = md.get("labels") or {}, md.get("annotations") or {}
    _line(0, f"Labels:     \t{json.dumps(labels, sort_keys=True, separators=(',', ':'))}" if labels
          else "Labels:     \t<none>")
    _line(0, f"Annotations:\t{json.dumps(annotations, sort_keys=True, separators=(',', ':'))}" if annotations
          else "Annotations:\t<none>")
    _line(0, f"API Version:\t{job.get('apiVersion', '')}")
    _line(0, f"Kind:       \t{job.get('kind', '')}")
    _line(0, "Metadata:")
    _line(1, f"Creation Timestamp:\t{md.get('creationTimestamp', '')}")
    _line(1, f"Generate Name:     \t{md.get('generateName', '')}")
    _line(1, f"Generation:        \t{md.get('generation', 0)}")
    _line(1, f"Resource Version:  \t{md.get('resourceVersion', '')}")
    _line(1, f"UID:               \t{md.get('uid', '')}")
    _line(0, "Spec:")
    _line(1, f"Min Available:     \t{spec.get('minAvailable', 0)}")
    _line(1, f"Queue:             \t{spec.get('queue', '')}")
    plugins = spec.get("plugins") or {}
    _line(1, "Plugins:")
    for name in sorted(plugins):
        _line(2, f"{name.capitalize()}:\t{plugins[name]}")
    _line(1, f"Scheduler Name:    \t{spec.get('schedulerName', '')}")
    _line(1, "Tasks:")
    for task in spec.get("tasks") or ():
        tpl = task.get("template") or {}
        _line(2, f"Name:\t{task.get('name', '')}")
        _line(2, f"Replicas:\t{task.get('replicas', 0)}")
        _line(2, "Template:")
        _line(3, "Spec:")
        _line(4, "Containers:")
        for c in (tpl.get("spec") or {}).get("containers") or ():
            res = c.get("resources") or {}
            _line(5, "Command:")
            for arg in c.get("command") or ():
                _line(6, str(arg))
            _line(5, f"Image:\t{c.get('image', '')}")
            _line(5, f"Name: \t{c.get('name', '')}")
            _line(5, "Resources:")
            for section in ("limits", "requests"):
                _line(6, f"{section.capitalize()}:")
                for rname, qty in sorted((res.get(section) or {}).items()):
                    _line(7, f"{rname}:\t{qty}")
        _line(4, f"Restart Policy:   \t{(tpl.get('spec') or {}).get('restartPolicy', '')}")
    _line(0, "Status:")
    for key, label in (("succeeded", "Succeeded:    "), ("pending", "Pending:      "),
                       ("running", "Running:      "), ("failed", "Failed:       "),
                       ("terminating", "Terminating:  "), ("unknown", "Unknown:      "),
                       ("retryCount", "RetryCount:   "), ("minAvailable", "Min Available:"),
                       ("version", "Version:      ")):
        if int(st.get(key) or 0) > 0:
            _line(1, f"{label}\t{st[key]}")
    _line(1, "State:")
    _line(2, f"Phase:\t{(st.get('state') or {}).get('phase', '')}")
    controlled = st.get("controlledResources") or {}
    if controlled:
        _line(1, "Controlled Resources:")
        for key in sorted(controlled):
            _line(2, f"{key}: \t{controlled[key]}")
    conditions = st.get("conditions") or ()
    if conditions:
        _line(1, "Conditions:")
        _line(2, "Status\tTransitionTime")
        for c in conditions:
            _line(2, f"{c.get('status', '')} \t{c.get('lastTransitionTime', '')} ")


def _print_events(events: list[dict[str, Any]], now: float) -> None:
    if not events:
        _line(0, "Events: \t<none>")
        return
    _line(0, "Events:")
    rows = [["Type", "Reason", "Age", "From", "Message"], ["-------"] * 5]
    for e in events:
        first = e.get("deprecatedFirstTimestamp") or e.get("eventTime") or e.get("firstTimestamp")
        series = e.get("series") or {}
        count = int(series.get("count") or e.get("deprecatedCount") or e.get("count") or 1)
        last = series.get("lastObservedTime") or e.get("deprecatedLastTimestamp") or e.get("lastTimestamp") or first
        interval = f"{age(last, now)} (x{count} over {age(first, now)})" if count > 1 else age(first, now)
        source = e.get("source") or {}
        origin = [e.get("reportingController") or source.get("component") or ""]
        host = e.get("reportingInstance") or source.get("host")
        if host:
            origin.append(str(host))
        rows.append([str(e.get("type", "")), str(e.get("reason", "")), interval, ", ".join(origin),
                     str(e.get("note") or e.get("message") or "").strip()])
    widths = [15, 40, 30, 40, 0]
    for r in rows:
        _line(0, "\t".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())


def _job_events(src: Any, job: dict[str, Any]) -> list[dict[str, Any]]:
    from pyvolcano.store.base import StoreError

    md = _md(job)
    name, ns = md.get("name"), md.get("namespace")
    try:
        events = src.list("Event", ns)
    except StoreError as e:
        print(f"warning: failed to list events: {e}", file=sys.stderr)
        return []

    def about(e: dict[str, Any]) -> bool:
        ref = e.get("regarding") or e.get("involvedObject") or {}
        if ref.get("kind") == "Job" and ref.get("name") == name:
            return True
        return str(_md(e).get("name", "")).startswith(f"{name}.") and ref.get("kind") in (None, "Job")

    return [e for e in events if about(e)]


@job_app.command("view")
def view_job(
    ctx: typer.Context,
    job: NameArg = None,
    namespace: Namespace = None,
    name: NameOpt = None,
    output: Output = "table",
    kubeconfig: Kubeconfig = None,
    master: Master = None,
    context: Context = None,
    cluster: Cluster = None,
) -> None:
    """show job information"""
    job_name = _name(job, name, "job name (specified by --name or -N) is mandatory to view a particular job")
    src = open_source(ctx, kubeconfig, master, context, cluster)
    obj = src.get("Job", namespace or src.default_namespace, job_name)
    if output in ("json", "yaml", "name"):
        print_objects([obj], output, single=True)
        return
    _print_job_info(obj)
    _print_events(_job_events(src, obj), src.now())


# ---------------------------------------------------------------------------- run
def _resource_list(flag: str, spec: str) -> dict[str, str] | None:
    """Upstream's ``PopulateResourceListV1``: ``cpu=1000m,memory=100Mi``."""
    if spec == "":
        return None
    out: dict[str, str] = {}
    for statement in spec.split(","):
        parts = statement.split("=")
        if len(parts) != 2:
            raise UsageError(f"{flag}: invalid argument syntax {statement}, expected <resource>=<value>")
        try:
            parse_quantity(parts[1])
        except QuantityError as e:
            raise UsageError(f"{flag}: {parts[0]}: {e}") from None
        out[parts[0]] = parts[1]
    return out


def _read_job_file(filename: str) -> dict[str, Any]:
    if ".yaml" not in filename and ".yml" not in filename:
        raise UsageError(f"{filename}: only support yaml file")
    try:
        text = Path(filename).read_text(encoding="utf-8")
    except OSError as e:
        raise UsageError(f"{filename}: failed to read file: {e.strerror or e}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise UsageError(f"{filename}: not valid YAML{at}: {getattr(e, 'problem', None) or e}") from None
    if not isinstance(doc, dict) or doc.get("kind", "Job") != "Job":
        raise UsageError(f"{filename}: expected one {JOB_API_VERSION} Job")
    doc.setdefault("apiVersion", JOB_API_VERSION)
    doc.setdefault("kind", "Job")
    if not isinstance(doc.get("metadata"), dict) or not doc["metadata"].get("name"):
        raise UsageError(f"{filename}: metadata.name: job name cannot be left blank")
    return doc


def _job_from_flags(name: str, namespace: str, image: str, min_available: int, replicas: int,
                    requests: dict[str, str] | None, limits: dict[str, str] | None, scheduler: str) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if limits:
        resources["limits"] = limits
    if requests:
        resources["requests"] = requests
    return {
        "apiVersion": JOB_API_VERSION, "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "minAvailable": min_available, "schedulerName": scheduler,
            "tasks": [{"replicas": replicas, "template": {
                "metadata": {"name": name, "labels": {"job.volcano.sh": name}},
                "spec": {"restartPolicy": "Never", "containers": [{
                    "image": image, "name": name, "imagePullPolicy": "IfNotPresent", "resources": resources}]},
            }}],
        },
    }


@job_app.command("run")
def run_job(
    ctx: typer.Context,
    image: Annotated[str, typer.Option("--image", "-i", metavar="IMAGE",
                                       help="the container image of job")] = "busybox",
    namespace: Namespace = None,
    name: NameOpt = None,
    min_available: Annotated[int, typer.Option("--min", "-m", metavar="N",
                                               help="the minimal available tasks of job")] = 1,
    replicas: Annotated[int, typer.Option("--replicas", "-r", metavar="N", help="the total tasks of job")] = 1,
    requests: Annotated[str, typer.Option("--requests", "-R", metavar="LIST", help="the resource request of the task")
                        ] = "cpu=1000m,memory=100Mi",
    limits: Annotated[str, typer.Option("--limits", "-L", metavar="LIST", help="the resource limit of the task")
                      ] = "cpu=1000m,memory=100Mi",
    scheduler: Annotated[str, typer.Option("--scheduler", "-S", metavar="NAME",
                                           help="the scheduler for this job")] = "volcano",
    filename: Annotated[str | None, typer.Option("--filename", "-f", metavar="FILE",
                                                 help="the yaml file of job")] = None,
    output: Annotated[str | None, typer.Option("--output", "-o", metavar="FORMAT",
                                               help="json, yaml or name: print the created job")] = None,
    kubeconfig: Kubeconfig = None,
    master: Master = None,
    context: Context = None,
    cluster: Cluster = None,
) -> None:
    """run job by parameters from the command line"""
    if output is not None and output not in ("json", "yaml", "name"):
        raise typer.BadParameter(f"got {output!r}; expected json, yaml or name", param_hint="'--output' / '-o'")
    if not name and not filename:
        raise UsageError("job name cannot be left blank")
    req = _resource_list("--requests", requests)
    lim = _resource_list("--limits", limits)
    src = open_source(ctx, kubeconfig, master, context, cluster, verb="job run")
    if filename:
        job = _read_job_file(filename)
        ns = namespace or job["metadata"].get("namespace") or src.default_namespace
        job["metadata"]["namespace"] = ns
    else:
        assert name is not None
        job = _job_from_flags(name, namespace or src.default_namespace, image, min_available, replicas, req, lim,
                              scheduler)
    created = writer(src).create(job)
    if output is not None:
        print_objects([created], output, single=True)
    else:
        typer.echo(f"run job {_md(created).get('name') or _md(job).get('name')} successfully")


# ---------------------------------------------------------------------------- suspend / resume / delete
def _job_command(ctx: typer.Context, verb: str, job: str | None, name: str | None,
                 namespace: str | None, kubeconfig: str | None, master: str | None, context: str | None,
                 cluster: Path | None) -> None:
    job_name = _name(job, name, f"job name is mandatory to {verb} a particular job")
    src = open_source(ctx, kubeconfig, master, context, cluster, verb=f"job {verb}")
    operate_job(writer(src), namespace or src.default_namespace, job_name, verb)


@job_app.command("suspend")
def suspend_job(ctx: typer.Context, job: NameArg = None, namespace: Namespace = None, name: NameOpt = None,
                kubeconfig: Kubeconfig = None, master: Master = None, context: Context = None,
                cluster: Cluster = None) -> None:
    """abort a job"""
    _job_command(ctx, "suspend", job, name, namespace, kubeconfig, master, context, cluster)


@job_app.command("resume")
def resume_job(ctx: typer.Context, job: NameArg = None, namespace: Namespace = None, name: NameOpt = None,
               kubeconfig: Kubeconfig = None, master: Master = None, context: Context = None,
               cluster: Cluster = None) -> None:
    """resume a job"""
    _job_command(ctx, "resume", job, name, namespace, kubeconfig, master, context, cluster)


@job_app.command("delete")
def delete_job(ctx: typer.Context, job: NameArg = None, namespace: Namespace = None, name: NameOpt = None,
               kubeconfig: Kubeconfig = None, master: Master = None, context: Context = None,
               cluster: Cluster = None) -> None:
    """delete a job"""
    job_name = _name(job, name, "job name is mandatory to delete a particular job")
    src = open_source(ctx, kubeconfig, master, context, cluster, verb="job delete")
    delete_job_object(writer(src), namespace or src.default_namespace, job_name)
    typer.echo(f"delete job {job_name} successfully")
