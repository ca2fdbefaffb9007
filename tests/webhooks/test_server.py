"""The HTTPS layer: TLS required, the AdmissionReview envelope, HTTP errors, /healthz."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
from typing import Any

import pytest
from webhook_client import Certs, Client, make_certs, queue_obj, review

from pyvolcano.admission import VolcanoAdmission
from pyvolcano.store import InMemoryStore
from pyvolcano.webhooks import SERVICES, HealthzServer, Router, TLSConfigError, WebhookServer, tls_context
from pyvolcano.webhooks.server import MAX_REQUEST_BODY


def test_response_echoes_the_request_uid_in_an_admission_review(client: Client) -> None:
    req = review("Queue", "DELETE", None, queue_obj("root"))
    status, body = client.raw("/queues/validate", json.dumps(req).encode())
    assert status == 200
    out = json.loads(body)
    assert out["apiVersion"] == "admission.k8s.io/v1" and out["kind"] == "AdmissionReview"
    assert out["response"]["uid"] == req["request"]["uid"]
    assert out["response"]["allowed"] is False
    assert out["response"]["status"] == {"metadata": {}, "status": "Failure",
                                         "message": "`root` queue can not be deleted", "code": 400}


def test_plain_http_is_refused(server: WebhookServer) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    with pytest.raises((ConnectionError, http.client.HTTPException, OSError)):
        conn.request("POST", "/jobs/validate", body=b"{}", headers={"Content-Type": "application/json"})
        conn.getresponse().read()
    conn.close()


def test_a_client_that_does_not_trust_the_ca_fails_the_handshake(server: WebhookServer) -> None:
    ctx = ssl.create_default_context()  # system roots only
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock, pytest.raises(ssl.SSLError):
        ctx.wrap_socket(sock, server_hostname="127.0.0.1")


def test_server_context_requires_tls_1_2_or_later(certs: Certs) -> None:
    assert tls_context(str(certs.cert), str(certs.key)).minimum_version == ssl.TLSVersion.TLSv1_2


def test_a_silent_client_does_not_block_other_requests(server: WebhookServer, client: Client) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=5):
        r = client.post("/queues/validate", review("Queue", "CREATE", queue_obj("q")))
    assert r["allowed"] is True


@pytest.mark.parametrize(("path", "body", "content_type", "method", "status"), [
    ("/nowhere", b"{}", "application/json", "POST", 404),
    ("/jobs/validate", b"{}", "application/json", "GET", 405),
    ("/jobs/validate", b"{}", "text/plain", "POST", 415),
    ("/jobs/validate", b"not json", "application/json", "POST", 400),
    ("/jobs/validate", b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"}', "application/json",
     "POST", 400),
    ("/jobs/validate", b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1beta1", "request": {}}',
     "application/json", "POST", 400),
])
def test_requests_that_are_not_admission_reviews_get_http_errors(client: Client, path: str, body: bytes,
                                                                 content_type: str, method: str, status: int) -> None:
    assert client.raw(path, body, content_type, method)[0] == status


def test_a_body_over_the_limit_is_refused_before_it_is_read(client: Client) -> None:
    conn = http.client.HTTPSConnection("127.0.0.1", client.port, context=client.context, timeout=5)
    conn.putrequest("POST", "/jobs/validate")
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", str(MAX_REQUEST_BODY + 1))
    conn.endheaders()
    assert conn.getresponse().status == 413
    conn.close()


def test_concurrent_requests_are_answered(client: Client) -> None:
    results: list[bool] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        r = client.post("/queues/validate", review("Queue", "CREATE", queue_obj(f"q{i}")))
        with lock:
            results.append(r["allowed"])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * 8


def test_tls_context_names_the_missing_or_mismatched_file(certs: Certs,
                                                          tmp_path_factory: pytest.TempPathFactory) -> None:
    with pytest.raises(TLSConfigError, match=r"--tls-cert-file /nonexistent\.crt: No such file"):
        tls_context("/nonexistent.crt", str(certs.key))
    other = make_certs(tmp_path_factory.mktemp("other"))
    with pytest.raises(TLSConfigError, match="not a matching PEM certificate and private key"):
        tls_context(str(certs.cert), str(other.key))


def test_healthz_answers_ok_over_tls(certs: Certs) -> None:
    with HealthzServer("127.0.0.1", 0, tls_context(str(certs.cert), str(certs.key))) as hz:
        conn = http.client.HTTPSConnection("127.0.0.1", hz.port, timeout=5,
                                           context=ssl.create_default_context(cafile=str(certs.ca)))
        conn.request("GET", "/healthz")
        resp = conn.getresponse()
        assert (resp.status, resp.read()) == (200, b"ok")
        conn.close()


class _HeldStore(InMemoryStore):
    """A store whose reads wait until released: holds a request in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.entered = threading.Event()

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any]:
        self.entered.set()
        self.release.wait(10)
        return super().get(kind, namespace, name)


def test_stopping_waits_for_requests_in_flight(certs: Certs) -> None:
    store = _HeldStore()
    router = Router(list(SERVICES.values()), VolcanoAdmission(), store)
    server = WebhookServer(router, tls_context(str(certs.cert), str(certs.key)), "127.0.0.1", 0)
    server.start()
    answers: list[dict[str, Any]] = []
    client = Client(server.port, certs.ca)
    req = review("Job", "CREATE", {"kind": "Job", "metadata": {"name": "j", "namespace": "ns"},
                                   "spec": {"queue": "q", "tasks": [{"name": "t", "replicas": 1}]}})
    t = threading.Thread(target=lambda: answers.append(client.post("/jobs/validate", req)))
    t.start()
    try:
        assert store.entered.wait(5)
        assert not server.wait_idle(0.2)  # the job's queue lookup is held
        server.stop_accepting()
        store.release.set()
        assert server.wait_idle(5)
        t.join(5)
        assert answers and answers[0]["allowed"] is False
    finally:
        store.release.set()
        server.close()


def test_a_kept_alive_connection_serves_several_reviews_even_after_an_error(client: Client) -> None:
    conn = http.client.HTTPSConnection("127.0.0.1", client.port, context=client.context, timeout=5)
    try:
        headers = {"Content-Type": "application/json"}
        conn.request("POST", "/nowhere", body=b'{"padding": "' + b"x" * 100 + b'"}', headers=headers)
        resp = conn.getresponse()
        assert resp.status == 404
        resp.read()
        for name in ("root", "q"):
            req = review("Queue", "DELETE", None, queue_obj(name))
            conn.request("POST", "/queues/validate", body=json.dumps(req).encode(), headers=headers)
            out = json.loads(conn.getresponse().read())
            assert out["response"]["uid"] == req["request"]["uid"]
            assert out["response"]["allowed"] is (name != "root")
    finally:
        conn.close()


def test_closing_the_server_cuts_kept_alive_connections(certs: Certs, store: InMemoryStore) -> None:
    router = Router(list(SERVICES.values()), VolcanoAdmission(), store)
    server = WebhookServer(router, tls_context(str(certs.cert), str(certs.key)), "127.0.0.1", 0)
    server.start()
    client = Client(server.port, certs.ca)
    conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=client.context, timeout=5)
    try:
        body = json.dumps(review("Queue", "CREATE", queue_obj("q"))).encode()
        conn.request("POST", "/queues/validate", body=body, headers={"Content-Type": "application/json"})
        assert conn.getresponse().read()
        server.close()
        with pytest.raises((ConnectionError, http.client.HTTPException, OSError)):
            conn.request("POST", "/queues/validate", body=body, headers={"Content-Type": "application/json"})
            conn.getresponse().read()
    finally:
        conn.close()
        server.close()
