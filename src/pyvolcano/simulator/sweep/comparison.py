"""The merged results of a sweep: one row per cell, one per group of seeds, and their files.

* :func:`cell_rows` — each cell's place in the grid, its status (``ok`` or ``failed`` with the
  error) and the headline numbers of its document (:data:`METRICS`);
* :func:`group_rows` — the cells that differ only by seed, averaged (mean over the cells that
  succeeded; ``runs`` says how many);
* :func:`write_csv` — those rows as CSV; :func:`write_report` — the sweep's report directory:
  ``sweep.csv``, ``groups.csv``, ``cells/<id>/`` (each cell's ``result.json``, the bytes
  ``simulate -o json`` prints, and, when the cells wrote them, simulate's report files),
  ``metrics.png`` (the headline numbers of every cell side by side) and ``report.html``,
  which shows the tables and every cell's plots side by side, one row of plots per kind.

Rows are built from the documents only, so the tables, the CSV and the page agree.
"""

from __future__ import annotations

import csv
import html
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyvolcano.simulator.report.formatting import fmt_metric
from pyvolcano.simulator.sweep.cell import CellOutcome
from pyvolcano.simulator.sweep.grid import Cell

__all__ = ["COORDINATES", "METRICS", "PLOTS", "cell_rows", "group_rows", "write_csv", "write_report"]

COORDINATES = ("cell", "config", "seed", "input", "cluster")
METRICS: tuple[tuple[str, str], ...] = (
    ("jobs", "JOBS"), ("completed", "COMPLETED"), ("never_started", "NEVER STARTED"),
    ("mean_wait_s", "MEAN WAIT"), ("p95_wait_s", "P95 WAIT"), ("mean_jct_s", "MEAN JCT"), ("p95_jct_s", "P95 JCT"),
    ("gpu_allocation_ratio", "GPU ALLOC"), ("cpu_allocation_ratio", "CPU ALLOC"),
    ("gpu_fragmentation_ratio", "GPU FRAG"), ("makespan_s", "MAKESPAN"), ("preemptions", "PREEMPTIONS"),
)
PLOTS = (("allocation.png", "Cluster allocation over time"), ("queue_share.png", "Queue share vs deserved"),
         ("wait_cdf.png", "Wait-time CDF per queue"), ("jct_cdf.png", "Job completion time CDF"))


def cell_rows(cells: Sequence[Cell], outcomes: Sequence[CellOutcome], *, timings: bool = False) -> list[dict[str, Any]]:
    rows = []
    for cell, out in zip(cells, outcomes):
        row: dict[str, Any] = {**cell.coordinates(), "status": "ok" if out.ok else "failed"}
        summary = (out.document or {}).get("summary", {})
        for key, _ in METRICS:
            row[key] = summary.get(key)
        row["sessions"] = (out.document or {}).get("stats", {}).get("sessions")
        if timings:
            row["wall_seconds"] = round(out.seconds, 3)
        row["error"] = out.error
        rows.append(row)
    return rows


def group_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Cells that differ only by seed: the mean of each metric over those that succeeded."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["config"], r["input"], r["cluster"]), []).append(r)
    out = []
    for (config, inp, cluster), members in groups.items():
        ok = [m for m in members if m["status"] == "ok"]
        row: dict[str, Any] = {"config": config, "input": inp, "cluster": cluster,
                               "seeds": ",".join(str(m["seed"]) for m in members), "runs": len(ok),
                               "failed": len(members) - len(ok)}
        for key, _ in METRICS:
            vals = [float(m[key]) for m in ok if m[key] is not None]
            row[key] = sum(vals) / len(vals) if vals else None
        out.append(row)
    return out


def _cell(v: object) -> object:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.10g}" if math.isfinite(v) else ""
    return v


def write_csv(rows: Sequence[dict[str, Any]], path: Path) -> Path:
    with Path(path).open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        if rows:
            w.writerow(list(rows[0]))
        for r in rows:
            w.writerow([_cell(v) for v in r.values()])
    return Path(path)


def document_text(document: dict[str, Any]) -> str:
    """A document as ``simulate -o json`` prints it: one line of JSON."""
    return json.dumps(document) + "\n"


def write_report(cells: Sequence[Cell], outcomes: Sequence[CellOutcome], out_dir: Path, *,
                 documents: Sequence[dict[str, Any] | None], timings: bool = False) -> list[Path]:
    """Write the sweep's report directory (see the module docstring); ``documents`` are the
    cells' documents as printed (without timings unless ``timings``)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for cell, out, doc in zip(cells, outcomes, documents):
        cdir = out_dir / "cells" / cell.id
        cdir.mkdir(parents=True, exist_ok=True)
        if doc is not None:
            p = cdir / "result.json"
            p.write_text(document_text(doc), encoding="utf-8")
            written.append(p)
        else:
            p = cdir / "error.txt"
            p.write_text((out.error or "") + "\n" + (out.detail or ""), encoding="utf-8")
            written.append(p)
        for name, data in sorted(out.files.items()):
            (cdir / name).write_bytes(data)
            written.append(cdir / name)
    rows = cell_rows(cells, outcomes, timings=timings)
    groups = group_rows(rows)
    written.append(write_csv(rows, out_dir / "sweep.csv"))
    written.append(write_csv(groups, out_dir / "groups.csv"))
    plot_error = None
    metrics_png: Path | None = None
    try:
        from pyvolcano.simulator.sweep.plots import plot_metrics
    except ImportError as e:
        plot_error = f"plots skipped: {e} (install pyvolcano[plots])"
    else:
        if any(r["status"] == "ok" for r in rows):
            metrics_png = plot_metrics(rows, out_dir / "metrics.png")
            written.append(metrics_png)
    page = out_dir / "report.html"
    page.write_text(render_page(cells, outcomes, rows, groups, metrics_png=metrics_png, plot_error=plot_error),
                    encoding="utf-8")
    written.append(page)
    return written


_CSS = """
body { font-family: -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1800px; padding: 0 1.5em; color: #222; line-height: 1.4; }
h2 { margin-top: 1.8em; border-bottom: 1px solid #ddd; } .meta { color: #666; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.9em; }
th, td { padding: 0.25em 0.7em; border-bottom: 1px solid #eee; text-align: right; }
th { background: #f5f5f5; } td.t, th.t { text-align: left; } .failed { color: #c62828; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 1em; }
figure { margin: 0; } figure img { width: 100%; border: 1px solid #ddd; }
figcaption { color: #555; font-size: 0.85em; }
"""
_TEXT_COLUMNS = {"cell", "config", "input", "cluster", "status", "error", "seeds"}


def _e(x: object) -> str:
    return html.escape(str(x))


def _html_table(rows: Sequence[dict[str, Any]], link: bool = False) -> str:
    if not rows:
        return ""
    cols = list(rows[0])
    head = "".join(f'<th class="{"t" if c in _TEXT_COLUMNS else ""}">{_e(c)}</th>' for c in cols)
    body = []
    for r in rows:
        cells = []
        for c in cols:
            v = r[c]
            if c in dict(METRICS):
                text = _e(fmt_metric(c, v) if v is not None else "-")
            elif c == "cell" and link and r["status"] == "ok":
                text = f'<a href="cells/{_e(v)}/{"report.html"}">{_e(v)}</a>'
            else:
                text = _e("-" if v is None else v)
            cls = "t" if c in _TEXT_COLUMNS else ""
            if c == "status" and v == "failed":
                cls += " failed"
            cells.append(f'<td class="{cls}">{text}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def render_page(cells: Sequence[Cell], outcomes: Sequence[CellOutcome], rows: Sequence[dict[str, Any]],
                groups: Sequence[dict[str, Any]], *, metrics_png: Path | None, plot_error: str | None) -> str:
    failed = [r for r in rows if r["status"] == "failed"]
    title = f"pyvolcano sweep — {len(rows)} cells" + (f", {len(failed)} failed" if failed else "")
    parts = [f"<h1>{_e(title)}</h1>",
             "<p class=meta>Each cell is one <code>pyvolcano simulate</code> run; its document "
             "(<code>cells/ID/result.json</code>) is the one <code>simulate -o json</code> prints for the same "
             "options. Data: <a href=sweep.csv>sweep.csv</a> (cells), <a href=groups.csv>groups.csv</a> "
             "(means over seeds).</p>",
             "<h2>Cells</h2>" + _html_table(rows, link=True)]
    if len(groups) < len(rows):
        parts.append("<h2>Means over seeds</h2>" + _html_table(groups))
    if failed:
        parts.append("<h2>Failed cells</h2><ul>" + "".join(
            f"<li><b>{_e(r['cell'])}</b> ({_e(c.label)}): {_e(r['error'])}</li>"
            for r, c in zip(rows, cells) if r["status"] == "failed") + "</ul>")
    parts.append("<h2>Plots</h2>")
    if plot_error:
        parts.append(f"<p class=meta>{_e(plot_error)}</p>")
    if metrics_png is not None:
        parts.append(f'<figure><img src="{_e(metrics_png.name)}" alt="headline metrics per cell">'
                     "<figcaption>Headline numbers of every cell that finished.</figcaption></figure>")
    for name, ptitle in PLOTS:
        figures = [f'<figure><a href="cells/{_e(c.id)}/report.html"><img src="cells/{_e(c.id)}/{_e(name)}" '
                   f'alt="{_e(ptitle)} — {_e(c.label)}"></a><figcaption><b>{_e(c.id)}</b> {_e(c.label)}'
                   "</figcaption></figure>"
                   for c, o in zip(cells, outcomes) if name in o.files]
        if figures:
            parts.append(f"<h3>{_e(ptitle)}</h3><div class=grid>{''.join(figures)}</div>")
    return (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{_e(title)}</title>"
            f"<style>{_CSS}</style></head><body>{''.join(parts)}</body></html>\n")
