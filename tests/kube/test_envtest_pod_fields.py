"""Pod fields that decide placement, on a real kube-apiserver: pyvolcano against kube-scheduler.

The same pods go to kube-scheduler (nodes of pool ``kube``) and to pyvolcano's scheduler (its own
process, with the bundle's ServiceAccount and RBAC; nodes of pool ``vc``). Each pool has a
CPU-rich node (8 CPUs, 2Gi, labelled ``sandbox=true``) and a memory-rich one (2 CPUs, 16Gi):

* ``wide`` asks for 1 CPU and 100Mi in its container, which both nodes hold and the scores would
  put on the CPU-rich node, and for 4Gi at pod level (``spec.resources``, PodLevelResources):
  only the memory-rich node holds it;
* ``sandboxed`` names the RuntimeClass ``gvisor``, whose ``scheduling.nodeSelector`` the API
  server merges into the pod: it goes to the sandbox node;
* ``web-1`` and ``web-2`` use the host network with container port 8080, which the API server
  turns into host ports: they go to different nodes.

Both schedulers must give the same outcome. Needs ``KUBEBUILDER_ASSETS``, ``kubectl`` and
kube-scheduler, as ``test_envtest_volumes`` does; skipped with the reason otherwise.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from test_envtest_volumes import KUBE_SCHEDULER, KUBECTL, NS, Cluster, _wait

from pyvolcano.kube.envtest import ASSETS_ENV, ControlPlane, assets_dir

pytestmark = [
    pytest.mark.skipif(assets_dir() is None, reason=f"no real kube-apiserver: set {ASSETS_ENV} to a directory "
                       "with etcd and kube-apiserver"),
    pytest.mark.skipif(KUBE_SCHEDULER is None, reason=f"no kube-scheduler: set KUBE_SCHEDULER or put it in "
                       f"{ASSETS_ENV}"),
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is neither on PATH nor in the assets directory"),
]

GVISOR = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "gvisor"}, "handler": "runsc",
          "scheduling": {"nodeSelector": {"sandbox": "true"}}}


def _node(name: str, pool: str, cpu: str, memory: str, sandbox: bool) -> dict[str, Any]:
    res = {"cpu": cpu, "memory": memory, "pods": "110"}
    labels = {"kubernetes.io/hostname": name, "pool": pool, **({"sandbox": "true"} if sandbox else {})}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"capacity": res, "allocatable": res}}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("envtest-pod-fields")
    with ControlPlane() as cp:
        c = Cluster(cp, workdir)
        bundle = subprocess.run([sys.executable, "-m", "pyvolcano", "install"], check=True, capture_output=True,
                                text=True).stdout
        skip = {"Deployment", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "Service"}
        c.apply([d for d in yaml.safe_load_all(bundle) if d and d["kind"] not in skip])
        c.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        c.apply([GVISOR, *(_node(f"{pool}-{kind}", pool, cpu, memory, kind == "cpu")
                           for pool in ("kube", "vc") for kind, cpu, memory in (("cpu", "8", "2Gi"),
                                                                               ("mem", "2", "16Gi")))])
        try:
            yield c
        finally:
            for name in list(c.procs):
                c.stop(name)


def _pod(name: str, pool: str, scheduler: str, cpu: str, **spec: Any) -> dict[str, Any]:
    requests = {"cpu": cpu, "memory": "100Mi"}
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": pool},
                           "spec": {"schedulerName": scheduler, "nodeSelector": {"pool": pool},
                                    "containers": [{"name": "c", "image": "busybox",
                                                    "resources": {"requests": requests}}], **spec}}
    return pod


def _scenario(pool: str, scheduler: str) -> list[dict[str, Any]]:
    web = {"hostNetwork": True}
    pods = [_pod("wide", pool, scheduler, "1", resources={"requests": {"memory": "4Gi"}}),
            _pod("sandboxed", pool, scheduler, "500m", runtimeClassName="gvisor"),
            _pod("web-1", pool, scheduler, "100m", **web), _pod("web-2", pool, scheduler, "100m", **web)]
    for p in pods:
        if p["metadata"]["name"].startswith("web"):
            p["spec"]["containers"][0]["ports"] = [{"containerPort": 8080}]
    docs: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": pool}}]
    if scheduler == "volcano":
        docs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
                     "spec": {"weight": 1, "reclaimable": True}})
        for p in pods:
            group = f"pg-{p['metadata']['name']}"
            p["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": group}
            docs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                         "metadata": {"name": group, "namespace": pool}, "spec": {"minMember": 1, "queue": "default"}})
    return docs + pods


def _placed(c: Cluster, pool: str) -> dict[str, str] | None:
    pods = c.get("pods", "-n", pool)
    nodes = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in (pods or {}).get("items", [])}
    if len(nodes) == 4 and all(nodes.values()):
        return {name: node.removeprefix(f"{pool}-") for name, node in nodes.items()}
    return None


def test_pod_level_requests_runtime_classes_and_host_network_ports_place_pods_as_kube_scheduler_does(
        cluster: Cluster) -> None:
    c = cluster
    assert KUBE_SCHEDULER is not None
    c.start("kube-scheduler", [KUBE_SCHEDULER, "--kubeconfig", str(c.cp.kubeconfig), "--leader-elect=false",
                               "--secure-port=0"])
    c.apply(_scenario("kube", "default-scheduler"))
    kube = _wait(lambda: _placed(c, "kube"), 90, "kube-scheduler's placements")
    c.stop("kube-scheduler")

    sa = c.cp.service_account_kubeconfig(NS, "volcano-scheduler", c.workdir / "scheduler.kubeconfig")
    c.start("pyvolcano-scheduler", [sys.executable, "-m", "pyvolcano", "scheduler", "--kubeconfig", str(sa),
                                    "--leader-elect=false"])
    c.apply(_scenario("vc", "volcano"))
    vc = _wait(lambda: _placed(c, "vc"), 90, "pyvolcano's placements")

    assert (kube["wide"], kube["sandboxed"]) == ("mem", "cpu")
    assert {kube["web-1"], kube["web-2"]} == {"cpu", "mem"}
    assert (vc["wide"], vc["sandboxed"]) == (kube["wide"], kube["sandboxed"]), c.log("pyvolcano-scheduler")[-3000:]
    assert {vc["web-1"], vc["web-2"]} == {"cpu", "mem"}
    spec = c.get("pod", "wide", "-n", "vc")["spec"]
    assert spec["resources"]["requests"] == {"memory": "4Gi"}
