"""Trace adapters: real cluster traces → Volcano Jobs with submit times, durations, queues,
priorities and gang sizes, on the trace's own cluster.

=========  ========================================  ==========================================
format     file (header)                             cluster (when ``nodes`` is not given)
=========  ========================================  ==========================================
philly     ``philly.csv`` (timestamp, duration,      ``revised_machine_list.csv`` (shipped)
           num_gpus, gpu_time, cluster)
openb      ``openb_pod_list_*.csv`` (name, cpu_milli, ``openb_node_list_gpu_node.csv`` (shipped)
           memory_mib, num_gpu, gpu_milli, …)
kalos      ``converted_kalos_trace.csv`` (job_id,    302 × 8-GPU nodes (see :mod:`.kalos`)
           arrival_time, num_iteration, …)
dlrm       ``disaggregated_DLRM_trace.csv``          sized from peak demand (see :mod:`.dlrm`)
           (instance_sn, role, app_name, …)
csv        generic: submit_time, duration, queue,    none: pass ``nodes``
           replicas, cpu, memory, gpu, priority,
           min_available[, name]
=========  ========================================  ==========================================

Each module's docstring, and docs/traces.md, state how the trace's fields map and what had
to be assumed; :attr:`Trace.notes` repeats the assumptions with the numbers of a given load.
The files the built-in scenarios need ship in ``pyvolcano/data/traces/<folder>/`` with their
README and licence; ``load_trace("philly")`` (a format name that is not an existing path)
loads the shipped trace of that format.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from pyvolcano.simulator.traces import csv_format, dlrm, kalos, openb, philly
from pyvolcano.simulator.traces._common import Trace, TraceError, display_name, open_rows, packaged
from pyvolcano.simulator.traces.nodes import load_nodes
from pyvolcano.util.bulk_build import collector_paused

__all__ = [
    "BUILTIN_CONFIG",
    "BUILTIN_DAYS",
    "BUILTIN_GPUS",
    "BUILTIN_SCORE",
    "FORMATS",
    "Format",
    "Trace",
    "TraceError",
    "builtin_scenario",
    "detect_format",
    "load_nodes",
    "load_trace",
    "packaged_trace",
]


@dataclass(frozen=True)
class Format:
    name: str
    columns: tuple[str, ...]
    """Header columns that identify the format (all must be present)."""
    load: Callable[..., Trace]
    folder: str | None
    """Folder of the shipped copy under ``pyvolcano/data/traces`` (None: nothing shipped)."""
    file: str | None
    description: str


FORMATS: Final[dict[str, Format]] = {
    "philly": Format("philly", philly.COLUMNS, philly.load, philly.FOLDER, philly.TRACE_FILE,
                     "Microsoft Philly job summary (Pollux): one gang per job, queue = virtual cluster"),
    "openb": Format("openb", openb.COLUMNS, openb.load, openb.FOLDER, openb.TRACE_FILE,
                    "Alibaba openb pod list: one-pod jobs, fractional GPUs, GPU-model constraints"),
    "kalos": Format("kalos", kalos.COLUMNS, kalos.load, kalos.FOLDER, kalos.TRACE_FILE,
                    "Acme Kalos subset: large LLM gangs"),
    "dlrm": Format("dlrm", dlrm.COLUMNS, dlrm.load, dlrm.FOLDER, dlrm.TRACE_FILE,
                   "Alibaba DLRM serving instances: long-running, high priority"),
    "csv": Format("csv", csv_format.COLUMNS, csv_format.load, None, None,
                  "generic CSV: submit_time,duration,queue,replicas,cpu,memory,gpu,priority,min_available[,name]"),
}

_MACHINE_LISTS: Final = (
    ({"machineid", "number of gpus"}, "a Philly machine list"),
    ({"sn", "cpu_milli", "memory_mib", "gpu"}, "an openb node list"),
    ({"gpu_model", "gpu_capacity_num", "cpu_num", "node_name"}, "a spot-GPU node list"),
)

BUILTIN_DAYS: Final = 1
"""Length of the built-in Philly scenario in calendar days (see :func:`builtin_scenario`)."""
# GPUs of the built-in scenario's cluster slice: 16 machines of 8 GPUs, well below the chosen
# day's peak demand (312 GPUs if every job started on arrival), so queues compete and the
# multi-node gangs (up to 8 machines) wait for whole machines, while a run stays short.
BUILTIN_GPUS: Final = 128
BUILTIN_SCORE: Final = "gangs"
"""How the built-in day is chosen (:func:`philly.busiest_window`): the most GPUs in multi-node gangs."""
BUILTIN_CONFIG: Final = """\
# The built-in scenario's scheduler configuration: upstream's shipped chart configuration
# (installer/helm/chart/volcano/config/volcano-scheduler.conf) with the reclaim action added,
# so a queue below its deserved share takes GPUs back from queues above theirs.
actions: "enqueue, allocate, backfill, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""


def packaged_trace(fmt: str) -> Any:
    """The shipped trace file of a format (an importlib Traversable)."""
    f = FORMATS.get(fmt)
    if f is None or f.folder is None or f.file is None:
        raise TraceError(f"no trace of format {fmt!r} is shipped",
                         expected="one of " + ", ".join(k for k, v in FORMATS.items() if v.file))
    return packaged(f.folder, f.file)


def _resolve(path: str | os.PathLike[str] | Any) -> Any:
    if isinstance(path, (str, os.PathLike)):
        name = os.fspath(path)
        if name in FORMATS and FORMATS[name].file is not None and not os.path.exists(name):
            return packaged_trace(name)
    return path


def detect_format(path: str | os.PathLike[str] | Any) -> str:
    """The trace format of a CSV file, from its header columns."""
    path = _resolve(path)
    with open_rows(path) as (fname, cols, _rows):
        have = set(cols)
        for name, f in FORMATS.items():
            if set(f.columns) <= have:
                return name
        low = {c.lower() for c in cols}
        for need, what in _MACHINE_LISTS:
            if need <= low:
                raise TraceError(f"this is {what}, not a trace", file=fname, line=1,
                                 expected="a trace; pass machine lists with --nodes")
        known = "; ".join(f"{k}: {','.join(f.columns)}" for k, f in FORMATS.items())
        raise TraceError(f"unknown trace format (header: {','.join(cols)})", file=fname, line=1,
                         expected=f"the header of a known format ({known})")


def load_trace(path: str | os.PathLike[str] | Any, fmt: str | None = None, *,
               nodes: str | Path | None = None, window: tuple[float, float] | None = None,
               limit: int | None = None, seed: int = 0) -> Trace:
    """Load a trace file as a :class:`Trace`.

    ``fmt``: one of :data:`FORMATS` (detected from the header when None). ``nodes``: a machine
    list or CLUSTER.yaml (:func:`load_nodes`); when None, the trace's own machine list or its
    documented default cluster. ``window = (start, end)`` in trace seconds keeps the jobs
    submitted in ``[start, end)``, shifted so the first is at 0. ``limit`` keeps the first N jobs
    (after the window). ``seed`` is accepted for adapters that sample; the current ones are
    deterministic and do not use it.
    """
    path = _resolve(path)
    if fmt is None:
        fmt = detect_format(path)
    f = FORMATS.get(fmt)
    if f is None:
        raise TraceError(f"unknown trace format {fmt!r}", file=display_name(path),
                         expected="one of " + ", ".join(FORMATS))
    if window is not None:
        start, end = (float(window[0]), float(window[1]))
        if not end > start:
            raise TraceError(f"window {window!r} is empty", file=display_name(path),
                             expected="(start, end) seconds with end > start")
        window = (start, end)
    with collector_paused():
        return f.load(path, nodes=nodes, window=window, limit=limit, seed=seed)


def builtin_scenario(days: int = BUILTIN_DAYS, gpus: int | None = BUILTIN_GPUS,
                     score: str = BUILTIN_SCORE) -> Trace:
    """The default ``pyvolcano simulate`` scenario: the ``days`` calendar day(s) of Philly with
    the highest ``score`` (``gangs``: the most GPUs asked for by multi-node gangs; ``demand``:
    the most GPU-time demanded inside the window, see :func:`philly.busiest_window`), one queue
    per virtual cluster, on a slice of Philly's machines (the GPU machines of
    ``revised_machine_list.csv`` in list order, up to ``gpus`` GPUs; None = all 552 machines),
    with :data:`BUILTIN_CONFIG` as its scheduler configuration (``Trace.config``).

    By default this is 2017-12-12: 428 jobs in 10 queues, 19 of them gangs of 2 to 8 pods
    (672 GPUs in all), on 16 machines with 128 GPUs, far below the day's peak demand of 312
    GPUs (if every job started on arrival). See docs/traces.md."""
    if days < 1:
        raise TraceError(f"days {days} is below 1", expected="a positive number of days")
    with collector_paused():
        fname, recs = philly.read(packaged_trace("philly"))
        start, end, stats = philly.busiest_window(recs, days, score=score)
        day = datetime.fromtimestamp(stats["start_epoch"], tz=UTC).strftime("%Y-%m-%d")
        where = "all of Philly's machines" if gpus is None else f"{gpus} GPUs of Philly's 8-GPU machines"
        which = "with the most GPUs in multi-node gangs" if score == "gangs" else "with the most GPU demand"
        note = (f"Built-in scenario: the {days} calendar day(s) of Philly {which}, from {day} 00:00 "
                f"(trace seconds {start:,.0f} to {end:,.0f}): {int(stats['jobs']):,} jobs, "
                f"{int(stats['gang_jobs'])} of them gangs of more than 8 GPUs ({int(stats['gang_gpus']):,} GPUs), "
                f"{stats['gpu_hours']:,.0f} GPU-hours of demand inside the window, on {where}; scheduler: "
                "upstream's chart configuration with the reclaim action added.")
        tr = philly.build(fname, recs, window=(start, end), name="builtin-philly", notes=[note], max_gpus=gpus)
        tr.config = BUILTIN_CONFIG
        return tr
