"""``metrics.png``: the headline numbers of every cell of a sweep, side by side.

Importing this module imports matplotlib (the optional ``plots`` extra); the sweep's report
imports it lazily. One panel per metric, one horizontal bar per cell that finished, in cell
order, so cells that differ by one axis sit next to each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

__all__ = ["plot_metrics"]

_PANELS = (("mean_wait_s", "mean wait"), ("p95_wait_s", "p95 wait"), ("mean_jct_s", "mean JCT"),
           ("makespan_s", "makespan"), ("gpu_allocation_ratio", "GPU allocation, whole run"),
           ("gpu_fragmentation_ratio", "GPU fragmentation"))


def _unit(key: str, values: Sequence[float]) -> tuple[str, float]:
    """Ratios as percentages; durations in hours, minutes or seconds by the largest value."""
    if not key.endswith("_s"):
        return "", 1.0
    top = max(values, default=0.0)
    return ("hours", 3600.0) if top >= 2 * 3600 else ("minutes", 60.0) if top >= 120 else ("seconds", 1.0)


def plot_metrics(rows: Sequence[dict[str, Any]], path: Path) -> Path:
    ok = [r for r in rows if r["status"] == "ok"]
    labels = [f"{r['cell']} {r['config']} · s{r['seed']} · {r['input']}"
              + (f" · {r['cluster']}" if r["cluster"] != "-" else "") for r in ok]
    fig = Figure(figsize=(16, 1.6 + 0.28 * len(ok) * 2), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, 3, sharey=True).ravel()
    y = list(range(len(ok)))
    for ax, (key, title) in zip(axes, _PANELS):
        raw = [float(r[key] or 0.0) for r in ok]
        unit, div = _unit(key, raw)
        ax.barh(y, [v / div for v in raw], color="tab:blue")
        ax.set_title(f"{title} ({unit})" if unit else title, fontsize=10)
        ax.grid(True, axis="x", alpha=0.3)
        if not unit:
            ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    axes[0].set_yticks(y, labels, fontsize=8)
    axes[3].set_yticks(y, labels, fontsize=8)
    axes[0].invert_yaxis()
    fig.suptitle("Sweep: headline numbers per cell", fontsize=12)
    fig.savefig(path, dpi=100, facecolor="white")
    return path
