"""Benchmark: a sweep of N trace runs on W local workers against one run alone (issue 18).

The runs are the Philly trace on its 552 machines with upstream's default configuration, one
per seed (0 .. N-1). By default the trace is a slice, its first ``--limit`` jobs by submit time
(a CSV written to a temporary directory), so the benchmark takes a few minutes; ``--whole``
runs the whole trace (82,247 jobs: about 15 minutes per run, so an hour or more for 8 runs on
2 workers). "One run alone" is ``pyvolcano simulate`` of the first cell in a fresh process,
timed from start to exit; the sweep is :func:`run_local` of all cells, timed from the first
worker's start to the last result. With W workers on W free cores the ideal ratio is N / W
(8 runs on 2 workers: 4.0×; the issue's target is at most 4.5×). On a machine busy with other
work the wall times depend on that work, so the CPU seconds of the run alone and of all the
sweep's workers are printed too, with the ratio they imply on W otherwise idle cores
(sweep CPU / W against one run's CPU). Not a test: it never fails on timing.

    python benchmarks/sweep.py [--limit 1500] [--runs 8] [--workers 2] [--whole]
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pyvolcano.simulator.sweep.executors import run_local
from pyvolcano.simulator.sweep.grid import SweepSpec
from pyvolcano.simulator.traces import packaged_trace


def write_slice(limit: int, out: Path) -> Path:
    """The first ``limit`` Philly jobs by submit time, as a Philly CSV."""
    with Path(packaged_trace("philly")).open(newline="") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], [r for r in rows[1:] if len(r) == len(rows[0])]
    at = header.index("timestamp")
    body.sort(key=lambda r: r[at])  # ISO timestamps: text order is time order
    with out.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(body[:limit])
    return out


def _children_cpu() -> float:
    """User + system CPU seconds of the finished child processes (a pool's workers are joined)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=1500, help="the first N jobs of the trace (default 1500)")
    ap.add_argument("--whole", action="store_true", help="the whole trace (about 15 minutes per run)")
    ap.add_argument("--runs", type=int, default=8, help="runs in the sweep, one seed each (default 8)")
    ap.add_argument("--workers", type=int, default=2, help="local worker processes (default 2)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.whole:
            trace = Path(packaged_trace("philly"))
            what = "whole Philly trace (82,247 jobs)"
        else:
            trace = write_slice(args.limit, Path(tmp) / f"philly-first-{args.limit}.csv")
            what = f"Philly, first {args.limit:,} jobs"
        spec = SweepSpec(traces=[trace], trace_format="philly", seeds=list(range(args.runs)), workers=args.workers)
        cells = spec.cells()
        print(f"{what} on 552 machines; {args.runs} runs on {args.workers} workers; {os.cpu_count()} CPUs; "
              f"load average {os.getloadavg()[0]:.2f}", flush=True)
        c0 = _children_cpu()
        t0 = time.perf_counter()
        alone = subprocess.run([sys.executable, "-m", "pyvolcano", "simulate", *cells[0].simulate_arguments(),
                                "-o", "json"], capture_output=True, text=True, check=False)
        one = time.perf_counter() - t0
        one_cpu = _children_cpu() - c0
        if alone.returncode != 0:
            sys.exit(f"simulate failed: {alone.stderr.strip()}")
        print(f"one run alone (pyvolcano simulate, fresh process): {one:.1f} s wall, {one_cpu:.1f} s CPU",
              flush=True)

        def done(outcome: object) -> None:
            print(f"  ... {time.perf_counter() - t1:.0f} s: cell {getattr(outcome, 'index', '?')} finished "
                  f"({getattr(outcome, 'seconds', 0.0):.1f} s)", file=sys.stderr, flush=True)

        c1 = _children_cpu()
        t1 = time.perf_counter()
        outcomes = run_local(cells, workers=args.workers, on_done=done)
        sweep = time.perf_counter() - t1
        sweep_cpu = _children_cpu() - c1
        failed = [o for o in outcomes if not o.ok]
        if failed:
            sys.exit(f"{len(failed)} cell(s) failed: {failed[0].error}")
        per_cell = [o.seconds for o in outcomes]
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"sweep of {args.runs} runs on {args.workers} workers: {sweep:.1f} s "
              f"(cells {min(per_cell):.1f} to {max(per_cell):.1f} s each)")
        print(f"CPU: {sweep_cpu:.1f} s in all the workers, {sweep_cpu / args.runs:.1f} s per run "
              f"(alone: {one_cpu:.1f} s)")
        print(f"ratio sweep / one run: {sweep / one:.2f}x wall; {sweep_cpu / args.workers / one_cpu:.2f}x from CPU "
              f"seconds on {args.workers} idle cores (ideal {args.runs / args.workers:.2f}x, target at most "
              f"{args.runs / args.workers + 0.5:.2f}x); peak RSS of one process {rss:.0f} MiB")


if __name__ == "__main__":
    main()
