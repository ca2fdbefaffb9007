"""``vcctl pod list`` (upstream ``pkg/cli/pod``): the pods of Volcano jobs.

Without flags: every pod with a ``volcano.sh/job-name`` label. ``-j JOB``: that job's pods
(and, with ``-q``, an error when they belong to another queue). ``-q QUEUE`` alone: pods
labelled ``volcano.sh/queue-name=QUEUE`` and pods annotated
``scheduling.volcano.sh/queue-name=QUEUE`` (plain pods in that queue). ``-l`` narrows any of
these with a label selector. The STATUS column is kubectl's (``printPod``): the phase, or
the reason a container waits or terminated, ``SchedulingGated``, ``Init:N/M``, ``Terminating``.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Annotated, Any

import typer

from pyvolcano.api.names import JOB_NAME_KEY, QUEUE_NAME_ANNOTATION, QUEUE_NAME_KEY
from pyvolcano.cli.options import UsageError
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
)
from pyvolcano.vcctl.printing import age, epoch_seconds, print_objects, print_table
from pyvolcano.vcctl.selector import SelectorError, parse_selector

__all__ = ["pod_app", "pod_row"]

pod_app = typer.Typer(help="vcctl command line operation pod", no_args_is_help=True)


def _restartable(c: dict[str, Any] | None) -> bool:
    return c is not None and c.get("restartPolicy") == "Always"


def pod_row(pod: dict[str, Any], now: float) -> dict[str, str]:
    """Ready, status, restarts and age as kubectl's ``printPod`` computes them."""
    spec, st, md = pod.get("spec") or {}, pod.get("status") or {}, pod.get("metadata") or {}
    restarts = sidecar_restarts = 0
    last_restart: float | None = None
    last_sidecar_restart: float | None = None
    total = len(spec.get("containers") or ())
    ready = 0
    phase = str(st.get("phase") or "")
    reason = str(st.get("reason") or phase)
    conditions = st.get("conditions") or ()
    if any(c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated" for c in conditions):
        reason = "SchedulingGated"
    inits = {c.get("name"): c for c in spec.get("initContainers") or ()}
    total += sum(1 for c in inits.values() if _restartable(c))

    def finished_at(cs: dict[str, Any]) -> float | None:
        term = (cs.get("lastState") or {}).get("terminated")
        return epoch_seconds(term.get("finishedAt")) if isinstance(term, dict) else None

    initializing = False
    n_init = len(spec.get("initContainers") or ())
    for i, cs in enumerate(st.get("initContainerStatuses") or ()):
        restarts += int(cs.get("restartCount") or 0)
        at = finished_at(cs)
        if at is not None and (last_restart is None or at > last_restart):
            last_restart = at
        sidecar = _restartable(inits.get(cs.get("name")))
        if sidecar:
            sidecar_restarts += int(cs.get("restartCount") or 0)
            if at is not None and (last_sidecar_restart is None or at > last_sidecar_restart):
                last_sidecar_restart = at
        state = cs.get("state") or {}
        term, waiting = state.get("terminated"), state.get("waiting")
        if term is not None and int(term.get("exitCode") or 0) == 0:
            continue
        if sidecar and cs.get("started"):
            if cs.get("ready"):
                ready += 1
            continue
        if term is not None:
            if not term.get("reason"):
                reason = (f"Init:Signal:{term['signal']}" if term.get("signal")
                          else f"Init:ExitCode:{term.get('exitCode', 0)}")
            else:
                reason = f"Init:{term['reason']}"
        elif waiting is not None and waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            reason = f"Init:{waiting['reason']}"
        else:
            reason = f"Init:{i}/{n_init}"
        initializing = True
        break
    initialized = any(c.get("type") == "Initialized" and c.get("status") == "True" for c in conditions)
    if not initializing or initialized:
        restarts, last_restart = sidecar_restarts, last_sidecar_restart
        has_running = False
        for cs in reversed(st.get("containerStatuses") or ()):
            restarts += int(cs.get("restartCount") or 0)
            at = finished_at(cs)
            if at is not None and (last_restart is None or at > last_restart):
                last_restart = at
            state = cs.get("state") or {}
            term, waiting = state.get("terminated"), state.get("waiting")
            if waiting is not None and waiting.get("reason"):
                reason = str(waiting["reason"])
            elif term is not None and term.get("reason"):
                reason = str(term["reason"])
            elif term is not None:
                reason = f"Signal:{term['signal']}" if term.get("signal") else f"ExitCode:{term.get('exitCode', 0)}"
            elif cs.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            ready_cond = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
            reason = "Running" if ready_cond else "NotReady"
    if md.get("deletionTimestamp") and st.get("reason") == "NodeLost":
        reason = "Unknown"
    elif md.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"
    restarts_text = str(restarts)
    if restarts and last_restart is not None:
        from pyvolcano.vcctl.printing import human_duration

        restarts_text = f"{restarts} ({human_duration(now - last_restart)} ago)"
    return {"namespace": str(md.get("namespace", "")), "name": str(md.get("name", "")),
            "ready": f"{ready}/{total}", "status": reason, "restarts": restarts_text,
            "age": age(md.get("creationTimestamp"), now), "ip": str(st.get("podIP") or "<none>"),
            "node": str(spec.get("nodeName") or "<none>"),
            "nominated": str(st.get("nominatedNodeName") or "<none>")}


def _labels(o: dict[str, Any]) -> dict[str, str]:
    return (o.get("metadata") or {}).get("labels") or {}


@pod_app.command("list")
def list_pods(
    ctx: typer.Context,
    queue: Annotated[str | None, typer.Option("--queue", "-q", metavar="QUEUE",
                                              help="list pod with specified queue name")] = None,
    job: Annotated[str | None, typer.Option("--job", "-j", metavar="JOB",
                                            help="list pod with specified job name")] = None,
    namespace: Annotated[str | None, typer.Option("--namespace", "-n", metavar="NAMESPACE",
                                                  help="the namespace of pod (default: the context's, else "
                                                  "default)")] = None,
    all_namespaces: AllNamespaces = False,
    selector: SelectorText = None,
    output: Output = "table",
    no_headers: NoHeaders = False,
    kubeconfig: Kubeconfig = None,
    master: Master = None,
    context: Context = None,
    cluster: Cluster = None,
) -> None:
    """list pod information created by vcjob"""
    sel = selector_of(selector)
    # Upstream selects on the server: the job's pods, or every vcjob's pods; -q needs them all.
    implied = f"{JOB_NAME_KEY}={job}" if job else (None if queue else JOB_NAME_KEY)
    if implied is not None:
        with contextlib.suppress(SelectorError):  # a job name no label can hold: filtered below, no pod matches
            sel = parse_selector(f"{selector},{implied}" if selector else implied)
    src = open_source(ctx, kubeconfig, master, context, cluster)
    ns = None if all_namespaces else (namespace or src.default_namespace)
    pods = src.list("Pod", ns, sel)
    if job:
        pods = [p for p in pods if _labels(p).get(JOB_NAME_KEY) == job]
        if queue and any(QUEUE_NAME_KEY in _labels(p) and _labels(p)[QUEUE_NAME_KEY] != queue for p in pods):
            raise UsageError(f"the input vcjob {job} does not match the queue {queue}")
    elif queue:
        pods = [p for p in pods if _labels(p).get(QUEUE_NAME_KEY) == queue
                or ((p.get("metadata") or {}).get("annotations") or {}).get(QUEUE_NAME_ANNOTATION) == queue]
    else:
        pods = [p for p in pods if JOB_NAME_KEY in _labels(p)]
    if output in ("json", "yaml", "name"):
        print_objects(pods, output)
        return
    if not pods:
        print("No resources found", file=sys.stderr)
        return
    now = src.now()
    infos = [pod_row(p, now) for p in pods]
    fields = ["name", "ready", "status", "restarts", "age"]
    headers = ["Name", "Ready", "Status", "Restart", "Age"]
    if all_namespaces:
        fields.insert(0, "namespace")
        headers.insert(0, "Namespace")
    if output == "wide":
        fields += ["ip", "node", "nominated"]
        headers += ["IP", "Node", "Nominated Node"]
    # Upstream's widths: the widest value plus 8, or the header plus 2 when that is wider.
    columns = [(h, max(len(h) + 2, *(len(i[f]) + 8 for i in infos))) for h, f in zip(headers, fields, strict=True)]
    print_table(columns, [[i[f] for f in fields] for i in infos], headers=not no_headers)
