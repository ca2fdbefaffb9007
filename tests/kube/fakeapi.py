"""A transport-level fake kube-apiserver over the in-memory store, for hermetic tests.

It answers the REST calls :class:`pyvolcano.kube.client.KubeClient` makes (list with
``limit``/``continue``, watch from a resourceVersion with bookmarks, create, update, status
update, merge patch, delete, ``pods/binding``) with the API server's shapes: ``Status``
bodies with ``code`` and ``reason`` on failure, a ``Status`` on a successful binding, a
``410 Expired`` watch for a resourceVersion older than :attr:`FakeApiServer.compacted`.
Watches deliver what is there, wait ``watch_wait`` seconds for more, send a BOOKMARK and end
(a real server ends a watch at ``timeoutSeconds``), so reflectors resume the way they do live.
Faults can be injected per request through :attr:`FakeApiServer.faults`, and the outages of a
real control plane are methods:

* :meth:`FakeApiServer.refuse_connections` — nothing listens (the API server process is down);
* :meth:`FakeApiServer.fail_requests` — every request answered with a failure ``Status`` (503
  from a starting server, 500 ``etcdserver: leader changed`` or 504 while etcd is away, 429);
* :meth:`FakeApiServer.expire_watches` — etcd compacts: watches in flight end with a ``410``
  ERROR event, and a watch from a resourceVersion before the compaction gets ``410``;
* :meth:`FakeApiServer.restart` — the process restarts: every watch in flight is cut (a read
  error on the client side), connections are refused for a while, and the new process's watch
  cache starts at the current revision (older resourceVersions get ``410``);
* :meth:`FakeApiServer.cut_off` — one client (by the name given to :meth:`FakeApiServer.client`)
  loses its connection while the others go on, as a network partition does.

Every successful binding is kept in :attr:`FakeApiServer.bindings` with its time, so that tests
can tell a pod bound twice and when binding resumed after a fault.
"""

from __future__ import annotations

import functools
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
        self.bindings: list[tuple[float, str, str, str]] = []  # (monotonic time, pod uid, pod key, node)
        self.refused = 0  # requests refused or failed by an outage
        self._refuse_until = 0.0
        self._fail_until = 0.0
        self._fail_status: tuple[int, str, str] = (503, "ServiceUnavailable", "")
        self._generation = 0  # bumped to end every watch in flight
        self._generation_error: dict[int, str] = {}  # how the watches of a generation end
        self._cut_off: dict[str, float] = {}

    def client(self, name: str = "", **kwargs: Any) -> KubeClient:
        transport = httpx2.MockTransport(functools.partial(self.handle, client=name))
        http = httpx2.Client(transport=transport, base_url="https://fake-apiserver")
        return KubeClient(http=http, **kwargs)

    # ------------------------------------------------------------------ outages
    def refuse_connections(self, seconds: float) -> None:
        """Refuse every connection for ``seconds`` from now."""
        self._refuse_until = time.monotonic() + seconds

    def fail_requests(self, seconds: float, code: int = 503, reason: str = "ServiceUnavailable",
                      message: str = "the server is currently unable to handle the request") -> None:
        """Answer every request with a failure ``Status`` for ``seconds`` from now."""
        self._fail_status = (code, reason, message)
        self._fail_until = time.monotonic() + seconds

    def expire_watches(self) -> None:
        """Compact the history at the current revision and end every watch with ``410``."""
        with self.lock:
            self.compacted = self.store.revision
            self._end_watches("expired")

    def restart(self, down_seconds: float) -> None:
        """Cut every watch, refuse connections for ``down_seconds``, start the watch cache anew."""
        with self.lock:
            self.compacted = self.store.revision
            self._end_watches("cut")
        self.refuse_connections(down_seconds)

    def cut_off(self, client: str, seconds: float) -> None:
        """The client named ``client`` cannot connect for ``seconds``; its watches are cut."""
        self._cut_off[client] = time.monotonic() + seconds
        with self.lock:
            self._end_watches("cut", client)

    def _end_watches(self, how: str, client: str | None = None) -> None:
        self._generation += 1
        self._generation_error[self._generation] = how if client is None else f"{how}:{client}"

    def _outage(self, request: httpx2.Request, client: str) -> httpx2.Response | None:
        now = time.monotonic()
        if now < self._refuse_until or now < self._cut_off.get(client, 0.0):
            self.refused += 1
            raise httpx2.ConnectError("[Errno 111] Connection refused", request=request)
        if now < self._fail_until:
            self.refused += 1
            code, reason, message = self._fail_status
            return _status(code, reason, message)
        return None

    # ------------------------------------------------------------------ dispatch
    def handle(self, request: httpx2.Request, client: str = "") -> httpx2.Response:
        self.requests.append((request.method, request.url.path))
        refused = self._outage(request, client)
        if refused is not None:
            return refused
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
                        return self._watch(res.kind, ns, params, client)
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
                    uid = str(self.store.get("Pod", ns, name)["metadata"].get("uid") or "")
                    self.bindings.append((time.monotonic(), uid, f"{ns}/{name}", target))
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

    def _watch(self, kind: str, ns: str | None, params: dict[str, str], client: str = "") -> httpx2.Response:
        since = int(params.get("resourceVersion") or 0)
        if since < self.compacted:
            return httpx2.Response(200, content=_lines([_expired(since, self.compacted)]))
        bookmarks = params.get("allowWatchBookmarks") == "true"
        return httpx2.Response(200, content=self._stream(kind, ns, since, bookmarks, client))

    def _stream(self, kind: str, ns: str | None, since: int, bookmarks: bool, client: str = "") -> Iterator[bytes]:
        deadline = time.monotonic() + self.watch_wait
        last = since
        generation = self._generation
        while True:
            with self.lock:
                ended = [self._generation_error[g] for g in range(generation + 1, self._generation + 1)]
                ended = [how for how in ended if how in ("expired", "cut", f"cut:{client}")]
                events = [] if ended else self.store.watch(last, (kind,))
                rev = self.store.revision
            if ended and ended[0] == "expired":
                yield (json.dumps(_expired(last, self.compacted)) + "\n").encode()
                return
            if ended:
                raise httpx2.ReadError("connection reset by peer")
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


def _expired(since: int, compacted: int) -> dict[str, Any]:
    return {"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410,
                                        "reason": "Expired",
                                        "message": f"too old resource version: {since} ({compacted})"}}


def _lines(objs: list[dict[str, Any]]) -> Iterator[bytes]:
    for o in objs:
        yield (json.dumps(o) + "\n").encode()
