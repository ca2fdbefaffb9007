"""A transport-level fake kube-apiserver over the in-memory store, for hermetic tests.

It answers the REST calls :class:`pyvolcano.kube.client.KubeClient` makes (list with
``limit``/``continue``, watch from a resourceVersion with bookmarks, create, update, status
update, merge patch, delete, ``pods/binding``) with the API server's shapes: ``Status``
bodies with ``code`` and ``reason`` on failure, a ``Status`` on a successful binding, a
``410 Expired`` watch for a resourceVersion older than :attr:`FakeApiServer.compacted`.
Watches deliver what is there, wait ``watch_wait`` seconds for more, send a BOOKMARK and end
(a real server ends a watch at ``timeoutSeconds``), so reflectors resume the way they do live.
Faults can be injected per request through :attr:`FakeApiServer.faults`.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs

import httpx2

from pyvolcano.kube.client import KubeClient
from pyvolcano.kube.resources import RESOURCES
from pyvolcano.store.base import (
    STATUS_SUBRESOURCE_KINDS,
    AlreadyExists,
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    StoreError,
)
from pyvolcano.store.memory import InMemoryStore

_BY_PLURAL = {(r.group, r.version, r.plural): r for r in RESOURCES.values()}
_PATH = re.compile(r"^/(?:api/(?P<cv>v1)|apis/(?P<g>[^/]+)/(?P<v>[^/]+))"
                   r"(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[^/]+)(?:/(?P<name>[^/]+))?(?:/(?P<sub>[^/]+))?$")

Fault = Callable[[httpx2.Request], httpx2.Response | None]


def _status(code: int, reason: str, message: str, **details: Any) -> httpx2.Response:
    body = {"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": code, "reason": reason,
            "message": message, "metadata": {}}
    if details:
        body["details"] = details
    return httpx2.Response(code, json=body)


def _error(e: StoreError) -> httpx2.Response:
    if isinstance(e, NotFound):
        return _status(404, "NotFound", str(e), name=e.key)
    if isinstance(e, AlreadyExists):
        return _status(409, "AlreadyExists", str(e), name=e.key)
    if isinstance(e, Conflict):
        return _status(409, "Conflict", str(e), name=e.key)
    if isinstance(e, Invalid):
        return _status(422, "Invalid", str(e), name=e.key,
                       causes=[{"field": f, "message": m} for f, m in e.errors])
    if isinstance(e, Forbidden):
        return _status(403, "Forbidden", str(e), name=e.key)
    return _status(500, "InternalError", str(e))


class FakeApiServer:
    def __init__(self, store: InMemoryStore | None = None, *, watch_wait: float = 0.05):
        self.store = store or InMemoryStore(clock=time.time)
        self.lock = threading.RLock()
        self.compacted = 0
        self.watch_wait = watch_wait
        self.faults: list[Fault] = []
        self.requests: list[tuple[str, str]] = []

    def client(self, **kwargs: Any) -> KubeClient:
        http = httpx2.Client(transport=httpx2.MockTransport(self.handle), base_url="https://fake-apiserver")
        return KubeClient(http=http, **kwargs)

    # ------------------------------------------------------------------ dispatch
    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append((request.method, request.url.path))
        for fault in list(self.faults):
            resp = fault(request)
            if resp is not None:
                return resp
        m = _PATH.match(request.url.path)
        if m is None:
            return _status(404, "NotFound", f"no route {request.url.path}")
        group, version = ("", "v1") if m["cv"] else (m["g"], m["v"])
        res = _BY_PLURAL.get((group, version, m["plural"]))
        if res is None:
            return _status(404, "NotFound", f"the server could not find the requested resource {m['plural']}")
        params = {k: v[-1] for k, v in parse_qs(request.url.query.decode() if isinstance(request.url.query, bytes)
                                                  else str(request.url.query)).items()}
        body = json.loads(request.content) if request.content else None
        ns, name, sub = m["ns"], m["name"], m["sub"]
        try:
            with self.lock:
                if request.method == "GET" and name is None:
                    if params.get("watch") in ("true", "1"):
                        return self._watch(res.kind, ns, params)
                    return self._list(res, ns, params)
                if request.method == "GET":
                    return httpx2.Response(200, json=self.store.get(res.kind, ns, name))
                if request.method == "POST" and name is None:
                    obj = dict(body)
                    if res.namespaced:
                        obj["metadata"] = {**obj.get("metadata", {}), "namespace": ns or "default"}
                    return httpx2.Response(201, json=self.store.create(obj))
                if request.method == "POST" and sub == "binding":
                    target = body["target"]["name"]
                    self.store.bind(ns, name, target, annotations=(body.get("metadata") or {}).get("annotations"))
                    return httpx2.Response(201, json={"kind": "Status", "apiVersion": "v1", "metadata": {},
                                                      "status": "Success", "code": 201})
                if request.method == "PUT" and sub == "status":
                    return httpx2.Response(200, json=self.store.update_status(body))
                if request.method == "PUT":
                    out = self.store.update(body)
                    if not res.status_subresource and res.kind in STATUS_SUBRESOURCE_KINDS and "status" in body:
                        out = self.store.update_status({**out, "status": body["status"]})
                    return httpx2.Response(200, json=out)
                if request.method == "PATCH":
                    if not res.status_subresource and res.kind in STATUS_SUBRESOURCE_KINDS and sub is None:
                        # The CRD has no status subresource: status is an ordinary field.
                        rest = {k: v for k, v in body.items() if k != "status"}
                        out = self.store.patch(res.kind, ns, name, rest) if rest else self.store.get(res.kind, ns, name)
                        if "status" in body:
                            out = self.store.patch(res.kind, ns, name, {"status": body["status"]}, subresource="status")
                        return httpx2.Response(200, json=out)
                    return httpx2.Response(200, json=self.store.patch(res.kind, ns, name, body, subresource=sub))
                if request.method == "DELETE":
                    opts = body or {}
                    out = self.store.delete(res.kind, ns, name, grace_period_seconds=opts.get("gracePeriodSeconds"),
                                            propagation=opts.get("propagationPolicy") or "Background")
                    if out is None:
                        return httpx2.Response(200, json={"kind": "Status", "apiVersion": "v1", "status": "Success"})
                    return httpx2.Response(200, json=out)
        except StoreError as e:
            return _error(e)
        return _status(405, "MethodNotAllowed", f"{request.method} {request.url.path}")

    def _list(self, res: Any, ns: str | None, params: dict[str, str]) -> httpx2.Response:
        items = self.store.list(res.kind, ns)
        offset = int(params.get("continue") or 0)
        limit = int(params.get("limit") or 0) or len(items) or 1
        page = items[offset:offset + limit]
        md: dict[str, Any] = {"resourceVersion": str(self.store.revision)}
        if offset + limit < len(items):
            md["continue"] = str(offset + limit)
        for it in page:  # items of a list carry neither apiVersion nor kind
            it.pop("apiVersion", None)
            it.pop("kind", None)
        return httpx2.Response(200, json={"kind": f"{res.kind}List", "apiVersion": res.api_version,
                                          "metadata": md, "items": page})

    def _watch(self, kind: str, ns: str | None, params: dict[str, str]) -> httpx2.Response:
        since = int(params.get("resourceVersion") or 0)
        if since < self.compacted:
            return httpx2.Response(200, content=_lines([{"type": "ERROR", "object": {
                "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410, "reason": "Expired",
                "message": f"too old resource version: {since} ({self.compacted})"}}]))
        bookmarks = params.get("allowWatchBookmarks") == "true"
        return httpx2.Response(200, content=self._stream(kind, ns, since, bookmarks))

    def _stream(self, kind: str, ns: str | None, since: int, bookmarks: bool) -> Iterator[bytes]:
        deadline = time.monotonic() + self.watch_wait
        last = since
        while True:
            with self.lock:
                events = self.store.watch(last, (kind,))
                rev = self.store.revision
            for ev in events:
                last = ev.revision
                md = ev.object.get("metadata") or {}
                if ns is not None and md.get("namespace") != ns:
                    continue
                yield (json.dumps({"type": ev.type, "object": ev.object}) + "\n").encode()
            if time.monotonic() >= deadline:
                break
            time.sleep(0.005)
        if bookmarks:
            yield (json.dumps({"type": "BOOKMARK", "object": {
                "kind": kind, "metadata": {"resourceVersion": str(max(last, rev))}}}) + "\n").encode()


def not_served(group: str) -> Fault:
    """A fault: every path of API group ``group`` answers the 404 a kube-apiserver gives for a
    resource it does not serve (its CRD is not installed)."""
    prefix = f"/apis/{group}/"

    def fault(request: httpx2.Request) -> httpx2.Response | None:
        if not request.url.path.startswith(prefix):
            return None
        return _status(404, "NotFound", "the server could not find the requested resource")

    return fault


def _lines(objs: list[dict[str, Any]]) -> Iterator[bytes]:
    for o in objs:
        yield (json.dumps(o) + "\n").encode()
