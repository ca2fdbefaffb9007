"""Microsoft Philly (ATC '19), job-level summary made by Pollux: ``philly.csv``.

Columns: ``timestamp,duration,num_gpus,gpu_time,cluster`` (``gpu_time`` is optional and
unused: it is ``duration × num_gpus`` on every row).

Mapping (also in docs/traces.md):

* **submit** = ``timestamp`` − the earliest ``timestamp`` in the file (naive local times,
  no time-zone conversion). The rows are not sorted; jobs are sorted by (submit, line).
* **duration** = ``duration`` seconds, on every pod (``pyvolcano.io/duration``); exit code 0
  (the summary has no job status).
* **queue** = ``cluster``, the virtual cluster (VC): one Queue per VC that has loaded jobs.
  Queue weight = the VC's share of the GPU-time (``num_gpus × duration``) of the *whole file*
  (not just the window: a quota does not change with the day), in percent, rounded, at
  least 1. Philly's VC quotas are not published; they were sized to each team's needs, so
  the long-run demand share is the closest public proxy (the trace README suggests it).
  Equal weights would give the 3-job VCs the same deserved share as the 41,000-job VC and
  make the proportion plugin's decisions an artefact of the mapping. Full-file weights:
  ee9e8c 26, 7f04ca 17, b436b2 13, 6214e9 10, 6c71a0 8, 2869ce 8, 0e4a51 8, 103959 4,
  11cb48 3, the other six 1.
* **gang**: a job of G GPUs is ``n = ceil(G / P)`` pods, P = the largest GPU count of any node
  (8 on both Philly lists); the G GPUs are split evenly (``G / n`` each — this is
  ``min(G, 8)`` for every G in the trace: 1, 2, 4, 8, 12 → 2 × 6, 16, 24, 32, 64, 128). If G
  does not divide evenly the job gets two tasks whose pods differ by one GPU, so the total is
  exactly G. ``minAvailable`` = n: all pods start together.
* **CPU / memory** per pod (not in the trace): :data:`POD_CPU_PER_GPU` cores and
  :data:`POD_MEM_GIB_PER_GPU` GiB per GPU (a 0-GPU job: the amount for one GPU). Nodes get
  twice that per GPU (see :mod:`.nodes`), so GPUs are always what runs out.
* **nodes**: ``revised_machine_list.csv`` (shipped): 552 machines, 3,205 GPUs (8 GPUs on 264,
  4 on 271, 2 on 3, 3 on 1, none on 13). ``cluster_machine_list.csv`` can be passed instead.
* No priorities (the summary has none). Job names are ``philly-NNNNN``, N = the job's rank
  in the whole file's submit order, so a window keeps the names of the full trace.
"""

from __future__ import annotations

import bisect
import math
from datetime import UTC, datetime
from typing import Any, Final, NamedTuple

from pyvolcano.api.duration import MAX_DURATION_SECONDS
from pyvolcano.simulator.traces._common import (
    DEFAULT_QUEUE,
    MAX_REPLICAS,
    NVIDIA_GPU,
    Cells,
    Trace,
    TraceError,
    column_index,
    fmt_int,
    job_manifest,
    open_rows,
    packaged,
    pod_template,
    queue_manifest,
    select_window,
    selection_note,
)
from pyvolcano.simulator.traces.nodes import PHILLY_NODE_CPU_PER_GPU, PHILLY_NODE_MEM_GIB_PER_GPU, load_nodes
from pyvolcano.util.numbers import parse_float, parse_int

__all__ = [
    "COLUMNS",
    "FOLDER",
    "POD_CPU_PER_GPU",
    "POD_MEM_GIB_PER_GPU",
    "WINDOW_SCORES",
    "Record",
    "build",
    "busiest_window",
    "gang_shape",
    "load",
    "read",
]

FOLDER: Final = "philly"
TRACE_FILE: Final = "philly.csv"
MACHINES_FILE: Final = "revised_machine_list.csv"
COLUMNS: Final = ("timestamp", "duration", "num_gpus", "cluster")
POD_CPU_PER_GPU: Final = 4
POD_MEM_GIB_PER_GPU: Final = 32
_EPOCH: Final = datetime(1970, 1, 1)


class Record(NamedTuple):
    at: float
    """Submit time in seconds since the Unix epoch of the naive local timestamp."""
    line: int
    duration: float
    gpus: int
    vc: str


def _ts(text: str) -> float:
    d = datetime.fromisoformat(text)
    if d.tzinfo is not None:
        d = d.astimezone(UTC).replace(tzinfo=None)
    return (d - _EPOCH).total_seconds()


def read(path: Any) -> tuple[str, list[Record]]:
    """Parse ``philly.csv`` into records sorted by (submit, line)."""
    recs: list[Record] = []
    with open_rows(path) as (fname, cols, rows):
        idx = column_index(fname, cols, COLUMNS, what="Philly")
        it, idu, ig, ic = (idx[c] for c in COLUMNS)
        for line, cells in rows:
            try:
                at = _ts(cells[it])
                dur = parse_float(cells[idu].strip())
                g = parse_int(cells[ig].strip())
                vc = cells[ic].strip()
                if not (0 <= dur <= MAX_DURATION_SECONDS and 0 <= g <= MAX_REPLICAS and vc
                        and cells[idu].isascii() and cells[ig].isascii()):
                    raise ValueError
            except (ValueError, IndexError):
                raise _row_error(fname, line, cells, idx) from None
            recs.append(Record(at, line, dur, g, vc))
    if not recs:
        raise TraceError("no jobs", file=fname, expected="at least one data row")
    recs.sort(key=lambda r: (r.at, r.line))
    return fname, recs


def _row_error(fname: str, line: int, cells: list[str], idx: dict[str, int]) -> TraceError:
    c = Cells(fname, line, cells, idx)
    raw = c.raw("timestamp")
    try:
        _ts(raw)
    except ValueError:
        return c.fail("timestamp", raw, "a time such as 2017-10-09 07:01:55")
    if c.num("duration") > MAX_DURATION_SECONDS:
        return c.fail("duration", c.raw("duration"), "a time of at most 2562047h (Go's longest duration)")
    c.int_("num_gpus", maximum=MAX_REPLICAS)
    c.str_("cluster")
    return TraceError("malformed row", file=fname, line=line)


def gang_shape(gpus: int, per_pod: int) -> list[tuple[int, int]]:
    """``[(pods, gpus per pod), ...]`` for a job of ``gpus`` GPUs on nodes of ``per_pod``."""
    if gpus <= per_pod:
        return [(1, gpus)]
    n = math.ceil(gpus / per_pod)
    q, r = divmod(gpus, n)
    return [(c, g) for c, g in ((r, q + 1), (n - r, q)) if c]


def _requests(g: int) -> dict[str, str]:
    units = max(g, 1)
    req = {"cpu": str(POD_CPU_PER_GPU * units), "memory": f"{POD_MEM_GIB_PER_GPU * units}Gi"}
    if g:
        req[NVIDIA_GPU] = str(g)
    return req


def build(fname: str, recs: list[Record], *, nodes: Any = None, window: tuple[float, float] | None = None,
          limit: int | None = None, name: str = "philly", notes: list[str] | None = None,
          max_gpus: int | None = None) -> Trace:
    origin = recs[0].at
    width = len(str(len(recs) - 1))
    ranked = list(enumerate(recs))
    kept, shift = select_window(ranked, lambda r: r[1].at - origin, window, limit, name=fname)
    node_list = load_nodes(nodes if nodes is not None else packaged(FOLDER, MACHINES_FILE))
    if max_gpus is not None:
        # Keep machines in list order until their GPUs reach max_gpus (a smaller slice of Philly).
        kept_nodes, total_gpus = [], 0
        for n in node_list:
            g = int(n["status"]["capacity"].get(NVIDIA_GPU, 0))
            if g == 0:
                continue
            if total_gpus >= max_gpus:
                break
            kept_nodes.append(n)
            total_gpus += g
        node_list = kept_nodes
    per_pod = max((int(n["status"]["capacity"].get(NVIDIA_GPU, 0)) for n in node_list), default=0) or 8

    jobs: list[dict[str, Any]] = []
    gpu_time: dict[str, float] = {}
    shapes: dict[int, list[tuple[str, int, dict[str, str]]]] = {}
    for rank, r in kept:
        shape = shapes.get(r.gpus)
        if shape is None:
            parts = gang_shape(r.gpus, per_pod)
            shape = [("worker" if len(parts) == 1 else f"worker-{g}gpu", c, _requests(g)) for c, g in parts]
            shapes[r.gpus] = shape
        tasks = [(t, c, pod_template(req, duration=r.duration)) for t, c, req in shape]
        jobs.append(job_manifest(f"philly-{rank:0{width}d}", trace="philly", submit=r.at - origin - shift,
                                 queue=r.vc, tasks=tasks, line=r.line))
    used = {r.vc for _, r in kept}
    for r in recs:
        gpu_time[r.vc] = gpu_time.get(r.vc, 0.0) + r.gpus * r.duration
    total = sum(gpu_time.values()) or 1.0
    weights = {vc: max(1, round(100 * gpu_time[vc] / total)) for vc in used}
    queues = [queue_manifest(vc, weights[vc]) for vc in sorted(used, key=lambda v: (-gpu_time[v], v))
              if vc != DEFAULT_QUEUE]

    gpus_total = sum(int(n["status"]["capacity"].get(NVIDIA_GPU, 0)) for n in node_list)
    out_notes = list(notes or [])
    out_notes += [
        selection_note("Philly", len(jobs), len(recs), "jobs", window, limit, shift),
        f"Philly: gang = ceil(G/{per_pod}) pods sharing the job's G GPUs evenly, minAvailable = all pods.",
        f"Philly: CPU/memory are not in the trace; each pod asks {POD_CPU_PER_GPU} cores and "
        f"{POD_MEM_GIB_PER_GPU}Gi per GPU, nodes have {PHILLY_NODE_CPU_PER_GPU} cores and "
        f"{PHILLY_NODE_MEM_GIB_PER_GPU}Gi per GPU.",
        f"Philly: {len(queues)} queues, one per virtual cluster with jobs; weight = the VC's % of the whole "
        "file's GPU-time (min 1): " + ", ".join(f"{q['metadata']['name']}={q['spec']['weight']}" for q in queues) + ".",
        f"Philly: {len(node_list)} nodes with {fmt_int(gpus_total)} GPUs"
        + ("" if nodes is not None else f" ({MACHINES_FILE})") + ".",
        "Philly: no job status, priority, user or placement in this summary; every pod exits 0.",
    ]
    return Trace(name=name, format="philly", nodes=node_list, queues=queues, priority_classes=[], jobs=jobs,
                 notes=out_notes)


def load(path: Any, *, nodes: Any = None, window: tuple[float, float] | None = None, limit: int | None = None,
         seed: int = 0) -> Trace:
    fname, recs = read(path)
    return build(fname, recs, nodes=nodes, window=window, limit=limit)


WINDOW_SCORES: Final = ("demand", "gangs")


def busiest_window(recs: list[Record], days: int, *, score: str = "demand",
                   per_node: int = 8) -> tuple[float, float, dict[str, float]]:
    """The ``days`` consecutive calendar days (local midnight to midnight) with the highest
    score, over the jobs submitted in the window:

    * ``demand``: GPU demand, Σ ``num_gpus × min(duration, window end − submit)`` (the GPU-time
      that falls inside the window);
    * ``gangs``: GPUs asked for by multi-node gangs, Σ ``num_gpus`` over the jobs of more than
      ``per_node`` GPUs (each needs several machines at once); ties go to the earlier window.

    Returns ``(start, end)`` in trace seconds (relative to the first job) and statistics:
    ``gpu_hours`` (the demand), ``jobs``, ``gang_jobs``, ``gang_gpus``, ``start_epoch``."""
    if score not in WINDOW_SCORES:
        raise TraceError(f"unknown window score {score!r}", expected="one of " + ", ".join(WINDOW_SCORES))
    origin = recs[0].at
    ats = [r.at for r in recs]
    day0 = math.floor(origin / 86400) * 86400
    best: tuple[float, float, float, int, int] | None = None
    a = float(day0)
    while a <= ats[-1]:
        b = a + days * 86400
        lo, hi = bisect.bisect_left(ats, a), bisect.bisect_left(ats, b)
        if score == "demand":
            value = float(sum(r.gpus * min(r.duration, b - r.at) for r in recs[lo:hi]))
        else:
            value = float(sum(r.gpus for r in recs[lo:hi] if r.gpus > per_node))
        if best is None or value > best[0]:
            best = (value, a, b, lo, hi)
        a += 86400
    assert best is not None
    _, a, b, lo, hi = best
    window = recs[lo:hi]
    dem = float(sum(r.gpus * min(r.duration, b - r.at) for r in window))
    gangs = [r.gpus for r in window if r.gpus > per_node]
    return a - origin, b - origin, {"gpu_hours": dem / 3600, "jobs": float(hi - lo), "start_epoch": a,
                                    "gang_jobs": float(len(gangs)), "gang_gpus": float(sum(gangs))}
