"""Summaries and report files (CSV, JSON, PNG) of FGD experiment runs.

``summarize`` reduces runs to per-policy means and standard deviations at the arrived
workloads the paper tabulates; ``PUBLISHED`` holds the paper artifact's expected results
(10-seed means from ``experiments/analysis/expected_results/analysis_{allo,frag}_discrete.csv``,
default trace, tune 1.3) for comparison. ``write_report`` writes:

* ``curves.csv`` — every run's curve (trace, policy, seed, arrived, allocated, fragmentation);
* ``summary.csv`` — per policy, ours vs published where known;
* ``runs.json`` — the same object ``pyvolcano experiment fgd -o json`` prints;
* ``allocation.png`` / ``fragmentation.png`` — mean curves per policy, like the paper's
  Fig. 9a (GPU allocation ratio) and Fig. 7a (fragmentation amount) against arrived workload.

matplotlib is imported only inside :func:`plot_curves` (the optional ``plots`` extra).
"""

from __future__ import annotations

import csv
import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pyvolcano.gpu.experiment import RunResult
from pyvolcano.gpu.policies import POLICIES

__all__ = [
    "ALLOCATION_POINTS",
    "FRAGMENTATION_POINTS",
    "PUBLISHED",
    "PUBLISHED_FRAGMENTATION",
    "PolicySummary",
    "plot_curves",
    "runs_json",
    "summarize",
    "write_report",
]

DEFAULT_TRACE: Final = "openb_pod_list_default"
ALLOCATION_POINTS: Final = (90, 95, 100, 130)
FRAGMENTATION_POINTS: Final = (50, 90)
# GPU allocation ratio (%) at arrived workload (%), 10-seed means, default trace, tune 1.3.
PUBLISHED: Final[dict[str, dict[int, float]]] = {
    "random": {90: 85.02, 95: 85.72, 100: 86.30, 130: 87.47},
    "dotprod": {90: 89.98, 95: 90.58, 100: 90.62, 130: 90.85},
    "gpuclustering": {90: 89.98, 95: 91.60, 100: 91.65, 130: 91.88},
    "gpupacking": {90: 89.98, 95: 91.74, 100: 91.78, 130: 92.00},
    "bestfit": {90: 89.99, 95: 92.82, 100: 92.86, 130: 93.08},
    "fgd": {90: 89.98, 95: 94.90, 100: 95.23, 130: 95.39},
}
# Fragmentation amount (% of GPU capacity) at arrived workload (%), same runs.
PUBLISHED_FRAGMENTATION: Final[dict[str, dict[int, float]]] = {
    "random": {50: 15.10, 90: 14.48},
    "dotprod": {50: 12.09, 90: 9.43},
    "gpuclustering": {50: 12.11, 90: 8.44},
    "gpupacking": {50: 12.01, 90: 8.37},
    "bestfit": {50: 10.81, 90: 7.41},
    "fgd": {50: 8.93, 90: 5.00},
}


@dataclass(frozen=True)
class PolicySummary:
    """One policy over its seeds; percentages of GPU capacity."""

    trace: str
    policy: str
    runs: int
    allocated: dict[int, tuple[float, float]]       # arrived % -> (mean, std)
    fragmentation: dict[int, tuple[float, float]]
    seconds: float
    failed: float
    tune: float = 1.3

    @property
    def comparable(self) -> bool:
        """Whether the published figures apply (default trace, tune 1.3)."""
        return self.trace == DEFAULT_TRACE and abs(self.tune - 1.3) < 1e-9

    def published(self, percent: int) -> float | None:
        if not self.comparable:
            return None
        return PUBLISHED.get(self.policy, {}).get(percent)

    def published_fragmentation(self, percent: int) -> float | None:
        if not self.comparable:
            return None
        return PUBLISHED_FRAGMENTATION.get(self.policy, {}).get(percent)

    def unallocated_gpus(self, capacity: int, percent: int = 100) -> float | None:
        point = self.allocated.get(percent)
        return None if point is None else (1 - point[0] / 100.0) * capacity


def _mean_std(values: list[float]) -> tuple[float, float]:
    if not values:
        return (float("nan"), float("nan"))
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return (statistics.fmean(values), std)


def summarize(results: Sequence[RunResult]) -> list[PolicySummary]:
    """Per (trace, policy) summaries, policies in the paper's order."""
    keys = sorted({(r.trace, r.policy) for r in results},
                  key=lambda k: (k[0], POLICIES.index(k[1]) if k[1] in POLICIES else len(POLICIES), k[1]))
    out: list[PolicySummary] = []
    for trace, policy in keys:
        runs = [r for r in results if r.trace == trace and r.policy == policy]

        def at(percent: int, field: str, runs: list[RunResult] = runs) -> tuple[float, float]:
            vals = [getattr(p, field) * 100.0 for r in runs if (p := r.at(percent)) is not None]
            return _mean_std(vals)

        out.append(PolicySummary(
            trace=trace,
            policy=policy,
            runs=len(runs),
            allocated={a: at(a, "allocated") for a in (50, *ALLOCATION_POINTS)},
            fragmentation={a: at(a, "fragmentation") for a in FRAGMENTATION_POINTS},
            seconds=statistics.fmean(r.seconds for r in runs),
            failed=statistics.fmean(r.failed for r in runs),
            tune=runs[0].tune,
        ))
    return out


def runs_json(results: Sequence[RunResult]) -> dict[str, Any]:
    return {"runs": [r.to_json() for r in results]}


def write_curves_csv(results: Sequence[RunResult], path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        w = csv.writer(handle)
        w.writerow(["trace", "policy", "seed", "arrived", "allocated", "fragmentation"])
        for r in results:
            for p in r.curve:
                w.writerow([r.trace, r.policy, r.seed, f"{p.arrived:.2f}", f"{p.allocated:.6f}",
                            f"{p.fragmentation:.6f}"])


def write_summary_csv(summaries: Sequence[PolicySummary], path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        w = csv.writer(handle)
        header = ["trace", "policy", "runs"]
        for a in ALLOCATION_POINTS:
            header += [f"allocated_{a}_mean", f"allocated_{a}_std", f"allocated_{a}_published"]
        for a in FRAGMENTATION_POINTS:
            header += [f"fragmentation_{a}_mean", f"fragmentation_{a}_published"]
        header += ["failed_pods_mean", "seconds_mean"]
        w.writerow(header)

        def fmt(v: float | None) -> str:
            return "" if v is None else f"{v:.2f}"

        for s in summaries:
            row: list[str | int] = [s.trace, s.policy, s.runs]
            for a in ALLOCATION_POINTS:
                mean, std = s.allocated[a]
                row += [fmt(mean), fmt(std), fmt(s.published(a))]
            for a in FRAGMENTATION_POINTS:
                row += [fmt(s.fragmentation[a][0]), fmt(s.published_fragmentation(a))]
            row += [f"{s.failed:.1f}", f"{s.seconds:.3f}"]
            w.writerow(row)


def _mean_curve(runs: Sequence[RunResult], field: str) -> tuple[list[float], list[float]]:
    by_x: dict[float, list[float]] = {}
    for r in runs:
        for p in r.curve:
            by_x.setdefault(round(p.arrived * 100.0, 6), []).append(getattr(p, field) * 100.0)
    xs = sorted(by_x)
    return xs, [statistics.fmean(by_x[x]) for x in xs]


def plot_curves(results: Sequence[RunResult], allocation_png: Path, fragmentation_png: Path) -> None:
    """Mean curves per policy (raises ImportError without matplotlib).

    The allocation figure has the full range and a zoom on 80–130 % arrived, where the
    policies part ways.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    policies = [s.policy for s in summarize(results)]
    curves = {p: {f: _mean_curve([r for r in results if r.policy == p], f) for f in ("allocated", "fragmentation")}
              for p in policies}
    xlabel = "Arrived workload (% of GPU capacity)"

    fig, axes = plt.subplots(1, 2, figsize=(10.0, 4.2), dpi=120)
    for ax, (x0, y0) in zip(axes, ((0.0, 0.0), (80.0, 80.0))):
        for p in policies:
            xs, ys = curves[p]["allocated"]
            ax.plot(xs, ys, label=p, linewidth=1.4)
        ax.plot([0, 100], [0, 100], color="0.7", linewidth=0.8, linestyle="--")
        ax.set_xlim(left=x0)
        ax.set_ylim(y0, 100)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("GPU allocation ratio (%)")
        ax.grid(True, linewidth=0.4, alpha=0.6)
    axes[0].set_title("GPU allocation (cf. paper Fig. 9a)")
    axes[1].set_title("zoom")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(allocation_png)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    for p in policies:
        xs, ys = curves[p]["fragmentation"]
        ax.plot(xs, ys, label=p, linewidth=1.4)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("Fragmentation (% of GPU capacity)")
    ax.set_title("GPU fragmentation (cf. paper Fig. 7a)")
    ax.grid(True, linewidth=0.4, alpha=0.6)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(fragmentation_png)
    plt.close(fig)


def write_report(results: Sequence[RunResult], directory: Path) -> tuple[list[Path], str | None]:
    """Write every report file; returns the paths written and a warning if plots were skipped."""
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    curves = directory / "curves.csv"
    write_curves_csv(results, curves)
    written.append(curves)
    summary = directory / "summary.csv"
    write_summary_csv(summarize(results), summary)
    written.append(summary)
    runs = directory / "runs.json"
    runs.write_text(json.dumps(runs_json(results)) + "\n", encoding="utf-8")
    written.append(runs)
    alloc_png, frag_png = directory / "allocation.png", directory / "fragmentation.png"
    try:
        plot_curves(results, alloc_png, frag_png)
    except ImportError:
        return written, "matplotlib is not installed (pip install 'pyvolcano[plots]'); PNG plots skipped"
    written += [alloc_png, frag_png]
    return written, None
