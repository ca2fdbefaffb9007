"""Measure examples/recommended.conf against upstream's chart configuration (docs/recommended.md).

Usage::

    python benchmarks/recommended.py OUT_DIR [--seeds 0-2] [--days 3] [--workers 2] [--kalos]
    python benchmarks/recommended.py --summarise REPORT [--summarise REPORT ...]

Writes into OUT_DIR the contended Philly days (the calendar days with the most GPUs in
multi-node gangs after the built-in one, each a philly.csv slice), a machine list of the
built-in scenario's 16 eight-GPU machines, runs ``pyvolcano sweep`` over {chart, recommended}
× seeds on the built-in scenario and on those days (and on the Kalos trace with ``--kalos``),
then prints a Markdown table per trace (means over seeds) and draws ``recommended.png``.

``--summarise REPORT`` prints the same table for sweeps run by hand (such as the whole Philly
trace, ``pyvolcano sweep --trace philly ... --report REPORT -o json > REPORT.json``): each
REPORT is a sweep's ``--report`` directory with its ``-o json`` output beside it as
``REPORT.json``; nothing is run or written.

A slice of philly.csv gives each virtual cluster the weight of its share of the slice's
GPU-time, as a user who cuts a day out of the file gets (the built-in scenario weighs by the
whole file).
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from pyvolcano.simulator.traces import philly
from pyvolcano.simulator.traces._common import packaged

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = {"chart": ROOT / "examples" / "volcano-scheduler.conf",
           "recommended": ROOT / "examples" / "recommended.conf"}
GANG_GPUS = 8
MACHINES = 16


def contended_days(count: int) -> list[tuple[str, list[philly.Record]]]:
    """The ``count`` days after the built-in one by GPUs in multi-node gangs, with their rows."""
    _, recs = philly.read(packaged("philly", "philly.csv"))
    by_day: dict[float, list[philly.Record]] = {}
    for r in recs:
        by_day.setdefault(r.at // 86400 * 86400, []).append(r)
    ranked = sorted(by_day.items(), key=lambda kv: (-sum(r.gpus for r in kv[1] if r.gpus > GANG_GPUS), kv[0]))
    out = []
    for day, rows in ranked[1:1 + count]:
        out.append((datetime.fromtimestamp(day, tz=UTC).strftime("%Y-%m-%d"), rows))
    return out


def write_inputs(out: Path, days: int) -> tuple[list[Path], Path]:
    out.mkdir(parents=True, exist_ok=True)
    traces = []
    for name, rows in contended_days(days):
        path = out / f"philly-{name}.csv"
        with path.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["timestamp", "duration", "num_gpus", "cluster"])
            for r in rows:
                at = datetime.fromtimestamp(r.at, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
                w.writerow([at, r.duration, r.gpus, r.vc])
        traces.append(path)
    machines = out / "machines-16.csv"
    with packaged("philly", "revised_machine_list.csv").open() as src, machines.open("w", newline="") as dst:
        reader = csv.reader(src)
        w = csv.writer(dst)
        w.writerow(next(reader))
        kept = 0
        for row in reader:
            if kept < MACHINES and int(row[2]) == 8:
                w.writerow(row)
                kept += 1
    return traces, machines


def sweep(out: Path, seeds: str, workers: int, extra: list[str]) -> None:
    cmd = [sys.executable, "-m", "pyvolcano", "sweep", "--seed", seeds, "--workers", str(workers),
           "--report", str(out), "-o", "json"]
    for path in CONFIGS.values():
        cmd += ["--config", str(path)]
    cmd += extra
    with (out.parent / f"{out.name}.json").open("w") as fh:
        subprocess.run(cmd, check=False, stdout=fh)


def cell_figures(cell_dir: Path) -> dict[str, float]:
    result = json.loads((cell_dir / "result.json").read_text())
    s = result["summary"]
    jobs = list(csv.DictReader((cell_dir / "jobs.csv").open()))
    waits = [float(j["wait_s"]) for j in jobs if j["wait_s"]]
    gangs = [float(j["wait_s"]) for j in jobs if j["wait_s"] and float(j["gpus"]) > GANG_GPUS]
    out = {"jobs": float(len(jobs)), "started": float(len(waits)),
           "mean_wait_h": statistics.mean(waits) / 3600 if waits else float("nan"),
           "p95_wait_h": (s["p95_wait_s"] or 0.0) / 3600,
           "gang_mean_wait_h": statistics.mean(gangs) / 3600 if gangs else float("nan"),
           "gang_max_wait_h": max(gangs) / 3600 if gangs else float("nan"),
           "gangs": float(len(gangs)), "never_started": float(s["never_started"]),
           "busy_gpu_allocation": s["busy_gpu_allocation_ratio"]}
    topo = result.get("topology")
    if topo:
        out["topology_fragmentation"] = topo["busy_fragmentation_ratio"]
        multi = topo["multi_node_jobs"]
        out["in_one_rack"] = topo["multi_node_jobs_in_one_domain"] / multi if multi else float("nan")
        out["racks_per_gang"] = topo["mean_span_domains"] if multi else float("nan")
    for q, qs in result["queues"].items():
        if qs.get("busy_mean_deserved_share"):
            out[f"share:{q}"] = qs["busy_mean_share"] / qs["busy_mean_deserved_share"]
    return out


def collect(report: Path) -> dict[tuple[str, str], list[dict[str, float]]]:
    doc = json.loads((report.parent / f"{report.name}.json").read_text())
    groups: dict[tuple[str, str], list[dict[str, float]]] = {}
    for cell in doc["cells"]:
        if cell["status"] != "ok":
            continue
        config = Path(cell["config"]).stem if cell["config"] != "default" else "default"
        name = {"volcano-scheduler": "chart"}.get(config, config)
        trace = Path(cell["input"]).stem if cell.get("input") else "built-in day"
        groups.setdefault((trace, name), []).append(cell_figures(report / "cells" / cell["cell"]))
    return groups


def _mean(runs: list[dict[str, float]], key: str) -> float:
    return statistics.mean(r[key] for r in runs)


def table(groups: dict[tuple[str, str], list[dict[str, float]]]) -> str:
    lines = ["| trace | configuration | runs | mean wait (h) | p95 wait (h) | gangs | gang mean wait (h) | "
             "gang max wait (h) | busy GPU allocation | queues below 90 % of deserved (share/deserved) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for (trace, name), runs in sorted(groups.items()):
        def mean(k: str, runs: list[dict[str, float]] = runs) -> float:
            return _mean(runs, k)
        shares = sorted({k for r in runs for k in r if k.startswith("share:")})
        low = [f"{k[6:]} {statistics.mean(r.get(k, 0.0) for r in runs):.2f}" for k in shares
               if statistics.mean(r.get(k, 0.0) for r in runs) < 0.9]
        lines.append(f"| {trace} | {name} | {len(runs)} | {mean('mean_wait_h'):.2f} | {mean('p95_wait_h'):.2f} | "
                     f"{int(mean('gangs'))} | {mean('gang_mean_wait_h'):.2f} | {mean('gang_max_wait_h'):.2f} | "
                     f"{mean('busy_gpu_allocation'):.3f} | {', '.join(low) or 'none'} |")
    return "\n".join(lines)


def topology_table(groups: dict[tuple[str, str], list[dict[str, float]]]) -> str:
    """The runs on a cluster with HyperNodes: jobs started, waits, allocation and placement."""
    lines = ["| workload | configuration | runs | started | mean wait (h) | p95 wait (h) | busy GPU allocation | "
             "gangs inside one rack | racks per gang | topology fragmentation (busy) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for (trace, name), runs in sorted(groups.items()):
        if "topology_fragmentation" not in runs[0]:
            continue

        def mean(k: str, runs: list[dict[str, float]] = runs) -> float:
            return _mean(runs, k)
        lines.append(f"| {trace} | {name} | {len(runs)} | {mean('started'):.1f} of {int(mean('jobs'))} | "
                     f"{mean('mean_wait_h'):.2f} | {mean('p95_wait_h'):.2f} | {mean('busy_gpu_allocation'):.3f} | "
                     f"{mean('in_one_rack'):.1%} | {mean('racks_per_gang'):.2f} | "
                     f"{mean('topology_fragmentation'):.2%} |")
    return "\n".join(lines)


def figure(groups: dict[tuple[str, str], list[dict[str, float]]], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    traces = sorted({t for t, _ in groups})
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for ax, key, title in zip(axes, ("gang_mean_wait_h", "mean_wait_h", "busy_gpu_allocation"),
                              ("mean wait of gangs > 8 GPUs (h)", "mean wait of all jobs (h)",
                               "GPU allocation, busy window"), strict=True):
        for k, name in enumerate(("chart", "recommended")):
            vals = [statistics.mean(r[key] for r in groups.get((t, name), [{key: float("nan")}])) for t in traces]
            ax.bar([i + 0.4 * k for i in range(len(traces))], vals, width=0.4, label=name)
        ax.set_xticks([i + 0.2 for i in range(len(traces))], traces, rotation=20, ha="right", fontsize=8)
        ax.set_title(title, fontsize=10)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, nargs="?")
    ap.add_argument("--seeds", default="0-2")
    ap.add_argument("--days", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--kalos", action="store_true")
    ap.add_argument("--skip-runs", action="store_true", help="only summarise the sweeps already in OUT")
    ap.add_argument("--summarise", type=Path, action="append", metavar="REPORT",
                    help="only print the table of these sweep reports (REPORT.json beside each)")
    args = ap.parse_args(argv)
    if args.summarise:
        summary: dict[tuple[str, str], list[dict[str, float]]] = {}
        for rep in args.summarise:
            summary.update(collect(rep))
        print(table(summary))
        if any("topology_fragmentation" in runs[0] for runs in summary.values()):
            print()
            print(topology_table(summary))
        return 0
    if args.out is None:
        ap.error("OUT is required unless --summarise is given")
    out: Path = args.out
    traces, machines = write_inputs(out, args.days)
    reports = [out / "builtin", out / "philly-days"] + ([out / "kalos"] if args.kalos else [])
    if not args.skip_runs:
        sweep(reports[0], args.seeds, args.workers, [])
        days = [a for t in traces for a in ("--trace", str(t))] + ["--nodes", str(machines)]
        sweep(reports[1], args.seeds, args.workers, days)
        if args.kalos:
            sweep(reports[2], args.seeds, args.workers, ["--trace", "kalos"])
    groups: dict[tuple[str, str], list[dict[str, float]]] = {}
    for rep in reports:
        if (rep.parent / f"{rep.name}.json").exists():
            groups.update(collect(rep))
    print(table(groups))
    figure(groups, out / "recommended.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
