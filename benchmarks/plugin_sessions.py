"""Benchmark: what the pdb, nodegroup, resourcequota, cdp and task-topology plugins cost a session.

On the synthetic cluster of ``session_throughput.py`` (1,000 nodes, 200 gangs x 50 pods by
default), one session each of:

* ``default``: upstream's default configuration plus binpack;
* ``named``: the same with the five plugins named (``pdb`` and ``cdp`` in the first tier,
  ``nodegroup`` with ``strict: false``, ``task-topology`` and ``resourcequota`` in the second)
  but no object that uses them: what a configuration pays for naming them;
* ``used``: the same configuration with every queue pinned to a node group (half of the nodes
  labelled with it), a ResourceQuota in the namespace that holds everything, and every job
  carrying a task topology (its pods one task, self-affinity): what using them costs.

Prints the session's CPU seconds (the steady figure on a loaded machine), wall seconds and
pods placed, per variant, ``--repeat`` times interleaved. Not a test: it never fails on timing.

    python benchmarks/plugin_sessions.py [--nodes N] [--jobs N] [--pods N] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from _synthetic import synthetic_cluster

from pyvolcano.api.objects import NodeGroupAffinity, QueueAffinity, ResourceQuota
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.conf.defaults import DEFAULT_SCHEDULER_CONF
from pyvolcano.runtime.cycle import run_once
from pyvolcano.runtime.registry import default_registry

DEFAULT = DEFAULT_SCHEDULER_CONF + "  - name: binpack\n"
NAMED = (DEFAULT.replace("  - name: conformance\n", "  - name: conformance\n  - name: pdb\n  - name: cdp\n")
         + "  - name: nodegroup\n    arguments:\n      strict: false\n  - name: task-topology\n"
           "  - name: resourcequota\n")


def session(n_nodes: int, n_jobs: int, pods: int, conf: str, *, used: bool) -> tuple[float, float, int]:
    objs = synthetic_cluster(n_nodes, n_jobs, pods)
    if used:
        for i, node in enumerate(objs.nodes):
            if i % 2 == 0:
                node.labels["volcano.sh/nodegroup-name"] = "batch"
        for q in objs.queues:
            q.node_groups = QueueAffinity(node_group_affinity=NodeGroupAffinity(required=("batch",)))
        objs.resource_quotas.append(ResourceQuota("bench", "all", hard={"cpu": "1000000"}))
        for pg in objs.podgroups:
            pg.annotations["volcano.sh/task-topology-affinity"] = "worker"
        for pod in objs.pods:
            pod.annotations["volcano.sh/task-spec"] = "worker"
            pod.labels["volcano.sh/task-spec"] = "worker"
    cache = SchedulerCache.from_objects(objs)
    registry = default_registry()
    config = load_scheduler_conf(conf)
    plugins = registry.plugin_factories(config.plugin_names())
    actions = registry.action_factories(config.actions)
    t0, c0 = time.perf_counter(), time.process_time()
    res = run_once(cache, config, plugins, actions, now=0.0, rng=np.random.default_rng(0))
    return time.process_time() - c0, time.perf_counter() - t0, len(res.binds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--pods", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    variants = (("default", DEFAULT, False), ("named", NAMED, False), ("used", NAMED, True))
    for r in range(args.repeat):
        for label, conf, used in variants:
            cpu, wall, placed = session(args.nodes, args.jobs, args.pods, conf, used=used)
            print(f"run {r + 1}  {label:<8} {args.nodes} nodes, {args.jobs * args.pods} pods: cpu {cpu:7.3f}s  "
                  f"wall {wall:7.3f}s  placed {placed}", flush=True)


if __name__ == "__main__":
    main()
