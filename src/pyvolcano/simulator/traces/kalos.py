"""Shanghai AI Lab Acme (NSDI '24), 319 Kalos LLM jobs: ``converted_kalos_trace.csv``.

Columns: ``job_id,arrival_time,num_iteration,iteration_computing_time,
iteration_networking_time,gpu_workers,ps,gpu_per_worker,cpu_per_gpu_worker,cpu_per_ps_worker,
tensorsizes,profiled_network``. A third party derived the file from the real Kalos log; the
folder README says which columns are real.

Mapping (also in docs/traces.md):

* **gang**: ``gpu_workers`` pods (the real ``node_num``) of ``gpu_per_worker`` GPUs each (the
  real ``gpu_num / node_num``), ``minAvailable`` = all of them. ``ps`` is 0 on every row; a
  non-zero value is rejected rather than guessed at.
* **CPU** per pod = ``cpu_per_gpu_worker × gpu_per_worker`` (the real ``cpu_num / node_num``);
  **memory** per pod = ``tensorsizes × 100`` GiB (the real ``mem_per_pod_GB``; read as GiB).
* **submit** = ``arrival_time`` (real, seconds since the first job).
* **duration** = ``num_iteration × iteration_computing_time``. The converter computed
  ``num_iteration = int(duration / 0.5)`` and ``iteration_computing_time`` is 0.5 on every
  row, so this restores the real run time (rounded down to 0.5 s). The
  ``iteration_networking_time`` column is synthetic (0.75 for Pretrain, 0.25 otherwise):
  adding it, as ``num_iteration × (computing + networking)`` would, inflates run times by
  1.5× to 2.5×, so it is only used for the job-type label.
* **job type**: ``profiled_network`` 1000 / networking 0.75 → label
  ``pyvolcano.io/job-type: pretrain``, otherwise ``other`` (SFT or Other; the converter kept
  only COMPLETED jobs, so every pod exits 0).
* **queue**: one Queue ``kalos`` (the converted file has no user or queue); no priorities.
* **nodes** (no machine list is published): :data:`DEFAULT_NODES` nodes of 8 A100 GPUs,
  128 cores and 2 TiB, the Kalos size (2,416 GPUs) reported in the Acme paper. That figure is
  not in the shipped files; ``cluster_summary.csv`` only bounds it from below (its largest
  Kalos job used 1,024 GPUs = 128 nodes), and the default is never smaller than that bound or
  the largest gang in the loaded jobs. The largest pod asks for 120 cores and 1,900 GiB, so
  every pod fits one node.
"""

from __future__ import annotations

import math
from typing import Any, Final, NamedTuple

from pyvolcano.simulator.traces._common import (
    MAX_REPLICAS,
    NVIDIA_GPU,
    Cells,
    Trace,
    TraceError,
    column_index,
    cpu_qty,
    fmt_int,
    job_manifest,
    node_manifest,
    open_rows,
    packaged,
    pod_template,
    queue_manifest,
    select_window,
    selection_note,
)
from pyvolcano.simulator.traces.nodes import load_nodes

__all__ = ["COLUMNS", "DEFAULT_NODES", "FOLDER", "default_nodes", "load"]

FOLDER: Final = "acme-kalos-subset"
TRACE_FILE: Final = "converted_kalos_trace.csv"
SUMMARY_FILE: Final = "cluster_summary.csv"
COLUMNS: Final = ("job_id", "arrival_time", "num_iteration", "iteration_computing_time", "gpu_workers",
                  "gpu_per_worker", "cpu_per_gpu_worker", "tensorsizes")
OPTIONAL: Final = ("iteration_networking_time", "ps", "cpu_per_ps_worker", "profiled_network")
QUEUE: Final = "kalos"
DEFAULT_NODES: Final = 302
NODE_GPUS: Final = 8
NODE_CPU: Final = 128
NODE_MEM_GIB: Final = 2048
GPU_PRODUCT: Final = "A100"


class Job(NamedTuple):
    at: float
    line: int
    job_id: str
    pods: int
    gpus: int
    cpu_milli: float
    mem_gib: float
    duration: float
    pretrain: bool


def _row(c: Cells) -> Job:
    pods = c.int_("gpu_workers", minimum=1, maximum=MAX_REPLICAS)
    gpus = c.int_("gpu_per_worker", allow_float=True)
    if c.has("ps") and c.int_("ps") != 0:
        raise c.fail("ps", c.raw("ps"), "0 (parameter-server pods are not in the Kalos data)")
    net = c.float_("iteration_networking_time", allow_empty=True) if c.has("iteration_networking_time") else None
    prof = c.float_("profiled_network", allow_empty=True) if c.has("profiled_network") else None
    pretrain = (prof is not None and prof >= 1000) or (prof is None and net is not None and net >= 0.75)
    return Job(at=c.num("arrival_time"), line=c.line, job_id=c.str_("job_id"), pods=pods, gpus=gpus,
               cpu_milli=c.num("cpu_per_gpu_worker") * max(gpus, 1) * 1000, mem_gib=c.num("tensorsizes") * 100,
               duration=c.int_("num_iteration") * c.num("iteration_computing_time"), pretrain=pretrain)


def summary_max_gpu(path: Any = None) -> int:
    """Kalos ``max_gpu`` from ``cluster_summary.csv`` (0 if the file or row is missing)."""
    try:
        with open_rows(path if path is not None else packaged(FOLDER, SUMMARY_FILE)) as (fname, cols, rows):
            idx = column_index(fname, cols, ["id", "max_gpu"], what="cluster summary")
            for line, cells in rows:
                c = Cells(fname, line, cells, idx)
                if c.raw("id") == "Kalos":
                    return int(c.num("max_gpu"))
    except TraceError:
        return 0
    return 0


def default_nodes(min_nodes: int = 0) -> list[dict[str, Any]]:
    n = max(DEFAULT_NODES, math.ceil(summary_max_gpu() / NODE_GPUS), min_nodes)
    width = len(str(n - 1))
    return [node_manifest(f"kalos-{i:0{width}d}", cpu=str(NODE_CPU), memory=f"{NODE_MEM_GIB}Gi", gpus=NODE_GPUS,
                          product=GPU_PRODUCT) for i in range(n)]


def load(path: Any, *, nodes: Any = None, window: tuple[float, float] | None = None, limit: int | None = None,
         seed: int = 0) -> Trace:
    recs: list[Job] = []
    with open_rows(path) as (fname, cols, rows):
        idx = column_index(fname, cols, COLUMNS, OPTIONAL, what="Kalos")
        for line, cells in rows:
            recs.append(_row(Cells(fname, line, cells, idx)))
    if not recs:
        raise TraceError("no jobs", file=fname, expected="at least one data row")
    recs.sort(key=lambda r: (r.at, r.line))
    width = len(str(len(recs) - 1))
    ranked = list(enumerate(recs))
    kept, shift = select_window(ranked, lambda r: r[1].at, window, limit, name=fname)
    jobs = []
    for rank, r in kept:
        req = {"cpu": cpu_qty(r.cpu_milli), "memory": f"{math.ceil(r.mem_gib)}Gi"}
        if r.gpus:
            req[NVIDIA_GPU] = str(r.gpus)
        kind = "pretrain" if r.pretrain else "other"
        tpl = pod_template(req, duration=r.duration, labels={"pyvolcano.io/job-type": kind})
        jobs.append(job_manifest(f"kalos-{rank:0{width}d}", trace="kalos", submit=r.at - shift, queue=QUEUE,
                                 tasks=[("worker", r.pods, tpl)], labels={"pyvolcano.io/job-type": kind},
                                 annotations={"pyvolcano.io/trace-job-id": r.job_id}, line=r.line))
    largest = max((r.pods for _, r in kept), default=0)
    node_list = load_nodes(nodes) if nodes is not None else default_nodes(largest)
    gpus = sum(int(n["status"]["capacity"].get(NVIDIA_GPU, 0)) for n in node_list)
    notes = [
        selection_note("Kalos", len(jobs), len(recs), "jobs", window, limit, shift),
        "Kalos: gang = gpu_workers pods × gpu_per_worker GPUs, minAvailable = all; cpu = cpu_per_gpu_worker × "
        "gpu_per_worker; memory = tensorsizes × 100 GiB.",
        "Kalos: duration = num_iteration × iteration_computing_time (the real run time); the synthetic "
        "iteration_networking_time only sets the job-type label (pretrain/other).",
        "Kalos: one queue 'kalos', no priorities, every pod exits 0 (only COMPLETED jobs are in the file).",
        f"Kalos: {len(node_list)} nodes with {fmt_int(gpus)} GPUs"
        + ("" if nodes is not None else f" (default: {NODE_GPUS}× {GPU_PRODUCT}, {NODE_CPU} cores, "
           f"{NODE_MEM_GIB}Gi each; Kalos size as reported by the Acme paper, not in the shipped files)") + ".",
    ]
    return Trace(name="kalos", format="kalos", nodes=node_list, queues=[queue_manifest(QUEUE, 1)],
                 priority_classes=[], jobs=jobs, notes=notes)
