"""A local HTTP server speaking the Prometheus HTTP API's instant query endpoint, for tests.

``POST`` (form-encoded) or ``GET /api/v1/query?query=...&time=...`` answers as Prometheus
does: ``{"status": "success", "data": {"resultType": "vector", "result": [{"metric": {...},
"value": [<time>, "<number>"]}]}}``. The node figures are set per node (``cpu`` / ``memory``
load in percent); the server recognises upstream's two node queries by their metric names
(``node_cpu_seconds_total`` / ``node_memory_MemAvailable_bytes``) and the ``instance`` label,
answers an empty vector for a node it has no figure for, and ``400`` with Prometheus'
``{"status": "error", "errorType": "bad_data"}`` for a request without a query. Every request
is recorded (``requests``); ``delay`` makes it answer late.
"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["PrometheusApi"]

_INSTANCE = re.compile(r'instance="([^"]*)"')


class PrometheusApi:
    def __init__(self) -> None:
        self.cpu: dict[str, float] = {}
        self.memory: dict[str, float] = {}
        self.requests: list[dict[str, str]] = []
        self.delay = 0.0
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                parsed = urllib.parse.urlparse(self.path)
                self._answer(parsed.path, dict(urllib.parse.parse_qsl(parsed.query)))

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
                self._answer(urllib.parse.urlparse(self.path).path, form)

            def _answer(self, path: str, form: dict[str, str]) -> None:
                api.requests.append(form)
                if api.delay:
                    time.sleep(api.delay)
                if path != "/api/v1/query":
                    self._send(404, {"status": "error", "errorType": "not_found", "error": path})
                    return
                query = form.get("query")
                if not query:
                    self._send(400, {"status": "error", "errorType": "bad_data",
                                     "error": 'invalid parameter "query": unknown position: parse error'})
                    return
                at = float(form.get("time") or time.time())
                self._send(200, {"status": "success", "data": {"resultType": "vector",
                                                                "result": api.vector(query, at)}})

            def _send(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def vector(self, query: str, at: float) -> list[dict[str, Any]]:
        m = _INSTANCE.search(query)
        if m is None:
            return []
        node = m.group(1)
        figures = self.cpu if "node_cpu_seconds_total" in query else (
            self.memory if "node_memory_MemAvailable_bytes" in query else {})
        if node not in figures:
            return []
        return [{"metric": {"instance": node}, "value": [at, repr(figures[node])]}]

    def __enter__(self) -> PrometheusApi:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
