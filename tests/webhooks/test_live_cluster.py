"""The webhooks on a real kube-apiserver: rejections as kubectl sees them, defaults applied, and an
outage that blocks Volcano's pods only.

Runs on the cluster of ``PYVOLCANO_TEST_KUBECONFIG`` (its API server must reach 127.0.0.1), or
on a control plane started from ``KUBEBUILDER_ASSETS`` (a directory with ``etcd`` and
``kube-apiserver``); skipped otherwise. Minimal Volcano CRDs are created when the cluster has
none. The webhook configurations point at a port of this process and are deleted at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from webhook_client import Certs

from pyvolcano.cli.admission import ADMISSION_KINDS, AdmissionOptions, run_admission
from pyvolcano.store.base import NotFound, Store, StoreError
from pyvolcano.webhooks import SERVICES, WebhookServer
from waiting import free_port

KUBECONFIG = os.environ.get("PYVOLCANO_TEST_KUBECONFIG", "")

_CRDS = (("Job", "batch.volcano.sh", "v1alpha1", "jobs", "Namespaced", True),
         ("Queue", "scheduling.volcano.sh", "v1beta1", "queues", "Cluster", True),
         ("PodGroup", "scheduling.volcano.sh", "v1beta1", "podgroups", "Namespaced", False))


@pytest.fixture(scope="module")
def kubeconfig() -> Iterator[str]:
    if KUBECONFIG:
        yield KUBECONFIG
        return
    from pyvolcano.kube.envtest import ControlPlane, assets_dir

    if assets_dir() is None:
        pytest.skip("no cluster: set PYVOLCANO_TEST_KUBECONFIG, or KUBEBUILDER_ASSETS to a directory with etcd "
                    "and kube-apiserver")
    with ControlPlane() as cp:
        yield str(cp.kubeconfig)


def _wait(what: str, cond: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"{what} within {timeout:.0f}s"
        time.sleep(0.1)


def _ensure_crds(kubeconfig: str) -> None:
    from pyvolcano.kube import connect

    store = connect(kubeconfig=kubeconfig, kinds=())
    try:
        for kind, group, version, plural, scope, status in _CRDS:
            name = f"{plural}.{group}"
            try:
                store.get("CustomResourceDefinition", None, name)
                continue
            except NotFound:
                pass
            store.create({
                "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": name},
                "spec": {"group": group, "scope": scope,
                         "names": {"kind": kind, "plural": plural, "singular": kind.lower(),
                                   "listKind": f"{kind}List"},
                         "versions": [{"name": version, "served": True, "storage": True,
                                       "subresources": {"status": {}} if status else {},
                                       "schema": {"openAPIV3Schema": {
                                           "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
            })

            def established(crd_name: str = name) -> bool:
                crd = store.get("CustomResourceDefinition", None, crd_name)
                return any(c.get("type") == "Established" and c.get("status") == "True"
                           for c in (crd.get("status") or {}).get("conditions") or [])

            _wait(f"CRD {name} established", established)
    finally:
        store.stop()




@pytest.fixture
def live(kubeconfig: str, certs: Certs) -> Iterator[tuple[Store, Callable[[], None]]]:
    """The cluster's store with ``pyvolcano admission`` serving it, and a function that stops the
    server (its configurations stay registered until the end of the test)."""
    from pyvolcano.kube import connect

    _ensure_crds(kubeconfig)
    store: Store = connect(kubeconfig=kubeconfig, kinds=ADMISSION_KINDS)
    assert store.wait_for_sync(30)  # type: ignore[attr-defined]
    with contextlib.suppress(StoreError):  # AlreadyExists on a shared cluster
        store.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
                      "spec": {"weight": 1, "reclaimable": True}})
    port = free_port()
    opts = AdmissionOptions(tls_cert_file=str(certs.cert), tls_private_key_file=str(certs.key),
                            ca_cert_file=str(certs.ca), listen_address="127.0.0.1", port=port,
                            webhook_url=f"https://127.0.0.1:{port}")
    stop = threading.Event()
    started = threading.Event()

    def on_ready(_server: WebhookServer) -> None:
        started.set()

    thread = threading.Thread(target=run_admission, args=(opts,),
                              kwargs={"store": store, "stop": stop, "on_ready": on_ready})
    thread.start()

    def outage() -> None:
        stop.set()
        thread.join(60)

    try:
        assert started.wait(30), "pyvolcano admission did not start"
        yield store, outage
    finally:
        outage()
        for service in SERVICES.values():
            kind = "MutatingWebhookConfiguration" if service.mutating else "ValidatingWebhookConfiguration"
            with contextlib.suppress(NotFound):
                store.delete(kind, None, service.configuration_name)
        store.stop()  # type: ignore[attr-defined]


def _job(min_available: int) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": f"wh-{uuid.uuid4().hex[:8]}", "namespace": "default"},
            "spec": {"minAvailable": min_available, "tasks": [{"replicas": 2, "template": {"spec": {
                "containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}}}]}}


def _pod(scheduler: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"wh-{uuid.uuid4().hex[:8]}", "namespace": "default"},
            "spec": {"schedulerName": scheduler, "containers": [{"name": "c", "image": "busybox"}]}}


def _rejection(store: Store, obj: dict[str, Any]) -> str:
    """The API server's error for ``obj``, waiting until it has picked up the new webhooks."""
    message: list[str] = []

    def rejected() -> bool:
        try:
            created = store.create(obj)
        except StoreError as e:
            message.append(str(e))
            return True
        store.delete(created["kind"], created["metadata"].get("namespace"), created["metadata"]["name"])
        return False

    _wait("the API server calls the webhooks", rejected)
    return message[-1]


def test_live_rejection_reaches_the_client_with_upstreams_message(live: tuple[Store, Callable[[], None]]) -> None:
    store, _ = live
    assert ('admission webhook "validatejob.volcano.sh" denied the request: '
            "job 'minAvailable' should not be greater than total replicas in tasks;") in _rejection(store, _job(3))


def test_live_job_gets_upstreams_defaults(live: tuple[Store, Callable[[], None]]) -> None:
    store, _ = live
    _rejection(store, _job(3))  # the webhooks are in effect
    created = store.create(_job(0))
    try:
        spec = created["spec"]
        assert (spec["queue"], spec["schedulerName"], spec["maxRetry"], spec["minAvailable"]) == \
            ("default", "volcano", 3, 2)
        assert spec["tasks"][0]["name"] == "default0"
    finally:
        store.delete("Job", "default", created["metadata"]["name"])


def test_live_webhook_outage_blocks_volcano_pods_only(live: tuple[Store, Callable[[], None]]) -> None:
    store, outage = live
    _rejection(store, _job(3))  # the webhooks are in effect
    outage()
    other = store.create(_pod("default-scheduler"))
    store.delete("Pod", "default", other["metadata"]["name"], grace_period_seconds=0)
    with pytest.raises(StoreError) as e:
        store.create(_pod("volcano"))
    assert 'failed calling webhook "mutatepod.volcano.sh"' in str(e.value)


def test_live_kubectl_shows_upstreams_rejection(live: tuple[Store, Callable[[], None]], kubeconfig: str) -> None:
    kubectl = os.environ.get("KUBECTL") or shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed (set KUBECTL)")
    store, _ = live
    _rejection(store, _job(3))  # the webhooks are in effect
    proc = subprocess.run([kubectl, "--kubeconfig", kubeconfig, "create", "-f", "-"], input=json.dumps(_job(3)),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        'Error from server: error when creating "STDIN": admission webhook "validatejob.volcano.sh" denied the '
        "request: job 'minAvailable' should not be greater than total replicas in tasks;")
