"""The components' small HTTP servers: ``/healthz`` and ``/metrics``.

Upstream's vc-scheduler serves ``/metrics`` on ``--listen-address`` (default ``:8080``; the
controller manager ``:8081``) and ``/healthz`` on ``--healthz-address`` (default ``:11251``),
each with Go's address syntax: ``host:port``, an empty host meaning every interface
(``:8080``), IPv6 hosts in brackets (``[::1]:8080``), port 0 meaning any free port.

``/healthz`` follows ``k8s.io/apiserver/pkg/server/healthz``: every check is a callable
returning None when healthy or a reason; all pass → ``200 ok``; any fails → ``500`` with one
``[+]name ok`` / ``[-]name failed: reason withheld`` line per check and ``healthz check
failed``; ``?verbose`` lists the checks on success too; ``/healthz/<name>`` runs one check.
A ``ping`` check that always passes is installed first, as upstream's ``InstallHandler``
does; :func:`pyvolcano.kube.leaderelection.healthz_check` adds client-go's leader-election
adaptor. ``/metrics`` is the Prometheus text exposition of one ``CollectorRegistry``
(OpenMetrics when the scraper asks for it).

Requests are served on their own threads (``ThreadingHTTPServer``); :meth:`HTTPEndpoints.start`
binds and serves in the background, :meth:`HTTPEndpoints.stop` shuts down.
"""

from __future__ import annotations

import logging
import re
import socket
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

__all__ = ["HTTPEndpoints", "HealthCheck", "parse_listen_address"]

logger = logging.getLogger(__name__)

HealthCheck = Callable[[], str | None]
"""A health check: None when healthy, otherwise why not."""

_ADDRESS: Final = re.compile(r"^(?:\[(?P<v6>[0-9A-Fa-f:.%\w]*)\]|(?P<host>[^:\[\]]*)):(?P<port>\d{1,5})$")


def parse_listen_address(text: str, flag: str = "--listen-address") -> tuple[str, int]:
    """``(host, port)`` of a Go listen address; host ``""`` means every interface.

    ValueError naming ``flag`` when the text is not ``host:port`` with a port of 0-65535."""
    m = _ADDRESS.match(text.strip())
    port = int(m.group("port")) if m else -1
    if m is None or not 0 <= port <= 65535:
        raise ValueError(f"{flag}: got {text!r}; expected host:port such as :8080, 127.0.0.1:8080 or [::1]:8080")
    host = m.group("v6") if m.group("v6") is not None else m.group("host")
    return host, port


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    dual_stack = False

    def server_bind(self) -> None:
        if self.dual_stack:
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


class HTTPEndpoints:
    """One listening address serving ``/healthz`` (when ``healthz`` is given, possibly empty)
    and ``/metrics`` (when ``registry`` is given)."""

    def __init__(self, address: str, *, registry: CollectorRegistry | None = None,
                 healthz: Mapping[str, HealthCheck] | None = None, flag: str = "--listen-address"):
        self.host, self.requested_port = parse_listen_address(address, flag)
        self.registry = registry
        self.checks: dict[str, HealthCheck] | None = None
        if healthz is not None:
            self.checks = {"ping": lambda: None}
            self.checks.update(healthz)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port (the chosen one when the address asked for port 0)."""
        if self._server is None:
            raise RuntimeError("the server is not started")
        return int(self._server.server_address[1])

    def start(self) -> HTTPEndpoints:
        """Bind and serve on a background thread. OSError when the address cannot be bound."""
        handler = _handler_class(self)
        host = self.host
        server_class: type[_Server] = _Server
        if host == "" and socket.has_dualstack_ipv6():
            server_class = type("_DualStackServer", (_Server,), {"address_family": socket.AF_INET6,
                                                                 "dual_stack": True})
            host = "::"
        elif ":" in host:
            server_class = type("_IPv6Server", (_Server,), {"address_family": socket.AF_INET6})
        self._server = server_class((host, self.requested_port), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name=f"http-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    # ------------------------------------------------------------------ handlers

    def healthz(self, path: str, query: Mapping[str, Any]) -> tuple[int, str]:
        assert self.checks is not None
        if path.startswith("/healthz/"):
            name = path[len("/healthz/"):]
            check = self.checks.get(name)
            if check is None:
                return 404, f"no such health check: {name}\n"
            reason = _run_check(name, check)
            return (200, "ok") if reason is None else (500, f"internal server error: {reason}\n")
        lines = []
        failed = False
        for name, check in self.checks.items():
            reason = _run_check(name, check)
            if reason is None:
                lines.append(f"[+]{name} ok")
            else:
                failed = True
                lines.append(f"[-]{name} failed: reason withheld")
                logger.info("healthz check %s failed: %s", name, reason)
        if failed:
            return 500, "\n".join(lines) + "\nhealthz check failed\n"
        if "verbose" in query:
            return 200, "\n".join(lines) + "\nhealthz check passed\n"
        return 200, "ok"


def _run_check(name: str, check: HealthCheck) -> str | None:
    try:
        return check()
    except Exception as e:  # a check that raises is a failing check, not a dead server
        return f"{type(e).__name__}: {e}"


def _handler_class(endpoints: HTTPEndpoints) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            query = parse_qs(url.query, keep_blank_values=True)
            if endpoints.checks is not None and (url.path == "/healthz" or url.path.startswith("/healthz/")):
                code, body = endpoints.healthz(url.path, query)
                self._reply(code, body.encode(), "text/plain; charset=utf-8")
            elif endpoints.registry is not None and url.path == "/metrics":
                encoder, content_type = choose_encoder(self.headers.get("Accept", ""))
                self._reply(200, encoder(endpoints.registry), content_type)
            else:
                self._reply(404, b"404 page not found\n", "text/plain; charset=utf-8")

        def _reply(self, code: int, body: bytes, content_type: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            logger.debug("%s - %s", self.address_string(), format % args)

    return Handler
