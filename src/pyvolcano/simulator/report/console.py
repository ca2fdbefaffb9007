"""The report on a terminal: rich tables of one run, or of two runs and their differences."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from pyvolcano.simulator.metrics import RunMetrics
from pyvolcano.simulator.report.formatting import (
    HEADLINE,
    better,
    end_lines,
    fmt_delta,
    fmt_duration,
    fmt_metric,
    fmt_ratio,
)
from pyvolcano.simulator.report.stats import compare_summaries, metric_diff, run_labels, summarize

__all__ = ["print_summary"]


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
        for key, title in HEADLINE:
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
        if "topology" in sa:
            console.print(_topology_line(sa["topology"]), highlight=False, markup=False)
        console.print(_session_line(st), highlight=False)
        return
    la, lb = run_labels(run, other)
    sb = summarize(other)
    cmp = compare_summaries(sa, sb)
    console.print(f"[bold]{st['name']}[/] · seed {st['seed']} · [cyan]{la}[/] vs [magenta]{lb}[/]", highlight=False)
    head = Table(title="Summary", title_justify="left")
    head.add_column("METRIC")
    head.add_column(la, justify="right", style="cyan")
    head.add_column(lb, justify="right", style="magenta")
    head.add_column(f"Δ ({lb} − {la})", justify="right")
    for key, title in HEADLINE:
        d = metric_diff(sa["summary"][key], sb["summary"][key])
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
        dp = metric_diff(qa.get("p95_wait_s"), qb.get("p95_wait_s"))
        wt.add_row(q, str(qa.get("jobs", qb.get("jobs", 0))),
                   fmt_duration(dw["a"]), fmt_duration(dw["b"]), _styled_delta("mean_wait_s", dw, compact=True),
                   fmt_duration(dp["a"]), fmt_duration(dp["b"]), _styled_delta("p95_wait_s", dp, compact=True))
        st_.add_row(q, fmt_ratio(ds["a"]), fmt_ratio(ds["b"]), _styled_delta("mean_share", ds, compact=True),
                    fmt_ratio(qa.get("mean_deserved_share")), fmt_ratio(qb.get("mean_deserved_share")))
    console.print(wt)
    console.print(st_)
    console.print(f"[cyan]{la}[/]: " + _session_line(st), highlight=False)
    console.print(f"[magenta]{lb}[/]: " + _session_line(sb["stats"]), highlight=False)


def _topology_line(t: dict[str, Any]) -> str:
    spread = (f"{t['multi_node_jobs_in_one_domain']} of {t['multi_node_jobs']} multi-node jobs inside one domain, "
              f"{t['mean_span_domains']:.2f} domains each on average" if t["multi_node_jobs"] else "no multi-node job")
    return (f"Topology: {spread}; topology fragmentation {fmt_ratio(t['fragmentation_ratio'])} of GPU capacity "
            f"(mean {t['mean_fragmented_gpus'] or 0:,.1f} idle GPUs no pending job can use)")


def _session_line(st: dict[str, Any]) -> str:
    def ms(x: float | None) -> str:
        return "-" if x is None else f"{x * 1000:.1f} ms"

    return (f"{st['sessions']} sessions, latency p50 {ms(st['session_p50_s'])}, p99 {ms(st['session_p99_s'])}, "
            f"max {ms(st['session_max_s'])} · virtual {fmt_duration(st['virtual_seconds'])}, "
            f"wall {st['wall_seconds'] or 0:.1f}s")
