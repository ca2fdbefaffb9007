"""Benchmark: the Philly trace through the simulator (issue: trace-driven simulator).

Prints wall seconds, simulated jobs per wall second, sessions, session latency p50/p99 and
peak RSS for the Philly trace (philly.csv, 82,247 jobs) on its 552 machines with upstream's
default configuration, and the job/timeline hash (SHA-256 of the result's JSON without its
wall seconds, plus the timeline), which must not change with a change that keeps decisions.
``--limit N`` runs only the first N jobs (by submit time) for a quicker measurement. Not a
test: it never fails on timing.

    python benchmarks/philly_trace.py [--limit 5000]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import sys
import time

import numpy as np

from pyvolcano.conf import default_configuration
from pyvolcano.runtime.registry import default_registry
from pyvolcano.simulator.runtime import Simulation
from pyvolcano.simulator.traces import load_trace


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=None, help="only the first N jobs")
    args = ap.parse_args()
    t0 = time.perf_counter()
    trace = load_trace("philly", limit=args.limit)
    load = time.perf_counter() - t0
    last = [time.perf_counter()]

    def progress(now: float, done: int, total: int) -> None:
        if time.perf_counter() - last[0] >= 30:
            last[0] = time.perf_counter()
            print(f"  ... virtual day {now / 86400:.1f}, {done:,}/{total:,} jobs finished, "
                  f"{last[0] - t0:.0f}s wall", file=sys.stderr, flush=True)

    sim = Simulation(config=default_configuration(), registry=default_registry(), seed=0, progress=progress)
    sim.submit(trace.submissions())
    t1 = time.perf_counter()
    res = sim.run()
    wall = time.perf_counter() - t1
    done = sum(1 for r in res.jobs.values() if r.finished is not None)
    lat = np.array(res.session_seconds) if res.session_seconds else np.zeros(1)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"Philly: {len(trace.jobs):,} jobs on {len(trace.nodes)} nodes (trace load {load:.1f}s)")
    print(f"wall {wall:.1f}s, {done:,} jobs finished, {done / wall:.1f} simulated jobs per wall second")
    print(f"virtual time {res.virtual_seconds / 86400:.1f} days, sessions {res.sessions:,}, "
          f"session latency p50 {np.percentile(lat, 50) * 1000:.1f} ms, p99 {np.percentile(lat, 99) * 1000:.1f} ms")
    print(f"peak RSS {rss:.0f} MiB")
    out = res.to_json()
    out["stats"].pop("wall_seconds", None)
    out["timeline"] = res.timeline
    print(f"job/timeline hash {hashlib.sha256(json.dumps(out, sort_keys=True).encode()).hexdigest()[:16]}")


if __name__ == "__main__":
    main()
