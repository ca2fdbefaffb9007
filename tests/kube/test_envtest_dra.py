"""Dynamic resource allocation on a real control plane: kube-scheduler and pyvolcano, one scenario.

Runs when ``KUBEBUILDER_ASSETS`` names a directory with ``etcd`` and ``kube-apiserver``,
``kubectl`` is on PATH, and ``kube-controller-manager`` and ``kube-scheduler`` are found
(``KUBE_CONTROLLER_MANAGER`` / ``KUBE_SCHEDULER``, else in ``KUBEBUILDER_ASSETS`` or on PATH);
skipped with the reason otherwise.

The cluster: kube-apiserver serving ``resource.k8s.io/v1`` (GA), kube-controller-manager with
only its ResourceClaim controller (claims from templates, release), kube-scheduler, the
pyvolcano bundle (CRDs, RBAC), ``pyvolcano scheduler`` and ``pyvolcano fake-nodes --dra``, which
registers four 4-GPU nodes and publishes their GPUs as ResourceSlices. Two of the nodes are for
kube-scheduler's pods, two for pyvolcano's (a node selector keeps them apart). The same five
pods go to each scheduler: four claim two GPUs each from a template, one claims a GPU model no
node has. Both schedulers must give the same outcome: the four land two per node, each claim
allocated on its pod's node and reserved for it, no device given twice; the fifth waits with
a PodScheduled=False condition that says its claim cannot be allocated.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_envtest import Cluster, _wait

from pyvolcano.kube.envtest import ASSETS_ENV, ControlPlane, assets_dir


def _binary(env: str, name: str) -> str | None:
    explicit = os.environ.get(env)
    if explicit:
        return explicit if Path(explicit).is_file() else None
    assets = os.environ.get(ASSETS_ENV)
    if assets and (Path(assets) / name).is_file():
        return str(Path(assets) / name)
    return shutil.which(name)


KCM = _binary("KUBE_CONTROLLER_MANAGER", "kube-controller-manager")
KSCHED = _binary("KUBE_SCHEDULER", "kube-scheduler")

pytestmark = [
    pytest.mark.skipif(assets_dir() is None, reason=f"no real kube-apiserver: set {ASSETS_ENV} to a directory "
                       "with etcd and kube-apiserver"),
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH"),
    pytest.mark.skipif(KCM is None, reason="no kube-controller-manager: set KUBE_CONTROLLER_MANAGER or put it in "
                       f"{ASSETS_ENV}"),
    pytest.mark.skipif(KSCHED is None, reason=f"no kube-scheduler: set KUBE_SCHEDULER or put it in {ASSETS_ENV}"),
]

GPUS = 4
NODES = {"kube": ["ks-gpu-0", "ks-gpu-1"], "volcano": ["vc-gpu-0", "vc-gpu-1"]}
SCENARIO_LABEL = "example.com/scenario"

DEVICE_CLASS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.nvidia.com}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.nvidia.com"'}
"""


def _nodes() -> str:
    docs = []
    for scenario, names in NODES.items():
        for name in names:
            docs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name, SCENARIO_LABEL: scenario, "nvidia.com/gpu.product": "H100"}},
                "status": {"capacity": {"cpu": "32", "memory": "128Gi", "pods": "110", "nvidia.com/gpu": str(GPUS)}}})
    return yaml.safe_dump_all(docs)


def _workload(ns: str, scenario: str, scheduler: str) -> str:
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
         "metadata": {"name": "two-gpus", "namespace": ns},
         "spec": {"spec": {"devices": {"requests": [
             {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}]}}}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
         "metadata": {"name": "b200", "namespace": ns},
         "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
             "deviceClassName": "gpu.nvidia.com",
             "selectors": [{"cel": {"expression": 'device.attributes["gpu.nvidia.com"].productName == "B200"'}}]}}]}}}},
    ]
    for i, template in enumerate(["two-gpus"] * 4 + ["b200"]):
        name = f"p{i}"
        annotations = {}
        if scheduler == "volcano":
            annotations["scheduling.k8s.io/group-name"] = name
            docs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                         "metadata": {"name": name, "namespace": ns}, "spec": {"minMember": 1, "queue": "default"}})
        docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns,
                                                                      "annotations": annotations},
                     "spec": {"schedulerName": "volcano" if scheduler == "volcano" else "default-scheduler",
                              "nodeSelector": {SCENARIO_LABEL: scenario},
                              "containers": [{"name": "c", "image": "busybox",
                                              "resources": {"requests": {"cpu": "1"}, "claims": [{"name": "gpus"}]}}],
                              "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": template}]}})
    return yaml.safe_dump_all(docs)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("envtest-dra")
    with ControlPlane() as cp:
        c = Cluster(cp, workdir)
        bundle = subprocess.run([sys.executable, "-m", "pyvolcano", "install", "--fake-nodes"], check=True,
                                capture_output=True, text=True).stdout
        docs = [d for d in yaml.safe_load_all(bundle) if d]
        c.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([d for d in docs if d["kind"] != "Deployment"]))
        c.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        kube: dict[str, subprocess.Popen[bytes]] = {}
        for name, binary, args in (
                ("kube-controller-manager", KCM, ["--controllers=resourceclaim-controller", "--leader-elect=false",
                                                  "--secure-port=0", "--use-service-account-credentials=false"]),
                ("kube-scheduler", KSCHED, ["--leader-elect=false", "--secure-port=0"])):
            assert binary is not None
            log = open(workdir / f"{name}.log", "ab")  # noqa: SIM115 - closed when the process ends
            kube[name] = subprocess.Popen([binary, f"--kubeconfig={cp.kubeconfig}", *args], stdout=log, stderr=log)
        nodes = workdir / "nodes.yaml"
        nodes.write_text(_nodes())
        c.kubectl("apply", "-f", "-", input=DEVICE_CLASS)
        c.start("fake-nodes", "fake-nodes", "--nodes", str(nodes), "--dra")
        _wait(lambda: len((c.get("resourceslices") or {"items": []})["items"]) == 4, 60, "4 ResourceSlices")
        c.kubectl("apply", "-f", "-", input="apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\n"
                                            "metadata: {name: default}\nspec: {weight: 1}\n")
        c.start("scheduler", "scheduler", "--schedule-period", "500ms")
        try:
            yield c
        finally:
            c.stop_all()
            for p in kube.values():
                p.terminate()
                p.wait(30)


def _outcome(c: Cluster, ns: str) -> dict[str, Any]:
    pods = {p["metadata"]["name"]: p for p in c.get("pods", "-n", ns)["items"]}
    claims = c.get("resourceclaims", "-n", ns)["items"]
    return {"pods": pods, "claims": claims}


def _settled(c: Cluster, ns: str) -> bool:
    out = _outcome(c, ns)
    pods = out["pods"]
    if len(pods) != 5:
        return False
    bound = [p for p in pods.values() if p["spec"].get("nodeName")]
    waiting = [p for p in pods.values() if any(
        cond.get("type") == "PodScheduled" and cond.get("status") == "False"
        for cond in (p.get("status") or {}).get("conditions") or [])]
    allocated = [cl for cl in out["claims"] if (cl.get("status") or {}).get("reservedFor")]
    return len(bound) == 4 and len(waiting) == 1 and len(allocated) == 4


@pytest.mark.parametrize("scheduler", ["kube", "volcano"])
def test_dra_pods_land_only_where_devices_are_with_claims_allocated_and_reserved(cluster: Cluster,
                                                                                 scheduler: str) -> None:
    ns = f"dra-{scheduler}"
    cluster.kubectl("apply", "-f", "-", input=_workload(ns, scheduler, scheduler))
    _wait(lambda: _settled(cluster, ns), 120, f"{scheduler}: four pods bound, one waiting")
    out = _outcome(cluster, ns)
    pods = out["pods"]
    by_node: dict[str, int] = {}
    for p in pods.values():
        node = p["spec"].get("nodeName")
        if node:
            assert node in NODES[scheduler]
            by_node[node] = by_node.get(node, 0) + 1
    assert sorted(by_node.values()) == [2, 2]
    devices: set[tuple[str, str]] = set()
    uids = {p["metadata"]["uid"]: p for p in pods.values()}
    for claim in out["claims"]:
        status = claim.get("status") or {}
        if not status.get("reservedFor"):
            continue
        [consumer] = status["reservedFor"]
        pod = uids[consumer["uid"]]
        node = pod["spec"]["nodeName"]
        allocation = status["allocation"]
        assert json.dumps(allocation["nodeSelector"]).count(node) == 1
        for r in allocation["devices"]["results"]:
            assert r["pool"] == node
            devices.add((r["pool"], r["device"]))
    assert len(devices) == 8  # no device given twice
    [waiting] = [p for p in pods.values() if not p["spec"].get("nodeName")]
    assert waiting["metadata"]["name"] == "p4"
    [cond] = [x for x in waiting["status"]["conditions"] if x["type"] == "PodScheduled"]
    assert "cannot allocate all claims" in cond["message"]
