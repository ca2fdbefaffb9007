"""The pdb, cdp and resourcequota plugins and the PodGroup controller's workload handling on a real
kube-apiserver, with kube-controller-manager's ReplicaSet, disruption and resource quota
controllers keeping the objects' status as on a real cluster.

Runs when ``KUBEBUILDER_ASSETS`` names a directory with ``etcd``, ``kube-apiserver`` and
``kube-controller-manager``, and ``kubectl`` is on PATH; otherwise every test is skipped. Each
pyvolcano component runs as its own process with its own ServiceAccount token (RBAC enforced).
"""

from __future__ import annotations

import json
import shutil
import signal
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

pytestmark = [
    pytest.mark.skipif(assets_dir() is None or not (assets_dir() / "kube-controller-manager").is_file(),  # type: ignore[operator]
                       reason=f"no real control plane: set {ASSETS_ENV} to a directory with etcd, kube-apiserver "
                              "and kube-controller-manager"),
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH"),
]

NS = "volcano-system"
_wait = partial(wait_for, interval=0.25)

SCHEDULER_CONF = """
actions: "enqueue, allocate, preempt"
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
  - name: resourcequota
"""
# gang's Preemptable is off so that the budget alone decides what the low ReplicaSet (a gang of
# two) may lose. No proportion: its enqueue vote would keep the urgent PodGroup Pending (the queue's share is
# used up), and preempt only acts for admitted (Inqueue) PodGroups.


class Cluster:
    def __init__(self, cp: ControlPlane, workdir: Path):
        self.cp = cp
        self.workdir = workdir
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        r = subprocess.run(["kubectl", "--kubeconfig", str(self.cp.kubeconfig), *args], input=input,
                           capture_output=True, text=True, timeout=60)
        if check and r.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {r.stderr}")
        return r

    def apply(self, *docs: dict[str, Any]) -> None:
        self.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))

    def get(self, *args: str) -> Any:
        out = self.kubectl("get", *args, "-o", "json", check=False)
        return json.loads(out.stdout) if out.returncode == 0 else None

    def launch(self, name: str, argv: list[str]) -> None:
        log = open(self.workdir / f"{name}.log", "ab")  # noqa: SIM115 - closed when the process ends
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=log)

    def start(self, name: str, *args: str, kubeconfig: Path) -> None:
        self.launch(name, [sys.executable, "-m", "pyvolcano", *args, "--kubeconfig", str(kubeconfig)])

    def stop_all(self) -> None:
        for p in self.procs.values():
            p.send_signal(signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("envtest-plugins")
    with ControlPlane() as cp:
        c = Cluster(cp, workdir)
        assets = assets_dir()
        assert assets is not None
        c.launch("kube-controller-manager", [
            str(assets / "kube-controller-manager"), f"--kubeconfig={cp.kubeconfig}",
            "--controllers=replicaset,disruption,resourcequota,garbagecollector", "--leader-elect=false",
            "--secure-port=0", "--concurrent-resource-quota-syncs=2", "--resource-quota-sync-period=5s"])
        bundle = subprocess.run([sys.executable, "-m", "pyvolcano", "install", "--fake-nodes"], check=True,
                                capture_output=True, text=True).stdout
        docs = [d for d in yaml.safe_load_all(bundle) if d]
        c.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([d for d in docs if d["kind"] != "Deployment"]))
        c.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        conf = workdir / "scheduler.conf"
        conf.write_text(SCHEDULER_CONF)
        sa = {name: cp.service_account_kubeconfig(NS, name, workdir / f"{name}.kubeconfig")
              for name in ("volcano-scheduler", "volcano-controllers", "volcano-fake-nodes")}
        c.start("controller-manager", "controller-manager", "--leader-elect=false",
                kubeconfig=sa["volcano-controllers"])
        c.start("scheduler", "scheduler", "--leader-elect=false", "--scheduler-conf", str(conf),
                kubeconfig=sa["volcano-scheduler"])
        c.start("fake-nodes", "fake-nodes", "--count", "1", "--cpu", "4", "--memory", "16Gi", "--speed", "1",
                kubeconfig=sa["volcano-fake-nodes"])
        try:
            _wait(lambda: (c.get("queue", "default") or {}).get("status", {}).get("state") == "Open", 60,
                  "the default queue")
            _wait(lambda: len((c.get("nodes") or {}).get("items", [])) == 1, 60, "the fake node")
            yield c
        finally:
            c.stop_all()


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value}


def pod_template(app: str, cpu: str, priority: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": app}},
            "spec": {"schedulerName": "volcano", "priorityClassName": priority,
                     "containers": [{"name": "c", "image": "busybox",
                                     "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}}


def phases(c: Cluster, selector: str, ns: str = "default") -> list[str]:
    items = (c.get("pods", "-n", ns, "-l", selector) or {}).get("items", [])
    return sorted(p["status"].get("phase", "") for p in items)


def test_a_replica_set_gets_one_podgroup_and_a_live_budget_holds_off_preemption(cluster: Cluster) -> None:
    c = cluster
    c.apply(priority_class("low", 1), priority_class("high", 1000))
    c.apply({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "low",
                                                                                    "namespace": "default"},
             "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "low"}}}})
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
          "metadata": {"name": "low", "namespace": "default",
                       "annotations": {"scheduling.volcano.sh/group-min-member": "2"}},
          "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "low"}},
                   "template": pod_template("low", "2", "low")}}
    c.apply(rs)
    _wait(lambda: phases(c, "app=low") == ["Running", "Running"], 90, "the ReplicaSet's two pods to run")
    uid = c.get("replicaset", "low")["metadata"]["uid"]
    pg = c.get("podgroup", f"podgroup-{uid}")
    assert pg["spec"]["minMember"] == 2  # inherited from the ReplicaSet (--inherit-owner-annotations)
    _wait(lambda: (c.get("pdb", "low") or {}).get("status", {}).get("currentHealthy") == 2, 60,
          "the disruption controller to count the healthy pods")
    assert c.get("pdb", "low")["status"]["disruptionsAllowed"] == 0

    urgent = pod_template("urgent", "2", "high")
    urgent["metadata"].update(name="urgent", namespace="default")
    c.apply({"apiVersion": "v1", "kind": "Pod", **urgent})
    def reasons() -> list[str]:
        return [cond.get("reason", "") for pg in (c.get("podgroups") or {}).get("items", [])
                for cond in pg.get("status", {}).get("conditions") or []]

    try:
        _wait(lambda: "Preemption.DisruptionBudget" in reasons(), 60,
              "the urgent pod's PodGroup to say the budget holds preemption off")
    except AssertionError as e:
        raise AssertionError(f"{e}; PodGroup conditions: {json.dumps((c.get('podgroups') or {}).get('items'))}; "
                             f"scheduler log: {(c.workdir / 'scheduler.log').read_text()[-3000:]}") from None
    assert phases(c, "app=low") == ["Running", "Running"]

    # The budget is loosened: the disruption controller allows one disruption, the scheduler sees
    # the change through its watch and preempts one low pod for the urgent one.
    c.kubectl("patch", "pdb", "low", "--type=merge", "-p", '{"spec": {"minAvailable": 1}}')
    _wait(lambda: phases(c, "app=urgent") == ["Running"], 90, "the urgent pod to run after one preemption")

    # Scaled to zero: the ReplicaSet's PodGroup goes.
    c.kubectl("scale", "replicaset", "low", "--replicas=0")
    _wait(lambda: c.get("podgroup", f"podgroup-{uid}") is None, 60, "the ReplicaSet's PodGroup to be deleted")


def test_a_podgroup_waits_for_its_namespaces_quota(cluster: Cluster) -> None:
    c = cluster
    c.kubectl("create", "namespace", "team")
    c.apply({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "team", "namespace": "team"},
             "spec": {"hard": {"cpu": "2", "pods": "10"}}})
    _wait(lambda: (c.get("resourcequota", "team", "-n", "team") or {}).get("status", {}).get("used") is not None,
          60, "the quota controller to count the namespace")

    def podgroup(name: str, cpu: str) -> dict[str, Any]:
        return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                "metadata": {"name": name, "namespace": "team"},
                "spec": {"minMember": 1, "queue": "default", "minResources": {"cpu": cpu}},
                "status": {"phase": "Pending"}}

    c.apply(podgroup("small", "1"), podgroup("big", "3"))
    _wait(lambda: (c.get("podgroup", "small", "-n", "team") or {}).get("status", {}).get("phase") == "Inqueue", 60,
          "the small PodGroup to be admitted")
    assert c.get("podgroup", "big", "-n", "team")["status"]["phase"] == "Pending"
