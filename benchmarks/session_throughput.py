"""Benchmark: one scheduling session on a large synthetic cluster (issue: scheduler core).

Prints, for 1,000 nodes / 10,000 pods and 10,000 nodes / 2,000 gang jobs × 50 pods
(upstream's default configuration plus binpack), and for 5,000 nodes / 1,000 gangs × 50 pods
(upstream's default configuration alone, and again with binpack): seconds of one session, pods placed per second of
session time, peak RSS (of the whole process so far), and the session's CPU seconds (on a
loaded machine the CPU time is the steadier figure); then the end-to-end time of
``pyvolcano schedule`` on a 1,000-node / 10,000-pod YAML. ``--per-pod`` forces allocate's
per-pod path (no batched placement of replicas), for comparison. Not a test: it never fails
on timing.

``--only 5k-e2e`` writes the 5,000-node / 50,000-pod YAML (1,000 gangs x 50) once, times the
whole ``pyvolcano schedule`` command on it with upstream's default configuration ``--repeat``
times (wall, and CPU and peak RSS of the child process), then runs the same steps in this
process, as the command runs them (the snapshot built with the collector paused, where the
tree has ``util/bulk_build.py``), for a breakdown of CPU seconds by phase: yaml (the text to
plain values), validate (the values to typed, validated objects), build (the scheduler cache),
session, output (the JSON text).

    python benchmarks/session_throughput.py [--quick] [--per-pod] [--only SIZE] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from _synthetic import synthetic_cluster, to_yaml

from pyvolcano.cache.cache import SchedulerCache, SchedulerOptions
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.conf.defaults import DEFAULT_SCHEDULER_CONF
from pyvolcano.runtime.cycle import run_once
from pyvolcano.runtime.registry import default_registry

# Upstream's built-in default plus binpack (the last plugin of the last tier).
CONF = DEFAULT_SCHEDULER_CONF + "  - name: binpack\n"
# Scheduler options of the in-process sessions (``--per-pod`` sets batch_replicas=False).
OPTIONS: dict[str, bool] = {}


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def one_session(n_nodes: int, n_jobs: int, pods_per_job: int, conf: str = CONF, label: str = "") -> None:
    t0 = time.perf_counter()
    objs = synthetic_cluster(n_nodes, n_jobs, pods_per_job)
    cache = SchedulerCache.from_objects(objs, SchedulerOptions(**OPTIONS) if OPTIONS else None)
    build = time.perf_counter() - t0
    registry = default_registry()
    config = load_scheduler_conf(conf)
    plugins = registry.plugin_factories(config.plugin_names())
    actions = registry.action_factories(config.actions)
    t1 = time.perf_counter()
    c1 = time.process_time()
    res = run_once(cache, config, plugins, actions, now=0.0, rng=np.random.default_rng(0))
    secs = time.perf_counter() - t1
    cpu = time.process_time() - c1
    placed = len(res.binds)
    print(f"{n_nodes:>6} nodes, {n_jobs * pods_per_job:>7} pods ({n_jobs} gangs x {pods_per_job}): "
          f"build {build:6.2f}s  session {secs:7.3f}s  placed {placed:>7}  "
          f"{placed / secs if secs else 0:>9.0f} pods/s  peak RSS {peak_rss_mib():7.0f} MiB  "
          f"cpu {cpu:7.3f}s{label}", flush=True)


def end_to_end(n_nodes: int, n_jobs: int, pods_per_job: int) -> None:
    objs = synthetic_cluster(n_nodes, n_jobs, pods_per_job)
    with tempfile.TemporaryDirectory() as d:
        cluster = os.path.join(d, "cluster.yaml")
        conf = os.path.join(d, "sched.conf")
        with open(cluster, "w") as f:
            f.write(to_yaml(objs))
        with open(conf, "w") as f:
            f.write(CONF)
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pyvolcano", "schedule", cluster, "--config", conf, "-o", "json"],
                              capture_output=True, text=True, check=False)
        secs = time.perf_counter() - t0
    import json

    binds = len(json.loads(proc.stdout)["binds"]) if proc.returncode == 0 else -1
    print(f"pyvolcano schedule end to end, {n_nodes} nodes / {n_jobs * pods_per_job} pods: {secs:.2f}s "
          f"(exit {proc.returncode}, {binds} binds)", flush=True)


def _child_usage() -> tuple[float, float]:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def whole_command(n_nodes: int, n_jobs: int, pods_per_job: int, repeat: int) -> None:
    """``pyvolcano schedule`` on one YAML, ``repeat`` times, then a per-phase CPU breakdown."""
    import contextlib
    import json

    from pyvolcano.api.manifest import iter_documents, parse_objects, read_manifest_text
    from pyvolcano.cli.output import strip_timings
    from pyvolcano.conf import default_configuration
    from pyvolcano.runtime.cycle import schedule_objects

    try:
        from pyvolcano.util.bulk_build import bulk_build
    except ImportError:  # a tree from before it (for before/after figures)
        bulk_build = contextlib.nullcontext

    objs = synthetic_cluster(n_nodes, n_jobs, pods_per_job)
    with tempfile.TemporaryDirectory() as d:
        cluster = os.path.join(d, "cluster.yaml")
        with open(cluster, "w") as f:
            f.write(to_yaml(objs))
        del objs
        for _ in range(repeat):
            cpu0, _rss = _child_usage()
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "pyvolcano", "schedule", cluster, "-o", "json"],
                                  capture_output=True, text=True, check=False)
            secs = time.perf_counter() - t0
            cpu1, rss = _child_usage()
            binds = len(json.loads(proc.stdout)["binds"]) if proc.returncode == 0 else -1
            print(f"pyvolcano schedule, {n_nodes} nodes / {n_jobs * pods_per_job} pods (default conf): "
                  f"wall {secs:.2f}s  cpu {cpu1 - cpu0:.2f}s  peak RSS {rss:.0f} MiB  "
                  f"(exit {proc.returncode}, {binds} binds)", flush=True)
        registry = default_registry()
        with bulk_build():
            c0 = time.process_time()
            docs = list(iter_documents(read_manifest_text(cluster), cluster))
            c1 = time.process_time()
            loaded = parse_objects(docs, cluster, allow_other=True)
            del docs
            c2 = time.process_time()
            cache = SchedulerCache.from_objects(loaded)
            c3 = time.process_time()
        result = schedule_objects(cache, default_configuration(), registry, sessions=1, seed=0)
        c4 = time.process_time()
        text = json.dumps(strip_timings(result))
        c5 = time.process_time()
    print(f"  phases in process (cpu): yaml {c1 - c0:.2f}s  validate {c2 - c1:.2f}s  build {c3 - c2:.2f}s  "
          f"session {c4 - c3:.2f}s  output {c5 - c4:.2f}s ({len(text):,} bytes)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes only (smoke run)")
    ap.add_argument("--per-pod", action="store_true", help="force allocate's per-pod path")
    ap.add_argument("--only", choices=["1k", "e2e", "10k", "5k", "5k-binpack", "5k-e2e"],
                    help="run one measurement only")
    ap.add_argument("--repeat", type=int, default=1, help="runs of the whole command (5k-e2e)")
    args = ap.parse_args()
    if args.per_pod:
        OPTIONS["batch_replicas"] = False
    if args.quick:
        one_session(200, 40, 10)
        return
    if args.only in (None, "1k"):
        one_session(1_000, 200, 50)
    if args.only in (None, "e2e"):
        end_to_end(1_000, 200, 50)
    if args.only in (None, "10k"):
        one_session(10_000, 2_000, 50)
    if args.only in (None, "5k"):
        one_session(5_000, 1_000, 50, conf=DEFAULT_SCHEDULER_CONF, label="  (default conf)")
    if args.only in (None, "5k-binpack"):
        one_session(5_000, 1_000, 50, label="  (default conf + binpack)")
    if args.only in (None, "5k-e2e"):
        whole_command(5_000, 1_000, 50, args.repeat)


if __name__ == "__main__":
    main()
