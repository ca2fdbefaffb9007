"""``pyvolcano admission`` over the Kubernetes store (REST client, informers) against the
transport-level fake API server: registration through the API and lookups through the queue
informer, as in live mode."""

from __future__ import annotations

import socket
import threading
import time

from webhook_client import Certs, Client, queue_obj, review

from kube.fakeapi import FakeApiServer
from pyvolcano.cli.admission import ADMISSION_KINDS, AdmissionOptions, run_admission
from pyvolcano.kube.store import KubeStore
from pyvolcano.webhooks import WebhookServer


def _job(queue: str) -> dict[str, object]:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns"},
            "spec": {"queue": queue, "minAvailable": 1, "tasks": [{"name": "t", "replicas": 1, "template": {
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]}}


def test_admission_registers_through_the_api_and_sees_queues_through_its_informer(certs: Certs) -> None:
    api = FakeApiServer()
    with api.lock:
        api.store.create(queue_obj("default"))
    store = KubeStore(api.client(), ADMISSION_KINDS).start()
    assert store.wait_for_sync(5)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    opts = AdmissionOptions(tls_cert_file=str(certs.cert), tls_private_key_file=str(certs.key),
                            ca_cert_file=str(certs.ca), listen_address="127.0.0.1", port=port,
                            webhook_url=f"https://127.0.0.1:{port}")
    servers: list[WebhookServer] = []
    started, stop = threading.Event(), threading.Event()
    rc: list[int] = []

    def on_ready(server: WebhookServer) -> None:
        servers.append(server)
        started.set()

    thread = threading.Thread(target=lambda: rc.append(run_admission(opts, store=store, stop=stop,
                                                                     on_ready=on_ready)))
    thread.start()
    try:
        assert started.wait(10)
        with api.lock:
            configs = [c["metadata"]["name"] for c in api.store.list("MutatingWebhookConfiguration")]
            configs += [c["metadata"]["name"] for c in api.store.list("ValidatingWebhookConfiguration")]
        assert len(configs) == 7
        assert ("POST", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations") in api.requests
        client = Client(servers[0].port, certs.ca)
        r = client.post("/jobs/validate", review("Job", "CREATE", _job("late")))
        assert r["status"]["message"] == 'unable to find job queue: queues.scheduling.volcano.sh "late" not found;'
        with api.lock:
            api.store.create(queue_obj("late"))
        deadline = time.monotonic() + 5
        while not any(q["metadata"]["name"] == "late" for q in store.list("Queue")):
            assert time.monotonic() < deadline, "the queue informer did not see the new queue"
            time.sleep(0.02)
        assert client.post("/jobs/validate", review("Job", "CREATE", _job("late")))["allowed"] is True
    finally:
        stop.set()
        thread.join(10)
        store.stop()
    assert rc == [0]
