"""The webhooks on a real kube-apiserver: rejections as kubectl sees them, defaults applied, and an
outage that blocks Volcano's pods only.

Runs when ``PYVOLCANO_TEST_KUBECONFIG`` names a kubeconfig of a cluster whose API server can reach
127.0.0.1 (a local envtest-style apiserver) and has the Volcano CRDs installed; skipped otherwise.
The webhook configurations it writes point at a port of this process and are deleted at the end.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from webhook_client import Certs

from pyvolcano.cli.admission import AdmissionOptions, run_admission
from pyvolcano.store.base import NotFound, Store
from pyvolcano.webhooks import SERVICES, WebhookServer

KUBECONFIG = os.environ.get("PYVOLCANO_TEST_KUBECONFIG", "")


def _connect() -> Store:
    if not KUBECONFIG:
        pytest.skip("set PYVOLCANO_TEST_KUBECONFIG to a kubeconfig to run the live-cluster webhook tests")
    try:
        connect = getattr(importlib.import_module("pyvolcano.kube"), "connect", None)
    except ImportError:
        connect = None
    if connect is None:
        pytest.skip("pyvolcano.kube.connect is not available")
    store: Store = connect(kubeconfig=KUBECONFIG, master=None, qps=50.0, burst=100)
    try:
        store.list("Queue")
    except Exception as e:  # the CRD is missing: the cluster is not set up for Volcano
        pytest.skip(f"the cluster has no Volcano CRDs ({e})")
    return store


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def live(certs: Certs) -> Iterator[tuple[Store, Callable[[], None]]]:
    """The cluster's store with ``pyvolcano admission`` serving it, and a function that stops the
    server (its configurations stay registered until the end of the test)."""
    store = _connect()
    try:
        store.get("Queue", None, "default")
    except NotFound:
        store.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
                      "spec": {"weight": 1, "reclaimable": True}})
    port = _free_port()
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


def _job(min_available: int) -> dict[str, Any]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": f"wh-{uuid.uuid4().hex[:8]}", "namespace": "default"},
            "spec": {"minAvailable": min_available, "tasks": [{"replicas": 2, "template": {"spec": {
                "containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}}}]}}


def _pod(scheduler: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"wh-{uuid.uuid4().hex[:8]}", "namespace": "default"},
            "spec": {"schedulerName": scheduler, "containers": [{"name": "c", "image": "busybox"}]}}


def test_live_rejection_reaches_the_client_with_upstreams_message(live: tuple[Store, Callable[[], None]]) -> None:
    store, _ = live
    with pytest.raises(Exception) as e:
        store.create(_job(3))
    assert ('admission webhook "validatejob.volcano.sh" denied the request: '
            "job 'minAvailable' should not be greater than total replicas in tasks;") in str(e.value)


def test_live_job_gets_upstreams_defaults(live: tuple[Store, Callable[[], None]]) -> None:
    store, _ = live
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
    outage()
    other = store.create(_pod("default-scheduler"))
    store.delete("Pod", "default", other["metadata"]["name"], grace_period_seconds=0)
    with pytest.raises(Exception) as e:
        store.create(_pod("volcano"))
    assert "mutatepod.volcano.sh" in str(e.value) or "validatepod.volcano.sh" in str(e.value)
