"""Reports of a simulation run: pure functions of :class:`~pyvolcano.simulator.metrics.RunMetrics`.

* :func:`summarize` — one JSON-ready dict (``summary``, ``queues``, ``stats``);
* :func:`compare` — two runs side by side with the differences (the what-if question);
* :func:`write_report` — a report directory: CSVs, PNG plots and one self-contained HTML;
* :func:`print_summary` — rich tables for people.

Definitions (times in virtual seconds from the start of the run):

* The sampled state is a step function: sample ``i`` holds on ``[t_i, t_{i+1})`` and the
  last sample holds until the end of the window. Before the first sample nothing is
  allocated (value 0) and no deserved share is known. The window is ``[0, makespan_s]``;
  samples (or parts of intervals) outside it are ignored; several samples at the same
  instant: the last one wins.
* ``makespan_s`` = the latest job ``end``; if some job never ended, ``virtual_seconds``
  (the run was cut at its horizon); 0 when there are no jobs.
* ``gpu_allocation_ratio`` / ``cpu_allocation_ratio`` = time-weighted mean of
  ``Sample.gpu_ratio`` / ``Sample.cpu_ratio`` over the window;
  ``gpu_fragmentation_ratio`` = time-weighted mean of ``gpu_fragmentation / gpu_capacity``;
  ``mean_pending_jobs`` = time-weighted mean of ``pending_jobs``. ``None`` when the window
  is empty or there are no samples.
* per queue, ``share`` at a sample = queue ``allocated_gpu / gpu_capacity`` (0 when the
  queue is absent from the sample or the capacity is 0); ``mean_share`` = its time-weighted
  mean over the window. ``deserved share`` = ``deserved_gpu / gpu_capacity``;
  ``mean_deserved_share`` = its time-weighted mean over the same window, where an interval in
  which it is unknown (``deserved_gpu`` is ``None``: the queue had no jobs, so proportion gave
  it nothing) counts as 0; ``None`` if it is never known (no proportion plugin). Both means
  therefore divide by the same window. (``QueueSample.share``, proportion's
  allocated/deserved, is not used by these means.)
* the busy window is ``[0, busy_window_s]``, with ``busy_window_s`` the last time a job
  started (no job waited after it), or the makespan if some job never started. A trace's
  tail of a few long jobs lies after it. ``busy_gpu_allocation_ratio``,
  ``busy_cpu_allocation_ratio``, ``busy_mean_pending_jobs`` and per queue
  ``busy_mean_share``, ``busy_mean_deserved_share`` are the same means over the busy window.
* ``running_at_end`` = jobs that started but had not ended when the run stopped
  (``running_without_duration`` of them because their pods have no duration);
  ``end_reason`` says why it stopped (``finished``, ``until``, ``stalled``: nothing left
  that could change, e.g. pods without a duration); ``unfinished`` lists up to
  ``UNFINISHED_LISTED`` such jobs (and those that never started) with the reason.
* ``gpu_hours`` = Σ over samples of ``allocated_gpu × dt / 3600`` with ``dt`` the sample's
  interval clipped to the window (per queue, and in total in ``summary``).
* ``wait = start - submit`` over jobs that started; ``jct = end - submit`` over jobs that
  ended (whatever their final phase); ``p95`` by linear interpolation (numpy's percentile
  default). Jobs that never started count in ``jobs`` and in ``never_started`` but not in
  the wait statistics. ``completed`` counts jobs whose phase is ``Completed``; ``finished``
  counts every job that reached a final phase (has an ``end``).
* Statistics over no values are ``None`` (JSON ``null``), never NaN.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from pyvolcano.simulator.metrics import ENDLESS, JobMetrics, RunMetrics, Sample

__all__ = ["busy_end", "compare", "end_lines", "print_summary", "run_labels", "summarize", "write_report"]

JOBS_COLUMNS = ("key", "queue", "submit_s", "first_bind_s", "start_s", "end_s", "wait_s", "jct_s", "gpus", "pods",
                "phase", "restarts", "preemptions", "reason", "pending_reason", "pending_hint")
QUEUES_COLUMNS = ("queue", "jobs", "never_started", "mean_wait_s", "p95_wait_s", "mean_jct_s", "gpu_hours",
                  "mean_share", "mean_deserved_share", "busy_mean_share", "busy_mean_deserved_share")
UNFINISHED_LISTED = 20
TIMESERIES_COLUMNS = ("t_s", "gpu_allocated", "gpu_capacity", "gpu_ratio", "cpu_ratio", "gpu_fragmentation",
                      "pending_jobs", "running_jobs")
COMPARE_COLUMNS = ("metric", "a", "b", "delta", "relative")

# Headline metrics compared by :func:`compare`, and which direction is better (for colouring).
_COMPARED = ("mean_wait_s", "p95_wait_s", "mean_jct_s", "p95_jct_s", "gpu_allocation_ratio", "cpu_allocation_ratio",
             "gpu_fragmentation_ratio", "makespan_s", "completed", "never_started")
_BETTER: dict[str, str] = {
    "mean_wait_s": "lower", "p95_wait_s": "lower", "mean_jct_s": "lower", "p95_jct_s": "lower",
    "makespan_s": "lower", "gpu_allocation_ratio": "higher", "cpu_allocation_ratio": "higher",
    "gpu_fragmentation_ratio": "lower", "completed": "higher", "never_started": "lower",
    "mean_pending_jobs": "lower", "preemptions": "lower", "restarts": "lower",
}


# ---------------------------------------------------------------------------------------------
# numbers


def _f(x: float | None) -> float | None:
    """A JSON-safe float: ``None`` for missing or non-finite values."""
    if x is None:
        return None
    v = float(x)
    return v if math.isfinite(v) else None


def _mean(xs: Sequence[float]) -> float | None:
    return float(np.mean(xs)) if len(xs) else None


def _pct(xs: Sequence[float], q: float) -> float | None:
    return float(np.percentile(np.asarray(xs, dtype=float), q)) if len(xs) else None


def makespan(run: RunMetrics) -> float:
    """Latest job end; ``virtual_seconds`` if some job never ended; 0 without jobs."""
    if not run.jobs:
        return 0.0
    ends = [j.end for j in run.jobs if j.end is not None]
    last = max(ends) if ends else 0.0
    if len(ends) < len(run.jobs) and math.isfinite(run.virtual_seconds):
        return max(float(run.virtual_seconds), last)
    return float(last)


def busy_end(run: RunMetrics) -> float:
    """End of the busy window ``[0, busy_end]``: the last time a job started (so no job was
    waiting any more after it), or the makespan if some job never started; the whole
    makespan when that is not later than 0. After it the cluster only drains running jobs."""
    span = makespan(run)
    if not run.jobs:
        return span
    end = max(span if j.start is None else j.start for j in run.jobs)
    return min(end, span) if end > 0 else span


@dataclass(slots=True)
class _Series:
    """The samples of a run as arrays, sorted by time, with their weights in the window."""

    t: np.ndarray
    dt: np.ndarray          # each sample's interval clipped to [0, window]
    window: float
    gpu_allocated: np.ndarray
    gpu_capacity: np.ndarray
    gpu_ratio: np.ndarray
    cpu_ratio: np.ndarray
    gpu_fragmentation: np.ndarray
    frag_ratio: np.ndarray
    pending: np.ndarray
    running: np.ndarray
    queues: list[str]
    q_alloc: dict[str, np.ndarray]
    q_deserved: dict[str, np.ndarray]   # NaN where unknown
    q_share: dict[str, np.ndarray]
    q_deserved_share: dict[str, np.ndarray]  # NaN where unknown

    def mean(self, v: np.ndarray) -> float | None:
        """Time-weighted mean over the whole window (0 before the first sample)."""
        if self.window <= 0 or not len(v):
            return None
        return _f(float(np.dot(v, self.dt)) / self.window)

    def mean_known(self, v: np.ndarray) -> float | None:
        """Time-weighted mean over the whole window, counting NaN (unknown) as 0; ``None`` if
        ``v`` is never known inside the window."""
        if self.window <= 0 or not len(v):
            return None
        ok = ~np.isnan(v)
        if not float(self.dt[ok].sum()) > 0:
            return None
        return _f(float(np.dot(v[ok], self.dt[ok])) / self.window)

    def clipped(self, window: float) -> _Series:
        """The same samples weighted over ``[0, window]`` instead."""
        if not len(self.t):
            return replace(self, window=window)
        nxt = np.append(self.t[1:], max(self.window, 0.0))
        w = max(window, 0.0)
        dt = np.maximum(np.clip(nxt, 0.0, w) - np.clip(self.t, 0.0, w), 0.0)
        return replace(self, dt=dt, window=window)

    def integral(self, v: np.ndarray) -> float:
        return float(np.dot(v, self.dt)) if len(v) else 0.0


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros_like(num, dtype=float)
    np.divide(num, den, out=out, where=den != 0)
    return out


def _series(run: RunMetrics, window: float | None = None) -> _Series:
    samples: list[Sample] = sorted(run.samples, key=lambda s: s.t)  # stable: same-time order kept
    w = makespan(run) if window is None else window
    n = len(samples)
    t = np.fromiter((s.t for s in samples), dtype=float, count=n)
    if n:
        nxt = np.append(t[1:], max(w, 0.0))
        dt = np.maximum(np.clip(nxt, 0.0, max(w, 0.0)) - np.clip(t, 0.0, max(w, 0.0)), 0.0)
    else:
        dt = np.zeros(0)
    base = np.empty((n, 7))
    for i, s in enumerate(samples):
        base[i] = (s.gpu_allocated, s.gpu_capacity, s.cpu_allocated, s.cpu_capacity, s.gpu_fragmentation,
                   s.pending_jobs, s.running_jobs)
    ga, gc, ca, cc, frag, pend, run_ = base.T
    names = sorted({q for s in samples for q in s.queues} | {j.queue for j in run.jobs})
    index = {q: k for k, q in enumerate(names)}
    alloc = np.zeros((len(names), n))
    des = np.full((len(names), n), np.nan)
    for i, s in enumerate(samples):
        for q, qs in s.queues.items():
            k = index[q]
            alloc[k, i] = qs.allocated_gpu
            if qs.deserved_gpu is not None:
                des[k, i] = qs.deserved_gpu
    q_alloc = {q: alloc[k] for q, k in index.items()}
    q_des = {q: des[k] for q, k in index.items()}
    q_share = {q: _ratio(a, gc) for q, a in q_alloc.items()}
    q_dshare: dict[str, np.ndarray] = {}
    for q, d in q_des.items():
        ds = np.full(n, np.nan)
        known = ~np.isnan(d)
        ds[known] = _ratio(d[known], gc[known])
        q_dshare[q] = ds
    return _Series(t=t, dt=dt, window=w, gpu_allocated=ga, gpu_capacity=gc, gpu_ratio=_ratio(ga, gc),
                   cpu_ratio=_ratio(ca, cc), gpu_fragmentation=frag, frag_ratio=_ratio(frag, gc),
                   pending=pend, running=run_, queues=names, q_alloc=q_alloc, q_deserved=q_des, q_share=q_share,
                   q_deserved_share=q_dshare)


@dataclass(slots=True)
class RunView:
    """One run prepared for the report: its label, series (computed once) and summary."""

    label: str
    run: RunMetrics
    series: _Series
    summary: dict[str, Any]


def _job_stats(jobs: Sequence[JobMetrics]) -> dict[str, Any]:
    waits = [w for j in jobs if (w := j.wait) is not None]
    jcts = [c for j in jobs if (c := j.jct) is not None]
    return {
        "jobs": len(jobs),
        "completed": sum(1 for j in jobs if j.phase == "Completed"),
        "finished": len(jcts),
        "never_started": len(jobs) - len(waits),
        "mean_wait_s": _f(_mean(waits)),
        "p50_wait_s": _f(_pct(waits, 50)),
        "p95_wait_s": _f(_pct(waits, 95)),
        "max_wait_s": _f(max(waits)) if waits else None,
        "mean_jct_s": _f(_mean(jcts)),
        "p95_jct_s": _f(_pct(jcts, 95)),
    }


def _never_started_why(jobs: Sequence[JobMetrics]) -> dict[str, Any]:
    """Jobs that never started, by the reason code of their last session's diagnosis
    (docs/reasons.md), most frequent first."""
    reasons: dict[str, int] = {}
    for j in jobs:
        if j.start is None and j.pending_reason:
            reasons[j.pending_reason] = reasons.get(j.pending_reason, 0) + 1
    return {"never_started_reasons": dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])))}


def summarize(run: RunMetrics) -> dict[str, Any]:
    """``{"summary": {...}, "queues": {queue: {...}}, "stats": {...}}``; see the module docstring."""
    return _summarize(run, _series(run))


def _summarize(run: RunMetrics, ser: _Series) -> dict[str, Any]:
    js = _job_stats(run.jobs)
    gpu_hours = {q: ser.integral(a) / 3600.0 for q, a in ser.q_alloc.items()}
    busy_s = busy_end(run)
    busy = ser.clipped(busy_s)
    summary: dict[str, Any] = {
        **js,
        "gpu_allocation_ratio": ser.mean(ser.gpu_ratio),
        "cpu_allocation_ratio": ser.mean(ser.cpu_ratio),
        "gpu_fragmentation_ratio": ser.mean(ser.frag_ratio),
        "mean_pending_jobs": ser.mean(ser.pending),
        "busy_window_s": busy_s,
        "busy_gpu_allocation_ratio": busy.mean(busy.gpu_ratio),
        "busy_cpu_allocation_ratio": busy.mean(busy.cpu_ratio),
        "busy_mean_pending_jobs": busy.mean(busy.pending),
        "max_pending_jobs": int(ser.pending.max()) if len(ser.pending) else None,
        "gpu_hours": ser.integral(ser.gpu_allocated) / 3600.0,
        "makespan_s": makespan(run),
        "restarts": sum(j.restarts for j in run.jobs),
        "preemptions": sum(j.preemptions for j in run.jobs),
        "running_at_end": sum(1 for j in run.jobs if j.start is not None and j.end is None),
        "running_without_duration": sum(1 for j in run.jobs if j.end is None and j.reason == ENDLESS),
        "end_reason": run.end_reason,
        **_never_started_why(run.jobs),
    }
    by_queue: dict[str, list[JobMetrics]] = {q: [] for q in ser.queues}
    for j in run.jobs:
        by_queue[j.queue].append(j)
    queues: dict[str, Any] = {}
    for q in ser.queues:
        qs = _job_stats(by_queue[q])
        queues[q] = {
            "jobs": qs["jobs"], "completed": qs["completed"], "never_started": qs["never_started"],
            "mean_wait_s": qs["mean_wait_s"], "p95_wait_s": qs["p95_wait_s"], "mean_jct_s": qs["mean_jct_s"],
            "gpu_hours": gpu_hours[q],
            "mean_share": ser.mean(ser.q_share[q]),
            "mean_deserved_share": ser.mean_known(ser.q_deserved_share[q]),
            "busy_mean_share": busy.mean(busy.q_share[q]),
            "busy_mean_deserved_share": busy.mean_known(busy.q_deserved_share[q]),
            "preemptions": sum(j.preemptions for j in by_queue[q]),
        }
    ss = run.session_seconds
    stats: dict[str, Any] = {
        "name": run.name,
        "config": run.config_name,
        "seed": run.seed,
        "virtual_seconds": _f(run.virtual_seconds),
        "sessions": run.sessions,
        "wall_seconds": _f(run.wall_seconds),
        "samples": len(run.samples),
        "session_mean_s": _f(_mean(ss)),
        "session_p50_s": _f(_pct(ss, 50)),
        "session_p99_s": _f(_pct(ss, 99)),
        "session_max_s": _f(max(ss)) if ss else None,
        "notes": list(run.notes),
    }
    open_jobs = sorted((j for j in run.jobs if j.end is None), key=lambda j: (j.start is not None, j.submit, j.key))
    unfinished = [{"job": j.key, "started": j.start is not None, "phase": j.phase, "reason": j.reason,
                   "pending_reason": j.pending_reason or None, "pending_hint": j.pending_hint or None}
                  for j in open_jobs[:UNFINISHED_LISTED]]
    return {"summary": summary, "queues": queues, "stats": stats, "unfinished": unfinished}


# ---------------------------------------------------------------------------------------------
# comparison


def _diff(a: float | None, b: float | None) -> dict[str, float | None]:
    delta = None if a is None or b is None else b - a
    rel = None if delta is None or a is None or a == 0 else delta / abs(a)
    return {"a": a, "b": b, "delta": _f(delta), "relative": _f(rel)}


def _compare_summaries(sa: dict[str, Any], sb: dict[str, Any]) -> dict[str, Any]:
    diff: dict[str, Any] = {k: _diff(sa["summary"][k], sb["summary"][k]) for k in _COMPARED}
    for q in sorted(set(sa["queues"]) | set(sb["queues"])):
        qa, qb = sa["queues"].get(q, {}), sb["queues"].get(q, {})
        for k in ("mean_share", "mean_wait_s"):
            diff[f"queue:{q}:{k}"] = _diff(qa.get(k), qb.get(k))
    return {"a": sa, "b": sb, "diff": diff}


def compare(a: RunMetrics, b: RunMetrics) -> dict[str, Any]:
    """``{"a": summarize(a), "b": summarize(b), "diff": {metric: {a, b, delta, relative}}}``.

    ``delta = b - a``; ``relative = delta / |a|`` (``None`` when ``a`` is 0 or a side is
    missing). Metrics: ``mean_wait_s``, ``p95_wait_s``, ``mean_jct_s``, ``p95_jct_s``,
    ``gpu_allocation_ratio``, ``cpu_allocation_ratio``, ``gpu_fragmentation_ratio``,
    ``makespan_s``, ``completed``, ``never_started``, and per queue ``queue:<q>:mean_share``
    and ``queue:<q>:mean_wait_s`` (over the union of both runs' queues).
    """
    return _compare_summaries(summarize(a), summarize(b))


def _label(name: str) -> str:
    base = name.rsplit("/", 1)[-1]
    for suffix in (".conf", ".yaml", ".yml", ".json"):
        if base.endswith(suffix) and len(base) > len(suffix):
            base = base[: -len(suffix)]
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", base).strip("._") or "run"


def run_labels(a: RunMetrics, b: RunMetrics | None = None) -> tuple[str, str]:
    """Short, file-name-safe labels of two runs (their configuration names, made distinct)."""
    la = _label(a.config_name)
    lb = _label(b.config_name) if b is not None else "b"
    if la == lb:
        la, lb = f"{la}-a", f"{lb}-b"
    return la, lb


# ---------------------------------------------------------------------------------------------
# CSV


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


def _write_jobs_csv(run: RunMetrics, path: Path) -> Path:
    rows = ((j.key, j.queue, j.submit, j.first_bind, j.start, j.end, j.wait, j.jct, float(j.gpus), j.pods, j.phase,
             j.restarts, j.preemptions, j.reason, j.pending_reason, j.pending_hint)
            for j in sorted(run.jobs, key=lambda j: (j.submit, j.key)))
    return _write_csv(path, JOBS_COLUMNS, rows)


def _write_queues_csv(summ: dict[str, Any], path: Path) -> Path:
    rows = ((q, s["jobs"], s["never_started"], s["mean_wait_s"], s["p95_wait_s"], s["mean_jct_s"], s["gpu_hours"],
             s["mean_share"], s["mean_deserved_share"], s["busy_mean_share"], s["busy_mean_deserved_share"])
            for q, s in summ["queues"].items())
    return _write_csv(path, QUEUES_COLUMNS, rows)


def _write_timeseries_csv(ser: _Series, path: Path) -> Path:
    header = list(TIMESERIES_COLUMNS)
    cols = [ser.t, ser.gpu_allocated, ser.gpu_capacity, ser.gpu_ratio, ser.cpu_ratio, ser.gpu_fragmentation,
            ser.pending, ser.running]
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


def _write_compare_csv(cmp: dict[str, Any], path: Path) -> Path:
    rows = ((k, d["a"], d["b"], d["delta"], d["relative"]) for k, d in cmp["diff"].items())
    return _write_csv(path, COMPARE_COLUMNS, rows)


# ---------------------------------------------------------------------------------------------
# report directory


def write_report(run: RunMetrics, out_dir: Path, *, other: RunMetrics | None = None) -> list[Path]:
    """Write the report directory and return the files written.

    One run: ``jobs.csv``, ``queues.csv``, ``timeseries.csv``, ``allocation.png``,
    ``queue_share.png``, ``wait_cdf.png``, ``jct_cdf.png``, ``report.html``. With ``other``:
    the three CSVs once per run, suffixed with the run's label (``jobs-<label>.csv``, …; see
    :func:`run_labels`), ``compare.csv`` (the ``diff`` of :func:`compare`), the four plots
    showing both runs, ``compare_queues.png``, and the comparison in ``report.html``. The
    HTML embeds every plot as a data URI, so the one file shows everything. Without
    matplotlib the plots are skipped and the HTML says so.
    """
    from pyvolcano.simulator import report_html

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    pairs = [(run, _label(run.config_name))] if other is None else list(zip((run, other), run_labels(run, other)))
    views: list[RunView] = []
    for r, label in pairs:
        ser = _series(r)
        views.append(RunView(label, r, ser, _summarize(r, ser)))
    cmp: dict[str, Any] | None = None
    for v in views:
        suffix = "" if other is None else f"-{v.label}"
        written += [_write_jobs_csv(v.run, out_dir / f"jobs{suffix}.csv"),
                    _write_queues_csv(v.summary, out_dir / f"queues{suffix}.csv"),
                    _write_timeseries_csv(v.series, out_dir / f"timeseries{suffix}.csv")]
    if other is not None:
        cmp = _compare_summaries(views[0].summary, views[1].summary)
        written.append(_write_compare_csv(cmp, out_dir / "compare.csv"))
    plots: list[tuple[Path, str, str]] = []   # (file, title, caption)
    plot_error: str | None = None
    try:
        import pyvolcano.simulator.plots as plotmod
    except ImportError as e:  # matplotlib missing: the optional [plots] extra
        plot_error = f"plots skipped: {e} (install pyvolcano[plots])"
    else:
        plots = plotmod.write_plots(views, out_dir)
        written += [p for p, _, _ in plots]
    html = out_dir / "report.html"
    html.write_text(report_html.render([(v.label, v.summary) for v in views], cmp, plots,
                                       csv_files=[p.name for p in written if p.suffix == ".csv"],
                                       plot_error=plot_error), encoding="utf-8")
    written.append(html)
    return written


# ---------------------------------------------------------------------------------------------
# terminal


def fmt_duration(s: float | None) -> str:
    """``1d04h``, ``3h02m``, ``4m05s``, ``12.3s``; ``-`` for ``None``."""
    if s is None:
        return "-"
    neg, s = s < 0, abs(s)
    if s < 60:
        txt = f"{s:.1f}s" if s < 10 and s != int(s) else f"{s:.0f}s"
    else:
        total = round(s)
        d, rem = divmod(total, 86400)
        h, rem = divmod(rem, 3600)
        m, sec = divmod(rem, 60)
        txt = f"{d}d{h:02d}h" if d else (f"{h}h{m:02d}m" if h else f"{m}m{sec:02d}s")
    return ("-" if neg else "") + txt


def fmt_ratio(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.1f}%"


def _fmt_num(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.1f}"


def fmt_metric(key: str, v: float | None) -> str:
    """Format a summary value by its key's unit."""
    if key.endswith("_s"):
        return fmt_duration(v)
    if "ratio" in key or "share" in key:
        return fmt_ratio(v)
    return _fmt_num(v)


def fmt_delta(key: str, d: dict[str, Any], *, compact: bool = False) -> str:
    """``delta`` in the metric's unit with the relative change; ``compact``: shares without it."""
    delta, rel = d.get("delta"), d.get("relative")
    if delta is None:
        return "-"
    if delta == 0:
        return "0"
    if "ratio" in key or "share" in key:
        txt = f"{delta * 100:+.1f} pp"
    elif key.endswith("_s"):
        txt = ("+" if delta >= 0 else "") + fmt_duration(delta)
    else:
        txt = f"{delta:+,.0f}" if float(delta).is_integer() else f"{delta:+,.1f}"
    if rel is not None and not (compact and ("ratio" in key or "share" in key)):
        txt += f" ({rel * 100:+.0f}%)" if compact else f" ({rel * 100:+.1f}%)"
    return txt


def better(key: str, delta: float | None) -> str | None:
    """``"better"``, ``"worse"`` or ``None`` (neutral) for a change ``delta = b - a`` of ``key``."""
    direction = _BETTER.get(key.rsplit(":", 1)[-1])
    if delta is None or direction is None or abs(delta) < 1e-12:
        return None
    return "better" if (delta < 0) == (direction == "lower") else "worse"


_HEADLINE = (("jobs", "Jobs"), ("completed", "Completed"), ("never_started", "Never started"),
             ("mean_wait_s", "Mean wait"), ("p95_wait_s", "p95 wait"), ("mean_jct_s", "Mean JCT"),
             ("p95_jct_s", "p95 JCT"), ("gpu_allocation_ratio", "GPU allocation, whole run"),
             ("cpu_allocation_ratio", "CPU allocation, whole run"), ("gpu_fragmentation_ratio", "GPU fragmentation"),
             ("mean_pending_jobs", "Mean pending jobs"), ("gpu_hours", "GPU hours"),
             ("makespan_s", "Makespan"), ("preemptions", "Preemptions"), ("restarts", "Restarts"),
             ("running_at_end", "Still running at the end"), ("busy_window_s", "Busy window (jobs waiting)"),
             ("busy_gpu_allocation_ratio", "GPU allocation, busy window"),
             ("busy_cpu_allocation_ratio", "CPU allocation, busy window"),
             ("busy_mean_pending_jobs", "Mean pending jobs, busy window"))


def _styled_delta(key: str, d: dict[str, Any], *, compact: bool = False) -> Text:
    verdict = better(key, d.get("delta"))
    style = {"better": "green", "worse": "red"}.get(verdict or "", "")
    return Text(fmt_delta(key, d, compact=compact), style=style)


def print_summary(run: RunMetrics, *, other: RunMetrics | None = None, console: Console | None = None) -> None:
    """Headline numbers, a per-queue table and session latency; with ``other``, both runs and the difference
    (green = better, red = worse)."""
    console = console or Console()
    sa = summarize(run)
    st = sa["stats"]
    if other is None:
        console.print(f"[bold]{st['name']}[/] · config [bold]{st['config']}[/] · seed {st['seed']}", highlight=False)
        head = Table(title="Summary", box=None, show_header=False, title_justify="left")
        head.add_column("metric")
        head.add_column("value", justify="right")
        for key, title in _HEADLINE:
            head.add_row(title, fmt_metric(key, sa["summary"][key]))
        console.print(head)
        qt = Table(title="Queues (shares: time-weighted means over the busy window)", title_justify="left")
        for col in ("QUEUE", "JOBS", "NEVER STARTED", "MEAN WAIT", "P95 WAIT", "MEAN JCT", "GPU HOURS", "MEAN SHARE",
                    "DESERVED"):
            qt.add_column(col, justify="left" if col == "QUEUE" else "right")
        for q, s in sa["queues"].items():
            qt.add_row(q, str(s["jobs"]), str(s["never_started"]), fmt_duration(s["mean_wait_s"]),
                       fmt_duration(s["p95_wait_s"]), fmt_duration(s["mean_jct_s"]), f"{s['gpu_hours']:,.1f}",
                       fmt_ratio(s["busy_mean_share"]), fmt_ratio(s["busy_mean_deserved_share"]))
        console.print(qt)
        for line in end_lines(sa):
            console.print(line, highlight=False, markup=False)
        reasons = sa["summary"]["never_started_reasons"]
        if reasons:
            console.print("Never started, by reason: " + ", ".join(f"{r} {n}" for r, n in reasons.items()),
                          highlight=False, markup=False)
        console.print(_session_line(st), highlight=False)
        return
    la, lb = run_labels(run, other)
    sb = summarize(other)
    cmp = _compare_summaries(sa, sb)
    console.print(f"[bold]{st['name']}[/] · seed {st['seed']} · [cyan]{la}[/] vs [magenta]{lb}[/]", highlight=False)
    head = Table(title="Summary", title_justify="left")
    head.add_column("METRIC")
    head.add_column(la, justify="right", style="cyan")
    head.add_column(lb, justify="right", style="magenta")
    head.add_column(f"Δ ({lb} − {la})", justify="right")
    for key, title in _HEADLINE:
        d = _diff(sa["summary"][key], sb["summary"][key])
        head.add_row(title, fmt_metric(key, d["a"]), fmt_metric(key, d["b"]), _styled_delta(key, d))
    console.print(head)
    queues = sorted(set(sa["queues"]) | set(sb["queues"]))
    wt = Table(title="Queue wait (jobs that started)", title_justify="left", box=box.SIMPLE_HEAD)
    st_ = Table(title="Queue share of cluster GPUs (time-weighted means)", title_justify="left", box=box.SIMPLE_HEAD)
    wt.add_column("QUEUE", no_wrap=True)
    wt.add_column("JOBS", justify="right")
    st_.add_column("QUEUE", no_wrap=True)
    for t, cols in ((wt, ("MEAN WAIT", "P95 WAIT")), (st_, ("SHARE", "DESERVED"))):
        for col in cols:
            t.add_column(f"{col}\n{la}", justify="right", style="cyan")
            t.add_column(f"{col}\n{lb}", justify="right", style="magenta")
            if col != "DESERVED":
                t.add_column("Δ", justify="right", no_wrap=True)
    for q in queues:
        qa, qb = sa["queues"].get(q, {}), sb["queues"].get(q, {})
        dw, ds = cmp["diff"][f"queue:{q}:mean_wait_s"], cmp["diff"][f"queue:{q}:mean_share"]
        dp = _diff(qa.get("p95_wait_s"), qb.get("p95_wait_s"))
        wt.add_row(q, str(qa.get("jobs", qb.get("jobs", 0))),
                   fmt_duration(dw["a"]), fmt_duration(dw["b"]), _styled_delta("mean_wait_s", dw, compact=True),
                   fmt_duration(dp["a"]), fmt_duration(dp["b"]), _styled_delta("p95_wait_s", dp, compact=True))
        st_.add_row(q, fmt_ratio(ds["a"]), fmt_ratio(ds["b"]), _styled_delta("mean_share", ds, compact=True),
                    fmt_ratio(qa.get("mean_deserved_share")), fmt_ratio(qb.get("mean_deserved_share")))
    console.print(wt)
    console.print(st_)
    console.print(f"[cyan]{la}[/]: " + _session_line(st), highlight=False)
    console.print(f"[magenta]{lb}[/]: " + _session_line(sb["stats"]), highlight=False)


def end_lines(summ: dict[str, Any]) -> list[str]:
    """Why jobs had not finished when the run stopped, for people: one line on the counts and
    the reason the run stopped, then one per listed job (``summ`` is :func:`summarize`'s)."""
    s = summ["summary"]
    running, never, endless = s["running_at_end"], s["never_started"], s["running_without_duration"]
    if not running and not never:
        return []
    if s["end_reason"] == "until":
        why = "the run stopped at its --until horizon"
    else:
        causes = []
        if endless:
            causes.append(f"{endless} run(s) forever because their pods have no pyvolcano.io/duration "
                          "(give --default-duration)")
        if never:
            causes.append(f"{never} can never be placed (reasons below)")
        why = "nothing left could change anything: " + "; ".join(causes or ["every other job finished"])
    lines = [f"Not finished: {running} job(s) still running, {never} never started — {why}."]
    for u in summ["unfinished"]:
        state = "running" if u["started"] else "never started"
        why = f"{u['pending_reason']}: {u['pending_hint']}" if u.get("pending_reason") else u["reason"] or "-"
        lines.append(f"  {u['job']} ({state}): {why}")
    listed = len(summ["unfinished"])
    if running + never > listed:
        lines.append(f"  … and {running + never - listed} more (--report writes every job's reason to jobs.csv)")
    return lines


def _session_line(st: dict[str, Any]) -> str:
    def ms(x: float | None) -> str:
        return "-" if x is None else f"{x * 1000:.1f} ms"

    return (f"{st['sessions']} sessions, latency p50 {ms(st['session_p50_s'])}, p99 {ms(st['session_p99_s'])}, "
            f"max {ms(st['session_max_s'])} · virtual {fmt_duration(st['virtual_seconds'])}, "
            f"wall {st['wall_seconds'] or 0:.1f}s")
