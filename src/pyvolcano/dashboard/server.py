"""The dashboard's HTTP server: a Starlette application serving JSON and the static front-end.

Routes (every ``/api`` answer is JSON; no HTML is ever built from cluster data on the server):

* ``GET /`` — ``static/index.html``; ``GET /static/...`` — the ES modules and the stylesheet;
* ``GET /api/meta`` — the source (kind, name, notes), whether actions are on, and for a
  simulation run its time range;
* ``GET /api/queues``, ``/api/jobs``, ``/api/nodes``, ``/api/workflows``, ``/api/job?key=NS/NAME`` —
  the view models (:mod:`.sources`), each with an optional ``t`` (seconds into a simulation run);
* ``GET /api/timeline`` — a simulation run's series (404 for the other sources);
* ``GET /api/events`` — server-sent events: ``hello`` at once, then ``change`` (with the new
  revision) when the source changed, at most once per ``debounce`` seconds, and a comment line
  every ``heartbeat`` seconds so proxies keep the stream open;
* ``POST /api/action`` — :func:`pyvolcano.dashboard.actions.perform` (403 unless
  ``allow_actions``). Only ``application/json`` bodies are accepted, which a cross-site form
  cannot send without a preflight this server never grants.

Every request passes :class:`pyvolcano.dashboard.security.HostCheck` first (only the Host names
the dashboard is served as; DNS rebinding), and an action must come from the dashboard's own
origin with the page's per-process token (:func:`pyvolcano.dashboard.security.refuse_action`),
both before anything reaches the cluster.

Every response carries a strict Content-Security-Policy (``default-src 'self'``: no inline
script or style, no other origin), ``X-Content-Type-Options: nosniff`` and no referrer. View
models are computed in worker threads, so the event loop keeps streaming.
"""

from __future__ import annotations

import asyncio
import html
import json
import math
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pyvolcano.dashboard.actions import perform
from pyvolcano.dashboard.security import (
    LOOPBACK_HOSTS,
    TOKEN_META,
    HostCheck,
    new_token,
    refuse_action,
    served_hosts,
)
from pyvolcano.dashboard.sources import Source, SourceError

__all__ = ["CSP", "STATIC", "SecurityHeaders", "create_app", "serving_in_thread"]

STATIC = Path(__file__).resolve().parent / "static"
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
SECURITY_HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
                    "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY", "Cache-Control": "no-store"}


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _time(request: Request) -> float | None:
    text = request.query_params.get("t")
    if text is None or text == "":
        return None
    t = float(text)
    if not math.isfinite(t):
        raise ValueError(f"t: got {text!r}; expected seconds into the run")
    return t


def _index_html(token: str | None) -> str:
    """``static/index.html``, with the action token in a ``<meta>`` when actions are on."""
    page = (STATIC / "index.html").read_text(encoding="utf-8")
    if token is None:
        return page
    meta = f'<meta name="{TOKEN_META}" content="{html.escape(token)}">\n'
    return page.replace("</head>", meta + "</head>", 1)


def create_app(source: Source, *, allow_actions: bool = False, hosts: Sequence[str] = LOOPBACK_HOSTS,
               token: str | None = None, debounce: float = 0.3, heartbeat: float = 15.0) -> Starlette:
    """The application serving ``source`` under the Host names ``hosts``
    (:func:`pyvolcano.dashboard.security.served_hosts`). ``token`` is the action token the page
    receives (a fresh one when not given; ``app.state.action_token``)."""
    token = new_token() if token is None else token
    index_page = _index_html(token if allow_actions else None)

    async def view(request: Request, pick: Callable[[Any], Any]) -> Response:
        try:
            t = _time(request)
        except ValueError as e:
            return _error(400, str(e))
        try:
            body = await run_in_threadpool(lambda: pick(source.views(t)))
        except SourceError as e:
            return _error(503, str(e))
        if body is None:
            return _error(404, "not found")
        return JSONResponse(body)

    async def index(request: Request) -> Response:
        return HTMLResponse(index_page)

    async def meta(request: Request) -> Response:
        return JSONResponse({**source.meta(), "actions": allow_actions, "revision": source.revision()})

    async def queues(request: Request) -> Response:
        return await view(request, lambda v: v.queues())

    async def jobs(request: Request) -> Response:
        return await view(request, lambda v: v.jobs())

    async def nodes(request: Request) -> Response:
        return await view(request, lambda v: v.nodes())

    async def workflows(request: Request) -> Response:
        return await view(request, lambda v: v.workflows())

    async def job(request: Request) -> Response:
        key = request.query_params.get("key", "")
        if "/" not in key:
            return _error(400, "key: expected NAMESPACE/NAME")
        return await view(request, lambda v: v.job(key))

    async def timeline(request: Request) -> Response:
        series = getattr(source, "timeline", None)
        if series is None:
            return _error(404, "only a simulation run has a timeline")
        return JSONResponse(await run_in_threadpool(series))

    async def events(request: Request) -> Response:
        async def stream() -> AsyncIterator[str]:
            rev = source.revision()
            yield f"event: hello\ndata: {json.dumps({'revision': rev})}\n\n"
            idle = 0.0
            while not await request.is_disconnected():
                if source.kind == "live":
                    new = await run_in_threadpool(source.wait, rev, 1.0)
                else:
                    await asyncio.sleep(1.0)
                    new = rev
                if new != rev:
                    await asyncio.sleep(debounce)  # let a burst of changes settle
                    rev = source.revision()
                    idle = 0.0
                    yield f"event: change\ndata: {json.dumps({'revision': rev})}\n\n"
                else:
                    idle += 1.0
                    if idle >= heartbeat:
                        idle = 0.0
                        yield ": keep-alive\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"X-Accel-Buffering": "no"})

    async def action(request: Request) -> Response:
        if allow_actions and (refusal := refuse_action(request, token)) is not None:
            return JSONResponse({"ok": False, "message": refusal}, status_code=403)
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return _error(415, "expected an application/json body")
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "expected a JSON object")
        if not isinstance(body, dict):
            return _error(400, "expected a JSON object")
        status, answer = await run_in_threadpool(perform, source.writer(), body, allowed=allow_actions)
        return JSONResponse(answer, status_code=status)

    app = Starlette(routes=[
        Route("/", index), Route("/api/meta", meta), Route("/api/queues", queues), Route("/api/jobs", jobs),
        Route("/api/nodes", nodes), Route("/api/workflows", workflows), Route("/api/job", job),
        Route("/api/timeline", timeline), Route("/api/events", events), Route("/api/action", action, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ])
    app.add_middleware(HostCheck, hosts=hosts)
    app.add_middleware(SecurityHeaders)  # outermost: refusals carry the headers too
    app.state.action_token = token
    return app


class SecurityHeaders:
    """ASGI middleware adding :data:`SECURITY_HEADERS` to every HTTP response (streams included)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    if name not in headers:
                        headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)


@contextmanager
def serving_in_thread(source: Source, *, allow_actions: bool = False, debounce: float = 0.3,
                      host: str = "127.0.0.1", token: str | None = None) -> Iterator[str]:
    """Serve ``source`` on a free port of ``host`` in a thread for the duration of the block and
    yield the base URL (for tests and the screenshot script); ``token`` as :func:`create_app`."""
    import uvicorn

    sock = socket.socket()
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    app = create_app(source, allow_actions=allow_actions, hosts=served_hosts(host), token=token, debounce=debounce)
    config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the dashboard did not start listening")
        time.sleep(0.01)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
