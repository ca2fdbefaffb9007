"""Volume binding on a real kube-apiserver with kube-controller-manager's PV binder: pyvolcano against kube-scheduler.

The same scenario runs twice on one control plane, each in its own namespace with its own
StorageClasses and local PersistentVolumes (pinned to nodes by hostname): once scheduled by
kube-scheduler, once by pyvolcano's scheduler (its own process, with the bundle's
ServiceAccount and RBAC). kube-controller-manager runs only its PV binder, which completes the
bindings both schedulers ask for, and its ephemeral volume controller. In each run

* a pod whose WaitForFirstConsumer claim matches only the PV on ``n2`` lands on ``n2``,
* a pod whose claim matches only the PV on ``n3`` lands on ``n3``,
* a pod whose claim no PV can hold (too large, no provisioner) waits, saying why,
* a pod with a generic ephemeral volume, whose claim kube-controller-manager's ephemeral volume
  controller creates from the pod's template and only the PV on ``n1`` can hold, lands on ``n1``,

and the two runs must give the same outcome: the same nodes, the same claim phases, the same
pending pod. pyvolcano's pending pod also carries its diagnosis (``Volume.NoMatchingPV``).

Needs ``KUBEBUILDER_ASSETS`` (etcd and kube-apiserver), ``kubectl`` (on PATH or in the assets
directory), and the kube-controller-manager and kube-scheduler binaries, found through
``KUBE_CONTROLLER_MANAGER`` / ``KUBE_SCHEDULER`` or in the assets directory; skipped with the
reason otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyvolcano.kube.envtest import ASSETS_ENV, ControlPlane, assets_dir
from waiting import wait_for

NS = "volcano-system"
_wait = partial(wait_for, interval=0.25)


def _binary(env: str, name: str) -> str | None:
    given = os.environ.get(env)
    if given:
        return given if Path(given).is_file() else None
    assets = assets_dir()
    if assets is not None and (assets / name).is_file():
        return str(assets / name)
    return None


def _kubectl() -> str | None:
    assets = assets_dir()
    found = shutil.which("kubectl")
    if found is None and assets is not None and (assets / "kubectl").is_file():
        found = str(assets / "kubectl")
    return found


KCM = _binary("KUBE_CONTROLLER_MANAGER", "kube-controller-manager")
KUBE_SCHEDULER = _binary("KUBE_SCHEDULER", "kube-scheduler")
KUBECTL = _kubectl()

pytestmark = [
    pytest.mark.skipif(assets_dir() is None, reason=f"no real kube-apiserver: set {ASSETS_ENV} to a directory "
                       "with etcd and kube-apiserver"),
    pytest.mark.skipif(KCM is None, reason="no kube-controller-manager: set KUBE_CONTROLLER_MANAGER or put it in "
                       f"{ASSETS_ENV}"),
    pytest.mark.skipif(KUBE_SCHEDULER is None, reason="no kube-scheduler: set KUBE_SCHEDULER or put it in "
                       f"{ASSETS_ENV}"),
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is neither on PATH nor in the assets directory"),
]


class Cluster:
    def __init__(self, cp: ControlPlane, workdir: Path):
        self.cp = cp
        self.workdir = workdir
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        assert KUBECTL is not None
        r = subprocess.run([KUBECTL, "--kubeconfig", str(self.cp.kubeconfig), *args], input=input,
                           capture_output=True, text=True, timeout=60)
        if check and r.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {r.stderr}")
        return r

    def apply(self, docs: list[dict[str, Any]]) -> None:
        self.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))

    def get(self, *args: str) -> Any:
        out = self.kubectl("get", *args, "-o", "json", check=False)
        return json.loads(out.stdout) if out.returncode == 0 else None

    def start(self, name: str, argv: list[str]) -> None:
        log = open(self.workdir / f"{name}.log", "ab")  # noqa: SIM115 - closed when the process ends
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=log)

    def stop(self, name: str) -> None:
        p = self.procs.pop(name)
        p.terminate()
        p.wait(30)

    def log(self, name: str) -> str:
        return (self.workdir / f"{name}.log").read_text(errors="replace")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("envtest-volumes")
    with ControlPlane() as cp:
        c = Cluster(cp, workdir)
        bundle = subprocess.run([sys.executable, "-m", "pyvolcano", "install"], check=True, capture_output=True,
                                text=True).stdout
        # No webhooks and no Deployments: the scheduler runs here, as its ServiceAccount.
        skip = {"Deployment", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "Service"}
        c.apply([d for d in yaml.safe_load_all(bundle) if d and d["kind"] not in skip])
        c.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        assert KCM is not None
        c.start("kube-controller-manager", [KCM, "--kubeconfig", str(cp.kubeconfig), "--leader-elect=false",
                                            "--controllers=persistentvolume-binder-controller,"
                                            "ephemeral-volume-controller", "--secure-port=0"])
        c.apply([_node(n) for n in ("n1", "n2", "n3")])
        try:
            yield c
        finally:
            for name in list(c.procs):
                c.stop(name)


def _node(name: str) -> dict[str, Any]:
    res = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"capacity": res, "allocatable": res}}


def _scenario(ns: str, scheduler: str) -> list[dict[str, Any]]:
    """Two classes with one local PV each (on n2 and n3), three claims and three pods."""
    docs: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}]
    if scheduler == "volcano":  # the queue controller would create it; it does not run here
        docs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
                     "spec": {"weight": 1, "reclaimable": True}})
    for cls, node in (("a", "n2"), ("b", "n3"), ("e", "n1")):
        docs.append({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": f"{ns}-{cls}"},
                     "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"})
        docs.append({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"{ns}-pv-{cls}"},
                     "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                              "storageClassName": f"{ns}-{cls}", "local": {"path": f"/mnt/{cls}"},
                              "persistentVolumeReclaimPolicy": "Retain",
                              "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                                  {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}}})
    for claim, cls, size in (("a", "a", "5Gi"), ("b", "b", "5Gi"), ("big", "a", "50Gi")):
        docs.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                     "metadata": {"name": f"data-{claim}", "namespace": ns},
                     "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": f"{ns}-{cls}",
                              "resources": {"requests": {"storage": size}}}})
        pod: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p-{claim}", "namespace": ns},
            "spec": {"schedulerName": scheduler,
                     "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
                     "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": f"data-{claim}"}}]}}
        if scheduler == "volcano":
            pod["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": f"pg-{claim}"}
            docs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                         "metadata": {"name": f"pg-{claim}", "namespace": ns},
                         "spec": {"minMember": 1, "queue": "default"}})
        docs.append(pod)
    eph: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p-eph", "namespace": ns},
        "spec": {"schedulerName": scheduler,
                 "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
                 "volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
                     "accessModes": ["ReadWriteOnce"], "storageClassName": f"{ns}-e",
                     "resources": {"requests": {"storage": "1Gi"}}}}}}]}}
    if scheduler == "volcano":
        eph["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "pg-eph"}
        docs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                     "metadata": {"name": "pg-eph", "namespace": ns}, "spec": {"minMember": 1, "queue": "default"}})
    docs.append(eph)
    return docs


def _outcome(c: Cluster, ns: str) -> dict[str, Any]:
    pods = {p["metadata"]["name"]: p for p in c.get("pods", "-n", ns)["items"]}
    claims = {p["metadata"]["name"]: p for p in c.get("pvc", "-n", ns)["items"]}
    out: dict[str, Any] = {"nodes": {}, "claims": {}, "waiting": {}}
    for name, p in sorted(pods.items()):
        out["nodes"][name] = p["spec"].get("nodeName")
        for cond in p.get("status", {}).get("conditions") or []:
            if cond["type"] == "PodScheduled" and cond["status"] == "False":
                out["waiting"][name] = "didn't find available persistent volumes to bind" in cond.get("message", "")
    for name, claim in sorted(claims.items()):
        out["claims"][name] = (claim.get("status", {}).get("phase"), (claim["spec"].get("volumeName") or "")
                               .replace(f"{ns}-", ""))
    return out


def _settled(c: Cluster, ns: str) -> dict[str, Any] | None:
    out = _outcome(c, ns)
    bound = [n for n, node in out["nodes"].items() if node]
    if len(bound) == 3 and "p-big" in out["waiting"] and all(
            out["claims"].get(c, ("",))[0] == "Bound" for c in ("data-a", "data-b", "p-eph-scratch")):
        return out
    return None


def test_kube_scheduler_and_pyvolcano_bind_the_same_volumes_to_the_same_nodes(cluster: Cluster) -> None:
    c = cluster
    assert KUBE_SCHEDULER is not None
    c.start("kube-scheduler", [KUBE_SCHEDULER, "--kubeconfig", str(c.cp.kubeconfig), "--leader-elect=false",
                               "--secure-port=0"])
    c.apply(_scenario("kube", "default-scheduler"))
    kube = _wait(lambda: _settled(c, "kube"), 90, "kube-scheduler's outcome")
    c.stop("kube-scheduler")

    sa = c.cp.service_account_kubeconfig(NS, "volcano-scheduler", c.workdir / "scheduler.kubeconfig")
    c.start("pyvolcano-scheduler", [sys.executable, "-m", "pyvolcano", "scheduler", "--kubeconfig", str(sa),
                                    "--leader-elect=false"])
    c.apply(_scenario("vc", "volcano"))
    vc = _wait(lambda: _settled(c, "vc"), 90, "pyvolcano's outcome")

    expected = {"nodes": {"p-a": "n2", "p-b": "n3", "p-big": None, "p-eph": "n1"},
                "claims": {"data-a": ("Bound", "pv-a"), "data-b": ("Bound", "pv-b"), "data-big": ("Pending", ""),
                           "p-eph-scratch": ("Bound", "pv-e")},
                "waiting": {"p-big": True}}
    assert kube == expected, c.log("kube-scheduler")[-3000:]
    assert vc == kube, c.log("pyvolcano-scheduler")[-3000:]
    pg = c.get("podgroup", "pg-big", "-n", "vc")
    conds = {x["type"]: x for x in pg["status"].get("conditions") or []}
    assert conds["Unschedulable"]["reason"] == "Volume.NoMatchingPV"
    assert "vc/data-big wants 50Gi ReadWriteOnce of class vc-a" in conds["Unschedulable"]["message"]
