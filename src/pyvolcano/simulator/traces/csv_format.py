"""The generic CSV trace format, for users who bring their own workload.

Header (any column order; ``name`` is optional; no other columns are allowed, to catch typos)::

    submit_time,duration,queue,replicas,cpu,memory,gpu,priority,min_available,name

One row = one Volcano Job of ``replicas`` identical pods:

==============  =================================================================================
column          meaning
==============  =================================================================================
submit_time     when the Job is submitted: seconds (``3600``, ``12.5``) or a Go duration (``1h``)
duration        how long every pod runs: seconds or a Go duration; empty = until the end
queue           Queue name (DNS-1123 label); one Queue of weight 1 is created per name
                (except ``default``, which Volcano always has)
replicas        pods in the Job, 1..10,000 (``MAX_REPLICAS``)
cpu             CPU per pod, a Kubernetes quantity (``4``, ``500m``)
memory          memory per pod, a Kubernetes quantity (``16Gi``, ``512Mi``)
gpu             GPUs per pod: an integer (whole GPUs, ``nvidia.com/gpu``), a fraction below 1
                (``0.5`` → ``pyvolcano.io/gpu-milli: "500"``, one shared GPU), or empty/0
priority        an integer (PriorityClass ``priority-<n>``, ``priority-neg-<n>`` if negative,
                created with that value) or empty (no priority)
min_available   pods that must start together (gang), 1..replicas; empty = replicas
name            optional Job name (DNS-1123 label, unique); default ``job-<row number>``
==============  =================================================================================

Numbers are written with ASCII digits (``٣``, ``1_000``, ``nan`` and ``inf`` are errors) and
times are at most Go's longest duration (2562047h). Every row is validated; the first bad cell
raises :class:`TraceError` with file, line, column and what was expected. The format carries
no machines: pass ``--nodes``.
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

from pyvolcano.api.duration import MAX_DURATION_SECONDS, DurationError, parse_duration_strict
from pyvolcano.api.names import is_dns1123_label
from pyvolcano.api.quantity import QuantityError, parse_quantity
from pyvolcano.simulator.traces._common import (
    DEFAULT_QUEUE,
    GPU_MILLI_ANNOTATION,
    MAX_REPLICAS,
    NVIDIA_GPU,
    Cells,
    Trace,
    TraceError,
    column_index,
    decimal,
    job_manifest,
    open_rows,
    pod_template,
    priority_class_manifest,
    queue_manifest,
    select_window,
    selection_note,
)
from pyvolcano.simulator.traces.nodes import load_nodes

__all__ = ["COLUMNS", "OPTIONAL", "load"]

COLUMNS: Final = ("submit_time", "duration", "queue", "replicas", "cpu", "memory", "gpu", "priority",
                  "min_available")
OPTIONAL: Final = ("name",)
MAX_PRIORITY: Final = 1_000_000_000


class Row(NamedTuple):
    at: float
    line: int
    name: str
    duration: float | None
    queue: str
    replicas: int
    requests: dict[str, str]
    annotations: dict[str, str]
    priority: int | None
    min_available: int


def _seconds(c: Cells, col: str, *, allow_empty: bool) -> float | None:
    v = c.raw(col)
    expected = "seconds (such as 90 or 12.5) or a Go duration (such as 90s, 1h30m)" + (
        ", or empty" if allow_empty else "")
    if not v:
        if allow_empty:
            return None
        raise c.fail(col, v, expected)
    x = decimal(v)
    if x is None:
        try:
            x = parse_duration_strict(v)
        except DurationError as e:
            raise c.fail(col, v, "a duration of at most 2562047h (Go's longest)" if "at most" in str(e)
                         else expected) from None
    if x < 0:
        raise c.fail(col, v, "a non-negative time")
    if x > MAX_DURATION_SECONDS:
        raise c.fail(col, v, "a time of at most 2562047h (Go's longest duration)")
    return x


def _quantity(c: Cells, col: str, example: str) -> str:
    v = c.str_(col)
    try:
        q = parse_quantity(v)
    except QuantityError:
        raise c.fail(col, v, f"a Kubernetes quantity such as {example}") from None
    if q < 0:
        raise c.fail(col, v, "a non-negative quantity")
    return v


def _row(c: Cells, k: int) -> Row:
    at = _seconds(c, "submit_time", allow_empty=False)
    assert at is not None
    duration = _seconds(c, "duration", allow_empty=True)
    queue = c.str_("queue")
    if not is_dns1123_label(queue):
        raise c.fail("queue", queue, "a queue name of lower-case letters, digits and '-' (a DNS-1123 label)")
    replicas = c.int_("replicas", minimum=1, maximum=MAX_REPLICAS)
    req = {"cpu": _quantity(c, "cpu", "4 or 500m"), "memory": _quantity(c, "memory", "16Gi or 512Mi")}
    ann: dict[str, str] = {}
    graw = c.raw("gpu")
    if graw:
        g = decimal(graw)
        expected = "a whole number of GPUs (0, 1, 2, …) or a fraction of one GPU below 1 (such as 0.5)"
        if g is None or g < 0 or (g > 1 and g != int(g)):
            raise c.fail("gpu", graw, expected)
        if g >= 1:
            req[NVIDIA_GPU] = str(int(g))
        elif g > 0:
            milli = round(g * 1000)
            if not 1 <= milli <= 999:
                raise c.fail("gpu", graw, "a fraction between 0.001 and 0.999")
            ann[GPU_MILLI_ANNOTATION] = str(milli)
    praw = c.raw("priority")
    prio = None
    if praw:
        prio = c.int_("priority", minimum=-MAX_PRIORITY, maximum=MAX_PRIORITY)
        if abs(prio) > MAX_PRIORITY:
            raise c.fail("priority", praw, f"an integer between -{MAX_PRIORITY:,} and {MAX_PRIORITY:,}")
    mraw = c.raw("min_available")
    if mraw:
        min_av = c.int_("min_available", minimum=1)
        if min_av > replicas:
            raise c.fail("min_available", mraw, f"at most replicas ({replicas})")
    else:
        min_av = replicas
    name = c.raw("name") if c.has("name") else ""
    if name and not is_dns1123_label(name):
        raise c.fail("name", name, "a DNS-1123 label (lower-case letters, digits, '-', at most 63 characters)")
    return Row(at, c.line, name or f"job-{k:05d}", duration, queue, replicas, req, ann, prio, min_av)


def _class_name(p: int) -> str:
    return f"priority-{p}" if p >= 0 else f"priority-neg-{-p}"


def load(path: Any, *, nodes: Any = None, window: tuple[float, float] | None = None, limit: int | None = None,
         seed: int = 0) -> Trace:
    recs: list[Row] = []
    with open_rows(path) as (fname, cols, rows):
        idx = column_index(fname, cols, COLUMNS, OPTIONAL, what="generic CSV")
        extra = [c for c in cols if c not in idx]
        if extra:
            raise TraceError(f"unknown column(s) {', '.join(repr(c) for c in extra)}", file=fname, line=1,
                             expected="only " + ",".join((*COLUMNS, *OPTIONAL)))
        for k, (line, cells) in enumerate(rows, start=1):
            if len(cells) != len(cols):
                raise TraceError(f"the row has {len(cells)} cells, the header {len(cols)}", file=fname, line=line,
                                 expected="one cell per header column")
            recs.append(_row(Cells(fname, line, cells, idx), k))
    seen: dict[str, int] = {}
    for r in recs:
        if r.name in seen:
            raise TraceError(f"job name {r.name!r} repeats line {seen[r.name]}", file=fname, line=r.line,
                             column="name", expected="unique job names")
        seen[r.name] = r.line
    recs.sort(key=lambda r: (r.at, r.line))
    kept, shift = select_window(recs, lambda r: r.at, window, limit, name=fname)
    jobs = []
    queues: dict[str, None] = {}
    prios: dict[int, None] = {}
    for r in kept:
        tpl = pod_template(r.requests, duration=r.duration, annotations=r.annotations)
        pc = _class_name(r.priority) if r.priority is not None else None
        if r.priority is not None:
            prios.setdefault(r.priority, None)
        queues.setdefault(r.queue, None)
        jobs.append(job_manifest(r.name, trace="csv", submit=r.at - shift, queue=r.queue,
                                 tasks=[("task", r.replicas, tpl)], min_available=r.min_available,
                                 priority_class=pc, line=r.line))
    classes = [priority_class_manifest(_class_name(p), p, f"generic CSV trace priority {p}")
               for p in sorted(prios, reverse=True)]
    node_list = load_nodes(nodes) if nodes is not None else []
    notes = [selection_note("CSV", len(kept), len(recs), "jobs", window, limit, shift),
             f"CSV: {len(queues)} queue(s) of weight 1; {len(prios)} priority class(es)."]
    if nodes is None:
        notes.append("CSV: the format has no machines; pass --nodes (a machine list or a CLUSTER.yaml).")
    return Trace(name="csv", format="csv", nodes=node_list,
                 queues=[queue_manifest(q, 1) for q in sorted(queues) if q != DEFAULT_QUEUE],
                 priority_classes=classes, jobs=jobs, notes=notes)
