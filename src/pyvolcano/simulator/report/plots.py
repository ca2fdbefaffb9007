"""PNG plots of one run or of two runs compared (matplotlib, Agg canvas, no pyplot state).

Importing this module imports matplotlib; :func:`pyvolcano.simulator.report.directory.write_report`
imports it lazily, so matplotlib stays an optional dependency (the ``plots`` extra).

Time series are drawn as time-weighted means over ``_BINS`` equal bins of the plotted window
(``[0, makespan]``, or the busy window and a tenth more when the run is over four times longer
than its busy window; exact for runs with fewer state changes than bins, and cheap for runs
with millions of samples). Before the first sample the
state is unknown and not drawn.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, MaxNLocator, NullFormatter, NullLocator, PercentFormatter

from pyvolcano.simulator.metrics import RunMetrics
from pyvolcano.simulator.report.formatting import fmt_duration
from pyvolcano.simulator.report.stats import RunView, busy_end, makespan

__all__ = ["plot_topology", "write_plots"]

_BINS = 1000
_SHARE_BINS = 400       # queue shares are noisier: coarser bins read better
_SHARE_AXES_MAX = 6     # more queues than this: one panel per queue
_DPI = 100
_RUN_COLOURS = ("tab:blue", "tab:orange")
_RUN_STYLES = ("-", "--")
# Human ticks for log-scaled durations (seconds).
_DURATION_TICKS = ((1, "1 s"), (10, "10 s"), (60, "1 min"), (600, "10 min"), (3600, "1 h"), (6 * 3600, "6 h"),
                   (86400, "1 d"), (7 * 86400, "1 w"), (30 * 86400, "30 d"), (365 * 86400, "1 y"))
_BUSY_CLIP = 4        # clip the time axis to the busy window when the run is over 4× longer
_MIN_DURATION = 1.0   # durations below this are drawn at it on log axes (zero waits)

Runs = Sequence[RunView]


def _figure(w: float, h: float) -> Figure:
    fig = Figure(figsize=(w, h), dpi=_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Figure, path: Path) -> Path:
    fig.savefig(path, dpi=_DPI, facecolor="white")
    return path


def _queue_colours(queues: Sequence[str]) -> dict[str, Any]:
    n = len(queues)
    if n <= 10:
        cols = [matplotlib.colormaps["tab10"](i) for i in range(n)]
    elif n <= 20:
        # tab20 pairs light/dark shades; take the dark ones first so neighbours differ most.
        order = list(range(0, 20, 2)) + list(range(1, 20, 2))
        cols = [matplotlib.colormaps["tab20"](order[i]) for i in range(n)]
    else:
        cmap = matplotlib.colormaps["turbo"]
        cols = [cmap(0.05 + 0.9 * i / (n - 1)) for i in range(n)]
    return dict(zip(queues, cols))


def _window(run: RunMetrics) -> float:
    """The plotted window: the makespan, or, when the busy window
    (:func:`~pyvolcano.simulator.report.stats.busy_end`) is under a quarter of it (a long tail of a
    few jobs), the busy window and a tenth more; without jobs, the run's end or its last sample."""
    w = makespan(run)
    if w > 0:
        busy = busy_end(run)
        return busy * 1.1 if 0 < busy * _BUSY_CLIP < w else w
    last = max((s.t for s in run.samples), default=0.0)
    return max(float(run.virtual_seconds), last, 1.0)


def _binned(t: np.ndarray, v: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Time-weighted mean per bin of the step function ``v_i`` on ``[t_i, t_{i+1})``; NaN = unknown."""
    if not len(t):
        return np.full(len(edges) - 1, np.nan)
    known = ~np.isnan(v)
    vv = np.where(known, v, 0.0)

    def integral(c: np.ndarray) -> np.ndarray:
        cum = np.concatenate([[0.0], np.cumsum(c[:-1] * np.diff(t))])
        k = np.searchsorted(t, edges, side="right") - 1
        kk = np.clip(k, 0, None)
        return np.where(k >= 0, cum[kk] + c[kk] * (edges - t[kk]), 0.0)

    num, den = np.diff(integral(vv)), np.diff(integral(known.astype(float)))
    out = np.full(len(edges) - 1, np.nan)
    np.divide(num, den, out=out, where=den > 1e-12)
    return out


def _duration_floor(values: Sequence[float]) -> float:
    """The largest human tick at or below the smallest value (at least ``_MIN_DURATION``)."""
    low = min(values, default=_MIN_DURATION)
    return max([_MIN_DURATION, *(v for v, _ in _DURATION_TICKS if v <= low)])


def _duration_axis(ax: Any, lo: float, hi: float) -> None:
    """Log x axis from a little left of ``lo`` (so a jump at ``lo`` shows) to ``hi``, with human ticks."""
    ax.set_xscale("log")
    hi = max(hi, lo * 10)
    ax.set_xlim(lo * 0.75, hi)
    ticks = [(v, s) for v, s in _DURATION_TICKS if lo <= v <= hi]
    ax.xaxis.set_major_locator(FixedLocator([v for v, _ in ticks]))
    ax.set_xticklabels([s for _, s in ticks])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())


def _cdf_step(ax: Any, values: Sequence[float], total: int, lo: float, hi: float, **kw: Any) -> None:
    """Empirical CDF of ``values`` as a fraction of ``total`` (values missing from ``total`` keep it below 1)."""
    if total <= 0:
        return
    x = np.sort(np.maximum(np.asarray(values, dtype=float), _MIN_DURATION))
    y = np.arange(1, len(x) + 1) / total
    xs = np.concatenate([[lo * 0.75], x, [hi]])
    ys = np.concatenate([[0.0], y, [y[-1] if len(y) else 0.0]])
    ax.step(xs, ys, where="post", **kw)


def _time_unit(window: float) -> tuple[float, str]:
    """Hours for runs of 3 h or more (the usual trace replay); minutes or seconds for short runs."""
    if window >= 3 * 3600:
        return 3600.0, "hours"
    if window >= 3 * 60:
        return 60.0, "minutes"
    return 1.0, "seconds"


def _centres(edges: np.ndarray) -> np.ndarray:
    return (edges[:-1] + edges[1:]) / 2 / _time_unit(float(edges[-1]))[0]


def _time_label(window: float) -> str:
    return f"virtual time ({_time_unit(window)[1]})"


def _style_time_axis(ax: Any, window: float) -> None:
    ax.set_xlim(0, window / _time_unit(window)[0])
    ax.grid(True, alpha=0.3)


def _no_data(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=12, color="0.4")


# ---------------------------------------------------------------------------------------------


def plot_allocation(runs: Runs, path: Path) -> Path:
    window = max(_window(v.run) for v in runs)
    edges = np.linspace(0.0, window, _BINS + 1)
    x = _centres(edges)
    fig = _figure(11, 4.6 if len(runs) == 1 else 7.8)
    axes = fig.subplots(len(runs), 1, sharex=True, squeeze=False)[:, 0]
    handles: list[Any] = []
    pend_max = 1.0
    twins = []
    for ax, v in zip(axes, runs):
        label, ser = v.label, v.series
        # Before the first sample, state is unknown: not drawn.
        h1 = ax.plot(x, _binned(ser.t, ser.gpu_ratio, edges), color="tab:green", lw=1.6, label="GPU allocated")
        h2 = ax.plot(x, _binned(ser.t, ser.cpu_ratio, edges), color="tab:blue", lw=1.2, label="CPU allocated")
        h3 = ax.plot(x, _binned(ser.t, ser.frag_ratio, edges), color="tab:red", lw=1.2,
                     label="GPU fragmentation (idle GPUs unusable by a typical pending pod)")
        ax.set_ylim(0, 1.05)
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
        ax.set_ylabel("share of cluster capacity")
        _style_time_axis(ax, window)
        tw = ax.twinx()
        pend = _binned(ser.t, ser.pending, edges)
        tw.fill_between(x, np.nan_to_num(pend), color="0.5", alpha=0.18, lw=0, step="mid")
        h4 = tw.plot(x, pend, color="0.35", lw=0.9, label="pending jobs (right axis)")
        tw.set_ylabel("pending jobs")
        tw.yaxis.set_major_locator(MaxNLocator(integer=True))
        if not len(ser.t):
            _no_data(ax, "no samples")
        if len(ser.pending):
            pend_max = max(pend_max, float(np.nanmax(ser.pending)))
        twins.append(tw)
        summ = v.summary["summary"]
        title = (f"busy window (first {fmt_duration(summ['busy_window_s'])}): GPU "
                 f"{_pct(summ['busy_gpu_allocation_ratio'])} · CPU {_pct(summ['busy_cpu_allocation_ratio'])}; "
                 f"whole run ({fmt_duration(summ['makespan_s'])}): GPU {_pct(summ['gpu_allocation_ratio'])} · "
                 f"CPU {_pct(summ['cpu_allocation_ratio'])} (time-weighted means)")
        ax.set_title(f"{label}: {title}" if len(runs) > 1 else title, fontsize=10)
        handles = h1 + h2 + h3 + h4
    for tw in twins:
        tw.set_ylim(0, pend_max * 1.08)
    axes[-1].set_xlabel(_time_label(window))
    fig.suptitle(f"Cluster allocation over time — {runs[0].run.name}", fontsize=12)
    fig.legend(handles, [str(h.get_label()) for h in handles], loc="outside lower center", ncol=2, frameon=False)
    return _save(fig, path)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.1f}%"


def _legend_right(fig: Figure, handles: list[Any], labels: list[str], title: str | None = None) -> None:
    fig.legend(handles, labels, loc="outside right upper", frameon=False, title=title, fontsize=9,
               ncol=2 if len(labels) > 24 else 1)


def plot_queue_share(runs: Runs, path: Path) -> Path:
    """Allocated (solid) vs deserved (dashed) GPU share per queue.

    Up to ``_SHARE_AXES_MAX`` queues: one axes per run, one colour per queue. More queues:
    small multiples, one panel per queue (colour per queue for one run, per run for two).
    """
    window = max(_window(v.run) for v in runs)
    edges = np.linspace(0.0, window, _SHARE_BINS + 1)
    x = _centres(edges)
    sers = [(v.label, v.series) for v in runs]
    queues = sorted({q for _, s in sers for q in s.queues})
    colours = _queue_colours(queues)
    curves: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = {}
    top = 0.0
    for i, (_, ser) in enumerate(sers):
        for q in ser.queues:
            alloc = _binned(ser.t, ser.q_share[q], edges)
            des = _binned(ser.t, ser.q_deserved_share[q], edges)
            curves[i, q] = (alloc, des)
            top = max(top, float(np.nanmax(alloc, initial=0.0)), float(np.nanmax(des, initial=0.0)))
    ytop = min(1.04, top * 1.1) if top > 0 else 1.0
    title = f"Queue GPU share over time: allocated (solid) vs deserved (dashed) — {runs[0].run.name}"
    style_handles: list[Any] = [Line2D([], [], color="0.2", lw=1.6), Line2D([], [], color="0.2", lw=1.6, ls="--")]
    style_labels = ["allocated share", "deserved share"]
    if len(queues) <= _SHARE_AXES_MAX:
        fig = _figure(12, 5.2 if len(runs) == 1 else 8.6)
        axes = fig.subplots(len(runs), 1, sharex=True, sharey=True, squeeze=False)[:, 0]
        for i, (ax, (label, ser)) in enumerate(zip(axes, sers)):
            for q in ser.queues:
                alloc, des = curves[i, q]
                ax.plot(x, alloc, color=colours[q], lw=1.3)
                ax.plot(x, des, color=colours[q], lw=2.0, ls=(0, (5, 2)), zorder=3)
            ax.yaxis.set_major_formatter(PercentFormatter(1.0))
            ax.set_ylabel("share of cluster GPUs")
            _style_time_axis(ax, window)
            if len(runs) > 1:
                ax.set_title(label, fontsize=10, loc="left")
        axes[0].set_ylim(0, ytop)
        axes[-1].set_xlabel(_time_label(window))
        fig.suptitle(title, fontsize=12)
        handles: list[Any] = [Line2D([], [], color=colours[q], lw=2) for q in queues]
        _legend_right(fig, handles + style_handles, [*queues, *style_labels], title="queue")
        return _save(fig, path)
    ncols = 3 if len(queues) <= 9 else 4
    nrows = -(-len(queues) // ncols)
    fig = _figure(13, 1.2 + 2.0 * nrows)
    grid = fig.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False)
    for k, q in enumerate(queues):
        ax = grid[k // ncols][k % ncols]
        for i in range(len(runs)):
            if (i, q) not in curves:
                continue
            alloc, des = curves[i, q]
            colour = colours[q] if len(runs) == 1 else _RUN_COLOURS[i % 2]
            if len(runs) == 1:
                ax.fill_between(x, np.nan_to_num(alloc), color=colour, alpha=0.25, lw=0)
            ax.plot(x, alloc, color=colour, lw=1.1)
            ax.plot(x, des, color="black" if len(runs) == 1 else colour, lw=1.6, ls=(0, (5, 2)), zorder=3)
        ax.set_title(q, fontsize=10, loc="left", fontweight="bold")
        ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        _style_time_axis(ax, window)
    grid[0][0].set_ylim(0, ytop)
    for k in range(len(queues), nrows * ncols):
        grid[k // ncols][k % ncols].set_visible(False)
    for r in range(nrows):
        grid[r][0].set_ylabel("GPU share")
    for c in range(ncols):
        # the lowest visible panel of each column carries the x label
        r = max(r for r in range(nrows) if r * ncols + c < len(queues))
        grid[r][c].set_xlabel(_time_label(window))
        grid[r][c].xaxis.set_tick_params(labelbottom=True)
    fig.suptitle(title + ("" if len(runs) == 1 else " — " + " vs ".join(v.label for v in runs)), fontsize=12)
    if len(runs) == 1:
        style_handles[1] = Line2D([], [], color="black", lw=1.6, ls="--")
        handles = style_handles
        labels = ["allocated share (filled)", "deserved share"]
    else:
        handles = [Line2D([], [], color=_RUN_COLOURS[i % 2], lw=2) for i in range(len(runs))] + style_handles
        labels = [v.label for v in runs] + style_labels
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), frameon=False)
    return _save(fig, path)


def plot_wait_cdf(runs: Runs, path: Path) -> Path:
    waits_by_run = []
    hi = 60.0
    for v in runs:
        run = v.run
        by_q: dict[str, list[float]] = {}
        totals: dict[str, int] = {}
        for j in run.jobs:
            totals[j.queue] = totals.get(j.queue, 0) + 1
            by_q.setdefault(j.queue, [])
            if j.wait is not None:
                by_q[j.queue].append(j.wait)
                hi = max(hi, j.wait)
        waits_by_run.append((by_q, totals))
    hi *= 1.5
    queues = sorted({q for by_q, _ in waits_by_run for q in by_q})
    colours = _queue_colours(queues)
    fig = _figure(11 if len(runs) == 1 else 15, 5.4)
    axes = fig.subplots(1, len(runs), sharey=True, squeeze=False)[0]
    for ax, v, (by_q, totals) in zip(axes, runs, waits_by_run):
        label, run = v.label, v.run
        for q in sorted(by_q):
            _cdf_step(ax, by_q[q], totals[q], _MIN_DURATION, hi, color=colours[q], lw=1.3)
        all_w = [w for ws in by_q.values() for w in ws]
        _cdf_step(ax, all_w, len(run.jobs), _MIN_DURATION, hi, color="black", lw=2.4)
        _duration_axis(ax, _MIN_DURATION, hi)
        ax.set_ylim(0, 1.02)
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
        ax.grid(True, alpha=0.3, which="major")
        ax.set_xlabel("wait = start − submit (log scale; waits under 1 s drawn at 1 s)")
        if not run.jobs:
            _no_data(ax, "no jobs")
        never = sum(1 for j in run.jobs if j.start is None)
        sub = f"{len(run.jobs)} jobs" + (f", {never} never started (curves stay below 100%)" if never else "")
        ax.set_title(f"{label}: {sub}" if len(runs) > 1 else sub, fontsize=10)
    axes[0].set_ylabel("share of the queue's jobs started within the wait")
    fig.suptitle(f"Wait-time CDF per queue — {runs[0].run.name}", fontsize=12)
    handles: list[Any] = [Line2D([], [], color="black", lw=2.4)] + [Line2D([], [], color=colours[q], lw=2)
                                                                      for q in queues]
    _legend_right(fig, handles, ["all queues", *queues], title="queue")
    return _save(fig, path)


def plot_jct_cdf(runs: Runs, path: Path) -> Path:
    hi = 60.0
    data = []
    for v in runs:
        jcts = [c for j in v.run.jobs if (c := j.jct) is not None]
        hi = max([hi, *jcts])
        data.append(jcts)
    hi *= 1.5
    lo = _duration_floor([c for jcts in data for c in jcts])
    fig = _figure(10, 5.2)
    ax = fig.subplots()
    handles: list[Any] = []
    labels: list[str] = []
    for i, (v, jcts) in enumerate(zip(runs, data)):
        label, run = v.label, v.run
        colour = "black" if len(runs) == 1 else _RUN_COLOURS[i % 2]
        _cdf_step(ax, jcts, len(run.jobs), lo, hi, color=colour, lw=2, ls=_RUN_STYLES[i % 2])
        if jcts:
            p50, p95 = np.percentile(jcts, [50, 95])
            for p, name in ((p50, "p50"), (p95, "p95")):
                ax.axvline(max(p, _MIN_DURATION), color=colour, lw=0.8, ls=":", alpha=0.8)
                ax.annotate(f"{name} {fmt_duration(float(p))}", (max(p, _MIN_DURATION), 0.03 + 0.07 * i),
                            xytext=(3, 0), textcoords="offset points", fontsize=9, color=colour)
        handles.append(Line2D([], [], color=colour, lw=2, ls=_RUN_STYLES[i % 2]))
        unfinished = len(run.jobs) - len(jcts)
        labels.append(f"{label}: {len(jcts)} finished" + (f", {unfinished} unfinished" if unfinished else "")
                      + (f", mean {fmt_duration(float(np.mean(jcts)))}" if jcts else ""))
    _duration_axis(ax, lo, hi)
    if not any(data):
        _no_data(ax, "no finished jobs")
    ax.set_ylim(0, 1.02)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.grid(True, alpha=0.3)
    ax.set_xlabel("job completion time = end − submit (log scale)")
    ax.set_ylabel("share of all jobs finished within the JCT")
    ax.set_title(f"Job completion time CDF, all jobs — {runs[0].run.name}", fontsize=12)
    ax.legend(handles, labels, loc="upper left", frameon=True, fontsize=9)
    return _save(fig, path)


def plot_compare_queues(runs: Runs, path: Path) -> Path:
    """Per queue, both runs: mean wait (bars) and mean GPU share (bars) with the deserved share (markers)."""
    summs = [(v.label, v.summary) for v in runs]
    queues = sorted({q for _, s in summs for q in s["queues"]})
    n = max(len(queues), 1)
    fig = _figure(13, 1.8 + 0.42 * n)
    ax_w, ax_s = fig.subplots(1, 2, sharey=True)
    y = np.arange(len(queues))
    h = 0.38
    waits = [[s["queues"].get(q, {}).get("mean_wait_s") or 0.0 for q in queues] for _, s in summs]
    top = max((w for ws in waits for w in ws), default=0.0)
    unit, div = ("hours", 3600.0) if top >= 2 * 3600 else ("minutes", 60.0) if top >= 120 else ("seconds", 1.0)
    for i, ((label, s), ws) in enumerate(zip(summs, waits)):
        off = (i - (len(summs) - 1) / 2) * h
        ax_w.barh(y + off, np.asarray(ws) / div, height=h, color=_RUN_COLOURS[i % 2], label=label)
        shares = [s["queues"].get(q, {}).get("mean_share") or 0.0 for q in queues]
        deserved = [s["queues"].get(q, {}).get("mean_deserved_share") for q in queues]
        ax_s.barh(y + off, shares, height=h, color=_RUN_COLOURS[i % 2])
        dy = [yy + off for yy, d in zip(y, deserved) if d is not None]
        dx = [d for d in deserved if d is not None]
        ax_s.scatter(dx, dy, marker="|", s=220, linewidths=2.2, color="black", zorder=3,
                     label="deserved (time-weighted mean)" if i == 0 else None)
    ax_w.set_yticks(y, queues)
    ax_w.invert_yaxis()
    ax_w.set_xlabel(f"mean wait ({unit})")
    ax_w.set_title("Mean wait per queue (lower is better)", fontsize=10)
    ax_w.grid(True, axis="x", alpha=0.3)
    ax_s.xaxis.set_major_formatter(PercentFormatter(1.0))
    ax_s.set_xlabel("mean share of cluster GPUs (time-weighted)")
    ax_s.set_title("Mean GPU share per queue vs deserved", fontsize=10)
    ax_s.grid(True, axis="x", alpha=0.3)
    handles, labels = ax_w.get_legend_handles_labels()
    h2, l2 = ax_s.get_legend_handles_labels()
    fig.legend(handles + h2, labels + l2, loc="outside lower center", ncol=len(labels) + len(l2), frameon=False)
    fig.suptitle(f"Per-queue comparison: {summs[0][0]} vs {summs[-1][0]} — {runs[0].run.name}", fontsize=12)
    return _save(fig, path)


def plot_topology(runs: Runs, path: Path) -> Path:
    """Topology fragmentation (idle GPUs in domains no pending job can use) over time, and how
    many domains the multi-node jobs spanned."""
    window = max(_window(v.run) for v in runs)
    edges = np.linspace(0.0, window, _BINS + 1)
    x = _centres(edges)
    fig = _figure(13, 4.6)
    ax_t, ax_h = fig.subplots(1, 2, width_ratios=(2, 1))
    top = 0
    for i, v in enumerate(runs):
        ser, topo = v.series, v.summary.get("topology") or {}
        colour, style = _RUN_COLOURS[i % 2], _RUN_STYLES[i % 2]
        if ser.topology_fragmentation is not None and len(ser.t):
            ax_t.plot(x, _binned(ser.t, ser.topology_fragmentation, edges), color=colour, ls=style, lw=1.4,
                      label=f"{v.label}: mean {topo.get('mean_fragmented_gpus') or 0:,.1f} GPUs, "
                            f"{_pct(topo.get('fragmentation_ratio'))} of capacity")
        spans = [j.span_domains for j in v.run.jobs if j.span_nodes >= 2]
        if spans:
            top = max(top, max(spans))
            counts = np.bincount(spans)
            off = (i - (len(runs) - 1) / 2) * 0.38
            ax_h.bar(np.arange(len(counts)) + off, counts, width=0.38 if len(runs) > 1 else 0.7, color=colour,
                     label=f"{v.label}: {topo.get('multi_node_jobs_in_one_domain', 0)} of {len(spans)} in one domain")
    ax_t.set_ylim(bottom=0)
    ax_t.set_ylabel("idle GPUs no pending job can use")
    _style_time_axis(ax_t, window)
    ax_t.set_xlabel(_time_label(window))
    ax_t.grid(True, alpha=0.3)
    ax_t.set_title("Topology fragmentation over time", fontsize=10)
    if ax_t.get_legend_handles_labels()[0]:
        ax_t.legend(loc="upper left", fontsize=9)
    else:
        _no_data(ax_t, "no samples")
    if top:
        ax_h.set_xlim(0.4, top + 0.6)
        ax_h.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax_h.legend(loc="upper right", fontsize=9)
    else:
        _no_data(ax_h, "no job ran on two nodes or more")
    ax_h.set_xlabel("domains (lowest-tier HyperNodes) a job's pods used")
    ax_h.set_ylabel("jobs on two nodes or more")
    ax_h.set_title("Spread of multi-node jobs", fontsize=10)
    ax_h.grid(True, axis="y", alpha=0.3)
    fig.suptitle(f"Network topology — {runs[0].run.name}", fontsize=12)
    return _save(fig, path)


def write_plots(runs: Runs, out_dir: Path) -> list[tuple[Path, str, str]]:
    """Write the plots of one run (or of two runs, compared) into ``out_dir``: ``(file, title, caption)``."""
    out = [
        (plot_allocation(runs, out_dir / "allocation.png"), "Cluster allocation over time",
         "Time-weighted GPU and CPU allocation ratios, GPU fragmentation as a share of GPU capacity "
         "(idle GPUs a typical pending pod cannot use), and pending jobs on the right axis. When the "
         "busy window (until the last job started) is under a quarter of the run, the x-axis shows it "
         "and a tenth more: the rest of the run only drains a few running jobs."),
        (plot_queue_share(runs, out_dir / "queue_share.png"), "Queue share vs deserved",
         "Each queue's allocated GPUs (solid) and deserved GPUs (dashed, when the proportion plugin computes "
         "it), as a share of cluster GPU capacity, over the same window as the allocation plot."),
        (plot_wait_cdf(runs, out_dir / "wait_cdf.png"), "Wait-time CDF per queue",
         "Fraction of each queue's jobs that started within a given wait (log scale). Jobs that never "
         "started keep a curve below 100%."),
        (plot_jct_cdf(runs, out_dir / "jct_cdf.png"), "Job completion time CDF",
         "Fraction of all jobs finished within a given JCT (log scale), with p50 and p95 marked."),
    ]
    if any(v.run.topology for v in runs):
        out.append((plot_topology(runs, out_dir / "topology.png"), "Network topology",
                    "Left: topology fragmentation, the idle GPUs of the lowest-tier HyperNodes (domains, e.g. racks) "
                    "that no pending job can use, because none of its pods fits on their nodes or its whole gang "
                    "does not fit inside the HyperNode its networkTopology allows. Right: how many domains each "
                    "job that ran on two nodes or more used."))
    if len(runs) > 1:
        out.append((plot_compare_queues(runs, out_dir / "compare_queues.png"), "Per-queue comparison",
                    "Mean wait and mean GPU share per queue in both runs; black ticks mark the deserved share."))
    return out
