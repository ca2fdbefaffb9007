"""Benchmark: seconds per FGD-experiment run, per policy (issue: GPU fragmentation / FGD).

One run = one policy, one seed on the packaged openb trace: inflate 8,152 pods to ~10.8k
(tune 1.3), place them one by one on 1,213 nodes (6,212 GPUs), measure the curves. Prints,
per policy, the seconds of each run, their mean and the allocation at 100 % arrived; then
the time of one FGD scheduling session on the same cluster as Kubernetes objects (every
pod placed by the ``fgd`` plugin through the Volcano session). Not a test: it never fails on
timing. The paper artifact's Go simulator needs about 10 minutes per run on 2 vCPUs.

    python benchmarks/fgd_runs.py [--seeds 42-44] [--policies all] [--no-session]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import yaml

from pyvolcano.api.manifest import load_manifest_text
from pyvolcano.cache.cache import SchedulerCache
from pyvolcano.cli.experiment import parse_policies, parse_seeds
from pyvolcano.conf import load_scheduler_conf
from pyvolcano.gpu.experiment import RunResult, inflate, run_experiment
from pyvolcano.gpu.openb import (
    DEFAULT_NODES,
    DEFAULT_PODS,
    TraceNode,
    TracePod,
    default_trace_dir,
    load_nodes,
    load_pods,
)
from pyvolcano.runtime.cycle import run_once
from pyvolcano.runtime.registry import default_registry

SESSION_CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: predicates
  - name: deviceshare
  - name: fgd
"""


def session_benchmark(
    nodes: list[TraceNode], pods: list[TracePod], seed: int, conf: str = SESSION_CONF
) -> tuple[float, int, int, float]:
    """One Volcano session placing the first 100 %-of-capacity pods of a seed's sequence.

    Returns the session's seconds, pods bound, pods submitted and the GPU allocation ratio.
    """
    rng = np.random.default_rng(seed)
    seq = inflate(pods, sum(n.gpus for n in nodes) * 1000, 1.0, rng)
    docs: list[dict[str, object]] = [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                      "metadata": {"name": "q"}, "spec": {"weight": 1}}]
    for n in nodes:
        res = {"cpu": f"{n.cpu_milli}m", "memory": f"{n.memory_mib}Mi", "pods": "1001", "nvidia.com/gpu": str(n.gpus)}
        docs.append({"apiVersion": "v1", "kind": "Node",
                     "metadata": {"name": n.name, "labels": {"nvidia.com/gpu.product": n.model}},
                     "status": {"capacity": res, "allocatable": res}})
    for k, i in enumerate(seq):
        p = pods[i]
        name = f"{p.name}-{k:05d}"
        ann = {"scheduling.k8s.io/group-name": name}
        requests = {"cpu": f"{p.cpu_milli}m", "memory": f"{p.memory_mib}Mi"}
        if p.num_gpu == 1 and p.gpu_milli < 1000:
            ann["pyvolcano.io/gpu-milli"] = str(p.gpu_milli)
        elif p.num_gpu:
            requests["nvidia.com/gpu"] = str(p.num_gpu)
        docs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                     "metadata": {"name": name, "namespace": "openb", "creationTimestamp": float(k)},
                     "spec": {"minMember": 1, "queue": "q"}, "status": {"phase": "Inqueue"}})
        docs.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": name, "namespace": "openb", "annotations": ann},
                     "spec": {"schedulerName": "volcano",
                              "containers": [{"name": "main", "resources": {"requests": requests}}]}})
    milli = {f"openb/{pods[i].name}-{k:05d}": pods[i].total_milli for k, i in enumerate(seq)}
    cache = SchedulerCache.from_objects(load_manifest_text(yaml.safe_dump_all(docs), "openb.yaml"))
    config = load_scheduler_conf(conf)
    registry = default_registry()
    plugins = registry.plugin_factories(config.plugin_names())
    actions = registry.action_factories(config.actions)
    t0 = time.perf_counter()
    result = run_once(cache, config, plugins, actions, now=0.0, rng=np.random.default_rng(seed))
    seconds = time.perf_counter() - t0
    allocated = sum(milli[key] for key, _node in result.binds) / (sum(n.gpus for n in nodes) * 1000)
    return seconds, len(result.binds), len(seq), allocated


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="42-44", help="seeds, e.g. 42-51 (default 42-44)")
    ap.add_argument("--policies", default="all", help="comma-separated policies or all")
    ap.add_argument("--no-session", action="store_true", help="skip the Volcano-session benchmark")
    args = ap.parse_args()
    trace = default_trace_dir()
    nodes = load_nodes(trace / DEFAULT_NODES)
    pods = load_pods(trace / DEFAULT_PODS)
    seeds = parse_seeds(args.seeds)
    print(f"openb default trace: {len(nodes)} nodes, {sum(n.gpus for n in nodes)} GPUs, {len(pods)} pods; "
          f"seeds {seeds[0]}..{seeds[-1]}")
    print(f"{'policy':<14} {'pods':>6} {'s/run (each)':<40} {'mean s':>7} {'alloc@100%':>10}")
    for policy in parse_policies(args.policies):
        res: list[RunResult] = run_experiment(nodes, pods, [policy], seeds)
        each = " ".join(f"{r.seconds:.2f}" for r in res)
        alloc = statistics.fmean(p.allocated * 100 for r in res if (p := r.at(100)) is not None)
        print(f"{policy:<14} {res[0].pods:>6} {each:<40} {statistics.fmean(r.seconds for r in res):>7.2f} "
              f"{alloc:>9.2f}%", flush=True)
    if not args.no_session:
        print(f"one Volcano session, 100 % of GPU capacity arrived (seed {seeds[0]}):")
        for label, policy, extra in (("fgd", "fgd", ""), ("fgd, tieBreak random", "fgd", "random"),
                                     ("bestfit", "bestfit", "")):
            conf = SESSION_CONF.replace("name: fgd", f"name: {policy}")
            if extra:
                conf += f"    arguments: {{{policy}.tieBreak: {extra}}}\n"
            seconds, bound, total, alloc = session_benchmark(nodes, pods, seeds[0], conf)
            print(f"  {label:<22} {bound}/{total} pods bound, {alloc * 100:.2f}% GPU allocated, {seconds:.2f}s "
                  f"({bound / seconds:.0f} pods/s)", flush=True)


if __name__ == "__main__":
    main()
