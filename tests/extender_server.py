"""A real local HTTP extender for tests: ``POST /<verb>`` answered by a Python function.

``answers[verb]`` maps the decoded JSON body to the answer (a JSON-able value, or an ``int``
HTTP status to fail with); a verb without an answer gets ``{}``. Every call is recorded as
``(verb, body)`` in ``calls``; ``delay`` makes every answer late.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ExtenderServer"]


class ExtenderServer:
    def __init__(self) -> None:
        self.answers: dict[str, Callable[[Any], Any]] = {}
        self.calls: list[tuple[str, Any]] = []
        self.delay = 0.0
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                verb = self.path.strip("/")
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")
                with owner._lock:
                    owner.calls.append((verb, body))
                if owner.delay:
                    time.sleep(owner.delay)
                answer = owner.answers.get(verb, lambda _b: {})(body)
                if isinstance(answer, int) and not isinstance(answer, bool):
                    self.send_response(answer)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that gave up (timed out) closed the connection: nothing to report

        self.server = Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def verbs(self) -> list[str]:
        with self._lock:
            return [v for v, _b in self.calls]

    def __enter__(self) -> ExtenderServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
