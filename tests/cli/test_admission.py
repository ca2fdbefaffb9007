"""``pyvolcano admission``: flags, start-up errors, and the whole server path on an injected store."""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import types
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from pyvolcano.admission import VolcanoAdmission
from pyvolcano.cli.admission import DEFAULT_ENABLED_ADMISSION, AdmissionOptions, run_admission
from pyvolcano.cli.app import app
from pyvolcano.cli.kube import normalize_go_bools
from pyvolcano.store import InMemoryStore
from pyvolcano.webhooks import WebhookServer
from waiting import free_port
from webhooks.webhook_client import Certs, Client, make_certs, queue_obj, review


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


def tls_args(certs: Certs) -> list[str]:
    return ["--tls-cert-file", str(certs.cert), "--tls-private-key-file", str(certs.key),
            "--ca-cert-file", str(certs.ca)]




def invoke(args: list[str]) -> Any:
    return CliRunner().invoke(app, ["admission", *args])


def test_upstreams_default_enabled_admission_is_the_default() -> None:
    assert AdmissionOptions().enabled_admission == DEFAULT_ENABLED_ADMISSION
    assert (AdmissionOptions().port, AdmissionOptions().healthz_address) == (8443, ":11251")


@pytest.mark.parametrize(("extra", "message"), [
    ([], "failed to start webhooks as both 'url' and 'namespace/name' of webhook are empty"),
    (["--webhook-url", "https://x", "--enabled-admission", "/jobtemplates/validate"],
     "enabled admission /jobtemplates/validate not found on the admission registered map"),
    (["--webhook-url", "https://x", "--enabled-admission", "/jobflow/validate"],
     "enabled admission /jobflow/validate not found on the admission registered map"),
    (["--webhook-url", "https://x", "--port", "70000"], "the port should be in the range of 1 and 65535"),
    (["--webhook-url", "https://x", "--graceful-shutdown-time", "soon"], "--graceful-shutdown-time"),
    (["--webhook-url", "https://x", "--enable-healthz", "--healthz-address", "nowhere"],
     "--healthz-address: got 'nowhere'; expected HOST:PORT"),
])
def test_bad_flags_are_one_error_line_and_exit_2(certs: Certs, extra: list[str], message: str) -> None:
    result = invoke([*tls_args(certs), *extra])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_missing_or_unreadable_certificate_files_are_named(certs: Certs, tmp_path: Path) -> None:
    result = invoke(["--webhook-url", "https://x", "--tls-cert-file", str(certs.cert),
                     "--tls-private-key-file", str(certs.key)])
    assert result.exit_code == 2 and "--ca-cert-file is required" in result.output
    not_pem = tmp_path / "ca.txt"
    not_pem.write_text("hello\n")
    result = invoke(["--webhook-url", "https://x", "--tls-cert-file", str(certs.cert),
                     "--tls-private-key-file", str(certs.key), "--ca-cert-file", str(not_pem)])
    assert result.exit_code == 2 and f"--ca-cert-file {not_pem}: no PEM certificate in it" in result.output
    result = invoke(["--webhook-url", "https://x", "--tls-cert-file", str(tmp_path / "none.crt"),
                     "--tls-private-key-file", str(certs.key), "--ca-cert-file", str(certs.ca)])
    assert result.exit_code == 2 and "--tls-cert-file" in result.output and "No such file" in result.output


def test_cluster_flags_reach_the_kube_connect_factory(certs: Certs, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def connect(**kwargs: Any) -> InMemoryStore:
        seen.update(kwargs)
        raise ValueError("no cluster here")

    monkeypatch.setitem(sys.modules, "pyvolcano.kube", types.SimpleNamespace(connect=connect))
    result = invoke([*tls_args(certs), "--webhook-url", "https://x", "--kubeconfig", "/k/config",
                     "--master", "https://api:6443", "--kube-api-qps", "20", "--kube-api-burst", "40"])
    assert result.exit_code == 2
    assert "unable to build k8s config: no cluster here" in result.output
    assert seen == {"kubeconfig": "/k/config", "master": "https://api:6443", "qps": 20.0, "burst": 40,
                    "kinds": ("Queue",), "user_agent": "volcano-admission"}


def test_admission_registers_its_webhooks_serves_them_and_stops_cleanly(certs: Certs) -> None:
    store = InMemoryStore(admission=VolcanoAdmission())
    store.create(queue_obj("root", reclaimable=False))
    store.create(queue_obj("default"))
    opts = AdmissionOptions(
        tls_cert_file=str(certs.cert), tls_private_key_file=str(certs.key), ca_cert_file=str(certs.ca),
        listen_address="127.0.0.1", port=free_port(), webhook_namespace="volcano-system",
        webhook_service_name="volcano-admission-service", scheduler_names=("volcano", "gang"),
        enable_healthz=True, healthz_address=f"127.0.0.1:{free_port()}", graceful_shutdown_time="2s",
    )
    stop = threading.Event()
    ready: list[WebhookServer] = []
    started = threading.Event()
    rc: list[int] = []

    def on_ready(server: WebhookServer) -> None:
        ready.append(server)
        started.set()

    thread = threading.Thread(target=lambda: rc.append(run_admission(opts, store=store, stop=stop,
                                                                     on_ready=on_ready)))
    thread.start()
    try:
        assert started.wait(10), "server did not start"
        names = sorted(c["metadata"]["name"] for kind in ("MutatingWebhookConfiguration",
                                                           "ValidatingWebhookConfiguration")
                       for c in store.list(kind))
        assert len(names) == 7 and "volcano-admission-service-pods-validate" in names
        pods = store.get("ValidatingWebhookConfiguration", None, "volcano-admission-service-pods-validate")
        assert pods["webhooks"][0]["matchConditions"][0]["expression"] == \
            "object.spec.schedulerName in ['volcano', 'gang']"
        client = Client(ready[0].port, certs.ca)
        r = client.post("/queues/validate", review("Queue", "DELETE", None, queue_obj("default")))
        assert r["allowed"] is False and r["status"]["message"] == "`default` queue can not be deleted"
        missing = client.raw("/podgroups/validate", b"{}")[0]
        assert missing == 404  # not enabled by default, as upstream
    finally:
        stop.set()
        thread.join(10)
    assert rc == [0]


def test_an_address_in_use_is_one_error_line_and_exit_1(certs: Certs, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        opts = AdmissionOptions(tls_cert_file=str(certs.cert), tls_private_key_file=str(certs.key),
                                ca_cert_file=str(certs.ca), listen_address="127.0.0.1", port=port,
                                webhook_url="https://127.0.0.1:8443")
        store = InMemoryStore()
        assert run_admission(opts, store=store, stop=threading.Event()) == 1
    assert f"error: --listen-address/--port 127.0.0.1:{port}: Address already in use" in capsys.readouterr().err
    assert store.list("MutatingWebhookConfiguration") == []  # nothing registered for a server that is not up


def test_sigterm_stops_the_server_and_restores_the_signal_handler(certs: Certs) -> None:
    before = signal.getsignal(signal.SIGTERM)
    opts = AdmissionOptions(tls_cert_file=str(certs.cert), tls_private_key_file=str(certs.key),
                            ca_cert_file=str(certs.ca), listen_address="127.0.0.1", port=free_port(),
                            webhook_url="https://127.0.0.1:8443")
    rc = run_admission(opts, store=InMemoryStore(), on_ready=lambda _s: os.kill(os.getpid(), signal.SIGTERM))
    assert rc == 0
    assert signal.getsignal(signal.SIGTERM) == before


def test_the_command_has_upstream_webhook_managers_flags() -> None:
    command = typer.main.get_command(app).commands["admission"]
    flags = {name for p in command.params for name in p.opts}
    assert flags >= {"--tls-cert-file", "--tls-private-key-file", "--ca-cert-file", "--port", "--listen-address",
                     "--webhook-url", "--webhook-namespace", "--webhook-service-name", "--enabled-admission",
                     "--scheduler-name", "--kubeconfig", "--master", "--kube-api-qps", "--kube-api-burst",
                     "--enable-healthz", "--healthz-address", "--graceful-shutdown-time",
                     "--enable-queue-allocated-pods-check", "--max-queue-depth", "--enable-root-queue-protection"}


def test_go_style_booleans_are_accepted(certs: Certs) -> None:
    argv = normalize_go_bools(["--enable-root-queue-protection=false", "--enable-healthz=true",
                               "--enable-queue-allocated-pods-check=1"])
    assert argv == ["--no-enable-root-queue-protection", "--enable-healthz", "--enable-queue-allocated-pods-check"]
    result = invoke([*tls_args(certs), *argv])  # parsed; stops at the missing webhook address
    assert result.exit_code == 2 and "failed to start webhooks" in result.output


def test_a_registration_the_api_server_cannot_take_yet_is_retried_until_it_can(
        certs: Certs, capsys: pytest.CaptureFixture[str]) -> None:
    from pyvolcano.store.base import Unavailable

    class Starting(InMemoryStore):
        """Answers the first two writes of a webhook configuration as a starting API server does."""

        refusals = 2

        def create(self, obj: dict[str, Any]) -> dict[str, Any]:
            if obj.get("kind", "").endswith("WebhookConfiguration") and self.refusals:
                self.refusals -= 1
                raise Unavailable(obj["kind"], obj["metadata"]["name"], "the server is currently unable to "
                                  "handle the request")
            return super().create(obj)

    store = Starting(admission=VolcanoAdmission())
    store.create(queue_obj("root", reclaimable=False))
    store.create(queue_obj("default"))
    opts = AdmissionOptions(tls_cert_file=str(certs.cert), tls_private_key_file=str(certs.key),
                            ca_cert_file=str(certs.ca), listen_address="127.0.0.1", port=free_port(),
                            webhook_namespace="volcano-system", webhook_service_name="volcano-admission-service",
                            enable_healthz=False)
    ready = threading.Event()
    stop = threading.Event()
    rc: list[int] = []
    thread = threading.Thread(target=lambda: rc.append(run_admission(opts, store=store, stop=stop,
                                                                     on_ready=lambda _s: ready.set())))
    thread.start()
    try:
        assert ready.wait(10), "the registration was not retried"
        assert len(store.list("ValidatingWebhookConfiguration")) > 0
    finally:
        stop.set()
        thread.join(10)
    assert rc == [0] and store.refusals == 0
    assert capsys.readouterr().err.count("retrying in") == 2
