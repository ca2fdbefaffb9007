"""Statistics of a simulation run: pure functions of :class:`~pyvolcano.simulator.metrics.RunMetrics`.

* :func:`summarize` — one JSON-ready dict (``summary``, ``queues``, ``stats``, ``unfinished``);
* :func:`compare` — two runs side by side with the differences (the what-if question);
* :func:`run_series` / :class:`RunView` — the sampled state as arrays, computed once and read
  by every output of the report (CSV, plots, HTML, console), which never compute statistics.


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
* With HyperNodes in the cluster (``RunMetrics.topology``) the result has a ``topology``
  section (absent otherwise): ``fragmentation_ratio`` / ``busy_fragmentation_ratio`` =
  time-weighted mean of ``topology_fragmentation / gpu_capacity`` over the window / the busy
  window; ``mean_fragmented_gpus`` and ``mean_fragmented_domains`` = time-weighted means of the
  two figures (:mod:`pyvolcano.simulator.topology_metrics` defines them); over the jobs whose pods
  used two nodes or more (``multi_node_jobs``): how many stayed in one domain
  (``multi_node_jobs_in_one_domain``), ``mean_span_domains``, ``max_span_domains``, and
  ``span_tiers`` = {tier of the lowest HyperNode holding the job: jobs}.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from pyvolcano.simulator.metrics import ENDLESS, JobMetrics, RunMetrics, Sample

__all__ = ["RunView", "Series", "busy_end", "compare", "compare_summaries", "makespan", "metric_diff", "run_label",
           "run_labels", "run_series", "summarize", "summarize_series"]

UNFINISHED_LISTED = 20

# Headline metrics compared by :func:`compare`, and which direction is better (for colouring).
_COMPARED = ("mean_wait_s", "p95_wait_s", "mean_jct_s", "p95_jct_s", "gpu_allocation_ratio", "cpu_allocation_ratio",
             "gpu_fragmentation_ratio", "makespan_s", "completed", "never_started")


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
class Series:
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
    # With HyperNodes in the cluster (RunMetrics.topology), else None.
    topology_fragmentation: np.ndarray | None = None
    fragmented_domains: np.ndarray | None = None

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

    def clipped(self, window: float) -> Series:
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


def run_series(run: RunMetrics, window: float | None = None) -> Series:
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
    topo_frag = topo_domains = None
    if run.topology:
        topo_frag = np.fromiter((s.topology_fragmentation or 0.0 for s in samples), dtype=float, count=n)
        topo_domains = np.fromiter((s.fragmented_domains or 0 for s in samples), dtype=float, count=n)
    return Series(t=t, dt=dt, window=w, gpu_allocated=ga, gpu_capacity=gc, gpu_ratio=_ratio(ga, gc),
                   cpu_ratio=_ratio(ca, cc), gpu_fragmentation=frag, frag_ratio=_ratio(frag, gc),
                   pending=pend, running=run_, queues=names, q_alloc=q_alloc, q_deserved=q_des, q_share=q_share,
                   q_deserved_share=q_dshare, topology_fragmentation=topo_frag, fragmented_domains=topo_domains)


@dataclass(slots=True)
class RunView:
    """One run prepared for the report: its label, series (computed once) and summary."""

    label: str
    run: RunMetrics
    series: Series
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
    return summarize_series(run, run_series(run))


def summarize_series(run: RunMetrics, ser: Series) -> dict[str, Any]:
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
    out = {"summary": summary, "queues": queues, "stats": stats, "unfinished": unfinished}
    if run.topology:
        out["topology"] = _topology_summary(run, ser, busy)
    if run.workflows:
        out["workflows"] = _workflow_summary(run)
    return out


def _workflow_summary(run: RunMetrics) -> list[dict[str, Any]]:
    """Each JobFlow and CronJob with its steps (:meth:`Workflow.to_dict`) and, over the jobs it
    created, their count, the first submission and the last end (None while one runs)."""
    by_key = {j.key: j for j in run.jobs}
    out = []
    for w in run.workflows:
        ns = w.key.partition("/")[0]
        jobs = [by_key[k] for k in (f"{ns}/{s.job}" for s in w.steps) if k in by_key]
        ends = [j.end for j in jobs]
        out.append({**w.to_dict(), "jobs": len(jobs),
                    "first_submit_s": min((j.submit for j in jobs), default=None),
                    "last_end_s": None if not jobs or None in ends else max(e for e in ends if e is not None)})
    return out


def _topology_summary(run: RunMetrics, ser: Series, busy: Series) -> dict[str, Any]:
    frag = ser.topology_fragmentation if ser.topology_fragmentation is not None else np.zeros(len(ser.t))
    doms = ser.fragmented_domains if ser.fragmented_domains is not None else np.zeros(len(ser.t))
    busy_frag = busy.topology_fragmentation if busy.topology_fragmentation is not None else np.zeros(len(busy.t))
    multi = [j for j in run.jobs if j.span_nodes >= 2]
    tiers: dict[str, int] = {}
    for j in multi:
        if j.span_tier is not None:
            tiers[str(j.span_tier)] = tiers.get(str(j.span_tier), 0) + 1
    return {
        "fragmentation_ratio": ser.mean(_ratio(frag, ser.gpu_capacity)),
        "busy_fragmentation_ratio": busy.mean(_ratio(busy_frag, busy.gpu_capacity)),
        "mean_fragmented_gpus": ser.mean(frag),
        "mean_fragmented_domains": ser.mean(doms),
        "multi_node_jobs": len(multi),
        "multi_node_jobs_in_one_domain": sum(1 for j in multi if j.span_domains == 1),
        "mean_span_domains": _f(_mean([j.span_domains for j in multi])),
        "max_span_domains": max((j.span_domains for j in multi), default=None),
        "span_tiers": dict(sorted(tiers.items(), key=lambda kv: int(kv[0]))),
    }


# ---------------------------------------------------------------------------------------------
# comparison


def metric_diff(a: float | None, b: float | None) -> dict[str, float | None]:
    delta = None if a is None or b is None else b - a
    rel = None if delta is None or a is None or a == 0 else delta / abs(a)
    return {"a": a, "b": b, "delta": _f(delta), "relative": _f(rel)}


def compare_summaries(sa: dict[str, Any], sb: dict[str, Any]) -> dict[str, Any]:
    diff: dict[str, Any] = {k: metric_diff(sa["summary"][k], sb["summary"][k]) for k in _COMPARED}
    for q in sorted(set(sa["queues"]) | set(sb["queues"])):
        qa, qb = sa["queues"].get(q, {}), sb["queues"].get(q, {})
        for k in ("mean_share", "mean_wait_s"):
            diff[f"queue:{q}:{k}"] = metric_diff(qa.get(k), qb.get(k))
    return {"a": sa, "b": sb, "diff": diff}


def compare(a: RunMetrics, b: RunMetrics) -> dict[str, Any]:
    """``{"a": summarize(a), "b": summarize(b), "diff": {metric: {a, b, delta, relative}}}``.

    ``delta = b - a``; ``relative = delta / |a|`` (``None`` when ``a`` is 0 or a side is
    missing). Metrics: ``mean_wait_s``, ``p95_wait_s``, ``mean_jct_s``, ``p95_jct_s``,
    ``gpu_allocation_ratio``, ``cpu_allocation_ratio``, ``gpu_fragmentation_ratio``,
    ``makespan_s``, ``completed``, ``never_started``, and per queue ``queue:<q>:mean_share``
    and ``queue:<q>:mean_wait_s`` (over the union of both runs' queues).
    """
    return compare_summaries(summarize(a), summarize(b))


def run_label(name: str) -> str:
    base = name.rsplit("/", 1)[-1]
    for suffix in (".conf", ".yaml", ".yml", ".json"):
        if base.endswith(suffix) and len(base) > len(suffix):
            base = base[: -len(suffix)]
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", base).strip("._") or "run"


def run_labels(a: RunMetrics, b: RunMetrics | None = None) -> tuple[str, str]:
    """Short, file-name-safe labels of two runs (their configuration names, made distinct)."""
    la = run_label(a.config_name)
    lb = run_label(b.config_name) if b is not None else "b"
    if la == lb:
        la, lb = f"{la}-a", f"{lb}-b"
    return la, lb

