"""HTTP transports under :class:`pyvolcano.kube.client.KubeClient`.

The live components make one small request per object they create or write, so the HTTP
client's own work per request is a large part of their CPU: httpx's layers (request and
response models, header normalisation, auth flows, the connection pool's state machine) cost
several times the JSON and the socket I/O (figures in docs/performance.md). Two transports
share one small interface:

* :class:`Http11Transport` speaks HTTP/1.1 on keep-alive sockets directly: the request is one
  ``sendall`` of preformatted bytes, the response is a status line, the headers that matter
  (``Content-Length``, ``Transfer-Encoding``, ``Connection``) and the body. It covers what a
  kubeconfig or a service account gives the components: TLS with the cluster's CA or none,
  client certificates, a static bearer token, a token file re-read on 401 (rotated
  service-account tokens, as client-go's ``tokenFileAuth``), basic auth.
* :class:`HttpxTransport` wraps an ``httpx2.Client``: exec plugins and other auth flows
  lightkube implements, and the in-process fake API server of the tests.

HTTP/2 is not used: its framing in Python (``h2``) costs more CPU per request than HTTP/1.1,
and a component's few dozen keep-alive connections are no burden to the API server.

Invariants: a connection is used by one thread at a time (taken from the idle pool, returned
only after its response was read to the end); a connection that failed, was told to close, or
carried a watch is never reused. A request on a *reused* connection that fails before any byte
of the response arrives (the server closed the idle connection) is sent once more on a new
connection; any other transport failure is a :class:`TransportError`, which the client turns
into ``ServerUnavailable`` for the writers to retry.
"""

from __future__ import annotations

import base64
import contextlib
import socket
import ssl
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlencode, urlsplit

__all__ = [
    "Http11Transport",
    "HttpxTransport",
    "Response",
    "StreamResponse",
    "Transport",
    "TransportError",
    "transport_for",
]


class TransportError(Exception):
    """No (complete) answer: connection refused or reset, timeout, TLS failure, bad framing."""


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    content: bytes


class StreamResponse(Protocol):
    status: int

    def read(self) -> bytes: ...

    def lines(self) -> Iterator[bytes]: ...


class Transport(Protocol):
    def request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None,
                headers: Mapping[str, str], content: bytes | None = None) -> Response: ...

    def stream(self, path: str, *, params: Mapping[str, Any] | None, read_timeout: float
               ) -> contextlib.AbstractContextManager[StreamResponse]: ...

    def close(self) -> None: ...


def _query(params: Mapping[str, Any] | None) -> str:
    if not params:
        return ""
    return "?" + urlencode([(k, str(v).lower() if isinstance(v, bool) else v) for k, v in params.items()])


# ---------------------------------------------------------------------------- HTTP/1.1 on sockets
class _Conn:
    __slots__ = ("reused", "rfile", "sock")

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.rfile = sock.makefile("rb")
        self.reused = False

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.rfile.close()
        with contextlib.suppress(OSError):
            self.sock.close()


class _Stale(Exception):
    """A reused connection ended before the response began."""


def _read_head(conn: _Conn) -> tuple[int, int | None, bool, bool]:
    """Status, Content-Length, chunked, keep-alive of the response on ``conn``."""
    rfile = conn.rfile
    while True:
        line = rfile.readline(65537)
        if not line:
            raise _Stale() if conn.reused else TransportError("connection closed before the response")
        parts = line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
            raise TransportError(f"malformed status line {line[:80]!r}")
        try:
            status = int(parts[1])
        except ValueError:
            raise TransportError(f"malformed status line {line[:80]!r}") from None
        length: int | None = None
        chunked = False
        keep = parts[0] != b"HTTP/1.0"
        while True:
            h = rfile.readline(65537)
            if h in (b"\r\n", b"\n"):
                break
            if not h:
                raise TransportError("connection closed in the response headers")
            name, _, value = h.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    raise TransportError(f"bad Content-Length {value!r}") from None
            elif name == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
            elif name == b"connection":
                v = value.strip().lower()
                keep = v != b"close" and (keep or v == b"keep-alive")
        if 100 <= status < 200:  # an interim answer; the real one follows
            continue
        return status, length, chunked, keep


def _chunks(rfile: Any) -> Iterator[bytes]:
    while True:
        size_line = rfile.readline(65537)
        if not size_line:
            raise TransportError("connection closed in a chunked body")
        try:
            size = int(size_line.split(b";", 1)[0], 16)
        except ValueError:
            raise TransportError(f"bad chunk size {size_line[:40]!r}") from None
        if size == 0:
            while rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return
        data = rfile.read(size)
        if len(data) < size:
            raise TransportError("connection closed in a chunk")
        rfile.readline(3)
        yield data


def _body(conn: _Conn, length: int | None, chunked: bool) -> tuple[bytes, bool]:
    """The whole body, and whether the connection can carry another request."""
    if chunked:
        return b"".join(_chunks(conn.rfile)), True
    if length is not None:
        data = conn.rfile.read(length)
        if len(data) < length:
            raise TransportError("connection closed in the response body")
        return data, True
    return conn.rfile.read(), False  # delimited by the end of the connection


class _Stream:
    def __init__(self, conn: _Conn, status: int, length: int | None, chunked: bool):
        self.status = status
        self._conn, self._length, self._chunked = conn, length, chunked

    def read(self) -> bytes:
        return _body(self._conn, self._length, self._chunked)[0]

    def lines(self) -> Iterator[bytes]:
        """Newline-delimited records of the body (a watch's events), as they arrive."""
        if not self._chunked:
            yield from (ln for ln in self.read().split(b"\n") if ln)
            return
        buf = b""
        for chunk in _chunks(self._conn.rfile):
            buf += chunk
            if b"\n" not in buf:
                continue
            *done, buf = buf.split(b"\n")
            for ln in done:
                if ln:
                    yield ln
        if buf.strip():
            yield buf


class _Auth:
    """The ``Authorization`` header: fixed, or a token file read again after a 401."""

    def __init__(self, header: str | None = None, token_file: str | None = None):
        self._header = header
        self._token_file = token_file
        self._lock = threading.Lock()

    def header(self, refresh: bool = False) -> str | None:
        if self._token_file is None:
            return self._header
        with self._lock:
            if self._header is None or refresh:
                try:
                    self._header = "Bearer " + Path(self._token_file).read_text().strip()
                except OSError as e:
                    raise TransportError(f"token file {self._token_file}: {e.strerror or e}") from None
            return self._header

    @property
    def refreshable(self) -> bool:
        return self._token_file is not None


class Http11Transport:
    """HTTP/1.1 keep-alive connections to one API server (thread-safe)."""

    def __init__(self, server: str, *, ssl_context: ssl.SSLContext | None = None, auth: _Auth | None = None,
                 timeout: float = 30.0, user_agent: str = "pyvolcano", max_idle: int = 50):
        url = urlsplit(server)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"kubeconfig: server {server!r} is not an http(s) URL")
        self.host = url.hostname
        self.port = url.port or (443 if url.scheme == "https" else 80)
        self.prefix = url.path.rstrip("/")
        self.ssl_context = ssl_context if url.scheme == "https" else None
        if url.scheme == "https" and self.ssl_context is None:
            self.ssl_context = ssl.create_default_context()
        self.auth = auth or _Auth()
        self.timeout = timeout
        self.max_idle = max_idle
        default_port = 443 if url.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        self._host_header = host if self.port == default_port else f"{host}:{self.port}"
        self._user_agent = user_agent
        self._idle: list[_Conn] = []
        self._lock = threading.Lock()
        self._closed = False

    # ------------------------------------------------------------------ connections
    def _connect(self, timeout: float) -> _Conn:
        try:
            sock = socket.create_connection((self.host, self.port), timeout=timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.ssl_context is not None:
                sock = self.ssl_context.wrap_socket(sock, server_hostname=self.host)
        except (OSError, ssl.SSLError) as e:
            raise TransportError(f"connect {self.host}:{self.port}: {e}") from None
        return _Conn(sock)

    def _take(self) -> _Conn:
        with self._lock:
            if self._idle:
                conn = self._idle.pop()
                conn.reused = True
                return conn
        return self._connect(self.timeout)

    def _give_back(self, conn: _Conn) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < self.max_idle:
                self._idle.append(conn)
                return
        conn.close()

    def _drop_idle(self) -> None:
        """Close the pooled connections: the server dropped the most recently used one, so it
        has dropped those idle longer too (the next attempt then connects anew)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for c in idle:
            c.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for c in idle:
            c.close()

    def _head(self, method: str, target: str, headers: Mapping[str, str], length: int | None,
              auth: str | None) -> bytes:
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self._host_header}", f"User-Agent: {self._user_agent}"]
        lines.extend(f"{k}: {v}" for k, v in headers.items())
        if auth:
            lines.append(f"Authorization: {auth}")
        if length is not None:
            lines.append(f"Content-Length: {length}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    # ------------------------------------------------------------------ requests
    def request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None,
                headers: Mapping[str, str], content: bytes | None = None) -> Response:
        target = self.prefix + path + _query(params)
        length = len(content) if content is not None else (0 if method in ("POST", "PUT", "PATCH") else None)
        resp = self._exchange(method, target, headers, content, length, self.auth.header())
        if resp.status == 401 and self.auth.refreshable:
            resp = self._exchange(method, target, headers, content, length, self.auth.header(refresh=True))
        return resp

    def _exchange(self, method: str, target: str, headers: Mapping[str, str], content: bytes | None,
                  length: int | None, auth: str | None) -> Response:
        data = self._head(method, target, headers, length, auth) + (content or b"")
        for _attempt in range(2):
            conn = self._take()
            try:
                conn.sock.settimeout(self.timeout)
                conn.sock.sendall(data)
                status, clen, chunked, keep = _read_head(conn)
                body, reusable = _body(conn, 0 if method == "HEAD" else clen, chunked)
            except _Stale:
                conn.close()
                self._drop_idle()
                continue
            except (OSError, ssl.SSLError) as e:
                conn.close()
                if conn.reused and isinstance(e, BrokenPipeError | ConnectionResetError):
                    self._drop_idle()
                    continue  # the server dropped the idle connection while we were sending
                raise TransportError(f"{method} {target}: {e}") from None
            except TransportError:
                conn.close()
                raise
            if keep and reusable:
                self._give_back(conn)
            else:
                conn.close()
            return Response(status, body)
        raise TransportError(f"{method} {target}: the server closed the connection twice")

    @contextlib.contextmanager
    def stream(self, path: str, *, params: Mapping[str, Any] | None, read_timeout: float) -> Iterator[_Stream]:
        """A GET whose body is read as it arrives (a watch), on a connection of its own."""
        target = self.prefix + path + _query(params)
        conn = self._connect(self.timeout)
        try:
            try:
                conn.sock.sendall(self._head("GET", target, {"Accept": "application/json"}, None,
                                             self.auth.header()))
                conn.sock.settimeout(read_timeout)
                status, clen, chunked, _keep = _read_head(conn)
                yield _Stream(conn, status, clen, chunked)
            except (OSError, ssl.SSLError) as e:
                raise TransportError(f"GET {target}: {e}") from None
        finally:
            conn.close()


# ---------------------------------------------------------------------------- httpx
class _HttpxStream:
    def __init__(self, resp: Any):
        self._resp = resp
        self.status = int(resp.status_code)

    def read(self) -> bytes:
        self._resp.read()
        return bytes(self._resp.content)

    def lines(self) -> Iterator[bytes]:
        for line in self._resp.iter_lines():
            if line:
                yield line.encode() if isinstance(line, str) else line


class HttpxTransport:
    """The same interface over an ``httpx2.Client`` (auth flows it implements; test transports)."""

    def __init__(self, http: Any):
        import httpx2

        self.http = http
        self._httpx = httpx2

    def request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None,
                headers: Mapping[str, str], content: bytes | None = None) -> Response:
        try:
            resp = self.http.request(method, path, content=content, params=params, headers=headers)
        except self._httpx.HTTPError as e:
            raise TransportError(f"{method} {path}: {e}") from None
        return Response(int(resp.status_code), bytes(resp.content))

    @contextlib.contextmanager
    def stream(self, path: str, *, params: Mapping[str, Any] | None, read_timeout: float) -> Iterator[_HttpxStream]:
        timeout = self._httpx.Timeout(30.0, read=read_timeout)
        try:
            with self.http.stream("GET", path, params=params, timeout=timeout,
                                  headers={"Accept": "application/json"}) as resp:
                yield _HttpxStream(resp)
        except self._httpx.HTTPError as e:
            raise TransportError(f"GET {path}: {e}") from None

    def close(self) -> None:
        self.http.close()


def transport_for(config: Any, *, timeout: float, user_agent: str) -> Http11Transport | HttpxTransport:
    """The transport for a lightkube ``SingleConfig``: sockets unless the auth needs httpx."""
    import httpx2
    from lightkube.config import client_adapter

    user = config.user
    auth: _Auth | None = None
    if user is None or (user.exec is None and user.auth_provider is None):
        if user is not None and user.token_file is not None:
            auth = _Auth(token_file=str(config.abs_file(user.token_file)))
        elif user is not None and user.token is not None:
            auth = _Auth("Bearer " + user.token)
        elif user is not None and user.username and user.password:
            auth = _Auth("Basic " + base64.b64encode(f"{user.username}:{user.password}".encode()).decode())
        else:
            auth = _Auth()
        ctx = None
        if urlsplit(config.cluster.server).scheme == "https":
            ctx = client_adapter.verify_cluster(config.cluster, user, config.abs_file, trust_env=False) \
                if user is not None else None
        return Http11Transport(config.cluster.server, ssl_context=ctx, auth=auth, timeout=timeout,
                               user_agent=user_agent)
    params = client_adapter.ConnectionParams(timeout=httpx2.Timeout(timeout), trust_env=False)
    kwargs = params.httpx_params(config)
    kwargs["limits"] = httpx2.Limits(max_connections=200, max_keepalive_connections=50)
    kwargs["headers"] = {"User-Agent": user_agent}
    return HttpxTransport(httpx2.Client(**kwargs))
