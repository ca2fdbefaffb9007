"""Benchmark: end-to-end scheduling on a real kube-apiserver with 1,000 fake nodes.

Upstream's tuning-guide workloads: 10,000 pods as 20 vcjobs × 500 (minAvailable 500), and as
10,000 single-pod vcjobs. For each, from the first create to the last pod bound, it prints
pods bound per second, the scheduler's and controller-manager's peak RSS, and the CPU share
of kube-apiserver + etcd. Needs ``KUBEBUILDER_ASSETS`` (a directory with ``etcd`` and
``kube-apiserver``). Not a test: it prints figures only.

    KUBEBUILDER_ASSETS=DIR python benchmarks/kube_e2e.py [--nodes 1000] [--pods 10000] [--only gang|single]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pyvolcano.kube import connect
from pyvolcano.kube.envtest import ControlPlane, assets_dir

TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def _peak_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _vcjob(name: str, replicas: int) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "bench"},
            "spec": {"minAvailable": replicas, "schedulerName": "volcano", "queue": "default",
                     "tasks": [{"name": "t", "replicas": replicas, "template": {
                         "metadata": {"annotations": {"pyvolcano.io/duration": "1h"}},
                         "spec": {"restartPolicy": "Never", "containers": [{
                             "name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m",
                                                                                       "memory": "100Mi"}}}]}}}]}}


def _apply_bundle(kubeconfig: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "pyvolcano", "install"], check=True, capture_output=True).stdout
    kubectl = os.environ.get("KUBECTL", "kubectl")
    subprocess.run([kubectl, "--kubeconfig", str(kubeconfig), "apply", "--server-side", "-f", "-"], input=out,
                   check=True, capture_output=True)


def run_case(cp: ControlPlane, label: str, jobs: list[tuple[str, int]], nodes: int, logdir: Path) -> None:
    kc = str(cp.kubeconfig)
    py = sys.executable
    logs = open(logdir / f"{label}.log", "wb")  # noqa: SIM115
    procs = {
        "fake-nodes": subprocess.Popen([py, "-m", "pyvolcano", "fake-nodes", "--kubeconfig", kc, "--count",
                                        str(nodes), "--cpu", "32", "--memory", "256Gi", "--max-pods", "110",
                                        "--kube-api-qps", "5000", "--kube-api-burst", "5000"],
                                       stdout=logs, stderr=logs),
    }
    store = connect(kubeconfig=kc, kinds=("Pod", "Node"), qps=5000, burst=5000)
    store.wait_for_sync(60)
    deadline = time.monotonic() + 300
    while len(store.list("Node")) < nodes and time.monotonic() < deadline:
        time.sleep(0.5)
    procs["controller-manager"] = subprocess.Popen(
        [py, "-m", "pyvolcano", "controller-manager", "--kubeconfig", kc, "--leader-elect=false",
         "--kube-api-qps", "5000", "--kube-api-burst", "5000"], stdout=logs, stderr=logs)
    procs["scheduler"] = subprocess.Popen(
        [py, "-m", "pyvolcano", "scheduler", "--kubeconfig", kc, "--leader-elect=false",
         "--kube-api-qps", "5000", "--kube-api-burst", "5000"], stdout=logs, stderr=logs)
    time.sleep(3)
    api_pids = [p.pid for p in cp._procs]
    cpu0 = sum(_cpu_seconds(pid) for pid in api_pids)
    total = sum(r for _n, r in jobs)
    creator = connect(kubeconfig=kc, kinds=(), qps=5000, burst=5000)
    t0 = time.monotonic()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda j: creator.create(_vcjob(*j)), jobs))
    created = time.monotonic() - t0
    bound = 0
    while time.monotonic() - t0 < 1800:
        bound = sum(1 for p in store.list("Pod", "bench") if (p.get("spec") or {}).get("nodeName"))
        if bound >= total:
            break
        time.sleep(0.2)
    wall = time.monotonic() - t0
    cpu = sum(_cpu_seconds(pid) for pid in api_pids) - cpu0
    rss = {k: _peak_rss_mib(p.pid) for k, p in procs.items()}
    print(f"{label}: {bound}/{total} pods bound in {wall:.1f} s ({bound / wall:.0f} pods/s; "
          f"jobs created in {created:.1f} s)")
    print(f"  peak RSS: scheduler {rss['scheduler']:.0f} MiB, controller-manager {rss['controller-manager']:.0f} "
          f"MiB, fake-nodes {rss['fake-nodes']:.0f} MiB")
    print(f"  kube-apiserver + etcd CPU: {cpu:.1f} s = {100 * cpu / wall / os.cpu_count():.0f}% of "
          f"{os.cpu_count()} cores over the run")
    for p in procs.values():
        p.terminate()
    for p in procs.values():
        p.wait(30)
    store.stop()
    creator.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=10_000)
    ap.add_argument("--only", choices=("gang", "single"))
    a = ap.parse_args()
    if assets_dir() is None:
        sys.exit("KUBEBUILDER_ASSETS must name a directory with etcd and kube-apiserver")
    cases = {
        "gang": [(f"gang-{i}", a.pods // 20) for i in range(20)],
        "single": [(f"single-{i}", 1) for i in range(a.pods)],
    }
    logdir = Path(tempfile.mkdtemp(prefix="pyvolcano-kube-e2e-"))
    for label, jobs in cases.items():
        if a.only and label != a.only:
            continue
        with ControlPlane(extra_args=("--max-requests-inflight=2000", "--max-mutating-requests-inflight=1000")) as cp:
            _apply_bundle(cp.kubeconfig)
            ns = connect(kubeconfig=str(cp.kubeconfig), kinds=())
            ns.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}})
            run_case(cp, label, jobs, a.nodes, logdir)
    print(f"logs: {logdir}")


if __name__ == "__main__":
    main()
