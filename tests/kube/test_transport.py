"""The HTTP/1.1 socket transport against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import http.server
import json
import socket
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyvolcano.kube.client import KubeClient, ServerUnavailable
from pyvolcano.kube.resources import RESOURCES
from pyvolcano.kube.transport import Http11Transport, TransportError, _Auth
from pyvolcano.store.base import Conflict


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.connections = 0
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        self.token = "good"
        self.close_after_each = False


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.connections += 1

    def log_message(self, *args: Any) -> None:
        pass

    def _reply(self, code: int, body: dict[str, Any], *, close: bool = False) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if close:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        if close:
            self.close_connection = True

    def _chunked(self, parts: list[bytes]) -> None:
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for p in parts:
            self.wfile.write(f"{len(p):x}\r\n".encode() + p + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def _handle(self) -> None:
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        self.server.requests.append((self.command, self.path, dict(self.headers), body))
        if self.headers.get("Authorization") != f"Bearer {self.server.token}":
            self._reply(401, {"kind": "Status", "code": 401, "message": "Unauthorized"})
            return
        if "watch=true" in self.path:
            ev = [json.dumps({"type": "ADDED", "object": {"metadata": {"name": f"p{i}", "resourceVersion": str(i)}}})
                  .encode() + b"\n" for i in range(3)]
            # one event split over two chunks, two events in one chunk
            self._chunked([ev[0][:10], ev[0][10:] + ev[1], ev[2]])
            return
        if self.path.startswith("/chunked"):
            self._chunked([b'{"a":', b' 1}'])
            return
        if self.command == "PUT":
            self._reply(409, {"kind": "Status", "code": 409, "reason": "Conflict", "message": "stale"})
            return
        self._reply(200, {"method": self.command, "path": self.path, "got": body.decode()},
                    close=self.server.close_after_each)

    do_GET = do_POST = do_PUT = _handle


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server()
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _transport(srv: _Server, **kw: Any) -> Http11Transport:
    kw.setdefault("auth", _Auth("Bearer good"))
    return Http11Transport(f"http://127.0.0.1:{srv.server_address[1]}", **kw)


def test_requests_share_one_keep_alive_connection(server: _Server) -> None:
    t = _transport(server)
    for i in range(5):
        r = t.request("POST", "/api/v1/pods", params={"limit": 5, "labelSelector": "a=b,c in (d)"},
                      headers={"Content-Type": "application/json"}, content=f'{{"i":{i}}}'.encode())
        assert r.status == 200
        assert json.loads(r.content)["got"] == f'{{"i":{i}}}'
    assert server.connections == 1
    method, path, headers, _ = server.requests[0]
    assert method == "POST"
    assert path == "/api/v1/pods?limit=5&labelSelector=a%3Db%2Cc+in+%28d%29"
    assert headers["Host"] == f"127.0.0.1:{server.server_address[1]}"


def test_a_connection_the_server_closes_is_not_reused(server: _Server) -> None:
    server.close_after_each = True
    t = _transport(server)
    for _ in range(3):
        assert t.request("GET", "/x", headers={}).status == 200
    assert server.connections == 3


def test_an_idle_connection_dropped_by_the_server_is_replaced(server: _Server) -> None:
    t = _transport(server)
    assert t.request("GET", "/x", headers={}).status == 200
    idle = t._idle[0]
    idle.sock.shutdown(socket.SHUT_RDWR)  # as if the server had timed it out
    assert t.request("GET", "/y", headers={}).status == 200
    assert server.connections == 2


def test_a_pool_of_idle_connections_the_server_dropped_is_replaced_at_once(server: _Server) -> None:
    # a client that sent requests from 16 threads keeps 16 connections; after a long idle spell
    # the server has timed them all out, and the next request must not fail on two of them
    t = _transport(server)
    for _ in range(3):
        t._give_back(t._connect(t.timeout))
    for conn in t._idle:
        conn.sock.shutdown(socket.SHUT_RDWR)
        conn.reused = True
    assert t.request("GET", "/z", headers={}).status == 200
    assert len(t._idle) == 1  # the fresh connection; the dropped ones are closed


def test_chunked_bodies_are_joined(server: _Server) -> None:
    assert json.loads(_transport(server).request("GET", "/chunked", headers={}).content) == {"a": 1}


def test_a_rotated_token_file_is_read_again_after_401(server: _Server, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("old\n")
    t = _transport(server, auth=_Auth(token_file=str(token)))
    assert t.request("GET", "/x", headers={}).status == 401
    token.write_text("good\n")
    assert t.request("GET", "/x", headers={}).status == 200
    assert [r[2]["Authorization"] for r in server.requests[-2:]] == ["Bearer old", "Bearer good"]


def test_watch_lines_are_split_on_newlines_across_chunks(server: _Server) -> None:
    client = KubeClient.__new__(KubeClient)
    client.transport, client.limiter = _transport(server), None
    items = list(client.watch(RESOURCES["Pod"], "0"))
    assert [i.object["metadata"]["name"] for i in items] == ["p0", "p1", "p2"]
    assert all(i.object["kind"] == "Pod" for i in items)


def test_failure_statuses_and_refused_connections_map_to_store_errors(server: _Server) -> None:
    client = KubeClient.__new__(KubeClient)
    client.transport, client.limiter = _transport(server), None
    with pytest.raises(Conflict):
        client.request("PUT", "/api/v1/namespaces/a/pods/b", body={}, what=("Pod", "a/b"))
    port = server.server_address[1]
    server.shutdown()
    server.server_close()
    client.transport.close()
    refused = Http11Transport(f"http://127.0.0.1:{port}", timeout=2.0)
    with pytest.raises(TransportError):
        refused.request("GET", "/x", headers={})
    client.transport = refused
    with pytest.raises(ServerUnavailable):
        client.request("GET", "/x", what=("Pod", ""))


def test_a_server_url_must_be_http() -> None:
    with pytest.raises(ValueError, match="not an http"):
        Http11Transport("ftp://example")
