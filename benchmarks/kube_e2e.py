"""Benchmark: pyvolcano's live pipeline against Kubernetes' own batch path on a real kube-apiserver.

One real kube-apiserver + etcd on 127.0.0.1 and N Ready nodes without kubelets (``pyvolcano
fake-nodes``), a fresh control plane for every case and side. Upstream's tuning-guide workloads
(10,000 pods of 100m CPU by default), each run on two sides:

* ``kube``: batch/v1 Jobs handled by kube-controller-manager's job controller (only that
  controller, leader election off) and pods bound by kube-scheduler (its own kubeconfig and
  configuration file, leader election off);
* ``pyvolcano``: vcjobs handled by ``pyvolcano controller-manager`` and pods bound by
  ``pyvolcano scheduler``;
* ``volcano``: the same vcjobs handled by upstream Volcano's own ``vc-controller-manager`` and
  bound by its ``vc-scheduler`` (Go binaries built outside this repository, found through
  ``VOLCANO_BIN``; upstream's CRDs from ``VOLCANO_CRDS`` or ``$VOLCANO_BIN/crds``). Without them
  the side is skipped with a message.

Both Volcano sides read the same scheduler configuration: the Helm chart's default
``volcano-scheduler.conf`` (upstream's ``installer/helm/chart/volcano/config``), what a user
installing Volcano gets. Every component runs with QPS and burst 5,000 and otherwise its own
flag defaults (vc-controller-manager: 3 job workers; kube-controller-manager: 5 job syncs; the
Go components' log verbosity 0, where the chart sets 3 and 4). For ``sched-*`` cases no
controller runs: the queues are opened and the PodGroups made Pending through ``/status``, as
the controllers would.

Cases:

* ``sched-gang`` / ``sched-single``: scheduler only — the pods (and, for pyvolcano, their
  PodGroups) are created first, then the scheduler is started; 20 groups of pods/20, or one group
  per pod. Time runs from the scheduler's start to the last pod bound.
* ``gang`` / ``single``: the whole pipeline from the first create — 20 jobs of pods/20 (gangs of
  that size for pyvolcano) or one single-pod job per pod. Time runs from the first create to the
  last pod bound; the controllers are started (and idle) before.

For each it prints pods bound per second, CPU seconds and peak RSS per component, the CPU of
kube-apiserver + etcd, the API requests per pod by verb and resource, the load average, and at
the end a table with the ratios pyvolcano / Kubernetes and pyvolcano / upstream Volcano. The
binaries are found through ``KUBEBUILDER_ASSETS`` (``etcd`` and ``kube-apiserver`` are required;
without ``kube-scheduler`` / ``kube-controller-manager`` the Kubernetes side is skipped with a
message). ``--pyvolcano-src DIR`` runs the pyvolcano components from another checkout's ``src``
(to measure a base commit in the same sitting). Not a test: it prints figures only.

    KUBEBUILDER_ASSETS=DIR VOLCANO_BIN=DIR python benchmarks/kube_e2e.py [--nodes 1000] [--pods 10000]
        [--only gang --only single ...] [--side kube --side pyvolcano --side volcano] [--pyvolcano-src DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyvolcano.controllers.queue import ensure_default_queues
from pyvolcano.kube import connect
from pyvolcano.kube.client import KubeClient, load_config
from pyvolcano.kube.envtest import ControlPlane, assets_dir
from pyvolcano.store.base import NotFound

TICKS = os.sysconf("SC_CLK_TCK")
CASES = ("sched-gang", "sched-single", "gang", "single")
SIDES = ("kube", "pyvolcano", "volcano")
VOLCANO_BIN_ENV = "VOLCANO_BIN"
VOLCANO_CRDS_ENV = "VOLCANO_CRDS"
# installer/helm/chart/volcano/config/volcano-scheduler.conf (volcano-sh/volcano ed72c7c8): the
# configuration a Helm install of Volcano runs with; both Volcano sides read it.
CHART_SCHEDULER_CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""
QPS = "5000"
REQUESTS = {"cpu": "100m", "memory": "100Mi"}
# fake-nodes runs a pod this long once bound; the same for both sides, so both see its status writes.
POD_ANNOTATIONS = {"pyvolcano.io/duration": "1h"}
SETTLE_QUIET = 3.0
SETTLE_LIMIT = 180.0
# The fake kubelets' own periodic writes, which never stop; not counted when waiting for quiet.
HEARTBEATS = ("PATCH leases", "PATCH nodes/status", "POST leases", "PATCH leases (404)")


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


_REQUEST_SAMPLE = re.compile(r'^apiserver_request_(total|duration_seconds_sum|duration_seconds_count)'
                             r'\{([^}]*)\} ([0-9.e+]+)$')
_LABEL = re.compile(r'(\w+)="([^"]*)"')
LATENCY = "latency-ms "  # keys of the server-side latency sums in _api_requests' counter


def _api_requests(client: Any) -> Counter[str]:
    """The API server's ``apiserver_request_total`` summed by verb, resource and subresource (and the
    status code, where it is not a success); plus, keyed ``LATENCY + "VERB resource"``, the sum of
    the requests' server-side durations in ms and, keyed ``LATENCY + "n VERB resource"``, their count."""
    out: Counter[str] = Counter()
    text = client.transport.request("GET", "/metrics", headers={"Accept": "text/plain"}).content.decode()
    for line in text.splitlines():
        m = _REQUEST_SAMPLE.match(line)
        if not m:
            continue
        labels = dict(_LABEL.findall(m.group(2)))
        what = labels.get("resource", "") + (f"/{labels['subresource']}" if labels.get("subresource") else "")
        verb = labels.get("verb", "")
        if m.group(1) == "duration_seconds_sum":
            out[f"{LATENCY}{verb} {what}"] += int(1000 * float(m.group(3)))
        elif m.group(1) == "duration_seconds_count":
            out[f"{LATENCY}n {verb} {what}"] += int(float(m.group(3)))
        else:
            code = labels.get("code", "200")
            failed = "" if code.startswith("2") else f" ({code})"
            out[f"{verb} {what}{failed}"] += int(float(m.group(3)))
    return out


def _latencies(counts: dict[str, int]) -> dict[str, float]:
    """Mean server-side latency in ms by "VERB resource" from _api_requests' latency keys."""
    out = {}
    for k, n in counts.items():
        if k.startswith(f"{LATENCY}n ") and n:
            what = k[len(LATENCY) + 2:]
            out[what] = counts.get(f"{LATENCY}{what}", 0) / n
    return out


def _requests_only(counts: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in counts.items() if not k.startswith(LATENCY)}


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


def _kubectl_apply(kubeconfig: Path, manifests: bytes) -> None:
    kubectl = os.environ.get("KUBECTL") or shutil.which("kubectl") or "kubectl"
    subprocess.run([kubectl, "--kubeconfig", str(kubeconfig), "apply", "--server-side", "-f", "-"],
                   input=manifests, check=True, capture_output=True)
    subprocess.run([kubectl, "--kubeconfig", str(kubeconfig), "wait", "--for=condition=Established", "crd",
                    "--all", "--timeout=120s"], check=True, capture_output=True)


def _apply_bundle(kubeconfig: Path, env: dict[str, str]) -> None:
    _kubectl_apply(kubeconfig, subprocess.run([sys.executable, "-m", "pyvolcano", "install"], check=True,
                                              capture_output=True, env=env).stdout)


def _apply_volcano_crds(kubeconfig: Path, crds: Path) -> None:
    """Every upstream CRD: vc-controller-manager waits for the informers of all of them."""
    _kubectl_apply(kubeconfig, b"\n---\n".join(f.read_bytes() for f in sorted(crds.glob("*.yaml"))))


def volcano_dirs() -> tuple[Path, Path] | str:
    """Upstream Volcano's binaries and CRDs directories, or why the side cannot run."""
    b = os.environ.get(VOLCANO_BIN_ENV)
    if not b:
        return f"{VOLCANO_BIN_ENV} is not set"
    bin_dir = Path(b)
    missing = [n for n in ("vc-scheduler", "vc-controller-manager") if not (bin_dir / n).is_file()]
    if missing:
        return f"{bin_dir} has no {' / '.join(missing)}"
    crds = Path(os.environ.get(VOLCANO_CRDS_ENV) or bin_dir / "crds")
    if not any(crds.glob("*.yaml")):
        return f"{crds} has no CRD files (set {VOLCANO_CRDS_ENV})"
    return bin_dir, crds


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class BoundPods:
    """The pods of namespace ``bench`` with a node, followed on the store's shared watch events
    (polling ``list`` would copy every pod five times a second on the machine being measured)."""

    def __init__(self, store: Any) -> None:
        self.store, self.since, self.bound = store, 0, set[str]()
        self.seen, self.running = set[str](), set[str]()

    def poll(self) -> tuple[int, int]:
        """(pods seen, pods bound) so far; ``running`` holds the pods Running or finished."""
        events = self.store.watch(self.since, ("Pod",), copy=False)
        for e in events:
            md = e.object.get("metadata") or {}
            if md.get("namespace") != "bench":
                continue
            name = md.get("name", "")
            if e.type == "DELETED":
                self.seen.discard(name)
                self.bound.discard(name)
                self.running.discard(name)
                continue
            self.seen.add(name)
            if (e.object.get("spec") or {}).get("nodeName"):
                self.bound.add(name)
            if (e.object.get("status") or {}).get("phase") in ("Running", "Succeeded", "Failed"):
                self.running.add(name)
        if events:
            self.since = events[-1].revision
        self.store.compact(self.store.revision if not events else events[-1].revision)
        return len(self.seen), len(self.bound)


def _wait_queue_open(client: Any, name: str = "default", timeout: float = 120) -> None:
    """Until the queue exists and is Open (created by the scheduler or the controller-manager,
    opened by the latter), so that the measured window starts with a usable queue."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            q = client.get("Queue", None, name)
        except NotFound:  # not created yet
            q = {}
        if (q.get("status") or {}).get("state") == "Open":
            return
        time.sleep(0.5)
    raise SystemExit(f"queue {name} is not Open after {timeout:.0f} s")


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
    etcd_cpu: float = 0.0  # etcd's part of api_cpu
    requests: dict[str, int] = field(default_factory=dict)  # API requests by "VERB resource[/sub]"
    latency: dict[str, float] = field(default_factory=dict)  # their mean server-side latency, ms
    load: tuple[float, float] = (0.0, 0.0)  # the 1-minute load average at the start and at the end
    # The same from the start to the settled state: every pod Running and no write but the fake
    # kubelets' heartbeats for SETTLE_QUIET seconds (what each side still writes after the last bind).
    settle_wall: float = 0.0
    settle_cpu: dict[str, float] = field(default_factory=dict)
    settle_api_cpu: float = 0.0
    settle_requests: dict[str, int] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.bound / self.wall if self.wall > 0 else 0.0


class Run:
    """One case on one side: a fresh control plane, fake nodes, the side's components."""

    def __init__(self, case: str, side: str, pods: int, nodes: int, logdir: Path, env: dict[str, str],
                 assets: Path, volcano_bin: Path | None = None, profile: float = 0.0,
                 timeline: float = 0.0) -> None:
        self.case, self.side, self.pods, self.nodes = case, side, pods, nodes
        self.logdir, self.env, self.assets, self.volcano_bin = logdir, env, assets, volcano_bin
        self.profile, self.timeline = profile, timeline
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.log = open(logdir / f"{case}-{side}.log", "wb")  # noqa: SIM115 - closed in run()

    def _spawn(self, name: str, argv: list[str]) -> None:
        self.procs[name] = subprocess.Popen(argv, stdout=self.log, stderr=self.log, env=self.env)

    def _pyvolcano(self, name: str, *args: str) -> None:
        self._spawn(name, [sys.executable, "-m", "pyvolcano", *args, "--kube-api-qps", QPS, "--kube-api-burst", QPS])

    def _volcano(self, name: str, binary: str, *args: str) -> None:
        assert self.volcano_bin is not None
        self._spawn(name, [str(self.volcano_bin / binary), *args, "--logtostderr", "--leader-elect=false",
                           f"--kube-api-qps={QPS}", f"--kube-api-burst={QPS}",
                           f"--listen-address=127.0.0.1:{_free_port()}",
                           f"--healthz-address=127.0.0.1:{_free_port()}"])

    def _scheduler_conf(self, cp: ControlPlane) -> Path:
        # A folder of its own: vc-scheduler reloads on any write in the configuration's folder.
        d = cp.workdir / "scheduler-conf"
        d.mkdir(exist_ok=True)
        conf = d / "volcano-scheduler.conf"
        conf.write_text(CHART_SCHEDULER_CONF)
        return conf

    def _start_scheduler(self, cp: ControlPlane) -> None:
        if self.side == "pyvolcano":
            self._pyvolcano("scheduler", "scheduler", "--kubeconfig", str(cp.kubeconfig), "--leader-elect=false",
                            "--scheduler-conf", str(self._scheduler_conf(cp)))
            return
        if self.side == "volcano":
            self._volcano("scheduler", "vc-scheduler", f"--kubeconfig={cp.kubeconfig}",
                          f"--scheduler-conf={self._scheduler_conf(cp)}")
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
        if self.side == "volcano":
            self._volcano("controller-manager", "vc-controller-manager", f"--kubeconfig={cp.kubeconfig}")
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
            scheduler = "default-scheduler" if self.side == "kube" else "volcano"
            objs = [] if self.side == "kube" else [_podgroup(g, n) for g, n in groups]
            return objs + [_pod(f"{g}-{k}", g, scheduler) for g, n in groups for k in range(n)]
        make = _batch_job if self.side == "kube" else _vcjob
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
            # ... and their Leases, so that registration is not in the measured window.
            while len(creator.list("Lease", "kube-node-lease")) < self.nodes and time.monotonic() < deadline:
                time.sleep(0.5)
            objs = self._objects()
            total = self.pods
            pods = BoundPods(store)
            create: Callable[[dict[str, Any]], Any] = creator.create
            if self.side == "kube" and not self.case.startswith("sched-"):
                # The store's "Job" is Volcano's; batch/v1 Jobs are posted as they are.
                def create(obj: dict[str, Any]) -> Any:
                    return creator.client.request("POST", "/apis/batch/v1/namespaces/bench/jobs", body=obj)
            api_pids = [p.pid for p in cp._procs]  # etcd first
            etcd0 = 0.0
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
                while pods.poll()[0] < total:
                    time.sleep(0.2)
                api0 = sum(_cpu_seconds(pid) for pid in api_pids)
                etcd0 = _cpu_seconds(api_pids[0])
                req0 = _api_requests(creator.client)
                load0 = os.getloadavg()[0]
                t0 = time.monotonic()
                self._start_scheduler(cp)
            else:
                self._start_controllers(cp)
                self._start_scheduler(cp)
                time.sleep(5)
                if self.side != "kube":
                    _wait_queue_open(creator)
                api0 = sum(_cpu_seconds(pid) for pid in api_pids)
                etcd0 = _cpu_seconds(api_pids[0])
                req0 = _api_requests(creator.client)
                load0 = os.getloadavg()[0]
                t0 = time.monotonic()
                with ThreadPoolExecutor(16) as pool:
                    list(pool.map(create, objs))
            if self.profile:
                self._start_profiles(cp.kubeconfig)
            bound = 0
            shown = t0
            while time.monotonic() - t0 < 3600:
                bound = pods.poll()[1]
                if self.timeline and time.monotonic() - shown >= self.timeline:
                    shown = time.monotonic()
                    self._show_timeline(creator, pods, shown - t0)
                if bound >= total:
                    break
                if any(p.poll() is not None for p in self.procs.values()):
                    print(f"  {self.case}/{self.side}: a component exited; see {self.log.name}")
                    break
                time.sleep(0.2)
            wall = time.monotonic() - t0
            res = Result(self.case, self.side, total, bound, wall,
                         api_cpu=sum(_cpu_seconds(pid) for pid in api_pids) - api0,
                         etcd_cpu=_cpu_seconds(api_pids[0]) - etcd0,
                         load=(load0, os.getloadavg()[0]))
            delta = _api_requests(creator.client) - req0
            res.requests = {k: v for k, v in _requests_only(delta).items() if v}
            res.latency = _latencies(delta)
            for name in ("controller-manager", "scheduler"):
                if name in self.procs:
                    res.cpu[name] = _cpu_seconds(self.procs[name].pid)
                    res.rss[name] = _peak_rss_mib(self.procs[name].pid)
            if bound >= total:
                self._settle(res, pods, creator.client, req0, api_pids, api0, t0)
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


    def _show_timeline(self, creator: Any, pods: BoundPods, at: float) -> None:
        jobs = pgs = 0
        phases: Counter[str] = Counter()
        if self.side == "kube":
            data = creator.client.request("GET", "/apis/batch/v1/namespaces/bench/jobs") or {}
            jobs = len(data.get("items") or ())
        elif not self.case.startswith("sched-"):
            jobs = len(creator.list("Job", "bench"))
        if self.side != "kube":
            groups = creator.list("PodGroup", "bench")
            pgs = len(groups)
            phases.update(str((g.get("status") or {}).get("phase") or "-") for g in groups)
        print(f"    {at:6.1f} s: jobs {jobs}, PodGroups {pgs} "
              f"({', '.join(f'{k} {v}' for k, v in sorted(phases.items()))}), pods {len(pods.seen)}, "
              f"bound {len(pods.bound)}, running {len(pods.running)}", flush=True)

    def _start_profiles(self, kubeconfig: Path) -> None:
        """CPU profiles of the measured window's first ``profile`` seconds: kube-apiserver's own
        (``/debug/pprof/profile``, read with ``go tool pprof``) and, where py-spy is installed, the
        pyvolcano components' (py-spy's collapsed stacks of the samples holding the GIL, i.e. their
        CPU, not their waiting); files in the log directory."""
        stem = self.logdir / f"{self.case}-{self.side}"

        def apiserver() -> None:
            long = KubeClient(load_config(str(kubeconfig)), timeout=self.profile + 60)
            resp = long.transport.request("GET", "/debug/pprof/profile",
                                          params={"seconds": int(self.profile)}, headers={"Accept": "*/*"})
            Path(f"{stem}-apiserver.pprof").write_bytes(resp.content)
            long.close()

        threading.Thread(target=apiserver, daemon=True).start()
        spy = shutil.which("py-spy")
        if self.side == "pyvolcano" and spy:
            for name, proc in self.procs.items():
                if name in ("controller-manager", "scheduler"):
                    subprocess.Popen([spy, "record", "--pid", str(proc.pid), "--duration", str(int(self.profile)),
                                      "--rate", "200", "--format", "raw", "--output", f"{stem}-{name}.txt",
                                      "--nonblocking", "--gil"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def _settle(self, res: Result, pods: BoundPods, client: Any, req0: Counter[str], api_pids: list[int],
                api0: float, t0: float) -> None:
        """Wait for every pod Running and SETTLE_QUIET seconds without a write other than the fake
        kubelets' heartbeats (at most SETTLE_LIMIT seconds after the last bind); the figures then."""
        deadline = time.monotonic() + SETTLE_LIMIT
        last: Counter[str] = Counter()
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            pods.poll()
            now = _requests_only(_api_requests(client))
            work = Counter({k: v for k, v in now.items() if k not in HEARTBEATS and not k.startswith(
                ("WATCH", "LIST", "GET"))})
            if work != last:
                last, quiet_since = work, time.monotonic()
            elif len(pods.running) >= res.pods and time.monotonic() - quiet_since >= SETTLE_QUIET:
                break
            time.sleep(0.5)
        res.settle_wall = quiet_since - t0
        res.settle_api_cpu = sum(_cpu_seconds(pid) for pid in api_pids) - api0
        res.settle_requests = {k: v for k, v in _requests_only(_api_requests(client) - req0).items() if v}
        for name in ("controller-manager", "scheduler"):
            if name in self.procs:
                res.settle_cpu[name] = _cpu_seconds(self.procs[name].pid)


def _print(r: Result) -> None:
    comps = ", ".join(f"{k} {r.cpu[k]:.1f} s CPU / {r.rss[k]:.0f} MiB" for k in r.cpu)
    print(f"{r.case:>12} {r.side:>9}: {r.bound}/{r.pods} bound in {r.wall:.1f} s = {r.rate:.0f} pods/s; {comps}; "
          f"apiserver+etcd {r.api_cpu:.1f} s CPU (etcd {r.etcd_cpu:.1f}); load {r.load[0]:.1f} -> {r.load[1]:.1f}",
          flush=True)
    if r.requests and r.pods:
        top = sorted(r.requests.items(), key=lambda kv: -kv[1])
        print(f"{'':>24}API requests per pod: {sum(r.requests.values()) / r.pods:.2f} — "
              + ", ".join(f"{k} {v / r.pods:.2f}" for k, v in top if v / r.pods >= 0.05
                          and not k.startswith("WATCH")), flush=True)
        slow = [(k, ms) for k, ms in r.latency.items() if r.requests.get(k, 0) / r.pods >= 0.05
                and not k.startswith("WATCH")]
        print(f"{'':>24}mean server-side latency, ms: "
              + ", ".join(f"{k} {ms:.0f}" for k, ms in sorted(slow, key=lambda kv: -kv[1])), flush=True)
    if r.settle_wall:
        comps = " + ".join(f"{r.settle_cpu[k]:.1f}" for k in r.settle_cpu)
        top = sorted(r.settle_requests.items(), key=lambda kv: -kv[1])
        print(f"{'':>24}settled after {r.settle_wall:.1f} s (every pod Running, the writes done): component CPU "
              f"{comps} s; apiserver+etcd {r.settle_api_cpu:.1f} s; requests per pod "
              f"{sum(r.settle_requests.values()) / r.pods:.2f} — "
              + ", ".join(f"{k} {v / r.pods:.2f}" for k, v in top if v / r.pods >= 0.05
                          and not k.startswith("WATCH")), flush=True)


def _cell(r: Result | None) -> str:
    if r is None:
        return "—"
    cpu = " + ".join(f"{r.cpu[k]:.1f}" for k in ("controller-manager", "scheduler") if k in r.cpu)
    rss = " / ".join(f"{r.rss[k]:.0f}" for k in ("controller-manager", "scheduler") if k in r.rss)
    done = "" if r.bound >= r.pods else f" ({r.bound}/{r.pods} bound)"
    return f"{r.rate:.0f} pods/s{done}; CPU {cpu} s; {rss} MiB; API {r.api_cpu:.1f} s"


def _table(results: list[Result]) -> None:
    """One row per case, a column per side, then the ratios pyvolcano / Kubernetes and pyvolcano /
    upstream Volcano: pods/s, and component CPU as the other side's ÷ pyvolcano's (above 1 is
    better for pyvolcano)."""
    by = {(r.case, r.side): r for r in results}
    print("\nEach cell: pods/s; component CPU s (controller-manager + scheduler); peak RSS MiB (same order); "
          "kube-apiserver + etcd CPU s.")
    print("\n| case | Kubernetes | pyvolcano | upstream Volcano | pyvolcano ÷ Kubernetes: pods/s; CPU | "
          "pyvolcano ÷ Volcano: pods/s; CPU |")
    print("|---|---|---|---|---:|---:|")
    for case in CASES:
        k, p, v = by.get((case, "kube")), by.get((case, "pyvolcano")), by.get((case, "volcano"))
        if k is None and p is None and v is None:
            continue
        print(f"| {case} | {_cell(k)} | {_cell(p)} | {_cell(v)} | {_ratio(p, k)} | {_ratio(p, v)} |")
    print("\nTo the settled state (every pod Running, the writes done), per pod: API requests (without the "
          "fake kubelets' heartbeats); component CPU ms; kube-apiserver + etcd CPU ms.")
    print("\n| case | Kubernetes | pyvolcano | upstream Volcano |")
    print("|---|---|---|---|")
    for case in CASES:
        cells = [_settled_cell(by.get((case, side))) for side in SIDES]
        if any(c != "—" for c in cells):
            print(f"| {case} | " + " | ".join(cells) + " |")
    print("\nload average (1 min) at each case's start -> end: "
          + ", ".join(f"{r.case}/{r.side} {r.load[0]:.1f} -> {r.load[1]:.1f}" for r in results))


def _settled_cell(r: Result | None) -> str:
    if r is None or not r.settle_wall:
        return "—"
    work = sum(v for k, v in r.settle_requests.items() if k not in HEARTBEATS and not k.startswith("WATCH"))
    return (f"{work / r.pods:.2f} req; {1000 * sum(r.settle_cpu.values()) / r.pods:.1f} ms; "
            f"{1000 * r.settle_api_cpu / r.pods:.1f} ms ({r.settle_wall:.0f} s)")


def _ratio(p: Result | None, other: Result | None) -> str:
    if p is None or other is None or not other.rate:
        return "—"
    oc, pc = sum(other.cpu.values()), sum(p.cpu.values())
    return f"{p.rate / other.rate:.2f}; {oc / pc if pc else 0:.2f}"


def _version(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except OSError as e:
        return str(e)
    return " ".join((out.stdout + out.stderr).split())[:120]


def _sitting(a: argparse.Namespace, assets: Path, volcano: tuple[Path, Path] | str, env: dict[str, str]) -> None:
    """What a reader needs to repeat the sitting: the command, the sizes, the binaries, the load."""
    print("command:", " ".join([sys.executable, *sys.argv]))
    print(f"started {time.strftime('%Y-%m-%d %H:%M:%S %z')}; {os.cpu_count()} CPUs; load average "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(f"nodes {a.nodes}; pods per case {a.pods}; cases {', '.join(a.only or CASES)}")
    print("kube-apiserver:", _version([str(assets / "kube-apiserver"), "--version"]))
    src = env.get("PYTHONPATH", "").split(os.pathsep)[0] or "(installed)"
    described = subprocess.run(["git", "-C", src, "describe", "--always", "--dirty"], capture_output=True,
                               text=True, check=False) if src != "(installed)" else None
    rev = described.stdout.strip() if described is not None and described.returncode == 0 else "(no git commit)"
    print(f"pyvolcano: {src} {rev}")
    if isinstance(volcano, str):
        print(f"upstream Volcano: skipped ({volcano})")
    else:
        print(f"upstream Volcano: {volcano[0]}: {_version([str(volcano[0] / 'vc-scheduler'), '--version'])}; "
              f"CRDs {volcano[1]}")
    print(flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=10_000, help="pods per case (a multiple of 20)")
    ap.add_argument("--only", choices=CASES, action="append", help="run this case (repeatable; default all)")
    ap.add_argument("--side", choices=SIDES, action="append",
                    help="run this side (repeatable; default every side whose binaries are found)")
    ap.add_argument("--pyvolcano-src", type=Path, help="run the pyvolcano components from this src directory")
    ap.add_argument("--profile", type=float, default=0.0, metavar="SECONDS",
                    help="record CPU profiles of kube-apiserver and the pyvolcano components for the first "
                         "SECONDS of each measured window (files in the log directory)")
    ap.add_argument("--timeline", type=float, default=0.0, metavar="SECONDS",
                    help="every SECONDS, print how many jobs, PodGroups (by phase), pods and bound pods exist")
    a = ap.parse_args()
    assets = assets_dir()
    if assets is None:
        sys.exit("KUBEBUILDER_ASSETS must name a directory with etcd and kube-apiserver")
    sides = [s for s in SIDES if s in (a.side or SIDES)]
    if "kube" in sides and not all((assets / b).is_file() for b in ("kube-scheduler", "kube-controller-manager")):
        print(f"{assets} has no kube-scheduler / kube-controller-manager: the Kubernetes side is skipped")
        sides.remove("kube")
    volcano = volcano_dirs()
    if "volcano" in sides and isinstance(volcano, str):
        print(f"upstream Volcano's side is skipped: {volcano} (set {VOLCANO_BIN_ENV} to the directory with "
              f"vc-scheduler and vc-controller-manager, and {VOLCANO_CRDS_ENV} or its crds/ to upstream's CRDs)")
        sides.remove("volcano")
    env = dict(os.environ)
    if a.pyvolcano_src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(a.pyvolcano_src.resolve()), env.get("PYTHONPATH", "")])
    _sitting(a, assets, volcano, env)
    logdir = Path(tempfile.mkdtemp(prefix="pyvolcano-kube-e2e-"))
    results: list[Result] = []
    for case in a.only or CASES:
        for side in sides:
            with ControlPlane(extra_args=("--max-requests-inflight=2000",
                                          "--max-mutating-requests-inflight=1000")) as cp:
                if side == "volcano":
                    assert not isinstance(volcano, str)
                    _apply_volcano_crds(cp.kubeconfig, volcano[1])
                else:
                    _apply_bundle(cp.kubeconfig, env)
                ns = connect(kubeconfig=str(cp.kubeconfig), kinds=())
                ns.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}})
                ns.stop()
                vbin = None if isinstance(volcano, str) else volcano[0]
                r = Run(case, side, a.pods, a.nodes, logdir, env, assets, vbin, a.profile, a.timeline).run(cp)
            _print(r)
            results.append(r)
    _table(results)
    print(f"logs: {logdir}")


if __name__ == "__main__":
    main()
