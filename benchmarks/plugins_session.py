"""Benchmark: what numa-aware, tdm, usage and rescheduling cost in one session, and that a
configuration without them pays nothing.

On the synthetic cluster of ``session_throughput.py`` (1,000 nodes, 200 gangs × 50 pods by
default), prints the CPU seconds, pods placed and pods evicted of one session with upstream's
default configuration, then with each plugin added to its last tier: ``numa-aware`` (every node
with a 2-NUMA-node Numatopology, every pod Guaranteed), ``tdm`` (a quarter of the nodes in an
open revocable zone, every pod with a revocable zone), ``usage`` (every node's load set, none
over the thresholds) and ``rescheduling`` (shuffle added, every pod running, half the nodes
hot). For rescheduling the session timed is the second: the first starts the interval, the
second runs the strategy and evicts. The best of ``--repeat`` runs
(default 3) is printed; on a shared machine the CPU time is the steadier figure. Not a test:
it never fails on timing.

    python benchmarks/plugins_session.py [--nodes N] [--jobs J] [--pods-per-job P] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from _synthetic import synthetic_cluster

from pyvolcano.api.node_usage import NodeUsage
from pyvolcano.api.numatopology import CpuInfo, NumaResource, Numatopology
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.conf.defaults import DEFAULT_SCHEDULER_CONF
from pyvolcano.runtime.cycle import run_once
from pyvolcano.runtime.registry import default_registry

PLUGINS = {
    "numa-aware": "  - name: numa-aware\n",
    "tdm": "  - name: tdm\n    arguments: {tdm.revocable-zone.rz1: '0:00-0:00'}\n",
    "usage": "  - name: usage\n",
    "rescheduling": ("  - name: rescheduling\n    arguments:\n      interval: 0s\n      metricsPeriod: 10m\n"
                     "      strategies:\n      - name: lowNodeUtilization\n        params:\n"
                     "          thresholds: {cpu: 20, memory: 20}\n"
                     "          targetThresholds: {cpu: 50, memory: 50}\n"),
}


def _cluster(plugin: str, nodes: int, jobs: int, per_job: int) -> SchedulerCache:
    objs = synthetic_cluster(nodes, jobs, per_job)
    if plugin == "numa-aware":
        for pod in objs.pods:
            for c in pod.containers:
                c.limits = dict(c.requests)
        detail = {c: CpuInfo(numa=c // 48, socket=c // 48, core=c // 2) for c in range(96)}
        objs.numatopologies = [Numatopology(
            name=n.name, policies={"CPUManagerPolicy": "static", "TopologyManagerPolicy": "best-effort"},
            numares={"cpu": NumaResource(frozenset(range(96)), 96)}, cpu_detail=detail) for n in objs.nodes]
    if plugin == "tdm":
        for n in objs.nodes[: nodes // 4]:
            n.labels["volcano.sh/revocable-zone"] = "rz1"
        for pod in objs.pods:
            pod.annotations["volcano.sh/revocable-zone"] = "*"
    if plugin == "rescheduling":  # every pod already running, round-robin over the nodes
        for k, pod in enumerate(objs.pods):
            pod.node_name, pod.phase = objs.nodes[k % nodes].name, "Running"
        for pg in objs.podgroups:
            pg.phase = "Running"
    cache = SchedulerCache.from_objects(objs)
    if plugin in ("usage", "rescheduling"):
        cache.set_node_usage({n.name: NodeUsage.of(0.0, 60.0 if i % 2 and plugin == "rescheduling" else 10.0, 10.0)
                              for i, n in enumerate(objs.nodes)})
    return cache


def one(plugin: str | None, nodes: int, jobs: int, per_job: int) -> tuple[float, int, int]:
    text = DEFAULT_SCHEDULER_CONF + (PLUGINS[plugin] if plugin else "")
    if plugin == "rescheduling":
        text = text.replace('actions: "enqueue, allocate, backfill"', 'actions: "enqueue, allocate, backfill, shuffle"')
    config = load_scheduler_conf(text)
    registry = default_registry()
    cache = _cluster(plugin or "", nodes, jobs, per_job)
    plugins, actions = registry.plugin_factories(config.plugin_names()), registry.action_factories(config.actions)
    if plugin == "rescheduling":  # the first session starts the interval; the second runs the strategy
        run_once(cache, config, plugins, actions, now=0.0, rng=np.random.default_rng(0))
    t0 = time.process_time()
    result = run_once(cache, config, plugins, actions, now=1.0, rng=np.random.default_rng(0))
    return time.process_time() - t0, len(result.binds), len(result.evictions)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--pods-per-job", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    for plugin in (None, *PLUGINS):
        runs = [one(plugin, args.nodes, args.jobs, args.pods_per_job) for _ in range(args.repeat)]
        cpu, placed, evicted = min(runs)
        print(f"{plugin or 'default configuration':>22}: cpu {cpu:7.3f}s  placed {placed:6d}  evicted {evicted:5d}  "
              f"({args.nodes} nodes, {args.jobs} gangs x {args.pods_per_job})", flush=True)


if __name__ == "__main__":
    main()
