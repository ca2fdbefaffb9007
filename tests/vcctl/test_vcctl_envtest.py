"""vcctl, snapshot and the decision recorder on a real kube-apiserver.

Runs when ``KUBEBUILDER_ASSETS`` names a directory with ``etcd`` and ``kube-apiserver`` and
``kubectl`` is on PATH; otherwise every test is skipped with the reason. The bundle of
``pyvolcano install`` is applied (all but its Deployments); the admission webhooks (which
default what ``vcctl job run`` leaves out, as upstream's do), the controller manager, one
scheduler (recording its sessions) and fake nodes run as processes with the admin kubeconfig.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
import yaml

from pyvolcano.kube.envtest import ASSETS_ENV, ControlPlane, assets_dir, issue_cert
from waiting import free_port, wait_for

pytestmark = [
    pytest.mark.skipif(assets_dir() is None, reason=f"no real kube-apiserver: set {ASSETS_ENV} to a directory "
                       "with etcd and kube-apiserver"),
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH"),
]

# Each try runs kubectl or reads the API server: a quarter of a second between tries.
_wait = partial(wait_for, interval=0.25)


class Live:
    def __init__(self, cp: ControlPlane, workdir: Path):
        self.cp = cp
        self.workdir = workdir
        self.procs: list[subprocess.Popen[bytes]] = []
        self.record = workdir / "record"

    def run(self, *args: str, module: str = "pyvolcano.vcctl", kubeconfig: bool = True,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", module, *args]
        if kubeconfig:
            cmd += ["--kubeconfig", str(self.cp.kubeconfig)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if check and r.returncode != 0:
            raise AssertionError(f"{' '.join(args)}: exit {r.returncode}: {r.stderr}")
        return r

    def vcctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(*args, check=check)

    def kubectl(self, *args: str, input: str | None = None) -> str:
        r = subprocess.run(["kubectl", "--kubeconfig", str(self.cp.kubeconfig), *args], input=input,
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {r.stderr}")
        return r.stdout

    def start(self, name: str, *args: str) -> None:
        log = open(self.workdir / f"{name}.log", "ab")  # noqa: SIM115 - closed when the process ends
        self.procs.append(subprocess.Popen([sys.executable, "-m", "pyvolcano", *args, "--kubeconfig",
                                            str(self.cp.kubeconfig)], stdout=log, stderr=log))

    def job_phase(self, name: str) -> str:
        r = self.vcctl("job", "view", name, "-o", "json", check=False)
        return (json.loads(r.stdout).get("status") or {}).get("state", {}).get("phase", "") if r.returncode == 0 \
            else ""


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    workdir = tmp_path_factory.mktemp("vcctl-envtest")
    with ControlPlane() as cp:
        c = Live(cp, workdir)
        bundle = c.run("install", module="pyvolcano", kubeconfig=False).stdout
        docs = [d for d in yaml.safe_load_all(bundle) if d and d["kind"] != "Deployment"]
        crds = [d for d in docs if d["kind"] == "CustomResourceDefinition"]
        c.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(crds))
        c.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        c.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([d for d in docs if d not in crds]))
        cert, key = issue_cert(cp.ca, "volcano-admission", hosts=("127.0.0.1",), server=True)
        certs = workdir / "certs"
        certs.mkdir()
        (certs / "tls.crt").write_bytes(cert)
        (certs / "tls.key").write_bytes(key)
        (certs / "ca.crt").write_bytes(cp.ca.ca_cert)
        port = free_port()
        c.start("admission", "admission", "--tls-cert-file", str(certs / "tls.crt"), "--tls-private-key-file",
                str(certs / "tls.key"), "--ca-cert-file", str(certs / "ca.crt"), "--listen-address", "127.0.0.1",
                "--port", str(port), "--webhook-url", f"https://127.0.0.1:{port}")
        _wait(lambda: "volcano" in c.kubectl("get", "validatingwebhookconfigurations", "-o", "name"), 30,
              "the admission webhooks to register")
        c.start("controller-manager", "controller-manager", "--leader-elect=false")
        c.start("scheduler", "scheduler", "--leader-elect=false", "--record", str(c.record), "--record-sessions",
                "30")
        c.start("fake-nodes", "fake-nodes", "--count", "2", "--cpu", "4", "--memory", "16Gi",
                "--default-duration", "600s")
        _wait(lambda: "fake-node-1" in c.kubectl("get", "nodes", "-o", "name"), 60, "2 fake nodes")
        try:
            yield c
        finally:
            for p in c.procs:
                p.send_signal(signal.SIGTERM)
            for p in c.procs:
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()


def test_queue_create_list_get_and_operate(live: Live) -> None:
    # The default queue is there already (the scheduler creates it at start-up, as upstream's does).
    live.vcctl("queue", "create", "research", "-w", "3")
    out = live.vcctl("queue", "list").stdout.splitlines()
    assert out[0].split() == ["Name", "Weight", "State", "Parent", "Inqueue", "Pending", "Running", "Unknown",
                              "Completed"]
    rows = {line.split()[0]: line.split()[1:3] for line in out[1:]}
    assert rows["default"] == ["1", "Open"] and rows["research"] == ["3", "Open"]
    live.vcctl("queue", "operate", "-n", "research", "-a", "close")
    _wait(lambda: json.loads(live.vcctl("queue", "get", "research", "-o", "json").stdout)["status"].get("state")
          == "Closed", 30, "the queue controller to close research")
    live.vcctl("queue", "operate", "research", "-a", "update", "-w", "5")
    assert live.vcctl("queue", "get", "research").stdout.splitlines()[1].split()[:3] == ["research", "5", "Closed"]
    live.vcctl("queue", "operate", "-n", "research", "-a", "open")
    _wait(lambda: live.vcctl("queue", "get", "research").stdout.splitlines()[1].split()[2] == "Open", 30,
          "the queue controller to open research")
    live.vcctl("queue", "delete", "-n", "research")
    names = live.vcctl("queue", "list", "-o", "name").stdout.splitlines()
    assert "queue.scheduling.volcano.sh/default" in names and "queue.scheduling.volcano.sh/research" not in names


def test_job_run_list_view_suspend_resume_and_pods(live: Live) -> None:
    r = live.vcctl("job", "run", "-N", "demo", "-r", "2", "-m", "2", "-R", "cpu=1,memory=1Gi", "-L",
                   "cpu=1,memory=1Gi")
    assert r.stdout == "run job demo successfully\n"
    _wait(lambda: live.job_phase("demo") == "Running", 90, "demo to run")
    rows = live.vcctl("job", "list").stdout.splitlines()
    assert rows[0].split()[:4] == ["Name", "Creation", "Phase", "JobType"]
    assert rows[1].split()[:6] == ["demo", rows[1].split()[1], "Running", "Batch", "2", "2"]
    assert json.loads(live.vcctl("job", "list", "-A", "-o", "json").stdout)["items"][0]["metadata"]["name"] == "demo"
    view = live.vcctl("job", "view", "-N", "demo").stdout
    assert view.startswith("Name:       \tdemo\n") and "    Phase:\tRunning\n" in view
    pods = live.vcctl("pod", "list", "-j", "demo").stdout.splitlines()
    assert [p.split()[2] for p in pods[1:]] == ["Running", "Running"]
    assert len(live.vcctl("pod", "list", "-q", "default", "-o", "name").stdout.splitlines()) == 2
    live.vcctl("job", "suspend", "-N", "demo")
    _wait(lambda: live.job_phase("demo") == "Aborted", 90, "demo to be aborted")
    live.vcctl("job", "resume", "demo")
    _wait(lambda: live.job_phase("demo") == "Running", 90, "demo to run again")


def test_snapshot_of_the_live_cluster_reads_like_the_cluster(live: Live) -> None:
    path = live.workdir / "snapshot.yaml"
    r = live.run("snapshot", "-o", str(path), module="pyvolcano")
    assert f"wrote {path}" in r.stderr
    kinds = [d["kind"] for d in yaml.safe_load_all(path.read_text()) if d]
    assert {"Node", "Pod", "PodGroup", "Queue", "Job"} <= set(kinds)
    for view in (["job", "list", "-A"], ["queue", "list"]):
        for _ in range(10):  # the controllers may still be writing status: compare a settled state
            offline = live.run(*view, "--cluster", str(path), kubeconfig=False).stdout
            if offline == live.vcctl(*view).stdout:
                break
            time.sleep(1)
            live.run("snapshot", "-o", str(path), module="pyvolcano")
        assert offline == live.vcctl(*view).stdout
    rows = lambda out: [line.split()[:-1] for line in out.splitlines()]  # noqa: E731 - ages move on
    pods = ["pod", "list", "-A", "--no-headers"]
    assert rows(live.run(*pods, "--cluster", str(path), kubeconfig=False).stdout) == rows(live.vcctl(*pods).stdout)
    sched = live.run("schedule", str(path), "-o", "json", module="pyvolcano", kubeconfig=False)
    assert set(json.loads(sched.stdout)) == {"binds", "evictions", "pipelined", "podgroups", "stats", "diagnoses"}


def test_recorded_live_sessions_replay_to_the_same_decisions(live: Live) -> None:
    sessions = _wait(lambda: sorted(p for p in live.record.iterdir() if p.name.startswith("session-")), 30,
                     "recorded sessions")
    assert len(sessions) <= 30
    with_binds = [s for s in sessions if json.loads((s / "result.json").read_text())["binds"]]
    for s in (with_binds or sessions)[-3:]:
        r = live.run("replay", str(s), "-o", "json", module="pyvolcano", kubeconfig=False, check=False)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["identical"] is True


def test_job_delete(live: Live) -> None:
    assert live.vcctl("job", "delete", "-N", "demo").stdout == "delete job demo successfully\n"
    _wait(lambda: live.vcctl("job", "list", check=False).stderr == "No resources found\n", 60, "demo to go")
