"""``report.html``: one self-contained page (inline CSS, plots embedded as ``data:`` URIs, no network)."""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyvolcano.simulator.report.formatting import (
    HEADLINE,
    better,
    end_lines,
    fmt_delta,
    fmt_duration,
    fmt_metric,
    fmt_ratio,
)
from pyvolcano.simulator.report.stats import compare_summaries, metric_diff

__all__ = ["render"]

_CSS = """
body { font-family: -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1400px; padding: 0 1.5em; color: #222; line-height: 1.4; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { margin-top: 1.8em; border-bottom: 1px solid #ddd; }
.meta { color: #666; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.92em; }
th, td { padding: 0.25em 0.8em; border-bottom: 1px solid #eee; text-align: right; }
th { background: #f5f5f5; } td:first-child, th:first-child { text-align: left; }
.better { color: #17803d; font-weight: 600; } .worse { color: #c62828; font-weight: 600; }
figure { margin: 1.2em 0; } figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { color: #555; font-size: 0.9em; margin-top: 0.3em; }
.note { background: #fff8e1; padding: 0.5em 1em; border-left: 4px solid #f9a825; }
"""


def _e(x: object) -> str:
    return html.escape(str(x))


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """``rows`` hold already-escaped HTML cells."""
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _delta_cell(key: str, d: dict[str, Any]) -> str:
    verdict = better(key, d.get("delta"))
    cls = f' class="{verdict}"' if verdict else ""
    return f"<span{cls}>{_e(fmt_delta(key, d))}</span>"


def _img(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f"data:image/png;base64,{data}"


def _queue_rows(s: dict[str, Any]) -> list[list[str]]:
    return [[_e(q), _e(v["jobs"]), _e(v["never_started"]), _e(fmt_duration(v["mean_wait_s"])),
             _e(fmt_duration(v["p95_wait_s"])), _e(fmt_duration(v["mean_jct_s"])), _e(f"{v['gpu_hours']:,.1f}"),
             _e(fmt_ratio(v["busy_mean_share"])), _e(fmt_ratio(v["busy_mean_deserved_share"])),
             _e(fmt_ratio(v["mean_share"])), _e(fmt_ratio(v["mean_deserved_share"]))]
            for q, v in s["queues"].items()]


_QUEUE_HEADER = ("queue", "jobs", "never started", "mean wait", "p95 wait", "mean JCT", "GPU hours",
                 "mean share, busy window", "mean deserved share, busy window", "mean share, whole run",
                 "mean deserved share, whole run")


def _unfinished(s: dict[str, Any]) -> str:
    lines = end_lines(s)
    if not lines:
        return ""
    rows = [[_e(u["job"]), _e("running" if u["started"] else "never started"), _e(u.get("pending_reason") or "-"),
             _e(u.get("pending_hint") or "-"), _e(u["reason"] or "-")]
            for u in s["unfinished"]]
    return (f"<h2>Not finished</h2><p>{_e(lines[0])}</p>"
            + _table(("job", "state", "reason code", "hint", "scheduler's message"), rows)
            + "".join(f"<p class=meta>{_e(x.strip())}</p>" for x in lines[1 + len(rows):]))


def _stats_rows(st: dict[str, Any]) -> list[list[str]]:
    def ms(x: float | None) -> str:
        return "-" if x is None else f"{x * 1000:.1f} ms"

    return [[_e("virtual time"), _e(fmt_duration(st["virtual_seconds"]))],
            [_e("sessions"), _e(f"{st['sessions']:,}")],
            [_e("session latency p50 / p99 / max"),
             _e(f"{ms(st['session_p50_s'])} / {ms(st['session_p99_s'])} / {ms(st['session_max_s'])}")],
            [_e("samples"), _e(f"{st['samples']:,}")],
            [_e("wall time"), _e(f"{st['wall_seconds'] or 0:.1f} s")]]


_TOPOLOGY_ROWS: tuple[tuple[str, str, Any], ...] = (
    ("fragmentation_ratio", "topology fragmentation, share of GPU capacity (whole run)", fmt_ratio),
    ("busy_fragmentation_ratio", "topology fragmentation, share of GPU capacity (busy window)", fmt_ratio),
    ("mean_fragmented_gpus", "idle GPUs no pending job can use (time-weighted mean)", lambda x: f"{x:,.1f}"),
    ("mean_fragmented_domains", "domains holding them (time-weighted mean)", lambda x: f"{x:,.1f}"),
    ("multi_node_jobs", "jobs that ran on two nodes or more", str),
    ("multi_node_jobs_in_one_domain", "of them inside one domain", str),
    ("mean_span_domains", "domains per such job (mean)", lambda x: f"{x:.2f}"),
    ("max_span_domains", "domains per such job (max)", str),
    ("span_tiers", "span tier: jobs", lambda d: ", ".join(f"tier {t}: {n}" for t, n in d.items()) or "-"),
)


def _workflow_steps(w: dict[str, Any]) -> str:
    if w["kind"] == "CronJob":
        nxt = "-" if w.get("next_run") is None else fmt_duration(w["next_run"])
        return f"{w.get('schedule', '')}; {len(w['steps'])} run(s); next at {nxt}"
    layers: dict[int, list[str]] = {}
    for st in w["steps"]:
        layers.setdefault(st["layer"], []).append(f"{st['name']}: {st['phase'] or 'waiting'}")
    return " → ".join(", ".join(names) for _layer, names in sorted(layers.items()))


def render(runs: Sequence[tuple[str, dict[str, Any]]], cmp: dict[str, Any] | None,
           plots: Sequence[tuple[Path, str, str]], *, csv_files: Sequence[str] = (),
           plot_error: str | None = None) -> str:
    """The page for one run (``runs`` = [(label, summarize(run))]) or two (with ``cmp`` = compare's dict)."""
    first = runs[0][1]["stats"]
    parts: list[str] = []
    if len(runs) == 1:
        title = f"pyvolcano simulation — {first['name']}"
        parts.append(f"<h1>{_e(title)}</h1><p class=meta>config <b>{_e(first['config'])}</b> · seed "
                     f"{_e(first['seed'])}</p>")
        s = runs[0][1]["summary"]
        parts.append("<h2>Summary</h2>" + _table(("metric", "value"),
                                                 [[_e(t), _e(fmt_metric(k, s[k]))] for k, t in HEADLINE]))
        parts.append(_unfinished(runs[0][1]))
    else:
        (la, sa), (lb, sb) = runs[0], runs[1]
        title = f"pyvolcano what-if — {first['name']}: {la} vs {lb}"
        parts.append(f"<h1>{_e(title)}</h1><p class=meta>same workload and seed ({_e(first['seed'])}); "
                     f"<b>{_e(la)}</b> = {_e(sa['stats']['config'])}, <b>{_e(lb)}</b> = "
                     f"{_e(sb['stats']['config'])}. Δ = {_e(lb)} − {_e(la)}; green is better, red is worse.</p>")
        rows = []
        for k, t in HEADLINE:
            d = metric_diff(sa["summary"][k], sb["summary"][k])
            rows.append([_e(t), _e(fmt_metric(k, d["a"])), _e(fmt_metric(k, d["b"])), _delta_cell(k, d)])
        parts.append("<h2>Summary</h2>" + _table(("metric", la, lb, "Δ"), rows))
        if cmp is None:
            cmp = compare_summaries(sa, sb)
        qrows = []
        for q in sorted(set(sa["queues"]) | set(sb["queues"])):
            dw, ds = cmp["diff"][f"queue:{q}:mean_wait_s"], cmp["diff"][f"queue:{q}:mean_share"]
            qa, qb = sa["queues"].get(q, {}), sb["queues"].get(q, {})
            qrows.append([_e(q), _e(fmt_duration(dw["a"])), _e(fmt_duration(dw["b"])), _delta_cell("mean_wait_s", dw),
                          _e(fmt_ratio(ds["a"])), _e(fmt_ratio(ds["b"])), _delta_cell("mean_share", ds),
                          _e(fmt_ratio(qa.get("mean_deserved_share"))), _e(fmt_ratio(qb.get("mean_deserved_share")))])
        parts.append("<h2>Per-queue differences</h2>" + _table(
            ("queue", f"mean wait {la}", f"mean wait {lb}", "Δ wait", f"mean share {la}", f"mean share {lb}",
             "Δ share", f"deserved {la}", f"deserved {lb}"), qrows))
    parts.append("<h2>Plots</h2>")
    if plot_error:
        parts.append(f"<p class=note>{_e(plot_error)}</p>")
    for path, ptitle, caption in plots:
        parts.append(f'<figure id="{_e(path.stem)}"><img src="{_img(path)}" alt="{_e(ptitle)}">'
                     f"<figcaption><b>{_e(ptitle)}.</b> {_e(caption)}</figcaption></figure>")
    for label, s in runs:
        suffix = f" — {label}" if len(runs) > 1 else ""
        parts.append(f"<h2>Queues{_e(suffix)}</h2>" + _table(_QUEUE_HEADER, _queue_rows(s)))
    topo_runs = [(label, s["topology"]) for label, s in runs if "topology" in s]
    if topo_runs:
        parts.append("<h2>Network topology</h2>" + _table(
            ("metric", *(label for label, _ in topo_runs)),
            [[_e(t), *(_e(f(topo.get(k)) if topo.get(k) is not None else "-") for _, topo in topo_runs)]
             for k, t, f in _TOPOLOGY_ROWS])
            + "<p class=meta>A domain is a HyperNode of the lowest tier (a rack). Topology fragmentation = idle GPUs "
              "of the domains none of whose idle GPUs any pending job can use: none of its pods fits on their "
              "nodes, or its whole gang does not fit inside the HyperNode its networkTopology allows (the whole "
              "cluster without a hard constraint). A job's span tier is the tier of the lowest HyperNode holding "
              "all the nodes its pods ran on.</p>")
    for label, s in runs:
        if s.get("workflows"):
            suffix = f" — {label}" if len(runs) > 1 else ""
            parts.append(f"<h2>Workflows{_e(suffix)}</h2>" + _table(
                ("workflow", "phase", "steps / runs", "jobs", "first submitted", "last ended"),
                [[_e(f"{w['kind']} {w['name']}"), _e(w["phase"]), _e(_workflow_steps(w)), _e(w["jobs"]),
                  _e(fmt_duration(w["first_submit_s"])), _e(fmt_duration(w["last_end_s"]))]
                 for w in s["workflows"]])
                + "<p class=meta>A JobFlow's steps are listed layer by layer (a step after the steps it waits for), "
                  "each with its job's phase; a CronJob's with its schedule and next run.</p>")
    for label, s in runs:
        suffix = f" — {label}" if len(runs) > 1 else ""
        why = s["summary"].get("never_started_reasons") or {}
        if why:
            parts.append(f"<h2>Why jobs never started{_e(suffix)}</h2>"
                         + _table(("reason", "jobs"), [[_e(r), _e(n)] for r, n in why.items()])
                         + "<p class=meta>From each job's last scheduling session; the reason codes are "
                           "explained in pyvolcano's docs/reasons.md.</p>")
    for label, s in runs:
        suffix = f" — {label}" if len(runs) > 1 else ""
        parts.append(f"<h2>Scheduler{_e(suffix)}</h2>" + _table(("", ""), _stats_rows(s["stats"])))
        if s["stats"]["notes"]:
            parts.append("<ul>" + "".join(f"<li>{_e(n)}</li>" for n in s["stats"]["notes"]) + "</ul>")
    if csv_files:
        parts.append("<h2>Data</h2><p>CSV files next to this page: " +
                     ", ".join(f'<a href="{_e(f)}">{_e(f)}</a>' for f in csv_files) + ".</p>")
    parts.append("<h2>Definitions</h2><p class=meta>Times are virtual seconds from the start of the run. "
                 "wait = start (gang running) − submit; JCT = end − submit; means and p95 over jobs that "
                 "started (wait) or ended (JCT). Ratios and shares are time-weighted means over one window: "
                 "“whole run” = [0, makespan], “busy window” = [0, the last time a job started] (no job waited "
                 "after it; the rest of the run only drains running jobs). A deserved share is 0 while its "
                 "queue has no jobs. Shares are fractions of cluster GPU capacity. GPU hours = Σ allocated "
                 "GPUs × time.</p>")
    return (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{_e(title)}</title>"
            f"<style>{_CSS}</style></head><body>{''.join(parts)}</body></html>\n")
