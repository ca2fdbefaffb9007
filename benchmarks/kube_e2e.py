"""Benchmark: pyvolcano's live pipeline against Kubernetes' own batch path on a real kube-apiserver.

One real kube-apiserver + etcd on 127.0.0.1 and N Ready nodes without kubelets (``pyvolcano
fake-nodes``), a fresh control plane for every case and side. Upstream's tuning-guide workloads
(10,000 pods of 100m CPU by default), each run on two sides:

* ``kube``: batch/v1 Jobs handled by kube-controller-manager's job controller (only that
  controller, leader election off) and pods bound by kube-scheduler (its own kubeconfig and
  configuration file, leader election off);
* ``pyvolcano``: vcjobs handled by ``pyvolcano controller-manager`` and pods bound by
  ``pyvolcano scheduler``.

Cases:

* ``sched-gang`` / ``sched-single``: scheduler only — the pods (and, for pyvolcano, their
  PodGroups) are created first, then the scheduler is started; 20 groups of pods/20, or one group
  per pod. Time runs from the scheduler's start to the last pod bound.
* ``gang`` / ``single``: the whole pipeline from the first create — 20 jobs of pods/20 (gangs of
  that size for pyvolcano) or one single-pod job per pod. Time runs from the first create to the
  last pod bound; the controllers are started (and idle) before.

For each it prints pods bound per second, CPU seconds and peak RSS per component, the CPU of
kube-apiserver + etcd, and at the end a table with the ratio pyvolcano / Kubernetes. The
binaries are found through ``KUBEBUILDER_ASSETS`` (``etcd`` and ``kube-apiserver`` are required;
without ``kube-scheduler`` / ``kube-controller-manager`` the Kubernetes side is skipped with a
message). ``--pyvolcano-src DIR`` runs the pyvolcano components from another checkout's ``src``
(to measure a base commit in the same sitting). Not a test: it prints figures only.

    KUBEBUILDER_ASSETS=DIR python benchmarks/kube_e2e.py [--nodes 1000] [--pods 10000]
        [--only gang --only single ...] [--side kube|pyvolcano|both] [--pyvolcano-src DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyvolcano.controllers.queue import ensure_default_queues
from pyvolcano.kube import connect
from pyvolcano.kube.envtest import ControlPlane, assets_dir

TICKS = os.sysconf("SC_CLK_TCK")
CASES = ("sched-gang", "sched-single", "gang", "single")
QPS = "5000"
REQUESTS = {"cpu": "100m", "memory": "100Mi"}
# fake-nodes runs a pod this long once bound; the same for both sides, so both see its status writes.
POD_ANNOTATIONS = {"pyvolcano.io/duration": "1h"}


def _cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def _peak_rss_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


_REQUEST_SAMPLE = re.compile(r'^apiserver_request_total\{([^}]*)\} ([0-9.e+]+)$')
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def _api_requests(client: Any) -> Counter[str]:
    """The API server's ``apiserver_request_total`` summed by verb, resource and subresource (and the
    status code, where it is not a success)."""
    out: Counter[str] = Counter()
    text = client.transport.request("GET", "/metrics", headers={"Accept": "text/plain"}).content.decode()
    for line in text.splitlines():
        m = _REQUEST_SAMPLE.match(line)
        if not m:
            continue
        labels = dict(_LABEL.findall(m.group(1)))
        what = labels.get("resource", "") + (f"/{labels['subresource']}" if labels.get("subresource") else "")
        code = labels.get("code", "200")
        failed = "" if code.startswith("2") else f" ({code})"
        out[f"{labels.get('verb', '')} {what}{failed}"] += int(float(m.group(2)))
    return out


def _container() -> dict[str, Any]:
    return {"name": "c", "image": "busybox", "resources": {"requests": dict(REQUESTS)}}


def _vcjob(name: str, replicas: int) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "bench"},
            "spec": {"minAvailable": replicas, "schedulerName": "volcano", "queue": "default",
                     "tasks": [{"name": "t", "replicas": replicas, "template": {
                         "metadata": {"annotations": dict(POD_ANNOTATIONS)},
                         "spec": {"restartPolicy": "Never", "containers": [_container()]}}}]}}


def _batch_job(name: str, replicas: int) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "bench"},
            "spec": {"parallelism": replicas, "completions": replicas, "backoffLimit": 0, "template": {
                "metadata": {"annotations": dict(POD_ANNOTATIONS)},
                "spec": {"restartPolicy": "Never", "containers": [_container()]}}}}


def _pod(name: str, group: str, scheduler: str) -> dict[str, Any]:
    annotations = dict(POD_ANNOTATIONS)
    if scheduler == "volcano":
        annotations["scheduling.k8s.io/group-name"] = group
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "bench", "labels": {"group": group}, "annotations": annotations},
            "spec": {"schedulerName": scheduler, "restartPolicy": "Never", "containers": [_container()]}}


def _podgroup(name: str, members: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "bench"},
            "spec": {"minMember": members, "queue": "default"}}


def _apply_bundle(kubeconfig: Path, env: dict[str, str]) -> None:
    out = subprocess.run([sys.executable, "-m", "pyvolcano", "install"], check=True, capture_output=True,
                         env=env).stdout
    kubectl = os.environ.get("KUBECTL") or shutil.which("kubectl") or "kubectl"
    subprocess.run([kubectl, "--kubeconfig", str(kubeconfig), "apply", "--server-side", "-f", "-"], input=out,
                   check=True, capture_output=True)


@dataclass
class Result:
    case: str
    side: str
    pods: int
    bound: int
    wall: float
    cpu: dict[str, float] = field(default_factory=dict)
    rss: dict[str, float] = field(default_factory=dict)
    api_cpu: float = 0.0
    requests: dict[str, int] = field(default_factory=dict)  # API requests by "VERB resource[/sub]"

    @property
    def rate(self) -> float:
        return self.bound / self.wall if self.wall > 0 else 0.0


class Run:
    """One case on one side: a fresh control plane, fake nodes, the side's components."""

    def __init__(self, case: str, side: str, pods: int, nodes: int, logdir: Path, env: dict[str, str],
                 assets: Path) -> None:
        self.case, self.side, self.pods, self.nodes = case, side, pods, nodes
        self.logdir, self.env, self.assets = logdir, env, assets
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.log = open(logdir / f"{case}-{side}.log", "wb")  # noqa: SIM115 - closed in run()

    def _spawn(self, name: str, argv: list[str]) -> None:
        self.procs[name] = subprocess.Popen(argv, stdout=self.log, stderr=self.log, env=self.env)

    def _pyvolcano(self, name: str, *args: str) -> None:
        self._spawn(name, [sys.executable, "-m", "pyvolcano", *args, "--kube-api-qps", QPS, "--kube-api-burst", QPS])

    def _start_scheduler(self, cp: ControlPlane) -> None:
        if self.side == "pyvolcano":
            self._pyvolcano("scheduler", "scheduler", "--kubeconfig", str(cp.kubeconfig), "--leader-elect=false")
            return
        kc = cp.workdir / "kube-scheduler.kubeconfig"
        shutil.copyfile(cp.kubeconfig, kc)
        cfg = cp.workdir / "kube-scheduler.yaml"
        cfg.write_text(json.dumps({
            "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"kubeconfig": str(kc), "qps": int(QPS), "burst": int(QPS)},
            "leaderElection": {"leaderElect": False}}))
        self._spawn("scheduler", [str(self.assets / "kube-scheduler"), f"--config={cfg}", "--secure-port=0"])

    def _start_controllers(self, cp: ControlPlane) -> None:
        if self.side == "pyvolcano":
            self._pyvolcano("controller-manager", "controller-manager", "--kubeconfig", str(cp.kubeconfig),
                            "--leader-elect=false")
            return
        self._spawn("controller-manager", [
            str(self.assets / "kube-controller-manager"), f"--kubeconfig={cp.kubeconfig}", "--controllers=job",
            "--leader-elect=false", "--secure-port=0", "--use-service-account-credentials=false",
            f"--kube-api-qps={QPS}", f"--kube-api-burst={QPS}"])

    def _objects(self) -> list[dict[str, Any]]:
        gang = self.case.endswith("gang")
        groups = [(f"g-{i}", self.pods // 20) for i in range(20)] if gang else \
            [(f"g-{i}", 1) for i in range(self.pods)]
        if self.case.startswith("sched-"):
            scheduler = "volcano" if self.side == "pyvolcano" else "default-scheduler"
            objs = [_podgroup(g, n) for g, n in groups] if self.side == "pyvolcano" else []
            return objs + [_pod(f"{g}-{k}", g, scheduler) for g, n in groups for k in range(n)]
        make = _vcjob if self.side == "pyvolcano" else _batch_job
        return [make(g, n) for g, n in groups]

    def run(self, cp: ControlPlane) -> Result:
        kc = str(cp.kubeconfig)
        self._spawn("fake-nodes", [sys.executable, "-m", "pyvolcano", "fake-nodes", "--kubeconfig", kc, "--count",
                                   str(self.nodes), "--cpu", "32", "--memory", "256Gi", "--max-pods", "110",
                                   "--kube-api-qps", QPS, "--kube-api-burst", QPS])
        store = connect(kubeconfig=kc, kinds=("Pod", "Node"), qps=5000, burst=5000)
        creator = connect(kubeconfig=kc, kinds=(), qps=5000, burst=5000)
        try:
            store.wait_for_sync(60)
            deadline = time.monotonic() + 300
            while len(store.list("Node")) < self.nodes and time.monotonic() < deadline:
                time.sleep(0.5)
            objs = self._objects()
            total = self.pods
            create: Callable[[dict[str, Any]], Any] = creator.create
            if self.side == "kube" and not self.case.startswith("sched-"):
                # The store's "Job" is Volcano's; batch/v1 Jobs are posted as they are.
                def create(obj: dict[str, Any]) -> Any:
                    return creator.client.request("POST", "/apis/batch/v1/namespaces/bench/jobs", body=obj)
            api_pids = [p.pid for p in cp._procs]
            if self.case.startswith("sched-"):
                # PodGroups before their pods, all created before the scheduler starts; the statuses
                # vc-controller-manager would have written (an open queue, Pending PodGroups) are set here.
                groups = [o for o in objs if o["kind"] == "PodGroup"]
                if groups:
                    ensure_default_queues(creator)
                    for q in ("root", "default"):
                        creator.patch("Queue", None, q, {"status": {"state": "Open"}}, subresource="status")

                def create_group(pg: dict[str, Any]) -> None:
                    creator.create(pg)
                    creator.patch("PodGroup", "bench", pg["metadata"]["name"], {"status": {"phase": "Pending"}},
                                  subresource="status")

                with ThreadPoolExecutor(16) as pool:
                    list(pool.map(create_group, groups))
                    list(pool.map(create, [o for o in objs if o["kind"] == "Pod"]))
                while len(store.list("Pod", "bench")) < total:
                    time.sleep(0.2)
                api0 = sum(_cpu_seconds(pid) for pid in api_pids)
                req0 = _api_requests(creator.client)
                t0 = time.monotonic()
                self._start_scheduler(cp)
            else:
                self._start_controllers(cp)
                self._start_scheduler(cp)
                time.sleep(5)
                api0 = sum(_cpu_seconds(pid) for pid in api_pids)
                req0 = _api_requests(creator.client)
                t0 = time.monotonic()
                with ThreadPoolExecutor(16) as pool:
                    list(pool.map(create, objs))
            bound = 0
            while time.monotonic() - t0 < 3600:
                bound = sum(1 for p in store.list("Pod", "bench") if (p.get("spec") or {}).get("nodeName"))
                if bound >= total:
                    break
                if any(p.poll() is not None for p in self.procs.values()):
                    print(f"  {self.case}/{self.side}: a component exited; see {self.log.name}")
                    break
                time.sleep(0.2)
            wall = time.monotonic() - t0
            res = Result(self.case, self.side, total, bound, wall,
                         api_cpu=sum(_cpu_seconds(pid) for pid in api_pids) - api0)
            res.requests = {k: v for k, v in (_api_requests(creator.client) - req0).items() if v}
            for name in ("controller-manager", "scheduler"):
                if name in self.procs:
                    res.cpu[name] = _cpu_seconds(self.procs[name].pid)
                    res.rss[name] = _peak_rss_mib(self.procs[name].pid)
            return res
        finally:
            for p in self.procs.values():
                p.terminate()
            for p in self.procs.values():
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
            store.stop()
            creator.stop()
            self.log.close()


def _print(r: Result) -> None:
    comps = ", ".join(f"{k} {r.cpu[k]:.1f} s CPU / {r.rss[k]:.0f} MiB" for k in r.cpu)
    print(f"{r.case:>12} {r.side:>9}: {r.bound}/{r.pods} bound in {r.wall:.1f} s = {r.rate:.0f} pods/s; {comps}; "
          f"apiserver+etcd {r.api_cpu:.1f} s CPU", flush=True)
    if r.requests and r.pods:
        top = sorted(r.requests.items(), key=lambda kv: -kv[1])
        print(f"{'':>24}API requests per pod: {sum(r.requests.values()) / r.pods:.2f} — "
              + ", ".join(f"{k} {v / r.pods:.2f}" for k, v in top if v / r.pods >= 0.05
                          and not k.startswith("WATCH")), flush=True)


def _table(results: list[Result]) -> None:
    print("\n| case | side | pods/s | controller CPU s | scheduler CPU s | apiserver+etcd CPU s | "
          "controller / scheduler peak RSS MiB |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r.case} | {r.side} | {r.rate:.0f} | {r.cpu.get('controller-manager', 0):.1f} | "
              f"{r.cpu.get('scheduler', 0):.1f} | {r.api_cpu:.1f} | "
              f"{r.rss.get('controller-manager', 0):.0f} / {r.rss.get('scheduler', 0):.0f} |")
    by = {(r.case, r.side): r for r in results}
    print("\nratio pyvolcano / Kubernetes (pods/s; CPU as Kubernetes / pyvolcano, higher is better for pyvolcano):")
    for case in CASES:
        k, p = by.get((case, "kube")), by.get((case, "pyvolcano"))
        if k is None or p is None or not k.rate:
            continue
        kc, pc = sum(k.cpu.values()), sum(p.cpu.values())
        print(f"  {case}: pods/s {p.rate / k.rate:.2f}; component CPU {kc:.1f} s vs {pc:.1f} s "
              f"= {kc / pc if pc else 0:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=10_000, help="pods per case (a multiple of 20)")
    ap.add_argument("--only", choices=CASES, action="append", help="run this case (repeatable; default all)")
    ap.add_argument("--side", choices=("kube", "pyvolcano", "both"), default="both")
    ap.add_argument("--pyvolcano-src", type=Path, help="run the pyvolcano components from this src directory")
    a = ap.parse_args()
    assets = assets_dir()
    if assets is None:
        sys.exit("KUBEBUILDER_ASSETS must name a directory with etcd and kube-apiserver")
    sides = ["kube", "pyvolcano"] if a.side == "both" else [a.side]
    if "kube" in sides and not all((assets / b).is_file() for b in ("kube-scheduler", "kube-controller-manager")):
        print(f"{assets} has no kube-scheduler / kube-controller-manager: the Kubernetes side is skipped")
        sides.remove("kube")
    env = dict(os.environ)
    if a.pyvolcano_src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(a.pyvolcano_src.resolve()), env.get("PYTHONPATH", "")])
    logdir = Path(tempfile.mkdtemp(prefix="pyvolcano-kube-e2e-"))
    results: list[Result] = []
    for case in a.only or CASES:
        for side in sides:
            with ControlPlane(extra_args=("--max-requests-inflight=2000",
                                          "--max-mutating-requests-inflight=1000")) as cp:
                _apply_bundle(cp.kubeconfig, env)
                ns = connect(kubeconfig=str(cp.kubeconfig), kinds=())
                ns.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}})
                ns.stop()
                r = Run(case, side, a.pods, a.nodes, logdir, env, assets).run(cp)
            _print(r)
            results.append(r)
    _table(results)
    print(f"logs: {logdir}")


if __name__ == "__main__":
    main()
