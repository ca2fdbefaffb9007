"""The HTTPS server the API server calls: one POST endpoint per enabled admission path.

Built on :mod:`http.server` and :mod:`ssl`, one thread per connection (the API server keeps
connections alive and calls webhooks concurrently). TLS is mandatory and at least TLS 1.2, as
upstream's ``configTLS``; a plain-HTTP client fails the handshake and gets no answer.

Per request (the body is always read first, so kept-alive connections stay usable): a chunked
body → 411; unknown path → 404; method other than POST → 405; ``Content-Type`` other than
``application/json`` → 415 (upstream writes an empty body there); a body over 3 MiB → 413
(upstream's ``MaxRequestBody``); a body that is not an AdmissionReview request → 400. Anything
else is answered 200 with an AdmissionReview (see :mod:`pyvolcano.webhooks.review`).

Stopping: ``stop_accepting`` ends the accept loop, ``wait_idle`` waits for requests being
answered, ``close`` then cuts every connection still open (kept-alive ones included, as Go's
``Server.Shutdown`` closes idle connections) and frees the port, so that the API server sees the
webhook gone rather than reusing a pooled connection to a server that has stopped.

:func:`tls_context` builds the server context from PEM files; a missing or mismatched file is a
:class:`TLSConfigError` naming the file. :class:`HealthzServer` serves ``/healthz`` (``ok``) on
its own address, over TLS with the same certificate when one is given.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Final

from pyvolcano.webhooks.review import ReviewError, decode_review, encode_review
from pyvolcano.webhooks.router import Router

__all__ = ["MAX_REQUEST_BODY", "HealthzServer", "TLSConfigError", "WebhookServer", "tls_context"]

MAX_REQUEST_BODY: Final = 3 * 1024 * 1024
_POLL_INTERVAL: Final = 0.05  # seconds; how soon the accept loop notices a shutdown
_IO_TIMEOUT: Final = 30.0  # seconds a connection may stay silent (handshake, headers, body)


class TLSConfigError(ValueError):
    """The certificate or key cannot be loaded; the message names the file."""


def tls_context(cert_file: str, key_file: str) -> ssl.SSLContext:
    """A TLS ≥ 1.2 server context serving ``cert_file`` (CA certificates may follow the server's)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_alpn_protocols(["http/1.1"])
    for flag, path in (("--tls-cert-file", cert_file), ("--tls-private-key-file", key_file)):
        try:
            with open(path, "rb"):
                pass
        except OSError as e:
            raise TLSConfigError(f"{flag} {path}: {e.strerror or e}") from None
    try:
        ctx.load_cert_chain(cert_file, key_file)
    except ssl.SSLError as e:
        raise TLSConfigError(f"--tls-cert-file {cert_file} / --tls-private-key-file {key_file}: "
                             f"not a matching PEM certificate and private key ({e.reason or e})") from None
    return ctx


class _TLSServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler],
                 context: ssl.SSLContext | None):
        self._context = context
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(address, handler)

    def get_request(self) -> tuple[Any, Any]:
        sock, addr = self.socket.accept()
        if self._context is None:
            return sock, addr
        # The handshake runs in the request's thread (finish_request), so a slow or plain-text
        # client cannot stall the accept loop.
        return self._context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def finish_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        try:
            if isinstance(request, ssl.SSLSocket):
                request.settimeout(_IO_TIMEOUT)
                try:
                    request.do_handshake()
                except OSError:  # ssl.SSLError included: not TLS, no shared cipher, hung up, timed out
                    return
            super().finish_request(request, client_address)
        finally:
            with self._open_lock:
                self._open.discard(request)

    def close_connections(self) -> None:
        """Cut every accepted connection (kept-alive ones idle between requests included), as
        Go's ``Server.Shutdown`` closes idle connections: clients reconnect and find no server."""
        with self._open_lock:
            conns = list(self._open)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that fails the TLS handshake or hangs up is not a server error.
        pass


class _WebhookHandler(BaseHTTPRequestHandler):
    server: _WebhookHTTPServer
    protocol_version = "HTTP/1.1"
    timeout = _IO_TIMEOUT

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _reply(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _text(self, status: HTTPStatus, text: str) -> None:
        self._reply(status, (text + "\n").encode(), "text/plain; charset=utf-8")

    def do_GET(self) -> None:
        self._text(HTTPStatus.METHOD_NOT_ALLOWED, "admission webhooks accept POST only")

    def do_POST(self) -> None:
        # The body is read (or the connection closed) before any answer, so that a kept-alive
        # connection stays in step.
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            self.close_connection = True
            self._text(HTTPStatus.LENGTH_REQUIRED, "a Content-Length is required")
            return
        try:
            length = int(self.headers.get("Content-Length") or "0")
        except ValueError:
            length = -1
        if length < 0:
            self.close_connection = True
            self._text(HTTPStatus.BAD_REQUEST, "bad Content-Length")
            return
        if length > MAX_REQUEST_BODY:
            self.close_connection = True
            self._text(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "request body too large")
            return
        body = self.rfile.read(length)
        path = self.path.split("?", 1)[0]
        service = self.server.router.services.get(path)
        if service is None:
            self._text(HTTPStatus.NOT_FOUND, f"no admission webhook at {path}")
            return
        media_type = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        if media_type != "application/json":
            self._text(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "contentType is not application/json")
            return
        try:
            request = decode_review(body)
        except ReviewError as e:
            self._text(HTTPStatus.BAD_REQUEST, str(e))
            return
        with self.server.idle:
            self.server.in_flight += 1
        try:
            response = self.server.router.admit(service, request)
            self._reply(HTTPStatus.OK, encode_review(request.uid, response))
        finally:
            with self.server.idle:
                self.server.in_flight -= 1
                self.server.idle.notify_all()


class _WebhookHTTPServer(_TLSServer):
    def __init__(self, address: tuple[str, int], router: Router, context: ssl.SSLContext):
        self.router = router
        self.in_flight = 0
        self.idle = threading.Condition()
        super().__init__(address, _WebhookHandler, context)


class _Background:
    """Runs a server's ``serve_forever`` in a daemon thread; ``close`` stops it and frees the port."""

    _httpd: _TLSServer
    _name: ClassVar[str] = "server"

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def start(self) -> None:
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(_POLL_INTERVAL,), name=self._name,
                                        daemon=True)
        self._thread.start()

    def stop_accepting(self) -> None:
        """Stop the accept loop; connections already accepted go on in their threads."""
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None

    def close(self) -> None:
        """Stop accepting, cut the connections still open and free the port."""
        self.stop_accepting()
        self._httpd.close_connections()
        self._httpd.server_close()

    def __enter__(self) -> _Background:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class WebhookServer(_Background):
    """The admission webhooks of ``router`` over HTTPS on ``host:port`` (port 0 picks a free one)."""

    _name = "admission-webhooks"

    def __init__(self, router: Router, context: ssl.SSLContext, host: str = "", port: int = 8443):
        super().__init__()
        self.router = router
        self._httpd = self._webhooks = _WebhookHTTPServer((host, port), router, context)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no admission request is being answered; False if ``timeout`` passed first."""
        with self._webhooks.idle:
            return self._webhooks.idle.wait_for(lambda: self._webhooks.in_flight == 0, timeout)


class _HealthzHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = _IO_TIMEOUT

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] == "/healthz":
            status, body = HTTPStatus.OK, b"ok"
        else:
            status, body = HTTPStatus.NOT_FOUND, b"404 page not found"
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class HealthzServer(_Background):
    """``GET /healthz`` → ``ok`` (``--enable-healthz`` / ``--healthz-address``)."""

    _name = "healthz"

    def __init__(self, host: str, port: int, context: ssl.SSLContext | None):
        super().__init__()
        self._httpd = _TLSServer((host, port), _HealthzHandler, context)
