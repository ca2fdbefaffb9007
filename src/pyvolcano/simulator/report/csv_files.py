"""The report's CSV files: one row per job, per queue, per sample, and the comparison's differences.

Numbers are written with ``%.10g``; a missing or non-finite value is an empty cell.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pyvolcano.simulator.metrics import RunMetrics
from pyvolcano.simulator.report.stats import Series

__all__ = ["COMPARE_COLUMNS", "JOBS_COLUMNS", "QUEUES_COLUMNS", "TIMESERIES_COLUMNS", "TOPOLOGY_JOB_COLUMNS",
           "TOPOLOGY_TIMESERIES_COLUMNS", "write_compare_csv",
           "write_jobs_csv", "write_queues_csv", "write_timeseries_csv"]

JOBS_COLUMNS = ("key", "queue", "submit_s", "first_bind_s", "start_s", "end_s", "wait_s", "jct_s", "gpus", "pods",
                "phase", "restarts", "preemptions", "reason", "pending_reason", "pending_hint")
QUEUES_COLUMNS = ("queue", "jobs", "never_started", "mean_wait_s", "p95_wait_s", "mean_jct_s", "gpu_hours",
                  "mean_share", "mean_deserved_share", "busy_mean_share", "busy_mean_deserved_share")
TIMESERIES_COLUMNS = ("t_s", "gpu_allocated", "gpu_capacity", "gpu_ratio", "cpu_ratio", "gpu_fragmentation",
                      "pending_jobs", "running_jobs")
COMPARE_COLUMNS = ("metric", "a", "b", "delta", "relative")
TOPOLOGY_JOB_COLUMNS = ("span_nodes", "span_domains", "span_tier", "span_hypernode")
"""Added to ``jobs.csv`` when the cluster had HyperNodes (see pyvolcano.simulator.topology_metrics)."""
TOPOLOGY_TIMESERIES_COLUMNS = ("topology_fragmentation", "fragmented_domains")
"""Added to ``timeseries.csv`` after ``running_jobs`` when the cluster had HyperNodes."""


def _cell(v: object) -> object:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.10g}" if math.isfinite(v) else ""
    return v


def _write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for r in rows:
            w.writerow([_cell(v) for v in r])
    return path


def write_jobs_csv(run: RunMetrics, path: Path) -> Path:
    topo = run.topology
    rows = ((j.key, j.queue, j.submit, j.first_bind, j.start, j.end, j.wait, j.jct, float(j.gpus), j.pods, j.phase,
             j.restarts, j.preemptions, j.reason, j.pending_reason, j.pending_hint,
             *((j.span_nodes, j.span_domains, j.span_tier, j.span_hypernode) if topo else ()))
            for j in sorted(run.jobs, key=lambda j: (j.submit, j.key)))
    return _write_csv(path, (*JOBS_COLUMNS, *(TOPOLOGY_JOB_COLUMNS if topo else ())), rows)


def write_queues_csv(summ: dict[str, Any], path: Path) -> Path:
    rows = ((q, s["jobs"], s["never_started"], s["mean_wait_s"], s["p95_wait_s"], s["mean_jct_s"], s["gpu_hours"],
             s["mean_share"], s["mean_deserved_share"], s["busy_mean_share"], s["busy_mean_deserved_share"])
            for q, s in summ["queues"].items())
    return _write_csv(path, QUEUES_COLUMNS, rows)


def write_timeseries_csv(ser: Series, path: Path) -> Path:
    header = list(TIMESERIES_COLUMNS)
    cols = [ser.t, ser.gpu_allocated, ser.gpu_capacity, ser.gpu_ratio, ser.cpu_ratio, ser.gpu_fragmentation,
            ser.pending, ser.running]
    if ser.topology_fragmentation is not None and ser.fragmented_domains is not None:
        header += TOPOLOGY_TIMESERIES_COLUMNS
        cols += [ser.topology_fragmentation, ser.fragmented_domains]
    for q in ser.queues:
        header += [f"{q}_allocated_gpu", f"{q}_deserved_gpu", f"{q}_share"]
        cols += [ser.q_alloc[q], ser.q_deserved[q], ser.q_share[q]]
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerow(header)
        if len(ser.t):
            m = np.column_stack(cols)
            for lo in range(0, len(m), 20_000):   # vectorised formatting, bounded memory
                chunk = m[lo:lo + 20_000]
                txt = np.char.mod("%.10g", chunk)
                txt[~np.isfinite(chunk)] = ""
                fh.write("".join(",".join(row) + "\r\n" for row in txt.tolist()))
    return path


def write_compare_csv(cmp: dict[str, Any], path: Path) -> Path:
    rows = ((k, d["a"], d["b"], d["delta"], d["relative"]) for k, d in cmp["diff"].items())
    return _write_csv(path, COMPARE_COLUMNS, rows)
