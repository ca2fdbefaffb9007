"""A small REST client for the kube-apiserver, on lightkube's configuration and transport.

lightkube (``lightkube.config``) reads kubeconfig files (contexts, client certificates,
bearer tokens and token files, exec plugins) and in-cluster service-account configuration;
:mod:`pyvolcano.kube.transport` sends the requests (HTTP/1.1 on keep-alive sockets, or
lightkube's authenticated ``httpx2`` client where an exec plugin needs its auth flow). Above
them this module speaks the API directly
and keeps objects as plain JSON dicts, the store protocol's currency: decoding 10,000 Pods
into dicts costs a JSON parse, where typed models cost several times more
(``benchmarks/kube_decode.py``; figures in docs/kubernetes.md).

Failures come back as the store's errors (:mod:`pyvolcano.store.base`), mapped from the
``Status`` the API server returns: 404 → NotFound, 409 → Conflict or AlreadyExists (by
``reason``), 422 → Invalid (with its causes), 403 → Forbidden, 410 → :class:`Expired`; 429, a
5xx and a failed or timed-out connection → :class:`ServerUnavailable`, a
:class:`~pyvolcano.store.base.Unavailable` the writers retry. Every
request first takes a token from the client-side rate limiter (``--kube-api-qps`` /
``--kube-api-burst``), as client-go's ``flowcontrol`` does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec

from pyvolcano.kube.resources import Resource
from pyvolcano.kube.transport import HttpxTransport, Transport, TransportError, transport_for
from pyvolcano.store.base import AlreadyExists, Conflict, Forbidden, Invalid, NotFound, StoreError, Unavailable

__all__ = [
    "ApiError",
    "Expired",
    "KubeClient",
    "RateLimiter",
    "ServerUnavailable",
    "WatchItem",
    "decode_list",
    "decode_object",
    "load_config",
]

logger = logging.getLogger(__name__)

# msgspec's decoder is about twice as fast as json's.
_decode: Callable[[bytes], Any] = msgspec.json.Decoder().decode
# Request bodies (a pod per create, a status per write) encode in a third of json.dumps' time.
_encode: Callable[[Any], bytes] = msgspec.json.Encoder().encode

_UNSET = msgspec.UNSET


class _ObjectMeta(msgspec.Struct, omit_defaults=True):
    """``metadata`` as decoded for the informers: every ObjectMeta field but ``managedFields``
    (skipped by the decoder without building it), in the API server's own order."""

    name: Any = _UNSET
    generateName: Any = _UNSET
    namespace: Any = _UNSET
    selfLink: Any = _UNSET
    uid: Any = _UNSET
    resourceVersion: Any = _UNSET
    generation: Any = _UNSET
    creationTimestamp: Any = _UNSET
    deletionTimestamp: Any = _UNSET
    deletionGracePeriodSeconds: Any = _UNSET
    labels: Any = _UNSET
    annotations: Any = _UNSET
    ownerReferences: Any = _UNSET
    finalizers: Any = _UNSET


class _WatchLine(msgspec.Struct):
    type: str = ""
    object: msgspec.Raw = msgspec.Raw(b"null")


class _ListReply(msgspec.Struct):
    metadata: dict[str, Any] = {}
    items: list[msgspec.Raw] = []


_decode_parts = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
_decode_meta = msgspec.json.Decoder(_ObjectMeta).decode
_decode_watch_line = msgspec.json.Decoder(_WatchLine).decode
_decode_list = msgspec.json.Decoder(_ListReply).decode
_asdict = msgspec.structs.asdict
_MANAGED_FIELDS = b'"managedFields"'


def decode_list(content: bytes) -> tuple[dict[str, Any], list[Any]]:
    """A list reply's ``metadata`` and its items, each as :func:`decode_object` decodes it."""
    reply = _decode_list(content)
    return reply.metadata, [decode_object(raw) for raw in reply.items]


def decode_object(content: bytes | msgspec.Raw) -> Any:
    """An object's JSON without ``metadata.managedFields``: equal to ``json.loads`` of it with
    that one key removed (``metadata``'s keys come in the API server's order, ObjectMeta's).

    Server-side apply's bookkeeping is often half of an object's JSON and, being nested maps
    of field paths, most of what copying it costs; no controller, the scheduler's cache or
    a printer (kubectl hides it by default) reads it, and a PUT without it keeps the API
    server's. Anything that is not an object with an object ``metadata`` decodes as is."""
    if isinstance(content, bytes) and _MANAGED_FIELDS not in content:
        return _decode(content)
    try:
        parts = _decode_parts(content)
    except msgspec.ValidationError:
        return _decode(content)
    out: dict[str, Any] = {}
    for key, raw in parts.items():
        if key == "metadata":
            try:
                out[key] = {k: v for k, v in _asdict(_decode_meta(raw)).items() if v is not _UNSET}
                continue
            except msgspec.ValidationError:
                pass
        out[key] = _decode(raw)
    return out


class RateLimiter(Protocol):
    """client-go's ``flowcontrol.RateLimiter``: ``accept`` blocks until a request may go."""

    def accept(self, max_wait: float | None = None) -> float: ...


class Expired(StoreError):
    """410 Gone: the requested resourceVersion is older than the API server keeps."""


class ApiError(StoreError):
    """Any other failure status (5xx, 400, 401, ...), or a transport failure (``code`` 0)."""

    def __init__(self, kind: str, key: str, message: str, code: int):
        super().__init__(kind, key, message)
        self.code = code


class ServerUnavailable(ApiError, Unavailable):
    """429, a 5xx, or no answer at all (``code`` 0): the request may succeed later."""


@dataclass(frozen=True, slots=True)
class WatchItem:
    type: str  # ADDED | MODIFIED | DELETED | BOOKMARK
    object: dict[str, Any]


def load_config(kubeconfig: str | None = None, master: str | None = None, context: str | None = None) -> Any:
    """A lightkube ``SingleConfig``: the kubeconfig file if given, else in-cluster service account,
    else ``$KUBECONFIG`` / ``~/.kube/config`` (client-go's order); ``master`` overrides the server
    URL as vc-scheduler's ``--master`` does."""
    from lightkube.config.kubeconfig import KubeConfig
    from lightkube.core.exceptions import ConfigError

    try:
        if kubeconfig:
            cfg = KubeConfig.from_file(kubeconfig)
        elif master:
            try:
                cfg = KubeConfig.from_service_account()
            except ConfigError:
                cfg = KubeConfig.from_server(master)
        else:
            cfg = KubeConfig.from_env()
        single = cfg.get(context_name=context)
    except ConfigError as e:
        raise ValueError(f"kubeconfig: {e}") from None
    except OSError as e:
        raise ValueError(f"kubeconfig: {kubeconfig}: {e.strerror or e}") from None
    if single is None:
        raise ValueError(f"kubeconfig: no context {context!r}" if context else "kubeconfig: no current context")
    if master:
        import msgspec

        single = single._replace(cluster=msgspec.structs.replace(single.cluster, server=master))
    return single


class KubeClient:
    """JSON requests to one API server. Thread-safe (its transports are)."""

    def __init__(self, config: Any = None, *, http: Any = None, limiter: RateLimiter | None = None,
                 timeout: float = 30.0, user_agent: str = "pyvolcano"):
        """``http``, an ``httpx2.Client``, replaces the transport built from ``config``."""
        self.transport: Transport = HttpxTransport(http) if http is not None else \
            transport_for(config, timeout=timeout, user_agent=user_agent)
        self.limiter = limiter

    def close(self) -> None:
        self.transport.close()

    # ------------------------------------------------------------------ requests
    def request(self, method: str, path: str, *, body: Any = None, params: Mapping[str, Any] | None = None,
                content_type: str = "application/json", what: tuple[str, str] = ("", "")) -> Any:
        content = self._exchange(method, path, body, params, content_type, what)
        return decode_object(content) if content else None

    def request_twice(self, method: str, path: str, *, body: Any = None, content_type: str = "application/json",
                      what: tuple[str, str] = ("", "")) -> tuple[Any, Any]:
        """The reply decoded twice: two independent copies (one for a cache, one for the caller),
        for a fraction of what a deep copy of the decoded reply costs in Python."""
        content = self._exchange(method, path, body, None, content_type, what)
        if not content:
            return None, None
        return decode_object(content), decode_object(content)

    def _exchange(self, method: str, path: str, body: Any, params: Mapping[str, Any] | None, content_type: str,
                  what: tuple[str, str]) -> bytes:
        """The reply's body; a failure status raised as its store error."""
        if self.limiter is not None:
            self.limiter.accept()
        headers = {"Accept": "application/json"}
        content = None
        if body is not None:
            content = _encode(body)
            headers["Content-Type"] = content_type
        try:
            resp = self.transport.request(method, path, content=content, params=params, headers=headers)
        except TransportError as e:
            raise ServerUnavailable(what[0], what[1], f"{method} {path}: {e}", 0) from None
        if resp.status >= 400:
            raise status_error(resp.status, _decode(resp.content) if resp.content else None, what)
        return bytes(resp.content or b"")

    def list(self, res: Resource, namespace: str | None = None, *, label_selector: str | None = None,
             chunk: int = 500) -> tuple[list[dict[str, Any]], str]:
        """Every object of the collection (in chunks of ``chunk``) and the list's resourceVersion."""
        items: list[dict[str, Any]] = []
        params: dict[str, Any] = {"limit": chunk}
        if label_selector:
            params["labelSelector"] = label_selector
        rv = ""
        while True:
            content = self._exchange("GET", res.collection_path(namespace), None, params, "application/json",
                                     (res.kind, ""))
            try:
                md, page = decode_list(content or b"{}")
            except msgspec.ValidationError as e:
                raise ApiError(res.kind, "", f"list {res.collection_path(namespace)}: {e}", 500) from None
            if not rv:
                rv = str(md.get("resourceVersion") or "")
            for it in page:
                if not isinstance(it, dict):
                    continue
                it.setdefault("apiVersion", res.api_version)
                it.setdefault("kind", res.kind)
                items.append(it)
            cont = md.get("continue")
            if not cont:
                return items, rv
            params = {**params, "continue": cont}

    def watch(self, res: Resource, resource_version: str, *, timeout_seconds: int = 300,
              namespace: str | None = None, label_selector: str | None = None) -> Iterator[WatchItem]:
        """Events after ``resource_version`` (with bookmarks) until the server ends the watch.

        Raises :class:`Expired` for a 410 (as a status reply or an ERROR event)."""
        if self.limiter is not None:
            self.limiter.accept()
        params: dict[str, Any] = {"watch": "true", "resourceVersion": resource_version,
                                  "allowWatchBookmarks": "true", "timeoutSeconds": timeout_seconds}
        if label_selector:
            params["labelSelector"] = label_selector
        try:
            with self.transport.stream(res.collection_path(namespace), params=params,
                                       read_timeout=timeout_seconds + 30.0) as resp:
                if resp.status >= 400:
                    body = resp.read()
                    raise status_error(resp.status, _decode(body) if body else None, (res.kind, ""))
                for line in resp.lines():
                    ev = _decode_watch_line(line)
                    typ, obj = ev.type, decode_object(ev.object) or {}
                    if typ == "ERROR":
                        raise status_error(int(obj.get("code") or 500), obj, (res.kind, ""))
                    obj.setdefault("apiVersion", res.api_version)
                    obj.setdefault("kind", res.kind)
                    yield WatchItem(str(typ), obj)
        except TransportError as e:
            raise ServerUnavailable(res.kind, "", f"watch: {e}", 0) from None


def status_error(code: int, data: Any, what: tuple[str, str]) -> StoreError:
    """The store error for a failure ``Status`` reply."""
    kind, key = what
    st: dict[str, Any] = data if isinstance(data, dict) else {}
    message = str(st.get("message") or f"HTTP {code}")
    reason = st.get("reason") or ""
    raw_details = st.get("details")
    details: dict[str, Any] = raw_details if isinstance(raw_details, dict) else {}
    if not key and details.get("name"):
        key = str(details["name"])
    if code == 404:
        return NotFound(kind, key, message)
    if code == 409:
        if reason == "AlreadyExists":
            return AlreadyExists(kind, key, message)
        return Conflict(kind, key, message)
    if code == 422:
        causes = [(str(c.get("field") or ""), str(c.get("message") or "")) for c in details.get("causes") or ()]
        first = causes[0] if causes else ("", message)
        err = Invalid(kind, key, first[0], first[1], causes or None)
        err.message = message
        return err
    if code == 403:
        return Forbidden(kind, key, message)
    if code == 410:
        return Expired(kind, key, message)
    if code == 429 or code >= 500:
        return ServerUnavailable(kind, key, message, code)
    return ApiError(kind, key, message, code)
