"""``pyvolcano admission``: Volcano's admission webhooks on a cluster (upstream's vc-webhook-manager).

Flags and defaults are upstream's (``cmd/webhook-manager/app/options/options.go``). Boolean
flags are switches with a ``--no-`` form; the arguments are read as upstream's pflag reads
them, klog's and component-base's flags included (:mod:`pyvolcano.cli.go_flags`).
``--enabled-admission`` may name every path upstream serves; ``--admission-conf`` holds the
resource groups ``/pods/mutate`` applies (:mod:`pyvolcano.admission.resource_groups`): read at
start (a file that does not read is exit 2) and again when it changes.

Start-up: check the flags; read ``--ca-cert-file`` and the serving certificate; connect to the
cluster (``pyvolcano.kube.connect``); start ``/healthz`` if enabled; serve HTTPS on
``--listen-address:--port``; then create or update the webhook configurations of the enabled
paths (upstream registers before it listens; listening first means the API server never calls
a webhook that is not there yet); while the API server is unavailable (no connection, 429, a
5xx) the registration is tried again with back-off, so a control plane that restarts under it
delays the registration but does not end the process. Until SIGTERM or SIGINT; then it stops accepting and gives
requests in flight up to ``--graceful-shutdown-time`` to finish. A bad flag or file is one
``error:`` line and exit 2; an address in use or a cluster that refuses the registration is exit 1.

:func:`run_admission` takes the store as a parameter so that the whole server path runs against
an in-memory store in tests; without one it connects with ``pyvolcano.kube.connect`` (a queue
informer, :data:`ADMISSION_KINDS`) and waits until it has synced.
"""

from __future__ import annotations

import os
import signal
import ssl
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, TypeVar

import typer

if TYPE_CHECKING:
    from pyvolcano.admission import VolcanoAdmission
    from pyvolcano.admission.resource_groups import AdmissionConfiguration
    from pyvolcano.store.base import Store
    from pyvolcano.webhooks.registration import ClientTarget
    from pyvolcano.webhooks.router import AdmissionService
    from pyvolcano.webhooks.server import WebhookServer

__all__ = ["ADMISSION_KINDS", "DEFAULT_ENABLED_ADMISSION", "AdmissionOptions", "admission", "run_admission"]

DEFAULT_ENABLED_ADMISSION: Final = (
    "/jobs/mutate,/jobs/validate,/podgroups/mutate,/pods/validate,/pods/mutate,/queues/mutate,/queues/validate"
)
"""``--enabled-admission``'s default, upstream's ``defaultEnabledAdmission``."""
DEFAULT_HEALTHZ_ADDRESS: Final = ":11251"

_S = TypeVar("_S")


class UsageError(ValueError):
    """A bad flag value or unreadable file: exit 2."""


@dataclass(frozen=True)
class AdmissionOptions:
    """The flags of ``pyvolcano admission`` (upstream's ``options.Config``)."""

    tls_cert_file: str = ""
    tls_private_key_file: str = ""
    ca_cert_file: str = ""
    port: int = 8443
    listen_address: str = ""
    webhook_url: str = ""
    webhook_namespace: str = ""
    webhook_service_name: str = ""
    enabled_admission: str = DEFAULT_ENABLED_ADMISSION
    scheduler_names: tuple[str, ...] = ("volcano",)
    kubeconfig: str = ""
    master: str = ""
    kube_api_qps: float = 50.0
    kube_api_burst: int = 100
    enable_healthz: bool = False
    healthz_address: str = DEFAULT_HEALTHZ_ADDRESS
    graceful_shutdown_time: str = "30s"
    enable_queue_allocated_pods_check: bool = False
    max_queue_depth: int = 5
    enable_root_queue_protection: bool = True
    admission_conf: str = ""


def parse_address(flag: str, text: str) -> tuple[str, int]:
    """``HOST:PORT`` / ``:PORT`` / ``[v6]:PORT`` as Go's ``net.Listen`` takes it."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise UsageError(f"{flag}: got {text!r}; expected HOST:PORT such as {DEFAULT_HEALTHZ_ADDRESS}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port_text)


def _read(flag: str, path: str) -> bytes:
    if not path:
        raise UsageError(f"{flag} is required (PEM file)")
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise UsageError(f"{flag} {path}: {e.strerror or e}") from None


def run_admission(opts: AdmissionOptions, *, store: Store | None = None, stop: threading.Event | None = None,
                  on_ready: Callable[[WebhookServer], None] | None = None) -> int:
    """Run the webhook server until ``stop`` is set (or SIGTERM/SIGINT); return the exit code."""
    from pyvolcano.store.base import StoreError, Synced

    try:
        prepared = _prepare(opts)
    except UsageError as e:
        typer.echo(f"error: {e}", err=True)
        return 2
    owned = store is None
    if store is None:
        try:
            store = _connect(opts)
        except UsageError as e:
            typer.echo(f"error: {e}", err=True)
            return 2
        except _StartError as e:
            typer.echo(f"error: {e}", err=True)
            return 1
    try:
        return _serve(opts, prepared, store, stop or threading.Event(), on_ready)
    except StoreError as e:
        typer.echo(f"error: registering the webhook configurations: {e}", err=True)
        return 1
    except _StartError as e:
        typer.echo(f"error: {e}", err=True)
        return 1
    finally:
        if owned and isinstance(store, Synced):
            store.stop()  # the informers of a store this call connected


@dataclass(frozen=True)
class _Prepared:
    services: list[AdmissionService]
    target: ClientTarget
    ca_bundle: bytes
    context: ssl.SSLContext
    healthz: tuple[str, int] | None
    grace_seconds: float
    resource_groups: AdmissionConfiguration | None


def _prepare(opts: AdmissionOptions) -> _Prepared:
    from pyvolcano.api.duration import DurationError, parse_duration_strict
    from pyvolcano.webhooks.registration import ClientTarget
    from pyvolcano.webhooks.router import enabled_services
    from pyvolcano.webhooks.server import TLSConfigError, tls_context

    if not 1 <= opts.port <= 65535:
        raise UsageError(f"--port {opts.port}: the port should be in the range of 1 and 65535")
    if not opts.scheduler_names or any(not n for n in opts.scheduler_names):
        raise UsageError("--scheduler-name: expected a non-empty scheduler name")
    if opts.max_queue_depth < 1:
        raise UsageError(f"--max-queue-depth {opts.max_queue_depth}: expected a positive integer")
    if opts.kube_api_qps <= 0 or opts.kube_api_burst < 1:
        raise UsageError("--kube-api-qps and --kube-api-burst must be positive")
    groups = None
    if opts.admission_conf:
        from pyvolcano.admission.resource_groups import AdmissionConfError

        try:
            groups = read_admission_conf(opts.admission_conf)
        except AdmissionConfError as e:
            raise UsageError(f"--admission-conf: {e}") from None
    try:
        services = enabled_services(opts.enabled_admission)
        if not services:
            raise ValueError("--enabled-admission: no path pyvolcano serves")
        target = ClientTarget(url=opts.webhook_url, namespace=opts.webhook_namespace,
                              service_name=opts.webhook_service_name)
    except ValueError as e:
        raise UsageError(str(e)) from None
    try:
        grace = parse_duration_strict(opts.graceful_shutdown_time)
    except DurationError as e:
        raise UsageError(f"--graceful-shutdown-time: {e}") from None
    ca_bundle = _read("--ca-cert-file", opts.ca_cert_file)
    if b"-----BEGIN CERTIFICATE-----" not in ca_bundle:
        raise UsageError(f"--ca-cert-file {opts.ca_cert_file}: no PEM certificate in it")
    _read("--tls-cert-file", opts.tls_cert_file)
    _read("--tls-private-key-file", opts.tls_private_key_file)
    try:
        context = tls_context(opts.tls_cert_file, opts.tls_private_key_file)
    except TLSConfigError as e:
        raise UsageError(str(e)) from None
    healthz = parse_address("--healthz-address", opts.healthz_address) if opts.enable_healthz else None
    return _Prepared(services, target, ca_bundle, context, healthz, grace, groups)


def read_admission_conf(path: str) -> AdmissionConfiguration:
    """The resource groups of the ``--admission-conf`` file; raises AdmissionConfError."""
    from pyvolcano.admission.resource_groups import AdmissionConfError, load_admission_conf

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise AdmissionConfError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    return load_admission_conf(text, path)


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _watch_admission_conf(path: str, admission: VolcanoAdmission, stop: threading.Event,
                          every: float = 1.0) -> threading.Thread:
    """Upstream's ``WatchAdmissionConf``: read the file again when it changes (also when a
    ConfigMap volume swaps it); a file that no longer reads keeps the groups in force."""
    from pyvolcano.admission.resource_groups import AdmissionConfError

    def watch() -> None:
        seen = _stamp(path)
        while not stop.wait(every):
            now = _stamp(path)
            if now is None or now == seen:
                continue
            seen = now
            try:
                admission.resource_groups = read_admission_conf(path)
            except AdmissionConfError as e:
                print(f"error: --admission-conf not reloaded: {e}", file=sys.stderr)
            else:
                print(f"--admission-conf {path} reloaded", file=sys.stderr)

    t = threading.Thread(target=watch, name="admission-conf", daemon=True)
    t.start()
    return t


ADMISSION_KINDS: Final = ("Queue",)
"""Kinds kept in informer caches, as upstream's webhook-manager keeps a queue lister; the other
lookups (namespaces, podgroups, pods) are read from the API server when a request needs them."""
_SYNC_TIMEOUT: Final = 60.0


def _connect(opts: AdmissionOptions) -> Store:
    from pyvolcano.kube import connect
    from pyvolcano.store.base import Synced

    try:
        store: Store = connect(kubeconfig=opts.kubeconfig or None, master=opts.master or None,
                               qps=opts.kube_api_qps, burst=opts.kube_api_burst, kinds=ADMISSION_KINDS,
                               user_agent="volcano-admission")
    except (OSError, ValueError) as e:
        raise UsageError(f"unable to build k8s config: {e}") from None
    if isinstance(store, Synced) and not store.wait_for_sync(_SYNC_TIMEOUT):
        store.stop()
        raise _StartError(f"informers ({', '.join(ADMISSION_KINDS)}) did not sync within {_SYNC_TIMEOUT:.0f}s")
    return store


class _StartError(RuntimeError):
    """The process cannot get going (an address in use, informers that do not sync): exit 1."""


def _bind(flag: str, address: tuple[str, int], make: Callable[[], _S]) -> _S:
    try:
        return make()
    except OSError as e:
        raise _StartError(f"{flag} {address[0] or '*'}:{address[1]}: {e.strerror or e}") from None


def _serve(opts: AdmissionOptions, prepared: _Prepared, store: Store, stop: threading.Event,
           on_ready: Callable[[WebhookServer], None] | None) -> int:
    """Serve first, then register: the API server never calls a webhook that is not listening."""
    from pyvolcano.admission import VolcanoAdmission
    from pyvolcano.webhooks.registration import register
    from pyvolcano.webhooks.router import Router
    from pyvolcano.webhooks.server import HealthzServer, WebhookServer

    admission = VolcanoAdmission(
        scheduler_names=opts.scheduler_names, max_queue_depth=opts.max_queue_depth,
        enable_queue_allocated_pods_check=opts.enable_queue_allocated_pods_check,
        enable_root_queue_protection=opts.enable_root_queue_protection, api_server_checks=False,
    )
    admission.resource_groups = prepared.resource_groups
    if opts.admission_conf:
        _watch_admission_conf(opts.admission_conf, admission, stop)
    router = Router(prepared.services, admission, store)
    healthz = None
    if prepared.healthz is not None:
        hz_address = prepared.healthz
        healthz = _bind("--healthz-address", hz_address,
                        lambda: HealthzServer(hz_address[0], hz_address[1], prepared.context))
        healthz.start()
    restore = _on_signals(stop)
    try:
        address = (opts.listen_address, opts.port)
        server = _bind("--listen-address/--port", address,
                       lambda: WebhookServer(router, prepared.context, address[0], address[1]))
        try:
            server.start()
            print(f"serving {', '.join(s.path for s in prepared.services)} on "
                  f"https://{opts.listen_address or '*'}:{server.port}", file=sys.stderr)
            registered = _register_until_accepted(
                lambda: register(store, prepared.services, prepared.target, prepared.ca_bundle,
                                 opts.scheduler_names, mutate_all_pods=bool(opts.admission_conf)), stop)
            for r in registered:
                print(f"{r.kind} {r.name}: {r.action}", file=sys.stderr)
            if on_ready is not None:
                on_ready(server)
            stop.wait()
            server.stop_accepting()
            if not server.wait_idle(prepared.grace_seconds):
                print("graceful shutdown time passed with requests in flight", file=sys.stderr)
        finally:
            server.close()
    finally:
        restore()
        if healthz is not None:
            healthz.close()
    return 0


def _register_until_accepted(write: Callable[[], list[Any]], stop: threading.Event,
                             delays: tuple[float, float] = (0.5, 30.0)) -> list[Any]:
    """The registration, tried again (0.5 s doubling to 30 s) while the API server is
    unavailable; any other refusal is raised. Nothing is registered if ``stop`` comes first."""
    from pyvolcano.store.base import Unavailable

    delay = delays[0]
    while True:
        try:
            return write()
        except Unavailable as e:
            print(f"registering the webhook configurations: {e}; retrying in {delay:g}s", file=sys.stderr)
            if stop.wait(delay):
                return []
            delay = min(delay * 2, delays[1])


def _on_signals(stop: threading.Event) -> Callable[[], None]:
    """SIGTERM and SIGINT set ``stop`` (only possible from the main thread); returns the undo."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    for sig in previous:
        signal.signal(sig, lambda _s, _f: stop.set())

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    return restore


def admission(
    tls_cert_file: Annotated[str, typer.Option("--tls-cert-file", help="File containing the default x509 "
                             "Certificate for HTTPS. (CA cert, if any, concatenated after server cert).")] = "",
    tls_private_key_file: Annotated[str, typer.Option("--tls-private-key-file", help="File containing the "
                                    "default x509 private key matching --tls-cert-file.")] = "",
    ca_cert_file: Annotated[str, typer.Option("--ca-cert-file", help="File containing the x509 Certificate "
                            "for HTTPS (the webhook configurations' caBundle).")] = "",
    port: Annotated[int, typer.Option("--port", help="the port used by admission-controller-server.")] = 8443,
    listen_address: Annotated[str, typer.Option("--listen-address", help="The address to listen on for the "
                              "admission-controller-server.")] = "",
    webhook_url: Annotated[str, typer.Option("--webhook-url", help="The url of this webhook")] = "",
    webhook_namespace: Annotated[str, typer.Option("--webhook-namespace", help="The namespace of this webhook")]
    = "",
    webhook_service_name: Annotated[str, typer.Option("--webhook-service-name", help="The name of this webhook")]
    = "",
    enabled_admission: Annotated[str, typer.Option("--enabled-admission", help="enabled admission webhooks "
                                 "(comma-separated paths)")] = DEFAULT_ENABLED_ADMISSION,
    scheduler_name: Annotated[list[str] | None, typer.Option("--scheduler-name", help="Volcano will handle pods "
                              "whose .spec.SchedulerName is same as scheduler-name (repeatable)")] = None,
    kubeconfig: Annotated[str, typer.Option("--kubeconfig", help="Path to kubeconfig file with authorization "
                          "and master location information.")] = "",
    master: Annotated[str, typer.Option("--master", help="The address of the Kubernetes API server (overrides "
                      "any value in kubeconfig)")] = "",
    kube_api_qps: Annotated[float, typer.Option("--kube-api-qps", help="QPS to use while talking with "
                            "kubernetes apiserver")] = 50.0,
    kube_api_burst: Annotated[int, typer.Option("--kube-api-burst", help="Burst to use while talking with "
                              "kubernetes apiserver")] = 100,
    enable_healthz: Annotated[bool, typer.Option("--enable-healthz/--no-enable-healthz",
                                                 help="Enable the health check")] = False,
    healthz_address: Annotated[str, typer.Option("--healthz-address", help="The address to listen on for the "
                               "health check server.")] = DEFAULT_HEALTHZ_ADDRESS,
    graceful_shutdown_time: Annotated[str, typer.Option("--graceful-shutdown-time", help="The duration to wait "
                                      "during graceful shutdown before forcing termination.")] = "30s",
    enable_queue_allocated_pods_check: Annotated[bool, typer.Option(
        "--enable-queue-allocated-pods-check/--no-enable-queue-allocated-pods-check",
        help="If true, queue deletion will be rejected when the queue has allocated pods.")] = False,
    max_queue_depth: Annotated[int, typer.Option("--max-queue-depth", help="The maximum depth of hierarchical "
                               "queues.")] = 5,
    enable_root_queue_protection: Annotated[bool, typer.Option(
        "--enable-root-queue-protection/--no-enable-root-queue-protection",
        help="If true, root queue's resource attributes (capability, deserved, guarantee) cannot be modified.")]
    = True,
    admission_conf: Annotated[str, typer.Option("--admission-conf", help="The configmap file of this webhook: "
                              "the resource groups /pods/mutate applies (read again when it changes)")] = "",
    v: Annotated[int, typer.Option("--v", "-v", metavar="LEVEL", help="Log verbosity (klog levels)")] = 0,
    stderrthreshold: Annotated[str, typer.Option(
        "--stderrthreshold", metavar="SEVERITY", help="Log records at or above this severity go to stderr "
                                                      "(INFO, WARNING, ERROR, FATAL)")] = "INFO",
    version: Annotated[bool, typer.Option("--version", help="Show version and quit")] = False,
) -> None:
    """Serve Volcano's admission webhooks over HTTPS and register them (vc-webhook-manager)."""
    from pyvolcano.cli.go_flags import klog_severity
    from pyvolcano.cli.kube import print_version_and_exit
    from pyvolcano.runtime.component import setup_logging

    print_version_and_exit(version)
    setup_logging(v, klog_severity(stderrthreshold))
    raise typer.Exit(run_admission(AdmissionOptions(
        tls_cert_file=tls_cert_file, tls_private_key_file=tls_private_key_file, ca_cert_file=ca_cert_file,
        port=port, listen_address=listen_address, webhook_url=webhook_url, webhook_namespace=webhook_namespace,
        webhook_service_name=webhook_service_name, enabled_admission=enabled_admission,
        scheduler_names=tuple(scheduler_name or ("volcano",)), kubeconfig=kubeconfig, master=master,
        kube_api_qps=kube_api_qps, kube_api_burst=kube_api_burst, enable_healthz=enable_healthz,
        healthz_address=healthz_address, graceful_shutdown_time=graceful_shutdown_time,
        enable_queue_allocated_pods_check=enable_queue_allocated_pods_check, max_queue_depth=max_queue_depth,
        enable_root_queue_protection=enable_root_queue_protection, admission_conf=admission_conf,
    )))
