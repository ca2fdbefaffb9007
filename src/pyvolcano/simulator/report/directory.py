"""The report directory: the CSV files, the plots and one self-contained ``report.html``.

Data flows one way: :mod:`.stats` computes every number once; :mod:`.csv_files`, :mod:`.plots`
and :mod:`.html_page` only write what it computed. :mod:`.plots` (matplotlib, the optional
``plots`` extra) is imported only here and only when a report is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyvolcano.simulator.metrics import RunMetrics
from pyvolcano.simulator.report import html_page
from pyvolcano.simulator.report.csv_files import (
    write_compare_csv,
    write_jobs_csv,
    write_queues_csv,
    write_timeseries_csv,
)
from pyvolcano.simulator.report.run_data import RUN_DATA_FILE, write_run_data
from pyvolcano.simulator.report.stats import (
    RunView,
    compare_summaries,
    run_label,
    run_labels,
    run_series,
    summarize_series,
)

__all__ = ["write_report"]


def write_report(run: RunMetrics, out_dir: Path, *, other: RunMetrics | None = None) -> list[Path]:
    """Write the report directory and return the files written.

    One run: ``jobs.csv``, ``queues.csv``, ``timeseries.csv``, ``allocation.png``,
    ``queue_share.png``, ``wait_cdf.png``, ``jct_cdf.png``, ``report.html``, and ``run.json``
    (:mod:`.run_data`: the run's own data, which ``pyvolcano dashboard --report DIR`` reads;
    with ``other``, of the first run). With ``other``:
    the three CSVs once per run, suffixed with the run's label (``jobs-<label>.csv``, …; see
    :func:`run_labels`), ``compare.csv`` (the ``diff`` of :func:`compare`), the four plots
    showing both runs, ``compare_queues.png``, and the comparison in ``report.html``. The
    HTML embeds every plot as a data URI, so the one file shows everything. Without
    matplotlib the plots are skipped and the HTML says so.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    pairs = [(run, run_label(run.config_name))] if other is None else list(zip((run, other), run_labels(run, other)))
    views: list[RunView] = []
    for r, label in pairs:
        ser = run_series(r)
        views.append(RunView(label, r, ser, summarize_series(r, ser)))
    cmp: dict[str, Any] | None = None
    for v in views:
        suffix = "" if other is None else f"-{v.label}"
        written += [write_jobs_csv(v.run, out_dir / f"jobs{suffix}.csv"),
                    write_queues_csv(v.summary, out_dir / f"queues{suffix}.csv"),
                    write_timeseries_csv(v.series, out_dir / f"timeseries{suffix}.csv")]
    if other is not None:
        cmp = compare_summaries(views[0].summary, views[1].summary)
        written.append(write_compare_csv(cmp, out_dir / "compare.csv"))
    plots: list[tuple[Path, str, str]] = []   # (file, title, caption)
    plot_error: str | None = None
    try:
        import pyvolcano.simulator.report.plots as plotmod
    except ImportError as e:  # matplotlib missing: the optional [plots] extra
        plot_error = f"plots skipped: {e} (install pyvolcano[plots])"
    else:
        plots = plotmod.write_plots(views, out_dir)
        written += [p for p, _, _ in plots]
    written.append(write_run_data(run, out_dir / RUN_DATA_FILE))
    html = out_dir / "report.html"
    html.write_text(html_page.render([(v.label, v.summary) for v in views], cmp, plots,
                                       csv_files=[p.name for p in written if p.suffix == ".csv"],
                                       plot_error=plot_error), encoding="utf-8")
    written.append(html)
    return written
