"""The live controller-manager's secrets are unpredictable: the same job on two clusters gets
two different keys, upstream's RSA type, and the live path never loads the seeded generator."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from kube.fakeapi import FakeApiServer
from pyvolcano.kube.store import KubeStore
from pyvolcano.runtime.controller_manager import CONTROLLER_KINDS, LiveControllerManager, build_controllers
from waiting import wait_for

DETERMINISTIC = ("pyvolcano.simulator.seeded_entropy", "pyvolcano.simulator._ed25519")


def _mpi_job(name: str) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "ns"},
            "spec": {"minAvailable": 2, "schedulerName": "volcano", "queue": "default",
                     "plugins": {"ssh": [], "svc": []},
                     "tasks": [{"name": "worker", "replicas": 2, "template": {"spec": {
                         "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}]}}


def _keys_on_a_fresh_cluster(jobs: tuple[str, ...]) -> dict[str, dict[str, bytes]]:
    """Start a controller-manager as the command does, create ``jobs`` in order, return each
    job's Secret data (decoded)."""
    api = FakeApiServer()
    store = KubeStore(api.client(), CONTROLLER_KINDS).start()
    try:
        assert store.wait_for_sync(5)
        cm = LiveControllerManager(store, build_controllers(store))
        with api.lock:
            for name in jobs:
                api.store.create(_mpi_job(name))

        def secrets() -> dict[str, dict[str, bytes]]:
            cm.step()
            with api.lock:
                found = {s["metadata"]["name"]: s for s in api.store.list("Secret", "ns")}
            return {j: {k: base64.b64decode(v) for k, v in found[f"{j}-ssh"]["data"].items()}
                    for j in jobs if f"{j}-ssh" in found}

        wait_for(lambda: len(secrets()) == len(jobs))
        return secrets()
    finally:
        store.stop()


def test_the_same_jobs_on_two_fresh_clusters_get_different_keys() -> None:
    first = _keys_on_a_fresh_cluster(("a", "b"))
    second = _keys_on_a_fresh_cluster(("a", "b"))
    for job in ("a", "b"):
        assert first[job]["id_rsa"] != second[job]["id_rsa"]
        assert first[job]["id_rsa.pub"] != second[job]["id_rsa.pub"]
        assert first[job]["config"] == second[job]["config"]
    assert first["a"]["id_rsa"] != first["b"]["id_rsa"]


def test_the_secret_holds_upstreams_rsa_key_whose_public_half_is_authorized() -> None:
    data = _keys_on_a_fresh_cluster(("a",))["a"]
    assert set(data) == {"id_rsa", "id_rsa.pub", "authorized_keys", "config"}
    key = serialization.load_pem_private_key(data["id_rsa"], password=None)
    assert isinstance(key, rsa.RSAPrivateKey) and key.key_size == 2048
    assert data["id_rsa"].startswith(b"-----BEGIN RSA PRIVATE KEY-----")
    assert data["authorized_keys"] == data["id_rsa.pub"]
    authorized = serialization.load_ssh_public_key(data["authorized_keys"].strip())
    assert isinstance(authorized, rsa.RSAPublicKey)
    assert authorized.public_numbers() == key.public_key().public_numbers()


def test_the_live_controller_manager_never_imports_the_seeded_generator() -> None:
    """Run the command's module and a whole reconcile of an ssh job in a fresh interpreter and
    look at what it loaded."""
    tests = Path(__file__).resolve().parents[1]
    code = f"""
import sys, time
import pyvolcano.cli.app, pyvolcano.cli.kube
from kube.fakeapi import FakeApiServer
from pyvolcano.kube.store import KubeStore
from pyvolcano.runtime.controller_manager import CONTROLLER_KINDS, LiveControllerManager, build_controllers
api = FakeApiServer()
store = KubeStore(api.client(), CONTROLLER_KINDS).start()
assert store.wait_for_sync(5)
cm = LiveControllerManager(store, build_controllers(store))
with api.lock:
    api.store.create({_mpi_job("a")!r})
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    cm.step()
    with api.lock:
        if api.store.list("Secret", "ns"):
            break
    time.sleep(0.02)
store.stop()
assert api.store.list("Secret", "ns"), "no Secret was made"
print(",".join(m for m in {DETERMINISTIC!r} if m in sys.modules) or "none")
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "none"
