"""Benchmark: recovery from API server, etcd and component faults under load, on a real control plane.

Runs the chaos suite's scenarios (:data:`pyvolcano.kube.faults.SCENARIOS`) on one throw-away
control plane with every component as its own process, and prints per fault: how long it
lasted, the recovery time (from the fault's end to the first pod bound after it), the pods bound
and jobs completed while it lasted, the component restarts it caused, and whether the run kept
every invariant. Needs ``KUBEBUILDER_ASSETS`` (``etcd`` and ``kube-apiserver``) and ``kubectl``.
Not a test: it prints figures only.

    KUBEBUILDER_ASSETS=DIR python benchmarks/chaos_recovery.py [--jobs 200] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

from pyvolcano.kube.envtest import assets_dir
from pyvolcano.kube.faults import SCENARIOS, ChaosCluster, Workload, run_scenario


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=200, help="two-pod vcjobs per scenario")
    ap.add_argument("--duration", type=float, default=5.0, help="seconds each pod runs")
    ap.add_argument("--spread", type=float, default=20.0, help="seconds over which the jobs are submitted")
    ap.add_argument("--only", nargs="*", choices=sorted(SCENARIOS), help="run only these scenarios")
    args = ap.parse_args()
    if assets_dir() is None:
        print("error: set KUBEBUILDER_ASSETS to a directory with etcd and kube-apiserver", file=sys.stderr)
        return 2
    # Capacity for about a third of the pods at once: the faults meet pods running and pending.
    node_cpu = max(3, math.ceil(2 * args.jobs / 3 / 4))
    names = args.only or list(SCENARIOS)
    print(f"{args.jobs} two-pod vcjobs of {args.duration:g} s per scenario, 4 fake nodes of {node_cpu} CPUs")
    print(f"{'scenario':<28} {'fault':<36} {'lasted':>7} {'recovery':>9} {'binds':>6} {'jobs':>5} "
          f"{'total':>7}  restarts / problems")
    with tempfile.TemporaryDirectory(prefix="chaos-") as tmp:
        cluster = ChaosCluster(Path(tmp), nodes=4, node_cpu=node_cpu, max_pods=max(110, node_cpu + 10))
        try:
            for name in names:
                jobs = args.jobs * 3 // 2 if name == "waves-apiserver-then-etcd" else args.jobs
                result = run_scenario(cluster, SCENARIOS[name], Workload(jobs, args.duration, args.spread),
                                      namespace=name, timeout=300.0 + jobs / 5)
                for i, f in enumerate(result.faults):
                    recovery = (f"{f.recovery:.1f}s" if f.recovery is not None else
                                "(next)" if "overlapped" in f.notes else "never")
                    tail = (f"{result.restarts or '-'}; " + ("ok" if not result.problems else
                                                             f"{len(result.problems)} problems: "
                                                             f"{result.problems[0]}")) if i == 0 else ""
                    print(f"{name if i == 0 else '':<28} {f.name:<36} {f.seconds:>6.1f}s {recovery:>9} "
                          f"{f.binds_during:>6} {f.completed_during:>5} "
                          f"{(f'{result.seconds:.0f}s' if i == 0 else ''):>7}  {tail}", flush=True)
        finally:
            cluster.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
