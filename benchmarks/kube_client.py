"""CPU per API request of the client's two transports, against a local HTTP/1.1 server.

    python benchmarks/kube_client.py [--requests N]

The server (a thread of this process, answering every request with a 1 KiB Pod) is the same
for both; the figure is the requesting thread's CPU time per request (``time.thread_time``),
so the server's own work is not counted. ``httpx`` is lightkube's authenticated client (what
every request went through before the socket transport); ``http11`` is
:class:`pyvolcano.kube.transport.Http11Transport`.
"""

from __future__ import annotations

import argparse
import http.server
import json
import socketserver
import threading
import time
from typing import Any

import httpx2

from pyvolcano.kube.client import KubeClient
from pyvolcano.kube.transport import Http11Transport

_POD = json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {
    "name": "job-worker-0", "namespace": "default", "resourceVersion": "12345",
    "labels": {f"label-{i}": "x" * 20 for i in range(8)}},
    "spec": {"containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}]},
    "status": {"phase": "Pending"}}).encode()
_POD = _POD + b" " * max(0, 1024 - len(_POD))


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        n = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(n)
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(_POD)))
        self.end_headers()
        self.wfile.write(_POD)


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def _cpu_per_request(client: KubeClient, n: int) -> float:
    body = json.loads(_POD)
    client.request("POST", "/api/v1/namespaces/default/pods", body=body)
    start = time.thread_time()
    for _ in range(n):
        client.request("POST", "/api/v1/namespaces/default/pods", body=body, what=("Pod", ""))
    return (time.thread_time() - start) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=5000)
    args = ap.parse_args()
    srv = _Server(("127.0.0.1", 0), _Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}"
    clients = {
        "httpx": KubeClient(http=httpx2.Client(base_url=url)),
        "http11": KubeClient.__new__(KubeClient),
    }
    clients["http11"].transport, clients["http11"].limiter = Http11Transport(url), None
    figures = {name: _cpu_per_request(c, args.requests) for name, c in clients.items()}
    print(f"{'transport':<10} {'CPU µs / request':>18}")
    for name, s in figures.items():
        print(f"{name:<10} {s * 1e6:>18.1f}")
    print(f"httpx / http11: {figures['httpx'] / figures['http11']:.2f}x")
    srv.shutdown()


if __name__ == "__main__":
    main()
